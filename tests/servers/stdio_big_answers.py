"""A stdio server whose tool ``big`` answers ``n`` bytes of text (tests/protocol/test_stdio_odd_peers.py).

With ``--linger`` it writes ``served`` to stderr once ``run_stdio`` has returned, then stays
alive (at most 60 s: the test ends it), so a test can see what its stdout does after the session
has ended and before the process exits.
"""

import sys
import threading

from mcp_ref import Server

server = Server("big-answers")


@server.tool
def big(n: int) -> str:
    """``n`` bytes of text."""
    return "x" * n


server.run_stdio()
if "--linger" in sys.argv:
    sys.stderr.write("served\n")
    sys.stderr.flush()
    threading.Event().wait(60)
