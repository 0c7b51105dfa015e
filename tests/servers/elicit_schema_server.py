"""A raw stdio server (2025-06-18) whose tool ``ask`` sends ``elicitation/create`` with the
requested schema given as its first argument (JSON), and returns as its text the client's answer,
raw as received: ``{"result": ...}`` or ``{"error": ...}``."""

import json
import sys

SCHEMA = json.loads(sys.argv[1])


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


pending = None
for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "elicit", "version": "1"},
        }
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})
    elif method == "tools/list":
        tools = [{"name": "ask", "inputSchema": {"type": "object"}}]
        send({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": tools}})
    elif method == "tools/call":
        pending = message["id"]
        params = {"message": "please", "requestedSchema": SCHEMA}
        send({"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": params})
    elif message.get("id") == "e1" and method is None:
        answer = {key: message[key] for key in ("result", "error") if key in message}
        content = [{"type": "text", "text": json.dumps(answer, sort_keys=True)}]
        send({"jsonrpc": "2.0", "id": pending, "result": {"content": content}})
    elif "id" in message and method:
        send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
