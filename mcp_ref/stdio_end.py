"""The end of a stdio server's output, and its stderr when no one reads it (POSIX).

:mod:`mcp_ref.stdio` loads this module only when it is needed: when a stdio server ends its own
connection (``ctx.connection.close()``, ``Session.close()``) before its input has ended, when an
answer cut part way closes its stdout (:mod:`mcp_ref.stdio_pipe`), and when its stderr pipe has
no room for what is written to it.

2025-11-25 basic/lifecycle §Shutdown (stdio): "The server MAY initiate shutdown by closing its
output stream to the client and exiting."  The client must see the end of its input at once, not
when the process exits: :func:`close_output` ends the stream the messages go out on (a copy of the
server's stdout: :func:`mcp_ref.stdio.server_streams`) — a socket is shut down for writing first,
as closing one descriptor of it sends nothing while another (stdin, when one socket is both) still
holds it — and :func:`end_output` then wakes the reader thread, whose end of input ends the
session: the handlers running are drained (``session.ENDING_GRACE``) and ``Server.run_stdio()``
returns.

2025-11-25 basic/transports §stdio: "The server MAY write UTF-8 strings to its standard error
(stderr) for logging purposes"; "Clients MAY capture, forward, or ignore this logging".  A client
that ignores it (never reads the pipe) must not stall the server, whose logging writes would
otherwise block, and every thread that logs with them; one that reads it, even slowly, must lose
nothing: :func:`write_stderr` waits for room as long as the client reads (a piece at a time),
and drops (and counts) what is written only once the pipe has stayed full and its reader has
taken nothing of it for :data:`STDERR_STALL` seconds (:func:`_wait_for_room`); then it drops
without waiting until there is room again, and says how much it dropped before what comes next,
and at the latest as the process exits (:func:`say_dropped_at_exit`).
"""

from __future__ import annotations

import array
import atexit
import contextlib
import fcntl
import os
import select
import socket
import stat
import sys
import termios
import time
from typing import Any

from .session import CLOSING_WRITES

#: Seconds a stdio server's stderr pipe may stay full (its reader reads nothing) before what is
#: written to it is dropped (:func:`write_stderr`); waited for again whenever there is room.
STDERR_STALL = 1.0

#: Seconds the end of a stdio server's output waits for a line being written (:func:`end_output`):
#: ``CLOSING_WRITES``, after which the writer cuts it itself, and the writer's look again at the
#: time (``stdio_pipe.LOOK_AGAIN``, a quarter of it).
FINISHING = CLOSING_WRITES * 1.25

#: What stderr is told once there is room again after some of it was dropped: why (a pipe whose
#: bytes can be counted: :data:`FULL_NOT_READ`; other files: :data:`NO_ROOM`), for how long.
DROPPED_NOTE = "mcp_ref: {} bytes written to stderr were dropped: {} for {:g} s\n"
FULL_NOT_READ = "its pipe was full and not read"
NO_ROOM = "it had no room"


def end_output(transport: Any, source: Any) -> None:
    """A stdio server (``transport``, a :class:`~mcp_ref.stdio.StreamTransport` on its own
    streams) ends its connection before its input has ended: its output is closed
    (:func:`close_output`), then its reader (reading ``source``, a
    :class:`~mcp_ref.stdio.ServerInput`) is woken and sees the end of its input.

    2025-11-25 basic/transports §stdio: "The server MUST NOT write anything to its stdout that is
    not a valid MCP message": a line another thread is writing (a long answer to a client still
    reading) is finished first: the output is closed once the write lock is free, which a writer
    holds at most :data:`~mcp_ref.session.CLOSING_WRITES` after the close began
    (:func:`mcp_ref.stdio_pipe.write_bounded` cuts a line not finished by then); past
    :data:`FINISHING` the output is closed all the same."""
    locked = transport.write_lock.acquire(timeout=FINISHING)
    try:
        close_output(transport)
    finally:
        if locked:
            transport.write_lock.release()
    os.write(source.wake[1], b"x")


def close_output(transport: Any) -> None:
    """Close a stdio server's output so that the client sees the end of its input at once.

    A socket is first shut down for writing (its peer sees the end even while another descriptor,
    stdin, holds the socket).  Then ``/dev/null`` takes the descriptor's place
    (:func:`point_at_null`): the file object alone is not enough (it does not own its descriptor,
    ``closefd=False``), and the number is kept from being reused for another file while other
    threads may still poll it (:func:`mcp_ref.stdio.server_streams` closes it at the end)."""
    try:
        descriptor = transport.writer.fileno()
    except ValueError:  # closed already
        return
    transport.writer.close()  # every later write fails (ValueError)
    with contextlib.suppress(OSError):  # (the peer has gone)
        if stat.S_ISSOCK(os.fstat(descriptor).st_mode):
            with socket.socket(fileno=os.dup(descriptor)) as stream:
                stream.shutdown(socket.SHUT_WR)
    point_at_null(descriptor)


def point_at_null(descriptor: int) -> None:
    """``descriptor`` becomes a copy of ``/dev/null`` (``dup2``), so what is written to it goes
    nowhere; without ``/dev/null`` (a bare chroot), of a pipe no one reads from (writes fail)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
    except OSError:
        read_end, null = os.pipe()
        os.close(read_end)
    os.dup2(null, descriptor)
    os.close(null)


def write_stderr(stream: Any, data: bytes) -> int:
    """Write ``data`` to a stdio server's stderr (``stream``, a
    :class:`~mcp_ref.stdio.DroppingStderr`): a piece of at most ``PIPE_BUF`` bytes at a time, each
    once poll() finds room for it, waiting as long as the pipe's reader takes some: drop nothing
    a client reads, however slowly.  Once the pipe has stayed full and its reader has taken
    nothing for :data:`STDERR_STALL` seconds (:func:`_wait_for_room`), the rest is dropped and
    counted, and so is what is written next without waiting, until there is room again: then a
    line says how many bytes were dropped (:data:`DROPPED_NOTE`), before what is written next,
    and the writes wait again; so they do once the reader has taken some of what the pipe held
    (``FIONREAD``) at the stall.  Returns ``len(data)``: dropped bytes count as written."""
    with stream.lock:
        if stream.dropped:
            untouched = (_queued() or 0) >= stream.held and not stream.room.poll(0)
            if untouched or not _wait_for_room(stream.room):  # not read since the stall, or again
                stream.dropped += len(data)
                stream.held = _queued() or 0
                return len(data)
            _say_dropped(stream)  # (there is room for it)
        sent = 0
        while sent < len(data):
            if not _wait_for_room(stream.room):  # its reader took nothing for STDERR_STALL s
                stream.dropped = len(data) - sent
                stream.cut = sent > 0
                stream.held = _queued() or 0
                break
            sent += os.write(2, memoryview(data)[sent : sent + select.PIPE_BUF])
    return len(data)


def _wait_for_room(room: Any) -> bool:
    """Wait until descriptor 2 has room (poll()): True, or False once its reader has taken
    nothing for :data:`STDERR_STALL` seconds.  Linux finds room in a pipe only when a whole page
    of it is free, which a reader taking a little at a time may take longer than that to free:
    so the bytes still in the pipe (``FIONREAD``) are looked at every tenth of the stall, and the
    stall begins again whenever they are fewer.  Where they cannot be counted (not a pipe), the
    stall is no room for :data:`STDERR_STALL` seconds."""
    queued = _queued()
    if queued is None:
        return bool(room.poll(int(STDERR_STALL * 1000)))
    deadline = time.monotonic() + STDERR_STALL
    while not room.poll(int(STDERR_STALL * 100)):
        before, queued = queued, _queued()
        if queued is None:  # (descriptor 2 is another file now)
            return bool(room.poll(0))
        if queued < before:  # the reader took some
            deadline = time.monotonic() + STDERR_STALL
        elif time.monotonic() >= deadline:
            return False
    return True


def _queued() -> int | None:
    """The bytes descriptor 2's pipe still holds (Linux: ``FIONREAD``), or None if it is no
    pipe or they cannot be counted."""
    try:
        if not stat.S_ISFIFO(os.fstat(2).st_mode):
            return None
        held = array.array("i", [0])
        fcntl.ioctl(2, termios.FIONREAD, held)
    except (OSError, AttributeError):  # (no FIONREAD)
        return None
    return held[0]


def _say_dropped(stream: Any) -> None:
    """Write the note of what was dropped (there is room for it), after the end of a line cut."""
    start = "\n" if stream.cut else ""
    why = NO_ROOM if _queued() is None else FULL_NOT_READ
    os.write(2, (start + DROPPED_NOTE.format(stream.dropped, why, STDERR_STALL)).encode())
    stream.dropped = 0


def say_dropped_at_exit(guard: Any) -> None:
    """A stdio server's run ends with bytes of its stderr dropped and not said yet
    (:func:`mcp_ref.stdio.server_streams`; ``guard`` is the text stream over its
    :class:`~mcp_ref.stdio.DroppingStderr`, kept as ``sys.stderr``): the note is written now if
    there is room, else as the process exits (``atexit``, after what it still writes, such as a
    traceback), once there is room within :data:`STDERR_STALL` seconds.  ``sys.__stderr__``
    becomes ``guard`` too: the interpreter puts it back as ``sys.stderr`` as it shuts down, and
    what is written then ("Exception ignored in ...") must not wait either."""
    # (typeshed calls it final; the interpreter reads it as it shuts down)
    sys.__stderr__ = guard  # type: ignore[misc]
    stream = guard.buffer
    with stream.lock:
        if stream.room.poll(0):
            _say_dropped(stream)
            return
    atexit.register(_say_dropped_within, stream)


def _say_dropped_within(stream: Any) -> None:
    with stream.lock:
        if stream.dropped and stream.room.poll(int(STDERR_STALL * 1000)):
            _say_dropped(stream)
