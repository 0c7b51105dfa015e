"""MCP over HTTP, client side: Streamable HTTP, and the 2024-11-05 HTTP+SSE transport.

One transport, :class:`HttpClientTransport`, in three modules: this one (Streamable HTTP with its
session, the handshake era; then, in a section of its own, the 2026-07-28 era's one POST per
request), :mod:`~mcp_ref.http.legacy_client` (the 2024-11-05 HTTP+SSE fallback) and
:mod:`~mcp_ref.http.bounded_reads` (bodies and SSE streams read within bounds).  Every name
they export is importable from here.  Every HTTP request goes through one ``requests.Session``
(its adapter: :func:`~mcp_ref.http.framing.framing_adapter`).

The session reads whole messages from :meth:`HttpClientTransport.read`.  Every
source of messages feeds one queue behind it (a bounded ``bounded_reads.Inbox``:
a stream's thread waits for room): JSON replies to POSTs, the SSE streams those
POSTs may open, and the standalone GET stream.  Writing a request
POSTs it on a worker thread and returns, so the session's timeouts,
progress and cancellation work as they do over stdio.  Notifications and
answers are POSTed by the caller, in order (the server answers 202).

What the spec asks of a client, and where it happens here:

* ``Accept: application/json, text/event-stream`` on every POST; either reply
  type is handled (``_deliver``);
* the ``Mcp-Session-Id`` from the initialize reply, and the
  ``MCP-Protocol-Version`` header, on every later request (``_headers``);
* the standalone GET stream, when the server offers one (``_listen``);
* ``retry`` honoured and ``Last-Event-ID`` sent to resume a dropped or closed
  stream (``_read_stream``);
* HTTP 404 for an established session: a new session is started once,
  transparently, and the request is sent again (``_renew_session``); a 404 to a notification,
  to the GET stream or to a resumption's GET starts one too (``_renewed``), and the new session is asked again for
  the old one's log level and subscriptions (:mod:`mcp_ref.client.renewal`);
* DELETE of the session on close;
* the backwards-compatible fallback: an initialize POST answered 400, 404 or
  405 means an HTTP+SSE server, reached through GET and its ``endpoint`` event.

A request whose ``_meta`` names a protocol version is a 2026-07-28 (modern)
request: see the section of that era below.

What the server sends is bounded, as stdio bounds a line: a JSON answer and each
SSE event by ``max_message_size`` (the Content-Length is checked first, then the
body is read in pieces and abandoned past the bound; the request fails with
:class:`~mcp_ref.errors.LimitExceeded`, the connection serves the others); SSE
is parsed in linear time (:class:`~mcp_ref.http.sse.SseParser`); and
the server's ``retry`` is kept between ``min_retry_delay`` and ``max_retry_delay``.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, cast

from .. import lifecycle
from ..errors import AuthorizationError, LimitExceeded, ResponseStreamLost, ServerUnreachable
from ..jsonrpc import Notification, Request, RequestId
from ..session import OutgoingRequests, Transport
from ..stdio import DEFAULT_MAX_MESSAGE_SIZE
from .bounded_reads import (
    DEFAULT_RETRY_MS,
    LISTEN_STREAM,
    MAX_CHUNK_LINE,
    MAX_ERROR_BODY,
    MAX_EVENT_ID,
    MAX_RETRY_DELAY,
    MIN_RETRY_DELAY,
    READ_SIZE,
    ClientHooks,
    Cursor,
    EventTooLarge,
    HttpTransportError,
    Inbox,
    RequestFailed,
    RequestHeld,
    Underway,
    abort,
    answer_ids,
    carrying,
    discard_body,
    event_stream,
    media_type,
    no_answer,
    own_answer,
    read_body,
    read_bound,
    relayed,
    resolve_environment,
    sent_request,
    stream_chunks,
    timed_out,
    unanswered,
    watching,
)
from .headers import modern_request_headers
from .in_flight import GivenUp, InFlight
from .legacy_client import LegacySseClient
from .not_reached import (
    advice,
    checked_headers,
    checked_url,
    content_kind,
    elsewhere,
    failed_because,
    format_tb,
    http_failure,
    jsonrpc_error_in,
    not_mcp,
    refusal_of_mcp,
    shown,
    unreachable,
)
from .notices import Notices, notice_timeouts
from .origins import CrossOriginRefused, RedirectRefused, redirect_guard
from .sse import SseParser

__all__ = [
    "HttpClientTransport",
    "ClientHooks",
    "HttpTransportError",
    "hold_current_request",
    "unreachable",
    "read_body",
    "discard_body",
    "stream_chunks",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "DEFAULT_RETRY_MS",
    "MAX_RESUMES",
    "MIN_RETRY_DELAY",
    "MAX_RETRY_DELAY",
    "MAX_ERROR_BODY",
    "READ_SIZE",
    "MAX_EVENT_ID",
    "MAX_CHUNK_LINE",
]

#: A session id as 2025-11-25 basic/transports §Session Management allows it: visible ASCII.
_SESSION_ID = re.compile(r"[\x21-\x7e]+")

#: The old private name of :class:`~mcp_ref.http.bounded_reads.Cursor` (tests use it).
_Cursor = Cursor

if TYPE_CHECKING:
    from .exchange_trace import ExchangeTracer

log = logging.getLogger(__name__)


def hold_current_request(seconds: float) -> None:
    """Extend the timeout of the request this thread is sending by ``seconds`` (see
    :class:`~mcp_ref.http.bounded_reads.RequestHeld`); nothing when this is not a transport's worker."""
    transport, request_id = sent_request()
    if transport is not None and request_id is not None:
        transport._incoming.put(RequestHeld(request_id, seconds))


#: Resumptions of one stream in a row that bring no new event before giving up on it (one that
#: brings some starts the count again: SSE polling, where the server closes the connection after
#: each event, resumes as long as it goes on).
MAX_RESUMES = 10


def open_transport(
    url: str,
    *,
    mode: str,
    max_message_size: int | None,
    min_retry_delay: float | None,
    max_retry_delay: float | None,
    client_options: dict | None = None,
    **options: Any,
) -> HttpClientTransport:
    """The transport :meth:`mcp_ref.Client.http` connects with (defaults filled in; the 2024-11-05
    SSE stream opened first when ``mode`` is ``"sse"``).

    ``client_options`` are the keywords the :class:`~mcp_ref.Client` will be made with (an
    ``http_trace`` among them is taken out: it is this transport's observer); their
    ``era`` (with ``protocol_version``) tells the transport whether the client falls back to the
    handshake when ``server/discover`` finds no modern server (see
    :attr:`HttpClientTransport.modern_only`); and the 2024-11-05 transport (``mode="sse"``), which
    carries the handshake era only, sets their ``era`` to ``"handshake"`` when it is ``"auto"``."""
    from ..client.connection import AUTO, HANDSHAKE, MODERN, resolve_era

    client_options = {} if client_options is None else client_options
    # Client.http's http_trace is the transport's (the Client never sees it)
    options.setdefault("http_trace", client_options.pop("http_trace", None))
    if mode == "sse" and client_options.get("era", AUTO) == AUTO:
        client_options["era"] = HANDSHAKE
    era, _ = resolve_era(client_options.get("era", AUTO), client_options.get("protocol_version"))
    http = HttpClientTransport(
        url,
        mode=mode,
        max_message_size=max_message_size or DEFAULT_MAX_MESSAGE_SIZE,
        min_retry_delay=MIN_RETRY_DELAY if min_retry_delay is None else min_retry_delay,
        max_retry_delay=MAX_RETRY_DELAY if max_retry_delay is None else max_retry_delay,
        **options,
    )
    http.modern_only = era == MODERN
    http.notice_timeouts = notice_timeouts(client_options)
    if mode == "sse":
        try:
            http.start_legacy()
        except BaseException:
            http.close()  # no client owns it yet: its stream and pool end here
            raise
    return http


class HttpClientTransport(LegacySseClient, Notices, Transport):
    """A client transport over HTTP.

    ``mode``: ``"auto"`` (Streamable HTTP, falling back to HTTP+SSE),
    ``"streamable"`` or ``"sse"``.  ``headers`` go on every HTTP request;
    ``auth`` is a requests auth hook (e.g. a bearer token).  ``connect_timeout``
    bounds connecting; waiting for answers is governed by the session's
    request timeouts.

    ``headers``, ``auth`` and every message go to the origin of ``url`` only: a redirect is
    followed within that origin, and one to another origin (or a 2024-11-05 ``endpoint`` event
    naming another origin) fails with :class:`~mcp_ref.http.origins.CrossOriginRefused`,
    nothing sent there.

    ``max_message_size`` (bytes; stdio's default, 4 MiB) bounds a JSON answer and the data of
    each SSE event (and each SSE line).  An answer past it fails its request with
    :class:`~mcp_ref.errors.LimitExceeded` naming the limit, as does an event past it on a
    request's stream (whose rest is then abandoned); one on the standalone GET stream (or the
    2024-11-05 stream) is dropped with a warning.  ``min_retry_delay`` / ``max_retry_delay``
    (seconds) clamp the server's SSE ``retry`` before a stream is re-opened.

    ``http_trace``: an observer called with every HTTP request, response and SSE event this
    transport makes or reads (:mod:`mcp_ref.http.exchange_trace`; raw values, secrets included).
    """

    session_id: str | None = None
    protocol_version: str | None = None
    legacy_endpoint: str | None = None
    _reinitialize: Callable[[], Callable[[], None]] | None = None  # see set_reinitialize
    _generation = 0
    _renewer: int | None = None  # the thread starting a new session (see _renew_session)
    _renewal_failed: Exception | None = None  # why the last new session could not be started
    _listener: threading.Thread | None = None
    #: 2026-07-28: no session (see the 2026-07-28 section below).
    _stateless = False
    _input_schema: Callable[[str], dict[str, Any] | None] | None = None
    _requests: OutgoingRequests | None = None  # the session's (attach)
    #: The ``http_trace`` observer's reporter (None: not traced; see exchange_trace).
    _tracer: ExchangeTracer | None = None
    #: True when the client speaks 2026-07-28 only (``Client(era="modern")``): then an answer to
    #: ``server/discover`` that is no MCP answer (a 404, an HTML page) ends the connection with
    #: :class:`~mcp_ref.errors.ServerUnreachable`; otherwise it is an error the client takes for a
    #: handshake-era server's, falling back to ``initialize`` (whose answer then says).
    modern_only = False

    def __init__(
        self,
        url: str,
        *,
        headers: dict | None = None,
        auth=None,
        mode: str = "auto",
        connect_timeout: float = 10.0,
        max_workers: int = 64,
        verify=True,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        min_retry_delay: float = MIN_RETRY_DELAY,
        max_retry_delay: float = MAX_RETRY_DELAY,
        http_trace: Callable[[Any], Any] | None = None,
    ):
        import requests  # heavy: loaded only for HTTP

        from .framing import framing_adapter

        if mode not in ("auto", "streamable", "sse"):
            raise ValueError(f"mode must be 'auto', 'streamable' or 'sse', not {mode!r}")
        checked_url(url)
        if (
            isinstance(max_message_size, bool)
            or not isinstance(max_message_size, int)
            or max_message_size < 1
        ):
            raise ValueError(f"max_message_size must be a positive int, not {max_message_size!r}")
        if not 0 <= min_retry_delay <= max_retry_delay:
            raise ValueError("min_retry_delay and max_retry_delay must satisfy 0 <= min <= max")
        #: The largest JSON answer or SSE event's data taken from the server (bytes).
        self.max_message_size = max_message_size
        #: The bounds (seconds) of the wait before a stream is re-opened, whatever the server's ``retry``.
        self.min_retry_delay = min_retry_delay
        self.max_retry_delay = max_retry_delay
        self.url = url
        self.mode = mode
        self.http = requests.Session()
        # One keep-alive connection per worker (and the GET stream): urllib3's default pool of 10
        # would drop connections as soon as more requests than that are in flight.
        # Interim 1xx answers are skipped (RFC 9110 §15.2), not only 100 (http_framing).
        adapter = framing_adapter(pool_connections=2, pool_maxsize=max_workers + 2)
        for scheme in ("http://", "https://"):
            self.http.mount(scheme, adapter)
        self.http.headers.update(checked_headers(headers))
        self.http.auth = auth
        # Credentials and the caller's headers go only to the origin of ``url``: a redirect elsewhere
        # is refused before it is followed.
        self.http.hooks["response"].append(redirect_guard(self.http, url))
        self.http.verify = verify
        resolve_environment(self.http, url)
        if http_trace is not None:
            from .exchange_trace import ExchangeTracer

            self._tracer = ExchangeTracer(http_trace)
            self._tracer.install(self.http)
        self.connect_timeout = connect_timeout
        self._incoming = Inbox()  # bounded: a stream's thread waits for room (bounded_reads.Inbox)
        self._pool = ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix="mcp-http-client"
        )
        self._closed = threading.Event()
        self._renew_lock = threading.Lock()
        self._session_ready = threading.Event()  # cleared while a new session is being started
        self._session_ready.set()
        #: The threads sending what new sessions are asked after their handshake (_follow).
        self._follow_ups: set[threading.Thread] = set()
        self._open_responses: set = set()
        self._responses_lock = threading.Lock()
        #: The requests handed to workers (both eras), and giving up on them.
        self.in_flight = InFlight()
        self._open_notices()

    # -- the Transport protocol ----------------------------------------------------------

    @property
    def http_hooks(self) -> ClientHooks:
        """What the client role asks of HTTP (:class:`ClientHooks`): this transport."""
        return self

    def attach(self, requests: OutgoingRequests) -> None:
        """The session's requests: their deadlines bound the reads of their answers (``read_bound``)."""
        self._requests = requests

    def read(self) -> bytes | None:
        """The next message from any of the streams; None once closed.  A worker's news of a request
        (``RequestFailed``, ``RequestHeld``) goes to the session here, in turn with the messages."""
        while True:
            item = self._incoming.get()
            if not isinstance(item, (RequestFailed, RequestHeld)):
                return item
            if self._requests is None:
                continue
            if isinstance(item, RequestFailed):
                self._requests.fail_request(item.request_id, item.error)
            else:
                self._requests.hold_request(item.request_id, item.seconds)

    def write(self, data: bytes, message=None, related=None) -> None:
        """POST one message: a request on a worker, a cancellation on the notice thread (the caller
        never waits for the server to take them); the rest in order, here."""
        if self._closed.is_set():
            raise OSError("the HTTP transport is closed")
        legacy = self.mode == "sse" and self.legacy_endpoint is not None
        if isinstance(message, Request):
            if legacy:
                self._submit(self._send_legacy, data, message)
            elif lifecycle.is_modern(message.params):
                self._submit(self._send_modern, data, message)
            else:
                # the renewal's initialize goes without waiting for it, on a thread of its own: the
                # workers may all be waiting for the renewal; what a new session is asked after it
                # (its follow-up) meets a 404 without starting another (_send_request)
                renewing = threading.get_ident() == self._renewer
                following = threading.current_thread() in self._follow_ups
                self._submit(self._send_request, data, message, renewing, following, alone=renewing)
        elif isinstance(message, Notification) and message.method == "notifications/cancelled":
            # the session's own notice: it names the request
            request_id = cast(RequestId, (message.params or {}).get("requestId"))
            if self.in_flight.cancel(request_id):  # not sent from now on, nor resumed
                return  # it waited for a worker: the server never heard of it
            if legacy or not self._stateless:
                self._tell_cancelled(data, request_id, legacy)
            else:
                # 2026-07-28 streamable-http §Cancellation, no notification sent: "Closing the
                # SSE response stream MUST be treated by the server as cancellation of that
                # request".
                self.in_flight.give_up(request_id)
        elif legacy or not self._stateless:
            self._send_other(data, legacy, message)
        else:
            # 2026-07-28: the Note under streamable-http §Sending Messages: "This revision of the
            # core protocol defines no client-to-server notifications over Streamable HTTP".
            log.debug(
                "notification %s not sent: 2026-07-28 HTTP has no client notifications",
                getattr(message, "method", "?"),
            )

    def stateless(self, input_schema: Callable[[str], dict | None]) -> None:
        """The client speaks 2026-07-28: no session, no GET stream; ``input_schema`` gives the
        ``x-mcp-header`` declarations of a tool's parameters."""
        self._stateless = True
        self._input_schema = input_schema
        if self.mode == "auto":
            self.mode = "streamable"  # no fallback to HTTP+SSE from here on

    def set_reinitialize(self, reinitialize: Callable[[], Callable[[], None]]) -> None:
        """The client role's handshake, run again to start a new session after a 404
        (``_renew_session``); it returns what to ask of the new session once it is ready."""
        self._reinitialize = reinitialize

    def initialized(self, protocol_version: str) -> None:
        """Called by the Client after initialize: remember the version and open the GET stream.

        Waits (at most ``connect_timeout``) until the server has answered the GET,
        so the client is listening before its first request: a message the
        server sends on that stream right away is not raced by the caller.
        """
        self.protocol_version = protocol_version
        if self.mode != "sse" and (self._listener is None or not self._listener.is_alive()):
            answered = threading.Event()
            self._listener = threading.Thread(
                target=self._listen,
                # opened by a new session: it starts none of its own at its first 404 (_listen)
                args=(answered, self._renewer is not None),
                name="mcp-http-listen",
                daemon=True,
            )
            self._listener.start()
            answered.wait(self.connect_timeout)

    def close(self) -> None:
        """DELETE the session (Streamable HTTP), stop every stream, and end ``read()``: within
        ``NOTICES_AT_CLOSE`` and ``SESSION_END_TIMEOUT`` (2 + 5 s; :mod:`~mcp_ref.http.notices`)
        at most, whatever the server does."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._send_due_notices()  # the cancellations the session's close queued go first
        if self.session_id and self.mode != "sse":
            self._end_session()  # the session's DELETE, SESSION_END_TIMEOUT at most
        self.in_flight.close()  # no worker is left reading, nor the thread sending a notice
        with self._responses_lock:
            responses = list(self._open_responses)
        for response in responses:
            try:
                abort(response)
            except Exception:  # closing must not raise, and ends every other stream all the same
                log.debug("ending a stream failed", exc_info=True)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._notices.shutdown(wait=False, cancel_futures=True)
        self._resends.shutdown(wait=False, cancel_futures=True)
        self.http.close()
        self._incoming.close()  # a stream's thread waiting for room drops its message
        self._incoming.put(None)

    # -- POST ----------------------------------------------------------------------------

    def _headers(self, accept: str = "application/json, text/event-stream") -> dict:
        headers = {"Accept": accept}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            # 2025-06-18 basic/transports: "the client MUST include the MCP-Protocol-Version:
            # <protocol-version> HTTP header on all subsequent requests to the MCP server".
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def _post(self, data: bytes, *, read_timeout: float | None = None, legacy: bool = False):
        """POST ``data`` (``legacy``: to the 2024-11-05 endpoint, with none of the session's
        headers); the body is left unread (``stream``): read it with :func:`read_body`."""
        headers = {} if legacy else self._headers()
        headers["Content-Type"] = "application/json"
        return self.http.post(
            self._target(legacy),
            data=data,
            headers=headers,
            stream=True,
            timeout=(self.connect_timeout, read_timeout),
        )

    def _post_request(self, data: bytes, request: Request, legacy: bool = False):
        """POST ``request`` (its ``data``) as :meth:`_post` does, each read bounded by the session's
        deadline for it, and the socket of its answer watched for it (:func:`carrying`): giving
        up on it shuts that socket down.  Only the request's own exchanges are watched so (not a
        new session's notice sent on the way, :meth:`_renew_session`)."""
        self.in_flight.check_unsent(request.id)  # the wait for a new session may have been long
        with carrying(self, request.id):
            return self._post(
                data, read_timeout=read_bound(self._requests, request.id), legacy=legacy
            )

    def _target(self, legacy: bool) -> str:
        """Where a message is POSTed: ``url``, or (``legacy``) the 2024-11-05 endpoint (set:
        ``write`` checks it, and ``start_legacy`` raises without it)."""
        return cast(str, self.legacy_endpoint) if legacy else self.url

    def _submit(
        self, send: Callable[..., None], data: bytes, request: Request, *args: Any, alone=False
    ) -> None:
        """Hand ``request`` to a worker (:meth:`_work`; ``alone``: a thread of its own); from now
        on giving up on it is remembered (:attr:`in_flight`), even while it waits for a worker."""
        self.in_flight.submitted(request.id)
        try:
            if alone:
                work = (send, data, request, *args)
                renewal = threading.Thread(target=self._work, args=work, name="mcp-http-renewal")
                renewal.daemon = True
                renewal.start()
            else:
                self._pool.submit(self._work, send, data, request, *args)
        except RuntimeError:  # the pool is shut down: the transport closed meanwhile
            self.in_flight.finished(request.id)
            raise OSError("the HTTP transport is closed") from None

    def _work(self, send: Callable[..., None], data: bytes, request: Request, *args: Any) -> None:
        """Run ``send(data, request, *args)`` on a worker: it POSTs ``request`` and delivers its
        answer; a failure fails that request (never the worker), in the words its caller needs.
        A request given up on while it waited for the worker is not sent at all."""
        import requests

        try:
            if self.in_flight.taken(request.id):
                send(data, request, *args)
        except GivenUp:  # given up on while it waited for a new session: never sent
            pass
        except (requests.ConnectionError, requests.Timeout) as exc:
            failure = (
                no_answer(request)
                if timed_out(exc)
                else unreachable(self.url, exc, self.connect_timeout)
            )
            self._incoming.put(RequestFailed(request.id, failure))
        except requests.RequestException as exc:
            if not self.in_flight.given_up(request.id):  # else: shut down under its reader
                self._fail(
                    request.id, f"HTTP request to {shown(self.url)} failed: {failed_because(exc)}"
                )
        except HttpTransportError as exc:
            self._fail(request.id, str(exc), exc.status)
        # AuthorizationError: the auth hook (mcp_ref.oauth.OAuth) could not authorize;
        # CrossOriginRefused: a redirect to another origin, not followed; ServerUnreachable: the
        # HTTP+SSE fallback found no server either, or a new session's initialize found none;
        # RedirectRefused: a redirect that would have turned the POST into a GET, not followed
        except (AuthorizationError, CrossOriginRefused, RedirectRefused, ServerUnreachable) as exc:
            self._incoming.put(RequestFailed(request.id, exc))
        except Exception as exc:  # a worker must never die silently
            if self._closed.is_set() or self.in_flight.given_up(request.id):  # nothing is wrong
                why = failed_because(exc)
                log.debug("request %r: its abandoned response ended the read (%s)", request.id, why)
            else:
                # the traceback without the exception's text (it may quote a token): failed_because
                log.error("HTTP request failed: %s\n%s", failed_because(exc), format_tb(exc))
                self._fail(request.id, f"HTTP request failed: {failed_because(exc)}")
        finally:
            self.in_flight.finished(request.id)

    def _send_request(
        self, data: bytes, request: Request, renewing: bool = False, following: bool = False
    ) -> None:
        """POST a handshake-era ``request`` and deliver its answer (on a worker: :meth:`_work`);
        ``renewing``: a renewal's own, ``following``: its follow-up's (:meth:`_renew_session`)."""
        if (
            request.method != "initialize"
            and not renewing
            and not self._session_ready.wait(self.connect_timeout * 3)
        ):
            raise HttpTransportError("timed out waiting for a new session")
        renewing = renewing or following  # from here: a 404 to it starts no new session
        if self._renewal_failed is not None and request.method != "initialize" and not renewing:
            self._renew_session(self._generation)  # the last attempt found no server: try again
        generation = self._generation
        sent_with = self.session_id
        response = self._post_request(data, request)
        if request.method == "initialize":
            if response.status_code in (400, 404, 405) and self.mode == "auto":
                # basic/transports §Backwards Compatibility: on such an answer the client
                # "should assume this is a server supporting the old HTTP+SSE transport".
                response.close()
                self._fall_back(data, request)
                return
            if response.ok:
                self.session_id = self._new_session_id(response) or self.session_id
                if self.mode == "auto":
                    self.mode = "streamable"
        elif response.status_code == 404 and sent_with and self._reinitialize and not renewing:
            # (a request of a renewal's own, or of its follow-up, that meets a 404 fails: no renewal
            # in a loop)
            response.close()
            self._renew_session(generation)
            response = self._post_request(data, request)
        if self._track(request.id, response):
            self._deliver(response, request)

    def _new_session_id(self, response) -> str | None:
        """The ``Mcp-Session-Id`` of the answer to ``initialize``; one that is not visible ASCII
        raises :class:`HttpTransportError` (``response`` closed): sent back on every request, it
        would be refused there or misread (2025-11-25 basic/transports §Session Management: "The
        session ID MUST only contain visible ASCII characters (ranging from 0x21 to 0x7E)")."""
        session_id = response.headers.get("Mcp-Session-Id")
        if session_id and not _SESSION_ID.fullmatch(session_id):
            response.close()
            raise HttpTransportError(
                f"{shown(self.url)} answered initialize with an Mcp-Session-Id holding characters "
                "other than visible ASCII (0x21 to 0x7E): the session is not taken"
            )
        return session_id

    def awaiting(self, request_id, underway: Underway) -> None:
        """A worker waits for ``request_id``'s answer on ``underway``'s socket (:attr:`in_flight`)."""
        self.in_flight.awaiting(request_id, underway)

    def _track(self, request_id, response) -> bool:
        """``response`` carries ``request_id``'s answer: True to read it; False (``response``
        closed, by this worker, whose response it is) when the session has given up on that
        request meanwhile (its socket is watched already: :meth:`awaiting`)."""
        given_up = self.in_flight.given_up(request_id)
        if given_up:
            abort(response)
        return not given_up

    def _deliver(self, response, request: Request, *, resumable: bool = True) -> None:
        if response.status_code == 202:
            response.close()
            # 2025-11-25 basic/transports §Sending Messages: to a request the server "MUST either
            # return Content-Type: text/event-stream ... or Content-Type: application/json"; a 202
            # brings no answer (one cancelled meanwhile is no longer waited for: nothing happens)
            failure = HttpTransportError(
                f"HTTP 202 Accepted from {shown(self.url)}, with no answer to {request.method}"
            )
            failure.status = 202
            self._incoming.put(RequestFailed(request.id, failure))
            return
        if not response.ok:
            self._fail_http(request.id, response, request.method)
            return
        content_type = media_type(response)
        first = self._first(request.method)
        if content_type == "application/json":
            body = read_body(response, self.max_message_size)
            if body is None:
                self._incoming.put(self._too_large(request, "answer"))
            elif (body := own_answer(body, request.id)) is None:
                # 2025-11-25 basic/transports §Sending Messages: to a request, "one JSON object",
                # its answer (a 2025-03-26 array of answers too: this client POSTs one request);
                # one naming another id would settle another request of ours with it
                self._fail(
                    request.id, f"the server answered {request.method} with another request's id"
                )
            else:
                self._incoming.put(body)  # parsed once: the session takes it as it is
                # nothing once the body answered it; to a first request, a body that did not
                # answer it says no MCP server is there
                self._incoming.put(
                    RequestFailed(
                        request.id,
                        self._not_mcp(request.method, "a JSON body that is no JSON-RPC answer"),
                    )
                    if first
                    else unanswered(request)
                )
        elif content_type == "text/event-stream":
            self._read_stream(response, request, resumable=resumable)
        else:
            response.close()
            if first:
                answer = content_kind(content_type)
                self._incoming.put(RequestFailed(request.id, self._not_mcp(request.method, answer)))
                return
            self._fail(
                request.id,
                f"unexpected Content-Type {content_type!r} in the answer to {request.method}",
            )

    def _first(self, method: str | None) -> bool:
        """Whether an answer to ``method`` that is no MCP answer means no MCP server is at ``url``:
        the first request's, ``initialize``, or ``server/discover`` when the client will not fall
        back to the handshake (:attr:`modern_only`)."""
        return method == "initialize" or (method == "server/discover" and self.modern_only)

    def _not_mcp(self, method: str, answer: str, status: int = 200) -> ServerUnreachable:
        """The failure of a first request (``initialize``, ``server/discover``) whose ``answer``
        shows no MCP server is at the URL (:func:`~mcp_ref.http.not_reached.not_mcp`)."""
        if status >= 500:
            hint = ""  # not_mcp says the server, or a proxy in front of it, failed
        else:
            hint = advice(status, self.url, {}, credentials=False) or elsewhere(self.url)
        tried = f"{'an' if method[0] in 'aeiou' else 'a'} {method} POST"
        return not_mcp(self.url, status, answer, tried, hint)

    def _too_large(self, request: Request, what: str) -> RequestFailed:
        """The failure of ``request`` whose ``what`` (answer, SSE event) went past ``max_message_size``."""
        limit = self.max_message_size
        log.warning(
            "%s: the server's %s is larger than the limit of %d bytes; the request fails",
            request.method,
            what,
            limit,
        )
        return RequestFailed(
            request.id,
            LimitExceeded(
                f"{request.method}: the server's {what} is larger than this client's limit of {limit} bytes "
                f"(max_message_size)",
                data={"limit": limit},
            ),
        )

    def _renew_session(self, generation: int) -> None:
        """After a 404 for our session: start a new one, once, whoever saw the 404 first.

        2025-11-25 basic/transports §Session Management: "When a client receives HTTP 404 in
        response to a request containing an Mcp-Session-Id, it MUST start a new session by
        sending a new InitializeRequest without a session ID attached."

        The session is ready once the handshake is over; what the new session is asked after it
        (the follow-up the client role's handshake returns: :func:`mcp_ref.client.renewal.renew`)
        is sent then, on a thread of its own (:meth:`_follow`), holding up no request.
        """
        with self._renew_lock:
            if generation != self._generation:
                self._session_ready.wait(self.connect_timeout * 3)
                if self._renewal_failed is not None:
                    raise self._renewal_failed  # another request tried, and found no server
                return  # another request already renewed it
            # The old id is gone before the generation moves on: whoever reads the generation,
            # then the id (as every sender does), never pairs the new generation with the old id
            # (its 404 would start yet another session).
            self.session_id = None
            self._generation += 1
            self._session_ready.clear()  # requests wait for the new session instead of failing
            self._renewer = threading.get_ident()
            follow_up = None
            try:
                log.info("the server forgot our session; starting a new one")
                # Only called when a reinitialize callable is set (_send_request checks).
                follow_up = cast(Callable[[], Callable[[], None]], self._reinitialize)()
                self._renewal_failed = None
            except Exception as exc:
                # No session now: the next request tries again (the server may be back by then).
                self._renewal_failed = exc
                raise
            finally:
                self._renewer = None
                if follow_up is not None:
                    self._follow(follow_up)  # its requests wait for the line below
                self._session_ready.set()

    def _follow(self, follow_up: Callable[[], None]) -> None:
        """Run a new session's ``follow_up`` on a thread of its own, one of :attr:`_follow_ups`
        while it runs: a 404 to its requests starts no other new session."""

        def run() -> None:
            try:
                follow_up()
            finally:
                self._follow_ups.discard(thread)

        thread = threading.Thread(target=run, name="mcp-http-renewed", daemon=True)
        self._follow_ups.add(thread)
        thread.start()

    # -- SSE streams -----------------------------------------------------------------------

    def _events(self, response, cursor: Cursor | None = None, *, strict: bool = False):
        """The events of an SSE response, parsed as they arrive (:class:`~mcp_ref.http.sse.SseParser`,
        each event's data bounded by ``max_message_size``); ``cursor`` keeps the stream's last event
        id and ``retry``.  An event past the bound raises :class:`EventTooLarge` when ``strict`` (a
        request's stream), else it is dropped with a warning."""
        parser = SseParser(self.max_message_size)
        with self._responses_lock:
            self._open_responses.add(response)
        try:
            for chunk in stream_chunks(response):
                events = parser.feed(chunk)
                if cursor is not None:
                    cursor.note(parser, len(events))
                for event in events:
                    if self._tracer is not None:
                        self._tracer.event(response, event)
                    if event.too_large:
                        if strict:
                            raise EventTooLarge
                        log.warning(
                            "dropped an SSE event from %s larger than the limit of %d bytes "
                            "(max_message_size)",
                            shown(self.url),
                            self.max_message_size,
                        )
                        continue
                    yield event
        except EventTooLarge:
            raise
        except Exception:
            if not self._closed.is_set():
                raise
            # close() closed this response under a blocked reader: a normal end, whatever urllib3 raised
        finally:
            with self._responses_lock:
                self._open_responses.discard(response)
            response.close()

    def _relay(self, response, cursor: Cursor, *, strict: bool = False):
        """Put every message of an SSE response on the incoming queue (and yield it), keeping
        the stream's last event id and ``retry`` in ``cursor`` for resuming it; unless ``strict``
        (a request's stream), an answer is dropped (:func:`relayed`)."""
        for event in self._events(response, cursor, strict=strict):
            if relayed(event, self.url, strict):
                if not self._incoming.put_streamed(event.data.encode("utf-8")):
                    return  # closed while it waited for room
                yield event.data

    def _retry_delay(self, cursor: Cursor, fruitless: int = 0) -> float:
        """Seconds to wait before re-opening a stream: the server's ``retry`` kept between
        ``min_retry_delay`` and ``max_retry_delay``, doubled for each attempt in a row that
        brought no event (``fruitless``), up to ``max_retry_delay``."""
        delay = min(max(cursor.retry_ms / 1000, self.min_retry_delay), self.max_retry_delay)
        return min(delay * 2 ** min(fruitless, 16), self.max_retry_delay)

    def _read_stream(self, response, request: Request, *, resumable: bool = True) -> None:
        """Read a POST's SSE stream until the answer to ``request`` arrived, resuming it if it ends
        early (``resumable``; 2026-07-28 has no resumption: the request is reported lost instead).
        An event past ``max_message_size`` fails the request and abandons the stream."""
        import requests

        awaiting = {request.id}
        cursor, resumed, fruitless = Cursor(), False, 0
        ended = "the server closed the stream before answering"  # why the request fails at last
        while True:
            # (response None: the GET resuming it failed, a fruitless resumption)
            seen, broke = (cursor.events, cursor.last_id), response is None
            try:
                for data in () if response is None else self._relay(response, cursor, strict=True):
                    awaiting -= answer_ids(data)
                    if not awaiting:
                        return
            except requests.RequestException as exc:
                log.debug("SSE stream dropped: %s", failed_because(exc))
                broke = True
            except EventTooLarge:
                self._incoming.put(self._too_large(request, "SSE event"))
                return
            if not awaiting or self._closed.is_set() or self.in_flight.is_cancelled(request.id):
                return
            # from here the request is unanswered: it fails now, or its stream is resumed
            new = (cursor.events, cursor.last_id) != seen
            if resumed and not broke and not new:
                # The server ended the resumed stream with nothing after Last-Event-ID: it has no
                # more for this request (the process running it stopped, or it ended unanswered).
                # Asking again would get the same; the caller hears it now, not at its timeout.
                self._fail(
                    request.id,
                    "the server ended the resumed stream without an answer "
                    "(the request was lost on the server, e.g. its worker stopped)",
                )
                return
            if not resumable:
                lost = ResponseStreamLost(
                    f"the response stream from {shown(self.url)} broke before the answer"
                )
                self._incoming.put(RequestFailed(request.id, lost))
                return
            # 2025-11-25 basic/transports §Resumability: the client resumes with GET and
            # Last-Event-ID, after waiting the server's retry interval; §Sending Messages: the
            # server "MAY close the connection ... at any time", and the client "SHOULD" then poll.
            # Only resumptions that brought nothing new count against MAX_RESUMES.
            if new:
                fruitless = 0
            elif resumed:
                fruitless += 1
            if cursor.last_id is None or fruitless >= MAX_RESUMES:
                self._fail(request.id, ended)
                return
            resumed = True
            if self._closed.wait(self._retry_delay(cursor, fruitless)):
                return
            try:
                with carrying(self, request.id):  # the resumed answer's socket watched for it
                    response = self._get_stream(cursor, read_bound(self._requests, request.id))
            except requests.RequestException as exc:
                response = None
                ended = f"resuming the stream failed: {failed_because(exc)}"
                log.debug("%s", ended)
                continue
            ended = "the server closed the stream before answering"
            if not response.ok:
                self._resumption_refused(request, response)
                return
            if not self._track(request.id, response):
                return

    def _get_stream(self, cursor: Cursor, read_timeout: float | None):
        """GET the SSE stream at ``url`` (the body left unread), from after ``cursor``'s last event
        id when it has one (2025-11-25 basic/transports §Resumability: ``Last-Event-ID``); a success
        that is no SSE stream raises :class:`HttpTransportError` (:func:`event_stream`)."""
        headers = self._headers("text/event-stream")
        if cursor.last_id:
            headers["Last-Event-ID"] = cursor.last_id
        response = self.http.get(
            self.url, headers=headers, stream=True, timeout=(self.connect_timeout, read_timeout)
        )
        return event_stream(response, self.url)

    def _listen(self, answered: threading.Event, renewed: bool = False) -> None:
        """The standalone GET stream: server-to-client messages outside any request.

        ``answered`` is set once the first GET has an answer (whatever it is) or failed; ``renewed``:
        the stream is a new session's (a 404 before it opened starts no other).
        """
        import requests

        cursor, fruitless = Cursor(), 0
        while not self._closed.is_set():
            seen = cursor.events
            generation = self._generation  # first, then the id (see _renew_session)
            sent_with = self.session_id
            forgotten = False
            try:
                # watched: close() shuts its socket down, even before headers that never come
                with watching(self, LISTEN_STREAM):
                    try:
                        response = self._get_stream(cursor, None)
                    finally:
                        answered.set()
                    if not response.ok:
                        response.close()
                        # 404: the session is gone (a new one is started below); 405: "the server
                        # does not offer an SSE stream at this endpoint"
                        forgotten = response.status_code == 404 and bool(sent_with)
                        if response.status_code in (404, 405) and not forgotten:
                            return
                    else:
                        renewed = False
                        for _ in self._relay(response, cursor):
                            pass
            except requests.RequestException as exc:
                log.debug("standalone stream dropped: %s", failed_because(exc))
            # not authorized, redirected, or answered with no SSE stream (as a 405, it is not
            # asked again; unlike a 405, the answer breaks the spec: a warning)
            except (AuthorizationError, CrossOriginRefused, HttpTransportError) as exc:
                log.warning("the standalone stream is not opened: %s", failed_because(exc))
                return
            except Exception:
                log.exception("standalone stream failed")
            if forgotten:
                # a new session (2025-11-25 basic/transports §Session Management), its stream opened
                # here; but once only in a row: a server that forgets each new session at once is
                # left alone (a request tries again)
                if renewed or not self._renewed(generation):
                    return
                cursor, renewed = Cursor(), True
                continue
            # A stream that ends at once, again and again, is re-opened less and less often.
            fruitless = 0 if cursor.events > seen else fruitless + 1
            self._closed.wait(self._retry_delay(cursor, fruitless))

    # -- failures ----------------------------------------------------------------------------

    def _fail(self, request_id, message: str, status: int | None = None) -> None:
        """Answer a request locally with an error, so its caller does not wait for a timeout
        (``status``: the HTTP status that ended it, as ``data.httpStatus``)."""
        error: dict = {"code": -32603, "message": message}
        if status is not None:
            error["data"] = {"httpStatus": status}
        self._answer_error(request_id, error)

    def _answer_error(self, request_id, error: dict) -> None:
        """Put a JSON-RPC error answer to ``request_id``, made here, in the incoming queue."""
        self._incoming.put(
            json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()
        )

    def _fail_http(self, request_id, response, method: str | None = None) -> None:
        """Fail a request the server answered with an HTTP error: its JSON-RPC error if the body
        holds one, with the status in front (and ``data.httpStatus``), and what to do about a 401
        (:func:`~mcp_ref.http.not_reached.http_failure`).  An answer to the first request that is
        not MCP's own refusal fails it with :class:`~mcp_ref.errors.ServerUnreachable` instead."""
        error = jsonrpc_error_in(read_body(response, MAX_ERROR_BODY))  # a long body is none
        status = f"HTTP {response.status_code} {response.reason}"
        if self._first(method) and not refusal_of_mcp(response.status_code, error is not None):
            # a 404 to the first request, an HTML 502 from a proxy ...: no MCP server answered
            failure = self._not_mcp(cast(str, method), status, response.status_code)
            self._incoming.put(RequestFailed(request_id, failure))
            return
        # advice on a 404 to the first request only: a 404 later is a lost session, or the method's
        hint = (
            advice(
                response.status_code, self.url, response.headers, credentials=self._credentials()
            )
            if response.status_code == 401 or method in ("initialize", "server/discover")
            else ""
        )
        self._answer_error(request_id, http_failure(status, response.status_code, error, hint))

    # -- the 2026-07-28 era: one POST per request, no session -------------------------------
    # A request whose ``_meta`` names a protocol version is a 2026-07-28 (modern) request, and
    # travels as that revision's transport says (``_send_modern``): no session and no GET stream;
    # the ``MCP-Protocol-Version`` header from its ``_meta``, ``Mcp-Method`` and ``Mcp-Name`` from
    # its body, and ``Mcp-Param-*`` from the arguments its tool's ``x-mcp-header`` declarations name
    # (:mod:`mcp_ref.http.headers`); a broken response stream is not resumed but reported
    # (:class:`~mcp_ref.errors.ResponseStreamLost`: the client re-issues the request); cancelling
    # closes the request's response stream instead of sending ``notifications/cancelled``, and no
    # other notification is sent.

    def _send_modern(self, data: bytes, request: Request) -> None:
        """POST one modern request and deliver its answer (JSON, or an SSE stream read to the end;
        on a worker: ``HttpClientTransport._work``)."""
        with carrying(self, request.id):  # its answer's socket watched for it
            response = self.http.post(
                self.url,
                data=data,
                headers=modern_request_headers(request.method, request.params, self._input_schema),
                stream=True,
                timeout=(self.connect_timeout, read_bound(self._requests, request.id)),
            )
        if self._track(request.id, response):
            self._deliver(response, request, resumable=False)
