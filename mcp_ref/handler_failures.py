"""What a server's log line says when a handler fails: the traceback, and for a known cause the
way out (:func:`log_failure`).

The known cause: a ``sqlite3`` connection made on one thread (in the lifespan, say) and used on a
handler thread, which ``sqlite3`` refuses.  The session and the tools log a handler's failure
through :func:`log_failure`; what the client is told is theirs (a generic error, never these
details).  What a handler raised to end the process is raised again (:func:`raised_again`).
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any

#: Words of the message ``sqlite3`` raises for an object used on another thread than its own.
_SQLITE_THREAD = "can only be used in that same thread"

#: What :func:`thread_hint` adds to the log line.
_HINT = (
    ": a sqlite3 connection made on another thread (in the lifespan?) was used on a handler"
    " thread; handlers run on the connection's handler threads, not the lifespan's: make one per"
    " thread with mcp_ref.PerThread, or connect with check_same_thread=False and a lock"
    " (docs/lifespan.md)"
)


def thread_hint(exc: BaseException) -> str:
    """What a server's log line adds after a handler raised ``exc``: for ``sqlite3``'s
    ``ProgrammingError`` about threads (``exc``, or what it was raised from or during: the first
    few of its chain), the cause and the way out; else "".  For the log only: the client is told no
    more than before."""
    link: BaseException | None = exc
    for _ in range(8):  # a chain is short, and may loop (an exception raised from itself)
        if link is None:
            break
        if type(link).__module__ == "sqlite3" and _SQLITE_THREAD in str(link):
            return _HINT
        link = link.__cause__ or link.__context__
    return ""


def log_failure(logger: logging.Logger, message: str, *args: Any) -> None:
    """Log the exception being handled, a handler's failure, as ``logger.exception(message, *args)``
    does (the traceback; the record names the caller's line), with :func:`thread_hint`'s cause
    after ``message``.  What the client is told is the caller's."""
    exc = sys.exc_info()[1]
    hint = "" if exc is None else thread_hint(exc)
    logger.error(message + hint.replace("%", "%%"), *args, exc_info=True, stacklevel=2)


def raised_again(exc: BaseException) -> BaseException | None:
    """``exc``, which a handler raised, if its session is to raise it again once the request is
    answered: a handler's ``sys.exit()`` or Ctrl-C (SystemExit, KeyboardInterrupt) on the main
    thread (an inline handler's); None for anything else, or on another thread."""
    ending = isinstance(exc, (SystemExit, KeyboardInterrupt))
    return exc if ending and threading.current_thread() is threading.main_thread() else None
