"""What every HTTP client transport of mcp_ref shares: reading bodies and SSE streams within bounds.

:func:`read_body` takes a whole answer (or gives up past a bound, the connection closed),
:func:`stream_chunks` hands over an SSE body as it arrives (never more than :data:`READ_SIZE` at a
time, each line under it bounded), :class:`Cursor` keeps where an SSE stream stands for resuming
it, :func:`abort` closes a response under a blocked reader, :class:`Underway` is the socket a
request of ours waits on (what giving up on it shuts down), and :class:`Inbox` holds what the
streams bring until the session's reader takes it.  (Why a server was not reached, in words:
:mod:`mcp_ref.http.not_reached`.)
:mod:`mcp_ref.http.client` (and its HTTP+SSE part, :mod:`~mcp_ref.http.legacy_client`) use them.
The OAuth client's fetches use :func:`exchange_within` (an :class:`ExchangeDeadline` over one
whole exchange) and :func:`read_within` (a body within it).
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import threading
import time
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import InvalidRequest, MCPRefError, ParseError, RequestTimeout
from ..jsonrpc import ErrorResponse, RequestId, Response, parse, valid_id
from ..session import OutgoingRequests
from .connection_limits import shut_down
from .not_reached import content_kind, shown
from .sse import SseParser

log = logging.getLogger(__name__)

#: The request a worker thread is sending, ``(transport, request id)`` (so that an auth hook can say
#: it waits for the user: :func:`mcp_ref.http.client.hold_current_request`); read it with
#: :func:`sent_request`.
sending = threading.local()


@contextlib.contextmanager
def carrying(transport: Any, request_id: Hashable) -> Iterator[None]:
    """While the block runs, the HTTP exchanges of this thread carry ``transport``'s request
    ``request_id`` (:data:`sending`; or a notification's own key): the socket of each answer is
    watched for it (:func:`watch`), and the auth hook may hold it (``hold_current_request``)."""
    sending.request = (transport, request_id)
    try:
        yield
    finally:
        sending.request = (None, None)


#: The keys a transport's GET streams are watched under (:func:`watching`; a JSON-RPC id is never a
#: tuple): Streamable HTTP's standalone stream, and the 2024-11-05 HTTP+SSE stream.
LISTEN_STREAM = ("GET",)
LEGACY_STREAM = ("HTTP+SSE GET",)


@contextlib.contextmanager
def watching(transport: Any, key: Hashable) -> Iterator[None]:
    """:func:`carrying` for a thread of ``transport``'s own that reads a GET stream: while the block
    runs, the socket of each of its exchanges is watched under ``key`` (closing the transport shuts
    it down, :meth:`~mcp_ref.http.in_flight.InFlight.close`, even while it still waits for the
    answer's status line and headers, which no read timeout bounds on a stream); ``key`` is
    forgotten at the end."""
    with carrying(transport, key):
        try:
            yield
        finally:
            transport.in_flight.finished(key)


def sent_request() -> tuple[Any, RequestId | None]:
    """``(transport, request id)`` of the request this thread is sending (:data:`sending`);
    ``(None, None)`` on a thread that sends none."""
    return getattr(sending, "request", (None, None))


#: What a transport's own notices are sent as (:func:`carrying`'s key is one of these and the rest):
#: ``("notifications/cancelled", request_id)``, and ``("DELETE",)``, the session's end at close.
OWN_NOTICES = ("notifications/cancelled", "DELETE")


def sending_own_notice() -> bool:
    """True when this thread sends a transport's own notice, no message of the session's: a
    cancellation, or the session's DELETE at close (a JSON-RPC id is never a tuple).  An auth hook
    starts no login for one (a 401 there just ends it): the user is never sent to a browser, nor
    a close kept waiting up to its ``login_timeout``, to cancel a request or end a session."""
    transport, key = sent_request()
    return transport is not None and isinstance(key, tuple) and key[0] in OWN_NOTICES


#: The SSE ``retry`` (milliseconds) until a server sends one.
DEFAULT_RETRY_MS = 1000
#: The default bounds (seconds) on the wait before re-opening a stream, whatever ``retry`` says.
MIN_RETRY_DELAY = 0.1
MAX_RETRY_DELAY = 30.0
#: How much of an HTTP error's body is read for its JSON-RPC error (a longer one is ignored).
MAX_ERROR_BODY = 64 * 1024
#: Bytes asked of the socket at a time while reading a body.
READ_SIZE = 64 * 1024
#: Last-Event-ID values longer than this (or not printable ASCII) are not kept for resuming.
MAX_EVENT_ID = 1024
#: The longest line read under a response body: a chunk-size line with its extensions (as
#: http.client bounds its own lines; urllib3 reads the chunk-size line with no bound at all).
MAX_CHUNK_LINE = 64 * 1024


#: Seconds a read of an answer may wait past the session's deadline for its request: the session's
#: own timeout comes first (it cancels the request and closes the response); the read's bound holds
#: where nobody waits for the answer.
READ_GRACE = 1.0


#: The server's messages an HTTP client holds at once for its session's reader, and their bytes
#: (:class:`Inbox`); past either, the threads reading the server's streams wait.
MAX_INBOX = 1024
MAX_INBOX_BYTES = 16 * 1024 * 1024


class ClientHooks(Protocol):
    """What the HTTP client transport offers beyond the transport contract, as its ``http_hooks``
    (:class:`mcp_ref.session.Transport`): the client role finds them with
    ``getattr(transport, "http_hooks", None)``, None off HTTP, and calls them."""

    def set_reinitialize(self, reinitialize: Callable[[], Callable[[], None]]) -> None:
        """Once, before the handshake: ``reinitialize()`` runs it again (a new session after a 404),
        and returns what to ask of the new session once it is ready (run then, on a thread)."""
        ...

    def initialized(self, protocol_version: str) -> None:
        """Once the handshake has completed: send the version header from now on, open the GET stream."""
        ...

    def stateless(self, input_schema: Callable[[str], dict[str, Any] | None]) -> None:
        """The client speaks 2026-07-28: no session from now on; ``input_schema(tool)`` gives a listed
        tool's ``inputSchema``, from which a ``tools/call`` takes its ``Mcp-Param-*`` headers."""
        ...


@dataclass(slots=True)
class RequestFailed:
    """What a worker puts in the :class:`Inbox` instead of a message: one request of ours failed here.

    The server could not be reached, or refused the request at the HTTP level.  ``error`` is the
    exception the request's caller gets (e.g. :class:`~mcp_ref.errors.ServerUnreachable`, a
    ``ConnectionError``); nothing was received, so nothing is traced as received.  The transport's
    ``read`` hands it to the session (:meth:`~mcp_ref.session.OutgoingRequests.fail_request`)
    in its turn: after the messages put before it (an answer that came first wins).
    """

    request_id: RequestId
    error: Exception


@dataclass(slots=True)
class RequestHeld:
    """What a worker puts in the :class:`Inbox`: one request is held up on this side for up to
    ``seconds`` (the user authorizes in a browser); the transport's ``read`` extends the request's
    timeout by that much (:meth:`~mcp_ref.session.OutgoingRequests.hold_request`).
    """

    request_id: RequestId
    seconds: float


class Inbox:
    """What an HTTP client's streams and workers hand to the session's reader (``Transport.read``), in order.

    Bounded: a thread relaying a server's stream (:meth:`put_streamed`) waits while ``limit``
    messages, or ``limit_bytes`` of them, are waiting, until the reader takes one or the transport
    closes (then the message is dropped); so a server that sends faster than the session handles
    waits on its own connection (TCP backpressure) instead of growing this side.  What this side
    adds itself (:meth:`put`: an answer read by a worker, a failure, the end) never waits: it is
    bounded by our own requests in flight.  The first message is always taken, whatever its size.
    """

    _bytes = 0
    _closed = False

    def __init__(self, limit: int = MAX_INBOX, limit_bytes: int = MAX_INBOX_BYTES):
        self.limit, self.limit_bytes = limit, limit_bytes
        self._items: collections.deque = collections.deque()
        self._changed = threading.Condition(threading.Lock())

    def put(self, item) -> None:
        """Add a message (or a ``RequestFailed``, ``RequestHeld``, None for the end) without waiting."""
        with self._changed:
            self._items.append(item)
            self._bytes += len(item) if isinstance(item, bytes) else 0
            self._changed.notify_all()

    def put_streamed(self, data: bytes) -> bool:
        """Add a message a server's stream brought, waiting for room; False (dropped) once closed."""
        with self._changed:
            while self._items and (
                len(self._items) >= self.limit or self._bytes + len(data) > self.limit_bytes
            ):
                if self._closed:
                    return False
                self._changed.wait()
            if self._closed:
                return False
            self._items.append(data)
            self._bytes += len(data)
            self._changed.notify_all()
            return True

    def get(self):
        """The next item, waiting for one (the transport puts None when it closes)."""
        with self._changed:
            while not self._items:
                self._changed.wait()
            item = self._items.popleft()
            self._bytes -= len(item) if isinstance(item, bytes) else 0
            self._changed.notify_all()
            return item

    def close(self) -> None:
        """No more waiting room: the streams' threads waiting to add a message drop it and go on."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def __len__(self) -> int:
        return len(self._items)


class HttpTransportError(MCPRefError, ConnectionError):
    """The HTTP exchange itself failed (the server is unreachable, or answered with an HTTP error)."""

    #: The HTTP status that ended the exchange, when one did (None: no answer, or not an HTTP error).
    status: int | None = None


def read_bound(requests: OutgoingRequests | None, request_id) -> float | None:
    """The bound (seconds) on each read of the answer to our request ``request_id`` (``requests``:
    the session's, given by :meth:`~mcp_ref.session.Transport.attach`): until the session
    stops waiting for it (its timeout; with ``reset_timeout_on_progress``, its total cap), and
    :data:`READ_GRACE` more; None: no bound."""
    deadline = requests.request_deadline(request_id) if requests is not None else None
    return None if deadline is None else max(deadline - time.monotonic(), 0.0) + READ_GRACE


def no_answer(request) -> RequestTimeout:
    """The failure of ``request`` whose answer stopped coming: a read waited past its bound."""
    why = "the server's answer did not come within the request's timeout"
    return RequestTimeout(f"{request.method}: {why}")


def unanswered(request) -> RequestFailed:
    """What fails ``request`` when the JSON body its POST got (queued just before) did not answer
    it: the session refused the body (not JSON-RPC, nested too deep for its id to be read) or it
    answered no id (one naming another request's is refused before: ``_deliver``).  Once the body has answered it, the session no longer knows the request
    and this does nothing; otherwise the request fails at once instead of waiting its timeout."""
    why = "the server's answer could not be read as the answer to it (see the log)"
    return RequestFailed(request.id, InvalidRequest(f"{request.method}: {why}"))


def timed_out(exc: Exception) -> bool:
    """Whether ``exc`` (from ``requests``, urllib3 or a socket) says a read of an answer waited past
    its bound: requests' ``ReadTimeout``, or the ``ConnectionError`` it makes of urllib3's read
    timeout while a body is read."""
    import requests
    from urllib3.exceptions import ReadTimeoutError

    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return False
    if isinstance(exc, (requests.exceptions.ReadTimeout, ReadTimeoutError, TimeoutError)):
        return True
    return any(isinstance(arg, (ReadTimeoutError, TimeoutError)) for arg in exc.args)


@dataclass(slots=True)
class Cursor:
    """Where an SSE stream stands: the last event id seen, the server's ``retry`` (ms; clamped
    where it is used, :meth:`~mcp_ref.http.client.HttpClientTransport.retry_delay`), and the events seen."""

    last_id: str | None = None
    retry_ms: int = DEFAULT_RETRY_MS
    events: int = 0

    def note(self, parser: SseParser, events: int) -> None:
        """Keep what ``parser`` has read so far (``events``: how many it just dispatched).

        The last event ID goes back to the server in a ``Last-Event-ID`` header: one that could
        not travel there (not printable ASCII, or longer than :data:`MAX_EVENT_ID`) is not kept.
        """
        self.events += events
        last_id = parser.last_id
        if last_id and last_id != self.last_id:
            if len(last_id) <= MAX_EVENT_ID and last_id.isascii() and last_id.isprintable():
                self.last_id = last_id
            else:
                log.debug("an SSE event id that cannot be sent back in Last-Event-ID was ignored")
        if parser.retry is not None:
            self.retry_ms = parser.retry


class EventTooLarge(Exception):
    """An SSE event on a request's stream went past ``max_message_size`` (internal)."""


def stream_chunks(response, size: int = READ_SIZE):
    """The body of a streamed ``requests`` response as it arrives, at most ``size`` bytes at a time.

    ``iter_content(chunk_size=None)`` would hand over a whole HTTP chunk (or, without chunked
    encoding, the whole body) at once, however large; this takes what the socket has, up to
    ``size``, and so never holds more than that of a body nobody asked to keep.  urllib3's
    errors become ``requests``' as they do in ``iter_content``.
    """
    import requests
    from urllib3.exceptions import DecodeError, ProtocolError, ReadTimeoutError, SSLError

    bound_lines(response)
    read1 = getattr(response.raw, "read1", None)
    if read1 is None:  # urllib3 before 2.3: read ``size`` at a time (bounded, maybe later)
        yield from response.iter_content(chunk_size=size)
        return
    try:
        while True:
            # decoded as iter_content decodes (a gzip stream is read; urllib3 2.6+ decompresses
            # at most ``size`` at a time, so a compressed bomb costs no more than plain bytes)
            data = read1(size, decode_content=True)
            if not data:
                return
            yield data
    except ProtocolError as exc:
        raise requests.exceptions.ChunkedEncodingError(exc) from None
    except DecodeError as exc:
        raise requests.exceptions.ContentDecodingError(exc) from None
    except ReadTimeoutError as exc:
        raise requests.exceptions.ConnectionError(exc) from None
    except SSLError as exc:
        raise requests.exceptions.SSLError(exc) from None


class ExchangeDeadline:
    """The deadline over one whole HTTP exchange (:func:`exchange_within`): from before the request
    is sent, over the connection being made (TLS included), the request, the answer's status line,
    its header section and its body.  ``requests``' timeout bounds each read only, and http.client
    takes 100 header lines of 64 KiB: a peer sending a byte within each read timeout would hold the
    exchange for days.  A timer (one thread) shuts the sockets carrying the exchange down when the
    deadline passes, waking the read wherever it waits; :attr:`expired` says so from then on.

    The connections of :func:`~mcp_ref.http.framing.framing_adapter` tell it which sockets carry the
    exchange (:meth:`carries`), and when one goes back to its pool (:meth:`released`): from then on
    the timer never touches it, and one whose socket it shut down is closed instead of pooled (a
    late shutdown never lands on the next request there)."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        #: True once the deadline passed before the exchange ended (its sockets are shut down).
        self.expired = False
        self._carrying: dict[Any, Any] = {}  # connection -> its socket
        self._lock = threading.Lock()  # a shutdown and a release or the end never cross
        self._ended = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        with self._lock:
            if self._ended:
                return
            self.expired = True
            for sock in self._carrying.values():
                shut_down(sock)

    def carries(self, connection: Any, sock: Any) -> None:
        """``connection`` carries the exchange on ``sock`` (just connected, or taken from a pool):
        shut down at the deadline, or at once when it has passed already."""
        sock = shuttable(sock)
        if sock is None:
            return
        with self._lock:
            self._carrying[connection] = sock
            if self.expired:
                shut_down(sock)

    def covers(self, connection: Any) -> bool:
        """Whether ``connection`` carries this exchange (a response's body is read within it)."""
        with self._lock:
            return connection in self._carrying

    def released(self, connection: Any) -> bool:
        """``connection`` goes back to its pool: never touched from now on.  False when the
        deadline shut its socket down: it must be closed, not pooled."""
        with self._lock:
            self._carrying.pop(connection, None)
            return not self.expired

    def passed(self) -> Exception:
        """The error of an exchange past its deadline: ``requests.exceptions.ReadTimeout``."""
        import requests

        return requests.exceptions.ReadTimeout(f"the answer took over {self.seconds:g} s in all")

    def end(self) -> None:
        """The exchange is over: the timer never fires from now on."""
        self._timer.cancel()
        with self._lock:
            self._ended = True
            self._carrying.clear()


#: The :class:`ExchangeDeadline` of the exchange this thread sends (:func:`exchange_within`).
_exchange = threading.local()


def exchange_deadline() -> ExchangeDeadline | None:
    """The deadline of the HTTP exchange this thread sends, None outside :func:`exchange_within`."""
    return getattr(_exchange, "deadline", None)


@contextlib.contextmanager
def exchange_within(seconds: float) -> Iterator[ExchangeDeadline]:
    """The HTTP exchange this thread sends in the block (through a session of
    :func:`~mcp_ref.http.framing.framing_adapter`) ends within ``seconds`` in all, from now:
    connecting, the status line and headers (the adapter raises
    ``requests.exceptions.ReadTimeout`` past it) and the body read in the block
    (:func:`read_within`).  A session of another adapter bounds the body alone, in
    :func:`read_within`; the status line and headers then only each read, by ``requests``."""
    deadline = ExchangeDeadline(seconds)
    outer = exchange_deadline()
    _exchange.deadline = deadline
    try:
        yield deadline
    finally:
        _exchange.deadline = outer
        deadline.end()


def read_within(response, limit: int, seconds: float) -> bytes:
    """At most ``limit`` + 1 bytes of a streamed ``requests`` response's body (more tells the
    caller it is too large: the rest is left unread), read within ``seconds`` in all, however
    slowly the peer sends it; ``requests.exceptions.ReadTimeout`` past that.

    Within :func:`exchange_within`, on a connection that carries its exchange, that deadline is the
    bound (counted from before the request was sent).  Otherwise a deadline over the body alone,
    from now: ``requests``' own timeout bounds each read only, and a body trickled a byte at a time,
    each within it, would take as long as the peer likes.  Either way the socket is shut down at
    the deadline (waking the read, wherever urllib3 or http.client loops inside it: a chunk-size
    line too), and the connection goes back to its pool only once the deadline can no longer touch
    it.  Other failures as ``requests`` raises them (:func:`stream_chunks`).  The caller closes
    the response."""
    raw = response.raw
    deadline = exchange_deadline()
    if deadline is not None and deadline.covers(getattr(raw, "_connection", None)):
        return _read_before(deadline, response, limit)
    pool = getattr(raw, "_pool", None)
    deadline = ExchangeDeadline(seconds)
    deadline.carries(raw, _body_socket(response))
    raw._pool = None  # urllib3 puts a connection whose body ended back through its response's pool
    try:
        body = _read_before(deadline, response, limit)
    finally:
        deadline.end()
        raw._pool = pool
    if deadline.expired:  # it passed as the read ended: the socket is shut down, never pooled
        raw.close()
    return body


def _read_before(deadline: ExchangeDeadline, response, limit: int) -> bytes:
    """:func:`read_within`'s read, until ``deadline`` (its sockets shut down when it passes)."""
    import requests

    body = bytearray()
    try:
        for data in stream_chunks(response):
            body += data
            if len(body) > limit or deadline.expired:
                break
    except requests.RequestException:
        if not deadline.expired:
            raise
    if deadline.expired:
        response.raw.close()  # its socket is shut down: never back in the pool
        raise deadline.passed()
    return bytes(body[: limit + 1])


def _body_socket(response) -> Any:
    """The socket a streamed response's body is read from, while it is: the connection's
    (:func:`_socket_of`), else the one under http.client's file (an answer that ends its
    connection, read by plain ``requests``)."""
    sock = _socket_of(response)
    if sock is None:
        fp = getattr(getattr(response.raw, "_fp", None), "fp", None)
        sock = shuttable(getattr(getattr(fp, "raw", None), "_sock", None))
    return sock


def read_body(response, limit: int) -> bytes | None:
    """The whole body of a streamed response, or None (the connection closed, the body unread)
    when it is longer than ``limit`` bytes: the ``Content-Length`` is checked first, then the
    body is read in pieces and abandoned as soon as it passes ``limit``.  The response is closed.
    A traced transport's observer sees the body (``mcp_ref.http.exchange_trace``)."""
    whole: bytes | None = None
    try:
        bound_lines(response)
        length = response.headers.get("Content-Length", "")
        if length.isascii() and length.isdigit() and (len(length) > 18 or int(length) > limit):
            abort(response)
            return None
        body = bytearray()
        for chunk in response.iter_content(chunk_size=READ_SIZE):
            body += chunk
            if len(body) > limit:
                abort(response)
                return None
        whole = bytes(body)
        return whole
    finally:
        report = getattr(response, "mcp_report_body", None)  # set only when traced
        if report is not None:
            report(whole)
        response.close()


class BoundedLines:
    """The socket file under a response, its ``readline`` bounded by :data:`MAX_CHUNK_LINE`
    (past it, :class:`http.client.LineTooLong`, which urllib3 reports as a broken connection).

    urllib3 reads each chunk-size line of a chunked body with an unbounded ``readline()``: a
    server that sent ``1;`` and then never a line end grew the client by 730 MB for 300 MB.
    """

    __slots__ = ("_fp",)

    def __init__(self, fp):
        self._fp = fp

    def readline(self, limit: int | None = -1) -> bytes:
        """One line, of at most :data:`MAX_CHUNK_LINE` bytes (or ``limit``, if smaller)."""
        bound = MAX_CHUNK_LINE + 1 if limit is None or limit < 0 else min(limit, MAX_CHUNK_LINE + 1)
        line = self._fp.readline(bound)
        if len(line) > MAX_CHUNK_LINE:
            import http.client

            raise http.client.LineTooLong(
                "a chunk-size line"
            )  # "got more than 65536 bytes when reading ..."
        return line

    def __getattr__(self, name: str):
        return getattr(self._fp, name)


def bound_lines(response) -> None:
    """Put :class:`BoundedLines` under ``response`` before its body is read (nothing if this
    urllib3 has no such layer)."""
    inner = getattr(response.raw, "_fp", None)
    if inner is None:
        return
    fp = getattr(inner, "fp", None)
    if fp is not None and not isinstance(fp, BoundedLines):
        inner.fp = BoundedLines(fp)


def discard_body(response) -> None:
    """Read and drop a body nobody needs (a 202's, normally empty, so the connection is reused),
    or close the connection if it is longer than :data:`MAX_ERROR_BODY`."""
    read_body(response, MAX_ERROR_BODY)


class Underway:
    """The socket carrying one request of ours and its answer, from the moment its worker waits
    for the answer (:func:`watch`) until the connection goes back to requests' pool
    (:meth:`released`): what giving up on the request (its timeout, a cancellation) shuts down,
    waking the worker, even before the answer's status line and headers came.

    Only that socket, and only while it still carries this request: back in the pool, the
    connection carries the next request, which a late shutdown would break.  The response itself
    is never touched from here: the worker reading it alone closes it (a urllib3 response is not
    for two threads: a second one closing it puts its connection back in the pool while the
    worker may still be closing it, and the worker's close then lands on the next request there,
    ``ResponseNotReady``).
    """

    __slots__ = ("sock", "_lock", "_released")

    def __init__(self, sock):
        self.sock = sock
        self._lock = threading.Lock()  # a shutdown and the release never cross
        self._released = False

    def abort_now(self) -> None:
        """Shut the socket down, waking the worker that waits on it; nothing once released."""
        with self._lock:
            if not self._released:
                shut_down(self.sock)

    def released(self) -> None:
        """The connection goes back to the pool (its answer read, or the connection closed)."""
        with self._lock:
            self._released = True


def watch(sock) -> Underway | None:
    """``sock`` is about to carry the answer to the request this thread sends (:data:`sending`):
    from now on, the session giving up on that request (its timeout, a cancellation) shuts it down,
    even before the answer's status line and headers came (each read is bounded too,
    :func:`read_bound`; this is the deadline over them all).  The :class:`Underway` the transport
    was given (its connection tells it :meth:`~Underway.released`); None on another thread."""
    transport, request_id = sent_request()
    if transport is None or sock is None:
        return None
    underway = Underway(shuttable(sock))
    transport.awaiting(request_id, underway)
    return underway


def abort(response) -> None:
    """Close a streaming response even while another thread is blocked reading it.

    ``response.close()`` waits for that reader; shutting the socket down first
    wakes it at once (the reader then sees the end of the stream).  Called by the response's own
    reader, or when the whole transport closes (giving up on one request:
    :meth:`Underway.abort_now`).
    """
    sock = _socket_of(response)
    if sock is not None:
        shut_down(sock)
    response.close()


def _socket_of(response) -> Any:
    """The socket ``response`` (requests') is read from, while the response holds its connection
    (None once the connection went back to the pool: its socket carries another request then).
    The connection's socket; for an answer that ends its connection (``Connection: close``, an
    HTTP/1.0 answer with no length), which leaves the connection without one, the socket
    :class:`~mcp_ref.http.framing.FinalResponse` keeps."""
    connection = getattr(response.raw, "_connection", None)
    if connection is None:
        return None
    return shuttable(connection.sock or getattr(getattr(response.raw, "_fp", None), "sock", None))


def shuttable(sock) -> Any:
    """The socket to shut down to wake a thread reading ``sock``: ``sock`` itself, or the socket
    under urllib3's SSLTransport (TLS to an ``https://`` target inside an ``https://`` proxy's
    tunnel), which has no shutdown; the socket it wraps carries both."""
    if sock is not None and not hasattr(sock, "shutdown"):
        return getattr(sock, "socket", None)
    return sock


def answer_ids(data: str | bytes) -> set:
    """The valid ids (:func:`~mcp_ref.jsonrpc.valid_id`) the answers in ``data``, a JSON-RPC
    message or batch, carry: none when it is no JSON."""
    try:
        message = json.loads(data)
    except RecursionError:  # nested too deep: the session refuses it, failing the request answered
        from ..unparsed import answer_id

        text = data.decode(errors="replace") if isinstance(data, bytes) else data
        return {answer_id(text)} - {None}
    except ValueError:  # not JSON: the session refuses it
        return set()
    return {
        item.get("id")
        for item in (message if isinstance(message, list) else [message])
        if isinstance(item, dict)
        and "method" not in item
        and ("result" in item or "error" in item)
        and valid_id(item.get("id"))
    }


def relayed(event: Any, url: str, strict: bool) -> bool:
    """Whether an SSE ``event`` from ``url`` carries a message for the session: a ``message``
    event with data and, unless ``strict`` (a request's stream, where answers belong), no answer.
    2025-11-25 basic/transports §Listening for Messages from the Server (2025-03-26, 2025-06-18
    alike): on the standalone GET stream the server "MUST NOT send a JSON-RPC response on the
    stream unless resuming a stream associated with a previous client request"; that stream only
    ever resumes itself: an answer there settles no request, it is dropped with a warning."""
    if not event.data or event.event not in ("message", None, ""):
        return False
    if strict or not answer_ids(event.data):
        return True
    log.warning(
        "dropped an answer %s sent on its standalone GET stream, which carries none", shown(url)
    )
    return False


class Parsed(bytes):
    """A message's bytes with what :func:`~mcp_ref.jsonrpc.parse` made of them, ``parsed``: the
    session takes that instead of parsing the bytes again (:meth:`~mcp_ref.session.Session.receive`)."""

    parsed: Any


def own_answer(body: bytes, request_id: RequestId) -> bytes | None:
    """``body``, a JSON answer to our request ``request_id``, parsed once (:class:`Parsed`); None
    when it answers another request of ours (by :func:`answer_ids`' rule), which it would settle;
    ``body`` as it is when it cannot be parsed (the session refuses it, failing what it answers)."""
    try:
        message = parse(body)
    except (ParseError, InvalidRequest):
        return None if answer_ids(body) - {request_id} else body
    items = message if isinstance(message, list) else [message]
    # a batch's malformed answer (an InvalidRequest) fails the request it names, as answer_ids says
    ids = {item.id for item in items if isinstance(item, (Response, ErrorResponse))}
    ids |= {item.request_id for item in items if isinstance(item, InvalidRequest) and item.answer}
    if ids - {request_id, None}:
        return None
    parsed = Parsed(body)
    parsed.parsed = message
    return parsed


def media_type(response) -> str:
    """The media type of ``response``'s ``Content-Type``, in lower case (``""`` without one)."""
    return response.headers.get("Content-Type", "").split(";")[0].strip().lower()


def event_stream(response, url: str):
    """``response`` to a GET of the SSE stream at ``url``, when it is one or an HTTP error (left to
    the caller); a success of another type is closed, raising :class:`HttpTransportError`:
    2025-11-25 basic/transports §Listening for Messages from the Server, the server "MUST either
    return Content-Type: text/event-stream in response to this HTTP GET, or else return HTTP 405"
    (a resumption's GET, §Resumability and Redelivery, is the same GET)."""
    kind = media_type(response)
    if response.ok and kind != "text/event-stream":
        response.close()
        raise HttpTransportError(
            f"{shown(url)} answered the GET of its SSE stream with {content_kind(kind)}, "
            "not text/event-stream"
        )
    return response


def resolve_environment(http: Any, url: str) -> None:
    """Read the environment once for ``url``'s origin, the only one this transport talks to: the
    proxies (``HTTPS_PROXY``, ``NO_PROXY`` ...), ``REQUESTS_CA_BUNDLE`` / ``CURL_CA_BUNDLE`` when
    ``verify`` is left True, and a ``~/.netrc`` entry when no ``auth`` is given, as requests would
    on every request; then ``trust_env`` is turned off, so no request scans them again (requests
    does it twice per request: most of its own cost per call).  The environment is read when the
    client is made: change it before ``Client.http``."""
    import requests

    settings = http.merge_environment_settings(url, {}, None, http.verify, None)
    http.proxies.update(settings["proxies"])
    http.verify = settings["verify"]
    if http.auth is None:
        http.auth = requests.utils.get_netrc_auth(url)
    http.trust_env = False
