"""Writing to a stdio server that does not read its input: waiting for room in its stdin pipe,
bounded by the message's deadline.

:class:`~mcp_ref.stdio.SubprocessTransport` (POSIX) writes to the server's stdin without blocking;
it loads this module when the pipe is full (the server is not reading, or not yet), a message is
longer than ``PIPE_BUF`` (not written in one piece), or another thread is writing.  Then the writer
waits, with ``poll()``, for the write lock, for room in the pipe, or for the transport to close,
and never past the deadline the session gives for the message
(:meth:`~mcp_ref.session.OutgoingRequests.write_deadline`): a request's own deadline, so its timeout
holds even when the request cannot be sent (2025-11-25 basic/lifecycle §Timeouts: "implementations
SHOULD establish timeouts for all sent requests"); while the session closes, a short bound, so what
``close()`` still sends cannot hold up the shutdown of the server (basic/lifecycle §Shutdown).

At the deadline a message of which nothing was written is not sent: a request raises
:class:`~mcp_ref.errors.RequestTimeout`, any other message ``TimeoutError`` (the session's
:class:`~mcp_ref.errors.ConnectionClosed`).  A message cut off part way leaves half a line in the
stream, after which nothing can be written: the server's stdin is closed (it reads a broken last
line, then the end of its input), and every later write fails.
"""

from __future__ import annotations

import os
import select
import time
from typing import Any, cast

from .errors import RequestTimeout
from .jsonrpc import Request


def write_waiting(transport: Any, line: bytes, message) -> None:
    """Write ``line`` to the server's stdin (``transport``, a
    :class:`~mcp_ref.stdio.SubprocessTransport`), waiting for the write lock and for room in the pipe,
    until the deadline of ``message`` (the object ``line`` encodes)."""
    requests = transport.requests
    deadline = None if requests is None else requests.write_deadline(message)
    lock = transport.write_lock
    if not lock.acquire(timeout=_seconds_left(deadline, forever=-1)):
        _give_up(message, "another message is still being written")
    try:
        if transport.writer.closed:
            raise ValueError("the server's input is closed")
        if transport.wake is None:  # close() writes a byte here to end a wait
            transport.wake = os.pipe()
        fd = cast(int, transport.fd)  # (POSIX only)
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        poller.register(transport.wake[0], select.POLLIN)
        sent = 0
        while True:
            if transport.closing:
                raise OSError("the connection is closed")
            try:
                sent += os.write(fd, memoryview(line)[sent:])
            except BlockingIOError:  # no room at all
                pass
            if sent == len(line):
                return
            left = _seconds_left(deadline, forever=None)
            if left == 0:
                if sent:  # half a line: the stream cannot go on
                    transport.writer.close()
                _give_up(message, "the server is not reading its input")
            poller.poll(None if left is None else max(1, int(left * 1000 + 0.5)))
    finally:
        lock.release()


def _seconds_left(deadline: float | None, forever):
    """The seconds until ``deadline`` (0 once it has passed); ``forever`` when there is none."""
    return forever if deadline is None else max(deadline - time.monotonic(), 0.0)


def _give_up(message, why: str):
    if isinstance(message, Request):
        raise RequestTimeout(f"{message.method}: not sent within its timeout: {why}")
    raise TimeoutError(f"a message could not be sent in time: {why}")
