"""A raw (hand-written JSON lines) stdio server that answers a cancelled call anyway.

    python notes_raw_server.py

Answers ``initialize`` (tools only, at the version asked for) and ``ping``.
``tools/call`` of ``stubborn`` is held until ``notifications/cancelled`` names it;
then it is answered anyway, with the text "late answer" (an mcp_ref server would
drop it).  Any other ``tools/call`` is answered at once with the text of its
``text`` argument.  Messages are handled one line at a time, in order.
"""

import json
import sys


def send(message) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text_result(request_id, text: str) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {"content": [{"type": "text", "text": text}]},
    }


def main() -> None:
    held = set()
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method = message.get("method")
        params = message.get("params") or {}
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {
                        "protocolVersion": params["protocolVersion"],
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "notes-raw", "version": "0"},
                    },
                }
            )
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        elif method == "tools/call" and params.get("name") == "stubborn":
            held.add(message["id"])
        elif method == "tools/call":
            send(text_result(message["id"], str((params.get("arguments") or {}).get("text"))))
        elif method == "notifications/cancelled" and params.get("requestId") in held:
            held.discard(params["requestId"])
            send(text_result(params["requestId"], "late answer"))


if __name__ == "__main__":
    main()
