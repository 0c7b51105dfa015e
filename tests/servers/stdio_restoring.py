"""What ``run_stdio()`` leaves of the process it runs in (Linux: ``/proc/self/fd``).

``stdio_restoring.py twice``: serves this process's own stdin and stdout, then serves again (its
stdin has ended: the second run ends at once).  ``stdio_restoring.py swapped``: serves streams put
in the place of ``sys.stdin`` and ``sys.stdout`` (an initialize and one ``echo`` call in memory),
as an in-process test would, while the process's own stdin is left unread.
``stdio_restoring.py failing``: serves this process's own stdin and stdout with a lifespan that
raises, and catches the error ``run_stdio()`` raises.

After each run, one JSON line goes to the descriptor named by ``NOTE_FD``: ``run`` (1, 2), ``new``
(the descriptors opened or changed since before the first run, number -> what it is),
``stderr_restored`` (``sys.stderr`` and the logging handler's stream are as before),
``stdout_is_stderr`` (``sys.stdout`` is ``sys.stderr``, as ``run_stdio`` has always left it), and
with ``swapped``, ``answered`` (the echo's answer is in what was written to ``sys.stdout``).
"""

import contextlib
import io
import json
import logging
import os
import sys

from mcp_ref import Server

server = Server("restoring", version="1.0")


@server.tool()
def echo(text: str) -> str:
    """Return the text as it came."""
    return text


def descriptors() -> dict:
    """This process's open descriptors (number -> what it is), the one listing them aside."""
    found = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            found[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:  # the listing's own, closed by now
            pass
    return found


def message(**fields) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **fields}).encode() + b"\n"


class Kept(io.BytesIO):
    """What was written, still readable after close() (the transport closes its output)."""

    kept = b""

    def close(self) -> None:
        if not self.closed:
            self.kept = self.getvalue()
        super().close()


def note(run: int, before: dict, **more) -> None:
    now = descriptors()
    changed = {number: what for number, what in now.items() if before.get(number) != what}
    stderr_restored = sys.stderr is stderr_before and handler.stream is stderr_before
    line = {"run": run, "new": changed, "stderr_restored": stderr_restored}
    line |= {"stdout_is_stderr": sys.stdout is sys.stderr, **more}
    os.write(int(os.environ["NOTE_FD"]), json.dumps(line).encode() + b"\n")


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    handler = logging.root.handlers[0]
    stderr_before = sys.stderr
    if sys.argv[1] == "swapped":
        requests = message(
            id=1,
            method="initialize",
            params={
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        )
        requests += message(method="notifications/initialized")
        requests += message(
            id=2, method="tools/call", params={"name": "echo", "arguments": {"text": "hello"}}
        )
        written = Kept()
        sys.stdin = io.TextIOWrapper(io.BytesIO(requests))
        # (held here: run_stdio points sys.stdout at stderr, and a wrapper no one holds closes)
        swapped = sys.stdout = io.TextIOWrapper(written, write_through=True)
        before = descriptors()
        server.run_stdio()
        note(1, before, answered=b'"text":"hello"' in written.kept)
    elif sys.argv[1] == "failing":

        @contextlib.contextmanager
        def failing(server):
            raise RuntimeError("the lifespan failed")
            yield

        before = descriptors()
        with contextlib.suppress(RuntimeError):
            Server("failing", version="1.0", lifespan=failing).run_stdio()
        note(1, before)
    else:
        before = descriptors()
        server.run_stdio()
        note(1, before)
        server.run_stdio()
        note(2, before)
