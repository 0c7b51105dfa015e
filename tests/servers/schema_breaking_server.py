"""A raw stdio MCP server that breaks the spec in several ways, for ``mcp-ref check`` to find.

Written without mcp_ref's server (which would not let it): one JSON-RPC message a line.

- ping answers ``[]``, not an empty object;
- tools/list lists a tool whose name breaks the naming guidance and whose inputSchema is not
  an object schema (the schema's ``type`` must be "object"), and accepts any cursor;
- resources/list lists a resource whose ``uri`` is a number; resources/read answers no contents;
- prompts/get answers a message whose role is "robot";
- an unknown method gets -32603, not -32601; tools/call without a name gets a result.
"""

import json
import sys

TOOLS = [{"name": "bad tool!", "inputSchema": {"type": "string"}}]


def answer(request):
    method = request.get("method")
    if method == "initialize":
        return {
            "protocolVersion": "2025-11-25",
            "serverInfo": {"name": "schema-breaker", "version": "0"},
            "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
        }
    if method == "ping":
        return []
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": "called"}]}
    if method == "resources/list":
        return {"resources": [{"uri": 5, "name": "five"}]}
    if method == "resources/templates/list":
        return {"resourceTemplates": []}
    if method == "resources/read":
        return {"contents": []}
    if method == "prompts/list":
        return {"prompts": [{"name": "chat"}]}
    if method == "prompts/get":
        return {"messages": [{"role": "robot", "content": {"type": "text", "text": "beep"}}]}
    raise LookupError(method)


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    try:
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": answer(message)}
    except LookupError:
        reply = {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32603, "message": "no"}}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
