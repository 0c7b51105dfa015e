"""A raw stdio server that answers initialize with a protocol version nobody speaks (or the one
given as its argument, whatever the client asked).

It reports every other message it receives on stderr, and exits with status
3 when its stdin is closed, so a test can tell "the client shut it down" from
"it was killed".
"""

import json
import sys

ANSWERED = sys.argv[1] if len(sys.argv) > 1 else "1999-01-01"

for line in sys.stdin.buffer:
    if not line.strip():
        continue
    message = json.loads(line)
    if message.get("method") == "initialize":
        reply = {
            "jsonrpc": "2.0",
            "id": message["id"],
            "result": {
                "protocolVersion": ANSWERED,
                "capabilities": {},
                "serverInfo": {"name": "ancient", "version": "0"},
            },
        }
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
    else:
        sys.stderr.write(f"received {line.decode().strip()}\n")
        sys.stderr.flush()
sys.exit(3)
