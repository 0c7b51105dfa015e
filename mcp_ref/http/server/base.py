"""What every transport of the WSGI application shares (:class:`HttpAppBase`): its options, the
Host/Origin check, the later stages of the middleware chain, the body of a request, the sessions
of this process, the long-lived streams each client holds.

:class:`~.app.McpWsgiApp` adds the routing; the transports (:mod:`.streamable`, :mod:`.modern`,
:mod:`.legacy_sse`) are written against this class.  What it asks of the server is :mod:`.host`.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

from ... import jsonrpc
from ...errors import (
    LIMIT_EXCEEDED,
    PARSE_ERROR,
    SERVER_BUSY,
    InvalidRequest,
    MethodNotFound,
    ParseError,
)
from ...jsonrpc import ErrorResponse
from ...lifecycle import SUPPORTED_VERSIONS, answered_at_once
from ...server.principal import principal_id_of
from ..origins import host_allowed, origin_allowed
from .events import EventStore, MemoryEventStore
from .host import Connection, Host
from .http_session import HttpSession
from .middleware import Endpoints, HttpMiddleware
from .replies import VERDICTS_KEPT, on_client_gone
from .sessions import MemorySessionTable, SessionTable
from .shared import SharedSessions, table_call
from .shares import (
    DEFAULT_HANDLER_SHARE,
    DEFAULT_REQUEST_SHARE,
    DEFAULT_SESSION_SHARE,
    IN_FLIGHT_KEY,
    ClientCounts,
    ClientStreams,
    CountedPool,
    cap_of,
    check_share_setting,
    client_of,
    once,
    peer_of,
    request_cap,
    too_many_requests,
)
from .status import (
    BadRequest,
    Forbidden,
    HttpError,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    ServiceUnavailable,
    TooManyRequests,
    UnsupportedMediaType,
)
from .streams import Stream
from .worker_threads import StreamShare

log = logging.getLogger(__name__)

#: 2025-06-18 basic/transports §Protocol Version Header: "If the server does not receive an
#: MCP-Protocol-Version header, and has no other way to identify the version ... the server
#: SHOULD assume protocol version 2025-03-26."
ASSUMED_VERSION = "2025-03-26"


#: Why a long-lived stream is refused under a WSGI server that runs one request at a time per
#: worker process (``wsgi.multithread`` false: gunicorn's default ``sync`` worker): the stream
#: would hold the worker, and every other request waits (or the worker is killed at its timeout).
SINGLE_THREADED = (
    "this WSGI server runs one request at a time per worker (wsgi.multithread is false, e.g. "
    "gunicorn's default sync worker), where a long-lived stream would hold the worker until its "
    "timeout; requests and their answers work as they are; for server-initiated messages serve "
    "with threads (gunicorn -k gthread --threads 8)"
)


#: The undelivered bytes one SSE stream (a session's GET stream, a POST's) holds at most
#: (``backlog_bytes``), as the backlogs bound its messages: a client that never reads cannot make
#: the server hold more for it than this (and the one message that overflows it).  Past it the
#: stream is full: on HTTP+SSE new POSTs get 503 (backpressure), an answer to a POST accepted
#: before is queued all the same, and a message of the server's own that finds no room ends the
#: session; elsewhere a message other than a POST's answer is dropped, with a log line.
DEFAULT_BACKLOG_BYTES = 4 * 1024 * 1024

#: The most of a body over ``max_body_size`` that is read and dropped before the 413 is sent, so
#: that a client which sends its whole body before it reads (httpx, most HTTP/1.1 clients) reads
#: the 413 instead of a reset.  RFC 9112 §9.6: a server that closes at once "risks" the client
#: not reading its last response.  A body declared larger is not read: its 413 is sent at once,
#: and the WSGI server closes the connection.  Time is bounded by the WSGI server's body deadline
#: (``ConnectionLimits.body_timeout``, 30 s; gunicorn's ``timeout``).
DISCARD_LIMIT = 64 * 1024 * 1024
#: How much of it is read at a time (what it costs in memory).
DISCARD_CHUNK = 64 * 1024


def discard_body(body: Any, length: int) -> None:
    """Read and drop a refused request's declared body (``wsgi.input``): ``length`` bytes,
    unless that is over :data:`DISCARD_LIMIT`."""
    left = length
    if left > DISCARD_LIMIT:
        return
    try:
        while left > 0:
            chunk = body.read(min(DISCARD_CHUNK, left))
            if not chunk:
                return
            left -= len(chunk)
    except (OSError, ValueError):  # the client went, or its deadline passed: nothing to answer
        return


def default_chain(app: Any) -> list[HttpMiddleware]:
    """The chain of an application: the OAuth resource server's steps (only with ``app.auth``),
    then each extension's of the server (``Extension.http_middleware(app)``), in order."""
    extensions = list(app.server.extensions)
    if app.auth is not None:
        from .protected import ResourceServer  # only for a protected resource

        extensions.insert(0, ResourceServer(app.auth))
    return [step for extension in extensions for step in extension.http_middleware(app)]


class HttpAppBase:
    """The shared machinery of :class:`~.app.McpWsgiApp` (see its options)."""

    _pool: ThreadPoolExecutor | None = None
    _told_single_threaded = False

    def __init__(
        self,
        server: Host,
        *,
        path: str = "/mcp",
        sse_path: str = "/sse",
        messages_path: str = "/messages",
        legacy_sse: bool = True,
        stateless: bool = False,
        json_response: bool | None = None,
        event_store: EventStore | None = None,
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        max_body_size: int = 4 * 1024 * 1024,
        session_idle_timeout: float = 30 * 60,
        max_sessions: int = 1000,
        max_sessions_per_client: int | float | None = DEFAULT_SESSION_SHARE,
        handshake_timeout: float = 30.0,
        retry_ms: int = 1000,
        keepalive: float = 15.0,
        standalone_backlog: int = 1000,
        stream_backlog: int = 1000,
        backlog_bytes: int | None = DEFAULT_BACKLOG_BYTES,
        inline_handlers: bool = True,
        handler_threads: int = 64,
        max_handlers_per_client: int | float | None = DEFAULT_HANDLER_SHARE,
        max_streams_per_client: int | None = 32,
        max_requests_per_client: int | float | None = DEFAULT_REQUEST_SHARE,
        max_streams: int | None = None,
        worker_threads: int | None = None,
        auth=None,
        session_table: SessionTable | None = None,
    ):
        self.server = server
        server.serves()  # what is registered from now on (an admin route, a thread) is a change, announced
        self.path = path
        self.sse_path = sse_path
        self.messages_path = messages_path
        self.legacy_sse = legacy_sse
        self.stateless = stateless
        self.json_response = json_response
        # Both or neither: sessions of this process's own in a shared table would be swept by other workers.
        shared = server.shared_state
        if (
            not stateless
            and event_store is None
            and session_table is None
            and getattr(shared, "shared", False)
        ):
            # A deployment's shared state keeps the sessions and their events where every worker reads them.
            event_store = shared.event_store(expire_after=session_idle_timeout)
            session_table = shared.session_table(
                max_sessions=max_sessions,
                idle_timeout=session_idle_timeout,
                handshake_timeout=handshake_timeout,
            )
        self.event_store = event_store if event_store is not None else MemoryEventStore()
        self.allowed_hosts = None if allowed_hosts is None else list(allowed_hosts)
        self._hosts_seen: dict[str, bool] = {}  # Host value -> allowed (bounded: _VERDICTS_KEPT)
        self.allowed_origins = None if allowed_origins is None else list(allowed_origins)
        self.max_body_size = max_body_size
        self.session_idle_timeout = session_idle_timeout
        self.max_sessions = max_sessions
        self.handshake_timeout = handshake_timeout
        self.retry_ms = retry_ms
        self.keepalive = keepalive
        self.standalone_backlog = standalone_backlog
        self.stream_backlog = stream_backlog
        self.backlog_bytes = backlog_bytes
        self.inline_handlers = inline_handlers
        self.handler_threads = handler_threads
        #: Long-lived streams (``subscriptions/listen`` POSTs, GET streams) one client may hold open
        #: at once: per principal with a token, else per address; past it, 429 (``hold_stream``).
        self.max_streams_per_client = max_streams_per_client
        self._streams = ClientStreams(self)
        #: POSTs one client may have in flight at once (:mod:`.shares`): an int, a float share of
        #: the WSGI server's slots (a quarter by default), or None; past it, 429 (``hold_request``).
        check_share_setting(max_requests_per_client)
        self.max_requests_per_client = max_requests_per_client
        self._requests = ClientCounts()
        #: Sessions one client may hold in this process (:meth:`_hold_client_session`): an int, or a
        #: float share of ``max_sessions`` (a tenth by default); None: no cap.
        check_share_setting(max_sessions_per_client, "max_sessions_per_client", "max_sessions")
        self.max_sessions_per_client = cap_of(max_sessions_per_client, max_sessions)
        self._client_sessions = ClientCounts()
        #: Handlers one client may have queued or running on the shared pool at once
        #: (:meth:`share_handlers`): an int, or a float share of ``handler_threads`` (a quarter by
        #: default); None: no cap.
        check_share_setting(max_handlers_per_client, "max_handlers_per_client", "handler_threads")
        self.max_handlers_per_client = cap_of(max_handlers_per_client, handler_threads)
        self._handlers = ClientCounts()
        #: Long-lived streams of every client together: at most ``max_streams``, else half the WSGI
        #: worker's threads when they are known (``worker_threads``, or gunicorn's hooks); past it,
        #: 503 (:mod:`.worker_threads`).
        self.stream_share = StreamShare(max_streams, worker_threads)
        #: A ``mcp_ref.oauth.resource.ProtectedResource``: every MCP request needs its bearer token.
        self.auth = auth
        #: The sessions of this process, by id: their streams and connections (live objects).
        self.sessions: dict[str, HttpSession] = {}
        #: What any worker may ask of a session (exists, established, last seen): bounded, with expiry.
        self.session_table: SessionTable = (
            session_table
            if session_table is not None
            else MemorySessionTable(
                max_sessions=max_sessions,
                idle_timeout=session_idle_timeout,
                handshake_timeout=handshake_timeout,
            )
        )
        self._sessions_lock = threading.Lock()
        #: True when every worker serves every session (handshake era): the session table and the event
        #: store are shared (``Server(state="redis://...")``; see :mod:`.shared`).  Otherwise a session
        #: lives in the process that made it.
        self.shared = bool(
            getattr(self.session_table, "shared", False)
            and getattr(self.event_store, "shared", False)
        )
        self.shared_sessions = SharedSessions(self)
        #: The paths it serves (what a middleware step needs to know of the routing).
        self.endpoints = Endpoints(path, sse_path, messages_path)
        #: The HTTP middleware, in order (see :mod:`.middleware`): the OAuth resource server's steps
        #: (only with ``auth``), then those of the server's extensions (the rate limits' 429).
        self.middleware: list[HttpMiddleware] = default_chain(self)
        if stateless and not server.paginator.configured:
            # Stateless mode is for several workers, each of which must accept the others' cursors.
            log.warning(
                "%s: serving statelessly with no configured secret: a pagination cursor made by one "
                "worker is refused by the others; set MCP_REF_SECRET (or Server(secret=...)) to the same "
                "value for every worker",
                server.name,
            )
        self._last_sweep = time.monotonic()

    # -- the middleware's later stages -------------------------------------------------------

    def check_messages(self, environ: dict, messages: list, resource_path: str) -> None:
        """Stage 2 of the middleware: the parsed body, before a session is looked up (403 ``insufficient_scope``)."""
        for middleware in self.middleware:
            middleware.on_messages(environ, messages, resource_path)

    def admit(self, environ: dict, connection: Connection, message) -> None:
        """Stage 3 of the middleware: a message about to be dispatched on ``connection`` (429 over a rate limit)."""
        for middleware in self.middleware:
            middleware.on_admit(environ, connection, message)

    # -- security ------------------------------------------------------------------------

    def _check_host_and_origin(self, environ: dict) -> None:
        """2025-11-25 basic/transports §Security Warning: servers "MUST validate the Origin
        header on all incoming connections to prevent DNS rebinding attacks"."""
        host = environ.get("HTTP_HOST", "")
        allowed = self._hosts_seen.get(host)
        if allowed is None:
            allowed = host_allowed(host, self.allowed_hosts)
            # a client sends one Host: a flood of others is judged each time
            if len(self._hosts_seen) < VERDICTS_KEPT:
                self._hosts_seen[host] = allowed
                # once per host (bounded like the verdicts): a refused deployment says why
                if not allowed:
                    log.warning("%s", self._host_refusal(host))
        if not allowed:
            raise Forbidden(f"Forbidden: {self._host_refusal(host)}")
        origin = environ.get("HTTP_ORIGIN")
        if origin and not origin_allowed(origin, self.allowed_origins):
            raise Forbidden(
                f"Forbidden: origin {origin!r} is not allowed; a browser page served from it may "
                f"use this server only if it is listed in allowed_origins=[...] (McpWsgiApp, "
                f"Server.run_http, Server.wsgi_app)"
            )

    def _host_refusal(self, host: str) -> str:
        """Why ``host`` is refused, and what lets it in: ``allowed_hosts=`` (issue 23: a bare 403 left
        a deployment behind a real host name guessing)."""
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
        if not name:
            return "the request has no Host header (HTTP/1.1 requires one)"
        where = (
            "by default only local names (localhost, 127.0.0.1, ::1) are"
            if self.allowed_hosts is None
            else f"allowed_hosts is {self.allowed_hosts!r}"
        )
        return (
            f"host {host!r} is not allowed ({where}: DNS-rebinding protection); to serve it, pass "
            f"allowed_hosts=[{name!r}] to McpWsgiApp, Server.run_http or Server.wsgi_app "
            f"(['*'] allows any, for a server behind a proxy that checks Host itself)"
        )

    def bind(self, session: HttpSession, environ: dict) -> None:
        """A new session belongs to the principal that created it (its client and user).

        Without a token the caller is the session (``http-session:`` and a digest of its id: the id
        itself is a credential, kept out of logs), or, stateless, the peer's address.  Its
        per-caller limits count against the client that opened it (``session.client``, the peer's
        address: ``Principal.limit_id``), as a stateless request's do: a new session is free to
        open, and must not start the rate limits afresh (2025-11-25 server/tools §Security
        Considerations: servers MUST "Rate limit tool invocations")."""
        session.principal = environ.get("mcp_ref.oauth")
        connection = cast(Connection, session.connection)  # bound before it is called
        connection.auth = session.principal
        connection.client = session.client
        connection.peer = (
            peer_of(environ)
            if session.id is None
            else "http-session:" + hashlib.sha256(session.id.encode()).hexdigest()[:16]
        )

    def check_principal(self, session: HttpSession, environ: dict) -> None:
        """The same principal only: another's token on this session id gets 404, as if it did not exist."""
        caller = environ.get("mcp_ref.oauth")
        if session.principal is None and caller is None:
            return
        # compared by the canonical identity, as a replica on another worker compares its record's
        if principal_id_of(session.principal) != principal_id_of(caller):
            raise NotFound("Session not found: start a new session with initialize")
        cast(
            Connection, session.connection
        ).auth = caller  # the latest token's scopes (after a step-up)

    def refuse_if_single_threaded(self, environ: dict, what: str, request_id=None) -> None:
        """Refuse a long-lived stream (``what``) under a WSGI server with ``wsgi.multithread`` false.

        Streamable HTTP: 405 to the GET, as 2025-11-25 basic/transports §Listening for Messages
        allows: the server "MUST either return Content-Type: text/event-stream in response to this
        HTTP GET, or else return HTTP 405 Method Not Allowed, indicating that the server does not
        offer an SSE stream at this endpoint".  A 2026-07-28 ``subscriptions/listen`` (a POST) gets
        a JSON-RPC -32601 error with the same reason.  Logged once per application.
        """
        # PEP 3333 requires the key; absent: not known to be
        if environ.get("wsgi.multithread") is not False:
            return
        if not self._told_single_threaded:
            self._told_single_threaded = True
            log.warning("%s: %s refused: %s", self.server.name, what, SINGLE_THREADED)
        if request_id is not None:
            raise HttpError.modern(
                MethodNotFound(f"Method not found: {what} is not served here: {SINGLE_THREADED}"),
                request_id,
            )
        raise MethodNotAllowed(
            f"Method not allowed: {what} is not offered here: {SINGLE_THREADED}",
            headers=[("Allow", "POST, DELETE")],
        )

    # -- the body ------------------------------------------------------------------------

    def read_message(self, environ: dict):
        """The JSON-RPC message (or batch) a POST carries: 415, 413, 400 for what is not one."""
        content_type = environ.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise UnsupportedMediaType("Unsupported Media Type: the body must be application/json")
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            raise BadRequest("Bad Request: invalid Content-Length") from None
        if length > self.max_body_size:
            discard_body(environ["wsgi.input"], length)
            raise PayloadTooLarge(f"Payload Too Large: the limit is {self.max_body_size} bytes")
        body = environ["wsgi.input"].read(length or self.max_body_size + 1)
        if len(body) > self.max_body_size:
            # No Content-Length (chunked): not drained.  Its end is unknown, and a client that
            # stalls mid-body would hold this thread until the body deadline with no answer sent.
            raise PayloadTooLarge(f"Payload Too Large: the limit is {self.max_body_size} bytes")
        try:
            return jsonrpc.parse(body)
        except ParseError as exc:
            raise BadRequest(exc.message, PARSE_ERROR) from None
        except InvalidRequest as exc:  # a request's id read (one nested too deep): its answer's
            request_id = None if exc.answer else exc.request_id
            raise BadRequest(exc.message, request_id=request_id) from None

    def check_version(self, environ: dict) -> str:
        """The request's ``MCP-Protocol-Version`` (assumed 2025-03-26 when absent); 400 for one not spoken."""
        version = environ.get("HTTP_MCP_PROTOCOL_VERSION")
        if version is None:
            return ASSUMED_VERSION
        if version not in SUPPORTED_VERSIONS:
            # "If the server receives a request with an invalid or unsupported
            # MCP-Protocol-Version, it MUST respond with 400 Bad Request."
            raise BadRequest(f"Bad Request: unsupported MCP-Protocol-Version {version!r}")
        return version

    # -- sessions ------------------------------------------------------------------------

    def new_connection(self, transport: Any, name: str, client: str | None = None) -> Connection:
        """A connection of the server served on ``transport``, its handlers on the shared pool,
        counted as ``client``'s (``max_handlers_per_client``; shared sessions: its requests to the
        client numbered ``<worker>-<n>``, unique across workers)."""
        # a WSGI app has no start: its first connection enters the lifespan, which the app holds as
        # serving does until close() (mcp_ref.server.lifespan)
        self.server.enter_lifespan()
        pool = self._pool or self.handler_pool()  # made by the first connection
        counted = None if client is None else CountedPool(pool, self._handlers, client)
        options = {}
        if isinstance(transport, HttpSession):
            transport.jobs = counted
            if transport.shared:
                options["ids"] = self.shared_sessions.request_ids()
        executor = pool if counted is None else counted
        connection: Connection = self.server.new_connection(
            transport, executor=executor, name=name, **options
        )
        return connection

    def live_session(self, session_id: str) -> HttpSession | None:
        """The session ``session_id`` of this process, if there is one."""
        with self._sessions_lock:
            return self.sessions.get(session_id)

    def session_for(self, environ: dict) -> HttpSession:
        """The session a request names (``Mcp-Session-Id``): 400 without one, 404 for one unknown,
        ended or expired, or another principal's."""
        session_id = environ.get("HTTP_MCP_SESSION_ID")
        if not session_id:
            # basic/transports §Session Management: servers "SHOULD respond to requests without
            # an Mcp-Session-Id header (other than initialization) with HTTP 400 Bad Request".
            raise BadRequest("Bad Request: missing Mcp-Session-Id header")
        with self._sessions_lock:
            session = self.sessions.get(session_id)
        if session is not None and session.kind != "streamable":
            # a 2024-11-05 session is its stream's (at /sse and /messages), and this endpoint never
            # gave out its id: 2025-03-26 basic/transports §Session Management assigns a session
            # ID "at initialization time, by including it in an Mcp-Session-Id header on the HTTP
            # response containing the InitializeResult".  Answered as an unknown id (404); the
            # legacy session goes on, untouched.
            raise NotFound("Session not found: start a new session with initialize")
        if self.shared:
            return self._shared_session_for(environ, session_id, session)
        if session is None or session.closed or self._expired(session):
            if session is not None:
                self.end(session)
            # "The server MAY terminate the session at any time, after which it MUST respond to
            # requests containing that session ID with HTTP 404 Not Found."
            if session is None and self.server.shared_state is not None:
                # Several workers share a state, but not the sessions (a session table or an event store
                # of this process's own was given): a session lives in the worker that made it.
                raise NotFound(
                    "Session not found on this worker: a session lives in the worker that "
                    "created it; route by Mcp-Session-Id (sticky sessions), serve stateless, "
                    "or use the 2026-07-28 revision; start a new session with initialize"
                )
            raise NotFound("Session not found: start a new session with initialize")
        self.check_version(environ)
        self.check_principal(session, environ)
        # seen now, and established: it came back after initialize
        self.session_table.touch(session_id)
        session.last_used = time.monotonic()
        return self._same_version(environ, session)

    def _shared_session_for(
        self, environ: dict, session_id: str, session: HttpSession | None
    ) -> HttpSession:
        """:meth:`session_for` when every worker serves every session (:mod:`.shared`): the session of
        this process, or a replica built from its record; 404 once the table no longer has it."""
        self.check_version(environ)
        if session is None or session.closed:
            session = self.shared_sessions.replica(session_id, environ)
        else:
            self.check_principal(session, environ)
        # gone, or expired: everywhere (else up to date)
        if not self.shared_sessions.touch(session):
            self.end_here(session, for_good=True)
            self.shared_sessions.ended(session_id)  # every other worker holding it ends it too
            raise NotFound("Session not found: start a new session with initialize")
        self._reconcile()
        session.last_used = time.monotonic()
        self.shared_sessions.homes.mark_in_use(session)  # its maker never ends it as idle meanwhile
        # its home gone? then this worker sends its change notifications
        self.shared_sessions.homes.claim(session)
        return self._same_version(environ, session)

    @staticmethod
    def _same_version(environ: dict, session: HttpSession) -> HttpSession:
        version = environ.get("HTTP_MCP_PROTOCOL_VERSION")
        if version is not None and session.version is not None and version != session.version:
            # 2025-11-25 basic/transports §Protocol Version Header: the client sends "the protocol
            # version negotiated during initialization"; a different one is invalid for this session.
            raise BadRequest(
                f"Bad Request: MCP-Protocol-Version {version!r} is not the "
                f"version negotiated for this session ({session.version})"
            )
        return session

    def adopt(self, session: HttpSession) -> HttpSession:
        """Hold ``session`` (a replica just built) in this process, unless another request already
        built it: the one held is returned."""
        with self._sessions_lock:
            return self.sessions.setdefault(cast(str, session.id), session)

    def new_session(self, environ: dict, kind: str, name: str) -> HttpSession:
        """A new session with an id (``streamable`` or ``legacy``), made by :meth:`bound_session`,
        its place in the table held (:meth:`register` records it, :meth:`abandon` lets it go); 503
        when the table is full of sessions that all came back after ``initialize`` or are being
        initialized."""
        self._sweep()
        # basic/transports §Session Management: the session ID "SHOULD be globally unique and
        # cryptographically secure" and "MUST only contain visible ASCII characters".
        session_id = secrets.token_urlsafe(24)
        client_place = self._hold_client_session(client_of(environ))
        try:
            self._make_room(session_id)
        except BaseException:
            client_place()
            raise
        try:
            session = self.bound_session(environ, session_id, kind, f"{name}-{session_id[:8]}")
        except BaseException:
            client_place()
            self._let_place_go(session_id)
            raise
        session.client_place = client_place
        return session

    def _hold_client_session(self, client: str) -> Callable[[], None]:
        """A place among ``client``'s sessions (``max_sessions_per_client``), and its release.

        When the client holds as many as it may, its least recently used idle session (no request
        in progress, no client on its GET stream) is ended to make room: its client's next request
        on it gets 404, on which the client "MUST start a new session by sending a new
        InitializeRequest" (2025-11-25 basic/transports §Session Management), so a client that
        never DELETEs its sessions (most, when they exit or crash) is not locked out by its own
        leftovers, and never locks out others.  When every one of them is in use, 429 Too Many
        Requests (RFC 6585 §4: this client's excess, not the server's) with ``Retry-After``."""
        cap = self.max_sessions_per_client
        release = self._client_sessions.hold(client, cap)
        if release is None:
            victim = self._idlest_session_of(client)
            if victim is not None:
                log.info("a client holds %d sessions: ended its least recently used idle one", cap)
                self.end(victim)
                release = self._client_sessions.hold(client, cap)
        if release is None:
            raise TooManyRequests(
                f"Too many sessions: one client may hold {cap} on this server, and each of them is "
                "in use; end one (DELETE) or retry later",
                LIMIT_EXCEEDED,
                headers=[("Retry-After", "5")],
                data={"limit": cap},
            )
        return release

    @staticmethod
    def _free_client_place(session: HttpSession) -> None:
        """``session`` no longer counts among its client's (it ends, or never began)."""
        if session.client_place is not None:
            session.client_place()

    def _idlest_session_of(self, client: str) -> HttpSession | None:
        """``client``'s session made here that was used least recently and is idle now (no request
        in progress, no client on its GET stream; a legacy session is its stream), or None.

        Shared (:mod:`.shared`), a session is served and streamed by any worker: one that another
        live worker marks in use (a request running there, a GET following it there:
        ``Homes.mark_in_use``) is not idle either."""
        with self._sessions_lock:
            held = [
                session
                for session in self.sessions.values()
                if session.client == client and session.client_place is not None
            ]
        idle = sorted(
            (session for session in held if not session.in_use),
            key=lambda session: session.last_used,
        )
        homes = self.shared_sessions.homes
        return next(
            (session for session in idle if not (session.shared and homes.used_elsewhere(session))),
            None,
        )

    def bound_session(
        self, environ: dict, session_id: str | None, kind: str, name: str
    ) -> HttpSession:
        """A session of ``kind`` (``session_id`` None: one request's, no session the client names),
        its connection made (named ``name``) and bound to the caller of ``environ`` (:meth:`bind`)."""
        session = HttpSession(self, session_id, kind=kind)
        session.client = client_of(environ)  # its handlers' share of the pool, its sessions'
        session.connection = self.new_connection(session, name, session.client)
        self.bind(session, environ)
        return session

    def register(self, session: HttpSession) -> None:
        """A session the client may now name: in the table, and its connection live on the server
        (503 when its place in the table lapsed meanwhile and the table is full: abandoned)."""
        session_id = cast(str, session.id)  # stateful: it has an id
        if not self.shared:
            # The place new_session held lapses after handshake_timeout (the table then gives it
            # to another): an initialize that ran longer (a slow extension, a lifespan) takes one
            # again, or its session is abandoned, 503, rather than pushing the table past
            # max_sessions.
            try:
                self._make_room(session_id)
            except BaseException:
                self.abandon(session)
                raise
        with self._sessions_lock:
            self.sessions[session_id] = session
        if self.shared:
            try:
                # its record, for every worker; this one its home
                self.shared_sessions.record(session)
            except BaseException:
                self.end_here(session, for_good=True)
                self._let_place_go(session_id)
                raise
        else:
            self.session_table.add(session_id)
        self.server.add_connection(session.connection)  # the home sends its change notifications

    def abandon(self, session: HttpSession) -> None:
        """A session :meth:`new_session` made that will never be registered (its ``initialize``
        failed, or an error came first): its connection closed, its place in the table free, and
        its jobs still queued on the shared pool withdrawn (no one waits for their answers)."""
        if session.jobs is not None:
            session.jobs.withdraw()
        if session.connection is not None:
            session.connection.close()
        self._free_client_place(session)
        self._let_place_go(cast(str, session.id))

    def _let_place_go(self, session_id: str) -> None:
        """Free the place :meth:`new_session` held for ``session_id`` (a shared table that cannot be
        reached keeps it until its handshake timeout)."""
        try:
            self.session_table.remove(session_id)
        except ConnectionError:  # a shared store's fault (logged there): the hold expires by itself
            pass

    def transient_session(self, environ: dict) -> HttpSession:
        """Stateless mode: a session and a connection for one request, at the header's version."""
        version = self.check_version(environ)
        session = self.bound_session(environ, None, "stateless", "http-stateless")
        cast(Connection, session.connection).assume_initialized(version)
        return session

    def finish_transient(self, session: HttpSession) -> None:
        """A stateless request's connection ends with its response (a job of it still queued on
        the shared pool, its client gone, is withdrawn: no one waits for its answer)."""
        if session.kind == "stateless":
            if session.jobs is not None:
                session.jobs.withdraw()
            cast(Connection, session.connection).close()

    def handler_pool(self) -> ThreadPoolExecutor:
        """The one pool that runs the handlers of every session not run inline (``handler_threads``).

        Shared, so sessions do not each keep idle threads for their whole life; its
        queue is bounded per session by ``Session.max_incoming``.
        """
        if self._pool is None:
            with self._sessions_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(
                        max_workers=self.handler_threads, thread_name_prefix="mcp-http-handler"
                    )
        return self._pool

    def _expired(self, session: HttpSession) -> bool:
        """Idle too long, with no client listening on its stream (a session of the table has one)
        and no request in progress: a session whose request runs is in use, and its answer must
        reach the POST (2025-11-25 basic/transports §Sending Messages: to a request the server
        "MUST either return Content-Type: text/event-stream ... or Content-Type:
        application/json"), so it is seen now instead."""
        session_id = cast(str, session.id)
        if session.serving:
            self.session_table.touch(session_id)
            return False
        return cast(Stream, session.standalone).consumer is None and self.session_table.is_expired(
            session_id
        )

    def answered(self, session_id: str) -> None:
        """A request of session ``session_id`` was answered now: it is idle from here, not from
        when the request came (a shared table out of reach: its expiry stands)."""
        with contextlib.suppress(ConnectionError):
            self.session_table.touch(session_id)

    def _make_room(self, session_id: str) -> None:
        """Room for one more session, held for ``session_id``: when the table is full, the oldest
        session that never came back after ``initialize`` is ended (a flood of bare initializes
        cannot lock real clients out); when every session is established or being initialized,
        503.  One atomic step of the table: concurrent ``initialize``s never overshoot
        ``max_sessions``."""
        fits, evicted = table_call(self.session_table.make_room, session_id)
        if not fits:
            raise ServiceUnavailable(
                "Service Unavailable: too many sessions", headers=[("Retry-After", "5")]
            )
        if evicted is not None:
            log.info(
                "session table full (%d): ended a session that never came back after initialize",
                self.max_sessions,
            )
            self._ended_elsewhere_too(evicted)

    def _sweep(self) -> None:
        now = time.monotonic()
        if now - self._last_sweep < 1.0:
            return
        self._last_sweep = now
        # a shared table hands each expired id to one worker, which tells the others
        if self.shared:
            for held in self.shared_held():
                if held.serving:  # in use here: not idle, whatever the table's clock says
                    table_call(self.session_table.touch, cast(str, held.id))
            for session_id in table_call(self.session_table.expired):
                self._ended_elsewhere_too(session_id)
            self._reconcile()
            return
        for session_id in self.session_table.expired():
            session = self.live_session(session_id)
            if session is not None and self._expired(session):
                self.end(session)

    def _reconcile(self) -> None:
        """Shared: end the sessions this worker holds whose record is gone (an end it was not told of);
        at most every ``shared.RECONCILE_EVERY`` seconds (a request pays nothing in between)."""
        if not self.shared_sessions.reconcile_due():
            return
        for session in self.shared_sessions.reconcile(self.shared_held()):
            self.end_here(session, for_good=True)

    def shared_held(self) -> list[HttpSession]:
        """The sessions of this process served by every worker (:mod:`.shared`)."""
        with self._sessions_lock:
            return [session for session in self.sessions.values() if session.shared]

    def _ended_elsewhere_too(self, session_id: str) -> None:
        """The table no longer has ``session_id``: end it here, and (shared) on every worker."""
        session = self.live_session(session_id)
        if session is not None:
            self.end(session)
        elif self.shared:
            self.shared_sessions.ended(session_id)

    def end(self, session: HttpSession) -> None:
        """End ``session`` now, everywhere (its client deleted it; its stream, the whole legacy
        session, closed; it expired): out of the table, so every worker's next request for it
        gets 404.  A session ended already is left alone (a legacy stream's end comes twice: its
        body's last step, and its response's close)."""
        with self._sessions_lock:
            held_here = session.id is not None and self.sessions.get(session.id) is session
        if session.closed and not held_here:
            return
        self.end_here(session, for_good=True)
        if session.id is not None:
            self.session_table.remove(session.id)
            if self.shared:
                self.shared_sessions.ended(session.id)

    def end_here(self, session: HttpSession, *, for_good: bool = False) -> None:
        """End this process's hold of ``session``: its connection and streams (shared, its record
        stays for the other workers: this worker exits, or another ended it; ``for_good``: it ends
        everywhere, so no other worker is asked to become its home)."""
        with self._sessions_lock:
            if session.id is not None and self.sessions.get(session.id) is session:
                del self.sessions[session.id]
        if session.shared:
            self.shared_sessions.homes.let_go(session, for_good=for_good)
        self._free_client_place(session)  # its client may make another
        # its requests in progress answered first (SESSION_ENDED), then their handlers cancelled
        session.close()
        if session.connection is not None:
            session.connection.close()
            # no change notification is for it now, and no subscription of it counts (the
            # server holds it weakly: else it lingered until the garbage collector ran)
            self.server.remove_connection(session.connection)
            if for_good or not session.shared:  # else the other workers go on serving it
                session.connection.ended()  # its extensions are told (Extension.connection_ended)

    def end_session(self, session_id: str) -> bool:
        """End session ``session_id`` now, as if it had expired: the client's next request gets 404
        (shared: on every worker, wherever it was made).

        Returns False if there is no such session.
        """
        session = self.live_session(session_id)
        if session is None:
            if self.shared and table_call(self.session_table.remove, session_id):
                self.shared_sessions.ended(session_id)
                return True
            return False
        self.end(session)
        return True

    def close(self) -> None:
        """End every session and every 2026-07-28 listen stream (for a clean shutdown).

        The listen streams end gracefully: subscriptions §Graceful Closure, the server "SHOULD
        respond to the original subscriptions/listen request with a completion result before
        closing the stream".  Then the server's lifespan is exited (``Server(lifespan=...)``).
        """

        def mine(subscription: Any) -> bool:
            transport = subscription.connection.transport
            return isinstance(transport, HttpSession) and transport.app is self

        self.server.subscriptions.close_all(mine)
        with self._sessions_lock:
            sessions = list(self.sessions.values())
        for session in sessions:
            if self.shared and session.kind == "streamable":
                self.end_here(session)  # the other workers go on serving it
            else:
                self.end(session)
        self.shared_sessions.close()
        if self._pool is not None:
            self._pool.shutdown(wait=False)
        self.server.exit_lifespan()  # entered at the first connection: a WSGI app has no start (lifespan.py)

    # -- long-lived streams and clients that have gone ---------------------------------------

    def hold_stream(self, environ: dict, request_id=None) -> Callable[[], None]:
        """Count one long-lived stream against the worker's share of threads (``stream_share``:
        503 past it) and its client's ``max_streams_per_client`` (429); returns its release
        (idempotent)."""
        release_share = self.stream_share.hold(request_id)
        try:
            release_client = self._streams.hold(client_of(environ), environ, request_id)
        except BaseException:
            release_share()
            raise
        return once(release_client, release_share)

    def streams_held(self) -> int:
        """How many long-lived streams are open (every client's)."""
        return self._streams.counts.held()

    def hold_request(self, environ: dict) -> Callable[[], None]:
        """Count one POST against its client's ``max_requests_per_client`` until its response ends;
        returns its release (idempotent), also left in the environ for :meth:`hold_stream`.  Past
        the cap: 429 with ``Retry-After: 1`` and a JSON-RPC error -31005 with ``data.limit``, so
        that one client's slow calls cannot take every slot of the server (:mod:`.shares`)."""
        cap = request_cap(self.max_requests_per_client, environ)
        release = self._requests.hold(client_of(environ), cap)
        if release is None:
            log.debug("a client is over its share of requests in flight (%d): 429", cap)
            raise too_many_requests(cast(int, cap))
        environ[IN_FLIGHT_KEY] = release
        return release

    def share_handlers(
        self, session: HttpSession, items: list
    ) -> tuple[list, list, Callable[[], None]]:
        """The ``items`` of one POST whose handlers go to the shared pool (a 2024-11-05 message,
        a batch, ``inline_handlers=False``), within their client's ``max_handlers_per_client``:
        ``(kept, refused, release)``.  The requests past the cap are left out of ``kept`` (their
        answers, ``refused``: -31000 Server busy with ``data.limit``), so that one client cannot
        queue unbounded work on the pool every client's handlers run on.  Their places are held
        until ``release()``, called once the kept items are dispatched (each job then counts
        itself until it ends in the place it takes over: ``shares.CountedPool``)."""
        pooled = [
            item
            for item in items
            if isinstance(item, jsonrpc.Request) and not answered_at_once(item.method, item.params)
        ]
        cap = self.max_handlers_per_client
        client = cast(str, session.client)  # every session is bound to its client
        # held for its jobs, each of which takes one over at its submission (shares.CountedPool)
        places = self._handlers.hold_places(client, len(pooled), cap)
        release = places.release
        refused = pooled[places.left :]
        if not refused:
            return items, [], release
        log.debug("a client is over its share of the handler pool (%s): -31000", cap)
        busy = {
            "code": SERVER_BUSY,
            "message": f"Server busy: one client may have {cap} requests running or waiting on "
            "this server at once; retry when some have finished",
            "data": {"limit": cap},
        }
        left_out = {id(item) for item in refused}
        kept = [item for item in items if id(item) not in left_out]
        return kept, [ErrorResponse(item.id, busy) for item in refused], release

    def handlers_held(self, client: str | None = None) -> int:
        """How many handlers ``client`` has queued or running on the shared pool (None: every client's)."""
        return self._handlers.held(client)

    def requests_in_flight(self, client: str | None = None) -> int:
        """How many POSTs ``client`` has in flight (None: every client's)."""
        return self._requests.held(client)

    @staticmethod
    def watch(
        environ: dict, stream: Stream, token: object, end: Callable[[object], None] | None = None
    ) -> None:
        """Let the WSGI server end ``token``'s response when its client closes the connection,
        and, with ``end`` (a long-lived stream), to make room at its connection cap (``end(token)``;
        ``stream.leave`` ends it as a close does).  Under gunicorn, ``mcp_ref.on_disconnect`` is served from its socket
        (:mod:`.peers`); under a server with neither, a gone client is noticed at the stream's
        next keep-alive write.  (The hooks are the environ keys
        ``mcp_ref.on_disconnect`` and ``mcp_ref.long_lived``, the seam to the WSGI server: this
        package never imports one.)

        2026-07-28 basic/transports/streamable-http §Cancellation: "Closing the SSE response
        stream MUST be treated by the server as cancellation of that request": the consumer
        leaves, and the stream's ``settle`` cancels a stateless request.  A stateful (2025-11-25)
        stream is kept for a resuming GET instead: "Disconnection SHOULD NOT be interpreted as
        the client cancelling its request" (basic/transports §Sending Messages).
        """
        on_client_gone(environ, lambda: stream.leave(token))
        hold = environ.get("mcp_ref.long_lived")
        if hold is not None and end is not None:
            hold(client_of(environ), functools.partial(end, token))
