"""A raw handshake-era stdio server that answers a request its client cancelled, with an error.

2025-11-25 basic/utilities/cancellation: receivers only "SHOULD ... Not send a response for the
cancelled request", and some servers do send one (an error saying it was cancelled).  Tools:
``echo`` says its text back; ``stop_me`` reports progress once, then waits until it is cancelled
and answers with an error; ``answer_held`` answers every held completion (below), late, then
says how many it answered.  ``completion/complete`` of the value ``hold`` says ``holding`` on
stderr and is held: its cancellation stops it (``stopped`` on stderr; no answer, as the target
was asked) until ``answer_held``; any other value is completed at once.  A 2026-07-28 request
(``server/discover``) is "method not found", as a server of 2025 answers it.  Written by hand (no mcp_ref) so that it can answer what mcp_ref's own
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
    {"name": "answer_held", "inputSchema": {"type": "object"}},
]


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request_id, result: dict) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def error(request_id, code: int, text: str) -> None:
    send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}})


def complete(request_id, params: dict, held: list) -> None:
    value = (params.get("argument") or {}).get("value")
    if value == "hold":
        print("holding", file=sys.stderr, flush=True)
        held.append(request_id)
        return
    answer(request_id, {"completion": {"values": [value], "hasMore": False}})


def call_tool(request_id, params: dict, waiting: set, held: list) -> None:
    name = params.get("name")
    if name == "answer_held":
        count = len(held)
        for completion_id in held:
            answer(completion_id, {"completion": {"values": ["late"], "hasMore": False}})
        held.clear()
        answer(request_id, {"content": [{"type": "text", "text": f"answered {count}"}]})
        return
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
    held: list = []  # the completions held, cancelled or not
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        params = message.get("params") or {}
        if method == "notifications/cancelled":
            cancelled = params.get("requestId")
            if cancelled in waiting:
                waiting.discard(cancelled)
                error(cancelled, -32800, "Request cancelled")
            elif cancelled in held:
                print("stopped", file=sys.stderr, flush=True)
        elif request_id is None:
            continue  # notifications/initialized and the like
        elif method == "initialize":
            hello = {
                "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                "capabilities": {"tools": {}, "completions": {}},
                "serverInfo": {"name": "answering", "version": "1.0"},
            }
            answer(request_id, hello)
        elif method == "ping":
            answer(request_id, {})
        elif method == "tools/list":
            answer(request_id, {"tools": TOOLS})
        elif method == "tools/call":
            call_tool(request_id, params, waiting, held)
        elif method == "completion/complete":
            complete(request_id, params, held)
        else:
            error(request_id, -32601, f"Method not found: {method}")


if __name__ == "__main__":
    main()
