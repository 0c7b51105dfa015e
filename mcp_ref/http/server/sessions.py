"""The session table: which HTTP sessions exist, whether they came back after ``initialize``, when
they were last seen; its bound (``max_sessions``) and its eviction and expiry policy.

basic/transports §Session Management: "The server MAY terminate the session at any time, after
which it MUST respond to requests containing that session ID with HTTP 404 Not Found."

:class:`SessionTable` is the interface, :class:`MemorySessionTable` the default.  The table holds
only what any worker could be asked (a record of JSON-able values, keyed by the session id); a
session's streams and connection are live objects of the process that created it
(``McpWsgiApp.sessions``).  Each operation is one call a shared store (e.g. Redis: a hash per
session and a sorted set by creation) can make atomic.  Time comes from the table's ``clock``, so a
test can move it instead of sleeping.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

if TYPE_CHECKING:  # typing.NotRequired is Python 3.11's; the annotations are never evaluated
    from typing import NotRequired


class SessionRecord(TypedDict):
    """What the table keeps of one session (JSON-able)."""

    #: When ``initialize`` made it (the table's clock).
    created: float
    #: When a request last named it.
    last_seen: float
    #: True once the client came back after ``initialize`` (any request naming the session): until
    #: then the session is the first to go when the table is full, or after ``handshake_timeout``.
    established: bool
    #: What another worker needs to serve the session (a shared table only; ``{}`` otherwise): the
    #: negotiated version, the client's capabilities and info, its principal, log level and
    #: subscriptions, the worker that delivers its change notifications (see
    #: ``spec_notes/deployment.md``, "Handshake sessions on any worker").  JSON-able.
    state: dict[str, Any]
    #: How many times ``update`` changed ``state`` (a shared table that counts them; absent: 0): a
    #: worker compares it with the one its replica took up (``shared.SharedSessions.touch``).
    generation: NotRequired[int]


class SessionTable(Protocol):
    """The sessions an HTTP server knows, bounded, with their expiry (pluggable).

    ``shared`` is True when other processes read the same table (every worker of a deployment):
    then a session made by one worker is served by any other, from its record's ``state``."""

    shared: bool

    def make_room(self, session_id: str | None = None) -> tuple[bool, str | None]:
        """Whether one more session fits, and the session evicted to make room, if any.

        When the table is full, the oldest session that never came back after ``initialize`` is
        removed (a flood of bare initializes cannot lock real clients out) and its id returned:
        the caller ends it.  ``(False, None)`` when every session is established, or its
        ``initialize`` is still being answered (503).  With ``session_id``, the place is held for
        it (a reservation: counted, never evicted) until :meth:`add` records it or :meth:`remove`
        lets it go, or ``handshake_timeout`` passes.  Atomic: counting, choosing, removing and
        holding are one step, so concurrent ``initialize``s never admit more than
        ``max_sessions``.  Asked again for a ``session_id`` whose place is still held (an
        ``initialize`` that is answered: ``HttpAppBase.register``), it keeps that place
        (``(True, None)``); a place that lapsed is taken anew, as for a new session."""

    def add(self, session_id: str, state: dict | None = None) -> None:
        """Record a new session, created and seen now, not yet established, with its ``state``
        (its reservation, if :meth:`make_room` held one, becomes the record)."""

    def update(self, session_id: str, state: dict) -> bool:
        """Merge ``state`` into the session's, key by key (a key whose value is None is removed), so
        that two workers changing different keys at once both count; False if the session is gone."""

    def alive(self, session_ids: list[str]) -> set[str]:
        """Which of ``session_ids`` the table still has (one call, however many: a worker checks the
        sessions it holds against it, so that none it was not told of outlives its record)."""

    def get(self, session_id: str) -> SessionRecord | None:
        """The session's record, or None if there is no such session."""

    def touch(self, session_id: str, *, established: bool = True) -> bool:
        """A request named the session now (``established``: the client came back after ``initialize``).

        False when there is no such session (a shared table: nor one expired, which it removes)."""

    def is_expired(self, session_id: str) -> bool:
        """True when the session has been idle too long (``idle_timeout``, or ``handshake_timeout``
        for one never established).  A session whose client is listening on its stream is kept by
        the caller, which alone knows that."""

    def expired(self) -> list[str]:
        """The ids of the sessions :meth:`is_expired` would call expired (the caller ends them; a
        shared table may remove them at once, so that one caller, not every worker, hears of each)."""

    def remove(self, session_id: str) -> bool:
        """Forget the session; False if it was not there."""

    def __len__(self) -> int:
        """How many sessions the table holds (the places :meth:`make_room` holds included)."""


def as_stored(state: dict) -> dict:
    """``state`` as a shared table gives it back: through JSON (a tuple becomes a list; a value JSON
    cannot hold raises TypeError here, not in another worker).  The memory table keeps it so too,
    so that what a record holds compares the same in one process as across a deployment."""
    return json.loads(json.dumps(state))


class MemorySessionTable:
    """The default session table, in memory: at most ``max_sessions``; a session idle for
    ``idle_timeout`` seconds (``handshake_timeout`` until it is established) expires."""

    shared = False

    def __init__(
        self,
        *,
        max_sessions: int = 1000,
        idle_timeout: float = 30 * 60,
        handshake_timeout: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self.handshake_timeout = handshake_timeout
        self.clock = clock
        self._records: dict[str, SessionRecord] = {}
        #: The places held for sessions whose ``initialize`` is being answered: id -> when held.
        self._reserved: dict[str, float] = {}
        self._lock = threading.Lock()

    def make_room(self, session_id: str | None = None) -> tuple[bool, str | None]:
        """See :meth:`SessionTable.make_room`."""
        now = self.clock()
        with self._lock:
            # an initialize that never ended (its caller gone): its place is free
            self._reserved = {
                held: since
                for held, since in self._reserved.items()
                if now - since <= self.handshake_timeout
            }
            if session_id in self._reserved:  # its place still held: counted already
                return True, None
            victim = None
            if len(self._records) + len(self._reserved) >= self.max_sessions:
                unproven = [
                    (record["created"], known)
                    for known, record in self._records.items()
                    if not record["established"]
                ]
                if not unproven:
                    return False, None
                victim = min(unproven)[1]
                del self._records[victim]
            if session_id is not None:
                self._reserved[session_id] = now
        return True, victim

    def add(self, session_id: str, state: dict | None = None) -> None:
        """See :meth:`SessionTable.add`."""
        now = self.clock()
        with self._lock:
            self._reserved.pop(session_id, None)
            self._records[session_id] = SessionRecord(
                created=now, last_seen=now, established=False, state=as_stored(state or {})
            )

    def update(self, session_id: str, state: dict) -> bool:
        """See :meth:`SessionTable.update`."""
        with self._lock:
            record = self._records.get(session_id)
            if record is None:
                return False
            merged = {**record["state"], **as_stored(state)}
            record["state"] = {key: value for key, value in merged.items() if value is not None}
            return True

    def alive(self, session_ids: list[str]) -> set[str]:
        """See :meth:`SessionTable.alive`."""
        with self._lock:
            return {session_id for session_id in session_ids if session_id in self._records}

    def get(self, session_id: str) -> SessionRecord | None:
        """See :meth:`SessionTable.get` (a copy)."""
        with self._lock:
            record = self._records.get(session_id)
            return (
                None
                if record is None
                else SessionRecord(**{**record, "state": dict(record["state"])})
            )

    def touch(self, session_id: str, *, established: bool = True) -> bool:
        """See :meth:`SessionTable.touch` (an expired session is the caller's to end: see :meth:`is_expired`)."""
        now = self.clock()
        with self._lock:
            record = self._records.get(session_id)
            if record is None:
                return False
            record["last_seen"] = now
            record["established"] = record["established"] or established
            return True

    def is_expired(self, session_id: str) -> bool:
        """See :meth:`SessionTable.is_expired` (a session not in the table is not expired: it is gone)."""
        now = self.clock()
        with self._lock:
            record = self._records.get(session_id)
            return record is not None and self._stale(record, now)

    def expired(self) -> list[str]:
        """See :meth:`SessionTable.expired`."""
        now = self.clock()
        with self._lock:
            return [
                session_id
                for session_id, record in self._records.items()
                if self._stale(record, now)
            ]

    def remove(self, session_id: str) -> bool:
        """See :meth:`SessionTable.remove`."""
        with self._lock:
            held = self._reserved.pop(session_id, None) is not None
            return self._records.pop(session_id, None) is not None or held

    def __len__(self) -> int:
        with self._lock:
            return len(self._records) + len(self._reserved)

    def _stale(self, record: SessionRecord, now: float) -> bool:
        idle = now - record["last_seen"]
        return idle > self.idle_timeout or (
            not record["established"] and idle > self.handshake_timeout
        )
