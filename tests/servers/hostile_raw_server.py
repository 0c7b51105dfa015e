"""A stdio "server" that answers the handshake, then, before each answer to a ping, sends the
client what a buggy or hostile server might: notifications with unhashable ids and tokens, JSON
nested 100,000 deep, NaN, a line that is not JSON, an answer to a request never made.  The
client must drop or log each and keep its connection (tests/protocol/test_hardening.py)."""

import json
import sys

GARBAGE = [
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":{"a":1},"progress":1}}',
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":[1],"progress":1}}',
    b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1,2]}}',
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":NaN}}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    b"this is not JSON",
    b'{"jsonrpc":"2.0","id":424242,"result":{}}',
]


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # notifications and answers (to a ping of ours: none) need no reply
        if message["method"] == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {},
                "serverInfo": {"name": "hostile", "version": "0"},
            }
        else:
            out.write(b"\n".join(GARBAGE) + b"\n")
            result = {}
        out.write(
            json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode() + b"\n"
        )
        out.flush()


if __name__ == "__main__":
    main()
