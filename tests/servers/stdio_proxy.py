"""A transparent stdio proxy in front of a server: logs and/or rewrites line endings.

    python stdio_proxy.py [--log FILE] [--crlf] -- COMMAND [ARG ...]

Every line from our stdin is passed to the server's stdin, every line from the
server's stdout to our stdout.  ``--log FILE`` records them as ``--> {json}``
(client to server) and ``<-- {json}`` (server to client), the format of
``mcp-ref --trace``.  ``--crlf`` ends each line sent to the client with CRLF
instead of LF, as a peer on Windows might.  When our stdin ends the server's
stdin is closed; the proxy exits with the server's status.
"""

import argparse
import subprocess
import sys
import threading


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log")
    parser.add_argument("--crlf", action="store_true")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    log = open(args.log, "ab", buffering=0) if args.log else None
    lock = threading.Lock()

    def record(arrow: bytes, line: bytes) -> None:
        if log is not None:
            with lock:
                log.write(arrow + b" " + line.rstrip(b"\r\n") + b"\n")

    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def upstream() -> None:
        for line in iter(sys.stdin.buffer.readline, b""):
            record(b"-->", line)
            try:
                child.stdin.write(line)
                child.stdin.flush()
            except OSError:
                break
        try:
            child.stdin.close()
        except OSError:
            pass

    threading.Thread(target=upstream, daemon=True).start()
    out = sys.stdout.buffer
    for line in iter(child.stdout.readline, b""):
        record(b"<--", line)
        if args.crlf and line.endswith(b"\n") and not line.endswith(b"\r\n"):
            line = line[:-1] + b"\r\n"
        out.write(line)
        out.flush()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
