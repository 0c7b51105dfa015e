"""MCP over HTTP, server side: one WSGI application (PEP 3333).

It serves two transports at once:

* **Streamable HTTP** (2025-03-26 and later) at ``path`` (default ``/mcp``):
  POST carries one JSON-RPC message (or, where the revision allows, a batch);
  GET opens the standalone SSE stream for server-to-client messages; DELETE
  ends the session.
* **HTTP+SSE** (2024-11-05) at ``sse_path`` / ``messages_path`` (default
  ``/sse`` and ``/messages``): GET opens the stream, whose first event names
  the URL to POST messages to.

Each MCP session is a :class:`HttpSession`: the transport of one
:class:`~mcp_ref.server.ServerConnection`.  Outgoing messages are routed by
the request they relate to (see :meth:`~mcp_ref.core.session.Transport.write`):
answers, and what a handler sends while serving a request, go to that
request's POST stream; everything else to the standalone GET stream.  A
:class:`Stream` lives apart from any HTTP connection, so a client whose
connection dropped can resume it with ``Last-Event-ID`` from the event store.

The same application object runs on the standard library
(:func:`mcp_ref.server.Server.run_http`), under gunicorn, or mounted inside
Flask or Django.  ``stateless=True`` gives every request a fresh connection
and no session, so any worker process can answer any request.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import itertools
import json
import logging
import math
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Protocol, cast
from urllib.parse import parse_qs

from .. import MODERN_VERSIONS, SUPPORTED_VERSIONS
from ..core import envelope, jsonrpc, lifecycle
from ..core.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LIMIT_EXCEEDED,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
    HeaderMismatchError,
    InvalidParams,
    InvalidRequest,
    LimitExceeded,
    McpError,
    ParseError,
)
from ..core.jsonrpc import ErrorResponse, Request, Response
from ..core.transport import Transport
from ..extras.policy import Principal
from .http_headers import check_request_headers
from .origins import host_allowed, origin_allowed
from .sse import KEEPALIVE, sse_event

if TYPE_CHECKING:
    from ..server import Server, ServerConnection

log = logging.getLogger(__name__)

#: 2025-06-18 basic/transports §Protocol Version Header: "If the server does not receive an
#: MCP-Protocol-Version header, and has no other way to identify the version ... the server
#: SHOULD assume protocol version 2025-03-26."
ASSUMED_VERSION = "2025-03-26"

_END = object()
_CLOSE = object()  # ends the current connection of a stream, not the stream (SSE polling)


def _peer_of(environ: dict) -> str:
    """A caller without a token or a session: its address (``mcp_ref.extras.policy.Principal``)."""
    return "http-client:" + (environ.get("REMOTE_ADDR") or "unknown")


class HttpError(Exception):
    """An HTTP error answer with a JSON-RPC error body (its ``id`` omitted unless a request was read)."""

    def __init__(self, status: str, message: str, code: int = INVALID_REQUEST, headers: Iterable = (),
                 request_id=None, data=None):
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, list(headers)
        self.request_id, self.data = request_id, data

    @classmethod
    def modern(cls, exc: McpError, request_id) -> HttpError:
        """A 2026-07-28 error raised before the request reached its handler, with its HTTP status."""
        return cls(modern_status(exc.code, before_dispatch=True), exc.message, exc.code,
                   request_id=request_id, data=exc.data)


def modern_status(code: int, *, before_dispatch: bool = False) -> str:
    """The HTTP status of a 2026-07-28 JSON-RPC error (streamable-http §Protocol Version Header, §Server
    Validation; basic/index §_meta): 404 for an unknown method; 400 for a header mismatch, a missing
    client capability, an unsupported version, and a malformed envelope (checked before dispatch)."""
    if code == METHOD_NOT_FOUND:
        return "404 Not Found"
    if code in (HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION):
        return "400 Bad Request"
    if code == INVALID_PARAMS and before_dispatch:
        return "400 Bad Request"
    return "200 OK"


# -- event store ----------------------------------------------------------------------------


class EventStore(Protocol):
    """Where SSE events are kept so a dropped stream can be resumed (pluggable)."""

    def store(self, session_id: str, stream_id: str, data: bytes) -> str:
        """Keep one event of a stream; return its id (unique in the session, naming the stream)."""

    def replay_after(self, session_id: str, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The stream ``event_id`` belongs to and its events after it; None if unknown."""

    def forget(self, session_id: str) -> None:
        """Drop everything kept for a session."""


class MemoryEventStore:
    """The default event store: the last ``max_events`` events of each session, in memory."""

    def __init__(self, max_events: int = 1000):
        self.max_events = max_events
        self._events: dict[str, collections.OrderedDict] = {}
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def store(self, session_id: str, stream_id: str, data: bytes) -> str:
        event_id = f"{stream_id}.{next(self._counter)}"
        with self._lock:
            events = self._events.setdefault(session_id, collections.OrderedDict())
            events[event_id] = (stream_id, data)
            while len(events) > self.max_events:
                events.popitem(last=False)
        return event_id

    def replay_after(self, session_id: str, event_id: str):
        stream_id = event_id.rpartition(".")[0]
        with self._lock:
            events = self._events.get(session_id)
            if not stream_id or events is None or event_id not in events:
                return None
            after, seen = [], False
            for eid, (sid, data) in events.items():
                if seen and sid == stream_id:
                    after.append((eid, data))
                elif eid == event_id:
                    seen = True
        return stream_id, after

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._events.pop(session_id, None)


# -- streams and sessions --------------------------------------------------------------------


class Stream:
    """The messages of one SSE stream (a POST's, or the standalone one), apart from any connection.

    At most one HTTP response consumes it at a time: a newer one (a client
    resuming after a drop) takes over, so no message is sent on two streams.
    """

    def __init__(self, stream_id: str, answers: Iterable | None = None, limit: int | None = None):
        self.id = stream_id
        self.answers = set(answers) if answers is not None else None  # request ids that end it
        self.limit = limit  # undelivered messages it holds at most (None: no bound of its own)
        self.items: collections.deque = collections.deque()
        self.cond = threading.Condition()
        self.ended = False
        self.consumer: object | None = None
        self.dropped = 0  # messages refused since it became full (logged when it starts and when it ends)
        #: True once a response carried it and left with no other taking over (see HttpSession.settle)
        self.orphaned = False
        self.direct: _DirectReply | None = None  # while a POST runs its handler inline: writes go straight to it
        self.closing: object | None = None  # the consumer ended by ``leave(close=True)``
        self.status = "200 OK"  # of a JSON answer; a 2026-07-28 error answer sets its own (modern_status)

    def put(self, data: bytes, *, end: bool = False) -> bool:
        """Queue one message for the consumer; False (nothing queued) when the stream is full.

        The message that ends the stream (a POST's answer) is always queued, full or not: an
        answer is never dropped.  A stream already ended takes nothing more (dropped, logged).
        """
        with self.cond:
            if self.ended:
                log.debug("stream %s has ended: a late message was dropped", self.id)
                return True
            if self.limit is not None and len(self.items) >= self.limit and not end:
                self.dropped += 1
                return False
            if self.dropped:
                log.warning("stream %s has room again; %d messages were dropped while it was full", self.id, self.dropped)
                self.dropped = 0
            self.items.append(data)
            if end:
                self.items.append(_END)
                self.ended = True
            self.cond.notify_all()
            return True

    def full(self) -> bool:
        """True while the stream holds as many undelivered messages as it may."""
        with self.cond:
            return self.limit is not None and len(self.items) >= self.limit

    def close_connection(self) -> None:
        """End the HTTP response now serving this stream; later messages wait for a resuming GET."""
        with self.cond:
            self.items.append(_CLOSE)
            self.cond.notify_all()

    def end(self) -> None:
        with self.cond:
            if not self.ended:
                self.ended = True
                self.items.append(_END)
                self.cond.notify_all()

    def attach(self) -> object:
        token = object()
        with self.cond:
            self.consumer = token
            self.orphaned = False
            self.cond.notify_all()
        return token

    def detach(self, token: object) -> None:
        with self.cond:
            if self.consumer is token:
                self.consumer = None
                self.orphaned = True

    def leave(self, token: object, *, close: bool = False) -> None:
        """End consumer ``token``'s response now, from any thread (its client has gone, or room is
        needed): its ``take`` returns ``_END`` at once, or ``_CLOSE`` with ``close`` (a ``retry``
        event first: SSE polling).  The stream itself goes on, for a resuming GET."""
        with self.cond:
            if self.consumer is token:
                if close:
                    self.closing = token
                self.consumer = None
                self.orphaned = True
                self.cond.notify_all()

    def orphan(self) -> None:
        """The response that carried the stream has gone (or closed for SSE polling) without a successor."""
        with self.cond:
            if self.consumer is None:
                self.orphaned = True

    def take(self, token: object, timeout: float | None):
        """The next item for consumer ``token``: bytes, ``_END``, None on timeout, or ``_END`` if superseded."""
        with self.cond:
            while True:
                if self.consumer is not token:
                    return _CLOSE if self.closing is token else _END
                if self.items:
                    return self.items.popleft()
                if self.ended:
                    # its end was taken by the consumer before (a GET resuming just as the POST's own
                    # response finished): nothing more will come, so this response ends too
                    return _END
                if not self.cond.wait(timeout):
                    return None

    def drained_after_end(self) -> bool:
        with self.cond:
            return self.ended and len(self.items) == 1 and self.items[0] is _END


class HttpSession(Transport):
    """One MCP session over HTTP, and the transport of its ServerConnection."""

    concurrent_writes = True  # every POST writes on its own; no session-wide write lock needed

    def __init__(self, app: McpWsgiApp, session_id: str | None, *, kind: str = "streamable"):
        self.app = app
        self.id = session_id
        self.kind = kind  # "streamable", "stateless" or "legacy"
        self.lock = threading.Lock()
        self.by_request: dict = {}
        self.by_id: dict[str, Stream] = {}
        #: The GET stream (Streamable HTTP and the legacy transport; a stateless request has none).
        self.standalone = None if kind == "stateless" else Stream("s", limit=app.standalone_backlog)
        if self.standalone is not None:
            self.by_id["s"] = self.standalone
        self._numbers = itertools.count(1)
        self.last_seen = self.created = time.monotonic()
        #: True once the client came back after initialize (any request naming the session): until
        #: then the session is the first to go when the table is full, or after ``handshake_timeout``.
        self.established = False
        self.closed = False
        self.connection: ServerConnection | None = None
        #: Who created the session (``AccessInfo``) when the app is a protected resource; None otherwise.
        self.principal = None
        #: True for the one-request connection of a 2026-07-28 POST: its errors map to HTTP statuses.
        self.modern = False

    # the Transport protocol

    def write(self, data: bytes, message=None, related=None) -> None:
        """Route one outgoing message to the stream of the request it relates to."""
        answers = None
        if isinstance(message, (Response, ErrorResponse)):
            answers = [message.id]
        elif isinstance(message, list):
            answers = [m.id for m in message]
        with self.lock:
            stream = self.by_request.get(related) if related is not None else None
            end = False
            if stream is not None and answers is not None:
                for request_id in answers:
                    stream.answers.discard(request_id)
                    self.by_request.pop(request_id, None)
                end = not stream.answers
            elif stream is not None and stream.answers is not None and self.app.json_response:
                stream = None  # JSON-only replies: what is not the answer goes to the standalone stream
        if stream is None:
            if answers is not None and self.kind != "legacy":
                # basic/transports §Listening: the server "MUST NOT send a JSON-RPC response on the
                # [GET] stream unless resuming a stream associated with a previous client request".
                log.warning("dropped an answer whose request has no open stream (ids %s)", answers)
                return
            if self.kind == "stateless":
                log.debug("stateless mode: dropped a message that belongs to no request")
                return
            stream = cast(Stream, self.standalone)  # not stateless: it has one
        direct = stream.direct
        if self.modern and isinstance(message, ErrorResponse):
            stream.status = modern_status(cast(int, message.error.get("code")))
            if direct is not None:
                direct.status = stream.status
        if direct is not None and direct.send(data, end):
            return
        if not stream.put(data, end=end):
            self._overflow(stream, answers)
        elif end and stream.orphaned:
            self.settle(stream)  # the answer of a POST whose client has gone: keep it where a GET finds it

    def _overflow(self, stream: Stream, answers) -> None:
        """The stream is full (its client reads too slowly, or not at all): never lose a message in silence.

        On the legacy transport the stream is the whole connection and carries the answers: the
        session is ended, with the reason logged (its client reconnects and starts again).  On
        Streamable HTTP the standalone stream carries only notifications and requests outside any
        POST: the message is dropped with a log line.
        """
        if self.kind == "legacy":
            log.warning("legacy session %s: its event stream holds %d undelivered messages (the client reads "
                        "too slowly); the session is ended rather than lose an answer", (self.id or "")[:8], stream.limit)
            self.app.end_session(cast(str, self.id))  # a legacy session has an id
        else:
            if stream.dropped == 1:  # once a spell: a client that stopped reading must not flood the log
                log.warning("session %s: stream %s is full (%d undelivered messages: its client reads too slowly "
                            "or has gone); its messages other than the answer are dropped until there is room",
                            (self.id or "")[:8], stream.id, stream.limit)

    def request_finished(self, request_id) -> None:
        """A request ended with no answer (it was cancelled): end its stream if nothing else waits."""
        with self.lock:
            stream = self.by_request.pop(request_id, None)
            if stream is None:
                return
            stream.answers.discard(request_id)
            done = not stream.answers
        if done:
            stream.end()
            self.settle(stream)

    def close_stream(self, request_id) -> bool:
        """Close the connection carrying ``request_id``'s stream, keeping the stream (SSE polling).

        2025-11-25 basic/transports §Sending Messages: "the server MAY close the connection
        (without terminating the SSE stream) at any time"; the client resumes with GET and
        Last-Event-ID after ``retry``.  Returns False if the request has no open stream.
        """
        with self.lock:
            stream = self.by_request.get(request_id)
        if stream is None or self.kind != "streamable":
            return False
        direct = stream.direct
        if direct is not None:
            direct.close_connection()
        else:
            stream.close_connection()
        return True

    def read(self) -> bytes | None:
        raise RuntimeError("HTTP sessions are fed by the WSGI application, not read")

    def close(self) -> None:
        """End every stream; the session is gone."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            streams = list(self.by_id.values())
        for stream in streams:
            stream.end()
        if self.id is not None:
            self.app.event_store.forget(self.id)

    # streams

    def open_stream(self, request_ids: list) -> Stream:
        """A stream for the answers to ``request_ids`` (registered before they are dispatched)."""
        stream = Stream(f"p{next(self._numbers)}", answers=request_ids, limit=self.app.stream_backlog)
        with self.lock:
            if any(request_id in self.by_request for request_id in request_ids):
                # basic §Requests: an id "MUST NOT have been previously used by the requestor
                # within the same session" — and its answer must not be routed to another POST.
                raise HttpError("400 Bad Request", "Invalid Request: a request with this id is already in progress")
            for request_id in request_ids:
                self.by_request[request_id] = stream
            self.by_id[stream.id] = stream
        return stream

    def settle(self, stream: Stream) -> None:
        """A POST's stream with no one reading it: keep only what someone can still receive.

        Called when its consumer leaves and when it ends.  Stateless, nothing can resume it, so
        no one can receive its answer: the handlers of its requests are cancelled (``stream.answers``)
        and it is forgotten.  Otherwise a client may resume it with GET and ``Last-Event-ID``
        (2025-11-25 basic/transports §Resumability): while its requests run it stays, its
        backlog bounded by ``stream_backlog``; once ended, what it still holds moves to the
        event store (bounded per session) and the stream is forgotten, so dead streams do not
        pile up in a session.
        """
        if stream is self.standalone:
            return
        if self.kind == "stateless":
            with stream.cond:
                if not stream.orphaned:
                    return
                pending = list(stream.answers or ()) if not stream.ended else []
                stream.ended = True
                stream.items.clear()
                stream.items.append(_END)
            for request_id in pending:
                if self.connection is not None and self.connection.session.cancel_incoming(request_id):
                    log.debug("stateless request %r cancelled: its client has gone and nothing can resume it", request_id)
            self.forget_stream(stream)
            return
        with stream.cond:
            if not stream.orphaned or not stream.ended:
                return
            undelivered = [item for item in stream.items if isinstance(item, bytes)]
            stream.items.clear()
            stream.items.append(_END)  # a GET that took the stream just before still sees its end
            for data in undelivered:
                self.app.event_store.store(cast(str, self.id), stream.id, data)  # not stateless: it has an id
        self.forget_stream(stream)

    def forget_stream(self, stream: Stream) -> None:
        with self.lock:
            if stream is not self.standalone:
                self.by_id.pop(stream.id, None)

    @property
    def version(self) -> str | None:
        return self.connection.protocol_version if self.connection is not None else None


# -- the application ----------------------------------------------------------------------------


class McpWsgiApp:
    """The WSGI application serving one :class:`~mcp_ref.server.Server` over HTTP.

    Options: ``path`` (the Streamable HTTP endpoint), ``sse_path`` and
    ``messages_path`` (the 2024-11-05 transport; ``legacy_sse=False`` turns it
    off), ``stateless``, ``json_response`` (None: JSON unless the handler
    streams; True: always JSON; False: always SSE), ``event_store``,
    ``allowed_hosts`` / ``allowed_origins`` (DNS-rebinding protection; ``["*"]``
    allows any), ``max_body_size``, ``session_idle_timeout`` (seconds),
    ``max_sessions`` (when full, the oldest session that never came back after
    ``initialize`` makes room; if every session did, 503), ``handshake_timeout``
    (seconds a session that never came back after ``initialize`` is kept),
    ``retry_ms`` (the SSE ``retry`` hint), ``keepalive``
    (seconds between comment lines on idle streams), ``standalone_backlog`` and
    ``stream_backlog`` (undelivered messages a GET's or a POST's stream holds; see
    ``spec_notes/security.md`` for what happens past them), ``inline_handlers`` (True:
    a POSTed request's handler runs on the POST's own thread, the fastest path;
    False: on the session's pool, with the POST thread relaying its stream —
    then ``Context.close_sse_stream()`` ends the HTTP response at once),
    ``handler_threads`` (the one pool, shared by every session, for handlers not
    run inline: batches, the legacy transport, ``inline_handlers=False``),
    ``max_streams_per_client`` (long-lived streams, ``subscriptions/listen`` POSTs and GET
    streams, one client may hold open at once: per principal with a token, else per
    address; past it 429 with ``Retry-After``; None: no cap), ``auth``
    (a :class:`~mcp_ref.auth.resource.ProtectedResource`: the server becomes an OAuth
    protected resource; see ``spec_notes/authorization.md``).
    """

    def __init__(
        self,
        server: Server,
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
        handshake_timeout: float = 30.0,
        retry_ms: int = 1000,
        keepalive: float = 15.0,
        standalone_backlog: int = 1000,
        stream_backlog: int = 1000,
        inline_handlers: bool = True,
        handler_threads: int = 64,
        max_streams_per_client: int | None = 32,
        auth=None,
    ):
        self.server = server
        self.path = path
        self.sse_path = sse_path
        self.messages_path = messages_path
        self.legacy_sse = legacy_sse
        self.stateless = stateless
        self.json_response = json_response
        self.event_store = event_store or MemoryEventStore()
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
        self.inline_handlers = inline_handlers
        self.handler_threads = handler_threads
        #: Long-lived streams (``subscriptions/listen`` POSTs, GET streams) one client may hold open
        #: at once: per principal with a token, else per address; past it, 429 (``_hold_stream``).
        self.max_streams_per_client = max_streams_per_client
        self._streams_held: dict[str, int] = {}
        self._streams_lock = threading.Lock()
        #: A ``mcp_ref.auth.resource.ProtectedResource``: every MCP request needs its bearer token.
        self.auth = auth
        self.sessions: dict[str, HttpSession] = {}
        self._sessions_lock = threading.Lock()
        if stateless and not server.paginator.configured:
            # Stateless mode is for several workers, each of which must accept the others' cursors.
            log.warning("%s: serving statelessly with no configured secret: a pagination cursor made by one "
                        "worker is refused by the others; set MCP_REF_SECRET (or Server(secret=...)) to the same "
                        "value for every worker", server.name)
        self._last_sweep = time.monotonic()
        self._pool: ThreadPoolExecutor | None = None

    # -- WSGI entry point ----------------------------------------------------------------

    def __call__(self, environ: dict, start_response):
        try:
            self._check_host_and_origin(environ)
            path = environ.get("PATH_INFO") or "/"
            method = environ["REQUEST_METHOD"]
            if self.auth is not None:
                answer = self._authorize(environ, start_response, path, method)
                if answer is not None:
                    return answer
            if path == self.path:
                handler = {"POST": self._post, "GET": self._get, "DELETE": self._delete}.get(method)
                if handler is None:
                    raise HttpError("405 Method Not Allowed", f"Method not allowed: {method}",
                                    headers=[("Allow", "GET, POST, DELETE")])
                return handler(environ, start_response)
            if self.legacy_sse and path == self.sse_path and method == "GET":
                return self._legacy_stream(environ, start_response)
            if self.legacy_sse and path == self.messages_path and method == "POST":
                return self._legacy_post(environ, start_response)
            raise HttpError("404 Not Found", f"Not found: {path}")
        except HttpError as exc:
            return _error(start_response, exc)

    # -- security ------------------------------------------------------------------------

    def _authorize(self, environ: dict, start_response, path: str, method: str):
        """The OAuth protected resource (``auth``): its metadata, and the bearer token of every MCP request.

        Returns a finished answer (the metadata), or None to go on, with the caller's
        ``AccessInfo`` in ``environ["mcp_ref.auth"]``; raises HttpError for 401 / 403.
        """
        from ..auth.resource import METADATA_PREFIX, Challenge

        if method == "GET" and path in (METADATA_PREFIX, METADATA_PREFIX + self.path, METADATA_PREFIX + self.sse_path):
            # RFC 9728 §3.1: the metadata of the resource at PATH is at the well-known prefix + PATH.
            resource_path = path[len(METADATA_PREFIX):] or self.path
            body = json.dumps(self.auth.metadata(environ, resource_path)).encode()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        if path not in (self.path, self.sse_path, self.messages_path):
            return None
        resource_path = self.sse_path if path == self.messages_path else path
        try:
            environ["mcp_ref.auth"] = self.auth.authenticate(environ, resource_path)
        except Challenge as challenge:
            raise HttpError(challenge.status, challenge.message, headers=[("WWW-Authenticate", challenge.www_authenticate)]) from None
        return None

    def _check_scopes(self, environ: dict, items: list, path: str) -> None:
        """2025-11-25 §Scope Challenge Handling: a request for a tool, resource or prompt that needs
        scopes the token lacks gets 403 ``insufficient_scope`` naming them, before it runs, so the
        client can step up (``Server.tool(scopes=...)``)."""
        caller = environ.get("mcp_ref.auth")
        if self.auth is None or caller is None:
            return
        principal = Principal.of(caller, "")  # an item hidden from it needs no scope (mcp_ref.extras.policy)
        missing: set[str] = set()
        for item in items:
            if isinstance(item, Request):
                missing.update(self.server.required_scopes(item.method, item.params, principal))
        if missing:
            challenge = self.auth.insufficient_scope(environ, path, missing)
            raise HttpError(challenge.status, challenge.message, headers=[("WWW-Authenticate", challenge.www_authenticate)])

    def _bind(self, session: HttpSession, environ: dict) -> None:
        """A new session belongs to the principal that created it (its client and user).

        Without a token the caller is the session (``http-session:`` and a digest of its id: the id
        itself is a credential, kept out of logs), or, stateless, the peer's address."""
        session.principal = environ.get("mcp_ref.auth")
        connection = cast("ServerConnection", session.connection)  # bound before it is called
        connection.auth = session.principal
        connection.peer = (_peer_of(environ) if session.id is None else
                                   "http-session:" + hashlib.sha256(session.id.encode()).hexdigest()[:16])

    def _admit(self, connection: ServerConnection, message) -> None:
        """Count a POSTed request against the caller's rate limits before dispatch
        (mcp_ref.extras.policy): over a limit it is refused here with 429 Too Many Requests and
        ``Retry-After`` (RFC 6585 §4), its body the JSON-RPC error (-32005, ``data.retryAfter``)."""
        policy = self.server.policy
        if not policy.limits_requests or not isinstance(message, Request):
            return
        if message.method == "ping" and not envelope.is_modern(message.params):
            return  # answered by the session, never by the dispatcher: not counted (nor marked) at all
        try:
            policy.admit(connection.principal, message.method, message.params, self.server)
        except LimitExceeded as exc:
            retry = str(max(1, math.ceil(exc.retry_after or 1)))
            raise HttpError("429 Too Many Requests", exc.message, exc.code, headers=[("Retry-After", retry)],
                            request_id=message.id, data=exc.data) from None
        connection.mark_admitted(message.id)

    def _check_principal(self, session: HttpSession, environ: dict) -> None:
        """The same principal only: another's token on this session id gets 404, as if it did not exist."""
        caller = environ.get("mcp_ref.auth")
        if session.principal is None and caller is None:
            return
        if session.principal is None or caller is None or caller.principal != session.principal.principal:
            raise HttpError("404 Not Found", "Session not found: start a new session with initialize")
        session.connection.auth = caller  # the latest token's scopes (after a step-up)

    def _check_host_and_origin(self, environ: dict) -> None:
        """2025-11-25 basic/transports §Security Warning: servers "MUST validate the Origin
        header on all incoming connections to prevent DNS rebinding attacks"."""
        host = environ.get("HTTP_HOST", "")
        allowed = self._hosts_seen.get(host)
        if allowed is None:
            allowed = host_allowed(host, self.allowed_hosts)
            if len(self._hosts_seen) < _VERDICTS_KEPT:  # a client sends one Host: a flood of others is judged each time
                self._hosts_seen[host] = allowed
        if not allowed:
            raise HttpError("403 Forbidden", f"Forbidden: host {host!r} is not allowed")
        origin = environ.get("HTTP_ORIGIN")
        if origin and not origin_allowed(origin, self.allowed_origins):
            raise HttpError("403 Forbidden", f"Forbidden: origin {origin!r} is not allowed")

    # -- Streamable HTTP -------------------------------------------------------------------

    def _read_message(self, environ: dict):
        content_type = environ.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise HttpError("415 Unsupported Media Type", "Unsupported Media Type: the body must be application/json")
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            raise HttpError("400 Bad Request", "Bad Request: invalid Content-Length") from None
        if length > self.max_body_size:
            raise HttpError("413 Payload Too Large", f"Payload Too Large: the limit is {self.max_body_size} bytes")
        body = environ["wsgi.input"].read(length) if length else environ["wsgi.input"].read(self.max_body_size + 1)
        if len(body) > self.max_body_size:
            raise HttpError("413 Payload Too Large", f"Payload Too Large: the limit is {self.max_body_size} bytes")
        try:
            return jsonrpc.parse(body)
        except ParseError as exc:
            raise HttpError("400 Bad Request", exc.message, PARSE_ERROR) from None
        except InvalidRequest as exc:
            raise HttpError("400 Bad Request", exc.message, INVALID_REQUEST) from None

    def _post(self, environ: dict, start_response):
        # basic/transports §Sending Messages: "The client MUST include an Accept header,
        # listing both application/json and text/event-stream as supported content types."
        if not _accepts_json_and_sse(environ.get("HTTP_ACCEPT", "")):
            raise HttpError("406 Not Acceptable", "Not Acceptable: Accept must list application/json and text/event-stream")
        message = self._read_message(environ)
        if self._is_modern(environ, message):
            return self._modern_post(environ, start_response, message)
        items = message if isinstance(message, list) else [message]
        if any(isinstance(m, Request) and m.method == "initialize" for m in items):
            if isinstance(message, list):
                raise HttpError("400 Bad Request", "Invalid Request: initialize must not be part of a batch")
            return self._initialize(environ, start_response, message)
        request_ids = [m.id for m in items if isinstance(m, Request)]
        if not request_ids:
            return self._accept_without_requests(environ, start_response, message, items)
        self._check_scopes(environ, items, self.path)
        session = self._transient_session(environ) if self.stateless else self._session_for(environ)
        if isinstance(message, list) and not lifecycle.batches_allowed(session.version):
            self._finish_transient(session)
            raise HttpError("400 Bad Request", "Invalid Request: JSON-RPC batches are not supported by the negotiated protocol version")
        connection = cast("ServerConnection", session.connection)  # every session handed out is bound
        try:
            self._admit(connection, message)
        except HttpError:
            self._finish_transient(session)
            raise
        try:
            stream = session.open_stream(request_ids)
        except HttpError:  # e.g. an id already in use: it never reaches the dispatcher
            connection.admitted.pop(request_ids[0], None)
            raise
        if isinstance(message, Request) and self.inline_handlers:
            return self._answer_inline(session, stream, message, start_response, environ)
        connection.session.dispatch(message)  # a batch: its handlers run on the pool
        return self._answer(session, stream, start_response, environ)

    # -- the 2026-07-28 era: every request on its own ------------------------------------------

    @staticmethod
    def _is_modern(environ: dict, message) -> bool:
        """A 2026-07-28 POST: its header names a modern version, or its request's ``_meta`` names any.

        basic/versioning §Backward Compatibility: "A request carrying modern per-request _meta is
        served statelessly according to this revision."  A batch is never modern.
        """
        if isinstance(message, list):
            return False
        if environ.get("HTTP_MCP_PROTOCOL_VERSION", "").strip() in MODERN_VERSIONS:
            return True
        return isinstance(message, Request) and envelope.is_modern(message.params)

    def _modern_post(self, environ: dict, start_response, message):
        """Serve one 2026-07-28 POST: check its headers against its body, then answer it on this thread.

        No session is made or named (streamable-http: "An Mcp-Session-Id header on a request:
        ignore it, and do not mint or echo session IDs"); the connection lives as long as the POST.
        """
        if not isinstance(message, Request):
            # "This revision of the core protocol defines no client-to-server notifications over
            # Streamable HTTP": accepted, and there is nothing to do with them.
            start_response("202 Accepted", [("Content-Length", "0")])
            return [b""]
        try:
            modern = self._check_modern_headers(environ, message)
        except McpError as exc:
            raise HttpError.modern(exc, message.id) from None
        self._check_scopes(environ, [message], self.path)
        if message.method == "subscriptions/listen":
            # A long-lived stream (2026-07-28 streamable-http §Receiving Messages): its handler
            # acknowledges and defers, so no thread but this one waits; the stream carries the
            # change notifications, with keep-alive comments, until either side ends it.
            # It counts against its client's streams (max_streams_per_client, 429 past it); its
            # client closing it cancels it at once, and at the connection cap it may be ended
            # gracefully to make room (subscriptions §Graceful Closure: "respond to the original
            # subscriptions/listen request with a completion result before closing the stream").
            release = self._hold_stream(environ, message.id)
            try:
                session = HttpSession(self, None, kind="stateless")
                session.modern = True
                session.connection = self.server.new_connection(session, executor=self._handler_pool(), name="http-modern")
                session.connection.envelope_read = (message.id, modern)
                self._bind(session, environ)
                try:
                    self._admit(session.connection, message)
                except HttpError:
                    session.connection.session.close()
                    raise
                stream = session.open_stream([message.id])
                session.connection.session.dispatch(message)
                hub, connection = self.server.subscriptions, session.connection

                def end(token: object) -> None:
                    if not hub.close_all(lambda subscription: subscription.connection is connection):
                        stream.leave(token)  # not yet acknowledged: ended as a close would

                body = self._answer(session, stream, start_response, environ, end)
            except BaseException:
                release()
                raise
            return _held(body, release)
        exchange = ModernExchange(self, message.id, start_response)
        connection = self.server.new_connection(exchange, executor=self._handler_pool(), name="http-modern")
        connection.envelope_read = (message.id, modern)  # read once, here; not again by the connection
        connection.auth = environ.get("mcp_ref.auth")
        connection.peer = _peer_of(environ)
        exchange.connection = connection
        on_disconnect = environ.get("mcp_ref.on_disconnect")
        if on_disconnect is not None:
            on_disconnect(exchange.client_gone)
        try:
            self._admit(connection, message)
            connection.session.dispatch(message, inline=True)
        finally:
            connection.session.close()
        return exchange.finish()

    def _check_modern_headers(self, environ: dict, request: Request) -> envelope.Envelope:
        """The order the spec implies: the envelope's required fields (-32602), the version header
        against it (-32020), the version itself (-32022), then ``Mcp-Method`` / ``Mcp-Name`` /
        ``Mcp-Param-*`` against the body (-32020).  Returns the request's envelope."""
        meta = envelope.meta_of(request.params)
        if meta is None or envelope.PROTOCOL_VERSION not in meta or envelope.CLIENT_CAPABILITIES not in meta:
            raise InvalidParams(f"Invalid params: a {MODERN_VERSIONS[0]} request's _meta must carry "
                                f"{envelope.PROTOCOL_VERSION} and {envelope.CLIENT_CAPABILITIES}")
        header = environ.get("HTTP_MCP_PROTOCOL_VERSION")
        if header is None:
            raise HeaderMismatchError("Header mismatch: the MCP-Protocol-Version header is missing")
        if header.strip(" \t") != meta[envelope.PROTOCOL_VERSION]:
            raise HeaderMismatchError(f"Header mismatch: MCP-Protocol-Version {header.strip()!r} does not match "
                                      f"_meta {envelope.PROTOCOL_VERSION} {meta[envelope.PROTOCOL_VERSION]!r}")
        # -32022 for a version this server does not speak; never None: _meta names a version (checked above)
        modern = cast(envelope.Envelope, envelope.read_envelope(request.params))
        params = request.params if isinstance(request.params, dict) else {}
        declared = None
        if request.method == "tools/call" and isinstance(params.get("name"), str):
            tool = self.server.get_tool(params["name"])
            if self.server.policy.authorize is not None:
                # a hidden tool's declared headers are not checked: the mismatch would tell it exists.
                # Asked whether or not the tool exists, and only once: the dispatch, on this thread,
                # reuses the verdict (Policy.allows, ``request``), so hidden and missing cost the same.
                principal = Principal.of(environ.get("mcp_ref.auth"), _peer_of(environ))
                tool = self.server.policy.visible(principal, "tools/call", params["name"], tool, request.params)
            declared = tool.header_declarations if tool is not None else None
        check_request_headers(lambda name: environ.get(_cgi_name(name)), request.method, params, declared=declared)
        return modern

    def _accept_without_requests(self, environ: dict, start_response, message, items: list):
        """A POST of notifications, answers or invalid batch items: nothing to stream back.

        basic/transports §Sending Messages: "If the input is a JSON-RPC response or notification
        ... the server MUST return HTTP status code 202 Accepted with no body."  Invalid batch
        items are answered all the same, as JSON-RPC 2.0 §6 asks: an array of their errors.
        """
        session = None if self.stateless else self._session_for(environ)
        version = self._check_version(environ) if session is None else session.version
        if isinstance(message, list) and not lifecycle.batches_allowed(version):
            raise HttpError("400 Bad Request", "Invalid Request: JSON-RPC batches are not supported by the negotiated protocol version")
        valid = [m for m in items if not isinstance(m, InvalidRequest)]
        if session is not None and valid:  # stateless mode: notifications and answers reach no connection
            cast("ServerConnection", session.connection).session.dispatch(valid if isinstance(message, list) else valid[0])
        invalid = [m for m in items if isinstance(m, InvalidRequest)]
        if invalid:
            # Batches exist only before 2025-11-25, whose errors to an unreadable id carry "id": null.
            body = jsonrpc.serialize_items([ErrorResponse(m.request_id, m.to_error(), null_id=True) for m in invalid])
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        start_response("202 Accepted", [("Content-Length", "0")])
        return [b""]

    def _answer_inline(self, session: HttpSession, stream: Stream, request: Request, start_response,
                       environ: dict | None = None):
        """Serve a POSTed request on this thread: JSON if the handler sends only its answer,
        otherwise an SSE stream written as the handler goes (WSGI ``write``), so progress,
        logs and requests to the client reach it at once.  No hand-off to another thread.
        A client that closes the connection meanwhile is noticed at once (``_DirectReply.client_gone``)."""
        reply = _DirectReply(self, session, stream, start_response)
        stream.direct = reply
        on_disconnect = None if environ is None else environ.get("mcp_ref.on_disconnect")
        if on_disconnect is not None:
            on_disconnect(reply.client_gone)
        try:
            cast("ServerConnection", session.connection).session.dispatch(request, inline=True)
        finally:
            stream.direct = None
            if reply.broken:
                session.settle(stream)  # its answer waits for a resuming GET, in the event store
            else:
                # Answered on this response.  A GET that resumed the stream meanwhile (Last-Event-ID,
                # its client having closed this response after the answer) replayed the events from
                # the store and waits on the stream: end it, or that GET would wait for ever.
                stream.end()
                session.forget_stream(stream)
            self._finish_transient(session)
        return reply.finish()

    def _initialize(self, environ: dict, start_response, request: Request):
        if self.stateless:
            session = HttpSession(self, None, kind="stateless")
            connection = self.server.new_connection(session, executor=self._handler_pool(), name="http-stateless")
        else:
            self._sweep()
            if not self._make_room():
                raise HttpError("503 Service Unavailable", "Service Unavailable: too many sessions", headers=[("Retry-After", "5")])
            # basic/transports §Session Management: the session ID "SHOULD be globally unique and
            # cryptographically secure" and "MUST only contain visible ASCII characters".
            session_id = secrets.token_urlsafe(24)
            session = HttpSession(self, session_id)
            connection = self.server.new_connection(session, executor=self._handler_pool(), name=f"http-{session_id[:8]}")
        session.connection = connection
        self._bind(session, environ)
        stream = session.open_stream([request.id])
        connection.session.dispatch(request)
        token = stream.attach()
        answer = stream.take(token, None)
        stream.detach(token)
        session.forget_stream(stream)
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(answer)))]
        if session.kind == "stateless":
            self._finish_transient(session)
        elif b'"result"' in answer and connection.initialized:
            session_id = cast(str, session.id)  # not stateless: it has an id
            with self._sessions_lock:
                self.sessions[session_id] = session
            self.server.add_connection(connection)
            headers.append(("Mcp-Session-Id", session_id))
        else:
            connection.session.close()
        start_response("200 OK", headers)
        return [answer]

    def _answer(self, session: HttpSession, stream: Stream, start_response, environ: dict | None = None,
                end: Callable[[object], None] | None = None):
        """The HTTP response for a POSTed request: JSON if the answer comes first and alone, else SSE.

        Its client closing the connection ends it at once (``_watch``); with ``end``, it is a
        long-lived stream (``subscriptions/listen``) that ``end(token)`` ends to make room."""
        token = stream.attach()
        if environ is not None:
            self._watch(environ, stream, token, long_lived=end is not None, end=end)
        first = stream.take(token, None)
        if first is _END or (self.json_response is not False and stream.drained_after_end()):
            stream.detach(token)
            session.forget_stream(stream)
            self._finish_transient(session)
            if first is _END:  # cancelled: no answer will come
                start_response("202 Accepted", [("Content-Length", "0")])
                return [b""]
            start_response(stream.status, [("Content-Type", "application/json"), ("Content-Length", str(len(first)))])
            return [first]
        start_response("200 OK", _SSE_HEADERS)
        return self._events(session, stream, token, first)

    def _events(self, session: HttpSession, stream: Stream, token, first: bytes | None, replay=()):
        """The SSE body of a stream: a priming event (2025-11-25), then every message until its end."""
        try:
            if not replay:
                priming = self._priming(session, stream)
                if priming:
                    yield priming
            for event_id, data in replay:
                if data:
                    yield sse_event(data, event_id=event_id)
            item = first
            while True:
                if item is _END:
                    return
                if item is _CLOSE:
                    # "it SHOULD send an SSE event with a standard retry field before closing the connection"
                    # only a stateful stream is closed for polling (close_stream): its session has an id
                    yield sse_event(event_id=self.event_store.store(cast(str, session.id), stream.id, b""), retry=self.retry_ms)
                    return
                yield KEEPALIVE if item is None else self._event(session, stream, item)
                item = stream.take(token, self.keepalive)
        finally:
            stream.detach(token)
            session.settle(stream)
            self._finish_transient(session)

    def _priming(self, session: HttpSession, stream: Stream) -> bytes:
        """2025-11-25 basic/transports: the server "SHOULD immediately send an SSE event consisting
        of an event ID and an empty data field in order to prime the client to reconnect"."""
        if session.kind == "stateless" or not lifecycle.at_least(session.version, lifecycle.ICONS):
            return b""
        return sse_event(event_id=self.event_store.store(cast(str, session.id), stream.id, b""), retry=self.retry_ms)

    def _event(self, session: HttpSession, stream: Stream, data: bytes) -> bytes:
        """One message as an SSE event, kept in the event store (stateless streams cannot be resumed)."""
        if session.kind == "stateless":
            return sse_event(data)
        return sse_event(data, event_id=self.event_store.store(cast(str, session.id), stream.id, data))

    # -- long-lived streams and clients that have gone ---------------------------------------

    def _hold_stream(self, environ: dict, request_id=None) -> Callable[[], None]:
        """Count one long-lived stream against its client's ``max_streams_per_client``; returns
        its release (idempotent).  Past the cap: 429 Too Many Requests with ``Retry-After`` (RFC
        6585 §4: the client sent too many requests; a per-client limit, where 503 would say the
        whole server is unavailable) and a JSON-RPC error -32005 with ``data.limit``.

        The client is its principal when it has a token, else its address: one client cannot
        hold every connection slot with quiet streams while others are refused.
        """
        cap = self.max_streams_per_client
        client = _client_of(environ)
        with self._streams_lock:
            held = self._streams_held.get(client, 0)
            if cap is not None and held >= cap:
                raise HttpError("429 Too Many Requests", f"Too many open streams: one client may hold {cap} "
                                "(subscriptions/listen and GET streams); close one, or retry later",
                                LIMIT_EXCEEDED, headers=[("Retry-After", "5")], request_id=request_id,
                                data={"limit": cap})
            self._streams_held[client] = held + 1
        released = threading.Event()

        def release() -> None:
            with self._streams_lock:
                if released.is_set():
                    return
                released.set()
                left = self._streams_held.get(client, 1) - 1
                if left > 0:
                    self._streams_held[client] = left
                else:
                    self._streams_held.pop(client, None)

        return release

    def streams_held(self) -> int:
        """How many long-lived streams are open (every client's)."""
        with self._streams_lock:
            return sum(self._streams_held.values())

    @staticmethod
    def _watch(environ: dict, stream: Stream, token: object, *, long_lived: bool = False,
               end: Callable[[object], None] | None = None) -> None:
        """Let the WSGI server end ``token``'s response when its client closes the connection,
        and, ``long_lived``, to make room at its connection cap (``end(token)``, by default the
        same as a close).  Under a server without these hooks (gunicorn), a gone client is
        noticed at the stream's next keep-alive write, as before.

        2026-07-28 basic/transports/streamable-http §Cancellation: "Closing the SSE response
        stream MUST be treated by the server as cancellation of that request": the consumer
        leaves, and the stream's ``settle`` cancels a stateless request.  A stateful (2025-11-25)
        stream is kept for a resuming GET instead: "Disconnection SHOULD NOT be interpreted as
        the client cancelling its request" (basic/transports §Sending Messages).
        """
        on_disconnect = environ.get("mcp_ref.on_disconnect")
        if on_disconnect is not None:
            on_disconnect(lambda: stream.leave(token))
        hold = environ.get("mcp_ref.long_lived") if long_lived else None
        if hold is not None:
            hold(_client_of(environ), lambda: (end or stream.leave)(token))

    def _get(self, environ: dict, start_response):
        if self.stateless:
            raise HttpError("405 Method Not Allowed", "Method not allowed: stateless mode has no standalone stream",
                            headers=[("Allow", "POST")])
        if not _accepts(environ.get("HTTP_ACCEPT", ""), "text/event-stream"):
            raise HttpError("406 Not Acceptable", "Not Acceptable: Accept must list text/event-stream")
        session = self._session_for(environ)
        session_id = cast(str, session.id)  # from the session table: stateful, it has an id
        last_event_id = environ.get("HTTP_LAST_EVENT_ID")
        if not last_event_id or self.event_store.replay_after(session_id, last_event_id) is None:
            # No resumption (or an id this session never issued): the standalone stream, a
            # long-lived one (see _hold_stream, _watch).  At the connection cap it may be closed
            # with a retry: basic/transports §Listening, "The server MAY close the SSE stream at
            # any time", "sending a retry field and allowing the client to reconnect".
            release = self._hold_stream(environ)
            standalone = session.standalone
            assert standalone is not None  # a stateful session's
            token = standalone.attach()
            self._watch(environ, standalone, token, long_lived=True, end=_close_for_polling(standalone))
            start_response("200 OK", _SSE_HEADERS)
            return _held(self._events(session, standalone, token, None), release, lambda: standalone.detach(token))
        # basic/transports §Resumability: "the server MAY use this header to replay messages
        # that would have been sent after the last event ID, on the stream that was disconnected".
        with session.lock:
            stream = session.by_id.get(last_event_id.rpartition(".")[0])
        if stream is None:  # that stream has ended and been delivered, or never was: replay what is kept
            found = self.event_store.replay_after(session_id, last_event_id)
            start_response("200 OK", _SSE_HEADERS)
            return [sse_event(data, event_id=eid) for eid, data in (found[1] if found else ()) if data]
        long_lived = stream is session.standalone
        release = self._hold_stream(environ) if long_lived else _nothing
        # Take the stream over and read what it missed in one step: an event is either already
        # stored (and replayed here) or not yet sent (and queued for this consumer) — never lost.
        with stream.cond:
            token = stream.attach()
            found = self.event_store.replay_after(session_id, last_event_id)
        self._watch(environ, stream, token, long_lived=long_lived, end=_close_for_polling(stream))
        start_response("200 OK", _SSE_HEADERS)
        return _held(self._events(session, stream, token, None, found[1] if found else ()), release,
                     lambda: stream.detach(token))

    def _delete(self, environ: dict, start_response):
        if self.stateless:
            raise HttpError("405 Method Not Allowed", "Method not allowed: stateless mode has no sessions",
                            headers=[("Allow", "POST")])
        session = self._session_for(environ)
        self._end_session(session)
        start_response("200 OK", [("Content-Length", "0")])
        return [b""]

    # -- sessions ------------------------------------------------------------------------

    def _session_for(self, environ: dict) -> HttpSession:
        session_id = environ.get("HTTP_MCP_SESSION_ID")
        if not session_id:
            # basic/transports §Session Management: servers "SHOULD respond to requests without
            # an Mcp-Session-Id header (other than initialization) with HTTP 400 Bad Request".
            raise HttpError("400 Bad Request", "Bad Request: missing Mcp-Session-Id header")
        with self._sessions_lock:
            session = self.sessions.get(session_id)
        if session is None or session.closed or self._expired(session):
            if session is not None:
                self._end_session(session)
            # "The server MAY terminate the session at any time, after which it MUST respond to
            # requests containing that session ID with HTTP 404 Not Found."
            raise HttpError("404 Not Found", "Session not found: start a new session with initialize")
        version = environ.get("HTTP_MCP_PROTOCOL_VERSION")
        self._check_version(environ)
        self._check_principal(session, environ)
        session.established = True
        if version is not None and session.version is not None and version != session.version:
            # 2025-11-25 basic/transports §Protocol Version Header: the client sends "the protocol
            # version negotiated during initialization"; a different one is invalid for this session.
            raise HttpError("400 Bad Request", f"Bad Request: MCP-Protocol-Version {version!r} is not the "
                                               f"version negotiated for this session ({session.version})")
        session.last_seen = time.monotonic()
        return session

    def _check_version(self, environ: dict) -> str:
        version = environ.get("HTTP_MCP_PROTOCOL_VERSION")
        if version is None:
            return ASSUMED_VERSION
        if version not in SUPPORTED_VERSIONS:
            # "If the server receives a request with an invalid or unsupported
            # MCP-Protocol-Version, it MUST respond with 400 Bad Request."
            raise HttpError("400 Bad Request", f"Bad Request: unsupported MCP-Protocol-Version {version!r}")
        return version

    def _transient_session(self, environ: dict) -> HttpSession:
        version = self._check_version(environ)
        session = HttpSession(self, None, kind="stateless")
        session.connection = self.server.new_connection(session, executor=self._handler_pool(), name="http-stateless")
        session.connection.assume_initialized(version)
        self._bind(session, environ)
        return session

    def _finish_transient(self, session: HttpSession) -> None:
        """A stateless request's connection ends with its response."""
        if session.kind == "stateless":
            cast("ServerConnection", session.connection).session.close()

    def _handler_pool(self) -> ThreadPoolExecutor:
        """The one pool that runs the handlers of every session not run inline (``handler_threads``).

        Shared, so sessions do not each keep idle threads for their whole life; its
        queue is bounded per session by ``Session.max_incoming``.
        """
        if self._pool is None:
            with self._sessions_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(max_workers=self.handler_threads, thread_name_prefix="mcp-http-handler")
        return self._pool

    def _expired(self, session: HttpSession) -> bool:
        if cast(Stream, session.standalone).consumer is not None:  # a session of the table has one
            return False  # a client is listening on its stream
        idle = time.monotonic() - session.last_seen
        return idle > self.session_idle_timeout or (not session.established and idle > self.handshake_timeout)

    def _make_room(self) -> bool:
        """True when one more session fits; when the table is full, the oldest session that never
        came back after ``initialize`` is ended to make room (a flood of bare initializes cannot
        lock real clients out).  False when every session is established: the caller answers 503."""
        with self._sessions_lock:
            if len(self.sessions) < self.max_sessions:
                return True
            unproven = [s for s in self.sessions.values() if not s.established]
            if not unproven:
                return False
            victim = min(unproven, key=lambda s: s.created)
        log.info("session table full (%d): ended a session that never came back after initialize", self.max_sessions)
        self._end_session(victim)
        return True

    def _sweep(self) -> None:
        now = time.monotonic()
        if now - self._last_sweep < 1.0:
            return
        self._last_sweep = now
        with self._sessions_lock:
            expired = [s for s in self.sessions.values() if self._expired(s)]
        for session in expired:
            self._end_session(session)

    def _end_session(self, session: HttpSession) -> None:
        with self._sessions_lock:
            if session.id is not None:
                self.sessions.pop(session.id, None)
        if session.connection is not None:
            session.connection.session.close()
        session.close()

    def end_session(self, session_id: str) -> bool:
        """End session ``session_id`` now, as if it had expired: the client's next request gets 404.

        Returns False if there is no such session.
        """
        with self._sessions_lock:
            session = self.sessions.get(session_id)
        if session is None:
            return False
        self._end_session(session)
        return True

    def close(self) -> None:
        """End every session and every 2026-07-28 listen stream (for a clean shutdown).

        The listen streams end gracefully: subscriptions §Graceful Closure, the server "SHOULD
        respond to the original subscriptions/listen request with a completion result before
        closing the stream".
        """
        def mine(subscription) -> bool:
            transport = subscription.connection.session.transport
            return isinstance(transport, HttpSession) and transport.app is self

        self.server.subscriptions.close_all(mine)
        with self._sessions_lock:
            sessions = list(self.sessions.values())
        for session in sessions:
            self._end_session(session)
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    # -- HTTP+SSE, 2024-11-05 ------------------------------------------------------------------

    def _legacy_stream(self, environ: dict, start_response):
        """2024-11-05 basic/transports §HTTP with SSE: "When a client connects, the server MUST send
        an endpoint event containing a URI for the client to use for sending messages."""
        self._sweep()
        release = self._hold_stream(environ)  # a long-lived stream (see _hold_stream, _watch)
        try:
            if not self._make_room():
                raise HttpError("503 Service Unavailable", "Service Unavailable: too many sessions",
                                headers=[("Retry-After", "5")])
            session_id = secrets.token_urlsafe(24)
            session = HttpSession(self, session_id, kind="legacy")
            session.connection = self.server.new_connection(session, executor=self._handler_pool(), name=f"sse-{session_id[:8]}")
            self._bind(session, environ)
            with self._sessions_lock:
                self.sessions[session_id] = session
            self.server.add_connection(session.connection)
            stream = session.standalone
            assert stream is not None  # a legacy session's
            token = stream.attach()
            # The stream is the session: its client closing it, or the cap ending it, ends the session.
            self._watch(environ, stream, token, long_lived=True)
        except BaseException:
            release()
            raise
        endpoint = f"{environ.get('SCRIPT_NAME', '')}{self.messages_path}?session_id={session.id}"
        start_response("200 OK", _SSE_HEADERS)
        return _held(self._legacy_events(session, endpoint, token), release, lambda: self._end_session(session))

    def _legacy_events(self, session: HttpSession, endpoint: str, token: object):
        stream = cast(Stream, session.standalone)  # a legacy session's
        try:
            yield sse_event(endpoint.encode(), event="endpoint")
            while True:
                item = stream.take(token, self.keepalive)
                if item is _END:
                    return
                yield KEEPALIVE if item is None else sse_event(item, event="message")
        finally:
            # The stream is the session: when it closes, the session ends.
            stream.detach(token)
            self._end_session(session)

    def _legacy_post(self, environ: dict, start_response):
        session_id = parse_qs(environ.get("QUERY_STRING", "")).get("session_id", [None])[0]
        if not session_id:
            raise HttpError("400 Bad Request", "Bad Request: missing session_id")
        with self._sessions_lock:
            session = self.sessions.get(session_id)
        if session is None or session.kind != "legacy" or session.closed:
            raise HttpError("404 Not Found", "Session not found")
        self._check_principal(session, environ)
        if cast(Stream, session.standalone).full():  # a legacy session's
            # Backpressure: the stream that carries the answers is full; refuse new work until the
            # client has read it, rather than accept a request whose answer would have no room.
            raise HttpError("503 Service Unavailable", "Service Unavailable: the event stream is full; retry once "
                            "the client has read it", headers=[("Retry-After", "1")])
        message = self._read_message(environ)
        self._check_scopes(environ, message if isinstance(message, list) else [message], self.sse_path)
        session.last_seen = time.monotonic()
        session.established = True
        cast("ServerConnection", session.connection).session.dispatch(message)
        start_response("202 Accepted", [("Content-Type", "text/plain"), ("Content-Length", "8")])
        return [b"Accepted"]


class ModernExchange(Transport):
    """The transport of one 2026-07-28 POST: its answer, and the notifications about it, written
    straight into the HTTP response.

    A 2026-07-28 request has no session, no GET stream and no resumption (streamable-http), so
    none of :class:`HttpSession`'s tables are needed: the handler runs on the POST's thread, a
    notification before the answer turns the response into an SSE stream, the answer alone is a
    JSON reply (with the status :func:`modern_status` gives an error).  What arrives after the
    answer (a thread the handler left behind) is dropped.  A client that closes the stream
    cancels the request (§Cancellation: closing the stream "MUST be treated by the server as
    cancellation").
    """

    concurrent_writes = True

    def __init__(self, app: McpWsgiApp, request_id, start_response):
        self.app, self.request_id, self.start_response = app, request_id, start_response
        self.connection: ServerConnection | None = None
        self.lock = threading.Lock()
        self.answer: bytes | None = None
        self.status = "200 OK"
        self.write_sse: Callable[[bytes], object] | None = None  # the WSGI write callable, once streaming
        self.done = self.broken = self.answered = False

    def write(self, data: bytes, message=None, related=None) -> None:
        """Deliver one message of this request's; anything else (no other request shares the
        exchange) is dropped."""
        is_answer = isinstance(message, (Response, ErrorResponse))
        if (message.id if is_answer else related) != self.request_id:
            log.debug("2026-07-28 POST: dropped a message that is not about its request")
            return
        with self.lock:
            if self.done or self.broken or self.answered:
                return  # late (the answer ends the exchange), or the client has gone
            if is_answer:
                self.answered = True
                if isinstance(message, ErrorResponse):
                    self.status = modern_status(cast(int, message.error.get("code")))
                if self.write_sse is None:
                    self.answer = data  # the answer alone: a JSON reply, sent by finish()
                    return
            elif self.write_sse is None:
                if self.app.json_response:
                    return  # JSON replies only: what is not the answer has nowhere to go
                self.write_sse = self.start_response("200 OK", _SSE_HEADERS)
            write = self.write_sse
        try:
            write(sse_event(data))
        except Exception as exc:  # the client went away: that cancels the request
            log.debug("2026-07-28 POST %r lost its connection: %s", self.request_id, exc)
            self.broken = True
            if self.connection is not None:
                self.connection.session.cancel_incoming(self.request_id)

    def client_gone(self) -> None:
        """The client closed the connection while the handler runs (the WSGI server noticed it;
        called from its watchdog thread, so nothing here blocks or takes ``self.lock``, which a
        write holds).  2026-07-28 streamable-http §Cancellation: closing the stream "MUST be
        treated by the server as cancellation of that request", and the server "MUST NOT send
        any further messages for it"."""
        if self.done or self.broken:
            return
        self.broken = True
        log.debug("2026-07-28 POST %r: its client closed the connection; cancelled", self.request_id)
        if self.connection is not None:
            self.connection.session.cancel_incoming(self.request_id)

    def finish(self) -> list:
        """The WSGI body once the handler has returned."""
        with self.lock:
            self.done = True
            if self.write_sse is not None:
                return []  # streamed, answer included
            if self.answer is not None:
                self.start_response(self.status, [("Content-Type", "application/json"),
                                                  ("Content-Length", str(len(self.answer)))])
                return [self.answer]
        self.start_response("202 Accepted", [("Content-Length", "0")])  # cancelled: no answer
        return [b""]

    def read(self) -> bytes | None:
        raise RuntimeError("a 2026-07-28 POST is fed by the WSGI application, not read")

    def close(self) -> None:
        """Nothing to release: the response ends with :meth:`finish`."""


class _HeldStream:
    """The WSGI body of a long-lived stream: when the response ends (PEP 3333: the server calls
    ``close``, started or not), its client's count is released and ``cleanup`` runs."""

    def __init__(self, body, release: Callable[[], None], cleanup: Callable[[], None] | None = None):
        self.body, self.release, self.cleanup = body, release, cleanup

    def __iter__(self):
        return iter(self.body)

    def close(self) -> None:
        try:
            close = getattr(self.body, "close", None)
            if close is not None:
                close()
            if self.cleanup is not None:
                self.cleanup()
        finally:
            self.release()


def _held(body, release: Callable[[], None], cleanup: Callable[[], None] | None = None):
    """``body`` as a long-lived stream's (see :class:`_HeldStream`); a finished answer releases at once."""
    if isinstance(body, list):
        release()
        return body
    return _HeldStream(body, release, cleanup)


def _nothing() -> None:
    """Nothing to release."""


def _close_for_polling(stream: Stream) -> Callable[[object], None]:
    """How a GET stream is ended to make room: a ``retry`` event, then the connection closes;
    the stream goes on for the client's next GET (2025-11-25 basic/transports §Listening)."""
    return lambda token: stream.leave(token, close=True)


def _client_of(environ: dict) -> str:
    """Who holds a stream, for ``max_streams_per_client`` and the connection cap: the principal
    of the request's token, else the peer's address (``mcp_ref.extras.policy.Principal``)."""
    caller = environ.get("mcp_ref.auth")
    return _peer_of(environ) if caller is None else Principal.of(caller, "").id


class _DirectReply:
    """The response of a POST whose handler runs inline (see ``McpWsgiApp._answer_inline``)."""

    def __init__(self, app: McpWsgiApp, session: HttpSession, stream: Stream, start_response):
        self.app, self.session, self.stream, self.start_response = app, session, stream, start_response
        self.lock = threading.Lock()
        self.answer: bytes | None = None
        self.write: Callable[[bytes], object] | None = None  # the WSGI write callable, once streaming
        self.broken = False
        self.done = False  # finish() was called: the response belongs to the WSGI server now
        self.status = "200 OK"  # of a JSON answer; a 2026-07-28 error answer sets its own (modern_status)

    def send(self, data: bytes, end: bool) -> bool:
        """Deliver one message of the stream; False once the client has gone or resumed
        elsewhere (the message is then queued for the resuming GET instead)."""
        with self.lock:
            with self.stream.cond:  # atomic with a resuming GET's take-over (see McpWsgiApp._get)
                if self.done:
                    return False  # late: a thread the handler started; never write into a finished response
                if self.broken or self.stream.consumer is not None:
                    self.broken = True
                    return False
                if self.write is None:
                    if end and self.app.json_response is not False:
                        self.answer = data  # the answer alone: a JSON reply, sent by finish()
                        return True
                    self.write = self.start_response("200 OK", _SSE_HEADERS)
                    chunk = self.app._priming(self.session, self.stream) + self.app._event(self.session, self.stream, data)
                else:
                    chunk = self.app._event(self.session, self.stream, data)
            try:
                self.write(chunk)
            except Exception as exc:  # the client went away; the event is in the store
                # basic/transports: "Disconnection SHOULD NOT be interpreted as the client cancelling its request."
                log.debug("POST stream %s lost its connection: %s", self.stream.id, exc)
                self.broken = True
                self.stream.orphan()
                if self.session.kind == "stateless":
                    self.session.settle(self.stream)  # nothing can resume it: the handler is cancelled
            return True

    def client_gone(self) -> None:
        """The client closed the connection while the handler runs (the WSGI server noticed it;
        called from its watchdog thread, so nothing here blocks or takes ``self.lock``, which a
        write holds).  As when a write fails: what follows is queued for a resuming GET
        (basic/transports: "Disconnection SHOULD NOT be interpreted as the client cancelling its
        request"); stateless, nothing can resume it, so the handler is cancelled (``settle``)."""
        if self.done or self.broken:
            return
        self.broken = True
        log.debug("POST stream %s: its client closed the connection", self.stream.id)
        self.stream.orphan()
        if self.session.kind == "stateless":
            self.session.settle(self.stream)

    def close_connection(self) -> None:
        """SSE polling while the handler runs inline: send an event with ``retry``, then stop
        using this response; what follows is queued for the client's resuming GET.  (The
        response itself ends when the handler returns: a running WSGI call cannot end it.)"""
        with self.lock:
            with self.stream.cond:
                if self.broken:
                    return
                self.broken = True
                self.stream.orphaned = True  # under its lock: queued from here on, for the resuming GET
                if self.write is None:
                    self.write = self.start_response("200 OK", _SSE_HEADERS)
                # SSE polling is for stateful streams only (close_stream): the session has an id
                chunk = sse_event(event_id=self.app.event_store.store(cast(str, self.session.id), self.stream.id, b""),
                                  retry=self.app.retry_ms)
            try:
                self.write(chunk)
            except Exception:  # already gone: the client resumes all the same
                pass

    def finish(self) -> list:
        """The WSGI body once the handler has returned."""
        with self.lock:
            self.done = True
            if self.write is not None:
                return []
            if self.answer is not None:
                self.start_response(self.status, [("Content-Type", "application/json"), ("Content-Length", str(len(self.answer)))])
                return [self.answer]
            self.start_response("202 Accepted", [("Content-Length", "0")])  # cancelled: no answer
            return [b""]


_SSE_HEADERS = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache, no-transform"),
                ("X-Accel-Buffering", "no")]


@functools.lru_cache(maxsize=256)
def _cgi_name(header: str) -> str:
    """The WSGI environ key of an HTTP header (``Mcp-Name`` -> ``HTTP_MCP_NAME``); the few names a
    server looks up are kept (256 at most: header names come from the server's own tools)."""
    return "HTTP_" + header.upper().replace("-", "_")


def _error(start_response, exc: HttpError):
    error = {"code": exc.code, "message": exc.message}
    if exc.data is not None:
        error["data"] = exc.data
    answer = {"jsonrpc": "2.0", "error": error}
    if exc.request_id is not None:
        answer["id"] = exc.request_id
    body = json.dumps(answer).encode()
    start_response(exc.status, [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *exc.headers])
    return [body]


#: How many Accept (and, per application, Host) values are remembered with their verdicts:
#: clients send the same ones on every request; past the bound, new ones are judged each time.
_VERDICTS_KEPT = 256
_ACCEPT_VERDICTS: dict[str, bool] = {}


def _accepts_json_and_sse(accept: str) -> bool:
    """The Accept header of a POST lists both application/json and text/event-stream."""
    verdict = _ACCEPT_VERDICTS.get(accept)
    if verdict is None:
        verdict = _accepts(accept, "application/json") and _accepts(accept, "text/event-stream")
        if len(_ACCEPT_VERDICTS) < _VERDICTS_KEPT:
            _ACCEPT_VERDICTS[accept] = verdict
    return verdict


def _accepts(accept: str, media_type: str) -> bool:
    kind = media_type.split("/")[0]
    for part in accept.split(","):
        value = part.split(";")[0].strip().lower()
        if value in (media_type, f"{kind}/*", "*/*"):
            return True
    return False


