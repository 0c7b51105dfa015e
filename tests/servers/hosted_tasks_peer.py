"""A raw 2025-11-25 stdio server for tests/extensions/test_hosted_tasks.py: it sends the client whatever requests
the test asks for, and reports the client's answers.

    python tests/servers/hosted_tasks_peer.py [VERSION]

It answers ``initialize`` with VERSION (default: the version the client asked for) and offers two tools:

* ``send`` (``{"requests": [{"method", "params"}, ...]}``): writes every request to the client at once
  (ids ``"s1"``, ``"s2"``, ...), waits for all their answers and returns, as JSON text, the list of
  answers in the order they arrived: ``{"index": i, "result": ...}`` or ``{"index": i, "error": ...}``;
* ``capabilities``: the client's ``initialize`` capabilities, as JSON text.

Written by hand (no mcp_ref) so that the client meets a peer sharing no code with it.  It ends at
end of input.
"""

import itertools
import json
import sys

VERSION = sys.argv[1] if len(sys.argv) > 1 else None
TOOLS = [
    {
        "name": "send",
        "description": "Send requests to the client; their answers",
        "inputSchema": {
            "type": "object",
            "properties": {"requests": {"type": "array"}},
            "required": ["requests"],
        },
    },
    {
        "name": "capabilities",
        "description": "The client's declared capabilities",
        "inputSchema": {"type": "object"},
    },
]
ids = itertools.count(1)


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def read():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)


def text(request_id, value):
    send(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "result": {"content": [{"type": "text", "text": json.dumps(value)}]},
        }
    )


def ask(requests):
    """Send every request, then collect the answers (anything else the client sends meanwhile is refused)."""
    waiting = {}
    for index, request in enumerate(requests):
        request_id = f"s{next(ids)}"
        waiting[request_id] = index
        message = {"jsonrpc": "2.0", "id": request_id, "method": request["method"]}
        if "params" in request:
            message["params"] = request["params"]
        send(message)
    answers = []
    while waiting:
        message = read()
        if "method" not in message and message.get("id") in waiting:
            answer = {"index": waiting.pop(message["id"])}
            answer.update({key: message[key] for key in ("result", "error") if key in message})
            answers.append(answer)
        elif "method" in message and "id" in message:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "error": {"code": -32601, "message": "busy sending"},
                }
            )
    return answers


def main():
    capabilities = {}
    while True:
        message = read()
        method, request_id = message.get("method"), message.get("id")
        if request_id is None or method is None:
            continue  # notifications (initialized, cancelled ...), stray answers
        params = message.get("params") or {}
        if method == "initialize":
            capabilities = params.get("capabilities", {})
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {
                        "protocolVersion": VERSION or params.get("protocolVersion"),
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "hosted-tasks-peer", "version": "1"},
                    },
                }
            )
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
        elif method == "tools/call" and params.get("name") == "send":
            text(request_id, ask(params.get("arguments", {}).get("requests", [])))
        elif method == "tools/call" and params.get("name") == "capabilities":
            text(request_id, capabilities)
        else:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {"code": -32601, "message": f"Method not found: {method}"},
                }
            )


if __name__ == "__main__":
    main()
