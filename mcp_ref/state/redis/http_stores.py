"""The HTTP transport's event store on Redis: ``Last-Event-ID`` replays, and streams followed, on any worker.

:class:`RedisEventStore` implements :class:`mcp_ref.http.server.events.EventStore` with
the in-memory store's semantics (:class:`~mcp_ref.http.server.events.MemoryEventStore`):
the last ``max_events`` events of each session, across its streams, their data at most
``max_bytes`` (the newest kept however long), the oldest going first; an
event id ``<stream id>.<n>``, ``n`` growing within the session; a replay is the events of the id's
stream after it, or None for an id the session never issued (an id it issued but trimmed: what is
left of its stream, or ``EventsForgotten`` when nothing is); one follower of a
stream at a time, the newest (``claim_stream``), and a "delivered up to" cursor per stream.

Keys (``ns`` is the URL's namespace; ``<d>`` is :func:`~.sessions.session_digest` of the session
id, never the id: without authorization the id is the session's credential, and a key listing,
``MONITOR`` or ``PUBSUB CHANNELS`` must not give it away):

======================  =======================================================================
``ns:events:{<d>}``     the session's events (a Redis stream): each entry ``0-<n>``, fields
                        ``stream`` and ``data`` (a stream's end marker: ``data`` empty and
                        ``end`` = 1, numbered like any event, never replayed), at most
                        ``max_events`` entries and ``max_bytes`` of data
``ns:events:{<d>}:n``   the session's counter (the last ``n`` issued)
``ns:events:{<d>}:f``   its followed streams (hash): ``<stream id>:g`` the newest follower's
                        generation, ``<stream id>:c`` the number the stream was delivered up to,
                        ``<stream id>:o`` while the stream is open (an event stored, no end yet);
                        and ``bytes``, the data of the entries kept (a running total)
======================  =======================================================================

Each operation is one Lua script, atomic across the workers:

- ``store`` / ``end_stream``: count, append, trim (the oldest entries, one at a time, while the
  stream is past ``max_events`` or, keeping the newest, its ``bytes`` past ``max_bytes``: a stream's
  ``MAXLEN`` counts entries only; ``bytes`` set again to the entry's own when it is left alone,
  so a total outliving its entries' expiry is dropped), refresh the expiry, ``PUBLISH`` a wake-up
  on the bus channel ``events:<d>`` (as :class:`~.bus.RedisBus` names it).  Two workers never issue one id
  (2025-11-25 basic/transports §Resumability and Redelivery: event ids MUST be unique across all
  streams of the session).
- ``replay_after``: one ``XRANGE`` (one consistent read), filtered to the id's own stream (the
  server "MUST NOT replay messages that would have been delivered on a different stream").
- ``claim_stream``: ``HINCRBY`` the stream's generation, read its cursor, ``PUBLISH`` a wake-up so
  the follower it supersedes, on any worker, sees at once that it must end (2025-11-25
  basic/transports: the server "MUST NOT broadcast the same message across multiple streams").
  A cursor past the session's counter (its events expired, and their numbering started again) is
  brought back to the counter.
- ``wait_after`` reads with one script: the generation is checked (another one: superseded), the
  cursor set to the number the follower asks after, and the session's entries after it read
  (``XRANGE ... COUNT`` :data:`READ_COUNT`); the answer is the stream's events, whether its end
  marker came, and the highest entry number read of any stream, so the next read starts past the
  other streams' entries (never reads them twice).  A follower whose number is past the counter
  (the numbering started again) is told it is superseded, and ends.  When the read finds nothing,
  the follower waits for a wake-up (or its timeout) and reads once more.
- ``leave_stream``: a POST stream's generation and cursor go with its newest follower; the
  standalone stream's (``s``) stay, so a later GET starts where the last one stopped.
- ``forget``: every key of the session, and a wake-up (its followers find themselves superseded).

All three keys expire ``expire_after`` seconds (default: the HTTP app's session idle timeout, 30
minutes) after the session's last store, claim or read: the safety net for a session whose worker
died before ``forget``; a follower reads at least every keep-alive, so what it follows never
expires under it.

Wake-ups: this process keeps one bus subscription per session it has a follower of, made by the
first ``claim_stream`` and dropped by the ``leave_stream`` of the last (not per wait): at most
``max_followed`` sessions are subscribed at once; past it, a session's followers work without one,
seeing another worker's events at their timeout (the transport's keep-alive).  The table of
followed sessions holds a session only while it has a follower (a claim not yet left) or a thread
in ``wait_after``.  A lost wake-up costs at most a waiter's timeout, never an event: it reads again
after it.  No waiter holds a Redis connection.

Faults (Redis unreachable; a warning at most once a minute):

- ``claim_stream`` raises :class:`EventStoreUnavailable` (a builtin :class:`ConnectionError`): the
  transport answers 503 with Retry-After, so no follower starts at a wrong place.
- ``store`` returns an id that replays nothing (``<stream id>.unkept-<n>``).  An event the transport
  also sends live (on a POST stream whose client is connected) still goes out, only its resumption
  is lost; an event only the store carries (a shared session's standalone message, or one of a
  POST stream whose client has gone) is lost, and logged.
- ``replay_after`` answers None (the transport then opens a new stream instead of a resumption);
  ``forget``, ``end_stream`` and ``leave_stream`` leave the keys to their expiry.
- ``wait_after`` waits its timeout (or a :meth:`~RedisEventStore.wake`) and answers no events, not
  ended, not superseded, at the number it was given: no busy loop while Redis is down.

Session ids are secrets: a warning names a session by the first 8 digits of its digest.
"""

from __future__ import annotations

import itertools
import logging
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from ...http.server.events import DEFAULT_MAX_BYTES, EventsForgotten, Followed
from .bus import RedisBus
from .connection import Throttled, reply_text
from .sessions import session_digest
from .stores import FAULTS, Script

log = logging.getLogger(__name__)

#: The expiry of a session's events after its last one (the HTTP app's default session idle timeout).
DEFAULT_EXPIRE_AFTER = 30 * 60.0
#: Sessions this process follows on the bus at once, at most (one subscription each; past it, a
#: new session's followers wait without one: see the module docstring).
DEFAULT_MAX_FOLLOWED = 10_000
#: Seconds a ``wait_after(..., timeout=None)`` waits at most (a lost wake-up must not hang a follower).
MAX_WAIT = 30.0
#: Entries one read of a follower takes at most (bounded work per script; a follower that met only
#: other streams' entries reads on from the last one at once).
READ_COUNT = 256
#: The stream id of a session's standalone (GET) stream: its cursor outlives its followers.
STANDALONE = "s"

#: An event number as this store issues it (from 1, no leading zero).
_NUMBER = re.compile(r"[1-9][0-9]{0,18}")

# KEYS: the stream, the counter, the followers.  ARGV: max_events, expiry (ms), stream id, data,
# '1' for an end marker, the bus channel (as RedisBus names it), max_bytes.  Returns n.
_STORE = Script("""
local n = redis.call('INCR', KEYS[2])
if ARGV[5] == '1' then
  redis.call('XADD', KEYS[1], '0-' .. n, 'stream', ARGV[3], 'data', '', 'end', '1')
  redis.call('HDEL', KEYS[3], ARGV[3] .. ':o')
else
  redis.call('XADD', KEYS[1], '0-' .. n, 'stream', ARGV[3], 'data', ARGV[4])
  redis.call('HSET', KEYS[3], ARGV[3] .. ':o', '1')
end
local held = redis.call('HINCRBY', KEYS[3], 'bytes', #ARGV[4])
local kept = redis.call('XLEN', KEYS[1])
while kept > tonumber(ARGV[1]) or (kept > 1 and held > tonumber(ARGV[7])) do
  local oldest = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
  -- its fields as written above: stream, its id, data, the data ('0 -': never "-0", no integer)
  held = redis.call('HINCRBY', KEYS[3], 'bytes', 0 - #oldest[2][4])
  redis.call('XDEL', KEYS[1], oldest[1])
  kept = kept - 1
end
if kept == 1 then  -- this entry alone: a total its session's expired entries left is dropped
  redis.call('HSET', KEYS[3], 'bytes', #ARGV[4])
end
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
redis.call('PUBLISH', ARGV[6], '{"n":' .. n .. '}')
return n
""")

# KEYS: the stream, the counter, the followers.  ARGV: stream id, expiry (ms), the bus channel, the
# claiming store's token (its own process ignores the wake-up).  Returns {generation, delivered up to}.
_CLAIM = Script("""
local g = redis.call('HINCRBY', KEYS[3], ARGV[1] .. ':g', 1)
local c = tonumber(redis.call('HGET', KEYS[3], ARGV[1] .. ':c') or '0')
local n = tonumber(redis.call('GET', KEYS[2]) or '0')
if c > n then  -- the session's numbering started again (its events expired): so does the cursor
  c = n
  redis.call('HSET', KEYS[3], ARGV[1] .. ':c', n)
end
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
redis.call('PUBLISH', ARGV[3], '{"claimed":' .. g .. ',"by":"' .. ARGV[4] .. '"}')
return {g, c}
""")

# KEYS: the stream, the counter, the followers.  ARGV: stream id, generation, number, count,
# expiry (ms), the first entry id to read ('0-<number + 1>').  Returns {1} when superseded, else
# {0, ended, last read, entries read, then n, data of each of the stream's events}.
_READ = Script("""
local number = tonumber(ARGV[3])
if redis.call('HGET', KEYS[3], ARGV[1] .. ':g') ~= ARGV[2]
   or tonumber(redis.call('GET', KEYS[2]) or '0') < number then
  return {1}
end
redis.call('HSET', KEYS[3], ARGV[1] .. ':c', ARGV[3])
for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ARGV[5]) end
local entries = redis.call('XRANGE', KEYS[1], ARGV[6], '+', 'COUNT', ARGV[4])
local answer = {0, 0, ARGV[3], #entries}
for _, entry in ipairs(entries) do
  answer[3] = string.sub(entry[1], 3)
  local fields, stream, data, ended = entry[2], nil, nil, false
  for i = 1, #fields, 2 do
    if fields[i] == 'stream' then stream = fields[i + 1]
    elseif fields[i] == 'data' then data = fields[i + 1]
    elseif fields[i] == 'end' then ended = true end
  end
  if stream == ARGV[1] then
    if ended then
      answer[2] = 1
      return answer
    end
    answer[#answer + 1] = answer[3]
    answer[#answer + 1] = data or ''
  end
end
return answer
""")

# KEYS: the stream, the counter, the followers.  ARGV: stream id, generation, the standalone
# stream's id.
_LEAVE = Script("""
if ARGV[1] ~= ARGV[3] and redis.call('HGET', KEYS[3], ARGV[1] .. ':g') == ARGV[2] then
  redis.call('HDEL', KEYS[3], ARGV[1] .. ':g', ARGV[1] .. ':c')
end
return 1
""")

# KEYS: the stream, the counter, the followers.  ARGV: the bus channel.
_FORGET = Script("""
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('PUBLISH', ARGV[1], '{"n":0}')
return 1
""")


class EventStoreUnavailable(ConnectionError):
    """The event store's Redis cannot be reached where a follower must start (``claim_stream``): the
    transport answers 503 with Retry-After (a builtin :class:`ConnectionError`, so the transport
    needs nothing of this module)."""


@dataclass
class _Follow:
    """This process's part in one session's streams: its followers and waiting threads, the
    wake-ups so far, the bus subscription."""

    changed: threading.Condition  # on the store's lock
    followers: int = 0  # claims not yet left
    waiters: int = 0  # threads in wait_after
    wakes: int = 0  # wake-ups so far: a waiter waits until they move
    # a subscription was made (or tried): counted in RedisEventStore._subscriptions
    tried: bool = False
    unsubscribe: Any = None
    ready: threading.Event = field(default_factory=threading.Event)  # subscribed (or given up)

    def wake(self) -> None:
        """Wake the session's waiters (holding the store's lock)."""
        self.wakes += 1
        self.changed.notify_all()


class RedisEventStore:
    """An :class:`~mcp_ref.http.server.events.EventStore` on Redis (see the module docstring).

    ``connection`` is a :class:`~mcp_ref.state.redis.connection.Connection`; ``max_events`` and
    ``max_bytes`` bound each session exactly, as the in-memory store does; its keys
    expire ``expire_after`` seconds after the last use.  ``bus`` is the deployment's
    :class:`~.bus.RedisBus` (made on ``connection``, and closed by :meth:`close`, when not given);
    ``max_followed`` bounds this process's subscriptions.  ``failures`` counts the Redis calls that failed.
    """

    shared = True

    def __init__(
        self,
        connection: Any,
        *,
        max_events: int = 1000,
        max_bytes: int = DEFAULT_MAX_BYTES,
        expire_after: float = DEFAULT_EXPIRE_AFTER,
        bus: Any = None,
        max_followed: int = DEFAULT_MAX_FOLLOWED,
    ):
        if max_events < 1 or max_bytes < 0 or expire_after <= 0 or max_followed < 0:
            raise ValueError(
                "max_events must be at least 1, expire_after positive, max_bytes and max_followed"
                " not negative"
            )
        self.connection = connection
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.expire_after = expire_after
        self.max_followed = max_followed
        self.failures = 0
        #: The :class:`~.bus.RedisBus` the followers' wake-ups come on (made here when not given).
        self.bus = RedisBus(connection) if bus is None else bus
        self._own_bus = bus is None
        self._unkept = itertools.count(1)
        self._token = secrets.token_hex(8)  # names this store's claims on the bus
        self._lock = threading.Lock()
        self._follows: dict[str, _Follow] = {}  # session -> this process's part (while it has one)
        self._subscriptions = 0
        self._warnings = Throttled(log)

    def key(self, session_id: str) -> str:
        """The Redis stream of a session's events (its counter is this key plus ``:n``, its followed
        streams plus ``:f``): named by the session's digest, never its id."""
        return self.connection.key("events", "{" + session_digest(session_id) + "}")

    def keys(self, session_id: str) -> list[str]:
        """Every key of the session: its events, its counter, its followed streams."""
        key = self.key(session_id)
        return [key, key + ":n", key + ":f"]

    @staticmethod
    def channel(session_id: str) -> str:
        """The bus channel on which each store or claim of the session wakes its followers (named by
        the session's digest: a channel name is seen by ``PUBSUB CHANNELS`` and in the bus's logs)."""
        return "events:" + session_digest(session_id)

    @property
    def _expiry(self) -> int:
        return max(1, int(self.expire_after * 1000))

    def _wake_channel(self, session_id: str) -> str:
        return self.connection.key("bus", self.channel(session_id))

    # -- storing and replaying -----------------------------------------------------------------------

    def store(self, session_id: str, stream_id: str, data: bytes) -> str:
        """Keep one event; the oldest of the session go past ``max_events`` or ``max_bytes`` (one
        atomic script, which also wakes the session's followers on every worker)."""
        number = self._keep(session_id, stream_id, data, end=False)
        return (
            f"{stream_id}.unkept-{next(self._unkept)}"
            if number is None
            else f"{stream_id}.{number}"
        )

    def end_stream(self, session_id: str, stream_id: str) -> None:
        """See ``EventStore.end_stream``: a marker entry (``end`` = 1), numbered like an event."""
        self._keep(session_id, stream_id, b"", end=True)

    def _keep(self, session_id: str, stream_id: str, data: bytes, *, end: bool) -> int | None:
        """Append one entry (the store script); its number, or None when Redis could not be reached."""
        # Redis down: only a live stream still carries the event
        number = self._script(
            "end a stream of" if end else "store an event (lost unless sent live) of",
            session_id,
            _STORE,
            self.max_events,
            self._expiry,
            stream_id,
            data,
            "1" if end else "0",
            self._wake_channel(session_id),
            self.max_bytes,
        )
        return None if number is None else int(number)

    def replay_after(
        self, session_id: str, event_id: str
    ) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The events of ``event_id``'s stream after it (None: an id this session never issued, or
        forgot whole, or Redis could not be asked).  An id trimmed past the bounds: what is left
        of its stream (:class:`~mcp_ref.http.server.events.EventsForgotten` when nothing is)."""
        stream_id, _, number = event_id.rpartition(".")
        if not stream_id or not _NUMBER.fullmatch(number):
            return None
        first = f"0-{number}"
        try:
            # one consistent read
            entries = self.connection.client.xrange(self.key(session_id), first, "+")
        except Exception as error:
            self._failed("replay the events of", session_id, error)
            return None
        if not entries:  # past the session's last number, or its keys are gone
            return None
        mine = stream_id.encode()
        # Numbers are dense in a session and trimmed oldest first: one below the first kept entry
        # was issued here and trimmed (its stream cannot be checked: what is left of the one named).
        kept = reply_text(entries[0][0]) == first
        if kept and entries[0][1].get(b"stream") != mine:
            return None  # that number is another stream's
        # §Resumability and Redelivery: never another stream's messages (nor a stream's end marker).
        after = [
            (f"{stream_id}.{reply_text(entry).partition('-')[2]}", fields[b"data"])
            for entry, fields in entries[1 if kept else 0 :]
            if fields.get(b"stream") == mine and b"end" not in fields
        ]
        if not kept and not after:
            raise EventsForgotten(event_id)
        return stream_id, after

    def stream_open(self, session_id: str, stream_id: str) -> bool:
        """See ``EventStore.stream_open``: the ``:o`` field, kept even when the stream's events and
        end marker are trimmed (True when Redis cannot be asked: the follower then waits on it)."""
        try:
            return bool(self.connection.client.hexists(self.keys(session_id)[2], stream_id + ":o"))
        except Exception as error:
            self._failed("look up a stream of", session_id, error)
            return True

    def forget(self, session_id: str) -> None:
        """Drop every key of the session; its followers on every worker are woken (and superseded)."""
        # on a failure, left to expire
        self._script("forget the events of", session_id, _FORGET, self._wake_channel(session_id))
        self.wake(session_id)

    # -- following -----------------------------------------------------------------------------------

    def claim_stream(self, session_id: str, stream_id: str) -> tuple[int, int]:
        """See ``EventStore.claim_stream``: one script (the generation counted, the cursor read, a
        wake-up published); this process follows the session on the bus from now until the last
        :meth:`leave_stream`.  :class:`EventStoreUnavailable` when Redis cannot be reached."""
        follow = self._enter(session_id, follower=True)
        claimed = False
        try:
            answer = _CLAIM(
                self.connection,
                self.keys(session_id),
                [stream_id, self._expiry, self._wake_channel(session_id), self._token],
            )
            claimed = True
        except FAULTS as error:
            self._failed("start following a stream of", session_id, error)
            raise EventStoreUnavailable("Service Unavailable: event store unreachable") from error
        finally:
            if not claimed:
                self._release(session_id, follow, follower=True)
        self.wake(session_id)  # this process's earlier follower sees at once that it is superseded
        return int(answer[0]), int(answer[1])

    def wait_after(
        self, session_id: str, stream_id: str, number: int, timeout: float | None, generation: int
    ) -> Followed:
        """See ``EventStore.wait_after``: one read script (more only while it meets nothing but other
        streams' entries, :data:`READ_COUNT` at a time); when it finds nothing, a wait for a store or
        claim of any worker, or :meth:`wake`, or ``timeout`` (None: :data:`MAX_WAIT`), then one more read."""
        deadline = time.monotonic() + (MAX_WAIT if timeout is None else max(0.0, timeout))
        follow = self._enter(session_id, follower=False)
        try:
            with self._lock:
                seen = follow.wakes
            found = self._read(session_id, stream_id, number, generation)
            if found is not None and (found.events or found.ended or found.superseded):
                return found
            left = deadline - time.monotonic()
            if left > 0:
                with self._lock:
                    follow.changed.wait_for(lambda: follow.wakes != seen, left)
            if found is None:  # Redis was down: the timeout (or a wake) waited, nothing read
                return Followed([], False, number, False)
            if left <= 0:
                return found
            return self._read(session_id, stream_id, found.last, generation) or Followed(
                [], False, found.last, False
            )
        finally:
            self._release(session_id, follow, follower=False)

    def leave_stream(self, session_id: str, stream_id: str, generation: int) -> None:
        """See ``EventStore.leave_stream``: a POST stream's generation and cursor go if ``generation``
        is its newest (one script); this process's subscription goes with its last follower of the session."""
        # on a failure, left to expire
        self._script(
            "stop following a stream of", session_id, _LEAVE, stream_id, generation, STANDALONE
        )
        with self._lock:
            follow = self._follows.get(session_id)
        if follow is not None:
            self._release(session_id, follow, follower=True)

    def wake(self, session_id: str) -> None:
        """See ``EventStore.wake``: this process's waiters of the session read again now (no Redis call)."""
        with self._lock:
            follow = self._follows.get(session_id)
            if follow is not None:
                follow.wake()

    def following(self, session_id: str) -> int:
        """How many followers of the session (claims not yet left) this process has now."""
        with self._lock:
            follow = self._follows.get(session_id)
            return 0 if follow is None else follow.followers

    def close(self) -> None:
        """Close the bus this store made (a given bus, and the connection, are the state's)."""
        if self._own_bus:
            self.bus.close()

    def _read(
        self, session_id: str, stream_id: str, number: int, generation: int
    ) -> Followed | None:
        """One read of the stream after ``number`` (the read script; again while a full batch held
        only other streams' entries: at most what ``max_events`` allows); None when Redis could not
        be asked."""
        last = number
        for _batch in range(self.max_events // READ_COUNT + 2):
            answer = self._script(
                "follow a stream of",
                session_id,
                _READ,
                stream_id,
                generation,
                last,
                READ_COUNT,
                self._expiry,
                f"0-{max(0, last) + 1}",
            )
            if answer is None:
                return None
            if int(answer[0]):
                return Followed([], False, number, True)
            ended, last, count, rest = (
                bool(int(answer[1])),
                int(answer[2]),
                int(answer[3]),
                answer[4:],
            )
            events = [
                (f"{stream_id}.{int(rest[i])}", bytes(rest[i + 1])) for i in range(0, len(rest), 2)
            ]
            if events or ended or count < READ_COUNT:
                return Followed(events, ended, last, False)
        return Followed([], False, last, False)  # a writer outpaced the reads: the caller reads on

    def _enter(self, session_id: str, *, follower: bool) -> _Follow:
        """Count a follower (a claim: the session's first subscribes it on the bus, within
        ``max_followed``) or a waiting thread of the session; its :class:`_Follow`."""
        with self._lock:
            follow = self._follows.get(session_id)
            if follow is None:  # made once, not for every waiter
                follow = self._follows[session_id] = _Follow(threading.Condition(self._lock))
            if not follower:
                follow.waiters += 1
                return follow
            follow.followers += 1
            start = not follow.tried and self._subscriptions < self.max_followed
            if start:
                follow.tried = True
                self._subscriptions += 1
            elif not follow.tried:
                return follow  # past max_followed: followed without wake-ups (their timeouts)
        # another claim is subscribing: wait for it (bounded by the bus's subscribe_timeout)
        if not start:
            follow.ready.wait(MAX_WAIT)
            return follow
        unsubscribe = None
        try:  # returns once Redis confirmed it (bounded by the bus's subscribe_timeout)
            unsubscribe = self.bus.subscribe(
                self.channel(session_id), lambda message: self._wake(follow, message)
            )
        except Exception as error:  # the bus is closed or full: followed without wake-ups
            self._warnings.warning(
                "follow", "event store: could not follow a session on the bus (%s)", error
            )
        finally:
            with self._lock:
                follow.unsubscribe = unsubscribe
                if unsubscribe is None:
                    self._subscriptions -= 1
            follow.ready.set()
        return follow

    def _release(self, session_id: str, follow: _Follow, *, follower: bool) -> None:
        """A follower left (or a waiting thread is done): with the session's last, its subscription goes."""
        with self._lock:
            if follower:
                follow.followers = max(0, follow.followers - 1)
            else:
                follow.waiters -= 1
            if follow.followers or follow.waiters or self._follows.get(session_id) is not follow:
                return
            del self._follows[session_id]
            unsubscribe, follow.unsubscribe = follow.unsubscribe, None
            if unsubscribe is not None:
                self._subscriptions -= 1
        if unsubscribe is not None:
            unsubscribe()

    def _wake(self, follow: _Follow, message: dict) -> None:
        """A store's or claim's wake-up came on the bus (the delivery thread).  This store's own
        claims are skipped: ``claim_stream`` woke this process's followers itself, and a wake-up
        coming after the new follower's first read would only make it read again for nothing."""
        if message.get("by") != self._token:
            with self._lock:
                follow.wake()

    def _script(self, what: str, session_id: str, script: Script, *args: Any) -> Any:
        """Run ``script`` on the session's keys with ``args``; None when Redis could not be asked
        (:meth:`_failed`: it could not ``what`` the session)."""
        try:
            return script(self.connection, self.keys(session_id), list(args))
        except Exception as error:
            self._failed(what, session_id, error)
            return None

    def _failed(self, what: str, session_id: str, error: Exception) -> None:
        """Count a failure; log it at most once a minute (:class:`~.connection.Throttled`), naming the
        session by the first 8 digits of its digest (its id is a secret)."""
        with self._lock:
            self.failures += 1
        self._warnings.warning(
            "failure",
            "event store: could not %s session %s… on Redis (%s)",
            what,
            session_digest(session_id)[:8],
            error,
        )
