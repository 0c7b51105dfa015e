"""Streamable HTTP (2025-03-26 to 2025-11-25) at ``path``: POST carries one JSON-RPC message (or,
where the revision allows, a batch), GET opens the standalone SSE stream or resumes one, DELETE
ends the session (basic/transports §Streamable HTTP).  A 2026-07-28 POST goes to :mod:`.modern`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

from ... import jsonrpc, lifecycle
from ...errors import InvalidRequest
from ...jsonrpc import ErrorResponse, Request
from ..sse import KEEPALIVE, sse_event
from .base import HttpAppBase
from .events import EventsForgotten, event_number
from .host import Connection
from .http_session import HttpSession
from .oneshot import one_shot
from .replies import (
    SSE_HEADERS,
    DirectReply,
    accepts,
    close_for_polling,
    held,
    json_body,
    message_event,
    nothing,
    on_client_gone,
    priming_event,
    retry_event,
)
from .shared import STANDALONE
from .status import BadRequest, HttpError, MethodNotAllowed, NotAcceptable, ServiceUnavailable
from .streams import CLOSE, END, Stream


class StreamableHttp:
    """The Streamable HTTP endpoint of an application (``McpWsgiApp.streamable``)."""

    def __init__(self, app: HttpAppBase):
        self.app = app

    def post(self, environ: dict, start_response, message):
        """One POSTed message or batch (read by ``McpWsgiApp``): 202 for notifications and answers,
        else its answers, as JSON or as an SSE stream."""
        app = self.app
        items = message if isinstance(message, list) else [message]
        if any(isinstance(m, Request) and m.method == "initialize" for m in items):
            if isinstance(message, list):
                raise BadRequest("Invalid Request: initialize must not be part of a batch")
            return self.initialize(environ, start_response, message)
        request_ids = [m.id for m in items if isinstance(m, Request)]
        if not request_ids:
            return self.accept_without_requests(environ, start_response, message, items)
        app.check_messages(environ, items, app.path)
        if app.stateless and isinstance(message, Request) and app.inline_handlers:
            # no session, stream or event store
            return one_shot(app, environ, start_response, message)
        session = app.transient_session(environ) if app.stateless else app.session_for(environ)
        connection = session.connection
        assert connection is not None  # every session handed out is bound
        batch = isinstance(message, list)
        inline = isinstance(message, Request) and app.inline_handlers
        refused: list = []
        release = nothing
        try:
            refuse_batch(message, session.version)
            if not inline:  # its handlers go to the shared pool: within its client's share
                items, refused, release = app.share_handlers(session, items)
                request_ids = [m.id for m in items if isinstance(m, Request)]
                if not request_ids:
                    release()
                    return self.answer_refused(session, start_response, batch, items, refused)
                message = items if batch else items[0]
            app.admit(environ, connection, message)
        except HttpError:
            release()
            app.finish_transient(session)
            raise
        try:
            stream = session.open_stream(request_ids, batch=batch)
        except HttpError:  # e.g. an id already in use: it never reaches the dispatcher
            release()
            admitted = connection.admitted  # what Admission noted of it is void: forgotten
            if admitted:
                admitted.pop(request_ids[0], None)
            raise
        stream.refused = tuple(refused)  # answered in the batch's array
        session.notes.note(request_ids, environ)  # Context.http: per request, not per session
        if session.shared:  # a request that changes what was negotiated: saved for every worker
            for item in items:
                change = app.shared_sessions.change_of(item) if isinstance(item, Request) else None
                if change is not None:
                    session.saving[item.id] = change
        if inline:
            return self.answer_inline(session, stream, message, start_response, environ)
        try:
            connection.dispatch(message)  # a batch: its handlers run on the pool
        finally:
            release()  # each job counts itself from here (shares.CountedPool)
        return self.answer(session, stream, start_response, environ)

    def answer_refused(
        self, session: HttpSession, start_response, batch: bool, items: list, refused: list
    ):
        """A POST none of whose requests fit in its client's share of the handler pool: each is
        answered -31000 (``HttpAppBase.share_handlers``), as are its invalid batch items; its
        notifications and answers are dispatched.  JSON, at once (a batch: one array)."""
        valid = [m for m in items if not isinstance(m, InvalidRequest)]
        if valid:
            cast(Connection, session.connection).dispatch(valid if batch else valid[0])
        answers = refused + [
            ErrorResponse(m.request_id, m.to_error(), null_id=True)
            for m in items
            if isinstance(m, InvalidRequest)
        ]
        self.app.finish_transient(session)
        body = jsonrpc.serialize(answers if batch else answers[0])
        return json_body(start_response, "200 OK", body)

    def accept_without_requests(self, environ: dict, start_response, message, items: list):
        """A POST of notifications, answers or invalid batch items: nothing to stream back.

        basic/transports §Sending Messages: "If the input is a JSON-RPC response or notification
        ... the server MUST return HTTP status code 202 Accepted with no body."  Invalid batch
        items are answered all the same, as JSON-RPC 2.0 §6 asks: an array of their errors.
        """
        app = self.app
        session = None if app.stateless else app.session_for(environ)
        version = app.check_version(environ) if session is None else session.version
        refuse_batch(message, version)
        valid = [m for m in items if not isinstance(m, InvalidRequest)]
        if session is not None and session.shared:
            # what answers or cancels a request open on another worker goes there (.shared)
            for item in app.shared_sessions.route(session, valid):
                cast(Connection, session.connection).dispatch(item)
        elif session is not None and valid:
            # stateless mode: notifications and answers reach no connection
            cast(Connection, session.connection).dispatch(
                valid if isinstance(message, list) else valid[0]
            )
        # Batches exist only before 2025-11-25, whose errors to an unreadable id carry "id": null.
        errors = [
            ErrorResponse(m.request_id, m.to_error(), null_id=True)
            for m in items
            if isinstance(m, InvalidRequest)
        ]
        return json_body(
            start_response, "200 OK", jsonrpc.serialize_items(errors) if errors else None
        )

    def answer_inline(
        self,
        session: HttpSession,
        stream: Stream,
        request: Request,
        start_response,
        environ: dict | None = None,
    ):
        """Serve a POSTed request on this thread: JSON if the handler sends only its answer,
        otherwise an SSE stream written as the handler goes (WSGI ``write``), so progress,
        logs and requests to the client reach it at once.  No hand-off to another thread.
        A client that closes the connection meanwhile is noticed at once (``DirectReply.client_gone``)."""
        reply = DirectReply(self.app, session, stream, start_response)
        stream.direct = reply
        on_client_gone(environ, reply.client_gone)
        try:
            cast(Connection, session.connection).dispatch(request, inline=True)
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
            self.app.finish_transient(session)
        return reply.finish()

    def initialize(self, environ: dict, start_response, request: Request):
        """``initialize``: a new session (none, stateless), named in ``Mcp-Session-Id`` once it succeeded."""
        app = self.app
        if app.stateless:
            session = app.bound_session(environ, None, "stateless", "http-stateless")
            # nothing outlasts this request: the capabilities it declares promise no notification
            # (no listChanged, no subscribe: Server.capabilities)
            cast(Connection, session.connection).stateless = True
        else:
            session = app.new_session(environ, "streamable", "http")  # its place in the table held
        connection = cast(Connection, session.connection)
        try:
            answer = self.run_initialize(session, request, environ)
        except BaseException:
            if session.kind != "stateless":
                app.abandon(session)
            else:
                app.finish_transient(session)
            raise
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(answer)))]
        if session.kind == "stateless":
            app.finish_transient(session)
        elif b'"result"' in answer and connection.initialized:
            app.register(session)
            headers.append(("Mcp-Session-Id", cast(str, session.id)))  # not stateless: it has an id
        else:
            app.abandon(session)  # a refused initialize: its place is free again
        start_response("200 OK", headers)
        return [answer]

    def run_initialize(self, session: HttpSession, request: Request, environ: dict) -> bytes:
        """The answer of ``initialize`` on a new session: its handler run on this thread
        (``inline_handlers``), else on the shared pool within its client's share (-31000 past it).
        :class:`~.status.ServiceUnavailable` when it is not served within ``handshake_timeout`` or
        its client goes (the caller abandons the session: a job still queued never runs)."""
        app = self.app
        connection = cast(Connection, session.connection)
        stream = session.open_stream([request.id])
        if app.inline_handlers:
            # on this thread, as every POSTed request is, never queued on the shared pool behind
            # other clients' calls (McpWsgiApp)
            connection.dispatch(request, inline=True)
        else:
            # on the shared pool, counted among its client's handlers as every pooled request is
            # (max_handlers_per_client): initializes its client leaves queued are bounded too
            _, refused, release = app.share_handlers(session, [request])
            if refused:
                session.forget_stream(stream)
                return jsonrpc.serialize(refused[0])
            try:
                connection.dispatch(request)
            finally:
                release()  # its job counts itself from here (shares.CountedPool)
        token = stream.attach()
        app.watch(environ, stream, token)  # its client gone: END at once
        # On the pool, its wait is bounded as the session's place in the table is held: for
        # handshake_timeout (then the place is swept).
        answer = stream.take(token, app.handshake_timeout)
        stream.detach(token)
        session.forget_stream(stream)
        if not isinstance(answer, bytes):  # not served in time, or its client has gone
            raise ServiceUnavailable(
                "Service Unavailable: initialize was not served in time; retry shortly",
                headers=[("Retry-After", "5")],
            )
        return answer

    def answer(
        self,
        session: HttpSession,
        stream: Stream,
        start_response,
        environ: dict | None = None,
        end: Callable[[object], None] | None = None,
    ):
        """The HTTP response for a POSTed request: JSON if the answer comes first and alone, else SSE.

        Its client closing the connection ends it at once (``McpWsgiApp.watch``); with ``end``, it is
        a long-lived stream (``subscriptions/listen``) that ``end(token)`` ends to make room."""
        app = self.app
        token = stream.attach()
        if environ is not None:
            app.watch(environ, stream, token, end)
        # The first message taken and stored in one step, after the priming event, as every later
        # one is (events): a GET resuming from the priming event replays it or is handed it
        with stream.cond:
            first = stream.take(token, None)
            answered = first is END or (
                app.json_response is not False and stream.drained_after_end()
            )
            if not answered:
                opening = [priming_event(app, session, stream)]
                if isinstance(first, bytes):
                    first = message_event(app, session, stream, first)
        if answered:
            stream.detach(token)
            session.forget_stream(stream)
            app.finish_transient(session)
            # END: cancelled, no answer will come (202)
            return json_body(start_response, stream.status, None if first is END else first)
        start_response("200 OK", SSE_HEADERS)
        return self.events(session, stream, token, first, opening)

    def events(self, session: HttpSession, stream: Stream, token, first, opening: list[bytes]):
        """The SSE body of a stream: ``opening`` (its priming event, 2025-11-25, or the events a
        resumption replays), then ``first`` (an event already stored, ``CLOSE``, or None), then
        every message until its end."""
        app = self.app
        try:
            for chunk in opening:
                if chunk:
                    yield chunk
            item = first
            while True:
                if item is END:
                    if session.shared and stream.consumer is token and stream.ended:
                        # its answer was the last event: followers elsewhere stop
                        session.mark_end(stream)
                    return
                if item is CLOSE:
                    # "it SHOULD send an SSE event with a standard retry field before closing the connection"
                    # only a stateful stream is closed for polling (close_stream): its session has an id
                    yield retry_event(app, session, stream.id)
                    return
                yield KEEPALIVE if item is None else item
                # taken and stored in one step: a GET resuming the stream meanwhile (get) replays it
                # or is handed it, never neither (its lock is reentrant: take's wait releases it)
                with stream.cond:
                    item = stream.take(token, app.keepalive)
                    if isinstance(item, bytes):
                        item = message_event(app, session, stream, item)
        finally:
            stream.detach(token)
            session.settle(stream)
            app.finish_transient(session)

    def get(self, environ: dict, start_response):
        """The standalone SSE stream of a session, or (``Last-Event-ID``) the resumption of a stream."""
        app = self.app
        if app.stateless:
            raise MethodNotAllowed(
                "Method not allowed: stateless mode has no standalone stream",
                headers=[("Allow", "POST")],
            )
        if not accepts(environ.get("HTTP_ACCEPT", ""), "text/event-stream"):
            raise NotAcceptable("Not Acceptable: Accept must list text/event-stream")
        session = app.session_for(environ)
        session_id = cast(str, session.id)  # from the session table: stateful, it has an id
        last_event_id = environ.get("HTTP_LAST_EVENT_ID") or ""
        # shared: every stream of the session is followed from the shared store, by event number
        number = event_number(last_event_id) if session.shared else 0
        found = None
        forgotten = False
        try:
            found = replay(app, session_id, last_event_id) if number is not None else None
        except EventsForgotten:
            forgotten = True
        if found is None and not forgotten:
            # No resumption (or an id this session never issued): the standalone stream, a
            # long-lived one (see McpWsgiApp.hold_stream, .watch).  At the connection cap it may be
            # closed with a retry: basic/transports §Listening, "The server MAY close the SSE stream
            # at any time", "sending a retry field and allowing the client to reconnect".
            app.refuse_if_single_threaded(environ, "the standalone SSE stream (GET)")
            last_event_id, number = "", None
        stream_id = last_event_id.rpartition(".")[0] or STANDALONE
        if session.shared:
            # §Resumability: the server "MAY use this header to replay messages that would have
            # been sent after the last event ID, on the stream that was disconnected".  Nothing of
            # it kept: a stream still open (the standalone one never ends) is followed from the
            # id's number, what comes next still arrives; one that has ended is lost (400).
            if forgotten and stream_id != STANDALONE:
                if not app.event_store.stream_open(session_id, stream_id):
                    raise lost_stream()
            return app.shared_sessions.follow(environ, start_response, session, stream_id, number)
        # basic/transports §Resumability: "the server MAY use this header to replay messages
        # that would have been sent after the last event ID, on the stream that was disconnected".
        with session.lock:
            stream = session.by_id.get(stream_id)
        if stream is None:  # it has ended and been delivered: replay what is kept (read after the
            # look-up: a stream leaves the session only once its events are in the store)
            try:
                found = replay(app, session_id, last_event_id)
            except EventsForgotten:
                raise lost_stream() from None
            start_response("200 OK", SSE_HEADERS)
            return [
                sse_event(data, event_id=eid) for eid, data in (found[1] if found else ()) if data
            ]
        long_lived = stream is session.standalone
        if long_lived and last_event_id:  # a POST's stream ends with its request: resuming it
            # holds a worker no longer than the POST did
            app.refuse_if_single_threaded(environ, "the standalone SSE stream (GET)")
        release = app.hold_stream(environ) if long_lived else nothing
        # Take the stream over and read what it missed in one step: an event is either already
        # stored (and replayed here) or not yet sent (and queued for this consumer) — never lost.
        with stream.cond:
            token = stream.attach()
            try:
                found = replay(app, session_id, last_event_id)
            except EventsForgotten:  # a live stream: what comes from now on still arrives
                found = None
        app.watch(environ, stream, token, close_for_polling(stream) if long_lived else None)
        if found and found[1]:
            opening = [sse_event(data, event_id=eid) for eid, data in found[1] if data]
        else:
            opening = [priming_event(app, session, stream)]
        start_response("200 OK", SSE_HEADERS)
        return held(
            self.events(session, stream, token, None, opening),
            release,
            lambda: stream.detach(token),
        )

    def delete(self, environ: dict, start_response):
        """End the session the request names (basic/transports §Session Management)."""
        app = self.app
        if app.stateless:
            raise MethodNotAllowed(
                "Method not allowed: stateless mode has no sessions", headers=[("Allow", "POST")]
            )
        app.end(app.session_for(environ))
        start_response("200 OK", [("Content-Length", "0")])
        return [b""]


def replay(
    app: HttpAppBase, session_id: str, last_event_id: str
) -> tuple[str, list[tuple[str, bytes]]] | None:
    """The stream ``last_event_id`` names and its kept events after it (None: no id, or one this
    session never issued); :class:`~.events.EventsForgotten` when nothing of it is kept."""
    return app.event_store.replay_after(session_id, last_event_id) if last_event_id else None


def lost_stream() -> BadRequest:
    """The answer to a GET resuming a stream of which nothing is kept, and nothing more will come:
    what its client missed is lost.  Said plainly, rather than handing over the standalone stream
    (2025-11-25 basic/transports §Resumability and Redelivery: the server "MUST NOT replay messages
    that would have been delivered on a different stream") or an empty one.  400, not 404: a 404
    tells the client its session has ended (§Session Management), and it has not."""
    return BadRequest(
        "Invalid Request: the events after Last-Event-ID are no longer kept "
        "(the session's oldest events are forgotten); the stream cannot be resumed"
    )


def refuse_batch(message, version: str | None) -> None:
    """400 for a batch (``message`` a list) where the negotiated ``version`` has none."""
    if isinstance(message, list) and not lifecycle.batches_allowed(version):
        raise BadRequest(
            "Invalid Request: JSON-RPC batches are not supported by the negotiated protocol version"
        )
