"""One MCP session over HTTP (:class:`HttpSession`): the transport of one server connection.

Outgoing messages are routed by the request they relate to (see
:meth:`~mcp_ref.session.Transport.write`): answers, and what a handler sends while serving a
request, go to that request's POST stream; everything else to the standalone GET stream.  "Session"
here is the HTTP session (``Mcp-Session-Id``, or a legacy ``session_id``, or none: stateless); the
JSON-RPC session belongs to the connection and is never reached from here.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any, Protocol, cast

from ... import lifecycle
from ...errors import SERVER_BUSY
from ...jsonrpc import ErrorResponse, Message, Response, serialize
from ...session import Transport
from .events import EventStore
from .host import Connection
from .request import HttpRequest, RequestNotes, ServerHooks
from .status import BadRequest, modern_status
from .streams import END, Stream

log = logging.getLogger(__name__)

#: The revision from which the server may close a POST's SSE connection before the answer, the
#: client polling (2025-11-25 basic/transports §Sending Messages; SEP-1699).
SSE_POLLING = "2025-11-25"

#: The answer to a request whose session ended while it ran (deleted, expired, the server shutting
#: down).  2025-11-25 basic/transports §Sending Messages: "If the input is a JSON-RPC request, the
#: server MUST either return Content-Type: text/event-stream ... or Content-Type:
#: application/json": a POSTed request is answered, never with 202 and no body.  -31000: mcp_ref's
#: ServerBusy (``errors.SERVER_BUSY``, outside the JSON-RPC reserved range; the SDKs answer their
#: "Connection closed" with the legacy -32000).
SESSION_ENDED = {
    "code": SERVER_BUSY,
    "message": "Session ended before this request was answered: start a new session with initialize",
}


class SessionOwner(Protocol):
    """What a session asks of the application that made it (``McpWsgiApp``)."""

    json_response: bool | None
    standalone_backlog: int
    stream_backlog: int
    backlog_bytes: int | None
    event_store: EventStore
    #: True when every worker serves every session (see :mod:`.shared`).
    shared: bool
    #: What the application does for sessions served by every worker (a ``.shared.SharedSessions``).
    shared_sessions: Any

    def end_session(self, session_id: str) -> bool:
        """End a session now (its client's next request gets 404)."""

    def answered(self, session_id: str) -> None:
        """A request of the session was answered now: it is idle from here (the table is touched)."""

    def share_handlers(self, session: Any, items: list) -> tuple[list, list, Callable[[], None]]:
        """The ``items`` within the client's share of the handler pool: kept, refused, release."""


class PoolJobs(Protocol):
    """A connection's jobs on the shared handler pool (``shares.CountedPool``)."""

    def withdraw(self) -> None:
        """The jobs not yet started never run."""


class HttpSession(Transport):
    """One MCP session over HTTP, and the transport of its ServerConnection."""

    #: True once the session has ended (:meth:`close`).
    closed = False
    #: The server's connection this session is the transport of (bound before it is used).
    connection: Connection | None = None
    #: Who created the session (``AccessInfo``) when the app is a protected resource; None otherwise.
    principal: Any = None
    #: True for the one-request connection of a 2026-07-28 POST: its errors map to HTTP statuses.
    modern = False
    #: Shared: the budget of its cancellations forwarded to every worker (a one-key
    #: ``MemoryBuckets``; made when needed).
    forwarding: Any = None
    #: Shared: this worker is the session's home (its connection sends the change notifications),
    #: and when it may next try to become it (``Homes.claim``).
    home = False
    claim_after = 0.0
    #: Shared: the worker that is its home, as this worker last heard (None: not known).
    home_worker: str | None = None
    #: Shared: the generation of its record this worker's connection took up (``SharedSessions.touch``).
    generation: int | None = None
    #: Who made it (``shares.client_of``): its handlers' share of the pool, its sessions' count.
    client: str | None = None
    #: The release of its place among its client's sessions (``max_sessions_per_client``), held
    #: only by a session made in this process; a replica holds nothing.
    client_place: Callable[[], None] | None = None
    #: Its connection's jobs on the shared handler pool (``shares.CountedPool``, made by
    #: ``HttpAppBase.new_connection``): an abandoned session's still queued are withdrawn.
    jobs: PoolJobs | None = None
    #: When a request last named it (``time.monotonic``): its client's least recently used idle
    #: session is ended to make room for a new one.
    last_used = 0.0
    #: Shared: how many GETs of this worker follow its streams in the shared event store
    #: (``SharedSessions.follow``; under :attr:`lock`).
    followers = 0
    #: Shared: this worker's mark that the session is in use here is held (``Homes.mark_in_use``).
    marked_in_use = False

    def __init__(self, app: SessionOwner, session_id: str | None, *, kind: str = "streamable"):
        self.app = app
        self.id = session_id
        self.kind = kind  # "streamable", "stateless" or "legacy"
        self.lock = threading.Lock()
        self.by_request: dict = {}
        self.by_id: dict[str, Stream] = {}
        #: The GET stream (Streamable HTTP and the legacy transport; a stateless request has none).
        self.standalone = (
            None
            if kind == "stateless"
            else Stream("s", limit=app.standalone_backlog, byte_limit=app.backlog_bytes)
        )
        if self.standalone is not None:
            self.by_id["s"] = self.standalone
        self._numbers = itertools.count(1)
        #: Served by every worker (:mod:`.shared`): its standalone stream and the POST streams whose
        #: client has gone are in the shared event store, followed from any worker.
        self.shared = app.shared and kind == "streamable"
        #: Request id -> what its success changes in the session's record (``SharedSessions.change_of``):
        #: saved for every worker before the answer goes out.  Bounded by the requests in progress.
        self.saving: dict = {}
        #: Shared: stream ids are unique across workers (an event id names its stream).
        self._suffix = "-" + app.shared_sessions.worker if self.shared else ""
        #: The HTTP request each request in progress came in on (``Context.http``): per request, as a
        #: session's requests arrive on POSTs of their own.  Bounded (``request.NOTES_KEPT``).
        self.notes = RequestNotes()
        #: The streams an answer is on its way to (stream -> how many), under :attr:`lock`: a
        #: close() meanwhile leaves them to it (:meth:`_delivered`).
        self._delivering: dict[Stream, int] = {}

    # the Transport protocol

    def write(self, data: bytes, message=None, related=None) -> None:
        """Route one outgoing message to the stream of the request it relates to."""
        answers = None
        if isinstance(message, (Response, ErrorResponse)):
            answers = [message.id]
        elif isinstance(message, list):
            answers = [m.id for m in message]
        if answers is not None:
            self.notes.forget(answers)
            changes = [
                self.saving.pop(request_id) for request_id in answers if request_id in self.saving
            ]
            if not isinstance(message, ErrorResponse):
                for change in changes:
                    # every worker knows before the client does
                    self.app.shared_sessions.save(self, change)
        delivering = None
        with self.lock:
            stream = self.by_request.get(related)
            end = False
            if stream is not None and answers is not None:
                for request_id in answers:
                    stream.answers.discard(request_id)
                    self.by_request.pop(request_id, None)
                end = not stream.answers
                if stream.refused and isinstance(message, list):
                    # the whole batch's array (its one write: mcp_ref.batch), its refusals in it
                    data = serialize([*message, *stream.refused])
                    stream.refused = ()
                # on its way: a close() meanwhile leaves the stream to this answer (_delivered)
                delivering = stream
                self._delivering[stream] = self._delivering.get(stream, 0) + 1
            elif stream is not None and stream.answers is not None and self.app.json_response:
                # JSON-only replies: what is not the answer goes to the standalone stream
                stream = None
        try:
            self._deliver(stream, data, message, answers, end)
        finally:
            if delivering is not None:
                self._delivered(delivering)
        if end and self.id is not None:
            self.app.answered(self.id)  # idle from its last answer, however long the request ran

    def _delivered(self, stream: Stream) -> None:
        """An answer of ``stream`` has been delivered: if the session was closed meanwhile, which
        left the stream to it, the stream ends now (2025-11-25 basic/transports §Sending Messages:
        a POSTed request is answered, never left with no body)."""
        with self.lock:
            left = self._delivering.pop(stream) - 1
            if left:
                self._delivering[stream] = left
            ended_under = self.closed and not left
        if ended_under:
            stream.end()
            if self.shared:
                self.mark_end(stream)

    def _deliver(self, stream: Stream | None, data: bytes, message, answers, end: bool) -> None:
        """Send ``data`` on ``stream`` (None: the standalone stream, where an answer never goes)."""
        if stream is None:
            if answers is not None and self.kind != "legacy":
                # basic/transports §Listening: the server "MUST NOT send a JSON-RPC response on the
                # [GET] stream unless resuming a stream associated with a previous client request".
                # (A session that has ended answered its requests already: SESSION_ENDED.)
                (log.debug if self.closed else log.warning)(
                    "dropped an answer whose request has no open stream (ids %s)", answers
                )
                return
            if self.kind == "stateless":
                log.debug("stateless mode: dropped a message that belongs to no request")
                return
            stream = cast(Stream, self.standalone)  # not stateless: it has one
            if self.shared:  # followed from the shared store by whichever worker holds the GET
                self.app.event_store.store(cast(str, self.id), stream.id, data)
                return
        direct = stream.direct
        if self.modern and isinstance(message, ErrorResponse):
            stream.status = modern_status(cast(int, message.error.get("code")))
            if direct is not None:
                direct.status = stream.status
        if direct is not None and direct.send(data, end):
            return
        if self.shared and self._spill(stream, data, end):
            return
        # an answer is queued past the stream's bounds (Stream.put): on HTTP+SSE the 503 to new
        # POSTs holds the client back, not the end of a session that reads (2024-11-05
        # basic/transports §HTTP with SSE: "Server messages are sent as SSE message events")
        if not stream.put(data, end=end, answer=answers is not None):
            self._overflow(stream)
        elif end and stream.orphaned:
            # the answer of a POST whose client has gone: keep it where a GET finds it
            self.settle(stream)

    def _spill(self, stream: Stream, data: bytes, end: bool) -> bool:
        """Shared: a POST stream whose client has gone is written through to the event store (with
        its end), where a resuming GET on any worker follows it.  False: it has a consumer here."""
        with stream.cond:
            if not stream.orphaned or stream.consumer is not None:
                return False
            self._store_queued(stream)  # in order, before this one
            self.app.event_store.store(cast(str, self.id), stream.id, data)
            if end:
                self.mark_end(stream)
                stream.end()
        if end:
            self.forget_stream(stream)
        return True

    def _store_queued(self, stream: Stream) -> None:
        """Move the messages ``stream`` holds undelivered to the event store, in order (under its
        lock; a stateful session's: it has an id)."""
        for data in stream.clear():
            self.store_event(stream.id, data)

    def store_event(self, stream_id: str, data: bytes) -> str:
        """Keep one event of its stream ``stream_id`` for ``Last-Event-ID``; its id.  A session of
        this process that has ended is forgotten again: :meth:`close` may have dropped its events
        just before a response still writing stored this one, and nothing can resume it now."""
        event_id = self.app.event_store.store(cast(str, self.id), stream_id, data)
        if self.closed and not self.shared:  # close() sets closed before it forgets
            self.app.event_store.forget(cast(str, self.id))
        return event_id

    def mark_end(self, stream: Stream) -> None:
        """Shared: store the end of a POST stream once its last event is stored (its followers stop there)."""
        with stream.cond:
            if self.shared and not stream.end_stored:
                stream.end_stored = True
                self.app.event_store.end_stream(cast(str, self.id), stream.id)

    def _overflow(self, stream: Stream) -> None:
        """The stream is full (its client reads too slowly, or not at all): never lose a message in silence.

        Never an answer (:meth:`Stream.put` always queues one).  On the legacy transport the
        stream is the whole connection: a notification or request of the server's that finds it
        full ends the session, with the reason logged (its client reconnects and starts again).
        On Streamable HTTP the message is dropped with a log line.
        """
        if self.kind == "legacy":
            log.warning(
                "legacy session %s: its event stream holds %d undelivered messages, %d bytes (the "
                "client reads too slowly); the session is ended rather than drop a message in silence",
                (self.id or "")[:8],
                len(stream.items),
                stream.held_bytes,
            )
            self.app.end_session(cast(str, self.id))  # a legacy session has an id
        # once a spell: a client that stopped reading must not flood the log
        elif stream.dropped == 1:
            log.warning(
                "session %s: stream %s is full (%d undelivered messages, %d bytes: its client reads "
                "too slowly or has gone); its messages other than the answer are dropped until there "
                "is room",
                (self.id or "")[:8],
                stream.id,
                len(stream.items),
                stream.held_bytes,
            )

    def dispatch_within_share(self, message) -> None:
        """Dispatch a 2024-11-05 message (or batch) on this session, within its client's share of
        the handler pool (``HttpAppBase.share_handlers``), wherever it was POSTed (here, or on
        another worker: ``SharedSessions``).  Past the share, a request is answered -31000 on the
        stream: 2024-11-05 basic/transports §HTTP with SSE, "Server messages are sent as SSE
        message events"; the POST is accepted (202), its client's session goes on.  A batch's
        refusals take their requests' places in its one array (JSON-RPC 2.0 §6)."""
        items = message if isinstance(message, list) else [message]
        kept, refused, release = self.app.share_handlers(self, items)
        connection = cast(Connection, self.connection)
        try:
            if isinstance(message, list):
                from ...batch import Answered  # only for a batch

                kept_here = {id(item) for item in kept}
                refusals = iter(refused)
                connection.dispatch(
                    [item if id(item) in kept_here else Answered(next(refusals)) for item in items]
                )
            elif kept:
                connection.dispatch(kept[0])
            else:
                self.write(serialize(refused[0]), refused[0])
        finally:
            release()

    def request_finished(self, request_id) -> None:
        """A request ended with no answer (it was cancelled): end its stream if nothing else waits."""
        self.saving.pop(request_id, None)
        self.notes.forget((request_id,))
        with self.lock:
            stream = self.by_request.pop(request_id, None)
            if stream is None:
                return
            stream.answers.discard(request_id)
            done = not stream.answers
            refused = stream.refused if done else ()
            stream.refused = () if done else stream.refused
        if not done:
            return
        if refused:
            # a batch partly refused whose kept requests were all cancelled: its refusals are still
            # its answer, one array (JSON-RPC 2.0 §6; a POSTed request is never left with no body)
            self._deliver(stream, serialize(list(refused)), list(refused), None, True)
        else:
            stream.end()
        self.settle(stream)

    @property
    def http_hooks(self) -> ServerHooks:
        """What the server's ``Context`` asks of HTTP (:class:`~.request.ServerHooks`): this session."""
        return self

    def http_request(self, request_id) -> HttpRequest | None:
        """The HTTP request ``request_id`` came in on, while it is served (``Context.http``)."""
        return self.notes.get(request_id)

    def close_stream(self, request_id) -> bool:
        """Close the connection carrying ``request_id``'s stream, keeping the stream (SSE polling).

        2025-11-25 basic/transports §Sending Messages: "the server MAY close the connection
        (without terminating the SSE stream) at any time"; the client resumes with GET and
        Last-Event-ID after ``retry``.  Returns False when no connection carries the stream now,
        so nothing was closed: the request has no open stream, or the client has not resumed it
        since it was last closed (then an inline handler's own POST, once closed, ends only when
        the handler returns: a running WSGI call cannot end its response).

        False too, closing nothing, in a session that negotiated a revision before 2025-11-25
        (2025-06-18 and 2025-03-26 basic/transports §Sending Messages: "The server SHOULD NOT close
        the SSE stream before sending the JSON-RPC response"; SSE polling, SEP-1699, came with
        2025-11-25), and in an application that answers in JSON (``json_response=True``: the
        POST's answer is no SSE stream, and closing it would make it one).
        """
        if not lifecycle.at_least(self.version, SSE_POLLING) or self.app.json_response:
            return False
        with self.lock:
            stream = self.by_request.get(request_id)
        if stream is None or self.kind != "streamable":
            return False
        direct = stream.direct
        if direct is not None and not direct.broken:
            direct.close_connection()  # the POST's own response, its handler running inline
            return True
        # the response serving the stream now: the POST's relay, or a GET that resumed it (never
        # the inline POST's response again, which no longer carries it)
        return stream.close_connection()

    def read(self) -> bytes | None:
        """Never called: the WSGI application feeds the session."""
        raise RuntimeError("HTTP sessions are fed by the WSGI application, not read")

    @property
    def serving(self) -> bool:
        """True while a request POSTed on the session is in progress (its answer not yet sent): the
        session is in use, never idle (``HttpAppBase._expired``)."""
        with self.lock:
            return bool(self.by_request)

    @property
    def in_use(self) -> bool:
        """True while this process serves one of its requests or a client listens on one of its
        streams here (its own GET stream, or a shared one followed from the event store): never
        ended as its client's least recently used idle session (``HttpAppBase._idlest_session_of``)."""
        with self.lock:
            if self.by_request or self.followers:
                return True
        return self.standalone is not None and self.standalone.consumer is not None

    def close(self) -> None:
        """End every stream; the session is gone.  A request still in progress is answered with
        :data:`SESSION_ENDED` (its handler is cancelled by the connection's close)."""
        with self.lock:
            if self.closed:
                return
            self.closed = True
            # a stream whose answer is on its way ends once it is delivered (_delivered)
            streams = [stream for stream in self.by_id.values() if stream not in self._delivering]
            unanswered: dict[Stream, list] = {}
            for request_id, stream in self.by_request.items():
                unanswered.setdefault(stream, []).append(request_id)
            self.by_request.clear()
        for stream, request_ids in unanswered.items():
            self._answer_ended(stream, request_ids)
        for stream in streams:
            stream.end()
            if self.shared and stream is not self.standalone:
                # its request ends with this worker's hold: a follower elsewhere stops
                self.mark_end(stream)
        # its events stay for the other workers (``SharedSessions.ended`` forgets them)
        if self.shared:
            # this process's followers see it has ended
            self.app.event_store.wake(cast(str, self.id))
        elif self.id is not None:
            self.app.event_store.forget(self.id)

    def _answer_ended(self, stream: Stream, request_ids: list) -> None:
        """Answer ``request_ids`` (the rest of ``stream``'s) with :data:`SESSION_ENDED`, on the
        POST's own response (or queued for a resuming GET), and end the stream."""
        errors: list[Message] = [
            ErrorResponse(request_id, SESSION_ENDED) for request_id in request_ids
        ]
        errors += stream.refused
        data = serialize(errors if stream.batch else errors[0])
        direct = stream.direct
        if direct is not None and direct.send(data, True):
            return
        stream.put(data, end=True)

    # streams

    def open_stream(self, request_ids: list, *, batch: bool = False) -> Stream:
        """A stream for the answers to ``request_ids`` (registered before they are dispatched;
        ``batch``: they came in one JSON-RPC batch, answered as one array)."""
        stream = Stream(
            f"p{next(self._numbers)}{self._suffix}",
            answers=request_ids,
            limit=self.app.stream_backlog,
            byte_limit=self.app.backlog_bytes,
        )
        stream.batch = batch
        with self.lock:
            if any(request_id in self.by_request for request_id in request_ids):
                # basic §Requests: an id "MUST NOT have been previously used by the requestor
                # within the same session" — and its answer must not be routed to another POST.
                raise BadRequest("Invalid Request: a request with this id is already in progress")
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
                stream.clear()
                stream.items.append(END)
            for request_id in pending:
                if self.connection is not None and self.connection.cancel_incoming(request_id):
                    log.debug(
                        "stateless request %r cancelled: its client has gone and nothing can resume it",
                        request_id,
                    )
            self.forget_stream(stream)
            return
        with stream.cond:
            # shared: moved to the event store even while its requests run, and from now on written
            # through (``_spill``); otherwise only once it has ended
            if (
                stream.consumer is not None
                or not stream.orphaned
                or not (self.shared or stream.ended)
            ):
                return
            self._store_queued(stream)
            if stream.ended:
                self.mark_end(stream)  # shared: its followers stop there
                stream.items.append(
                    END
                )  # a GET that took the stream just before still sees its end
        if stream.ended:
            self.forget_stream(stream)

    def forget_stream(self, stream: Stream) -> None:
        """The session no longer knows ``stream`` (it has ended and been delivered, or stored)."""
        with self.lock:
            if stream is not self.standalone:
                self.by_id.pop(stream.id, None)

    @property
    def version(self) -> str | None:
        """The protocol version its connection negotiated (None before ``initialize``)."""
        return self.connection.protocol_version if self.connection is not None else None
