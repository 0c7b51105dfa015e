"""A stdio server that answers ``initialize`` and then never reads its stdin again (a wedged server).

    python stdio_deaf.py

What the client writes after ``initialize`` stays in the pipe: once it is full, a client that
waits for room waits for ever.  The process lives until it is signalled.
"""

from __future__ import annotations

import json
import signal
import sys

INITIALIZE_RESULT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "deaf", "version": "1"},
}


def main() -> None:
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if message.get("method") == "initialize":
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": INITIALIZE_RESULT}
            sys.stdout.buffer.write(json.dumps(answer).encode() + b"\n")
            sys.stdout.buffer.flush()
            break
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
