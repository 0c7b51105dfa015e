"""A stdio server's stderr, read here: each line kept (``stderr="capture"``) or handed to a callback.

:class:`~mcp_ref.stdio.SubprocessTransport` loads this module only when the client reads the
server's stderr itself; with the default (``"inherit"``) or ``"discard"`` the server writes to ours
or to nowhere and no thread reads it.  One daemon thread per server reads the pipe to its end; every
line is bounded, so a server's stderr costs bounded memory.
"""

from __future__ import annotations

import collections
import functools
import logging
import threading
from collections.abc import Callable
from typing import IO

log = logging.getLogger(__name__)

#: The longest stderr line of a server's kept (``stderr="capture"``) or handed to a callback (bytes);
#: the rest of a longer line is read and dropped, so a server's stderr costs bounded memory.
MAX_STDERR_LINE = 16 * 1024
#: What ends a stderr line cut at :data:`MAX_STDERR_LINE`.
TRUNCATED = " [... line truncated]"


def start_reading(
    stream: IO[bytes], sink: Callable[[str], None] | collections.deque[str]
) -> threading.Thread:
    """Start the thread that hands each line of ``stream`` to ``sink`` (decoded, newline removed,
    cut at :data:`MAX_STDERR_LINE`) until its end, then closes it.  ``sink``: a callback, or the
    ``stderr_lines`` of ``stderr="capture"``, each line appended to it and logged at DEBUG."""
    if isinstance(sink, collections.deque):
        sink = functools.partial(_keep, sink)
    thread = threading.Thread(target=_read, args=(stream, sink), name="mcp-stderr", daemon=True)
    thread.start()
    return thread


def _keep(lines: collections.deque[str], line: str) -> None:
    lines.append(line)
    log.debug("server stderr: %s", line)


def _read(stream: IO[bytes], sink: Callable[[str], None]) -> None:
    skipping = False  # the rest of a line already cut at MAX_STDERR_LINE
    for raw in iter(lambda: stream.readline(MAX_STDERR_LINE), b""):
        ended = raw.endswith(b"\n")
        if skipping:
            skipping = not ended
            continue
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not ended and len(raw) >= MAX_STDERR_LINE:
            skipping, line = True, line + TRUNCATED
        try:
            sink(line)
        except Exception:
            log.exception("stderr callback failed")
    stream.close()  # at end of file, by the only thread that reads it
