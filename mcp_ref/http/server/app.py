"""The WSGI application (:class:`McpWsgiApp`, PEP 3333): routing, then the transport of the path.

The middleware's first stage runs before routing (see :mod:`.middleware`); a refusal anywhere is
answered by :func:`.status.error_answer`, its status from the one table :data:`.status.STATUS_OF`.
"""

from __future__ import annotations

import functools

from . import peers
from .base import HttpAppBase
from .legacy_sse import LegacySse
from .middleware import HttpCall
from .modern import ModernHttp
from .replies import accepts_json_and_sse, held, nothing
from .status import HttpError, MethodNotAllowed, NotAcceptable, NotFound, error_answer
from .streamable import StreamableHttp


class McpWsgiApp(HttpAppBase):
    """The WSGI application serving one :class:`~mcp_ref.server.Server` over HTTP.

    Options: ``path`` (the Streamable HTTP endpoint), ``sse_path`` and
    ``messages_path`` (the 2024-11-05 transport; ``legacy_sse=False`` turns it
    off), ``stateless``, ``json_response`` (None: JSON unless the handler
    streams; True: always JSON; False: always SSE), ``event_store``,
    ``allowed_hosts`` / ``allowed_origins`` (DNS-rebinding protection; ``["*"]``
    allows any), ``max_body_size``, ``session_idle_timeout`` (seconds),
    ``max_sessions`` (when full, the oldest session that never came back after
    ``initialize`` makes room; if every session did, 503), ``max_sessions_per_client``
    (sessions one client may hold, per principal with a token, else per address: an int, or a
    float share of ``max_sessions``, a tenth by default; past it the client's least recently
    used idle session is ended, or, every one in use, 429; None: no cap), ``handshake_timeout``
    (seconds a session that never came back after ``initialize`` is kept, and the longest an
    ``initialize`` run on the pool waits for its thread: then 503 with ``Retry-After``),
    ``retry_ms`` (the SSE ``retry`` hint), ``keepalive``
    (seconds between comment lines on idle streams), ``standalone_backlog`` and
    ``stream_backlog`` (undelivered messages a GET's or a POST's stream holds) and
    ``backlog_bytes`` (undelivered bytes any one stream holds, 4 MiB; None: no bound; see
    ``spec_notes/security.md`` for what happens past them), ``inline_handlers`` (True:
    a POSTed request's handler runs on the POST's own thread, the fastest path;
    False: on the session's pool, with the POST thread relaying its stream —
    then ``Context.close_sse_stream()`` ends the HTTP response at once),
    ``handler_threads`` (the one pool, shared by every session, for handlers not
    run inline: batches, the legacy transport, ``inline_handlers=False``),
    ``max_handlers_per_client`` (handlers one client may have queued or running on that pool: an
    int, or a float share of ``handler_threads``, a quarter by default; a request past it is
    answered -31000 Server busy; None: no cap),
    ``max_streams_per_client`` (long-lived streams, ``subscriptions/listen`` POSTs and GET
    streams, one client may hold open at once: per principal with a token, else per
    address; past it 429 with ``Retry-After``; None: no cap), ``max_requests_per_client``
    (POSTs one client may have in flight at once, per principal with a token, else per address:
    an int, or a float share of the slots the WSGI server tells, ``mcp_ref.slots``; by default a
    quarter; past it 429 with ``Retry-After: 1``; None: no cap; see :mod:`.shares`),
    ``max_streams`` (long-lived streams of every client together; None: half of
    ``worker_threads``, the request threads of the WSGI worker, or of gunicorn's ``--threads``
    told by ``mcp_ref.http.gunicorn_hooks``; neither known: no bound; past it 503 with
    ``Retry-After``; see :mod:`.worker_threads`), ``auth``
    (a :class:`~mcp_ref.oauth.resource.ProtectedResource`: the server becomes an OAuth
    protected resource; see ``spec_notes/authorization.md``), ``session_table`` (a
    :class:`~.sessions.SessionTable`; by default one in memory, bounded by ``max_sessions``).

    Its checks are a chain of HTTP middleware, ``middleware`` (:mod:`.middleware`); its refusals'
    statuses come from one table (:data:`.status.STATUS_OF`).  Each transport is one object:
    :class:`~.streamable.StreamableHttp`, :class:`~.modern.ModernHttp` (2026-07-28),
    :class:`~.legacy_sse.LegacySse` (2024-11-05).
    """

    @functools.cached_property
    def streamable(self) -> StreamableHttp:
        """Streamable HTTP at ``path`` (2025-03-26 to 2025-11-25)."""
        return StreamableHttp(self)

    @functools.cached_property
    def modern(self) -> ModernHttp:
        """A 2026-07-28 POST at ``path``: one request, one response, no session."""
        return ModernHttp(self)

    @functools.cached_property
    def legacy(self) -> LegacySse:
        """HTTP+SSE (2024-11-05) at ``sse_path`` and ``messages_path``."""
        return LegacySse(self)

    # -- WSGI entry point ----------------------------------------------------------------

    def __call__(self, environ: dict, start_response):
        if "mcp_ref.on_disconnect" in environ:  # the WSGI server tells of a gone client itself
            return self._answer(environ, start_response)
        sock = peers.provide(environ)  # gunicorn: a gone client noticed from its socket
        try:
            return peers.until_closed(self._answer(environ, start_response), sock)
        except BaseException:
            if sock is not None:
                peers.watcher().forget(sock)
            raise

    def _answer(self, environ: dict, start_response):
        """The answer to one request: checks, middleware, the caller's share, then the route."""
        release = nothing
        try:
            self._check_host_and_origin(environ)
            path = environ.get("PATH_INFO") or "/"
            method = environ["REQUEST_METHOD"]
            if self.middleware:  # a plain server's chain is empty: no call to describe
                call = HttpCall(environ, path, method, start_response)
                for middleware in self.middleware:
                    answer = middleware.on_request(call)
                    if answer is not None:
                        return answer
            # the paths an MCP message is POSTed to (Streamable HTTP's, the legacy one's)
            if method == "POST" and (
                path == self.path or (self.legacy_sse and path == self.messages_path)
            ):
                release = self.hold_request(environ)  # its caller now known: 429 past its share
            answer = self._route(environ, start_response, path, method)
        except HttpError as exc:
            release()
            return error_answer(start_response, exc)
        except BaseException:
            release()
            raise
        return answer if release is nothing else held(answer, release)  # released when it ends

    def _route(self, environ: dict, start_response, path: str, method: str):
        """The transport's answer to a request at ``path``; 404 or 405 for what is not served."""
        if path == self.path:
            if method == "POST":
                return self._post(environ, start_response)
            if method == "GET":
                return self.streamable.get(environ, start_response)
            if method == "DELETE":
                return self.streamable.delete(environ, start_response)
            allow = [("Allow", "GET, POST, DELETE")]
            raise MethodNotAllowed(f"Method not allowed: {method}", headers=allow)
        if self.legacy_sse and path == self.sse_path and method == "GET":
            return self.legacy.stream(environ, start_response)
        if self.legacy_sse and path == self.messages_path and method == "POST":
            return self.legacy.post(environ, start_response)
        raise NotFound(f"Not found: {path}")

    def _post(self, environ: dict, start_response):
        """A POST to ``path``: a 2026-07-28 request (:mod:`.modern`) or Streamable HTTP's."""
        # basic/transports §Sending Messages: "The client MUST include an Accept header,
        # listing both application/json and text/event-stream as supported content types."
        if not accepts_json_and_sse(environ.get("HTTP_ACCEPT", "")):
            raise NotAcceptable(
                "Not Acceptable: Accept must list application/json and text/event-stream"
            )
        message = self.read_message(environ)
        if self.modern.handles(environ, message):
            return self.modern.post(environ, start_response, message)
        return self.streamable.post(environ, start_response, message)
