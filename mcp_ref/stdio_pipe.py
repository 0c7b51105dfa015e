"""Writing to a stdio peer that does not read its input: waiting for room in its input pipe,
bounded by the message's deadline.

:class:`~mcp_ref.stdio.SubprocessTransport` (POSIX) writes to the server's stdin without blocking;
it loads this module when the pipe is full (the server is not reading, or not yet), a message is
longer than ``PIPE_BUF`` (not written in one piece), or another thread is writing.  Then the writer
waits, with ``poll()``, for the write lock, for room in the pipe, or for the transport to close,
and never past the deadline the session gives for the message
(:meth:`~mcp_ref.session.OutgoingRequests.write_deadline`): a request's own deadline, so its timeout
holds even when the request cannot be sent (2025-11-25 basic/lifecycle §Timeouts: "implementations
SHOULD establish timeouts for all sent requests"); any other message (a cancellation a caller sends
as its request times out, an answer the reader thread sends) a short bound
(:data:`~mcp_ref.session.CLOSING_WRITES`), asked again after each part written, so it ends a stall,
not a slow reader's long line; while the session closes, a short bound in all, so what ``close()``
still sends cannot hold up the shutdown of the server (basic/lifecycle §Shutdown).

At the deadline a message of which nothing was written is not sent: a request raises
:class:`~mcp_ref.errors.RequestTimeout`, any other message ``TimeoutError`` (the session's
:class:`~mcp_ref.errors.ConnectionClosed`; a cancellation or an answer is dropped, logged at DEBUG).  When ``close()`` begins, a message not begun is not
sent, and a line begun is finished (a half line is no MCP message, basic/transports §stdio), for
:data:`~mcp_ref.session.CLOSING_WRITES` at most.  A message cut off part way (at its deadline, or at
that bound: the server has stopped reading) leaves half a line in the stream, after which nothing can
be written: the server's stdin is closed, and every later write fails.  A server that still reads it
then reads a last line without its newline, cut short, and the end of its input: the spec says
nothing of a line the end of input cuts, and writing nothing more (neither the rest, nor a newline
that would make the half line a message) is the only way left not to write what is not a message.

A stdio server writes to its own stdout in pieces too (:func:`write_bounded`), except that the
descriptor stays blocking (other processes may share it): each piece, at most ``PIPE_BUF`` bytes,
is written once poll() finds room for it.  While its session serves, it waits for room as long as
it takes (a slow client loses nothing); only once its input has ended, or the session closes, are
its waits bounded as above, so that it exits when its stdin closes even if its client never reads.
"""

from __future__ import annotations

import logging
import os
import select
import time
from typing import Any, cast

from .errors import RequestTimeout
from .jsonrpc import Request
from .session import CLOSING_WRITES

log = logging.getLogger("mcp_ref.session")  # its messages are the session's


def write_waiting(transport: Any, line: bytes, message) -> None:
    """Write ``line`` to the server's stdin (``transport``, a
    :class:`~mcp_ref.stdio.SubprocessTransport`), waiting for the write lock and for room in the pipe,
    until the deadline of ``message`` (the object ``line`` encodes)."""
    deadline = _deadline(transport, message)
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
        closing = False
        while True:
            if transport.closing and not closing:  # close() has begun (and woke us)
                if not sent:  # not begun: it is not sent
                    raise OSError("the connection is closed")
                # 2025-11-25 basic/transports §stdio: "The client MUST NOT write anything to the
                # server's stdin that is not a valid MCP message": a line begun is finished, while
                # the server reads, for CLOSING_WRITES at most (then close() closes stdin).
                closing = True
                poller.unregister(transport.wake[0])  # (it stays readable)
                bound = time.monotonic() + CLOSING_WRITES
                deadline = bound if deadline is None else min(deadline, bound)
            try:
                written = os.write(fd, memoryview(line)[sent:])
            except BlockingIOError:  # no room at all
                written = 0
            sent += written
            if sent == len(line):
                return
            if written and not closing and not isinstance(message, Request):  # a stall's bound
                deadline = _deadline(transport, message)
            left = _seconds_left(deadline, forever=None)
            if left == 0:
                if sent:  # half a line: the stream cannot go on
                    transport.writer.close()
                if closing:
                    raise OSError("the connection is closed, the server not reading its input")
                _give_up(message, "the server is not reading its input")
            poller.poll(None if left is None else max(1, int(left * 1000 + 0.5)))
    finally:
        lock.release()


def write_bounded(transport: Any, line: bytes, message) -> None:
    """Write ``line`` to a blocking descriptor (``transport``, a
    :class:`~mcp_ref.stdio.StreamTransport`: a stdio server's own stdout), a piece of at most
    ``PIPE_BUF`` bytes at a time, each once poll() finds room for it (so no write blocks), waiting
    for the write lock and for room as long as the session serves: a client that reads slowly, or
    is busy a while, loses no answer and gets no line cut.  Only a request of which nothing is
    written yet has a deadline then, its own (its timeout, as :func:`write_waiting`).

    2026-07-28 basic/transports/stdio §Shutdown: "Servers SHOULD exit promptly when their standard
    input is closed": once the input has ended (:func:`_input_ended`) or the session closes, a wait
    is bounded as a client's is (:meth:`~mcp_ref.session.OutgoingRequests.write_deadline`:
    :data:`~mcp_ref.session.CLOSING_WRITES` without a byte going out; while closing, that long
    after ``close()`` began), so a client that stops reading can no longer hold a handler (whose
    answer the end of input waits for) or the reader (a ping's answer) in a write.  A wait looks
    again every :data:`LOOK_AGAIN` seconds, so one that began while the session served notices.
    An answer not written by then is dropped; one cut off part way closes the stdout
    (:func:`mcp_ref.stdio_end.close_output`): no half line is followed by anything, and the
    client sees the end of its input."""
    deadline = _own_deadline(transport, message)  # a request's timeout, while nothing is written
    ending: float | None = None  # the bound since this write saw the input end (or the close)
    lock = transport.write_lock
    while not lock.acquire(timeout=_look_again(deadline, ending)):
        ending = ending or _ending_bound(transport)
        if _passed(deadline) or _passed(ending):
            _give_up(message, "another message is still being written")
    try:
        if transport.writer.closed:  # (after a cut: its descriptor is /dev/null's)
            raise ValueError("the output is closed")
        sent = 0
        while sent < len(line):
            if transport.room.poll(int(_look_again(deadline, ending) * 1000) + 1):
                piece = memoryview(line)[sent : sent + select.PIPE_BUF]
                sent += os.write(transport.writer.fileno(), piece)
                deadline = None  # a line begun is finished while the session serves
                if ending is not None:  # a stall's bound, asked again after each part written
                    ending = _ending_bound(transport)
                continue
            ending = ending or _ending_bound(transport)
            if _passed(deadline) or _passed(ending):
                if sent:  # half a line: the stream cannot go on
                    from .stdio_end import close_output

                    close_output(transport)
                _give_up(message, "the peer is not reading its input")
    finally:
        lock.release()


#: Seconds between two looks of a stdio server's waiting write at whether its input has ended or
#: its session closes (:func:`write_bounded`).
LOOK_AGAIN = CLOSING_WRITES / 4


def _own_deadline(transport: Any, message) -> float | None:
    """A request's own deadline (:func:`_deadline`); None for any other message."""
    return _deadline(transport, message) if isinstance(message, Request) else None


def _ending_bound(transport: Any) -> float | None:
    """None while a stdio server's session serves; once its input has ended or the session closes,
    the deadline of a wait to write (``write_deadline``: :data:`CLOSING_WRITES` from now; while
    closing, from when ``close()`` began)."""
    requests = transport.requests
    if requests is None or not (requests.is_closed or _input_ended(transport.reader)):
        return None
    return requests.write_deadline(None)


#: poll() events of a pipe, or a socket (Linux: POLLRDHUP), whose writing end the peer has closed.
HUNG_UP = getattr(select, "POLLHUP", 0) | getattr(select, "POLLRDHUP", 0)


def _input_ended(reader: Any) -> bool:
    """True when the client has closed the server's input (poll() on its stdin: a pipe's
    ``POLLHUP``, a socket's ``POLLRDHUP``), though what is left in it is not read yet.

    The session learns of the end of input only when its reader thread reads it; a reader thread
    that is itself waiting to write (a ping's answer behind a long answer) cannot, so the writer
    looks at the input itself.  A file or a terminal never says so: the reader's end of input
    does (``Session.is_closed``)."""
    poller = select.poll()
    try:
        poller.register(reader, HUNG_UP)
    except (OSError, ValueError):  # not a file, or closed
        return False
    return any(events & HUNG_UP for _, events in poller.poll(0))


def _look_again(deadline: float | None, ending: float | None) -> float:
    """Seconds to wait before looking again: :data:`LOOK_AGAIN`, or less to a deadline."""
    bounds = [LOOK_AGAIN] + [_seconds_left(d, 0.0) for d in (deadline, ending) if d is not None]
    return min(bounds)


def _passed(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


def _deadline(transport: Any, message) -> float | None:
    requests = transport.requests
    return None if requests is None else requests.write_deadline(message)


def _seconds_left(deadline: float | None, forever):
    """The seconds until ``deadline`` (0 once it has passed); ``forever`` when there is none."""
    return forever if deadline is None else max(deadline - time.monotonic(), 0.0)


def _give_up(message, why: str):
    if isinstance(message, Request):
        raise RequestTimeout(f"{message.method}: not sent within its timeout: {why}")
    # 2025-11-25 basic/utilities/cancellation §Error Handling: notifications are "fire and forget"
    # (a cancellation may be lost); the session drops what it cannot send, an answer too.
    log.debug("a %s was not written in time: %s", getattr(message, "method", "answer"), why)
    raise TimeoutError(f"a message could not be sent in time: {why}")
