"""The thin path of the HTTP client: a plain POST sent over ``http.client``, on the caller's thread.

``requests`` costs most of the client's time per call (preparing, merging settings, hooks,
cookies, redirects: ~500 µs of ~890).  When none of that can matter, a request is sent here
instead, over a keep-alive connection of this origin's own small pool (:class:`FastLane`):

* **when**: a request other than ``initialize`` / ``server/discover``, once the transport speaks
  Streamable HTTP, to an ``http://`` URL that reaches the server directly (no proxy applies:
  the environment is read once, :func:`~mcp_ref.transports.http_plumbing.resolve_environment`),
  while the ``requests.Session`` has no ``auth`` (nor credentials in the URL, nor a ``~/.netrc``
  entry), ``trust_env`` off, no cookies, no ``params``, no hook but the transport's own, the
  proxies it had, and the transport's own adapter (:meth:`FastLane.usable`, checked for every
  request), and the transport's ``url`` is still the one the lane was made for.  Otherwise the
  request goes the ``requests`` way, on a worker, exactly as before;
* **https://**: the same, over ``http.client.HTTPSConnection`` with one :class:`ssl.SSLContext` per
  lane (:func:`tls_context`) that is what urllib3 builds for requests' settings: urllib3's own
  ``create_urllib3_context`` (TLS 1.2 at least, its options), ``verify`` True -> certificates and
  host name checked against requests' CA bundle (``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE`` as
  resolved when the transport was made, else ``requests.utils.DEFAULT_CA_BUNDLE_PATH``), a path ->
  that CA file or directory, False -> nothing checked and urllib3's ``InsecureRequestWarning`` for
  every request, as urllib3 warns; ``cert`` -> the client certificate (and key); ALPN
  ``http/1.1``; SNI and the name checked: the URL's host.  A setting requests would refuse (a CA
  path or certificate file that does not exist) leaves it all to requests, which reports it as
  before; ``verify`` or ``cert`` changed on the session afterwards sends requests the ``requests``
  way.  The context is built once: a CA file changed on disk later counts for new connections of
  requests' way only.  An SSL socket cannot be peeked: the caller reads (without blocking) at most
  :data:`PEEK_SIZE` decrypted bytes into the connection's buffer (:class:`TlsExchange`), which the
  answer's reader takes first;
* **what is sent**: what ``requests`` would send: the session's headers merged with the
  request's (case-insensitively, the request's winning, ``None`` dropping one), the body, its
  ``Content-Length``;
* **where**: on the caller's thread (the session's ``write``).  If the answer has not begun
  within :data:`FAST_WAIT`, or is not whole as ``http.client`` will read it (RFC 9112 §6.3,
  :func:`~mcp_ref.transports.http_framing.complete`), a worker takes the wait over, so the
  session's timeout and cancellation govern a slow request from there on as before (a request's
  timeout shorter than that is kept to within it); the caller's thread never waits on the
  server past :data:`WHOLE_WAIT`, and each read of a worker waits at most until the request's
  timeout (:func:`~mcp_ref.transports.http_plumbing.read_bound`); interim 1xx answers are
  skipped (:class:`~mcp_ref.transports.http_framing.FinalResponse`);
* **the answer**: a ``200`` with ``Content-Type: application/json``, no ``Content-Encoding`` and
  no ``Set-Cookie`` is read here, bounded by ``max_message_size`` (the Content-Length first,
  then piece by piece: :func:`read_bounded`), and queued for the session.  Anything else — an
  SSE stream, an HTTP error (401/403 challenges, a 404 for a lost session), a redirect, a
  compressed body, a cookie — is handed, not sent again, to the ``requests`` handling on a
  worker: the response becomes a ``requests.Response`` (requests' adapter builds it), goes
  through the session's hooks (:meth:`~mcp_ref.transports.http_client.HttpClientTransport._refuse_redirect_elsewhere`),
  its cookies into the jar, and a redirect is followed as ``requests`` follows it
  (``resolve_redirects``): the same rules as a request sent that way;
* **bounds**: each request in flight holds one connection; idle ones are kept up to
  ``max_idle`` (the transport's workers + 2, as requests' pool), one more is closed; an idle
  connection the server has closed is dropped before use (as urllib3 does).  ``close`` closes
  the idle ones and shuts down those in flight.  A send that fails is never retried: a POST is
  sent once.
"""

from __future__ import annotations

import http.client
import io
import logging
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..core.jsonrpc import Request
from ..core.transport import RequestFailed
from .http_framing import FinalResponse, FramingConnection, complete
from .http_plumbing import READ_SIZE, no_answer, read_bound, unanswered, unreachable

log = logging.getLogger(__name__)

#: Seconds the caller's thread waits for an answer to begin before a worker takes the wait over.
FAST_WAIT = 0.05
#: Seconds the caller's thread may wait on any one read of an answer it found whole (none should
#: wait at all: :func:`~mcp_ref.transports.http_framing.complete`); past it the request fails.
WHOLE_WAIT = 1.0
#: The requests that always go the ``requests`` way (their answers set up the connection).
SLOW_METHODS = frozenset({"initialize", "server/discover"})
#: Bytes of a waiting answer :meth:`Exchange.whole` looks at: a larger answer is read by a worker.
PEEK_SIZE = 65536


def merge_headers(session_headers, headers: dict) -> dict:
    """``requests``' merge of the session's headers and a request's: case-insensitive, the request's
    value (and spelling) winning, a ``None`` value removing the header."""
    merged = {name.lower(): (name, value) for name, value in session_headers.items()}
    for name, value in headers.items():
        merged[name.lower()] = (name, value)
    return {name: value for name, value in merged.values() if value is not None}


def open_lane(http, url: str, *, connect_timeout: float, max_idle: int) -> FastLane | None:
    """The :class:`FastLane` of ``url`` for the ``requests.Session`` ``http`` (its environment already
    resolved), or None where requests must do it all: not ``http://`` nor ``https://``, a proxy
    applies, credentials in the URL, another adapter than requests' own, or TLS settings requests
    would refuse."""
    from urllib.parse import urlsplit

    import requests

    from .http_framing import is_framing_adapter

    prepared = requests.models.PreparedRequest()
    prepared.prepare_url(url, None)  # requests' own reading of the URL (IDNA, quoting)
    full = str(prepared.url)
    parts = urlsplit(full)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.username or parts.password:
        return None
    if requests.utils.select_proxy(full, http.proxies) is not None:
        return None  # the proxy's way (absolute-form targets, CONNECT, its credentials) is requests'
    context = None
    if parts.scheme == "https":
        adapter = http.get_adapter(url)
        if type(adapter) is not requests.adapters.HTTPAdapter and not is_framing_adapter(adapter):
            return None  # an adapter of its own may bring TLS settings of its own
        try:
            context = tls_context(http.verify, http.cert)
        except (OSError, ValueError):  # a missing CA bundle or certificate: requests' way says so, as before
            return None
    return FastLane(http, url, parts.hostname, parts.port or (443 if context else 80), prepared.path_url,
                    connect_timeout=connect_timeout, max_idle=max_idle, context=context)


def tls_context(verify, cert) -> ssl.SSLContext:
    """The context urllib3 makes for a connection of requests' ``HTTPAdapter`` with these settings
    (``requests.Session.verify`` and ``.cert``; see ``HTTPAdapter.cert_verify`` and urllib3's
    ``ssl_wrap_socket``): urllib3's own defaults (TLS 1.2 at least, no compression, no tickets),
    certificates required and host names checked unless ``verify`` is False, trusting requests'
    CA bundle (``verify`` True) or the file or directory ``verify`` names, the client certificate
    ``cert`` (a path, or a (certificate, key) pair) presented, ALPN ``http/1.1``.  Raises OSError
    where requests would refuse to send (a path that does not exist)."""
    import os

    import requests
    from urllib3.util import ssl_ as urllib3_ssl

    required = bool(verify)  # requests' own test (HTTPAdapter.cert_verify): any false value checks nothing
    context = urllib3_ssl.create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED if required else ssl.CERT_NONE)
    if context.minimum_version in (ssl.TLSVersion.MINIMUM_SUPPORTED, ssl.TLSVersion.SSLv3, ssl.TLSVersion.TLSv1,
                                   ssl.TLSVersion.TLSv1_1):
        context.minimum_version = ssl.TLSVersion.TLSv1_2  # urllib3 2's floor (an older urllib3 may leave it lower)
    if required:
        location = requests.utils.DEFAULT_CA_BUNDLE_PATH if verify is True else verify
        if not location or not os.path.exists(location):
            raise OSError(f"no TLS CA certificate bundle at {location!r}")
        if os.path.isdir(location):
            context.load_verify_locations(capath=location)
        else:
            context.load_verify_locations(cafile=location)
    else:
        context.load_default_certs()  # as urllib3 does with none given (nothing is checked anyway)
    if cert:
        certificate, key = (cert, None) if isinstance(cert, str) else (cert[0], cert[1])
        for path in (certificate, key):
            if path and not os.path.exists(path):
                raise OSError(f"no TLS certificate or key file at {path!r}")
        context.load_cert_chain(certificate, key)
    context.set_alpn_protocols(list(urllib3_ssl.ALPN_PROTOCOLS))
    return context


class FastLane:
    """Keep-alive connections to one origin, for the POSTs the thin path sends (see the module)."""

    def __init__(self, http, url: str, host: str, port: int, target: str, *, connect_timeout: float, max_idle: int,
                 context: ssl.SSLContext | None = None):
        self.url = url
        #: The TLS context of an ``https://`` lane (:func:`tls_context`), None for ``http://``.
        self.context = context
        #: The session's TLS settings the context was made from: if they change, requests' way.
        self.verify, self.cert = http.verify, http.cert
        self.insecure: type[Warning] | None = None
        if context is not None and context.verify_mode == ssl.CERT_NONE:
            from urllib3.exceptions import InsecureRequestWarning

            self.insecure = InsecureRequestWarning
        self.host, self.port, self.target = host, port, target
        self.connect_timeout = connect_timeout
        self.max_idle = max_idle
        # What the session looked like when the lane was made: any change sends requests requests' way.
        self.hooks = list(http.hooks["response"])
        self.proxies = dict(http.proxies)
        self.adapter = http.get_adapter(url)
        self._idle: list[http.client.HTTPConnection] = []
        self._busy: set[http.client.HTTPConnection] = set()
        self._lock = threading.Lock()
        self._closed = False

    def usable(self, http) -> bool:
        """Whether a request of the ``requests.Session`` ``http`` may take the thin path now: the
        session as it was, and fewer than ``max_idle`` of the lane's connections in flight (past
        that, requests go the ``requests`` way, bounded by the transport's workers: a caller that
        starts many slow requests cannot open sockets without end)."""
        return (len(self._busy) < self.max_idle and http.auth is None and not http.trust_env and not http.cookies and not http.params
                and http.hooks["response"] == self.hooks and http.proxies == self.proxies
                and http.get_adapter(self.url) is self.adapter
                and (self.context is None or (http.verify == self.verify and http.cert == self.cert)))

    def send(self, data: bytes, headers: dict, timeout: float | None = None) -> Exchange:
        """POST ``data`` with ``headers`` (already merged) over an idle connection or a new one;
        each read (and write) of the exchange then waits at most ``timeout`` seconds (or None)."""
        if self.insecure is not None:  # urllib3 warns for every request it sends unverified
            import warnings

            warnings.warn(f"an HTTPS request to {self.host} without checking its certificate (verify=False)",
                          self.insecure, stacklevel=4)
        connection = self._take()
        try:
            connection.sock.settimeout(timeout)
            connection.request("POST", self.target, body=data, headers=headers)
        except BaseException:
            self.release(connection, reuse=False)
            raise
        kind = TlsExchange if self.context is not None else Exchange
        exchange = kind(self, connection)
        exchange.timeout = timeout
        return exchange

    def _take(self) -> http.client.HTTPConnection:
        while True:
            with self._lock:
                if self._closed:
                    raise ConnectionError("the HTTP transport is closed")
                connection = self._idle.pop() if self._idle else None
                if connection is None:
                    break
                self._busy.add(connection)
            sock = connection.sock
            if sock is not None and not readable(sock, 0) and not (self.context is not None and sock.pending()):
                return connection
            self.release(connection, reuse=False)  # the server closed it while idle (or said something unasked)
        connection = (TlsConnection(self.host, self.port, timeout=self.connect_timeout, context=self.context)
                      if self.context is not None else
                      FramingConnection(self.host, self.port, timeout=self.connect_timeout))
        with self._lock:
            if self._closed:  # closed meanwhile: nothing is sent after close
                raise ConnectionError("the HTTP transport is closed")
            self._busy.add(connection)
        try:
            connection.connect()  # the TLS handshake within connect_timeout too, as urllib3's
            connection.sock.settimeout(None)  # as requests' timeout=(connect_timeout, None): no read timeout
        except BaseException:
            self.release(connection, reuse=False)
            raise
        return connection

    def release(self, connection: http.client.HTTPConnection, *, reuse: bool) -> None:
        """Take ``connection`` back: kept idle when ``reuse`` and there is room, else closed."""
        with self._lock:
            self._busy.discard(connection)
            keep = reuse and not self._closed and len(self._idle) < self.max_idle and connection.sock is not None
            if keep:
                self._idle.append(connection)
        if not keep:
            connection.close()

    def forget(self, connection: http.client.HTTPConnection) -> None:
        """``connection`` now belongs to a response handed to ``requests``: it is never reused."""
        with self._lock:
            self._busy.discard(connection)

    def close(self) -> None:
        """Close the idle connections and shut down those in flight (their exchanges then fail), closing
        them too: an exchange a worker would have finished may never run once the transport is closed."""
        with self._lock:
            self._closed = True
            idle, busy = self._idle, list(self._busy)
            self._idle, self._busy = [], set()
        for connection in idle:
            connection.close()
        for connection in busy:
            shut(connection.sock)
            connection.close()


def readable(sock: socket.socket, seconds: float) -> bool:
    """Whether ``sock`` has something to read (or was closed) within ``seconds``."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(seconds * 1000))


def shut(sock: socket.socket | None) -> None:
    """Shut ``sock`` down, waking any thread blocked on it."""
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class Held:
    """The socket under a response handed to ``requests`` (urllib3 closes it; :func:`~mcp_ref.transports.http_plumbing.abort` shuts it down)."""

    __slots__ = ("sock",)

    def __init__(self, sock: socket.socket):
        self.sock = sock

    def close(self) -> None:
        """Close the socket (its file descriptor goes once the response's reader lets go too)."""
        self.sock.close()


class Exchange:
    """One POST sent by a :class:`FastLane`, its answer to come."""

    __slots__ = ("lane", "connection", "sock", "response", "over", "timeout")

    def __init__(self, lane: FastLane, connection: http.client.HTTPConnection):
        self.lane = lane
        self.connection = connection
        self.sock: socket.socket = connection.sock
        self.response: http.client.HTTPResponse | None = None
        self.over = False
        #: The bound (seconds) on each read of the answer by a worker (the request's timeout).
        self.timeout: float | None = None

    def begun(self, seconds: float) -> bool:
        """Whether the answer began (or the connection ended) within ``seconds``."""
        return readable(self.sock, seconds)

    def whole(self) -> bool:
        """Whether the whole answer (status line, headers, and a body of known length or a finished
        chunked one) already waits in the socket, so the caller's thread reads it without waiting
        (:data:`PEEK_SIZE` bytes at most are looked at, none taken).  Anything else is read by a
        worker, where the request's timeout and cancellation apply: a server that sends its headers
        and then stalls can never hold the caller inside ``send_request``."""
        try:
            data = self.sock.recv(PEEK_SIZE, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except OSError:
            return False
        return complete(data)

    def answer(self) -> http.client.HTTPResponse:
        """The status line and headers of the answer (waiting for them; over TLS, what :class:`TlsExchange` read ahead first)."""
        self.response = self.connection.getresponse()
        return self.response

    def plain(self) -> bool:
        """Whether the answer is one the thin path reads itself: a 200 JSON body, not compressed, no cookie."""
        response = self.response
        if response is None or response.status != 200 or response.getheader("Set-Cookie") is not None:
            return False
        kind = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
        coding = (response.getheader("Content-Encoding") or "identity").strip().lower()
        return kind == "application/json" and coding == "identity"

    def abort_now(self) -> None:
        """Shut the connection down under a thread waiting for the answer (the request is abandoned);
        nothing once the exchange is over (its connection may carry another request by then)."""
        if not self.over:
            shut(self.sock)

    def done(self, *, reuse: bool) -> None:
        """The exchange is over: its connection goes back to the lane (kept when ``reuse``); once only."""
        if self.over:
            return
        self.over = True
        self.lane.release(self.connection, reuse=reuse and self.response is not None and not self.response.will_close)

    def raw(self):
        """The answer as urllib3's response (what requests' adapter wraps); the connection is handed over with it."""
        from urllib3.response import HTTPResponse

        try:
            from urllib3 import HTTPHeaderDict
        except ImportError:  # urllib3 1.x (requests accepts it) keeps it here only
            from urllib3._collections import HTTPHeaderDict  # type: ignore[attr-defined,no-redef]

        response = self.response
        assert response is not None
        self.over = True  # the connection is the response's now
        self.lane.forget(self.connection)
        if self.connection.sock is not None:  # the response's reader keeps the descriptor until it closes
            self.connection.sock = None
            self.sock.close()
        return HTTPResponse(body=response, headers=HTTPHeaderDict(response.msg.items()), status=response.status,
                            version=response.version, reason=response.reason, preload_content=False,
                            decode_content=False, original_response=response, connection=Held(self.sock),  # type: ignore[arg-type]
                            enforce_content_length=True, request_method="POST", request_url=self.lane.url)


class TlsConnection(http.client.HTTPSConnection):
    """An ``http.client`` TLS connection whose next answer is read from ``early`` (what
    :meth:`TlsExchange.whole` took from the socket ahead) before the socket."""

    early = b""

    def response_class(self, sock, *args, **options) -> http.client.HTTPResponse:  # type: ignore[override]
        """The answer's reader (http.client makes it with ``self.response_class(sock, ...)``)."""
        early, self.early = self.early, b""
        response = FinalResponse(sock, *args, **options)
        if early:
            response.fp = io.BufferedReader(ReadAhead(early, response.fp.detach()))
        return response


class ReadAhead(io.RawIOBase):
    """Bytes already taken from a socket, then the socket's own reader (closed with this one)."""

    def __init__(self, early: bytes, raw):
        self.early = memoryview(early)
        self.raw = raw

    def readable(self) -> bool:
        """Always: a reader."""
        return True

    def readinto(self, buffer) -> int:
        """The read-ahead bytes first, then the socket's."""
        if self.early:
            count = min(len(buffer), len(self.early))
            buffer[:count] = self.early[:count]
            self.early = self.early[count:]
            return count
        return self.raw.readinto(buffer)

    def close(self) -> None:
        """Close the socket's reader too (the socket itself closes once no reader holds it)."""
        if not self.closed:
            self.raw.close()
        super().close()


class TlsExchange(Exchange):
    """An :class:`Exchange` over TLS, where the socket cannot be peeked: the caller's thread takes
    the decrypted bytes that are there, without blocking, at most :data:`PEEK_SIZE` of them, into
    the connection's ``early`` buffer (the answer's reader takes them first)."""

    __slots__ = ()

    def begun(self, seconds: float) -> bool:
        """Whether some of the answer (or the connection's end) was decrypted within ``seconds``
        (a TLS 1.3 session ticket alone makes the socket readable: not an answer)."""
        deadline = time.monotonic() + seconds
        while True:
            if self.gather():
                return True
            left = deadline - time.monotonic()
            if left <= 0 or not readable(self.sock, left):
                return False

    def whole(self) -> bool:
        """Whether the whole answer is in the read-ahead buffer (after taking what is there)."""
        self.gather()
        return complete(self.connection.early)  # type: ignore[attr-defined]

    def gather(self) -> bool:
        """Take, without blocking, the decrypted bytes waiting (up to :data:`PEEK_SIZE` in all);
        whether there are any now, or the connection ended."""
        connection: TlsConnection = self.connection  # type: ignore[assignment]
        sock: ssl.SSLSocket = self.sock  # type: ignore[assignment]
        taken = [connection.early]
        size, ended = len(connection.early), False
        sock.setblocking(False)
        try:
            while size < PEEK_SIZE:
                try:
                    data = sock.recv(PEEK_SIZE - size)
                except (ssl.SSLWantReadError, ssl.SSLWantWriteError, BlockingIOError):
                    break
                except OSError:  # broken: the answer's reader finds it so too
                    ended = True
                    break
                if not data:
                    ended = True
                    break
                taken.append(data)
                size += len(data)
        finally:
            if sock.fileno() >= 0:
                sock.settimeout(self.timeout)
        connection.early = b"".join(taken)
        return ended or size > 0


def read_bounded(response: http.client.HTTPResponse, limit: int) -> bytes | None:
    """The whole body of ``response``, or None as soon as it is known to pass ``limit`` bytes (its
    Content-Length first, then as it is read)."""
    length = response.length
    if length is not None:
        return None if length > limit else response.read()
    body = bytearray()
    while True:
        try:
            chunk = response.read(READ_SIZE)  # http.client bounds each chunk-size line (MAX_CHUNK_LINE)
        except http.client.LineTooLong:
            raise http.client.LineTooLong("a chunk-size line") from None  # worded as requests' way words it
        if not chunk:
            return bytes(body)
        body += chunk
        if len(body) > limit:
            return None


class Answered:
    """A request the thin path sent whose answer the ``requests`` handling takes over
    (``_send_request`` / ``_send_modern`` with ``answered=``): the session id and its generation
    when it was sent, and :meth:`response`, the answer as ``requests`` would have returned it."""

    __slots__ = ("exchange", "data", "headers", "generation", "sent_with", "transport")

    def __init__(self, transport, exchange: Exchange, data: bytes, headers: dict, generation: int, sent_with):
        self.transport = transport
        self.exchange = exchange
        self.data = data
        self.headers = headers
        self.generation = generation
        self.sent_with = sent_with

    def response(self):
        """The answer as a ``requests.Response``, after what ``requests.Session.send`` does with one:
        the session's response hooks (a redirect elsewhere is refused there), its cookies kept, a
        redirect followed.  The POST itself is not sent again."""
        import requests
        from requests.cookies import extract_cookies_to_jar
        from requests.hooks import dispatch_hook

        transport, exchange = self.transport, self.exchange
        http = transport.http
        if exchange.response is None:
            exchange.answer()
        raw = exchange.raw()
        prepared = http.prepare_request(requests.Request("POST", transport.url, data=self.data, headers=self.headers))
        response = exchange.lane.adapter.build_response(prepared, raw)
        timeout = (transport.connect_timeout, exchange.timeout)
        options = {"stream": True, "timeout": timeout, "verify": http.verify, "cert": http.cert,
                   "proxies": http.proxies}
        response = dispatch_hook("response", prepared.hooks, response, **options)
        extract_cookies_to_jar(http.cookies, prepared, raw)
        if response.is_redirect:
            history = list(http.resolve_redirects(response, prepared, **options))
            if history:
                history.insert(0, response)
                response = history.pop()
                response.history = history
        return response


class FastPosts:
    """The thin path of :class:`~mcp_ref.transports.http_client.HttpClientTransport` (see the module)."""

    if TYPE_CHECKING:  # the transport's, which this class is a part of
        from .http_plumbing import Inbox

        url: str
        http: Any
        mode: str
        session_id: str | None
        connect_timeout: float
        max_message_size: int
        _lane: FastLane | None
        _generation: int
        _incoming: Inbox
        _pool: Any
        _session_ready: threading.Event
        _closed: threading.Event
        deliver: Callable[[bytes], None] | None
        pending: Callable[[Any], Any] | None

        def _headers(self, accept: str = ...) -> dict: ...
        def _modern_headers(self, request: Request) -> dict: ...
        def _begin(self, request_id) -> None: ...
        def _finish(self, request_id) -> None: ...
        def _track(self, request_id, response) -> bool: ...
        def _abandoned_now(self, request_id) -> bool: ...
        def _fail(self, request_id, message: str, status: int | None = None) -> None: ...
        def _too_large(self, request: Request, what: str) -> RequestFailed: ...
        def _send_request(self, data: bytes, request: Request, renewing: bool = False, answered=None) -> None: ...
        def _send_modern(self, data: bytes, request: Request, answered=None) -> None: ...

    def _thin(self, request: Request) -> bool:
        """Whether ``request`` takes the thin path (see the module docstring)."""
        lane = self._lane
        return (lane is not None and self.mode == "streamable" and request.method not in SLOW_METHODS
                and lane.url == self.url and self._session_ready.is_set() and lane.usable(self.http))

    def _post_thin(self, data: bytes, request: Request, modern: bool) -> None:
        """POST ``request`` on this (the caller's) thread; read a plain answer here if it begins within
        :data:`FAST_WAIT`, else leave the wait to a worker."""
        lane = self._lane
        assert lane is not None
        headers = self._modern_headers(request) if modern else self._headers()
        headers["Content-Type"] = "application/json"
        generation, sent_with = self._generation, self.session_id
        self._begin(request.id)
        try:
            bound = read_bound(self.pending, request.id)
            exchange = lane.send(data, merge_headers(self.http.headers, headers), bound)
        except (OSError, http.client.HTTPException) as exc:
            self._finish(request.id)
            self._incoming.put(RequestFailed(request.id, unreachable(self.url, exc)))
            return
        except Exception as exc:  # a header requests would refuse too (InvalidHeader)
            self._finish(request.id)
            self._fail(request.id, f"HTTP request to {self.url} failed: {exc}")
            return
        answered = Answered(self, exchange, data, headers, generation, sent_with)
        if not self._track(request.id, exchange):  # cancelled meanwhile (from another thread)
            exchange.done(reuse=False)
            self._finish(request.id)
        elif exchange.begun(FAST_WAIT) and exchange.whole():
            exchange.sock.settimeout(WHOLE_WAIT)  # all there: the caller never waits on the server
            self._take_answer(answered, request, modern, inline=True)
        else:
            self._later(self._take_answer, answered, request, modern, False)

    def _later(self, job: Callable, answered: Answered, request: Request, *args) -> None:
        try:
            self._pool.submit(job, answered, request, *args)
        except RuntimeError:  # the transport closed meanwhile: nobody waits for the answer
            answered.exchange.done(reuse=False)
            self._finish(request.id)

    def _take_answer(self, answered: Answered, request: Request, modern: bool, inline: bool) -> None:
        """Read a plain answer and queue it; hand any other to the ``requests`` handling (on a worker)."""
        exchange = answered.exchange
        handed = False
        try:
            exchange.answer()
            if not exchange.plain():
                exchange.sock.settimeout(exchange.timeout)  # read on under the request's own bound
                handed = True
                if inline:
                    self._later(self._handle, answered, request, modern)
                else:
                    self._handle(answered, request, modern)
                return
            try:
                body = read_bounded(exchange.response, self.max_message_size)  # type: ignore[arg-type]
            except (OSError, http.client.HTTPException) as exc:
                exchange.done(reuse=False)
                if isinstance(exc, TimeoutError):  # the body stopped coming (its framing lied)
                    self._incoming.put(RequestFailed(request.id, no_answer(request)))
                elif not self._abandoned_now(request.id):
                    self._fail(request.id, f"HTTP request to {self.url} failed: {exc!r}")
                return
            exchange.done(reuse=body is not None)
            if self._abandoned_now(request.id):  # closed under the reader: what was read is cut
                log.debug("request %r: the rest of its abandoned answer is dropped", request.id)
            elif body is not None and inline and self.deliver is not None:
                try:
                    self.deliver(body)  # the caller's own answer, handled on its thread: no hand-off to the reader
                except Exception:  # as the reader would: never the caller's problem
                    log.exception("a message could not be handled and was dropped")
                if self.pending is not None and self.pending(request.id) is not None:
                    self._incoming.put(unanswered(request))  # refused, or not its answer
            else:
                self._incoming.put(self._too_large(request, "answer") if body is None else body)
                if body is not None:
                    self._incoming.put(unanswered(request))  # nothing once the body answered it
        except Exception as exc:  # no answer came: the connection broke (or the request was abandoned)
            exchange.done(reuse=False)
            if self._abandoned_now(request.id) or self._closed.is_set():
                log.debug("request %r: its abandoned exchange ended (%r)", request.id, exc)
            elif isinstance(exc, TimeoutError):  # the answer stopped coming (its framing lied)
                self._incoming.put(RequestFailed(request.id, no_answer(request)))
            else:
                self._incoming.put(RequestFailed(request.id, unreachable(self.url, exc)))
        finally:
            if not handed:
                self._finish(request.id)

    def _handle(self, answered: Answered, request: Request, modern: bool) -> None:
        if modern:
            self._send_modern(answered.data, request, answered=answered)
        else:
            self._send_request(answered.data, request, answered=answered)
