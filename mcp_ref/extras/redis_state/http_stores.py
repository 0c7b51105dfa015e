"""The HTTP transport's event store on Redis: ``Last-Event-ID`` replays on any worker.

:class:`RedisEventStore` implements :class:`mcp_ref.transports.http_server.events.EventStore` with
the in-memory store's semantics (:class:`~mcp_ref.transports.http_server.events.MemoryEventStore`):
the last ``max_events`` events of each session, across its streams, the oldest going first; an
event id ``<stream id>.<n>``, ``n`` growing within the session; a replay is the events of the id's
stream after it, or None for an id the session never issued or no longer keeps.

Layout: one Redis stream per session, ``<namespace>:events:{<session id>}``, each entry
``0-<n>`` with the fields ``stream`` and ``data``, and the session's counter beside it
(``...:n``).  Storing is one Lua script (count, append, trim to exactly ``max_events``, refresh the
expiry), so two workers never issue one id (2025-11-25 basic/transports §Resumability and
Redelivery: event ids MUST be unique across all streams of the session); a replay is one ``XRANGE``
(one consistent read), filtered to the id's own stream (the server "MUST NOT replay messages that
would have been delivered on a different stream").
Both keys expire ``expire_after`` seconds after the session's last event (default: the HTTP app's
session idle timeout, 30 minutes): the safety net for a session whose worker died before ``forget``.

Faults: Redis unreachable.  ``store`` logs a warning (at most once a minute) and returns an id
that replays nothing (``<stream id>.unkept-<n>``): the event is still sent on the live stream, only
its resumption is lost, and said so.  ``replay_after`` answers None (the transport then opens a
new standalone stream instead of a resumption), ``forget`` leaves the keys to their expiry.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
from typing import Any

from .connection import Throttled

log = logging.getLogger(__name__)

#: The expiry of a session's events after its last one (the HTTP app's default session idle timeout).
DEFAULT_EXPIRE_AFTER = 30 * 60.0

_NUMBER = re.compile(r"[0-9]{1,19}")

# KEYS: the stream, the counter.  ARGV: max_events, expiry (ms), stream id, data.  Returns n.
_STORE = """
local n = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], '0-' .. n, 'stream', ARGV[3], 'data', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return n
"""


class RedisEventStore:
    """An :class:`~mcp_ref.transports.http_server.events.EventStore` on Redis (see the module docstring).

    ``connection`` is a :class:`~mcp_ref.extras.redis_state.connection.Connection`; ``max_events``
    bounds each session (exactly: ``MAXLEN`` without ``~``, as the in-memory store does); its events
    expire ``expire_after`` seconds after the last one.  ``failures`` counts the Redis calls that failed.
    """

    def __init__(self, connection: Any, *, max_events: int = 1000, expire_after: float = DEFAULT_EXPIRE_AFTER):
        if max_events < 1 or expire_after <= 0:
            raise ValueError("max_events must be at least 1 and expire_after positive")
        self.connection = connection
        self.max_events = max_events
        self.expire_after = expire_after
        self.failures = 0
        self._unkept = itertools.count(1)
        self._script: Any = None
        self._lock = threading.Lock()
        self._warnings = Throttled(log)

    def key(self, session_id: str) -> str:
        """The Redis stream of a session's events (its counter is this key plus ``:n``)."""
        return self.connection.key("events", "{" + session_id + "}")

    def store(self, session_id: str, stream_id: str, data: bytes) -> str:
        """Keep one event; the oldest of the session goes past ``max_events`` (one atomic script)."""
        key = self.key(session_id)
        try:
            if self._script is None:
                self._script = self.connection.client.register_script(_STORE)
            number = self._script(keys=[key, key + ":n"],
                                  args=[self.max_events, max(1, int(self.expire_after * 1000)), stream_id, data],
                                  client=self.connection.client)
        except Exception as error:  # Redis down: the event still goes out live, only not resumable
            self._failed("store an event of session %s", session_id, error)
            return f"{stream_id}.unkept-{next(self._unkept)}"
        return f"{stream_id}.{int(number)}"

    def replay_after(self, session_id: str, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The events of ``event_id``'s stream after it (None: an id this session never issued, or
        forgot, or Redis could not be asked)."""
        stream_id, _, number = event_id.rpartition(".")
        if not stream_id or not _NUMBER.fullmatch(number):
            return None
        first = f"0-{number}"
        try:
            entries = self.connection.client.xrange(self.key(session_id), first, "+")  # one consistent read
        except Exception as error:
            self._failed("replay the events of session %s", session_id, error)
            return None
        mine = stream_id.encode()
        if not entries or _text(entries[0][0]) != first or entries[0][1].get(b"stream") != mine:
            return None
        # §Resumability and Redelivery: never another stream's messages.
        return stream_id, [(f"{stream_id}.{_text(entry).partition('-')[2]}", fields[b"data"])
                           for entry, fields in entries[1:] if fields.get(b"stream") == mine]

    def forget(self, session_id: str) -> None:
        """Drop every event of the session (and its counter)."""
        key = self.key(session_id)
        try:
            self.connection.client.delete(key, key + ":n")
        except Exception as error:  # left to expire
            self._failed("forget the events of session %s", session_id, error)

    def close(self) -> None:
        """Nothing of its own to release (the connection is the state's)."""

    def _failed(self, what: str, session_id: str, error: Exception) -> None:
        """Count a failure; log it at most once a minute (:class:`~.connection.Throttled`)."""
        with self._lock:
            self.failures += 1
        self._warnings.warning("failure", "event store: could not %s on Redis (%s)", what % session_id, error)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
