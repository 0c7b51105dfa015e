"""The 2026-07-28 era over HTTP: every request on its own (:class:`ModernHttp`), one POST, one
response, no session (streamable-http: "An Mcp-Session-Id header on a request: ignore it, and do
not mint or echo session IDs"); its transport is a :class:`ModernExchange`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import cast

from ...core import MODERN_VERSIONS, envelope
from ...core.errors import HeaderMismatchError, InvalidParams, McpError
from ...core.jsonrpc import ErrorResponse, Request, Response
from ...core.transport import Transport
from ...server.principal import Principal
from ..http_headers import check_request_headers
from ..sse import sse_event
from .base import HttpAppBase, peer_of
from .host import Connection
from .http_session import HttpSession
from .replies import SSE_HEADERS, cgi_name, held
from .request import HttpRequest
from .status import HttpError, modern_status
from .streamable import StreamableHttp

log = logging.getLogger(__name__)


class ModernHttp:
    """The 2026-07-28 POSTs of an application (``McpWsgiApp.modern``)."""

    def __init__(self, app: HttpAppBase):
        self.app = app
        self.streamable = StreamableHttp(app)  # a subscriptions/listen stream is answered as a POST's

    @staticmethod
    def handles(environ: dict, message) -> bool:
        """A 2026-07-28 POST: its header names a modern version, or its request's ``_meta`` names any.

        basic/versioning §Backward Compatibility: "A request carrying modern per-request _meta is
        served statelessly according to this revision."  A batch is never modern.
        """
        if isinstance(message, list):
            return False
        if environ.get("HTTP_MCP_PROTOCOL_VERSION", "").strip() in MODERN_VERSIONS:
            return True
        return isinstance(message, Request) and envelope.is_modern(message.params)

    def post(self, environ: dict, start_response, message):
        """Serve one 2026-07-28 POST: check its headers against its body, then answer it on this thread.

        No session is made or named; the connection lives as long as the POST.
        """
        app = self.app
        if not isinstance(message, Request):
            # "This revision of the core protocol defines no client-to-server notifications over
            # Streamable HTTP": accepted, and there is nothing to do with them.
            start_response("202 Accepted", [("Content-Length", "0")])
            return [b""]
        try:
            modern = self.check_headers(environ, message)
        except McpError as exc:
            raise HttpError.modern(exc, message.id) from None
        app.check_messages(environ, [message], app.path)
        if message.method == "subscriptions/listen":
            return self.listen(environ, start_response, message, modern)
        exchange = ModernExchange(app, message.id, start_response)
        exchange.http = HttpRequest(environ)
        connection = app.new_connection(exchange, "http-modern")
        connection.auth = environ.get("mcp_ref.auth")
        connection.peer = peer_of(environ)
        exchange.connection = connection
        on_disconnect = environ.get("mcp_ref.on_disconnect")
        if on_disconnect is not None:
            on_disconnect(exchange.client_gone)
        try:
            app.admit(environ, connection, message)
            connection.dispatch(message, inline=True, envelope=modern)  # read once, here; not again
        finally:
            connection.close()
        return exchange.finish()

    def listen(self, environ: dict, start_response, message: Request, modern: envelope.Envelope):
        """A ``subscriptions/listen`` POST: a long-lived stream (2026-07-28 streamable-http §Receiving
        Messages).  Its handler acknowledges and defers, so no thread but this one waits; the stream
        carries the change notifications, with keep-alive comments, until either side ends it.

        It counts against its client's streams (``max_streams_per_client``, 429 past it); its
        client closing it cancels it at once, and at the connection cap it may be ended gracefully
        to make room (subscriptions §Graceful Closure: "respond to the original
        subscriptions/listen request with a completion result before closing the stream").
        """
        app = self.app
        app.refuse_if_single_threaded(environ, "subscriptions/listen", message.id)
        release = app.hold_stream(environ, message.id)
        try:
            session = HttpSession(app, None, kind="stateless")
            session.modern = True
            connection = session.connection = app.new_connection(session, "http-modern")
            app.bind(session, environ)
            try:
                app.admit(environ, connection, message)
            except HttpError:
                connection.close()
                raise
            stream = session.open_stream([message.id])
            session.notes.note([message.id], environ)
            connection.dispatch(message, envelope=modern)
            hub = app.server.subscriptions

            def end(token: object) -> None:
                if not hub.close_all(lambda subscription: subscription.connection is connection):
                    stream.leave(token)  # not yet acknowledged: ended as a close would

            body = self.streamable.answer(session, stream, start_response, environ, end)
        except BaseException:
            release()
            raise
        return held(body, release)

    def check_headers(self, environ: dict, request: Request) -> envelope.Envelope:
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
            # a hidden tool's declared headers are not checked: the mismatch would tell it exists.
            # Asked whether or not the tool exists, and only once: the dispatch, on this thread,
            # reuses the verdict, so hidden and missing cost the same.
            principal = Principal.of(environ.get("mcp_ref.auth"), peer_of(environ))
            tool = self.app.server.visible_tool(principal, params["name"], request.params)
            declared = tool.header_declarations if tool is not None else None
        check_request_headers(lambda name: environ.get(cgi_name(name)), request.method, params, declared=declared)
        return modern


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

    def __init__(self, app: HttpAppBase, request_id, start_response):
        self.app, self.request_id, self.start_response = app, request_id, start_response
        self.connection: Connection | None = None
        self.lock = threading.Lock()
        self.answer: bytes | None = None
        self.status = "200 OK"
        self.write_sse: Callable[[bytes], object] | None = None  # the WSGI write callable, once streaming
        self.done = self.broken = self.answered = False
        #: The POST this request came in on (``Context.http``).
        self.http: HttpRequest | None = None

    def http_request(self, request_id) -> HttpRequest | None:
        """The HTTP request ``request_id`` came in on (``Context.http``): this exchange's POST."""
        return self.http if request_id == self.request_id else None

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
                self.write_sse = self.start_response("200 OK", SSE_HEADERS)
            write = self.write_sse
        try:
            write(sse_event(data))
        except Exception as exc:  # the client went away: that cancels the request
            log.debug("2026-07-28 POST %r lost its connection: %s", self.request_id, exc)
            self.broken = True
            if self.connection is not None:
                self.connection.cancel_incoming(self.request_id)

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
            self.connection.cancel_incoming(self.request_id)

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
        """Never called: the WSGI application feeds the exchange."""
        raise RuntimeError("a 2026-07-28 POST is fed by the WSGI application, not read")

    def close(self) -> None:
        """Nothing to release: the response ends with :meth:`finish`."""
