"""A small threading WSGI server on the standard library, with HTTP/1.1 keep-alive.

``wsgiref.simple_server`` speaks HTTP/1.0 and closes every connection, and it
writes headers and body in separate system calls; on a connection without
``TCP_NODELAY`` that costs a 40 ms delayed-ACK stall per response.  This
server keeps connections open (HTTP/1.1), sets ``TCP_NODELAY`` on every
accepted socket, writes headers and a sized body with one flush, and sends
bodies of unknown length (SSE streams) with chunked transfer encoding,
flushing each chunk.

It is what ``Server.run_http`` uses; the same WSGI application also runs under
gunicorn (``-k gthread``) or inside Flask/Django.

A thread per connection is only safe with bounds (:class:`ConnectionLimits`):
a cap on open connections, a deadline for every request head and body (a
total, not per read, so a client trickling a byte at a time cannot hold a
thread), an idle limit between keep-alive requests, a limit on how long one
write may block, and a pause when the process is out of file descriptors.
At the cap, the connection that has waited longest for a request head (idle
or trickling) makes room for the new one; connections running a request,
SSE streams included, are never taken.  Only when all of them are at work is
the new one refused, with a 503 it can read.
"""

from __future__ import annotations

import errno
import io
import logging
import os
import socket
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

log = logging.getLogger(__name__)

#: A request body left unread by the application up to this size is drained to keep the
#: connection; a larger one closes it instead.
DRAIN_LIMIT = 1024 * 1024


@dataclass(frozen=True)
class ConnectionLimits:
    """What one connection may hold of the server, and for how long (all times in seconds).

    Pass them as ``Server.run_http(..., connection_limits=ConnectionLimits(...))`` or to
    :class:`WsgiServer`.  ``spec_notes/security.md`` lists each with what a client sees past it.
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


class _TimedSocketIO(io.RawIOBase):
    """The connection's socket under a deadline for reads and a limit for each write.

    ``expect(first, then)`` starts a request: the head's first byte must arrive within
    ``first`` seconds, and the rest of it within ``then`` seconds of that byte (``then``
    None: ``first`` is the deadline for the whole head).  A read past the deadline raises
    TimeoutError, which the request handler turns into a closed connection.
    """

    def __init__(self, sock: socket.socket, write_timeout: float):
        self.sock = sock
        self.write_timeout = write_timeout
        self.deadline: float | None = None
        self.then: float | None = None
        self.timeout_set: float | None = None

    def expect(self, first: float, then: float | None = None) -> None:
        self.deadline = time.monotonic() + first
        self.then = then

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request did not arrive in time")
            self.timeout_set = left
            self.sock.settimeout(left)
        count = self.sock.recv_into(buffer)
        if self.then is not None and count:
            self.deadline, self.then = time.monotonic() + self.then, None
        return count

    def write(self, data) -> int:
        if self.timeout_set != self.write_timeout:
            self.timeout_set = self.write_timeout
            self.sock.settimeout(self.write_timeout)
        return self.sock.send(data)


class _Connections:
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


class _Lingerer:
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
            _drain(sock)
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
                    if not _drain(key.fileobj):
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
        with self.lock:
            self.closed = True


def _drain(sock: socket.socket) -> bool:
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


def _fitted_cap(cap: int) -> int:
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


class _Body(io.RawIOBase):
    """``wsgi.input``: the request body, never reading past Content-Length."""

    def __init__(self, stream, length: int):
        self.stream = stream
        self.left = length

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.left <= 0:
            return 0
        data = self.stream.read(min(len(buffer), self.left))
        self.left -= len(data)
        buffer[: len(data)] = data
        return len(data)

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or size > self.left:
            size = self.left
        if size <= 0:
            return b""
        data = self.stream.read(size)
        self.left -= len(data)
        return data


class _LineRecorder:
    """A read-only stream that keeps a copy of each line read through ``readline`` (the request's head)."""

    def __init__(self, stream, lines: list):
        self.stream, self.lines = stream, lines

    def readline(self, limit: int = -1) -> bytes:
        line = self.stream.readline(limit)
        self.lines.append(line)
        return line

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


class WsgiRequestHandler(BaseHTTPRequestHandler):
    """Runs the server's WSGI application for every request method."""

    protocol_version = "HTTP/1.1"
    server_version = "mcp_ref"
    wbufsize = 64 * 1024  # buffered: a response's head and body go out in one send

    def setup(self) -> None:
        """The socket's reads and writes go through :class:`_TimedSocketIO` (deadlines, write limit)."""
        self.connection = self.request
        limits = self.server.limits
        self.socket_io = _TimedSocketIO(self.connection, limits.write_timeout)
        self.socket_io.expect(limits.header_timeout)  # the first head: counted from the accept
        self.rfile = io.BufferedReader(self.socket_io, 64 * 1024)
        self.wfile = io.BufferedWriter(self.socket_io, self.wbufsize)
        self.first_request = True

    def handle_one_request(self) -> None:
        """One request, within its deadlines; a connection closed to make room ends here."""
        if not self.server.connections.wait(self.connection):
            self.close_connection = True
            return
        if not self.first_request:
            limits = self.server.limits
            self.socket_io.expect(limits.keepalive_timeout, limits.header_timeout)
        self.first_request = False
        super().handle_one_request()

    def do_GET(self) -> None:  # noqa: N802 - the http.server naming
        self._run()

    do_POST = do_DELETE = do_PUT = do_PATCH = do_OPTIONS = do_HEAD = do_GET

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        log.debug("%s %s", self.address_string(), format % args)

    def _environ(self, body: _Body) -> dict:
        path, _, query = self.path.partition("?")
        from urllib.parse import unquote

        host, port = self.server.server_address[:2]
        environ = {
            "REQUEST_METHOD": self.command,
            "SCRIPT_NAME": "",
            "PATH_INFO": unquote(path, "latin-1"),
            "QUERY_STRING": query,
            "SERVER_NAME": str(host),
            "SERVER_PORT": str(port),
            "SERVER_PROTOCOL": self.request_version,
            "REMOTE_ADDR": self.client_address[0],
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": self.headers.get("Content-Length", ""),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": body,
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }
        for name, value in self.headers.items():
            key = "HTTP_" + name.upper().replace("-", "_")
            if key in ("HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"):
                continue
            environ[key] = f"{environ[key]},{value}" if key in environ else value
        return environ

    def parse_request(self) -> bool:
        """The standard parsing, refusing a header line with a bare CR.

        RFC 9112 §2.2: a bare CR in a field "MUST" be rejected or replaced; the
        standard library's parser would split the line there instead, so two
        readers of the same bytes could disagree on the headers (smuggling).
        """
        lines: list[bytes] = []
        rfile = self.rfile
        self.rfile = _LineRecorder(rfile, lines)
        try:
            parsed = super().parse_request()
        finally:
            self.rfile = rfile
        if parsed and b"\r" in b"".join(lines).replace(b"\r\n", b""):
            self.send_error(400, "Bad header line: a bare CR")
            return False
        if parsed and not self.server.connections.working(self.connection):
            self.close_connection = True  # closed to make room while its head arrived
            return False
        self.socket_io.expect(self.server.limits.body_timeout)
        return parsed

    def _run(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self.send_error(400, "Bad Content-Length")
            return
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.send_error(411, "Length Required")  # MCP clients send Content-Length
            return
        body = _Body(self.rfile, length)
        state: dict = {"sent": False, "chunked": False}

        def start_response(status: str, headers: list, exc_info=None):
            if exc_info and state["sent"]:
                raise exc_info[1].with_traceback(exc_info[2])
            state["status"], state["headers"] = status, headers
            return lambda data: self._write(state, data)

        result = self.server.app(self._environ(body), start_response)
        try:
            if not state["sent"] and isinstance(result, list):
                self._send_sized(state, result)
            else:
                for chunk in result:
                    self._write(state, chunk)
                if not state["sent"]:
                    self._send_head(state)
                if state["chunked"]:
                    self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        if body.left:
            if body.left > DRAIN_LIMIT:
                self.close_connection = True
            else:
                body.read()

    def _send_head(self, state: dict, extra: list = ()) -> None:
        headers = list(state["headers"]) + list(extra)
        sized = any(name.lower() == "content-length" for name, _ in headers)
        head = [f"{self.protocol_version} {state['status']}\r\n"]
        for name, value in headers:
            head.append(f"{name}: {value}\r\n")
            if name.lower() == "connection" and value.lower() == "close":
                self.close_connection = True
        if not sized:
            state["chunked"] = True
            head.append("Transfer-Encoding: chunked\r\n")
        head.append("\r\n")
        self.wfile.write("".join(head).encode("latin-1"))
        state["sent"] = True

    def _send_sized(self, state: dict, chunks: list) -> None:
        """A complete body: headers and body leave in one flush."""
        sized = any(name.lower() == "content-length" for name, _ in state["headers"])
        self._send_head(state, () if sized else [("Content-Length", str(sum(len(c) for c in chunks)))])
        for chunk in chunks:
            self.wfile.write(chunk)
        self.wfile.flush()

    def _write(self, state: dict, data: bytes) -> None:
        """Send part of a body of unknown length (the WSGI ``write`` callable, and streamed iterables)."""
        if not state["sent"]:
            self._send_head(state)
        if not data:
            return
        if state["chunked"]:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        else:
            self.wfile.write(data)
        self.wfile.flush()


class WsgiServer(ThreadingHTTPServer):
    """A threading HTTP/1.1 server for one WSGI application, within :class:`ConnectionLimits`."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], app: Callable, handler=WsgiRequestHandler,
                 limits: ConnectionLimits | None = None):
        self.app = app
        self.limits = limits or ConnectionLimits()
        self.connections = _Connections(_fitted_cap(self.limits.max_connections))
        self.lingerer = _Lingerer()
        self.accept_backoff = 0.0
        super().__init__(address, handler)

    def get_request(self):
        """Accept the next connection; out of file descriptors, pause instead of spinning."""
        try:
            connection, address = super().get_request()
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                # The pending connection stays in the backlog and the listening socket stays
                # readable: without a pause the accept loop would spin at full CPU.
                first = self.accept_backoff == 0.0
                self.accept_backoff = min(max(self.accept_backoff * 2, 0.01), 0.5)
                (log.warning if first else log.debug)(
                    "cannot accept a connection (%s); pausing %.2f s", os.strerror(exc.errno), self.accept_backoff)
                time.sleep(self.accept_backoff)
            raise
        self.accept_backoff = 0.0
        # No Nagle: a response must not wait for the peer's delayed ACK.
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, address

    def process_request(self, request, client_address) -> None:
        """Serve the connection on a thread of its own, or refuse it with 503 when at the cap."""
        if not self.connections.admit(request):
            log.warning("connection cap (%d) reached with every connection at work: refused %s",
                        self.connections.cap, client_address[0])
            self.lingerer.refuse(request)
            return
        try:
            super().process_request(request, client_address)
        except RuntimeError:  # no thread could be started
            self.connections.release(request)
            log.warning("cannot start a thread for a connection: refused %s", client_address[0])
            self.lingerer.refuse(request)

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.connections.release(request)

    def server_close(self) -> None:
        super().server_close()
        self.lingerer.close()

    def handle_error(self, request, client_address) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            log.debug("connection from %s ended: %s", client_address, exc)
            return
        log.exception("error while serving %s", client_address)

    @property
    def port(self) -> int:
        """The port actually bound (useful with port 0)."""
        return self.server_address[1]

    @property
    def url(self) -> str:
        """``http://host:port`` of this server."""
        host = self.server_address[0]
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"
