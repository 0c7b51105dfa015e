"""A stdio "server" that answers the handshake, then answers ``tools/call`` of ``flood`` only after
sending ``count`` notifications of ``kind`` (``log``: notifications/message with ``size`` bytes of
data; ``progress``: notifications/progress for the call's token), as fast as the pipe takes them.
Before its handshake answer it writes ``stderr`` bytes to stderr with no newline, then a line
``after``.  The client must keep what waits for its callbacks bounded
(tests/client/test_hardening_client_bounds.py)."""

import json
import sys


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        params = message.get("params") or {}
        if message["method"] == "initialize":
            stderr = int(sys.argv[1]) if len(sys.argv) > 1 else 0
            if stderr:
                sys.stderr.buffer.write(b"e" * stderr + b"\nafter\n")
                sys.stderr.flush()
            result = {
                "protocolVersion": params["protocolVersion"],
                "capabilities": {"logging": {}, "tools": {}},
                "serverInfo": {"name": "flooding", "version": "0"},
            }
        elif message["method"] == "tools/call" and params.get("name") == "flood":
            args = params.get("arguments") or {}
            kind, n, size = args.get("kind"), int(args.get("count", 0)), int(args.get("size", 10))
            token = (params.get("_meta") or {}).get("progressToken")
            for i in range(n):
                if kind == "progress":
                    note = {"progressToken": token, "progress": i + 1}
                    out.write(
                        json.dumps(
                            {"jsonrpc": "2.0", "method": "notifications/progress", "params": note}
                        ).encode()
                        + b"\n"
                    )
                else:
                    note = {"level": "info", "data": "x" * size}
                    out.write(
                        json.dumps(
                            {"jsonrpc": "2.0", "method": "notifications/message", "params": note}
                        ).encode()
                        + b"\n"
                    )
            result = {"content": [{"type": "text", "text": f"sent {n}"}]}
        else:
            result = {}
        out.write(
            json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode() + b"\n"
        )
        out.flush()


if __name__ == "__main__":
    main()
