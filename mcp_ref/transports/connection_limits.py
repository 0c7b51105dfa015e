"""What one connection may hold of the standard-library HTTP server, and for how long.

A thread per connection (``wsgi_server``) is only safe with bounds, and this module holds
them, apart from HTTP itself:

- :class:`ConnectionLimits`, the settings, with their defaults;
- :class:`DeadlineSocketIO` and :class:`Watchdog`: a deadline for every request head and
  body (a total, not per read, so a client trickling a byte at a time cannot hold a
  thread), an idle limit between keep-alive requests, and a limit on how long one write
  may block; one thread enforces them all, and the socket stays blocking, so the hot path
  pays no extra system call;
- :class:`ConnectionTable`: the cap on open connections.  At the cap, the connection that
  has waited longest for a request head (idle, or trickling one) is closed to make room;
  connections running a request, SSE streams included, are never taken;
- :class:`Lingerer`: when every connection is at work, the newcomer's 503, sent so that
  the client can read it;
- :func:`fitted_cap`: the cap lowered to fit the process's open-file limit.

``spec_notes/security.md`` lists each limit, its default, and what a client sees past it.
"""

from __future__ import annotations

import io
import logging
import socket
import threading
import time
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionLimits:
    """What one connection may hold of the server, and for how long (all times in seconds).

    Pass them as ``Server.run_http(..., connection_limits=ConnectionLimits(...))`` or to
    :class:`~mcp_ref.transports.wsgi_server.WsgiServer`.  ``spec_notes/security.md`` lists each with what a client sees past it.
    """

    #: Open connections at once (each holds a thread).  At the cap, the connection that has
    #: waited longest for a request head is closed to make room; if every one is running a
    #: request (SSE streams included), the new one gets 503 with ``Retry-After``.  Lowered at
    #: start to fit the process's open-file limit (``RLIMIT_NOFILE``).
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

    @property
    def tick(self) -> float:
        """How often the watchdog looks at deadlines: a fifth of the shortest, at most half a second."""
        return max(0.01, min(0.5, self.header_timeout / 5, self.keepalive_timeout / 5,
                             self.body_timeout / 5, self.write_timeout / 5))


#: File descriptors kept free of connections when the cap is fitted to ``RLIMIT_NOFILE``:
#: for lingering refusals, the listening socket, logs, files the application opens.
FD_RESERVE = 128
#: Refused connections kept open at once while the client reads its 503 (beyond: closed at once).
MAX_LINGERING = 64
#: How long a refused connection is kept open for its client to read the 503.
LINGER_SECONDS = 2.0

_REFUSAL_BODY = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Server busy: too many open connections; retry later"}}'
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

    def __init__(self, sock: socket.socket, write_timeout: float):
        self.sock = sock
        self.write_timeout = write_timeout
        self.read_by: float | None = None
        self.then: float | None = None
        self.write_by: float | None = None
        self.expired = False

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
        return (read_by is not None and read_by <= now) or (write_by is not None and write_by <= now)


class Watchdog:
    """One thread for the deadlines of every connection of a server.

    Each ``tick`` it ends the connections whose read or write is overdue, by shutting their
    sockets down (see :class:`DeadlineSocketIO`).  A deadline is a total: a client trickling
    a byte at a time cannot stretch it, as it would a timeout on each read.  The thread
    starts with the first connection and stops with the server.
    """

    def __init__(self, tick: float):
        self.tick = tick
        self.lock = threading.Lock()
        self.watched: set[DeadlineSocketIO] = set()
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None

    def watch(self, socket_io: DeadlineSocketIO) -> None:
        with self.lock:
            self.watched.add(socket_io)
            if self.thread is None and not self.stopped.is_set():
                self.thread = threading.Thread(target=self._run, name="mcp-ref-watchdog", daemon=True)
                self.thread.start()

    def forget(self, socket_io: DeadlineSocketIO) -> None:
        with self.lock:
            self.watched.discard(socket_io)

    def _run(self) -> None:
        while not self.stopped.wait(self.tick):
            now = time.monotonic()
            with self.lock:
                overdue = [w for w in self.watched if w.overdue(now)]
            for socket_io in overdue:
                socket_io.expired = True
                log.debug("connection past its deadline: closed")
                try:
                    socket_io.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self) -> None:
        self.stopped.set()


class ConnectionTable:
    """The table of open connections: admission under the cap, and who may be closed to make room.

    ``waiting`` holds the connections reading a request head (idle between requests, or
    trickling one), in the order they began to wait: the first is the one to close at the
    cap.  A connection leaves it when its head is complete (``working``) and is then never
    taken; an evicted one learns it there and ends.
    """

    def __init__(self, cap: int):
        self.cap = cap
        self.lock = threading.Lock()
        self.count = 0  # admitted and not yet released (evicted ones included until they end)
        self.waiting: dict[socket.socket, None] = {}
        self.evicted: set[socket.socket] = set()

    def admit(self, sock: socket.socket) -> bool:
        """Count a new connection in, closing the longest-waiting one if at the cap; False: refuse it."""
        with self.lock:
            if self.count - len(self.evicted) >= self.cap:
                if not self.waiting or len(self.evicted) >= MAX_LINGERING:
                    return False
                victim = next(iter(self.waiting))
                del self.waiting[victim]
                self.evicted.add(victim)
            else:
                victim = None
            self.count += 1
            self.waiting[sock] = None
        if victim is not None:
            log.info("connection cap (%d) reached: closed the connection that waited longest for a request", self.cap)
            try:
                victim.shutdown(socket.SHUT_RDWR)  # its blocked read returns at once
            except OSError:
                pass
        return True

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


class Lingerer:
    """Closes refused connections so that their clients read the 503 rather than a reset.

    Closing a socket with unread input makes the kernel send a reset, which can destroy the
    refusal before the client reads it.  So a refused socket, its 503 sent and its sending
    side shut, is kept for up to ``LINGER_SECONDS`` while what the client still sends is
    read and dropped.  At most ``MAX_LINGERING`` at once; beyond, closed at once.  One thread,
    started when needed, ending when none is left.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.pending: list[socket.socket] = []
        self.count = 0
        self.running = False
        self.closed = False

    def refuse(self, sock: socket.socket) -> None:
        """Send the 503 and close ``sock`` gently (never blocks)."""
        try:
            sock.setblocking(False)
            drain(sock)
            sock.send(REFUSAL)
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
            if not self.running:
                self.running = True
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
                    if not drain(key.fileobj):
                        until[key.fileobj] = 0.0
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
    log.info("max_connections lowered from %d to %d to fit the open-file limit (%d)", cap, fitted, soft)
    return fitted
