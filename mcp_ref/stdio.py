"""The stdio transport: newline-delimited JSON over a pair of byte streams.

2025-11-25 basic/transports §stdio: "Messages are delimited by newlines, and
MUST NOT contain embedded newlines."  "The server MUST NOT write anything to
its stdout that is not a valid MCP message."  The serialiser never emits a
newline inside a message (it escapes every control character), so writing is
``data + b"\\n"``.

:class:`StreamTransport` wraps any two binary streams (a server's own stdin
and stdout); :class:`SubprocessTransport` starts a server process in its own
process group and, on close, shuts it down in the order the spec gives —
close its stdin, wait, SIGTERM, wait, SIGKILL — to the whole group, so the
children of launchers like ``npx`` or ``uvx`` are not left behind, and (Linux) to its
descendants outside the group (:mod:`mcp_ref.process_tree`).
"""

from __future__ import annotations

import collections
import contextlib
import io
import logging
import os
import select
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any, cast

from .errors import ConnectionClosed
from .session import CLOSING_WRITES, OutgoingRequests, Transport

DEFAULT_MAX_MESSAGE_SIZE = 4 * 1024 * 1024
#: Linux: a server starts with this variable first in its environment, holding its own token after
#: those of the clients above it; every descendant inherits it (:mod:`.process_tree` finds them).
ENV_MARKER = "MCP_REF_STDIO_TREE"
MAX_ENVIRON = 64 * 1024  # the bytes of a process's environment searched for the token
#: Seconds the reader waits, at the end of a server's output, for the server's exit status.
EXIT_WAIT = 1.0
#: Where a server's stderr goes, by ``SubprocessTransport(stderr=)`` (a callable: ``PIPE`` too).
STDERR_TARGETS: dict[str, int | None] = {
    "inherit": None,
    "discard": subprocess.DEVNULL,
    "capture": subprocess.PIPE,
}


class StreamTransport(Transport):
    """Newline-delimited messages over a readable and a writable binary stream.

    A line longer than ``max_message_size`` bytes is read to its end and discarded, and
    ``read()`` raises :class:`~mcp_ref.errors.MessageTooLarge` (holding the line's first ``max_message_size + 1``
    bytes) so the session can refuse it and go on to the next line.  Writes from several threads
    are serialised (one lock), so lines never interleave.
    """

    def __init__(
        self,
        reader: IO[bytes],
        writer: IO[bytes],
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ):
        self.reader = reader
        self.writer = writer
        self.max_message_size = max_message_size
        self.write_lock = threading.Lock()
        #: POSIX: a poll() for room in the stream written to (write); None: not a file, or Windows.
        self.room = None
        if os.name == "posix":
            room = select.poll()
            with contextlib.suppress(OSError, ValueError):  # (UnsupportedOperation: not a file)
                room.register(writer, select.POLLOUT)
                self.room = room

    #: The session's requests (attach): their deadlines bound a wait to write.
    requests: OutgoingRequests | None = None

    def attach(self, requests: OutgoingRequests) -> None:
        """Keep the session's requests: their deadlines bound a wait to write (write)."""
        self.requests = requests

    def read(self) -> bytes | None:
        """The next non-empty line without its line ending; None at end of input."""
        limit = self.max_message_size
        while True:
            line = self.reader.readline(limit + 1)
            if not line:
                return None
            if len(line) > limit and not line.endswith(b"\n"):
                from .unparsed import line_too_large  # the rest of the line, read and discarded

                raise line_too_large(self.reader, line, limit)
            line = line.rstrip(b"\r\n")
            if line.strip():
                return line

    def write(self, data: bytes, message=None, related=None) -> None:
        """Write one message and its newline, and flush (``related`` does not matter here).

        POSIX: at once when it is at most ``PIPE_BUF`` bytes, poll() finds room for it and no other
        thread is writing; otherwise a piece at a time, as poll() finds room
        (:func:`mcp_ref.stdio_pipe.write_bounded`): as long as it takes while the session serves,
        and once its input has ended or it closes until the deadline of ``message``, so a peer that
        stops reading holds no writer (the reader, a handler) past the end.  The descriptor stays
        blocking (the server's stdout may be shared with other processes)."""
        line = data + b"\n"
        with self.write_lock:
            # poll(): room for PIPE_BUF bytes (or the peer is gone: the write raises)
            if self.room is None or len(line) <= select.PIPE_BUF and self.room.poll(0):
                self.writer.write(line)
                self.writer.flush()
                return
        from .stdio_pipe import write_bounded

        write_bounded(self, line, message)

    def close(self) -> None:
        """Close the writing side (the peer sees end of input).  POSIX, a stdio server's own
        streams (:func:`server_streams`) before its input has ended (the server ends the
        connection): :func:`mcp_ref.stdio_end.end_output` ends its output and its reader."""
        source = getattr(self.reader, "raw", None)
        if isinstance(source, ServerInput) and not source.ended:
            from .stdio_end import end_output

            end_output(self, source)
        with contextlib.suppress(OSError, ValueError):  # already closed, or the peer has gone
            self.writer.close()


class SubprocessTransport(StreamTransport):
    """Start ``command`` and talk to it over its stdin/stdout.

    ``stderr``: ``"inherit"`` (the default: the server's stderr goes to ours),
    ``"capture"`` (lines are kept in ``stderr_lines``, the last 1,000, and
    logged at DEBUG), ``"discard"``, or a callable taking each decoded line.  A line
    longer than :data:`~mcp_ref.stdio_stderr.MAX_STDERR_LINE` bytes is cut there (ending with
    :data:`~mcp_ref.stdio_stderr.TRUNCATED`; :mod:`mcp_ref.stdio_stderr`).
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        env: dict | None = None,
        cwd: str | None = None,
        stderr: str | Callable[[str], None] = "inherit",
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        shutdown_timeout: float = 2.0,
    ):
        if isinstance(command, str):
            raise TypeError("command must be a list of arguments, e.g. ['python', 'server.py']")
        self.command = list(command)
        self.shutdown_timeout = shutdown_timeout
        self.stderr_lines: collections.deque[str] = collections.deque(maxlen=1000)
        if not callable(stderr) and stderr not in STDERR_TARGETS:
            raise ValueError(
                f"stderr must be 'inherit', 'capture', 'discard' or a callable, not {stderr!r}"
            )
        stderr_target = subprocess.PIPE if callable(stderr) else STDERR_TARGETS[stderr]
        full_env = {**os.environ, **(env or {})}  # env adds to ours
        self._token: bytes | None = None
        if os.path.isdir("/proc/self"):  # Linux: the token its descendants inherit (ENV_MARKER)
            token = f"{os.getpid()}.{os.urandom(8).hex()}"
            above = full_env.pop(ENV_MARKER, "")
            full_env = {ENV_MARKER: f"{above}:{token}" if above else token, **full_env}
            self._token = token.encode()
        self.process = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr_target,
            env=full_env,
            cwd=cwd,
            # its own process group: POSIX, in its own session (Windows ignores start_new_session)
            start_new_session=True,
            creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
        )
        # Both pipes exist: stdin and stdout were opened with subprocess.PIPE.
        super().__init__(
            cast(IO[bytes], self.process.stdout),
            cast(IO[bytes], self.process.stdin),
            max_message_size=max_message_size,
        )
        # Its start time: no process started before it can be its descendant (nor carry its token).
        self._since = _lineage(self.process.pid)[1] if self._token is not None else 0
        self._close_lock = threading.Lock()
        self._stderr_thread: threading.Thread | None = None
        if self.process.stderr is not None:  # (stderr_target is PIPE)
            # Loaded only when the server's stderr is read here ("capture" or a callable).
            from .stdio_stderr import start_reading

            sink = stderr if callable(stderr) else self.stderr_lines
            self._stderr_thread = start_reading(self.process.stderr, sink)
        # POSIX: writing to its stdin never blocks (write); Windows, where poll() cannot wait on a
        # pipe: a write to a server that does not read blocks until it reads or the pipe breaks.
        #: The server's stdin (POSIX, non-blocking); None on Windows.
        self.fd: int | None = None
        if os.name == "posix":
            self.fd = self.writer.fileno()
            os.set_blocking(self.fd, False)
            # One thread waits for the server's exit (the reader alone would not see it while a
            # process the server started holds its stdout open); it lives as long as the server.
            threading.Thread(target=self._watch, name="mcp-stdio-exit", daemon=True).start()

    #: True once close() has begun.
    closing = False
    #: True once a reader thread has read the server's stdout (release).
    _reading = False

    #: The server's exit status once it exited by itself (not closed by us), with its stdout still
    #: held open by a process it left behind: the end of input then fails naming it, unless 0 (read).
    exited: int | None = None

    #: A pipe whose byte ends a writer's wait for room (made by :mod:`.stdio_pipe`, closed by close()).
    wake: tuple[int, int] | None = None

    def write(self, data: bytes, message=None, related=None) -> None:
        """Write one message and its newline to the server's stdin.

        POSIX: without blocking while its pipe has room; when it is full (the server does not read
        its input), or the message is longer than ``PIPE_BUF``, or another thread is writing, the
        writer waits for room until the message's deadline (:mod:`.stdio_pipe`)."""
        if self.fd is None:
            return super().write(data)
        line = data + b"\n"
        if len(line) <= select.PIPE_BUF and self.write_lock.acquire(blocking=False):
            try:
                if self.writer.closed:
                    raise ValueError("the server's input is closed")
                os.write(self.fd, line)  # all of it (POSIX: up to PIPE_BUF bytes at once)
                return
            except BlockingIOError:  # the pipe is full: wait below
                pass
            finally:
                self.write_lock.release()
        from .stdio_pipe import write_waiting

        write_waiting(self, line, message)

    def _watch(self) -> None:
        """(its own thread) Once the server exits by itself, end what it left holding its stdout.

        2025-11-25 basic/lifecycle §Shutdown: the server MAY exit (it closes its stdout) to end the
        connection.  A process it started that inherited its stdout (and runs on) would keep the
        client from ever seeing the end of input, and its requests waiting until their timeouts:
        the connection ends as when the client closes it (what is left of its process group gets
        SIGTERM, then SIGKILL); what the server wrote before it exited is still read."""
        status = self.process.wait()
        # Left in its process group: what may hold its stdout open (else the end of input comes).
        if not self.closing and _group_may_live(self.process.pid):
            self.exited = status
            self.close()

    def release(self) -> None:
        """Close the server's stdout when no reader thread ever took it (the server has exited).
        (Its stderr, when read here, is closed by the thread that reads it, at its end.)"""
        if not self._reading and self.process.poll() is not None:
            self.reader.close()

    def read(self) -> bytes | None:
        """The next message from the server's stdout; at its end the pipe is closed (None)."""
        self._reading = True
        message = super().read()
        if message is None:  # the reader thread is the only one that reads it
            self.reader.close()
            status = self.exited
            # Its output ended, not closed by us: the server is likely exiting, and a status other
            # than 0 says why the calls in flight fail (waited for EXIT_WAIT at most).
            if status is None and not self.closing and _wait(self.process, EXIT_WAIT):
                status = self.process.returncode
            if status:
                raise ConnectionClosed(f"the server exited with status {status}")
        return message

    def close(self) -> None:
        """Shut the server down (2025-11-25 basic/lifecycle §Shutdown, stdio).

        "the client SHOULD initiate shutdown by: First, closing the input
        stream to the child process (the server); Waiting for the server to
        exit, or sending SIGTERM if the server does not exit within a
        reasonable time; Sending SIGKILL if the server does not exit within a
        reasonable time after SIGTERM".  Signals go to the whole process group.
        """
        with self._close_lock:
            if self.closing:
                return
            self.closing = True
        # Before the server can exit and orphan them: its descendants, which may have left its
        # process group (setsid) or their parent (a double fork), out of the group's reach.
        tree = self._descendants()
        if self.wake is not None:  # a writer waits for room in the pipe (stdio_pipe): it gives up
            os.write(self.wake[1], b"x")
        with self.write_lock, contextlib.suppress(OSError):
            self.writer.close()
            for end in self.wake or ():  # (made by a writer under the lock, so seen now)
                os.close(end)
        exited = _wait(self.process, self.shutdown_timeout)
        if os.name != "posix":
            if not exited:
                self.process.terminate()
                if not _wait(self.process, self.shutdown_timeout):
                    self.process.kill()
                    self.process.wait()
        elif not exited or tree is not None or _group_may_live(self.process.pid):
            from .process_tree import end_server  # it did not go by itself, or left processes

            end_server(self.process, tree, self.shutdown_timeout)
        # Let the pump read what the server wrote before it exited, so that after close()
        # ``stderr_lines`` (or the callback) has seen every line.  Bounded: a process
        # outside the group may still hold the pipe open.
        thread = self._stderr_thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(self.shutdown_timeout)

    def _descendants(self):
        """Linux: the server's descendants (a :class:`~.process_tree.ProcessTree`), or None when
        it has none: no child, and no other process carrying its token."""
        token, server = self._token, self.process.pid
        # Once reaped (returncode set), its pid may be another process's.
        if token is None or self.process.returncode is not None:
            return None
        since = self._since

        def carriers() -> list[int]:  # the processes started since the server that carry its token
            recent = [pid for pid in _pids() if pid != server and _lineage(pid)[1] >= since]
            return [pid for pid in recent if _carries(pid, token)]

        if not any(_lineage(pid)[0] == server for pid in _pids()) and not carriers():
            return None
        from .process_tree import ProcessTree

        return ProcessTree(server, carriers)

    @property
    def returncode(self) -> int | None:
        """The server's exit status, once it has exited."""
        return self.process.poll()


def _wait(process: subprocess.Popen, timeout: float) -> bool:
    try:
        process.wait(timeout)
        return True
    except subprocess.TimeoutExpired:
        return False


def _group_may_live(group: int) -> bool:
    """True while ``group`` has a process (a zombie too: :mod:`.process_tree` tells them apart)."""
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _pids() -> list[int]:
    """Linux: every process's pid."""
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _lineage(pid: int) -> tuple[int, int]:
    """Linux: the parent of ``pid`` and its start time (clock ticks after boot); (0, 0) if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rsplit(b")", 1)[1].split()
        return int(fields[1]), int(fields[19])
    except (OSError, IndexError, ValueError):
        return 0, 0


def _carries(pid: int, token: bytes) -> bool:
    """Linux: True when the environment ``pid`` was started with holds ``token``."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return token in environ.read(MAX_ENVIRON)
    except OSError:  # gone, or another user's
        return False


class ServerInput(io.FileIO):
    """POSIX: a stdio server's stdin (descriptor 0), read once poll() finds input (or its end)
    there or a byte on ``wake``: the server's ``close()`` writes one, so its reader thread, which
    a read blocked on descriptor 0 would hold for ever, sees the end of its input
    (2025-11-25 basic/lifecycle §Shutdown: "The server MAY initiate shutdown by closing its
    output stream to the client and exiting")."""

    #: True once a read returned the end of input (or was woken by ``close()``).
    ended = False

    def __init__(self) -> None:
        super().__init__(0, closefd=False)
        self.wake = os.pipe()
        self.ready = select.poll()
        self.ready.register(0, select.POLLIN)
        self.ready.register(self.wake[0], select.POLLIN)
        self.reading = threading.Lock()

    def readinto(self, buffer) -> int:  # type: ignore[override]
        """Read what descriptor 0 holds into ``buffer``: 0 bytes at its end, once woken, and
        ever after (the wake pipe is not looked at again: it may be closed)."""
        with self.reading:
            woken = self.ended or self.wake[0] in dict(self.ready.poll())
            count = 0 if woken else os.readv(0, [buffer])
            self.ended = not count
            return count


class DroppingStderr(io.FileIO):
    """POSIX: a stdio server's stderr (descriptor 2), whose writes never wait for a pipe or a
    socket that is not read: a piece that poll() finds room for is written at once; the rest
    (the pipe is full: its reader does not read it) goes to
    :func:`mcp_ref.stdio_end.write_stderr`, which drops it and counts it (2025-11-25
    basic/transports §stdio: the server MAY write to stderr and "Clients MAY capture, forward,
    or ignore" it: one that ignores it must not stall the server).  Another process writing to
    the same pipe between poll() and the write can still fill it."""

    #: Bytes dropped since the last note said so (:func:`mcp_ref.stdio_end.write_stderr`).
    dropped = 0

    def __init__(self) -> None:
        super().__init__(2, "w", closefd=False)
        self.lock = threading.Lock()
        self.room = select.poll()
        self.room.register(2, select.POLLOUT)

    def write(self, data) -> int:  # type: ignore[override]
        """Write ``data`` (it all counts as written: what finds no room is dropped)."""
        with self.lock:
            if not self.dropped and len(data) <= select.PIPE_BUF and self.room.poll(0):
                return os.write(2, data)
        from .stdio_end import write_stderr

        return write_stderr(self, data)


@contextlib.contextmanager
def server_streams() -> Iterator[tuple[IO[bytes], IO[bytes]]]:
    """This process's stdin and stdout for a stdio server, with ``sys.stdout`` pointed at stderr,
    while the ``with`` block runs (:meth:`~mcp_ref.server.Server.run_stdio`).

    A stdio server must write nothing but protocol messages to stdout, so a
    stray ``print()`` in a tool goes to stderr instead of corrupting the stream.  POSIX, while
    ``sys.stdin`` and ``sys.stdout`` are the process's own (``sys.__stdin__`` on descriptor 0,
    ``sys.__stdout__`` on 1): the messages go out on a copy of descriptor 1, and descriptor 1
    itself becomes a pipe whose reader passes what it reads on to stderr through a
    :class:`DroppingStderr` (:func:`_drain`; ``/dev/null`` when stderr is closed:
    2025-11-25 basic/transports §stdio, "The server MUST NOT write anything to its stdout that is
    not a valid MCP message"), so output written there by other means (a C library, a child
    process) cannot reach the client, nor wait for it to read stderr; the input is a
    :class:`ServerInput`, which ``close()`` can stop; while ``sys.stderr`` is the process's own
    (on descriptor 2), it becomes a :class:`DroppingStderr`, and so do the logging handlers that
    wrote to it.  At the end (returning or raising) descriptor 1 is a copy of the output again
    (``/dev/null``'s once the server ended it), the reader is woken and the copy and the wake
    pipe are closed once it has left its read (:data:`~mcp_ref.session.CLOSING_WRITES` at most),
    and ``sys.stderr`` and those handlers are the former ones, unless what was written to them
    was dropped and not said yet (the client does not read stderr): then they stay, so that
    what the process still writes as it ends (a traceback) does not wait for ever.  Otherwise
    (Windows; streams a caller put in their place): ``sys.stdin.buffer`` and
    ``sys.stdout.buffer``, as they are.  Either way ``sys.stdout`` is ``sys.stderr`` afterwards.
    """
    sys.stdout.flush()  # what was printed before goes out first, as it always did
    former = sys.stderr
    own = _is_own(sys.stdin, sys.__stdin__, 0) and _is_own(sys.stdout, sys.__stdout__, 1)
    reader, writer = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = former
    if os.name != "posix" or not own:
        yield reader, writer
        return
    import fcntl  # (POSIX only)

    # Above 2 even when stderr is closed, and not inherited by child processes.
    output = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    drain = None
    try:
        stderr = DroppingStderr()
    except OSError:  # no stderr (descriptor 2 is closed)
        from .stdio_end import point_at_null

        point_at_null(1)
    else:  # descriptor 1: a pipe that a thread passes on to stderr (_drain)
        drained, pipe = os.pipe()
        os.dup2(pipe, 1)
        os.close(pipe)
        moved = [0]  # bytes the drain has passed on (or dropped)
        drain = threading.Thread(target=_drain, args=(drained, stderr, moved), daemon=True)
        drain.start()
    guard = None
    if _is_own(former, sys.__stderr__, 2):  # (None when descriptor 2 is closed)
        guard = io.TextIOWrapper(
            stderr, "utf-8", "backslashreplace", line_buffering=True, write_through=True
        )
        _repoint(former, guard)
    source = ServerInput()
    writer = io.FileIO(output, "w", closefd=False)
    try:
        yield io.BufferedReader(source), writer
    finally:
        os.dup2(output, 1)
        os.write(source.wake[1], b"x")  # a reader still waiting (run_stdio() raised) ends
        if source.reading.acquire(timeout=CLOSING_WRITES):  # then it never reads again
            source.ended = True
            source.reading.release()
            writer.close()
            for descriptor in (output, *source.wake):
                os.close(descriptor)
        # descriptor 1's pipe has ended, unless a child process holds it: waited for while what
        # it holds moves on (to a client reading stderr, however slowly, or dropped)
        before = -1
        while drain is not None and drain.is_alive() and moved[0] != before:
            before = moved[0]
            drain.join(2 * CLOSING_WRITES)
        if guard is not None:
            if guard.buffer.dropped:  # stderr is not read: kept (its writes do not wait) to the end
                from .stdio_end import say_dropped_at_exit

                say_dropped_at_exit(guard)
            else:
                _repoint(guard, former)


def _drain(drained: int, stderr: DroppingStderr, moved: list[int]) -> None:
    """Read the pipe ``drained`` (a stdio server's descriptor 1) to its end, a pipe's atomic
    write at a time, writing it to ``stderr``, whose writes never wait for a reader that takes
    nothing: a child process writing to its stdout is never held up by a client that ignores the
    server's stderr (2025-11-25 basic/transports §stdio: "Clients MAY capture, forward, or ignore
    this logging"); ``moved[0]`` counts the bytes passed on (or dropped)."""
    while chunk := os.read(drained, select.PIPE_BUF):
        with contextlib.suppress(OSError):  # (stderr's reader has gone: go on, dropping)
            stderr.write(chunk)
        moved[0] += len(chunk)
    os.close(drained)


def _is_own(stream: Any, original: Any, descriptor: int) -> bool:
    """True when ``stream`` is the process's ``original`` (``sys.__stdin__``...) on ``descriptor``."""
    return original is not None and stream is original and original.fileno() == descriptor


def _repoint(former: Any, stream: Any) -> None:
    """``sys.stderr`` and ``sys.stdout`` become ``stream``, and so do the logging handlers that
    wrote to ``former`` (``logging.basicConfig()`` before the server runs)."""
    sys.stdout = sys.stderr = stream
    for logger in [logging.root, *logging.root.manager.loggerDict.values()]:
        for handler in getattr(logger, "handlers", ()):
            if getattr(handler, "stream", None) is former:
                handler.setStream(stream)
