"""A stdio server that answers ``initialize``, then reads nothing more until it gets SIGUSR1; then it
reads its stdin to the end and writes, to the file named by its argument, what it read: the
``method`` of each line (each must be a whole JSON message) and the bytes of a last line left
without its newline.

    python stdio_reads_on_signal.py REPORT

So a test can fill its stdin pipe, start the client's ``close()``, and only then let it read.
"""

from __future__ import annotations

import json
import os
import signal
import sys

INITIALIZE_RESULT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "reads-on-signal", "version": "1"},
}


def main() -> None:
    report = sys.argv[1]
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})  # kept for sigwait
    stdin = sys.stdin.fileno()
    buffer = b""
    methods = []
    while b"\n" not in buffer:
        chunk = os.read(stdin, 65536)
        if not chunk:
            return
        buffer += chunk
    line, buffer = buffer.split(b"\n", 1)
    message = json.loads(line)
    methods.append(message["method"])
    answer = {"jsonrpc": "2.0", "id": message["id"], "result": INITIALIZE_RESULT}
    sys.stdout.buffer.write(json.dumps(answer).encode() + b"\n")
    sys.stdout.buffer.flush()
    signal.sigwait({signal.SIGUSR1})
    while chunk := os.read(stdin, 65536):
        buffer += chunk
    *lines, rest = buffer.split(b"\n")
    methods += [json.loads(line).get("method") for line in lines]
    with open(report, "w") as out:
        json.dump({"methods": methods, "rest": len(rest)}, out)


if __name__ == "__main__":
    main()
