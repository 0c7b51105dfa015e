"""The event store: where the SSE events of a session are kept so a dropped stream can be resumed.

2025-11-25 basic/transports §Resumability: "the server MAY use this header [Last-Event-ID] to
replay messages that would have been sent after the last event ID, on the stream that was
disconnected".  :class:`EventStore` is the interface (``McpWsgiApp(event_store=...)``);
:class:`MemoryEventStore` the default.  Keys are strings, values bytes, and each operation is one
call a shared store (e.g. Redis: a stream or list per session) can make atomic.
"""

from __future__ import annotations

import collections
import itertools
import threading
from typing import NamedTuple, Protocol


class Followed(NamedTuple):
    """What one :meth:`EventStore.wait_after` found."""

    #: The followed stream's events after the number asked for, in order: ``(event id, data)``.
    events: list[tuple[str, bytes]]
    #: True when the stream's end marker was reached (nothing more will come).
    ended: bool
    #: The highest event number read, of any stream of the session: the next wait starts after it.
    last: int
    #: True when a newer follower claimed the stream (:meth:`EventStore.claim_stream`): this one ends.
    superseded: bool


class EventStore(Protocol):
    """Where SSE events are kept so a dropped stream can be resumed (pluggable).

    An event id names its stream: ``<stream id>.<n>``, unique in the session, ``n`` growing.
    ``shared`` is True when other processes read the same store: then a stream written by one
    worker is followed by another (``wait_after``), which is how a handshake-era session is served
    by any worker (``spec_notes/deployment.md``, "Handshake sessions on any worker").
    """

    shared: bool

    def store(self, session_id: str, stream_id: str, data: bytes) -> str:
        """Keep one event of a stream; return its id (unique in the session, naming the stream).

        Atomic: numbering and appending are one step (two writers never get the same id)."""

    def replay_after(
        self, session_id: str, event_id: str
    ) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The stream ``event_id`` belongs to and its events after it; None if unknown.

        An id the session issued but no longer keeps (its oldest events are forgotten past the
        store's bound): the events of its stream numbered after it that are left, or
        :class:`EventsForgotten` when none is.  One consistent read: no event stored meanwhile is
        half seen."""

    def forget(self, session_id: str) -> None:
        """Drop everything kept for a session (its end)."""

    def end_stream(self, session_id: str, stream_id: str) -> None:
        """Mark a stream ended (a marker, never replayed as an event): its followers stop there."""

    def stream_open(self, session_id: str, stream_id: str) -> bool:
        """Whether the stream has stored an event and not yet ended (:meth:`end_stream`), known even
        when its events and end marker are forgotten: a follower of it may still hear more."""

    def claim_stream(self, session_id: str, stream_id: str) -> tuple[int, int]:
        """A new follower of a stream, which supersedes every earlier one (2025-11-25
        basic/transports: the server "MUST NOT broadcast the same message across multiple
        streams"): ``(its generation, the number up to which the stream was delivered)`` — a follower
        without ``Last-Event-ID`` starts there, so what was sent while no one followed still arrives."""

    def wait_after(
        self, session_id: str, stream_id: str, number: int, timeout: float | None, generation: int
    ) -> Followed:
        """The stream's events numbered after ``number`` (see :class:`Followed`); when there are none
        yet, waits up to ``timeout`` seconds for one (or for :meth:`wake`).  Follower ``generation``
        records that the stream was delivered up to ``number`` (unless it was superseded)."""

    def leave_stream(self, session_id: str, stream_id: str, generation: int) -> None:
        """Follower ``generation`` has ended (a store may drop what it kept for it)."""

    def wake(self, session_id: str) -> None:
        """End the waits of this process's followers of the session now (it ended, or a follower's
        client went, or a newer follower claimed a stream): each :meth:`wait_after` returns."""


class EventsForgotten(LookupError):
    """:meth:`EventStore.replay_after` of an id the session issued, of which neither the event nor
    any later event of its stream is kept: the oldest were forgotten past the store's bound, so what
    the client missed on that stream is lost (the transport answers 400, never another stream)."""


def event_number(event_id: str) -> int | None:
    """The ``n`` of an event id ``<stream id>.<n>`` (None: not an id this package issued)."""
    number = event_id.rpartition(".")[2]
    # ASCII digits only: str.isdigit() also accepts e.g. "\u00b2", which int() refuses
    return int(number) if number.isascii() and number.isdigit() and len(number) < 20 else None


#: The bytes of event data an event store keeps a session at most (``max_bytes``): a message may be
#: as long as a tool makes it, so ``max_events`` alone could hold gigabytes.  Past it, as past
#: ``max_events``, the session's oldest events are forgotten; the newest is kept however long.
DEFAULT_MAX_BYTES = 16 * 1024 * 1024


class MemoryEventStore:
    """The default event store: the last ``max_events`` events of each session, in memory, whose
    data holds at most ``max_bytes`` (:data:`DEFAULT_MAX_BYTES`; the newest event is kept however
    long): past either bound, the session's oldest events are forgotten."""

    shared = False

    def __init__(self, max_events: int = 1000, max_bytes: int = DEFAULT_MAX_BYTES):
        self.max_events = max_events
        self.max_bytes = max_bytes
        self._events: dict[str, collections.OrderedDict] = {}
        #: session -> the bytes of the data of its events kept (within ``max_bytes``)
        self._bytes: dict[str, int] = {}
        #: (session, stream) -> [its newest follower's generation, delivered up to]: bounded by the
        #: sessions (``forget``) and the streams followed in each (a POST stream's goes with its follower).
        self._followers: dict[tuple[str, str], list[int]] = {}
        #: session -> the highest event number it has forgotten (past ``max_events`` or ``max_bytes``)
        self._forgotten: dict[str, int] = {}
        #: (session, stream) of each stream with an event stored and no end marker yet.  Kept only
        #: when ``shared``: the transport marks a stream's end, and asks, only for a shared session;
        #: in one process every stream of a session would stay here for the session's whole life,
        #: past ``max_events`` (``spec_notes/security.md``: the events kept are bounded a session).
        self._open: set[tuple[str, str]] = set()
        self._counter = itertools.count(1)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)

    def store(self, session_id: str, stream_id: str, data: bytes) -> str:
        """Keep one event; the oldest of the session go past ``max_events`` or ``max_bytes``."""
        return self._keep(session_id, stream_id, data)

    def _keep(self, session_id: str, stream_id: str, data: bytes | None) -> str:
        with self._lock:
            # numbered under the lock: a session's events are kept, and forgotten, in number order
            number = next(self._counter)
            event_id = f"{stream_id}.{number}"
            events = self._events.setdefault(session_id, collections.OrderedDict())
            events[event_id] = (stream_id, data)  # data None: the stream's end marker
            if data is None:
                self._open.discard((session_id, stream_id))
            elif self.shared:
                self._open.add((session_id, stream_id))
            held = self._bytes.get(session_id, 0) + len(data or b"")
            while len(events) > self.max_events or (len(events) > 1 and held > self.max_bytes):
                forgotten, (_, old) = events.popitem(last=False)
                held -= len(old or b"")
                self._forgotten[session_id] = event_number(forgotten) or 0
            self._bytes[session_id] = held
            self._changed.notify_all()
        return event_id

    def end_stream(self, session_id: str, stream_id: str) -> None:
        """See :meth:`EventStore.end_stream`."""
        self._keep(session_id, stream_id, None)

    def stream_open(self, session_id: str, stream_id: str) -> bool:
        """See :meth:`EventStore.stream_open` (a store that is not ``shared`` is never asked, and
        keeps no record: False)."""
        with self._lock:
            return (session_id, stream_id) in self._open

    def claim_stream(self, session_id: str, stream_id: str) -> tuple[int, int]:
        """See :meth:`EventStore.claim_stream`."""
        with self._lock:
            follow = self._followers.setdefault((session_id, stream_id), [0, 0])
            follow[0] += 1
            self._changed.notify_all()  # an earlier follower sees it is superseded
            return follow[0], follow[1]

    def wait_after(
        self, session_id: str, stream_id: str, number: int, timeout: float | None, generation: int
    ) -> Followed:
        """See :meth:`EventStore.wait_after`."""
        with self._lock:
            found = self._after(session_id, stream_id, number, generation)
            if found.events or found.ended or found.superseded:
                return found
            self._changed.wait(timeout)
            return self._after(session_id, stream_id, number, generation)

    def leave_stream(self, session_id: str, stream_id: str, generation: int) -> None:
        """See :meth:`EventStore.leave_stream` (a POST stream's record goes with its last follower)."""
        with self._lock:
            follow = self._followers.get((session_id, stream_id))
            if follow is not None and follow[0] == generation and stream_id != "s":
                del self._followers[(session_id, stream_id)]

    def _after(self, session_id: str, stream_id: str, number: int, generation: int) -> Followed:
        follow = self._followers.get((session_id, stream_id))
        if follow is None or follow[0] != generation:
            return Followed([], False, number, True)
        follow[1] = number
        events: dict = self._events.get(session_id) or {}
        after: list[tuple[str, bytes]] = []
        last = number
        for eid, (sid, data) in events.items():
            n = event_number(eid) or 0
            if n <= number:
                continue
            last = max(last, n)
            if sid == stream_id:
                if data is None:
                    return Followed(after, True, last, False)
                after.append((eid, data))
        return Followed(after, False, last, False)

    def wake(self, session_id: str) -> None:
        """See :meth:`EventStore.wake`."""
        with self._lock:
            self._changed.notify_all()

    def replay_after(
        self, session_id: str, event_id: str
    ) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The events of ``event_id``'s stream after it (None: an id this session never issued, or
        a session it forgot whole).  An id forgotten past the bounds (numbered no higher than the
        last one the session forgot): what is left of its stream, all of it newer
        (:class:`EventsForgotten` when nothing is)."""
        stream_id = event_id.rpartition(".")[0]
        number = event_number(event_id)
        with self._lock:
            events = self._events.get(session_id)
            if not (stream_id and number) or events is None or event_id != f"{stream_id}.{number}":
                return None  # not <stream id>.<n> as issued here (n from 1, no leading zero)
            kept = event_id in events
            if not kept and number > self._forgotten.get(session_id, 0):
                return None
            after = []
            seen = not kept
            for eid, (sid, data) in events.items():
                if seen and sid == stream_id and data is not None:  # not the stream's end marker
                    after.append((eid, data))
                elif eid == event_id:
                    seen = True
        if not kept and not after:
            raise EventsForgotten(event_id)
        return stream_id, after

    def forget(self, session_id: str) -> None:
        """Drop every event of the session."""
        with self._lock:
            self._events.pop(session_id, None)
            self._bytes.pop(session_id, None)
            self._forgotten.pop(session_id, None)
            for key in [key for key in self._followers if key[0] == session_id]:
                del self._followers[key]
            self._open = {key for key in self._open if key[0] != session_id}
            self._changed.notify_all()
