"""An mcp_ref stdio server that ends its own connection, or writes much to its stderr.

Tools:

* ``goodbye(linger=0)`` writes ``ending: closing`` to stderr, ends the connection from the
  server's side (``ctx.connection.close()``), then takes ``linger`` more seconds to return (the
  process lives on that long): its answer is never sent.  2025-11-25 basic/lifecycle §Shutdown (stdio), "The server MAY
  initiate shutdown by closing its output stream to the client and exiting."
* ``log_lots(lines)`` writes ``lines`` lines of about 1 KiB to stderr through ``logging`` (a
  client that never reads the server's stderr fills the pipe), then answers ``"logged"``.
* ``write_pages(count)`` writes ``count`` lines of exactly 4,096 bytes (a pipe's page, and
  ``PIPE_BUF`` on Linux: each fills one page of the stderr pipe) to ``sys.stderr``, then answers
  ``"written"``.
* ``echo(text)`` returns the text.
* ``stray()`` writes ``stray`` straight to descriptor 1 (as a C library or a child process would),
  then answers ``"strayed"``.
* ``child(size)`` runs a child process that writes ``size`` bytes to its stdout, not captured
  (the server's descriptor 1), then answers ``"child done"``.

When ``run_stdio()`` returns, the server writes ``ending: returned`` to its stderr and exits with
status 0.  With ``--quiet``, it writes ``returned`` to the descriptor named by ``NOTE_FD`` instead,
and nothing more to its stderr.  With ``--loud``, it then writes 200 lines of about 1 KiB to
``sys.stderr`` before it exits.  With ``--stall SECONDS``, a stderr write waits that long for a
reader that takes nothing before it drops (``mcp_ref.stdio_end.STDERR_STALL``).  With
``--last-words``, an object of ``__main__`` writes 5,000 bytes to ``sys.stderr`` as the interpreter
shuts down (its ``__del__``).
"""

import logging
import os
import subprocess
import sys
import time

from mcp_ref import Context, Server

server = Server("ending", version="1.0")
log = logging.getLogger("ending")


@server.tool()
def goodbye(ctx: Context, linger: float = 0) -> str:
    """End the connection from the server's side, then return ``linger`` seconds later."""
    print("ending: closing", file=sys.stderr, flush=True)
    ctx.connection.close()
    time.sleep(linger)
    return "goodbye"


@server.tool()
def log_lots(lines: int) -> str:
    """Log ``lines`` lines of about 1 KiB each (to stderr), then answer."""
    for number in range(lines):
        log.warning("line %d %s", number, "x" * 1024)
    return "logged"


@server.tool()
def write_pages(count: int) -> str:
    """Write ``count`` lines of 4,096 bytes each to stderr, then answer."""
    for number in range(count):
        line = f"page {number:04d} "
        sys.stderr.write(line + "p" * (4095 - len(line)) + "\n")
    return "written"


@server.tool()
def echo(text: str) -> str:
    """Return the text as it came."""
    return text


@server.tool()
def stray() -> str:
    """Write to descriptor 1 itself, then answer."""
    os.write(1, b"stray\n")
    return "strayed"


@server.tool()
def child(size: int) -> str:
    """Run a child process that writes ``size`` bytes to its (uncaptured) stdout, then answer."""
    writes = f"import os; os.write(1, b'c' * {size})"
    subprocess.run([sys.executable, "-c", writes], check=True, timeout=30)
    return "child done"


class LastWords:
    """Writes 5,000 bytes to ``sys.stderr`` when it is collected (as the interpreter shuts down)."""

    def __del__(self) -> None:
        sys.stderr.write("last words " + "w" * 5000 + "\n")


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    if "--last-words" in sys.argv:
        last_words = LastWords()
    if "--stall" in sys.argv:
        import mcp_ref.stdio_end

        mcp_ref.stdio_end.STDERR_STALL = float(sys.argv[sys.argv.index("--stall") + 1])
    server.run_stdio()
    if "--quiet" in sys.argv:
        os.write(int(os.environ["NOTE_FD"]), b"returned\n")
    else:
        print("ending: returned", file=sys.stderr, flush=True)
    if "--loud" in sys.argv:
        for number in range(200):
            print(f"after {number} " + "a" * 1024, file=sys.stderr)
