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

    An event id names its stream: ``<stream id>.<n>``, unique in the session.
    """

    def store(self, session_id: str, stream_id: str, data: bytes) -> str:
        """Keep one event of a stream; return its id (unique in the session, naming the stream).

        Atomic: numbering and appending are one step (two writers never get the same id)."""

    def replay_after(self, session_id: str, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The stream ``event_id`` belongs to and its events after it; None if unknown.

        One consistent read: no event stored meanwhile is half seen."""

    def forget(self, session_id: str) -> None:
        """Drop everything kept for a session (its end)."""


class MemoryEventStore:
    """The default event store: the last ``max_events`` events of each session, in memory."""

    def __init__(self, max_events: int = 1000):
        self.max_events = max_events
        self._events: dict[str, collections.OrderedDict] = {}
        self._counter = itertools.count(1)
        self._lock = threading.Lock()

    def store(self, session_id: str, stream_id: str, data: bytes) -> str:
        """Keep one event; the oldest of the session goes past ``max_events``."""
        event_id = f"{stream_id}.{next(self._counter)}"
        with self._lock:
            events = self._events.setdefault(session_id, collections.OrderedDict())
            events[event_id] = (stream_id, data)
            while len(events) > self.max_events:
                events.popitem(last=False)
        return event_id

    def replay_after(self, session_id: str, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The events of ``event_id``'s stream after it (None: an id this session never issued, or forgot)."""
        stream_id = event_id.rpartition(".")[0]
        with self._lock:
            events = self._events.get(session_id)
            if not stream_id or events is None or event_id not in events:
                return None
            after, seen = [], False
            for eid, (sid, data) in events.items():
                if seen and sid == stream_id:
                    after.append((eid, data))
                elif eid == event_id:
                    seen = True
        return stream_id, after

    def forget(self, session_id: str) -> None:
        """Drop every event of the session."""
        with self._lock:
            self._events.pop(session_id, None)
