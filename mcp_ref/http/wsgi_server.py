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

Every connection lives within :class:`~.connection_limits.ConnectionLimits`: a cap,
deadlines for each request's head and body, a limit on each write, and a pause when
the process runs out of file descriptors (see ``connection_limits``).

Two WSGI environ keys of this server's let an application hold long responses safely (an
application run elsewhere finds neither, and learns of a gone client at its next write):

- ``mcp_ref.on_disconnect(callback)``: ``callback()`` is called once if the client closes the
  connection while the response runs (the watchdog notices it within a fraction of a second);
  it must not block.  The application ends its stream, or cancels its request, there.
- ``mcp_ref.long_lived(client, end)``: this response is a long-lived stream (waiting for
  events, not working) of ``client`` (a principal, or an address); at the connection cap it
  may be ended, by ``end()``, to make room (``ConnectionTable``).

One more tells the application what it may share out: ``mcp_ref.slots``, the connection cap
(each connection a thread); ``McpWsgiApp(max_requests_per_client=)`` gives each client a share.

A header field whose name holds ``_`` gets no ``HTTP_*`` key (``Mcp_Session_Id`` would be taken
for ``Mcp-Session-Id``): it is dropped there, as gunicorn, Werkzeug and nginx do.
``mcp_ref.headers`` (:class:`Headers`) keeps every field under its own name, for the
``Mcp-Param-*`` names that hold one (``headers.header_reader``).
"""

from __future__ import annotations

import errno
import functools
import io
import logging
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import unquote

from .connection_limits import (
    ConnectionLimits,
    ConnectionTable,
    DeadlineSocketIO,
    Lingerer,
    Watchdog,
    fitted_cap,
    shut_down,
)
from .headers import cgi_name

log = logging.getLogger(__name__)

#: A request body the application left unread (an error answer: 404, 405, 415, 429 over the
#: client's share): what of it has already arrived, up to this size, is read and dropped, without
#: waiting for more, to keep the connection.  Any rest is never waited for on the handler's thread
#: (a client trickling it would hold a slot that counts as working: never evicted): the answer
#: says ``Connection: close`` and the connection closes lingering (``Lingerer.linger``), so the
#: client still reads the answer.  RFC 9112 §9.5: a server MAY close a connection at any time;
#: §9.6: one that sends "close" MUST then close it, in stages (its sending side first, then what
#: the client still sends read), lest a reset erase the answer before the client reads it.
DRAIN_LIMIT = 1024 * 1024


class _Body(io.RawIOBase):
    """``wsgi.input``: the request body, never reading past Content-Length.

    Once it is read whole, the body deadline is lifted (``socket_io``).
    """

    def __init__(self, stream, length: int, socket_io: DeadlineSocketIO):
        self.stream = stream
        self.left = length
        self.socket_io = socket_io

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0 or size > self.left:
            size = self.left
        if size <= 0:
            return b""
        data = self.stream.read(size)
        self.left -= len(data)
        if self.left <= 0:
            self.socket_io.expect(None)
        return data

    def drop_arrived(self) -> None:
        """Read and drop what of the rest has already arrived, never waiting for more (the socket
        is non-blocking meanwhile); ``left`` is then what has not arrived."""
        sock = self.socket_io.sock
        sock.setblocking(False)
        try:
            while self.left > 0:
                # read1: what is buffered, else at most one read of the socket (never a wait)
                data = self.stream.read1(min(self.left, 64 * 1024))
                if not data:
                    break  # the client has closed its side: the connection closes
                self.left -= len(data)
        except OSError:  # BlockingIOError: nothing more has arrived (else: the connection failed)
            pass
        finally:
            sock.setblocking(True)
        if self.left <= 0:
            self.socket_io.expect(None)


#: One header field line (RFC 9112 §5): a token name, a colon with no whitespace before it, a value
#: with no CR or LF of its own, then CRLF (or LF).  The value's surrounding spaces and tabs are
#: trimmed afterwards, by ``strip``: trimming inside the pattern (a lazy value before ``[ \t]*``)
#: costs time quadratic in a run of spaces, seconds for one 64 KiB line.
_TOKEN = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_FIELD_LINE = re.compile(rb"(" + _TOKEN + rb"):([^\r\n]*)\r?\n")
#: A whole head of CRLF-ended field lines and the empty line after them, when it is already
#: buffered: matched in one pass, then split into fields in another (both linear).  Anything
#: else (a head still arriving, bare LF endings, a malformed line) goes line by line.
_HEAD_BLOCK = re.compile(rb"(?:" + _TOKEN + rb":[^\r\n]*\r\n)*\r\n")
_FIELDS = re.compile("(" + _TOKEN.decode() + r"):([^\r\n]*)\r\n")
_TRIM = " \t"
#: The longest header line, and the most header lines, a request may have (431 past either).
MAX_HEADER_LINE = 64 * 1024
MAX_HEADERS = 100
#: An HTTP version this server does not speak, later than 1.1 (505; any other version: 400).
_LATER_VERSION = re.compile(r"[2-9]\.[0-9]")


class Headers:
    """A request's header fields: in order, looked up without regard to case (RFC 9110 §5.1)."""

    def __init__(self, fields: Iterable[tuple[str, str]] = ()):
        self._fields: list[tuple[str, str]] = list(fields)
        # each name lower-cased, once, with its first value: a lookup is one dict lookup (a
        # name's other values are looked for in the fields only when some name is repeated)
        self._first = {name.lower(): value for name, value in reversed(self._fields)}

    def add(self, name: str, value: str) -> None:
        self._fields.append((name, value))
        self._first.setdefault(name.lower(), value)

    def get(self, name: str, default=None):
        """The first field called ``name`` (any case), or ``default``."""
        return self._first.get(name.lower(), default)

    def get_all(self, name: str) -> list[str]:
        """Every value of the fields called ``name``."""
        lowered = name.lower()
        if len(self._first) == len(self._fields):  # no name repeated: its one value, if any
            return [self._first[lowered]] if lowered in self._first else []
        return [value for field, value in self._fields if field.lower() == lowered]

    def joined(self, name: str) -> str | None:
        """The values of the fields called ``name`` joined by commas (RFC 9110 §5.3), or None."""
        if len(self._first) == len(self._fields):
            return self._first.get(name.lower())
        values = self.get_all(name)
        return ",".join(values) if values else None

    def __contains__(self, name: str) -> bool:
        return name.lower() in self._first

    def __getitem__(self, name: str):
        return self.get(name)

    def items(self) -> list[tuple[str, str]]:
        return list(self._fields)


@functools.lru_cache(maxsize=512)  # as cgi_name: the names clients send are few
def _environ_key(name: str) -> str | None:
    """The ``HTTP_*`` environ key of a header field called ``name``; None for a field that has
    none: Content-Type and Content-Length (``CONTENT_TYPE``, ``CONTENT_LENGTH``), and a name with
    ``_``: "Mcp_Param_Region" and "Mcp-Param-Region" would both be HTTP_MCP_PARAM_REGION, and a
    field an intermediary does not see as Mcp-Param-Region would be taken for one (2026-07-28
    streamable-http §Server Behavior for Custom Headers: a header the client omits MUST be
    rejected).  Dropped, as gunicorn, Werkzeug, nginx do."""
    if "_" in name:
        return None
    key = cgi_name(name)
    return None if key in ("HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH") else key


class WsgiRequestHandler(BaseHTTPRequestHandler):
    """Runs the server's WSGI application for every request method."""

    protocol_version = "HTTP/1.1"
    server_version = "mcp_ref"
    wbufsize = 64 * 1024  # buffered: a response's head and body go out in one send
    server: WsgiServer
    rfile: io.BufferedReader  # set in setup()
    raw_requestline: bytes  # set by the base class's handle_one_request()
    # Parsed here (parse_request), not by the e-mail parser: get, get_all and items, as the base class uses them.
    headers: Headers  # type: ignore[assignment]  # not an email.message.Message, a duck-typed stand-in for one
    first_request = True
    streaming = False  # the running response registered as a long-lived stream

    def setup(self) -> None:
        """The socket's reads and writes go through :class:`DeadlineSocketIO`, under the server's watchdog."""
        self.connection = self.request
        limits = self.server.limits
        self.socket_io = DeadlineSocketIO(self.connection, limits.write_timeout)
        self.socket_io.expect(limits.header_timeout)  # the first head: counted from the accept
        self.server.watchdog.watch(self.socket_io)
        self.rfile = io.BufferedReader(self.socket_io, 64 * 1024)
        self.wfile = io.BufferedWriter(self.socket_io, self.wbufsize)

    def _long_lived(self, client: str, end: Callable[[], None]) -> None:
        """``environ["mcp_ref.long_lived"]``: see the module."""
        self.streaming = True
        self.server.connections.stream(self.connection, client, end)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.watchdog.forget(self.socket_io)

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

    def do_GET(self) -> None:  # the http.server naming
        self._run()

    do_POST = do_DELETE = do_PUT = do_PATCH = do_OPTIONS = do_HEAD = do_GET

    def log_message(self, format: str, *args) -> None:  # the base class's name
        log.debug("%s %s", self.address_string(), format % args)

    def _environ(self, body: _Body) -> dict:
        path, _, query = self.path.partition("?")
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
            "mcp_ref.on_disconnect": self.socket_io.on_gone,
            "mcp_ref.long_lived": self._long_lived,
            "mcp_ref.slots": self.server.connections.cap,
            "mcp_ref.headers": self.headers,
        }
        for name, value in self.headers.items():
            key = _environ_key(name)
            if key is not None:
                environ[key] = f"{environ[key]},{value}" if key in environ else value
        return environ

    def parse_request(self) -> bool:
        """The request line and the header fields (RFC 9112 §3, §5), parsed here.

        The standard library parses headers with its e-mail parser, which is the costliest part
        of a small request and lenient where HTTP asks for strictness.  Here, in one pass:
        a request line of three words, ``HTTP/1.0`` or ``HTTP/1.1`` (505 for later versions);
        at most :data:`MAX_HEADERS` fields of at most :data:`MAX_HEADER_LINE` bytes (431); 400
        for a field name that is not a token or is followed by whitespace ("No whitespace is
        allowed between the field name and colon", §5.1), for obsolete line folding (§5.2: a
        server "MUST either reject" it), for a bare CR (§2.2: two readers of the same bytes
        could disagree on the fields: request smuggling), for an HTTP/1.1 request without a
        ``Host`` field and any request with more than one (§3.2), and for Content-Length fields that
        disagree (§6.3).  Then ``Connection`` (keep-alive) and ``Expect: 100-continue``.
        """
        self.command = None  # type: ignore[assignment]  # as the base class's parse_request does: no request line yet
        self.request_version = "HTTP/1.0"  # what an error answer speaks until the line is read
        self.close_connection = True
        self.requestline = requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        words = requestline.split(" ")
        if len(words) != 3 or not all(words) or not words[2].startswith("HTTP/"):
            self.send_error(400, f"Bad request line {requestline[:100]!r}")
            return False
        command, path, version = words
        number = version[5:]
        if number not in ("1.0", "1.1"):
            if _LATER_VERSION.fullmatch(number):
                self.send_error(505, f"HTTP version not supported ({version})")
            else:
                self.send_error(400, f"Bad request version {version[:20]!r}")
            return False
        if path.startswith("//"):
            path = "/" + path.lstrip("/")  # not a network-path reference to some other host
        self.command, self.path, self.request_version = command, path, version
        headers = self._buffered_head()
        if headers is None:
            headers = self._head_by_lines()
            if headers is None:
                return False
        self.headers = headers
        hosts = len(headers.get_all("Host"))
        if hosts > 1 or (hosts == 0 and version == "HTTP/1.1"):
            # RFC 9112 §3.2: a server "MUST respond with a 400 (Bad Request) status code to any
            # HTTP/1.1 request message that lacks a Host header field and to any request message
            # that contains more than one Host header field line".
            self.send_error(400, "A request needs one Host field (HTTP/1.1), never two")
            return False
        if len(set(headers.get_all("Content-Length"))) > 1:
            self.send_error(400, "Conflicting Content-Length fields")
            return False
        options = {token.strip().lower() for token in headers.get("Connection", "").split(",")}
        self.close_connection = "close" in options or (
            version == "HTTP/1.0" and "keep-alive" not in options
        )
        if headers.get("Expect", "").lower() == "100-continue" and version == "HTTP/1.1":
            if not self.handle_expect_100():
                return False
        if not self.server.connections.working(self.connection):
            self.close_connection = True  # closed to make room while its head arrived
            return False
        return True

    def _buffered_head(self) -> Headers | None:
        """The header fields, when the whole head is already in the read buffer as it usually is
        (one pass over it; see ``_HEAD_BLOCK``); None to read it line by line instead."""
        buffered = self.rfile.peek(1)
        block = _HEAD_BLOCK.match(buffered)
        if block is None:
            return None
        fields = _FIELDS.findall(block.group().decode("iso-8859-1"))
        if len(fields) > MAX_HEADERS:
            return None  # refused, by the line reader
        self.rfile.read(block.end())
        return Headers([(name, value.strip(_TRIM)) for name, value in fields])

    def _head_by_lines(self) -> Headers | None:
        """The header fields, read one line at a time; None once an error is answered."""
        headers = Headers()
        for count in range(MAX_HEADERS + 2):
            line = self.rfile.readline(MAX_HEADER_LINE + 1)
            if len(line) > MAX_HEADER_LINE:
                self.send_error(431, "Request header field too long")
                # answered: the caller's "headers is None" ends the request, no traceback
                return None
            if line in (b"\r\n", b"\n", b""):
                break
            if count >= MAX_HEADERS:
                self.send_error(431, "Too many request header fields")
                return None
            field = _FIELD_LINE.fullmatch(line)
            if field is None:
                if line[:1] in (b" ", b"\t"):
                    why = "obsolete line folding"
                elif b"\r" in line.rstrip(b"\r\n") or line.endswith(b"\r"):
                    why = "a bare CR"
                else:
                    why = "not a field name, a colon and a value"
                self.send_error(400, f"Bad header line: {why}")
                return None
            name, value = field.groups()
            headers.add(name.decode("ascii"), value.decode("iso-8859-1").strip(_TRIM))
        return headers

    def handle_expect_100(self) -> bool:
        """RFC 9110 §10.1.1: answer ``Expect: 100-continue`` with an interim 100 now, before the
        client sends its body (the writer is buffered: flushed here)."""
        ok = super().handle_expect_100()
        self.wfile.flush()
        return ok

    def _run(self) -> None:
        text = self.headers.get("Content-Length") or "0"
        if not (text.isascii() and text.isdigit()):  # RFC 9110 §8.6: 1*DIGIT, nothing else
            self._close_lingering()  # a body of unknown length may follow
            self.send_error(400, "Bad Content-Length")
            return
        length = int(text)
        if "Transfer-Encoding" in self.headers:
            # MCP clients send Content-Length; a body framed any other way is refused, never guessed
            # at (RFC 9112 §6.3: with both, Transfer-Encoding would win: a smuggling vector).
            self._close_lingering()
            self.send_error(411, "Length Required")
            return
        socket_io = self.socket_io
        socket_io.expect(self.server.limits.body_timeout if length > 0 else None)
        socket_io.begin()  # from here until it ends, a client that closes is noticed (Watchdog)
        try:
            self._respond(_Body(self.rfile, length, socket_io))
        finally:
            socket_io.end()
            if self.streaming:
                self.streaming = False
                self.server.connections.unstream(self.connection)
            if socket_io.gone:
                self.close_connection = True

    def _close_lingering(self) -> None:
        """Close the connection after this answer, with (some of) the request's body unread:
        lingering (``Lingerer.linger``, see ``WsgiServer.shutdown_request``), so that a client
        still sending it reads the answer rather than a reset."""
        self.close_connection = True
        _handler.linger = True

    def _respond(self, body: _Body) -> None:
        # RFC 9110 §9.3.2: the server "MUST NOT send content in the response" to HEAD: its head
        # (with the Content-Length a GET would have) and nothing after it, lest a kept-alive
        # connection's next response be read from the body's bytes.
        head_only = self.command == "HEAD"
        state: dict = {"sent": False, "chunked": False, "body": body, "head_only": head_only}

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
                    if state["head_only"] and state["sent"]:
                        break  # the head is out; a stream's events are never waited for
                if not state["sent"]:
                    self._send_head(state)
                if state["chunked"] and not state["head_only"]:
                    self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        if body.left:  # still unread (the application read less after its answer began)
            self._close_lingering()

    def _send_head(self, state: dict, length: int | None = None) -> None:
        """The status line and headers; ``length``: the body's, sent as its Content-Length unless
        the application gave one (neither: the body is chunked; a status with no content: none)."""
        self.socket_io.expect(None)  # answering: a long response (an SSE stream) is not a slow body
        body: _Body = state["body"]
        if body.left:  # answered without reading it all (see DRAIN_LIMIT): never waited for
            if body.left <= DRAIN_LIMIT:
                body.drop_arrived()
            if body.left:
                self._close_lingering()
        headers = state["headers"]
        status = state["status"]
        no_content = status[:1] == "1" or status[:3] in ("204", "304")
        if no_content:
            # RFC 9112 §6.3: a 1xx, 204 or 304 response ends with its head: no content, no
            # framing.  RFC 9112 §6.1 and RFC 9110 §8.6: a server "MUST NOT send" Transfer-Encoding
            # or Content-Length in a 1xx or 204 (a 304's, the application's, is a GET's length).
            state["head_only"] = True
            dropped = (
                ("transfer-encoding",)
                if status[:3] == "304"
                else ("transfer-encoding", "content-length")
            )
            headers = [(name, value) for name, value in headers if name.lower() not in dropped]
        head = [f"{self.protocol_version} {status}\r\n"]
        sized = no_content
        announced = False
        for name, value in headers:
            head.append(f"{name}: {value}\r\n")
            lowered = name.lower()
            if lowered == "content-length":
                sized = True
            elif lowered == "connection" and value.lower() == "close":
                self.close_connection = announced = True
        if not sized and length is not None:
            head.append(f"Content-Length: {length}\r\n")
            sized = True
        if self.close_connection and not announced:
            # RFC 9112 §9.6: a server closing after this response says so: it SHOULD when the
            # client sent "close", and a server that sends "close" MUST then close.
            head.append("Connection: close\r\n")
        if not sized:
            state["chunked"] = True
            head.append("Transfer-Encoding: chunked\r\n")
        head.append("\r\n")
        self.wfile.write("".join(head).encode("latin-1"))
        state["sent"] = True

    def _send_sized(self, state: dict, chunks: list) -> None:
        """A complete body: headers and body leave in one flush."""
        self._send_head(state, sum(len(c) for c in chunks))
        if not state["head_only"]:
            for chunk in chunks:
                self.wfile.write(chunk)
        self.wfile.flush()

    def _write(self, state: dict, data: bytes) -> None:
        """Send part of a body of unknown length (the WSGI ``write`` callable, and streamed iterables)."""
        if not state["sent"]:
            self._send_head(state)
        if state["head_only"]:
            self.wfile.flush()  # the head alone (RFC 9110 §9.3.2)
            return
        if not data:
            return
        if state["chunked"]:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        else:
            self.wfile.write(data)
        self.wfile.flush()


#: The connection a handler thread serves (its own to close; see ``WsgiServer.shutdown_request``);
#: ``linger``: True to close it lingering (its last request's body left unread); ``released``:
#: its slot already given back (before the lingering close).
_handler = threading.local()


class WsgiServer(ThreadingHTTPServer):
    """A threading HTTP/1.1 server for one WSGI application, within :class:`ConnectionLimits`."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128
    accept_backoff = 0.0

    def __init__(
        self,
        address: tuple[str, int],
        app: Callable,
        handler=WsgiRequestHandler,
        limits: ConnectionLimits | None = None,
    ):
        self.app = app
        self.limits = limits or ConnectionLimits()
        self.connections = ConnectionTable(
            fitted_cap(self.limits.max_connections), self.limits.evict_streams
        )
        self.watchdog = Watchdog(self.limits.tick, self.limits.peer_check_interval)
        self.lingerer = Lingerer()
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
                    "cannot accept a connection (%s); pausing %.2f s",
                    os.strerror(exc.errno),
                    self.accept_backoff,
                )
                time.sleep(self.accept_backoff)
            raise
        self.accept_backoff = 0.0
        # No Nagle: a response must not wait for the peer's delayed ACK.
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection, address

    def process_request(self, request, client_address) -> None:
        """Serve the connection on a thread of its own, or refuse it with 503 when at the cap."""
        if not self.connections.admit(request):
            log.warning(
                "connection cap (%d) reached with every connection at work: refused %s",
                self.connections.cap,
                client_address[0],
            )
            self.lingerer.refuse(request)
            return
        try:
            super().process_request(request, client_address)
        except RuntimeError:  # no thread could be started
            self.connections.release(request)
            log.warning("cannot start a thread for a connection: refused %s", client_address[0])
            self.lingerer.refuse(request)

    def process_request_thread(self, request, client_address) -> None:
        _handler.request = request
        _handler.linger = _handler.released = False
        try:
            super().process_request_thread(request, client_address)  # closes the socket at the end
        finally:
            _handler.request = None
            if not _handler.released:
                self.connections.release(request)

    def shutdown_request(self, request) -> None:
        """Close a connection's socket, from its own thread only.

        socketserver also calls this from the accept loop when ``process_request`` is
        interrupted (Ctrl-C while a thread starts): that thread may already be running with
        the socket, and closing it there would pull the descriptor from under a write (EBADF).
        Shut down instead, the handler's reads and writes end as a lost client's do, and the
        socket is closed by its own thread (or, if the thread never ran, when it is collected).
        A connection whose last request's body was left unread is handed to the lingering close
        (``Lingerer.linger``): its answer is read, not reset, and its slot is free at once.
        """
        running: Any = getattr(_handler, "request", None)  # this thread's socket, if it runs one
        if running is request:
            if _handler.linger:  # a request's body left unread: closed in stages, off this thread
                # its slot free first: once the client sees the close, a new connection has room
                self.connections.release(request)
                _handler.released = True
                self.lingerer.linger(request)
                return
            super().shutdown_request(request)
            return
        shut_down(request)

    def server_close(self) -> None:
        super().server_close()
        self.watchdog.stop()
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
        host = cast(str, self.server_address[0])  # an IP address or host name, never bytes
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"
