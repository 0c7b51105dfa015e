"""What one connection may hold of the standard-library HTTP server, and for how long.

A thread per connection (``wsgi_server``) is only safe with bounds, and this module holds
them, apart from HTTP itself:

- :class:`ConnectionLimits`, the settings, with their defaults;
- :class:`DeadlineSocketIO` and :class:`Watchdog`: a deadline for every request head and
  body (a total, not per read, so a client trickling a byte at a time cannot hold a
  thread), an idle limit between keep-alive requests, and a limit on how long one write
  may block; one thread enforces them all, and the socket stays blocking, so the hot path
  pays no extra system call;
- the same watchdog notices a client that closed its connection while its response is still
  running (a long-lived stream, or a handler that waits): the application is told at once
  (:meth:`DeadlineSocketIO.on_gone`), so the stream ends, its request is cancelled where the
  spec says so, and its thread and slot are freed, not at the next keep-alive write;
- :class:`ConnectionTable`: the cap on open connections.  At the cap, the connection that
  has waited longest for a request head (idle, or trickling one) is closed to make room;
  failing that, a long-lived stream (``subscriptions/listen``, a GET stream) of the client
  holding the most is ended gracefully; connections running a request are never taken;
- :class:`Lingerer`: when every connection is at work, the newcomer's 503, sent so that
  the client can read it; and the close of a connection whose request body was left unread
  (an error answer), so that the client reads that answer and no thread waits for the body;
- :func:`fitted_cap`: the cap lowered to fit the process's open-file limit.

``spec_notes/security.md`` lists each limit, its default, and what a client sees past it.
"""

from __future__ import annotations

import io
import logging
import select
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionLimits:
    """What one connection may hold of the server, and for how long (all times in seconds).

    Pass them as ``Server.run_http(..., connection_limits=ConnectionLimits(...))`` or to
    :class:`~mcp_ref.http.wsgi_server.WsgiServer`.  ``spec_notes/security.md`` lists each with what a client sees past it.
    """

    #: Open connections at once (each holds a thread).  At the cap, the connection that has
    #: waited longest for a request head is closed to make room; failing that (``evict_streams``)
    #: a long-lived stream of the client holding the most is ended; if every one is running a
    #: request, the new one gets 503 with ``Retry-After``.  Lowered at start to fit the
    #: process's open-file limit (``RLIMIT_NOFILE``).
    max_connections: int = 512
    #: From a connection's accept (or a keep-alive request's first byte) to the end of its
    #: request head: a total, so a head trickled a byte at a time ends here.
    header_timeout: float = 10.0
    #: How long a kept-alive connection may wait for its next request.
    keepalive_timeout: float = 15.0
    #: From the end of a request head to the end of its body, in total.
    body_timeout: float = 30.0
    #: The longest one write may block on a client that does not read (an SSE stream that
    #: has nothing to send is not writing, and is never closed for being quiet).
    write_timeout: float = 30.0
    #: How often the watchdog looks for clients that closed a connection whose response is still
    #: running (a stream that is waiting for events, a handler that waits): such a client is
    #: noticed within about two of these (only a response older than one is looked at).
    peer_check_interval: float = 0.25
    #: At the cap with no connection waiting for a request head: end a long-lived stream (a
    #: ``subscriptions/listen`` POST, a GET stream: waiting for events is not work) of the client
    #: holding the most, gracefully, to make room.  False: streams count as work, and the
    #: newcomer gets 503.
    evict_streams: bool = True

    @property
    def tick(self) -> float:
        """How often the watchdog looks at deadlines: a fifth of the shortest, at most half a second."""
        shortest = min(
            self.header_timeout, self.keepalive_timeout, self.body_timeout, self.write_timeout
        )
        return max(0.01, min(0.5, shortest / 5))


#: File descriptors kept free of connections when the cap is fitted to ``RLIMIT_NOFILE``:
#: for lingering refusals, the listening socket, logs, files the application opens.
FD_RESERVE = 128
#: Refused connections kept open at once while the client reads its 503 (beyond: closed at once).
MAX_LINGERING = 64
#: How long a refused connection is kept open for its client to read the 503.
LINGER_SECONDS = 2.0

_REFUSAL_BODY = b'{"jsonrpc":"2.0","id":null,"error":{"code":-31000,"message":"Server busy: too many open connections; retry later"}}'
REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
    b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_REFUSAL_BODY), _REFUSAL_BODY)
)


class DeadlineSocketIO(io.RawIOBase):
    """A connection's socket, read and written under deadlines that :class:`Watchdog` enforces.

    The socket stays blocking: no system call is added to a read or a write.  ``read_by`` is
    when the current read phase must end (None: no deadline), ``then`` (if set) replaces it,
    counted from the first byte that arrives (a kept-alive connection's next head);
    ``write_by`` is set around each write.  Past either, the watchdog sets ``expired`` and
    shuts the socket down, which wakes the blocked thread: its read or write then raises
    TimeoutError, and the request handler closes the connection.
    """

    read_by: float | None = None
    then: float | None = None
    write_by: float | None = None
    expired = False
    #: How many requests its responses have begun (:meth:`begin`); ``serving``: the number of the
    #: request whose response is running (0: none); ``seen`` is the one the watchdog saw at its
    #: last look: a response still running at the next is looked at.
    requests = serving = seen = 0
    #: True once the client is known to have closed the connection (see :class:`Watchdog`).
    gone = False

    def __init__(self, sock: socket.socket, write_timeout: float):
        self.sock = sock
        self.write_timeout = write_timeout
        self._on_gone: list[Callable[[], None]] = []
        self._gone_lock = threading.Lock()

    def begin(self) -> None:
        """A request's response starts running (the watchdog may look for its client's close)."""
        self.requests += 1
        self.serving = self.requests

    def end(self) -> None:
        """The response has ended: what was registered with :meth:`on_gone` is dropped."""
        self.serving = 0
        if self._on_gone:
            with self._gone_lock:
                self._on_gone.clear()

    def on_gone(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once if the client closes the connection before the response ends.

        Called from the watchdog's thread (or at once, here, if the client is already known to
        have gone): it must not block, nor take a lock that is held across a write.
        """
        with self._gone_lock:
            if not self.gone:
                self._on_gone.append(callback)
                return
        _run_callback(callback)

    def peer_gone(self) -> None:
        """The client has closed the connection: tell the response, then shut the socket down
        (a thread blocked writing to it wakes at once)."""
        with self._gone_lock:
            if self.gone:
                return
            self.gone = True
            callbacks, self._on_gone = self._on_gone, []
        for callback in callbacks:
            _run_callback(callback)
        shut_down(self.sock)

    def expect(self, first: float | None, then: float | None = None) -> None:
        """A read phase: its end within ``first`` seconds (None: no deadline); see the class."""
        self.read_by = None if first is None else time.monotonic() + first
        self.then = then

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            count = self.sock.recv_into(buffer)
        except OSError:
            if self.expired:
                raise TimeoutError("the request did not arrive in time") from None
            raise
        if not count and self.expired:
            raise TimeoutError("the request did not arrive in time")
        if count and self.then is not None:
            self.read_by, self.then = time.monotonic() + self.then, None
        return count

    def write(self, data) -> int:
        self.write_by = time.monotonic() + self.write_timeout
        try:
            return self.sock.send(data)
        except OSError:
            if self.expired:
                raise TimeoutError("the client did not read in time") from None
            raise
        finally:
            self.write_by = None

    def overdue(self, now: float) -> bool:
        """True if a read or a write is past its deadline."""
        read_by, write_by = self.read_by, self.write_by
        return (read_by is not None and read_by <= now) or (
            write_by is not None and write_by <= now
        )


def shut_down(sock: socket.socket) -> None:
    """Shut ``sock`` down in both directions, waking a thread blocked reading or writing it (an
    error, e.g. the socket already closed, is ignored: then nobody uses it)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _run_callback(callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception:  # one response's hook must not stop the watchdog
        log.exception("error while ending the response of a client that has gone")


#: MSG_DONTWAIT where the platform has it: a peek never blocks (the socket is readable anyway).
_PEEK = socket.MSG_PEEK | getattr(socket, "MSG_DONTWAIT", 0)
#: Linux: the peer has shut its sending side, even with data still unread before the end.
_RDHUP = getattr(select, "POLLRDHUP", 0)
_HUNG_UP = _RDHUP | getattr(select, "POLLHUP", 0) | getattr(select, "POLLERR", 0)


def closed_by_peer(watched: list[DeadlineSocketIO]) -> list[DeadlineSocketIO]:
    """Those of ``watched`` whose client has closed the connection, in one poll with no wait.

    A socket hung up (reset; on Linux also a client that shut its sending side, ``POLLRDHUP``,
    though data it sent before is still unread) is closed; so is a readable socket whose peek
    reads nothing (its end of input).  A readable socket with data and no end (a client that
    pipelines its next request on a keep-alive connection, or is still sending a body) is not:
    nothing is read from it here, so its thread still reads it whole.
    """
    by_fd = {socket_io.sock.fileno(): socket_io for socket_io in watched}
    by_fd.pop(-1, None)  # a socket closed meanwhile (its number -1): no longer serving
    if not by_fd:
        return []
    try:
        if hasattr(select, "poll"):
            poller = select.poll()
            for fd in by_fd:
                poller.register(fd, select.POLLIN | _RDHUP)
            events = [(fd, event) for fd, event in poller.poll(0) if not event & select.POLLNVAL]
        else:  # Windows: select takes any socket number there
            events = [(fd, 0) for fd in select.select(list(by_fd), [], [], 0)[0]]
    except (OSError, ValueError):  # a socket closed meanwhile: looked at again next time
        return []
    closed = []
    for fd, event in events:
        socket_io = by_fd[fd]
        if event & _HUNG_UP:
            closed.append(socket_io)
            continue
        try:
            # the bytes under TLS (an SSL socket refuses flags): a TLS client's end is seen by its FIN,
            # not by a close_notify alone (TLS 1.3 encrypts that alert as data)
            if socket.socket.recv(socket_io.sock, 1, _PEEK):
                continue  # data: not an end of input
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            pass  # reset, or closed meanwhile (then no longer serving: left alone by the caller)
        closed.append(socket_io)
    return closed


class Watchdog:
    """One thread for the deadlines of every connection of a server, and for clients that left.

    Every ``tick`` (or ``peer_check``, if shorter) it ends the connections whose read or write is overdue, by shutting their
    sockets down (see :class:`DeadlineSocketIO`).  A deadline is a total: a client trickling
    a byte at a time cannot stretch it, as it would a timeout on each read.

    Every ``peer_check`` (or ``tick``) it polls, with no wait, the sockets of the responses that have been
    running since its last look (a stream waiting for events, a handler that waits): one whose
    client has closed it is ended at once (:meth:`DeadlineSocketIO.peer_gone`), so its thread
    and its slot are freed within about two checks, not at the stream's next keep-alive write
    (which could be 15 s away, and 30 s before a write fails).  A response shorter than one
    check is never polled: the hot path pays two attribute writes.  The thread starts with the
    first connection and stops with the server.
    """

    thread: threading.Thread | None = None

    def __init__(self, tick: float, peer_check: float | None = None):
        self.tick = tick
        self.peer_check = tick if peer_check is None else max(0.01, peer_check)
        self.lock = threading.Lock()
        self.watched: set[DeadlineSocketIO] = set()
        self.stopped = threading.Event()

    def watch(self, socket_io: DeadlineSocketIO) -> None:
        with self.lock:
            self.watched.add(socket_io)
            if self.thread is None and not self.stopped.is_set():
                self.thread = threading.Thread(
                    target=self._run, name="mcp-ref-watchdog", daemon=True
                )
                self.thread.start()

    def forget(self, socket_io: DeadlineSocketIO) -> None:
        with self.lock:
            self.watched.discard(socket_io)

    def _run(self) -> None:
        while not self.stopped.wait(min(self.tick, self.peer_check)):
            self._check_peers()
            now = time.monotonic()
            with self.lock:
                overdue = [w for w in self.watched if w.overdue(now)]
            for socket_io in overdue:
                socket_io.expired = True
                log.debug("connection past its deadline: closed")
                shut_down(socket_io.sock)

    def _check_peers(self) -> None:
        """End the responses, running since the last look, whose client has closed the connection."""
        candidates = []
        with self.lock:
            for socket_io in self.watched:
                serving = socket_io.serving
                if serving and serving == socket_io.seen and not socket_io.gone:
                    candidates.append(socket_io)
                else:
                    socket_io.seen = serving
        if not candidates:
            return
        for socket_io in closed_by_peer(candidates):
            if socket_io.serving and socket_io.serving == socket_io.seen:  # the same response still
                log.debug("the client closed its connection while its response was running: ended")
                socket_io.peer_gone()

    def stop(self) -> None:
        self.stopped.set()


class ConnectionTable:
    """The table of open connections: admission under the cap, and who may be closed to make room.

    ``waiting`` holds the connections reading a request head (idle between requests, or
    trickling one), in the order they began to wait: the first is the one to close at the
    cap.  A connection leaves it when its head is complete (``working``) and is then never
    taken; an evicted one learns it there and ends.

    ``streams`` holds the connections whose response is a long-lived stream (registered by the
    application, see ``wsgi_server``: a ``subscriptions/listen`` POST, a GET stream), with the
    client each belongs to and how to end it.  A stream waits for events; it is not work.  At
    the cap with no connection waiting for a head (and ``evict_streams``), the oldest stream
    of the client holding the most streams is ended gracefully (its ``end``: a listen gets its
    completion result, a GET stream a ``retry``), so a flood of streams from a few clients
    cannot lock the others out; its connection then closes.  Only when no connection is
    waiting and no stream is open is the newcomer refused (503).
    """

    count = 0  # admitted and not yet released (evicted ones included until they end)

    def __init__(self, cap: int, evict_streams: bool = True):
        self.cap = cap
        self.evict_streams = evict_streams
        self.lock = threading.Lock()
        self.waiting: dict[socket.socket, None] = {}
        self.evicted: set[socket.socket] = set()
        self.streams: dict[socket.socket, tuple[str, Callable[[], None]]] = {}

    def admit(self, sock: socket.socket) -> bool:
        """Count a new connection in, making room if at the cap (see the class); False: refuse it."""
        victim = end = None
        with self.lock:
            if self.count - len(self.evicted) >= self.cap:
                if len(self.evicted) >= MAX_LINGERING:
                    return False
                if self.waiting:
                    victim = next(iter(self.waiting))
                    del self.waiting[victim]
                elif self.evict_streams and self.streams:
                    victim = self._stream_to_end()
                    client, end = self.streams.pop(victim)
                else:
                    return False
                self.evicted.add(victim)
            self.count += 1
            self.waiting[sock] = None
        if victim is None:
            return True
        if end is not None:
            log.info(
                "connection cap (%d) reached with no idle connection: ended a long-lived stream of the "
                "client holding the most (%s)",
                self.cap,
                client,
            )
            try:
                end()  # the stream ends gracefully; its connection then closes (``wait`` says so)
                return True
            except Exception:  # then it is closed as an idle one is
                log.exception("error while ending a stream to make room")
        else:
            log.info(
                "connection cap (%d) reached: closed the connection that waited longest for a request",
                self.cap,
            )
        shut_down(victim)  # its blocked read returns at once
        return True

    def _stream_to_end(self) -> socket.socket:
        """The oldest stream of the client holding the most (under the lock)."""
        held = Counter(client for client, _ in self.streams.values())
        most = max(held.values())
        return next(sock for sock, (client, _) in self.streams.items() if held[client] == most)

    def stream(self, sock: socket.socket, client: str, end: Callable[[], None]) -> None:
        """The connection's response is a long-lived stream of ``client``; ``end()`` ends it
        gracefully (it must not block).  It may be ended to make room (see the class)."""
        with self.lock:
            if sock not in self.evicted:
                self.streams[sock] = (client, end)

    def unstream(self, sock: socket.socket) -> None:
        """The connection's stream has ended."""
        with self.lock:
            self.streams.pop(sock, None)

    def wait(self, sock: socket.socket) -> bool:
        """The connection starts waiting for a request head; False if it was closed to make room."""
        with self.lock:
            if sock in self.evicted:
                return False
            self.waiting.pop(sock, None)
            self.waiting[sock] = None  # to the end: the newest waiter
            return True

    def working(self, sock: socket.socket) -> bool:
        """The connection's head is complete: it may no longer be taken.  False if it already was."""
        with self.lock:
            if sock not in self.waiting:
                return False
            del self.waiting[sock]
            return True

    def release(self, sock: socket.socket) -> None:
        """The connection has ended."""
        with self.lock:
            self.count -= 1
            self.waiting.pop(sock, None)
            self.evicted.discard(sock)
            self.streams.pop(sock, None)


class Lingerer:
    """Closes connections so that their clients read the last answer rather than a reset: the
    503 of a refused connection, and the answer of a request whose body was left unread.

    Closing a socket with unread input makes the kernel send a reset, which can destroy the
    answer before the client reads it (RFC 9112 §9.6: close in stages).  So the socket, its
    answer sent and its sending side shut, is kept for up to ``LINGER_SECONDS`` while what the
    client still sends is read and dropped.  At most ``MAX_LINGERING`` at once; beyond, closed
    at once.  One thread, started when needed, ending when none is left: a lingering
    connection holds no handler thread and no slot of the cap.
    """

    count = 0
    running = closed = False

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pending: list[socket.socket] = []

    def refuse(self, sock: socket.socket) -> None:
        """Send the 503 and close ``sock`` gently (never blocks)."""
        try:
            sock.setblocking(False)
            drain(sock)
            sock.send(REFUSAL)
        except OSError:
            sock.close()
            return
        self.linger(sock)

    def linger(self, sock: socket.socket) -> None:
        """Close ``sock``, its answer sent, gently: its sending side shut now, the socket closed
        once the client closes or ``LINGER_SECONDS`` have passed (never blocks)."""
        try:
            sock.setblocking(False)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            sock.close()
            return
        with self.lock:
            if self.closed or self.count >= MAX_LINGERING:
                sock.close()
                return
            self.count += 1
            self.pending.append(sock)
            start, self.running = not self.running, True
        if start:  # not under the lock: a thread's start waits for it to run
            threading.Thread(target=self._run, name="mcp-ref-linger", daemon=True).start()

    def _run(self) -> None:
        import selectors

        selector = selectors.DefaultSelector()
        until: dict[socket.socket, float] = {}
        try:
            while True:
                with self.lock:
                    pending, self.pending = self.pending, []
                    if not pending and not until:
                        self.running = False
                        return
                for sock in pending:
                    until[sock] = time.monotonic() + LINGER_SECONDS
                    selector.register(sock, selectors.EVENT_READ)
                for key, _ in selector.select(0.1):
                    ready = cast(socket.socket, key.fileobj)  # only sockets are registered
                    if not drain(ready):
                        until[ready] = 0.0
                now = time.monotonic()
                for sock in [s for s, t in until.items() if t <= now or self.closed]:
                    del until[sock]
                    selector.unregister(sock)
                    sock.close()
                    with self.lock:
                        self.count -= 1
        finally:
            selector.close()

    def close(self) -> None:
        """Refuse no more gently; what lingers is closed at once."""
        with self.lock:
            self.closed = True


def drain(sock: socket.socket) -> bool:
    """Read and drop what a non-blocking socket has; False once the client has closed."""
    try:
        for _ in range(16):
            if not sock.recv(65536):
                return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    return True


def fitted_cap(cap: int) -> int:
    """``cap``, lowered so that connections never exhaust the open-file limit."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return cap
    if soft == resource.RLIM_INFINITY or soft - FD_RESERVE >= cap:
        return cap
    fitted = max(8, soft - FD_RESERVE)
    log.info(
        "max_connections lowered from %d to %d to fit the open-file limit (%d)", cap, fitted, soft
    )
    return fitted
