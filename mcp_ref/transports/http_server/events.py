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
from typing import Protocol


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

    def replay_after(self, session_id: str, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The stream ``event_id`` belongs to and its events after it; None if unknown.

        One consistent read: no event stored meanwhile is half seen."""

    def forget(self, session_id: str) -> None:
        """Drop everything kept for a session (its end)."""

    def position(self, session_id: str) -> int:
        """The number of the session's newest event (0: none yet): a follower starting now waits after it."""

    def end_stream(self, session_id: str, stream_id: str) -> None:
        """Mark a stream ended (a marker, never replayed as an event): its followers stop there."""

    def wait_after(self, session_id: str, stream_id: str, number: int,
                   timeout: float | None) -> tuple[list[tuple[str, bytes]], bool]:
        """The events of ``stream_id`` numbered after ``number`` and whether the stream has ended;
        when there are none yet, waits up to ``timeout`` seconds for one (or for :meth:`wake`)."""

    def wake(self, session_id: str) -> None:
        """End the waits of this process's followers of the session now (it ended, or a follower's
        client went): each :meth:`wait_after` returns what it has."""


def event_number(event_id: str) -> int | None:
    """The ``n`` of an event id ``<stream id>.<n>`` (None: not an id this package issued)."""
    number = event_id.rpartition(".")[2]
    return int(number) if number.isdigit() and len(number) < 20 else None


class MemoryEventStore:
    """The default event store: the last ``max_events`` events of each session, in memory."""

    shared = False

    def __init__(self, max_events: int = 1000):
        self.max_events = max_events
        self._events: dict[str, collections.OrderedDict] = {}
        self._newest: dict[str, int] = {}  # session -> its newest event's number (bounded like _events)
        self._counter = itertools.count(1)
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)

    def store(self, session_id: str, stream_id: str, data: bytes) -> str:
        """Keep one event; the oldest of the session goes past ``max_events``."""
        return self._keep(session_id, stream_id, data)

    def _keep(self, session_id: str, stream_id: str, data: bytes | None) -> str:
        number = next(self._counter)
        event_id = f"{stream_id}.{number}"
        with self._lock:
            events = self._events.setdefault(session_id, collections.OrderedDict())
            events[event_id] = (stream_id, data)  # data None: the stream's end marker
            self._newest[session_id] = number
            while len(events) > self.max_events:
                events.popitem(last=False)
            self._changed.notify_all()
        return event_id

    def position(self, session_id: str) -> int:
        """See :meth:`EventStore.position`."""
        with self._lock:
            return self._newest.get(session_id, 0)

    def end_stream(self, session_id: str, stream_id: str) -> None:
        """See :meth:`EventStore.end_stream`."""
        self._keep(session_id, stream_id, None)

    def wait_after(self, session_id: str, stream_id: str, number: int,
                   timeout: float | None) -> tuple[list[tuple[str, bytes]], bool]:
        """See :meth:`EventStore.wait_after`."""
        with self._lock:
            found = self._after(session_id, stream_id, number)
            if found[0] or found[1]:
                return found
            self._changed.wait(timeout)
            return self._after(session_id, stream_id, number)

    def _after(self, session_id: str, stream_id: str, number: int) -> tuple[list[tuple[str, bytes]], bool]:
        events: dict = self._events.get(session_id) or {}
        after: list[tuple[str, bytes]] = []
        for eid, (sid, data) in events.items():
            if sid == stream_id and (event_number(eid) or 0) > number:
                if data is None:
                    return after, True
                after.append((eid, data))
        return after, False

    def wake(self, session_id: str) -> None:
        """See :meth:`EventStore.wake`."""
        with self._lock:
            self._changed.notify_all()

    def replay_after(self, session_id: str, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The events of ``event_id``'s stream after it (None: an id this session never issued, or forgot)."""
        stream_id = event_id.rpartition(".")[0]
        with self._lock:
            events = self._events.get(session_id)
            if not stream_id or events is None or event_id not in events:
                return None
            after, seen = [], False
            for eid, (sid, data) in events.items():
                if seen and sid == stream_id and data is not None:  # not the stream's end marker
                    after.append((eid, data))
                elif eid == event_id:
                    seen = True
        return stream_id, after

    def forget(self, session_id: str) -> None:
        """Drop every event of the session."""
        with self._lock:
            self._events.pop(session_id, None)
            self._newest.pop(session_id, None)
            self._changed.notify_all()
