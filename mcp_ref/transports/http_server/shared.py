"""Handshake-era sessions on any worker: what the HTTP application does when its session table and
its event store are shared by every worker of the deployment (``Server(state="redis://...")``).

A session is made where ``initialize`` ran, its *home*, and served by any worker from its record in
the session table (:class:`~.sessions.SessionRecord`: the negotiated version, the client's
capabilities and info, its principal, log level and subscriptions).  A worker that meets a session
it does not hold builds a *replica* of it: an :class:`~.http_session.HttpSession` and a connection
resumed from the record (``Connection.resume``).  What a request needs stays on the worker serving
it (its POST stream, its handler); what must reach another worker goes over the bus, channel
:data:`SESSIONS`:

- a message of the client's that answers or cancels a request open on another worker (a
  server→client request's answer, ``notifications/cancelled``, ``notifications/progress``): each
  worker dispatches it only if it holds that request (``Connection.holds``);
- a changed log level or subscription (``logging/setLevel``, ``resources/subscribe``): saved in the
  record, then every holder takes it up;
- the session's end (DELETE, eviction, expiry): every holder ends its replica.

SSE goes through the shared event store (:class:`~.events.EventStore`, ``shared``): the standalone
stream's messages are stored, never queued in one process, and a GET on any worker follows them
(``wait_after``); a POST stream whose client has gone is written through to the store, with an end
marker, so ``Last-Event-ID`` resumes it on any worker.  Change notifications (list changes, resource
updates) are sent by the home's connection only, once per session.  See ``spec_notes/deployment.md``,
"Handshake sessions on any worker", for the choices and what proves them.
"""

from __future__ import annotations

import itertools
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from ...core import jsonrpc, lifecycle
from ...core.jsonrpc import ErrorResponse, Notification, Response
from ..sse import KEEPALIVE, sse_event
from .events import event_number
from .http_session import HttpSession, SessionOwner
from .replies import SSE_HEADERS, held, nothing
from .status import NotFound, ServiceUnavailable

if TYPE_CHECKING:
    from .host import Connection, Host
    from .sessions import SessionTable

log = logging.getLogger(__name__)

#: The bus channel of the sessions every worker serves (see the module docstring).
SESSIONS = "sessions"
#: The stream id of a session's standalone (GET) stream in the shared event store: one per session.
STANDALONE = "s"
#: Seconds between a replica's tries to become its session's home, while another worker is (see :meth:`SharedSessions.claim`).
CLAIM_EVERY = 10.0
#: Requests whose success changes what the session negotiated: saved in its record for every worker.
SAVED_METHODS = frozenset({"logging/setLevel", "resources/subscribe", "resources/unsubscribe"})

_WORKER: list[str] = []
_APPS = itertools.count(1)


def worker_id() -> str:
    """This process's name among the deployment's workers: random, and a new one after ``fork``
    (gunicorn ``--preload`` forks workers from one loaded process)."""
    if not _WORKER:
        _WORKER.append(secrets.token_hex(4))
    return _WORKER[0]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WORKER.clear)


def table_call(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A call of the shared session table; 503 with ``Retry-After`` when its store is unreachable
    (a session is neither found nor lost meanwhile: the client retries)."""
    try:
        return call(*args, **kwargs)
    except ConnectionError as error:
        log.warning("session table unreachable: %s", error)
        raise ServiceUnavailable("Service Unavailable: the session store is unreachable; retry shortly",
                                 headers=[("Retry-After", "2")]) from None


class SharedOwner(SessionOwner, Protocol):
    """What :class:`SharedSessions` asks of its application (``HttpAppBase``)."""

    server: Host
    session_table: SessionTable
    event_store: Any
    keepalive: float
    retry_ms: int

    def new_connection(self, transport: Any, name: str) -> Connection:
        """A connection of the server served on ``transport``."""

    def bind(self, session: HttpSession, environ: dict) -> None:
        """A session belongs to the principal of ``environ``."""

    def adopt(self, session: HttpSession) -> HttpSession:
        """Hold a replica in this process (or the one another request built first)."""

    def live_session(self, session_id: str) -> HttpSession | None:
        """This process's hold of a session, if any."""

    def end_here(self, session: HttpSession, *, for_good: bool = False) -> None:
        """End this process's hold of a session."""

    def hold_stream(self, environ: dict, request_id: Any = None) -> Callable[[], None]:
        """Count a long-lived stream against its client's cap; returns its release."""

    def client_of(self, environ: dict) -> str:
        """Who holds a stream (the caller's principal, else its address)."""


class SharedSessions:
    """The sessions of an application whose workers share them (``app.shared``; see the module docstring)."""

    def __init__(self, app: SharedOwner):
        self.app = app
        self._serial = next(_APPS)
        self._listening: Callable[[], None] | None = None
        self._lock = threading.Lock()
        self._homes: Any = None  # the state's HeldSets: which worker is each session's home (claim)

    @property
    def worker(self) -> str:
        """This application's name among the deployment's: its process's (:func:`worker_id`) and its
        number in the process (two applications in one process are two workers)."""
        return f"{worker_id()}{self._serial}"

    # -- records ---------------------------------------------------------------------------------

    def record(self, session: HttpSession) -> None:
        """A new session, just initialized here: its record, for every worker (this one its home)."""
        self.listen()
        connection = cast("Connection", session.connection)
        principal = session.principal
        state: dict[str, Any] = {"home": self.worker, "principal": None if principal is None else principal.principal}
        if session.kind == "legacy":
            state["legacy"] = True  # served where its stream is; a POST elsewhere is forwarded (forward_legacy)
        else:
            state.update(connection.negotiated())
        table_call(self.app.session_table.add, cast(str, session.id), state)
        if session.shared:  # a 2024-11-05 session never moves: its stream is where it lives
            session.home = True
            homes = self._home_store()
            if homes is not None:
                homes.hold("home:" + cast(str, session.id), [self.worker], 1)

    def claim(self, session: HttpSession) -> None:
        """Become the session's home if it has none: its home worker exited (it let go) or died (its
        hold lapsed, :mod:`mcp_ref.extras.redis_state.holders`), so that its change notifications
        still reach it.  Tried at most every :data:`CLAIM_EVERY` seconds per replica, as requests
        and its GET stream's keep-alives come; one worker wins (one atomic hold, a limit of one)."""
        homes = self._home_store()
        now = time.monotonic()
        if session.home or homes is None or now < session.claim_after:
            return
        session.claim_after = now + CLAIM_EVERY
        taken, _ = homes.hold("home:" + cast(str, session.id), [self.worker], 1)
        if taken:
            session.home = True
            log.info("session %s: this worker is its home now (the one before has gone)", cast(str, session.id)[:8])
            self.app.server.add_connection(session.connection)

    def let_go(self, session: HttpSession, *, for_good: bool) -> None:
        """This worker no longer holds ``session``: if it was its home, another worker may claim it;
        unless the session ends (``for_good``), the workers holding it are told to try at once."""
        homes = self._homes
        if session.home and homes is not None:
            session.home = False
            homes.release("home:" + cast(str, session.id), [self.worker])
            if not for_good:
                self._publish(cast(str, session.id), "homeless")

    def _home_store(self) -> Any:
        """The shared state's held sets (None: stores given without a state; the home never moves)."""
        if self._homes is None:
            state = self.app.server.shared_state
            made = getattr(state, "held_sets", None)
            self._homes = made() if made is not None else None
        return self._homes

    def replica(self, session_id: str, environ: dict) -> HttpSession:
        """The session ``session_id`` made by another worker, served here from its record: 404 when
        there is none (or another principal asks, or it is a 2024-11-05 session, which lives in its
        stream's worker)."""
        record = table_call(self.app.session_table.get, session_id)
        state = record["state"] if record is not None else {}
        caller = environ.get("mcp_ref.auth")
        if not state.get("version") or state.get("principal") != (None if caller is None else caller.principal):
            raise NotFound("Session not found: start a new session with initialize")
        self.listen()
        app = self.app
        session = HttpSession(app, session_id, kind="streamable")
        connection = session.connection = app.new_connection(session, f"http-{session_id[:8]}")
        app.bind(session, environ)
        connection.resume(state, initialized=record is not None and record["established"])
        existing = app.adopt(session)
        if existing is not session:  # another request built it first
            connection.close()
        return existing

    def forward_legacy(self, environ: dict, session_id: str, message: Any) -> None:
        """A 2024-11-05 POST for a session whose stream another worker holds: over the bus to it
        (the stream is the session: its answers can only go there).  404 when there is no such
        session, or another principal asks."""
        record = table_call(self.app.session_table.get, session_id)
        state = record["state"] if record is not None else {}
        caller = environ.get("mcp_ref.auth")
        if not state.get("legacy") or state.get("principal") != (None if caller is None else caller.principal):
            raise NotFound("Session not found")
        data = jsonrpc.serialize(message).decode()
        self._publish(session_id, "legacy", data=data, principal=state.get("principal"))

    def save(self, session: HttpSession) -> None:
        """What the session negotiated changed here (a log level, a subscription): into its record,
        then to every worker holding it (before the client hears the answer)."""
        state = cast("Connection", session.connection).negotiated()
        session_id = cast(str, session.id)
        if table_call(self.app.session_table.update, session_id, state):
            self._publish(session_id, "state", state=state)

    def ended(self, session_id: str) -> None:
        """The session ended here for good (DELETE, eviction, expiry): every worker ends its replica,
        and its events go."""
        self._publish(session_id, "end")
        self.app.event_store.forget(session_id)

    # -- messages for another worker ----------------------------------------------------------------

    def route(self, session: HttpSession, items: list) -> list:
        """The client's answers and notifications (``items``) that this worker dispatches; each one
        that names a request open on another worker goes over the bus to it instead."""
        connection = cast("Connection", session.connection)
        here = []
        for item in items:
            held_here = self.holds(connection, item)
            if held_here is not False:
                here.append(item)
            if held_here is False or _is_initialized(item):
                # notifications/initialized: every holder's connection may now send what it withheld
                self._publish(cast(str, session.id), "message", data=jsonrpc.serialize(item).decode())
        return here

    @staticmethod
    def holds(connection: Connection, item: Any) -> bool | None:
        """True when ``item`` names a request open on ``connection``; False when it names one that is
        not; None for a message about no request (dispatched where it arrives)."""
        if isinstance(item, (Response, ErrorResponse)):
            return item.id is not None and connection.holds(item.id, ours=True)
        if isinstance(item, Notification):
            params = item.params or {}
            if item.method == "notifications/cancelled":
                return jsonrpc.valid_id(params.get("requestId")) and connection.holds(params["requestId"], ours=False)
            if item.method == "notifications/progress":  # our requests' progress tokens are their ids
                return jsonrpc.valid_id(params.get("progressToken")) and connection.holds(params["progressToken"], ours=True)
        return None

    def listen(self) -> None:
        """Hear the other workers' messages about sessions (once per application)."""
        with self._lock:
            if self._listening is None:
                self._listening = self.app.server.bus.subscribe(SESSIONS, self._hear)

    def close(self) -> None:
        """Stop hearing them (the application closes)."""
        with self._lock:
            stop, self._listening = self._listening, None
            homes, self._homes = self._homes, None
        if stop is not None:
            stop()
        if homes is not None:
            homes.close()  # every home this worker held is free for another worker now

    def _publish(self, session_id: str, kind: str, **fields: Any) -> None:
        self.listen()
        self.app.server.bus.publish(SESSIONS, {"session": session_id, "kind": kind, "from": self.worker, **fields})

    def _hear(self, message: dict) -> None:
        """A message of another worker's about a session: acted on only where the session is held."""
        if message.get("from") == self.worker:
            return
        session = self.app.live_session(str(message.get("session")))
        if session is None or session.closed:
            return
        connection = cast("Connection", session.connection)
        kind = message.get("kind")
        if kind == "end":
            self.app.end_here(session, for_good=True)
        elif kind == "homeless":
            session.claim_after = 0.0
            self.claim(session)
        elif kind == "state" and isinstance(message.get("state"), dict):
            connection.resume(message["state"], initialized=True)
        elif kind in ("message", "legacy") and isinstance(message.get("data"), str):
            try:
                item = jsonrpc.parse(message["data"].encode())
            except Exception:  # a worker of this deployment sent it; never let it end the bus's thread
                log.warning("dropped an unreadable session message from another worker")
                return
            if kind == "legacy":  # a 2024-11-05 POST another worker took for this session's stream
                caller = session.principal
                if session.kind == "legacy" and message.get("principal") == (None if caller is None else caller.principal):
                    connection.dispatch(item)
            elif self.holds(connection, item) or _is_initialized(item):
                connection.dispatch(item)

    # -- following a stream in the shared event store -----------------------------------------------

    def follow(self, environ: dict, start_response, session: HttpSession, stream_id: str,
               after: int | None) -> Any:
        """A GET's SSE body: the events of ``stream_id`` (the standalone stream, or a POST's being
        resumed) after number ``after`` (None: from now, with a priming event), stored by whichever
        worker, until the stream or the session ends or the client goes.

        2025-11-25 basic/transports §Resumability: the server "MAY use this header to replay messages
        that would have been sent after the last event ID, on the stream that was disconnected".
        """
        app = self.app
        long_lived = stream_id == STANDALONE
        release = app.hold_stream(environ) if long_lived else nothing
        session_id = cast(str, session.id)
        ending: list[str] = []

        def end_with(how: str) -> None:
            ending.append(how)
            app.event_store.wake(session_id)

        on_disconnect = environ.get("mcp_ref.on_disconnect")
        if on_disconnect is not None:
            on_disconnect(lambda: end_with("gone"))
        hold = environ.get("mcp_ref.long_lived") if long_lived else None
        if hold is not None:
            hold(app.client_of(environ), lambda: end_with("close"))
        number = app.event_store.position(session_id) if after is None else after
        priming = b""
        if after is None and lifecycle.at_least(session.version, lifecycle.ICONS):
            # 2025-11-25 basic/transports: the server "SHOULD immediately send an SSE event consisting
            # of an event ID and an empty data field in order to prime the client to reconnect"
            priming = sse_event(event_id=app.event_store.store(session_id, stream_id, b""), retry=app.retry_ms)
        start_response("200 OK", SSE_HEADERS)
        return held(self._events(session, stream_id, number, ending, priming), release)

    def _events(self, session: HttpSession, stream_id: str, number: int, ending: list, priming: bytes):
        app = self.app
        store, session_id = app.event_store, cast(str, session.id)
        touched = time.monotonic()
        if priming:
            yield priming
        while not session.closed:
            if ending:
                if ending[0] == "close":  # SSE polling, to make room: a retry, then this connection ends
                    yield sse_event(event_id=store.store(session_id, stream_id, b""), retry=app.retry_ms)
                return
            events, ended = store.wait_after(session_id, stream_id, number, app.keepalive)
            for event_id, data in events:
                number = event_number(event_id) or number
                if data:
                    yield sse_event(data, event_id=event_id)
            if ended:
                return
            if time.monotonic() - touched >= app.keepalive:
                # 2025-11-25 basic/transports: a session listened to is in use: kept alive here
                touched = time.monotonic()
                if not table_call(app.session_table.touch, session_id):
                    return
                self.claim(session)
            if not events:
                yield KEEPALIVE


def _is_initialized(item: Any) -> bool:
    return isinstance(item, Notification) and item.method == "notifications/initialized"
