"""A stdio server, written by hand (no mcp_ref), whose messages are valid JSON text holding what
a page, UTF-8 or a Markdown file cannot take as it is (tests/inspector/test_live.py,
tests/workbench/test_cli.py).  Handshake era only.

- Its ``serverInfo.name`` holds a lone surrogate, ``"weather \\ud83d"``: a JavaScript server whose
  string was cut between the two halves of an emoji writes exactly this (``JSON.stringify``
  escapes it; RFC 8259 §8.2 says only that what such a string does is unpredictable); with
  argument ``plain-name``, it is ``"weather"``.
- Before it answers ``tools/list`` or a ``ping``, it sends a notification whose method holds line
  breaks and a Markdown code fence (:data:`FENCE`), a log message whose data holds a lone
  surrogate (``"bad \\ud800 text"``), and one whose data is ``NaN`` (Python's parser reads it; no
  JSON parser of a browser does).  ``tools/list`` lists no tool.
"""

import json
import sys

#: A method that, written as it is into a Mermaid diagram in a Markdown file, ends the diagram's
#: code fence, writes a heading and a link of its own, and opens a new fence.
FENCE = (
    "notifications/x\n```\n\n# Injected heading\n\n[click me](https://attacker.example/)\n\n"
    "```mermaid\nsequenceDiagram\n    C->>S: x"
)
NAME = b'"weather"' if sys.argv[1:] == ["plain-name"] else b'"weather \\ud83d"'
BEFORE_ANSWERS = [
    json.dumps({"jsonrpc": "2.0", "method": FENCE, "params": {}}).encode(),
    b'{"jsonrpc":"2.0","method":"notifications/message",'
    b'"params":{"level":"error","data":"bad \\ud800 text"}}',
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":NaN}}',
]


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # notifications, and the client's answers to what is not JSON to it
        request_id = json.dumps(message["id"]).encode()
        method = message["method"]
        if method == "initialize":
            version = json.dumps(message["params"]["protocolVersion"]).encode()
            out.write(
                b'{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%s,'
                b'"capabilities":{"tools":{},"logging":{}},'
                b'"serverInfo":{"name":%s,"version":"1"}}}\n' % (request_id, version, NAME)
            )
        elif method in ("tools/list", "ping", "logging/setLevel"):
            if method != "logging/setLevel":
                out.write(b"\n".join(BEFORE_ANSWERS) + b"\n")
            result = b'{"tools":[]}' if method == "tools/list" else b"{}"
            out.write(b'{"jsonrpc":"2.0","id":%s,"result":%s}\n' % (request_id, result))
        else:
            out.write(
                b'{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}\n'
                % request_id
            )
        out.flush()


if __name__ == "__main__":
    main()
