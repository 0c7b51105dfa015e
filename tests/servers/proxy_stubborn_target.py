"""The handshake-era proxy target (proxy_target.py) with two ways of not doing as asked.

``python proxy_stubborn_target.py [--stall-subscribe]``, on stdio.  Its tool ``stubborn`` reports
progress once, then works on for 30 s whether or not it is cancelled (2025-11-25
basic/utilities/cancellation: receivers only "SHOULD" stop, and "MAY ignore" a cancellation).
``--stall-subscribe``: every ``resources/subscribe`` waits 30 s before it is served (a process
that comes up but does not serve: slow storage, a lock still held by the one before it).
"""

import argparse
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import proxy_target

from mcp_ref import Context
from mcp_ref.extension import Extension

STALL = 30.0


class StallSubscribe(Extension):
    """Serves ``resources/subscribe`` only after :data:`STALL` seconds."""

    name = "test/stall-subscribe"

    def intercept_request(self, call, proceed):
        if call.method == "resources/subscribe":
            threading.Event().wait(STALL)
        return proceed()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stall-subscribe", action="store_true")
    args = parser.parse_args()
    server = proxy_target.build("handshake")

    @server.tool()
    def stubborn(ctx: Context) -> str:
        """Report progress, then work 30 s, cancelled or not."""
        ctx.report_progress(1, None, "started")
        threading.Event().wait(STALL)
        return "done"

    if args.stall_subscribe:
        server.add_extension(StallSubscribe())
    server.run_stdio()


if __name__ == "__main__":
    main()
