"""A raw stdio server whose results are whatever the request asks for, to show a client results
that do not have the shape of their type (tests/client/test_invalid_results.py).

Each request names the result it wants, as JSON, where its params have room for it:

* ``tools/call``: ``arguments.result`` (an object);
* ``tools/list``, ``resources/list``, ``resources/templates/list``, ``prompts/list``: the
  ``cursor`` (JSON text);
* ``resources/read``: the ``uri``, ``json:`` followed by JSON text;
* ``prompts/get``: ``arguments.result`` (JSON text);
* ``completion/complete``: ``argument.value`` (JSON text).

A request that names none gets a well-formed result.  ``argv[1]`` is the era: ``handshake``
(``server/discover`` is an unknown method) or ``modern`` (2026-07-28, no ``initialize``).
``argv[2]``, when given, is the JSON of the result to send instead of a good one to the era's
first request (``initialize``; in the modern era ``server/discover``).
Written by hand (no mcp_ref), so the client meets code that shares nothing with it.
"""

import json
import sys

ERA = sys.argv[1]
CAPABILITIES = {"tools": {}, "resources": {}, "prompts": {}, "completions": {}}
INFO = {"name": "malformed", "version": "1"}
GOOD = {
    "initialize": {
        "protocolVersion": "2025-11-25",
        "capabilities": CAPABILITIES,
        "serverInfo": INFO,
    },
    "server/discover": {
        "supportedVersions": ["2026-07-28"],
        "capabilities": CAPABILITIES,
        "_meta": {"io.modelcontextprotocol/serverInfo": INFO},
    },
    "tools/call": {"content": [{"type": "text", "text": "ok"}]},
    "tools/list": {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]},
    "resources/list": {"resources": []},
    "resources/templates/list": {"resourceTemplates": []},
    "prompts/list": {"prompts": []},
    "resources/read": {"contents": [{"uri": "a://b", "text": "ok"}]},
    "prompts/get": {"messages": [{"role": "user", "content": {"type": "text", "text": "ok"}}]},
    "completion/complete": {"completion": {"values": []}},
}
if len(sys.argv) > 2:
    GOOD["server/discover" if ERA == "modern" else "initialize"] = json.loads(sys.argv[2])


def asked_for(method, params):
    """The result the request names, or None."""
    if method == "tools/call":
        return (params.get("arguments") or {}).get("result")
    if method.endswith("/list") and params.get("cursor"):
        return json.loads(params["cursor"])
    if method == "resources/read" and params.get("uri", "").startswith("json:"):
        return json.loads(params["uri"][len("json:") :])
    if method == "prompts/get" and "result" in (params.get("arguments") or {}):
        return json.loads(params["arguments"]["result"])
    if method == "completion/complete" and params["argument"]["value"]:
        return json.loads(params["argument"]["value"])
    return None


def answer(message):
    method = message["method"]
    if method in GOOD and not (ERA == "handshake" and method == "server/discover"):
        result = asked_for(method, message.get("params") or {})
        return {"result": GOOD[method] if result is None else result}
    return {"error": {"code": -32601, "message": f"Method not found: {method}"}}


for line in sys.stdin:
    message = json.loads(line)
    if "id" in message and "method" in message:
        reply = {"jsonrpc": "2.0", "id": message["id"], **answer(message)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
