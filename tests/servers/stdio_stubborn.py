"""An mcp_ref stdio server that does not go away when its stdin ends.

    python stdio_stubborn.py MODE [--marker FILE] [--pidfile FILE]

MODE ``linger``: after the session ends (stdin EOF) the process keeps running;
on SIGTERM it appends ``SIGTERM`` to the marker file and exits 0.
MODE ``ignore-term``: the same, but SIGTERM is noted in the marker and then
ignored, so only SIGKILL ends it.
The marker file records ``eof`` when the session ended, so its content shows
the order of events the client caused.  ``--pidfile`` receives this process's pid.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys

from mcp_ref import Server


def note(path: str | None, text: str) -> None:
    if path:
        with open(path, "a") as f:
            f.write(text + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["linger", "ignore-term"])
    parser.add_argument("--marker")
    parser.add_argument("--pidfile")
    args = parser.parse_args()

    def on_sigterm(signum, frame):
        note(args.marker, "SIGTERM")
        if args.mode == "linger":
            os._exit(0)

    signal.signal(signal.SIGTERM, on_sigterm)
    if args.pidfile:
        tmp = args.pidfile + ".tmp"
        with open(tmp, "w") as f:
            f.write(str(os.getpid()))
        os.replace(tmp, args.pidfile)

    server = Server("stubborn", version="1.0")

    @server.tool()
    def whoami() -> int:
        """This server's pid."""
        return os.getpid()

    server.run_stdio()
    note(args.marker, "eof")
    print("stubborn: stdin ended, staying alive", file=sys.stderr, flush=True)
    while True:
        signal.pause()


if __name__ == "__main__":
    main()
