"""HTTP+SSE, the 2024-11-05 transport, at ``sse_path`` and ``messages_path`` (:class:`LegacySse`):
GET opens the stream, whose first event names the URL to POST messages to; the stream is the
session, and ends it when it closes.
"""

from __future__ import annotations

import contextlib
from typing import cast
from urllib.parse import parse_qs

from ...jsonrpc import Request
from ..sse import KEEPALIVE, sse_event
from .base import HttpAppBase
from .http_session import HttpSession
from .replies import SSE_HEADERS, held
from .status import BadRequest, NotFound, ServiceUnavailable
from .streams import END, Stream


class LegacySse:
    """The 2024-11-05 endpoints of an application (``McpWsgiApp.legacy``)."""

    def __init__(self, app: HttpAppBase):
        self.app = app

    def stream(self, environ: dict, start_response):
        """2024-11-05 basic/transports §HTTP with SSE: "When a client connects, the server MUST send
        an endpoint event containing a URI for the client to use for sending messages."""
        app = self.app
        app.refuse_if_single_threaded(
            environ, "the 2024-11-05 HTTP+SSE transport (its session is a held GET)"
        )
        # a long-lived stream (see McpWsgiApp.hold_stream, .watch)
        release = app.hold_stream(environ)
        try:
            session = app.new_session(environ, "legacy", "sse")
            app.register(session)
            stream = session.standalone
            assert stream is not None  # a legacy session's
            token = stream.attach()
            # The stream is the session: its client closing it, or the cap ending it, ends the session.
            app.watch(environ, stream, token, stream.leave)
        except BaseException:
            release()
            raise
        endpoint = f"{environ.get('SCRIPT_NAME', '')}{app.messages_path}?session_id={session.id}"
        start_response("200 OK", SSE_HEADERS)
        return held(self.events(session, endpoint, token), release, lambda: app.end(session))

    def events(self, session: HttpSession, endpoint: str, token: object):
        """The SSE body: the ``endpoint`` event, then every message of the session, until it ends."""
        stream = cast(Stream, session.standalone)  # a legacy session's
        try:
            yield sse_event(endpoint.encode(), event="endpoint")
            while True:
                item = stream.take(token, self.app.keepalive)
                if item is END:
                    return
                # its stream is open: it is in use, whatever worker takes its POSTs
                if item is None and self.app.shared:
                    with contextlib.suppress(ConnectionError):
                        self.app.session_table.touch(cast(str, session.id))
                yield KEEPALIVE if item is None else sse_event(item, event="message")
        finally:
            # The stream is the session: when it closes, the session ends.
            stream.detach(token)
            self.app.end(session)

    def post(self, environ: dict, start_response):
        """One message for the session ``?session_id=`` names: 202, its answer on the stream."""
        app = self.app
        session_id = parse_qs(environ.get("QUERY_STRING", "")).get("session_id", [None])[0]
        if not session_id:
            raise BadRequest("Bad Request: missing session_id")
        session = app.live_session(session_id)
        # None, shared: its stream is on another worker, where the message goes
        if session is not None or not app.shared:
            if session is None or session.kind != "legacy" or session.closed:
                raise NotFound("Session not found")
            app.check_principal(session, environ)
            if cast(Stream, session.standalone).full():  # a legacy session's
                raise stream_full()
        message = app.read_message(environ)
        items = message if isinstance(message, list) else [message]
        app.check_messages(environ, items, app.sse_path)
        if session is None:
            # its stream's worker says whether it took it (SharedSessions._take_legacy): refused
            # there while its stream is full, as here
            if not app.shared_sessions.forward_legacy(environ, session_id, message):
                raise stream_full()
        else:
            app.session_table.touch(session_id)
            # Context.http
            session.notes.note([m.id for m in items if isinstance(m, Request)], environ)
            session.dispatch_within_share(message)
        start_response("202 Accepted", [("Content-Type", "text/plain"), ("Content-Length", "8")])
        return [b"Accepted"]


def stream_full() -> ServiceUnavailable:
    """The refusal of a POST while its session's stream is full (on this worker, or on the one
    holding it: ``SharedSessions.forward_legacy``).  Backpressure: the stream that carries the
    answers is full; new work is refused until the client has read it (RFC 9110 §15.6.4, with
    ``Retry-After``: §10.2.3).  The answers of the requests accepted before are queued past the
    bound all the same (``Stream.put``): at most the client's running handlers'."""
    return ServiceUnavailable(
        "Service Unavailable: the event stream is full; retry once the client has read it",
        headers=[("Retry-After", "1")],
    )
