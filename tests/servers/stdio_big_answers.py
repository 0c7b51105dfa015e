"""A stdio server whose tool ``big`` answers ``n`` bytes of text (tests/protocol/test_stdio_odd_peers.py).

With ``--linger`` it writes ``served`` to stderr once ``run_stdio`` has returned, then stays
alive (at most 60 s: the test ends it), so a test can see what its stdout does after the session
has ended and before the process exits.  Its tool ``quit`` closes the connection from the server.
"""

import sys
import threading

from mcp_ref import Context, Server

server = Server("big-answers")


@server.tool
def big(n: int) -> str:
    """``n`` bytes of text."""
    return "x" * n


@server.tool
def quit(ctx: Context) -> str:
    """Close this connection (from another thread, as an application would): the server ends it."""
    threading.Thread(target=ctx.connection.close).start()
    return "bye"


server.run_stdio()
if "--linger" in sys.argv:
    sys.stderr.write("served\n")
    sys.stderr.flush()
    threading.Event().wait(60)
