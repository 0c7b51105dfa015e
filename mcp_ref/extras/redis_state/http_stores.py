"""The HTTP transport's event store on Redis: ``Last-Event-ID`` replays, and streams followed, on any worker.

:class:`RedisEventStore` implements :class:`mcp_ref.transports.http_server.events.EventStore` with
the in-memory store's semantics (:class:`~mcp_ref.transports.http_server.events.MemoryEventStore`):
the last ``max_events`` events of each session, across its streams, the oldest going first; an
event id ``<stream id>.<n>``, ``n`` growing within the session; a replay is the events of the id's
stream after it, or None for an id the session never issued or no longer keeps.

Layout: one Redis stream per session, ``<namespace>:events:{<session id>}``, each entry
``0-<n>`` with the fields ``stream`` and ``data`` (a stream's end marker: ``data`` empty and
``end`` = 1, numbered like any event, never replayed), and the session's counter beside it
(``...:n``).  Storing is one Lua script (count, append, trim to exactly ``max_events``, refresh the
expiry, publish a wake-up), so two workers never issue one id (2025-11-25 basic/transports
§Resumability and Redelivery: event ids MUST be unique across all streams of the session); a
replay is one ``XRANGE`` (one consistent read), filtered to the id's own stream (the server "MUST
NOT replay messages that would have been delivered on a different stream").
Both keys expire ``expire_after`` seconds after the session's last event (default: the HTTP app's
session idle timeout, 30 minutes): the safety net for a session whose worker died before ``forget``.

Following a stream from another worker (``wait_after``): the store script also ``PUBLISH``es
``{"n": <number>}`` on the deployment's bus channel ``events:<session id>`` (as
:class:`~.bus.RedisBus` names and encodes it), and this process keeps one bus subscription per
session that has a local waiter (made when the first one comes, dropped when the last one goes: so
the table of followed sessions is bounded by the waiting threads, and the subscriptions by
``max_followed``; past it a new session's waiters follow without one, seeing another worker's
events only at their timeout).  No waiter holds a Redis connection.  A wake-up pub/sub loses
costs at most the waiter's timeout, never an event: the waiter reads again after it.

Faults: Redis unreachable.  ``store`` logs a warning (at most once a minute) and returns an id
that replays nothing (``<stream id>.unkept-<n>``): the event is still sent on the live stream, only
its resumption is lost, and said so.  ``replay_after`` answers None (the transport then opens a
new standalone stream instead of a resumption), ``forget`` and ``end_stream`` leave the keys to
their expiry, ``position`` answers 0, and ``wait_after`` waits its timeout (or a :meth:`wake`) and
answers ``([], False)``: no busy loop while Redis is down.  Session ids are secrets: a warning
names at most the first 8 characters of one.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
import time
from typing import Any

from .connection import Throttled
from .stores import Script

log = logging.getLogger(__name__)

#: The expiry of a session's events after its last one (the HTTP app's default session idle timeout).
DEFAULT_EXPIRE_AFTER = 30 * 60.0
#: Sessions this process follows on the bus at once, at most (one subscription each; past it, a
#: new session's waiters wait without one: see the module docstring).
DEFAULT_MAX_FOLLOWED = 10_000
#: Seconds a ``wait_after(..., timeout=None)`` waits at most (a lost wake-up must not hang a follower).
MAX_WAIT = 30.0

_NUMBER = re.compile(r"[0-9]{1,19}")

# KEYS: the stream, the counter.  ARGV: max_events, expiry (ms), stream id, data, '1' for an end
# marker, the bus channel (as RedisBus names it).  Returns n.
_STORE = Script("""
local n = redis.call('INCR', KEYS[2])
if ARGV[5] == '1' then
  redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], '0-' .. n, 'stream', ARGV[3], 'data', '', 'end', '1')
else
  redis.call('XADD', KEYS[1], 'MAXLEN', ARGV[1], '0-' .. n, 'stream', ARGV[3], 'data', ARGV[4])
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('PUBLISH', ARGV[6], '{"n":' .. n .. '}')
return n
""")

# KEYS: the stream, the counter.  ARGV: the bus channel.  Its followers re-read (and find nothing).
_FORGET = Script("""
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('PUBLISH', ARGV[1], '{"n":0}')
return 1
""")


class _Follow:
    """This process's waiters of one session: their count, the wake-ups so far, the bus subscription."""

    def __init__(self, lock: threading.Lock):
        self.changed = threading.Condition(lock)
        self.waiters = 0
        self.generation = 0  # wake-ups so far: a waiter waits until it moves
        self.subscribed = False  # counted in RedisEventStore._subscriptions
        self.unsubscribe: Any = None
        self.ready = threading.Event()  # the subscription is made (or given up)


class RedisEventStore:
    """An :class:`~mcp_ref.transports.http_server.events.EventStore` on Redis (see the module docstring).

    ``connection`` is a :class:`~mcp_ref.extras.redis_state.connection.Connection`; ``max_events``
    bounds each session (exactly: ``MAXLEN`` without ``~``, as the in-memory store does); its events
    expire ``expire_after`` seconds after the last one.  ``bus`` is the deployment's
    :class:`~.bus.RedisBus` (made on ``connection``, and closed by :meth:`close`, when not given);
    ``max_followed`` bounds this process's subscriptions.  ``failures`` counts the Redis calls that failed.
    """

    shared = True

    def __init__(self, connection: Any, *, max_events: int = 1000, expire_after: float = DEFAULT_EXPIRE_AFTER,
                 bus: Any = None, max_followed: int = DEFAULT_MAX_FOLLOWED):
        if max_events < 1 or expire_after <= 0 or max_followed < 0:
            raise ValueError("max_events must be at least 1, expire_after positive and max_followed not negative")
        self.connection = connection
        self.max_events = max_events
        self.expire_after = expire_after
        self.max_followed = max_followed
        self.failures = 0
        self._bus = bus
        self._own_bus = bus is None
        self._unkept = itertools.count(1)
        self._lock = threading.Lock()
        self._follows: dict[str, _Follow] = {}  # session -> its local waiters (only while there are some)
        self._subscriptions = 0
        self._warnings = Throttled(log)

    def key(self, session_id: str) -> str:
        """The Redis stream of a session's events (its counter is this key plus ``:n``)."""
        return self.connection.key("events", "{" + session_id + "}")

    @staticmethod
    def channel(session_id: str) -> str:
        """The bus channel on which each store of the session wakes its followers."""
        return "events:" + session_id

    @property
    def bus(self) -> Any:
        """The :class:`~.bus.RedisBus` the followers' wake-ups come on (made on first use when not given)."""
        if self._bus is None:
            from .bus import RedisBus

            with self._lock:
                if self._bus is None:
                    self._bus = RedisBus(self.connection)
        return self._bus

    def store(self, session_id: str, stream_id: str, data: bytes) -> str:
        """Keep one event; the oldest of the session goes past ``max_events`` (one atomic script,
        which also wakes the session's followers on every worker)."""
        number = self._keep(session_id, stream_id, data, end=False)
        return f"{stream_id}.unkept-{next(self._unkept)}" if number is None else f"{stream_id}.{number}"

    def end_stream(self, session_id: str, stream_id: str) -> None:
        """See ``EventStore.end_stream``: a marker entry (``end`` = 1), numbered like an event."""
        self._keep(session_id, stream_id, b"", end=True)

    def _keep(self, session_id: str, stream_id: str, data: bytes, *, end: bool) -> int | None:
        """Append one entry (the store script); its number, or None when Redis could not be reached."""
        key = self.key(session_id)
        try:
            number = _STORE(self.connection.client, [key, key + ":n"],
                            [self.max_events, max(1, int(self.expire_after * 1000)), stream_id, data,
                             "1" if end else "0", self.connection.key("bus", self.channel(session_id))])
        except Exception as error:  # Redis down: the event still goes out live, only not resumable
            self._failed("end a stream of" if end else "store an event of", session_id, error)
            return None
        return int(number)

    def position(self, session_id: str) -> int:
        """See ``EventStore.position``: the session's counter (0: none, or Redis could not be asked)."""
        try:
            held = self.connection.client.get(self.key(session_id) + ":n")
        except Exception as error:
            self._failed("read the position of", session_id, error)
            return 0
        return int(held) if held else 0

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
            self._failed("replay the events of", session_id, error)
            return None
        mine = stream_id.encode()
        if not entries or _text(entries[0][0]) != first or entries[0][1].get(b"stream") != mine:
            return None
        # §Resumability and Redelivery: never another stream's messages (nor a stream's end marker).
        return stream_id, [(f"{stream_id}.{_text(entry).partition('-')[2]}", fields[b"data"])
                           for entry, fields in entries[1:] if fields.get(b"stream") == mine and b"end" not in fields]

    def wait_after(self, session_id: str, stream_id: str, number: int,
                   timeout: float | None) -> tuple[list[tuple[str, bytes]], bool]:
        """See ``EventStore.wait_after``: one ``XRANGE`` when there are events already; else the
        session is followed on the bus (see the module docstring) and read again when a store of
        any worker, or :meth:`wake`, says so, or after ``timeout`` (None: :data:`MAX_WAIT`)."""
        deadline = time.monotonic() + (MAX_WAIT if timeout is None else max(0.0, timeout))
        found = self._after(session_id, stream_id, number)
        if found is not None and (found[0] or found[1]) or time.monotonic() >= deadline:
            return found or ([], False)
        follow, seen = self._follow(session_id, deadline)
        try:
            if found is not None:  # read again: from now on every store wakes this waiter
                found = self._after(session_id, stream_id, number)
                if found is not None and (found[0] or found[1]):
                    return found
            with self._lock:
                follow.changed.wait_for(lambda: follow.generation != seen, max(0.0, deadline - time.monotonic()))
            if found is None:  # Redis was down: the timeout (or a wake) waited, nothing read
                return [], False
            return self._after(session_id, stream_id, number) or ([], False)
        finally:
            self._unfollow(session_id, follow)

    def wake(self, session_id: str) -> None:
        """See ``EventStore.wake``: this process's waiters of the session read again now (no Redis call)."""
        with self._lock:
            follow = self._follows.get(session_id)
            if follow is not None:
                self._woken(follow)

    def forget(self, session_id: str) -> None:
        """Drop every event of the session (and its counter); its followers on every worker read again."""
        key = self.key(session_id)
        try:
            _FORGET(self.connection.client, [key, key + ":n"], [self.connection.key("bus", self.channel(session_id))])
        except Exception as error:  # left to expire
            self._failed("forget the events of", session_id, error)
        self.wake(session_id)

    def following(self, session_id: str) -> int:
        """How many of this process's threads wait on the session now."""
        with self._lock:
            follow = self._follows.get(session_id)
            return 0 if follow is None else follow.waiters

    def close(self) -> None:
        """Close the bus this store made (a given bus, and the connection, are the state's)."""
        bus = self._bus if self._own_bus else None
        if bus is not None:
            bus.close()

    # -- following ----------------------------------------------------------------------------------

    def _after(self, session_id: str, stream_id: str, number: int) -> tuple[list[tuple[str, bytes]], bool] | None:
        """The stream's events numbered after ``number``, and whether its end marker follows them
        (one ``XRANGE``); None when Redis could not be asked."""
        try:
            entries = self.connection.client.xrange(self.key(session_id), f"0-{max(0, number) + 1}", "+")
        except Exception as error:
            self._failed("follow a stream of", session_id, error)
            return None
        mine, after = stream_id.encode(), list[tuple[str, bytes]]()
        for entry, fields in entries:
            if fields.get(b"stream") == mine:
                if b"end" in fields:
                    return after, True
                after.append((f"{stream_id}.{_text(entry).partition('-')[2]}", fields[b"data"]))
        return after, False

    def _follow(self, session_id: str, deadline: float) -> tuple[_Follow, int]:
        """Count a waiter of the session (subscribing on the bus for the first one); the follow and
        its wake-ups so far (the waiter waits until they move)."""
        with self._lock:
            follow = self._follows.get(session_id)
            first = follow is None
            if follow is None:
                follow = self._follows[session_id] = _Follow(self._lock)
                follow.subscribed = self._subscriptions < self.max_followed
                self._subscriptions += follow.subscribed
            follow.waiters += 1
            seen = follow.generation
        if not first:
            follow.ready.wait(max(0.0, deadline - time.monotonic()))
            return follow, seen
        unsubscribe = None
        if follow.subscribed:
            try:  # returns once Redis confirmed it (bounded by the bus's subscribe_timeout)
                unsubscribe = self.bus.subscribe(self.channel(session_id), lambda _message: self._wake(follow))
            except Exception as error:  # the bus is closed or full: wait without a subscription
                self._warnings.warning("follow", "event store: could not follow a session on the bus (%s)", error)
        with self._lock:
            follow.unsubscribe = unsubscribe
            if unsubscribe is None and follow.subscribed:
                follow.subscribed = False
                self._subscriptions -= 1
        follow.ready.set()
        return follow, seen

    def _unfollow(self, session_id: str, follow: _Follow) -> None:
        """A waiter is done: the last one of the session drops its subscription."""
        with self._lock:
            follow.waiters -= 1
            if follow.waiters or self._follows.get(session_id) is not follow:
                return
            del self._follows[session_id]
            unsubscribe, follow.unsubscribe = follow.unsubscribe, None
            if follow.subscribed:
                follow.subscribed = False
                self._subscriptions -= 1
        if unsubscribe is not None:
            unsubscribe()

    def _wake(self, follow: _Follow) -> None:
        """A store's wake-up came on the bus (the delivery thread)."""
        with self._lock:
            self._woken(follow)

    @staticmethod
    def _woken(follow: _Follow) -> None:
        """Wake the follow's waiters (holding the lock)."""
        follow.generation += 1
        follow.changed.notify_all()

    def _failed(self, what: str, session_id: str, error: Exception) -> None:
        """Count a failure; log it at most once a minute (:class:`~.connection.Throttled`), naming at
        most the first 8 characters of the session id (a secret)."""
        with self._lock:
            self.failures += 1
        self._warnings.warning("failure", "event store: could not %s session %s… on Redis (%s)",
                               what, session_id[:8], error)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
