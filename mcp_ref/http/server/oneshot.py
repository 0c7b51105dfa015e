"""A POSTed request that belongs to no session, served on the POST's thread (:func:`one_shot`):
a 2026-07-28 request, or a handshake-era one in stateless mode.  Its transport is an
:class:`Exchange`, which writes its answer (and the notifications about it) straight into the
HTTP response: no :class:`~.http_session.HttpSession`, stream, event store or request notes,
none of which a one-request connection that nothing can resume needs.
"""

from __future__ import annotations

import logging
from typing import cast

from ... import lifecycle
from ...jsonrpc import ErrorResponse, Request, Response
from ...session import Transport
from ..sse import sse_event
from .base import HttpAppBase
from .host import Connection
from .replies import SSE_HEADERS, InlineReply, on_client_gone
from .request import HttpRequest, ServerHooks
from .shares import peer_of
from .status import modern_status

log = logging.getLogger(__name__)


def one_shot(
    app: HttpAppBase,
    environ: dict,
    start_response,
    request: Request,
    modern: lifecycle.Envelope | None = None,
):
    """Serve one POSTed request that belongs to no session, on this thread: a 2026-07-28 request
    (``modern``, its envelope already read), or a handshake-era one in stateless mode (its version
    from the ``MCP-Protocol-Version`` header, 400 for one not spoken).

    Its transport is an :class:`Exchange` (no :class:`HttpSession`, stream or event store: nothing
    can resume a stateless stream), its connection lives as long as the POST; the middleware's
    admission, the auth principal, the watchdog's ``mcp_ref.on_disconnect`` and the connection's
    validation and errors are those of any other request.
    """
    version = None if modern is not None else app.check_version(environ)
    exchange = Exchange(app, request.id, start_response, modern=modern is not None)
    exchange.http = HttpRequest(environ)
    connection = exchange.connection = app.new_connection(
        exchange, "http-modern" if modern else "http-stateless"
    )
    if version is not None:
        connection.assume_initialized(version)
    connection.auth = environ.get("mcp_ref.oauth")
    connection.peer = peer_of(environ)
    on_client_gone(environ, exchange.client_gone)
    try:
        app.admit(environ, connection, request)
        connection.dispatch(request, inline=True, envelope=modern)  # read once, here; not again
    finally:
        connection.close()
    return exchange.finish()


class Exchange(InlineReply, Transport):
    """The transport of one POSTed request that belongs to no session (:func:`one_shot`): its
    answer, and the notifications about it, written straight into the HTTP response.

    A 2026-07-28 request, or a stateless handshake-era one, has no session, no GET stream and no
    resumption, so none of :class:`HttpSession`'s tables are needed: the handler runs on the POST's
    thread, a notification before the answer turns the response into an SSE stream (unless
    ``json_response``), the answer alone is a JSON reply (2026-07-28: with the status
    :func:`modern_status` gives an error; handshake era: 200, or an SSE stream with
    ``json_response=False``).  What arrives after the answer (a thread the handler left behind)
    is dropped.  A client that closes the stream cancels the request (2026-07-28 §Cancellation:
    closing the stream "MUST be treated by the server as cancellation"; stateless, nothing could
    resume it).
    """

    connection: Connection | None = None
    answered = False
    #: The POST this request came in on (``Context.http``).
    http: HttpRequest | None = None

    def __init__(self, app: HttpAppBase, request_id, start_response, *, modern: bool = True):
        super().__init__(app, start_response)
        self.request_id, self.modern = request_id, modern

    @property
    def http_hooks(self) -> ServerHooks:
        """What the server's ``Context`` asks of HTTP (:class:`~.request.ServerHooks`): this exchange."""
        return self

    def http_request(self, request_id) -> HttpRequest | None:
        """The HTTP request ``request_id`` came in on (``Context.http``): this exchange's POST."""
        return self.http if request_id == self.request_id else None

    def close_stream(self, request_id) -> bool:
        """False: a request without a session has no stream a client could resume (no polling)."""
        return False

    def write(self, data: bytes, message=None, related=None) -> None:
        """Deliver one message of this request's; anything else (no other request shares the
        exchange) is dropped."""
        is_answer = isinstance(message, (Response, ErrorResponse))
        if (message.id if is_answer else related) != self.request_id:
            log.debug("one-request POST: dropped a message that is not about its request")
            return
        with self.lock:
            if self.done or self.broken or self.answered:
                return  # late (the answer ends the exchange), or the client has gone
            if is_answer:
                self.answered = True
                if self.modern and isinstance(message, ErrorResponse):
                    self.status = modern_status(cast(int, message.error.get("code")))
                if self.write_sse is None and (self.modern or self.app.json_response is not False):
                    self.answer = data  # the answer alone: a JSON reply, sent by finish()
                    return
            elif self.app.json_response:
                return  # JSON replies only: what is not the answer has nowhere to go
            if self.write_sse is None:
                self.write_sse = self.start_response("200 OK", SSE_HEADERS)
            write = self.write_sse
        try:
            write(sse_event(data))
        except Exception as exc:  # the client went away: that cancels the request
            self.lost(exc)

    def finish(self) -> list:
        """The WSGI body once the handler has returned; the exchange then lets go of what the
        request holds (its environ, the WSGI server's ``start_response``), freed at once: the
        exchange stays referred to by its connection's session, and that session and its
        connection refer to each other, a cycle only the garbage collector frees."""
        body = super().finish()
        self.http = None
        self.start_response = None
        self.connection = None
        return body

    def lost(self, why: object) -> None:
        """Its client has gone (a write failed, or the WSGI server noticed the close).  2026-07-28
        streamable-http §Cancellation: closing the stream "MUST be treated by the server as
        cancellation of that request", and the server "MUST NOT send any further messages for it"."""
        log.debug("one-request POST %r: %s; cancelled", self.request_id, why)
        self.broken = True
        connection = self.connection  # read once: finish() may let it go meanwhile
        if connection is not None:
            connection.cancel_incoming(self.request_id)

    def read(self) -> bytes | None:
        """Never called: the WSGI application feeds the exchange."""
        raise RuntimeError("a one-request POST is fed by the WSGI application, not read")

    def close(self) -> None:
        """Nothing to release: the response ends with :meth:`finish`."""
