"""Handshake-era sessions on any worker: what the HTTP application does when its session table and
its event store are shared by every worker of the deployment (``Server(state="redis://...")``).

A session is made where ``initialize`` ran, its *home*, and served by any worker from its record in
the session table (:class:`~.sessions.SessionRecord`: the negotiated version, the client's
capabilities and info, its principal, log level and subscriptions).  A worker that meets a session
it does not hold builds a *replica* of it: an :class:`~.http_session.HttpSession` and a connection
resumed from the record (:func:`resume`).  What a request needs stays on the worker serving
it (its POST stream, its handler); what must reach another worker goes over the bus, channel
:data:`SESSIONS`:

- a message of the client's that answers or cancels a request open on another worker (a
  server→client request's answer, ``notifications/cancelled``, ``notifications/progress``): each
  worker dispatches it only if it holds that request (``Connection.holds``);
- a changed log level or subscription (``logging/setLevel``, ``resources/subscribe``): saved in the
  record before the client hears the answer, then every holder takes it up.  The bus may be late:
  a request the client sends after that answer can reach another worker first, so every request
  also compares the record's generation with its replica's (:meth:`SharedSessions.touch`, on the
  touch each request makes anyway) and reads the record again when it changed (read-your-writes);
- the session's end (DELETE, eviction, expiry): every holder ends its replica;
- a 2024-11-05 POST made on another worker than the one holding its stream: to that worker, which
  sends its word on it back (taken, or refused: its stream full) before it runs it, so the POST is
  answered 202 only for a message taken (:meth:`SharedSessions.forward_legacy`).

SSE goes through the shared event store (:class:`~.events.EventStore`, ``shared``): the standalone
stream's messages are stored, never queued in one process, and a GET on any worker follows them
(``wait_after``); a POST stream whose client has gone is written through to the store, with an end
marker, so ``Last-Event-ID`` resumes it on any worker.  Change notifications (list changes, resource
updates) are sent by the home's connection only, once per session.  See ``spec_notes/deployment.md``,
"Handshake sessions on any worker", for the choices and what proves them.
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, cast

from ... import jsonrpc, lifecycle
from ...jsonrpc import ErrorResponse, Notification, Response
from ...server.principal import principal_id_of
from ..sse import KEEPALIVE, sse_event
from .homes import Homes
from .http_session import HttpSession, SessionOwner
from .replies import SSE_HEADERS, held, on_client_gone, retry_event
from .shares import client_of, once
from .status import NotFound, ServiceUnavailable

if TYPE_CHECKING:
    from .host import Connection, Host
    from .sessions import SessionRecord, SessionTable

log = logging.getLogger(__name__)

#: The bus channel of the sessions every worker serves (see the module docstring).
SESSIONS = "sessions"
#: The stream id of a session's standalone (GET) stream in the shared event store: one per session.
STANDALONE = "s"
#: Seconds between a worker's checks that the sessions it holds still have their records.
RECONCILE_EVERY = 10.0
#: The prefix of a record's key for each subscribed URI (one key each: two workers subscribing at once both count).
SUBSCRIBED = "sub:"
#: A session's cancellations of requests running on other workers (sent to every worker): at most
#: FORWARD_BURST at once, refilled over FORWARD_WINDOW seconds (20 a second); past it, dropped with
#: a warning.
FORWARD_BURST, FORWARD_WINDOW = 50, 2.5
#: Seconds a client's message for one other worker (an answer to its request, a progress report)
#: is published again while no process hears it (that worker's pub/sub connection is reconnecting:
#: the bus's backoff starts at 0.05 s); past it the POST is refused 503 with ``Retry-After``
#: (:data:`RESEND_AFTER` seconds), so the client sends it again.  The pauses between the tries start
#: at DELIVERY_PAUSE and double.
DELIVERY_WINDOW, DELIVERY_PAUSE, RESEND_AFTER = 2.0, 0.05, "1"
#: A worker's word on a 2024-11-05 POST forwarded to it (:meth:`SharedSessions.forward_legacy`): it
#: took the message, its stream is full, or it holds no such session (its stream has closed).
TAKEN, FULL, GONE = "taken", "full", "gone"
#: The key of a 2024-11-05 session's record saying its stream's worker sends that word (a worker of
#: this release); an earlier release's sends none, and its forwarder answered 202 once heard.
SENDS_VERDICTS = "verdicts"
#: Locks serializing the reads of records into replicas (a session's: by its id's hash), so that a
#: request's read and the bus's never apply an older record over a newer one.
REFRESH_LOCKS = 64

_APPS = itertools.count(1)


@functools.cache
def worker_id() -> str:
    """This process's name among the deployment's workers: random, and a new one after ``fork``
    (gunicorn ``--preload`` forks workers from one loaded process)."""
    return secrets.token_hex(4)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=worker_id.cache_clear)


def table_call(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A call of the shared session table; 503 with ``Retry-After`` when its store cannot serve
    (unreachable, or out of memory: the table raises a builtin ConnectionError either way; a
    session is neither found nor lost meanwhile: the client retries)."""
    try:
        return call(*args, **kwargs)
    except ConnectionError as error:
        log.warning("session table unavailable: %s", error)
        raise ServiceUnavailable(
            "Service Unavailable: the session store cannot serve now; retry shortly",
            headers=[("Retry-After", "2")],
        ) from None


class SharedOwner(SessionOwner, Protocol):
    """What :class:`SharedSessions` asks of its application (``HttpAppBase``)."""

    server: Host
    session_table: SessionTable
    event_store: Any
    keepalive: float
    retry_ms: int

    def bound_session(
        self, environ: dict, session_id: str | None, kind: str, name: str
    ) -> HttpSession:
        """A session, its connection made and bound to the caller of ``environ``."""

    def adopt(self, session: HttpSession) -> HttpSession:
        """Hold a replica in this process (or the one another request built first)."""

    def live_session(self, session_id: str) -> HttpSession | None:
        """This process's hold of a session, if any."""

    def end_here(self, session: HttpSession, *, for_good: bool = False) -> None:
        """End this process's hold of a session."""

    def hold_stream(self, environ: dict, request_id: Any = None) -> Callable[[], None]:
        """Count a long-lived stream against its client's cap; returns its release."""

    def shared_held(self) -> list[HttpSession]:
        """The sessions served by every worker that this process holds now (:mod:`.homes`)."""


class Verdicts:
    """The words a worker waits for, one per 2024-11-05 POST it forwarded to the worker holding its
    session's stream (:meth:`SharedSessions.forward_legacy`), each under a reply token of its own:
    :data:`TAKEN`, :data:`FULL` or :data:`GONE`.  One entry per POST being answered, forgotten
    when it is."""

    def __init__(self) -> None:
        self._waiting: dict[str, tuple[threading.Event, list[str]]] = {}
        self._lock = threading.Lock()

    def expect(self) -> str:
        """A new reply token, its word awaited (:meth:`wait`; :meth:`forget` it after)."""
        reply = secrets.token_hex(8)
        with self._lock:
            self._waiting[reply] = (threading.Event(), [])
        return reply

    def settle(self, reply: Any, verdict: Any) -> None:
        """The word for ``reply`` came (one for no POST waiting now, or unreadable: ignored)."""
        with self._lock:
            waiting = self._waiting.get(reply) if isinstance(reply, str) else None
        if waiting is not None and verdict in (TAKEN, FULL, GONE):
            waiting[1].append(verdict)
            waiting[0].set()

    def wait(self, reply: str, timeout: float) -> str | None:
        """The word for ``reply``, once it came, within ``timeout`` seconds (None: none came)."""
        with self._lock:
            event, verdicts = self._waiting[reply]
        event.wait(timeout)
        return verdicts[0] if verdicts else None

    def forget(self, reply: str) -> None:
        """No longer waiting for ``reply``'s word."""
        with self._lock:
            self._waiting.pop(reply, None)


class SharedSessions:
    """The sessions of an application whose workers share them (``app.shared``; see the module docstring)."""

    def __init__(self, app: SharedOwner):
        self.app = app
        self._serial = next(_APPS)
        self._listening: list[Callable[[], None]] = []
        #: The application closed: nothing is subscribed again (a session ending after it still
        #: publishes its end).
        self._closed = False
        self._lock = threading.Lock()
        self._reconciled = time.monotonic()
        self._refreshing = [threading.Lock() for _ in range(REFRESH_LOCKS)]
        #: Who sends each session's change notifications, and moving a dead worker's (:mod:`.homes`).
        self.homes = Homes(app, lambda: self.worker, self._publish)
        #: The words this worker waits for on the 2024-11-05 POSTs it forwarded.
        self.verdicts = Verdicts()

    @property
    def worker(self) -> str:
        """This application's name among the deployment's: its process's (:func:`worker_id`) and its
        number in the process (two applications in one process are two workers)."""
        return f"{worker_id()}{self._serial}"

    def request_ids(self) -> Iterator[str]:
        """The ids of a replica's requests to the client, ``<worker>-<n>``: unique in the session
        however many workers serve it (basic §Requests: an id "MUST NOT have been previously used by
        the requestor within the same session"), and naming the worker the answer must reach."""
        worker = self.worker
        return (f"{worker}-{n}" for n in itertools.count(1))

    # -- records ---------------------------------------------------------------------------------

    def record(self, session: HttpSession) -> None:
        """A new session, just initialized here: its record, for every worker (this one its home)."""
        self.listen()
        state = record_state(session, self.worker)
        table_call(self.app.session_table.add, cast(str, session.id), state)
        session.generation = 0  # a new record has had no update
        if session.shared:  # a 2024-11-05 session never moves: its stream is where it lives
            self.homes.hold_new(session)
        else:  # among the live workers: a POST forwarded to its stream waits for it (_deliver)
            self.homes.store()

    def replica(self, session_id: str, environ: dict) -> HttpSession:
        """The session ``session_id`` made by another worker, served here from its record: 404 when
        there is none (or another principal asks, or it is a 2024-11-05 session, which lives in its
        stream's worker)."""
        record = table_call(self.app.session_table.get, session_id)
        state = record["state"] if record is not None else {}
        if (
            record is None
            or not state.get("version")
            or state.get("legacy")
            or not owned_by(state, environ.get("mcp_ref.oauth"))
        ):
            raise NotFound("Session not found: start a new session with initialize")
        self.listen()
        app = self.app
        session = app.bound_session(environ, session_id, "streamable", f"http-{session_id[:8]}")
        take_up(session, record, app.server)
        existing = app.adopt(session)
        if existing is not session:  # another request built it first
            cast("Connection", session.connection).close()
            return existing
        # what changed between the read and now: the request's touch sees a newer generation (touch)
        return session

    def touch(self, session: HttpSession) -> bool:
        """A request names ``session``: seen now (False: its record is gone, or expired, for every
        worker), and the record taken up again first if another worker changed it since this worker
        last did.

        2025-11-25 server/utilities/logging §Setting Log Level: after ``logging/setLevel`` the server
        sends messages at that level and above ("Level Change ... Only sends error level and above").
        The worker answering it saved the level before the answer went out (:meth:`save`), so a
        request sent after the answer, to any worker, must obey it; the bus message that tells the
        other workers (:meth:`_hear`) may come later than that request.  So the touch every request
        makes anyway also returns the record's ``generation`` (``touch_generation``; one round trip,
        as before) and a worker reads the record again only when it differs from its replica's.  A
        shared table that counts no generations is read on every request.
        """
        table = self.app.session_table
        session_id = cast(str, session.id)
        touch_generation = getattr(table, "touch_generation", None)
        if touch_generation is None:  # a table that counts no generations: read every time
            alive = table_call(table.touch, session_id)
            if alive:
                self.refresh(session)
            return alive
        alive, generation = table_call(touch_generation, session_id)
        # generation None: the store could not say (a fault, already logged): served as the
        # replica is
        if alive and generation is not None and generation != session.generation:
            self.refresh(session)
        return alive

    def refresh(self, session: HttpSession) -> None:
        """Take up the session's record as it is now (another worker changed it).  One read at a time
        per session: a request's and the bus's, at once, never leave the older record applied."""
        session_id = cast(str, session.id)
        with self._refreshing[hash(session_id) % REFRESH_LOCKS]:
            record = table_call(self.app.session_table.get, session_id)
            if record is not None:
                take_up(session, record, self.app.server)

    def forward_legacy(self, environ: dict, session_id: str, message: Any) -> bool:
        """A 2024-11-05 POST for a session whose stream another worker holds: over the bus to it
        (the stream is the session: its answers can only go there), and that worker's word on it.
        True: it took the message (the POST's 202); False: it refused it, the stream being full
        (the POST's 503, as if POSTed there: ``LegacySse.post``).  404 when there is no such
        session, another principal asks, or its worker has gone.  A stream held by a worker of an
        earlier release (its record without :data:`SENDS_VERDICTS`) sends no word: 202 once heard,
        as that release answered.

        The POST's 202 says its answer will come on the stream, so it is given only once that
        worker heard the message and took it.  Not heard (its pub/sub connection reconnecting:
        :meth:`_deliver`), or no word back from it within :data:`DELIVERY_WINDOW`: 503 with
        ``Retry-After`` (RFC 9110 §15.6.4, §10.2.3: the client sends it again), as a Streamable
        HTTP client's answer for another worker is.  That worker runs the message only once its
        word reached a process (:meth:`_take_legacy`), so a message refused for want of a word
        was not run."""
        record = table_call(self.app.session_table.get, session_id)
        state = record["state"] if record is not None else {}
        home = state.get("home")  # where its stream is
        if (
            not state.get("legacy")
            or not isinstance(home, str)
            or not owned_by(state, environ.get("mcp_ref.oauth"))
        ):
            raise NotFound("Session not found")
        table_call(self.app.session_table.touch, session_id)
        reply = self.verdicts.expect()
        try:
            heard = self._deliver(
                session_id,
                home,
                jsonrpc.serialize(message).decode(),
                kind="legacy",
                principal=state.get("principal"),
                reply=reply,
            )
            if not heard:  # its home has gone, and the stream, which is the session, with it
                raise NotFound("Session not found")
            if not state.get(SENDS_VERDICTS):
                # a worker of an earlier release holds the stream: it sends no word, and runs the
                # message as heard (waiting for a word would refuse 503 what it ran, and each
                # retry would run it again)
                return True
            verdict = self.verdicts.wait(reply, DELIVERY_WINDOW)
        finally:
            self.verdicts.forget(reply)
        if verdict == GONE:
            raise NotFound("Session not found")
        if verdict is None:
            log.warning(
                "session %s: worker %s sent no word on a forwarded message within %g s; "
                "refused (503), for the client to send again",
                session_id[:8],
                home,
                DELIVERY_WINDOW,
            )
            raise ServiceUnavailable(
                "Service Unavailable: the worker this message is for cannot be reached now; "
                "retry shortly",
                headers=[("Retry-After", RESEND_AFTER)],
            )
        return verdict == TAKEN

    @staticmethod
    def change_of(request: Any) -> dict | None:
        """What a successful ``request`` changes in the session's record, key by key (None: nothing),
        so that two workers changing different keys at once both count."""
        params = request.params if isinstance(request.params, dict) else {}
        if request.method == "logging/setLevel" and isinstance(params.get("level"), str):
            return {"logLevel": params["level"]}
        if request.method in ("resources/subscribe", "resources/unsubscribe") and isinstance(
            params.get("uri"), str
        ):
            return {
                SUBSCRIBED + params["uri"]: True
                if request.method == "resources/subscribe"
                else None
            }
        return None

    def save(self, session: HttpSession, change: dict) -> None:
        """What the session negotiated changed here (``change``: a log level, a subscription): into its
        record, then every worker holding it reads the record again (before the client hears the answer)."""
        session_id = cast(str, session.id)
        if table_call(self.app.session_table.update, session_id, change):
            self._publish(session_id, "state")

    def ended(self, session_id: str) -> None:
        """The session ended for good (DELETE, eviction, expiry): every worker ends its replica, and
        its events go."""
        self._publish(session_id, "end")
        self.app.event_store.forget(session_id)

    def reconcile_due(self) -> bool:
        """True at most once every :data:`RECONCILE_EVERY` seconds: time to :meth:`reconcile`."""
        now = time.monotonic()
        if now - self._reconciled < RECONCILE_EVERY:
            return False
        self._reconciled = now
        return True

    def reconcile(self, held: list[HttpSession]) -> list[HttpSession]:
        """Of the sessions this worker holds, those whose record is gone (its end was missed: a bus
        message lost, an expiry found by another worker)."""
        if not held:
            return []
        alive = table_call(
            self.app.session_table.alive, [cast(str, session.id) for session in held]
        )
        return [session for session in held if session.id not in alive]

    # -- messages for another worker ----------------------------------------------------------------

    def route(self, session: HttpSession, items: list) -> list:
        """The client's answers and notifications (``items``) that this worker dispatches; one that
        names a request open on another worker goes over the bus to it instead: an answer or a
        progress report to the worker its id names; a cancellation (the client's id names no worker)
        to every worker, within the session's budget (``HttpSession.forwarding``)."""
        connection = cast("Connection", session.connection)
        session_id = cast(str, session.id)
        here = []
        for item in items:
            held_here = self.holds(connection, item)
            if held_here is not False:
                here.append(item)
            if _is_initialized(item):  # every holder's connection may now send what it withheld
                self._publish(session_id, "message", data=jsonrpc.serialize(item).decode())
            elif held_here is False:
                to = _worker_of(item)
                if to == "" or to == self.worker:
                    continue  # names no request of any worker's (or one of ours already over): dropped
                if to is None:
                    if session.forwarding is None:
                        from ...state.stores import MemoryBuckets

                        session.forwarding = MemoryBuckets(max_keys=1)
                    if session.forwarding.take(SESSIONS, FORWARD_BURST, FORWARD_WINDOW):
                        log.warning(
                            "session %s: cancellations for requests on other workers come too fast; "
                            "one was dropped",
                            session_id[:8],
                        )
                        continue
                data = jsonrpc.serialize(item).decode()
                if to is None:
                    self._publish(session_id, "message", data=data)
                else:
                    self._deliver(session_id, to, data)
        return here

    def _deliver(
        self, session_id: str, to: str, data: str, *, kind: str = "message", **fields: Any
    ) -> bool:
        """Publish a client's message for worker ``to``, and make sure a process heard it: True once
        one did, False when ``to`` is known to have gone (the message is dropped).

        PUBLISH answers how many processes heard it: 0 while ``to``'s pub/sub connection is
        reconnecting, and pub/sub keeps nothing, so the answer would be lost and the request left
        waiting for its timeout.  Published again within :data:`DELIVERY_WINDOW`; then refused, as
        2025-11-25 basic/transports §Sending Messages to the Server says: "If the server cannot
        accept the input, it MUST return an HTTP error status code"; 503 with ``Retry-After``: the
        client sends it again.  A worker known to have gone waits for nothing: dropped at once.
        """
        deadline = time.monotonic() + DELIVERY_WINDOW
        pause = DELIVERY_PAUSE
        while not self._publish(session_id, kind, to=to, data=data, **fields):
            if not self.homes.worker_alive(to):
                # the request it answers (or the stream it is for) ended with its worker
                return False
            left = deadline - time.monotonic()
            if left <= 0:
                log.warning(
                    "session %s: a message for worker %s was heard by no process for %g s; "
                    "refused (503), for the client to send again",
                    session_id[:8],
                    to,
                    DELIVERY_WINDOW,
                )
                raise ServiceUnavailable(
                    "Service Unavailable: the worker this message is for cannot be reached now; "
                    "retry shortly",
                    headers=[("Retry-After", RESEND_AFTER)],
                )
            time.sleep(min(pause, left))
            pause *= 2
        return True

    @staticmethod
    def holds(connection: Connection, item: Any) -> bool | None:
        """True when ``item`` names a request open on ``connection``; False when it names one that is
        not; None for a message about no request (dispatched where it arrives)."""
        if isinstance(item, (Response, ErrorResponse)):
            return item.id is not None and connection.holds(item.id, ours=True)
        if isinstance(item, Notification):
            params = item.params or {}
            if item.method == "notifications/cancelled":
                return jsonrpc.valid_id(params.get("requestId")) and connection.holds(
                    params["requestId"], ours=False
                )
            # our requests' progress tokens are their ids
            if item.method == "notifications/progress":
                return jsonrpc.valid_id(params.get("progressToken")) and connection.holds(
                    params["progressToken"], ours=True
                )
        return None

    def listen(self) -> None:
        """Hear the other workers' messages about sessions (once per application): those for every
        worker, and those addressed to this one."""
        with self._lock:
            if not self._listening and not self._closed:
                bus = self.app.server.bus
                self._listening = [
                    bus.subscribe(SESSIONS, self._hear),
                    bus.subscribe(f"{SESSIONS}:{self.worker}", self._hear),
                ]

    def close(self) -> None:
        """Stop hearing them (the application closes), and let go of every home this worker held."""
        with self._lock:
            self._closed = True
            stops = self._listening
            self._listening = []
        for stop in stops:
            stop()
        self.homes.close()  # every home this worker held is free for another worker now

    def _publish(self, session_id: str, kind: str, *, to: str | None = None, **fields: Any) -> int:
        """Publish a message about a session, for every worker or worker ``to``: how many
        processes heard it (0: none, or the bus failed)."""
        self.listen()
        channel = SESSIONS if to is None else f"{SESSIONS}:{to}"
        return self.app.server.bus.publish(
            channel, {"session": session_id, "kind": kind, "from": self.worker, **fields}
        )

    def _hear(self, message: dict) -> None:
        """A message of another worker's about a session: acted on only where the session is held."""
        if message.get("from") == self.worker:
            return
        kind = message.get("kind")
        if kind == "verdict":  # another worker's word on a 2024-11-05 POST forwarded from here
            self.verdicts.settle(message.get("reply"), message.get("verdict"))
            return
        session = self.app.live_session(str(message.get("session")))
        if session is None or session.closed:
            if kind == "legacy":  # its stream has closed: the session has ended
                self._answer_forward(message, GONE)
            return
        connection = cast("Connection", session.connection)
        if kind == "end":
            self.app.end_here(session, for_good=True)
        elif kind in ("home", "homeless"):  # another worker claimed it, or its home let go
            self.homes.heard(session, kind, message.get("from"))
        elif kind == "state":
            try:
                self.refresh(session)
            except ServiceUnavailable:
                # the table is unreachable: the next change brings it up to date
                log.warning(
                    "session %s: could not read its record after a change",
                    cast(str, session.id)[:8],
                )
        elif kind in ("message", "legacy") and isinstance(message.get("data"), str):
            try:
                item = jsonrpc.parse(message["data"].encode())
            except Exception:
                # a worker of this deployment sent it; never let it end the bus's thread
                log.warning("dropped an unreadable session message from another worker")
                return
            if kind == "legacy":  # a 2024-11-05 POST another worker took for this session's stream
                self._take_legacy(session, message, item)
            elif self.holds(connection, item) or _is_initialized(item):
                connection.dispatch(item)

    def _take_legacy(self, session: HttpSession, message: dict, item: Any) -> None:
        """A 2024-11-05 POST another worker took for this session's stream (:meth:`forward_legacy`):
        run as if POSTed here, within its client's share of the pool; refused while the stream is
        full, as a POST here is (``LegacySse.post``: 503 with ``Retry-After``, until the client
        has read it: docs/deploying.md, ``backlog_bytes``), else the answers would pile up on the
        stream past its bounds.  Run only once the POSTing worker can have heard this worker's
        word on it: a message it must refuse for want of a word (503, sent again) is not run
        twice.

        A message with no reply token comes from a worker of an earlier release, which answered
        the POST 202 once the message was heard: that promise of an answer on the stream is kept,
        so it runs even while the stream is full (as that release ran it: the answers of accepted
        POSTs are kept past the bound anyway)."""
        stream = session.standalone
        if session.kind != "legacy" or not owned_by(message, session.principal):
            self._answer_forward(message, GONE)
        elif not isinstance(message.get("reply"), str):  # already answered 202 by its forwarder
            session.dispatch_within_share(item)
        elif stream is not None and stream.full():
            self._answer_forward(message, FULL)
        elif self._answer_forward(message, TAKEN):
            session.dispatch_within_share(item)

    def _answer_forward(self, message: dict, verdict: str) -> bool:
        """Tell the worker that forwarded a 2024-11-05 POST (``message``) this worker's word on it;
        whether a process heard it (True for a message asking for none: a worker of an earlier
        release, which answered 202 without waiting)."""
        reply, sender = message.get("reply"), message.get("from")
        if not isinstance(reply, str) or not isinstance(sender, str):
            return True
        session_id = str(message.get("session"))
        return bool(self._publish(session_id, "verdict", to=sender, reply=reply, verdict=verdict))

    # -- following a stream in the shared event store -----------------------------------------------

    def follow(
        self, environ: dict, start_response, session: HttpSession, stream_id: str, after: int | None
    ) -> Any:
        """A GET's SSE body: the events of ``stream_id`` (the standalone stream, or a POST's being
        resumed) after number ``after`` (None: the standalone stream from where its last follower left
        it, with a priming event), stored by whichever worker, until the stream or the session ends,
        the client goes, or a newer GET takes the stream over (one stream, one connection: 2025-11-25
        basic/transports, the server "MUST NOT broadcast the same message across multiple streams").

        §Resumability: the server "MAY use this header to replay messages that would have been sent
        after the last event ID, on the stream that was disconnected".
        """
        app = self.app
        session_id = cast(str, session.id)
        # every follower is long-lived: counted against its client's cap
        release_stream = app.hold_stream(environ)
        try:
            generation, delivered = table_call(app.event_store.claim_stream, session_id, stream_id)
        except BaseException:
            release_stream()
            raise
        # a session listened to here is in use (never ended as its client's idlest: Homes.mark_in_use)
        with session.lock:
            session.followers += 1
        self.homes.mark_in_use(session)

        def unfollow() -> None:
            with session.lock:
                session.followers -= 1

        release = once(release_stream, unfollow)
        ending: list[str] = []

        def end_with(how: str) -> None:
            ending.append(how)
            app.event_store.wake(session_id)

        on_client_gone(environ, lambda: end_with("gone"))
        hold = environ.get("mcp_ref.long_lived")
        if hold is not None:
            hold(client_of(environ), lambda: end_with("close"))
        priming = b""
        if after is None and lifecycle.at_least(session.version, lifecycle.ICONS):
            # 2025-11-25 basic/transports: the server "SHOULD immediately send an SSE event consisting
            # of an event ID and an empty data field in order to prime the client to reconnect"
            priming = retry_event(app, session, stream_id)
        start_response("200 OK", SSE_HEADERS)
        body = self._events(
            session, stream_id, delivered if after is None else after, generation, ending, priming
        )
        return held(
            body, release, lambda: app.event_store.leave_stream(session_id, stream_id, generation)
        )

    def _events(
        self,
        session: HttpSession,
        stream_id: str,
        number: int,
        generation: int,
        ending: list,
        priming: bytes,
    ):
        app = self.app
        store, session_id = app.event_store, cast(str, session.id)
        writer = None if stream_id == STANDALONE else stream_id.rpartition("-")[2]  # p<n>-<worker>
        touched = written = time.monotonic()
        wait = 0.0  # the first read does not wait: a stream whose writer has gone ends at once
        if priming:
            yield priming
        while not session.closed:
            if ending:
                # SSE polling, to make room: a retry, then this connection ends
                if ending[0] == "close":
                    yield retry_event(app, session, stream_id)
                return
            # woken by a store, a claim, the session's end, or the watcher when a worker has gone
            found = store.wait_after(session_id, stream_id, number, wait, generation)
            wait = app.keepalive
            for event_id, data in found.events:
                if data:
                    yield sse_event(data, event_id=event_id)
                    written = time.monotonic()
            number = found.last
            if found.ended or found.superseded:
                return
            now = time.monotonic()
            if now - touched >= app.keepalive:  # a session listened to is in use: kept alive here
                touched = now
                if not table_call(app.session_table.touch, session_id):
                    app.end_here(session, for_good=True)
                    self.ended(session_id)
                    return
            # its home gone? this worker takes over (at most every CLAIM_EVERY)
            self.homes.claim(session)
            if writer is not None and not self.homes.worker_alive(writer):
                # the worker running that request has gone (its stored events were sent above): no
                # answer will come; the stream ends at once, and the client fails the request
                return
            if now - written >= app.keepalive:
                written = now
                yield KEEPALIVE


def record_state(session: HttpSession, worker: str) -> dict[str, Any]:
    """What a session's record keeps for every worker (JSON-able): its home ``worker``, its
    principal (canonical: :func:`~mcp_ref.server.principal.principal_id_of`), and what it negotiated
    (a 2024-11-05 session: only that it is one; it is served where its stream is)."""
    state: dict[str, Any] = {"home": worker, "principal": principal_id_of(session.principal)}
    if session.kind == "legacy":
        state["legacy"] = True  # served where its stream is; a POST elsewhere is forwarded
        state[SENDS_VERDICTS] = True  # and this worker sends its word on it (forward_legacy)
    else:
        state.update(_recorded(negotiated_by(cast("Connection", session.connection))))
    return state


def take_up(session: HttpSession, record: SessionRecord, server: Host) -> None:
    """Serve ``session`` as its record says now: what it negotiated, the generation of the record,
    its home.

    A resource unsubscribed on another worker leaves this replica's subscriptions here, and its
    place in the shared count of ``max_subscribed_resources`` (this worker's, which only it can
    give back; unless another connection of the caller's here still holds it) goes with it, before
    the generation says the record was taken up: else it counted until the next heartbeat."""
    state = record["state"]
    connection = cast("Connection", session.connection)
    negotiated = _negotiated(state)
    dropped = connection.subscriptions - set(negotiated["subscriptions"])
    resume(connection, negotiated, initialized=record["established"])
    if dropped:
        server.subscriptions.let_go(connection.principal.limit_id, server, dropped)
    session.generation = record.get("generation", 0)
    session.home_worker = state.get("home")


def owned_by(state: dict, caller: Any) -> bool:
    """Whether a session's record (or a bus message forwarding its POST), read back from JSON,
    belongs to ``caller`` (the request's ``AccessInfo``, None without a token): both sides in the
    one canonical form, a string, so a JSON round trip changes neither (a tuple came back as a
    list and matched no one: issue 32)."""
    return state.get("principal") == principal_id_of(caller)


def negotiated_by(connection: Connection) -> dict:
    """What ``connection`` negotiated (JSON-able): what another worker needs to serve its session
    too (:func:`resume`, from the session table's record)."""
    return {
        "version": connection.protocol_version,
        "clientCapabilities": connection.client_capabilities,
        "clientInfo": connection.client_info,
        "logLevel": connection.log_level,
        "subscriptions": sorted(connection.subscriptions),
    }


def resume(connection: Connection, negotiated: dict, *, initialized: bool) -> None:
    """Serve on ``connection`` a session another worker negotiated (from its :func:`negotiated_by`),
    or take up what changed there (a log level, subscriptions); ``initialized``: the client has
    sent ``notifications/initialized`` (2025-11-25 basic/lifecycle §Initialization)."""
    connection.negotiate(
        lifecycle.INITIALIZE_ANSWERED,
        negotiated["version"],
        dict(negotiated.get("clientCapabilities") or {}),
        dict(negotiated.get("clientInfo") or {}),
    )
    if initialized:
        connection.lifecycle.advance(lifecycle.INITIALIZED_RECEIVED)
    connection.log_level = negotiated.get("logLevel")
    connection.subscriptions = set(negotiated.get("subscriptions") or ())


def _recorded(negotiated: dict) -> dict:
    """A connection's negotiated state as the record keeps it: a key per subscribed URI (see
    :meth:`SharedSessions.change_of`)."""
    state = {key: value for key, value in negotiated.items() if key != "subscriptions"}
    state.update({SUBSCRIBED + uri: True for uri in negotiated.get("subscriptions") or ()})
    return state


def _negotiated(state: dict) -> dict:
    """A record's state as :func:`resume` takes it."""
    negotiated = {key: value for key, value in state.items() if not key.startswith(SUBSCRIBED)}
    negotiated["subscriptions"] = sorted(
        key[len(SUBSCRIBED) :]
        for key, value in state.items()
        if key.startswith(SUBSCRIBED) and value
    )
    return negotiated


def _worker_of(item: Any) -> str | None:
    """The worker a request id of ours names (``<worker>-<n>``: :meth:`SharedSessions.request_ids`)."""
    if isinstance(item, (Response, ErrorResponse)):
        request_id = item.id
    elif isinstance(item, Notification) and item.method == "notifications/progress":
        request_id = (item.params or {}).get("progressToken")
    else:
        return None
    if isinstance(request_id, str) and "-" in request_id:
        return request_id.rpartition("-")[0]
    return ""  # an answer naming no worker of ours: it goes nowhere


def _is_initialized(item: Any) -> bool:
    return isinstance(item, Notification) and item.method == "notifications/initialized"
