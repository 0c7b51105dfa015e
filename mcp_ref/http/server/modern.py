"""The 2026-07-28 era over HTTP: every request on its own (:class:`ModernHttp`), one POST, one
response, no session (streamable-http: "An Mcp-Session-Id header on a request: ignore it, and do
not mint or echo session IDs"); its transport is an :class:`~.oneshot.Exchange` (:func:`~.oneshot.one_shot`).
"""

from __future__ import annotations

from typing import cast

from ... import lifecycle
from ...errors import HeaderMismatchError, InvalidParams, McpError
from ...jsonrpc import ErrorResponse, Request, Response
from ...lifecycle import MODERN_VERSIONS
from ...server.connection import OPEN
from ...server.principal import Principal
from ..headers import check_request_headers, header_reader
from .base import HttpAppBase
from .host import Connection
from .oneshot import one_shot
from .replies import held, json_body
from .shares import peer_of
from .status import BadRequest, HttpError
from .streamable import StreamableHttp


class ModernHttp:
    """The 2026-07-28 POSTs of an application (``McpWsgiApp.modern``)."""

    def __init__(self, app: HttpAppBase):
        self.app = app
        # a subscriptions/listen stream is answered as a POST's
        self.streamable = StreamableHttp(app)

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
        return isinstance(message, Request) and lifecycle.is_modern(message.params)

    def post(self, environ: dict, start_response, message):
        """Serve one 2026-07-28 POST: check its headers against its body, then answer it on this thread.

        No session is made or named; the connection lives as long as the POST.
        """
        app = self.app
        if isinstance(message, (Response, ErrorResponse)):
            # 2026-07-28 streamable-http §Sending Messages: "The body of the HTTP POST MUST be a
            # single JSON-RPC request or notification. The client MUST NOT send JSON-RPC
            # responses" (no request of the server's awaits one: MRTR carries its asks).
            raise BadRequest("Invalid Request: a 2026-07-28 client sends no JSON-RPC responses")
        if not isinstance(message, Request):
            # "This revision of the core protocol defines no client-to-server notifications over
            # Streamable HTTP": accepted, and there is nothing to do with them.
            return json_body(start_response, "202 Accepted", None)
        try:
            modern = self.check_headers(environ, message)
        except McpError as exc:
            raise HttpError.modern(exc, message.id) from None
        app.check_messages(environ, [message], app.path)
        if message.method == "subscriptions/listen":
            return self.listen(environ, start_response, message, modern)
        return one_shot(app, environ, start_response, message, modern)

    def listen(self, environ: dict, start_response, message: Request, modern: lifecycle.Envelope):
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
            session = app.bound_session(environ, None, "stateless", "http-modern")
            session.modern = True
            connection = cast(Connection, session.connection)
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

    def check_headers(self, environ: dict, request: Request) -> lifecycle.Envelope:
        """The order the spec implies: the envelope's required fields (-32602), the version header
        against it (-32020), the version itself (-32022), then ``Mcp-Method`` / ``Mcp-Name`` /
        ``Mcp-Param-*`` against the body (-32020).  Returns the request's envelope."""
        meta = lifecycle.meta_of(request.params)
        if (
            meta is None
            or lifecycle.PROTOCOL_VERSION not in meta
            or lifecycle.CLIENT_CAPABILITIES not in meta
        ):
            raise InvalidParams(
                f"Invalid params: a {MODERN_VERSIONS[0]} request's _meta must carry "
                f"{lifecycle.PROTOCOL_VERSION} and {lifecycle.CLIENT_CAPABILITIES}"
            )
        header = environ.get("HTTP_MCP_PROTOCOL_VERSION")
        if header is None:
            raise HeaderMismatchError("Header mismatch: the MCP-Protocol-Version header is missing")
        if header.strip(" \t") != meta[lifecycle.PROTOCOL_VERSION]:
            raise HeaderMismatchError(
                f"Header mismatch: MCP-Protocol-Version {header.strip()!r} does not match "
                f"_meta {lifecycle.PROTOCOL_VERSION} {meta[lifecycle.PROTOCOL_VERSION]!r}"
            )
        # -32022 for a version this server does not speak; never None: _meta names a version (checked above)
        modern = cast(lifecycle.Envelope, lifecycle.read_envelope(request.params))
        params = request.params if isinstance(request.params, dict) else {}
        declared = None
        if request.method == "tools/call" and isinstance(params.get("name"), str):
            # a hidden tool's declared headers are not checked: the mismatch would tell it exists.
            # Asked whether or not the tool exists, and only once: the dispatch, on this thread,
            # reuses the verdict, so hidden and missing cost the same.
            # Every gate but the open one is asked, ``restricts`` or not (one hiding a tool from
            # everyone alike hides it still); the open one shows every tool: no principal to make.
            server = self.app.server
            principal = (
                Principal.of(environ.get("mcp_ref.oauth"), peer_of(environ))
                if server.gate is not OPEN
                else None
            )
            tool = server.visible_tool(principal, params["name"], request.params)
            declared = tool.header_declarations if tool is not None else None
        check_request_headers(header_reader(environ), request.method, params, declared=declared)
        return modern
