"""A raw stdio server whose results do not have the spec's shape: ``tools/list`` answers a
``tools`` that is not an array, ``tools/call`` a ``content`` that is not an array,
``resources/read`` a ``contents`` that is not an array (every other request: an empty result)."""

import json
import sys

WRONG = {"tools/list": {"tools": "not a list"}, "tools/call": {"content": 5}}
WRONG["resources/read"] = {"contents": "x"}

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message.get("method") == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}, "resources": {}},
            "serverInfo": {"name": "misshapen", "version": "1"},
        }
    else:
        result = WRONG.get(message.get("method"), {})
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
