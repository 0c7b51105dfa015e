"""A raw handshake-era stdio server that answers a request its client cancelled, with an error.

2025-11-25 basic/utilities/cancellation: receivers only "SHOULD ... Not send a response for the
cancelled request", and some servers do send one (an error saying it was cancelled).  Tools:
``echo`` says its text back; ``stop_me`` reports progress once, then waits until it is cancelled
and answers with an error.  A 2026-07-28 request (``server/discover``) is "method not found", as a
server of 2025 answers it.  Written by hand (no mcp_ref) so that it can answer what mcp_ref's own
server never does.
"""

import json
import sys

TOOLS = [
    {
        "name": "echo",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
    {"name": "stop_me", "inputSchema": {"type": "object"}},
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request_id, result: dict) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def error(request_id, code: int, text: str) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}})


def call_tool(request_id, params: dict, waiting: set) -> None:
    name = params.get("name")
    if name == "echo":
        text = (params.get("arguments") or {}).get("text", "")
        answer(request_id, {"content": [{"type": "text", "text": text}]})
    elif name == "stop_me":
        token = (params.get("_meta") or {}).get("progressToken")
        if token is not None:
            progress = {"progressToken": token, "progress": 1}
            send({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
        waiting.add(request_id)  # answered when it is cancelled
    else:
        error(request_id, -32602, f"Unknown tool: {name}")


def main() -> None:
    waiting: set = set()
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "notifications/cancelled":
            cancelled = params.get("requestId")
            if cancelled in waiting:
                waiting.discard(cancelled)
                error(cancelled, -32800, "Request cancelled")
        elif request_id is None:
            continue  # notifications/initialized and the like
        elif method == "initialize":
            hello = {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "answering", "version": "1.0"},
            }
            answer(request_id, hello)
        elif method == "ping":
            answer(request_id, {})
        elif method == "tools/list":
            answer(request_id, {"tools": TOOLS})
        elif method == "tools/call":
            call_tool(request_id, params, waiting)
        else:
            error(request_id, -32601, f"Method not found: {method}")


if __name__ == "__main__":
    main()
