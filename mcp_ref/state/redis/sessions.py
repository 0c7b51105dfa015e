"""The HTTP transport's session table on Redis: one table for every worker of a deployment.

:class:`RedisSessionTable` implements :class:`mcp_ref.http.server.sessions.SessionTable`
(structurally: nothing here imports the transport) with the in-memory table's semantics
(:class:`~mcp_ref.http.server.sessions.MemorySessionTable`): a session made by one worker
is found, touched, updated and ended by any other, and ``max_sessions`` counts the sessions of the
whole deployment (one global cap).  Each operation is one Lua script (or one command), so it is
atomic across the workers; time is Redis's (``TIME``), so the workers' clocks need not agree (a test
may inject a ``clock``: then the scripts are given its time).

basic/transports §Session Management (2025-03-26 to 2025-11-25): "The server MAY terminate the
session at any time, after which it MUST respond to requests containing that session ID with HTTP
404 Not Found": a session this table no longer holds is gone for every worker at once.

Keys (``ns`` is the URL's namespace):

==========================  ===================================================================
``ns:session:<digest>``     the record: hash ``id`` (the session id), ``created``, ``last_seen``
                            (seconds), ``established`` (``0``/``1``), ``generation`` (how many
                            ``update`` calls changed it; absent: none), and one field ``s:<name>``
                            per key of its ``state`` (the value as JSON text, so ``update`` merges
                            by setting fields, and removes a key by deleting its field)
``ns:sessions``             every session's digest by its deadline (sorted set): past it, it has
                            expired
``ns:sessions:new``         the digests of the sessions not yet established, by creation (sorted
                            set): the eviction candidates, oldest first (ties: by digest)
==========================  ===================================================================

``<digest>`` is :func:`session_digest` of the session id: without authorization the id is the
session's only credential (2025-11-25 basic/security_best_practices §Session Hijacking), so no key,
no sorted-set member and no script argument but ``add``'s (which writes the record's ``id`` field)
carries it: a key listing shows none, and ``MONITOR`` or ``SLOWLOG`` only in this table's ``add``.
``expired`` and ``make_room`` read the ids they return from the records' ``id`` fields.

A session's deadline is ``last_seen + idle_timeout`` once established, ``last_seen +
min(idle_timeout, handshake_timeout)`` before.  ``make_room`` counts the sessions not past their
deadline (an expired one takes no room) and removes none of the expired: those are left for
:meth:`RedisSessionTable.expired`, which removes and returns them in one script, so exactly one
caller of the deployment hears of each (or ``touch``, which removes an expired session it is
asked about and answers False).  A session whose record is already gone when ``expired`` meets it
(its safety-net expiry passed, see below, with no sweep meanwhile) is dropped without its id: a
worker still holding it finds it gone with :meth:`RedisSessionTable.alive`.

The table cannot know that a client is listening on a session's stream (the memory table's
caller keeps such a session): a worker holding such a stream keeps its session by touching it.
Safety net: every key gets a ``PEXPIRE`` of twice the
session's timeout plus :data:`MARGIN` past its last touch (the sorted sets: of twice the idle
timeout plus :data:`MARGIN` past the last add or touch), so a deployment that died leaves nothing
behind for ever.  One Redis (or Valkey) primary: the scripts compute keys (not Redis Cluster).

Read-your-writes across workers: a worker serving a session from its replica must see a change
another worker saved before answering (``logging/setLevel``: the level applies to every request
sent after its answer).  ``touch``, one script every request of a shared session runs anyway, also
returns the record's ``generation`` (:meth:`RedisSessionTable.touch_generation`), so a worker reads
the record again only when it changed, never on every request; ``get`` returns it with the record.

Session ids are secrets: nothing here logs one (the warnings name no session).

Faults (Redis unreachable; a warning at most once a minute):

- ``make_room``, ``add``, ``get`` and ``len()`` raise :class:`SessionTableUnavailable` (a builtin
  :class:`ConnectionError`): the transport answers 503 "Service Unavailable" with Retry-After.
  ``get`` answers no None it does not know: a session is not "gone" (404) because Redis is down.
- ``touch`` records nothing and, as ``update``, returns True: the session is not known to be gone,
  and a worker that holds it live goes on serving it (a change of its state is lost, and said so).
  ``is_expired`` returns False and ``expired`` returns ``[]`` (the sessions that expire meanwhile
  are reported once Redis is back); ``alive`` returns every id it is given (nothing is ended
  during an outage); ``remove`` returns False (the record is left to expire: ``expired`` reports
  it later).
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import TYPE_CHECKING, Any

from .connection import Connection, json_text, reply_text
from .stores import FAULTS, NOW, RedisStore, Script

if TYPE_CHECKING:
    from ...http.server.sessions import SessionRecord

#: Seconds added to the safety-net expiry of every key (see the module docstring).
MARGIN = 60.0
#: Expired sessions one :meth:`RedisSessionTable.expired` call removes and returns at most (bounded
#: work per call; the rest are returned by the next call).
EXPIRED_LIMIT = 1000


def session_digest(session_id: str) -> str:
    """What names a session in Redis keys, sorted sets and bus channels instead of its id: the first
    32 hex digits (128 bits) of its SHA-256.  Without authorization the id is the session's only
    credential (2025-11-25 basic/security_best_practices §Session Hijacking); a digest names the
    session without giving it away (to a key listing, ``MONITOR``, ``PUBSUB CHANNELS``, a log)."""
    return hashlib.sha256(session_id.encode()).hexdigest()[:32]


#: One script, one operation: ``ARGV`` is ``op, prefix, session digest, now ('' for Redis's), idle
#: timeout, handshake timeout``, then the operation's own.
SESSIONS = Script(
    NOW
    + """
local op, P, id = ARGV[1], ARGV[2], ARGV[3]  -- id: the session's digest (session_digest)
local now = clock(ARGV[4], 1)
local idle, handshake = tonumber(ARGV[5]), tonumber(ARGV[6])
local ALL, NEW, REC = P .. 'sessions', P .. 'sessions:new', P .. 'session:' .. id
local MARGIN = @@MARGIN@@

local function fmt(x) return string.format('%.17g', x) end
local function timeout(established)
  if established then return idle end
  return math.min(idle, handshake)
end
-- the safety net: the record outlives its deadline by its timeout and MARGIN, the sets their longest
local function keep(established)
  redis.call('PEXPIRE', REC, math.ceil((2 * timeout(established) + MARGIN) * 1000))
  local sets = math.ceil((2 * math.max(idle, handshake) + MARGIN) * 1000)
  redis.call('PEXPIRE', ALL, sets)
  redis.call('PEXPIRE', NEW, sets)
end
local function forget(sid)
  local gone = redis.call('ZREM', ALL, sid)
  redis.call('ZREM', NEW, sid)
  return gone + redis.call('DEL', P .. 'session:' .. sid)
end
-- the session id a digest stands for (false: its record is gone), and the session forgotten
local function take(sid)
  local session_id = redis.call('HGET', P .. 'session:' .. sid, 'id')
  forget(sid)
  return session_id
end

if op == 'make_room' then
  local limit = tonumber(ARGV[7])
  -- with a digest: the place is held for it (a record with no state, in ALL but not in NEW, so
  -- counted and never evicted) until 'add' replaces it, 'remove' drops it, or its deadline passes
  local function hold(answer)
    if id ~= '' then
      redis.call('DEL', REC)
      redis.call('HSET', REC, 'created', fmt(now), 'last_seen', fmt(now), 'established', '0')
      redis.call('ZADD', ALL, fmt(now + timeout(false)), id)
      keep(false)
    end
    return answer
  end
  if redis.call('ZCOUNT', ALL, fmt(now), '+inf') < limit then return hold({1}) end
  -- full: the oldest session that never came back after initialize, and has not expired, goes
  for _, sid in ipairs(redis.call('ZRANGE', NEW, 0, -1)) do
    local deadline = redis.call('ZSCORE', ALL, sid)
    if deadline and tonumber(deadline) >= now then
      local victim = take(sid)
      if victim then return hold({1, victim}) end
      return hold({1})
    end
  end
  return {0}
elseif op == 'add' then
  -- the first write grows memory (ZADD), so that at maxmemory Redis refuses the script before it
  -- writes anything; a first DEL would let every later write through ("cannot stop in the middle")
  redis.call('ZADD', ALL, fmt(now + timeout(false)), id)
  redis.call('DEL', REC)
  redis.call('HSET', REC, 'created', fmt(now), 'last_seen', fmt(now), 'established', '0')
  for i = 7, #ARGV, 2 do redis.call('HSET', REC, ARGV[i], ARGV[i + 1]) end
  redis.call('ZADD', NEW, fmt(now), id)
  keep(false)
  return 1
elseif op == 'touch' then  -- 0: gone; else 1 + the record's generation
  local held = redis.call('HMGET', REC, 'established', 'generation')
  local was = held[1]
  if not was then return 0 end
  local deadline = redis.call('ZSCORE', ALL, id)
  if not deadline or tonumber(deadline) < now then  -- expired: gone for every worker, from now on
    forget(id)
    return 0
  end
  local established = was == '1' or ARGV[7] == '1'
  redis.call('HSET', REC, 'last_seen', fmt(now), 'established', established and '1' or '0')
  redis.call('ZADD', ALL, fmt(now + timeout(established)), id)
  if established then redis.call('ZREM', NEW, id) end
  keep(established)
  return 1 + (tonumber(held[2]) or 0)
elseif op == 'update' then
  if redis.call('EXISTS', REC) == 0 then return 0 end
  for i = 7, #ARGV, 2 do
    if ARGV[i + 1] == 'null' then  -- a key whose value is None is removed
      redis.call('HDEL', REC, ARGV[i])
    else
      redis.call('HSET', REC, ARGV[i], ARGV[i + 1])
    end
  end
  redis.call('HINCRBY', REC, 'generation', 1)  -- every worker's next touch sees that it changed
  return 1
elseif op == 'is_expired' then
  local deadline = redis.call('ZSCORE', ALL, id)
  if deadline and tonumber(deadline) < now then return 1 end
  return 0
elseif op == 'expired' then
  local gone, ids = redis.call('ZRANGEBYSCORE', ALL, '-inf', '(' .. fmt(now), 'LIMIT', 0, tonumber(ARGV[7])), {}
  for _, sid in ipairs(gone) do
    local session_id = take(sid)
    if session_id then ids[#ids + 1] = session_id end
  end
  return ids
elseif op == 'remove' then
  if forget(id) > 0 then return 1 end
  return 0
end
return redis.error_reply('unknown operation ' .. op)
""".replace("@@MARGIN@@", repr(MARGIN))
)


class SessionTableUnavailable(ConnectionError):
    """The session table's Redis cannot be reached, or refuses writes (out of memory): the
    transport answers 503 with Retry-After
    (a builtin :class:`ConnectionError`, so the transport needs nothing of this module)."""


class RedisSessionTable(RedisStore):
    """A :class:`~mcp_ref.http.server.sessions.SessionTable` on Redis, shared by every
    process on ``connection`` (see the module docstring): at most ``max_sessions`` in the whole
    deployment; a session idle for ``idle_timeout`` seconds (``handshake_timeout`` until it is
    established) expires.  ``failures`` counts the Redis calls that failed."""

    shared = True
    what = "session table"

    def __init__(
        self,
        connection: Connection,
        *,
        max_sessions: int = 1000,
        idle_timeout: float = 30 * 60,
        handshake_timeout: float = 30.0,
        clock: Any = None,
    ):
        if max_sessions < 1 or idle_timeout <= 0 or handshake_timeout <= 0:
            raise ValueError("max_sessions must be at least 1, and the timeouts positive")
        RedisStore.__init__(self, connection, clock)
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self.handshake_timeout = handshake_timeout
        self.prefix = connection.key("")
        self.failures = 0
        self._lock = threading.Lock()

    def _run(self, op: str, session_id: str, *more: Any) -> Any:
        """One operation of :data:`SESSIONS` on the session's digest ('' for none: the operations on
        the whole table); a fault raises :class:`SessionTableUnavailable`."""
        try:
            return SESSIONS(
                self.connection,
                [],
                [
                    op,
                    self.prefix,
                    session_id and session_digest(session_id),
                    self.now(1),
                    repr(float(self.idle_timeout)),
                    repr(float(self.handshake_timeout)),
                    *more,
                ],
            )
        except FAULTS as error:
            raise self._unavailable(
                error, _CONSEQUENCE.get(op, "new sessions are answered 503 until it is back")
            ) from error

    def _try(self, op: str, session_id: str, *more: Any) -> Any:
        """:meth:`_run`, None on a fault (already logged): for the operations that degrade."""
        try:
            return self._run(op, session_id, *more)
        except SessionTableUnavailable:
            return None

    def make_room(self, session_id: str | None = None) -> tuple[bool, str | None]:
        """See ``SessionTable.make_room``: one script counts the deployment's sessions not past their
        deadline (the places held included) and, when they are ``max_sessions``, removes the oldest
        one not yet established; then, with ``session_id``, holds the place for it (a record with no
        state, not an eviction candidate, that ``add`` replaces)."""
        answer = self._run("make_room", session_id or "", self.max_sessions)
        return bool(int(answer[0])), (reply_text(answer[1]) if len(answer) > 1 else None)

    def add(self, session_id: str, state: dict | None = None) -> None:
        """See ``SessionTable.add`` (a record of that id already there is replaced; the record keeps
        the id, in its ``id`` field, for ``expired`` and ``make_room`` to return)."""
        self._run("add", session_id, "id", session_id, *_fields(state or {}))

    def update(self, session_id: str, state: dict) -> bool:
        """See ``SessionTable.update``: the keys of ``state`` set in the record, and those whose value
        is None deleted from it (``HDEL``), and its ``generation`` counted, in one script."""
        done = self._try("update", session_id, *_fields(state))
        return True if done is None else bool(int(done))

    def get(self, session_id: str) -> SessionRecord | None:
        """See ``SessionTable.get`` (a ``SessionRecord``, with its ``generation`` once updated; one ``HGETALL``)."""
        try:
            held = self.connection.client.hgetall(self.record_key(session_id))
        except FAULTS as error:
            raise self._unavailable(
                error, "requests naming a session are answered 503 until it is back"
            ) from error
        fields = {reply_text(name): reply_text(value) for name, value in held.items()}
        if "created" not in fields:
            return None
        state = {
            name[2:]: json.loads(value) for name, value in fields.items() if name.startswith("s:")
        }
        record: SessionRecord = {
            "created": float(fields["created"]),
            "last_seen": float(fields["last_seen"]),
            "established": fields.get("established") == "1",
            "state": state,
        }
        if "generation" in fields:  # absent: never updated (0)
            record["generation"] = int(fields["generation"])
        return record

    def alive(self, session_ids: list[str]) -> set[str]:
        """See ``SessionTable.alive``: one pipelined ``EXISTS`` per record, one round trip however
        many.  On a fault every id given (nothing is ended while Redis cannot say; logged)."""
        if not session_ids:
            return set()
        try:
            with self.connection.client.pipeline(transaction=False) as pipe:
                for session_id in session_ids:
                    pipe.exists(self.record_key(session_id))
                held = pipe.execute()
        except FAULTS as error:
            self._unavailable(error, "no session is found gone until it is back")
            return set(session_ids)
        return {
            session_id for session_id, exists in zip(session_ids, held, strict=True) if int(exists)
        }

    def record_key(self, session_id: str) -> str:
        """The Redis key of a session's record (named by :func:`session_digest`, never the id)."""
        return self.prefix + "session:" + session_digest(session_id)

    def touch(self, session_id: str, *, established: bool = True) -> bool:
        """See ``SessionTable.touch``: last seen now; ``established`` moves the session to the idle
        timeout and out of the eviction candidates (one script).  False when there is no such
        session, or it has expired: then it is removed in the same script (no worker serves it
        again; ``expired`` will not return it).  True on a fault: not known to be gone."""
        return self.touch_generation(session_id, established=established)[0]

    def touch_generation(
        self, session_id: str, *, established: bool = True
    ) -> tuple[bool, int | None]:
        """:meth:`touch`, and the record's ``generation`` (how many times ``update`` changed it), in
        the same script: a worker whose replica took up an older one reads the record again before
        serving the request (``SharedSessions.touch``).  ``(False, None)``: gone; ``(True, None)``
        on a fault (not known to be gone, nor whether it changed)."""
        done = self._try("touch", session_id, "1" if established else "0")
        if done is None:
            return True, None
        return (False, None) if int(done) == 0 else (True, int(done) - 1)

    def is_expired(self, session_id: str) -> bool:
        """See ``SessionTable.is_expired`` (a session not in the table is not expired: it is gone)."""
        return bool(self._try("is_expired", session_id))

    def expired(self) -> list[str]:
        """See ``SessionTable.expired``: removes the expired sessions and returns their ids, in one
        script, so each is returned to one caller only (at most :data:`EXPIRED_LIMIT` a call)."""
        gone = self._try("expired", "", EXPIRED_LIMIT)
        return [] if gone is None else [reply_text(session_id) for session_id in gone]

    def remove(self, session_id: str) -> bool:
        """See ``SessionTable.remove``."""
        return bool(self._try("remove", session_id))

    def __len__(self) -> int:
        """How many sessions the deployment's table holds (expired ones not yet removed included)."""
        try:
            return int(self.connection.client.zcard(self.prefix + "sessions"))
        except FAULTS as error:
            raise self._unavailable(
                error, "the session count is unknown until it is back"
            ) from error

    def _unavailable(self, error: Exception, consequence: str) -> SessionTableUnavailable:
        """Count and log (at most once a minute) a fault; the exception to raise for it."""
        with self._lock:
            self.failures += 1
        self.fault(error, consequence)
        return SessionTableUnavailable("Service Unavailable: session store unreachable or full")

    def close(self) -> None:
        """Nothing of its own to release (the connection is the state's)."""


#: What a failed operation does instead (the warning's end).
_CONSEQUENCE = {
    "touch": "a session's last use is not recorded until it is back",
    "update": "a session's change is lost (it is still served)",
    "is_expired": "no session expires until it is back",
    "expired": "no session expires until it is back",
    "remove": "an ended session is left to expire",
}


def _fields(state: dict) -> list[str]:
    """``state`` as the record's hash fields: ``s:<name>``, the value's JSON text."""
    return [part for name, value in state.items() for part in ("s:" + str(name), json_text(value))]
