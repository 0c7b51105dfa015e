"""Places tied to the process that holds them: counters and held sets on Redis that a dead worker lets go.

A count kept as one number (``INCR``/``DECR``) outlives a worker killed while it holds places
(SIGKILL, the OOM killer, a host that is gone): its releases never come, and the cap shrinks for
ever.  Here every place is written under the name of its holder, and a holder counts only while it
keeps saying it is alive:

=================================  ===============================================================
``ns:holders``                     each holder's token -> when it stops counting (sorted set,
                                   milliseconds on the scripts' clock)
``ns:count:<key>``                 a counter (:class:`RedisCounters`): hash, token -> places held
``ns:held:<key>``                  a held set (:class:`RedisHeldSets`): hash, ``<token> <member>`` -> 1
=================================  ===============================================================

A holder is one store object in one process: its token is random, and a forked child makes its
own (and holds nothing of its parent's: gunicorn ``--preload``).  While it holds anything, a daemon
thread beats every ``beat_every`` seconds (a third of ``holder_ttl``, 30 s by default): one script
that moves its time in ``ns:holders`` on and writes its whole holding again, so what another
process dropped while this one seemed dead (Redis unreachable for longer than the TTL) comes back.
Every script that counts skips the places of holders whose time has passed, and deletes them: a
worker that died frees its places ``holder_ttl`` seconds after its last beat, at the next operation
on that key.  :meth:`Holder.close` gives them back at once (a worker exiting cleanly).  Keys expire
``3 * holder_ttl`` after the last write (``PEXPIRE``): a deployment that is gone leaves nothing.

Time is Redis's (``TIME``), or an injected ``clock``'s (tests move it); the keys' expiry is always
Redis's.  Faults: see each class.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Callable, Collection, Mapping
from typing import Any

from ..stores import Clock
from .connection import Connection, fresh_after_fork, reply_text
from .stores import FAULTS, NOW, RedisStore, Script

log = logging.getLogger(__name__)

#: Seconds a holder's places outlive its last heartbeat (it beats every third of this).
HOLDER_TTL = 30.0

#: The prelude of every holder script: the time (milliseconds), and ``alive(token)``, True for the
#: caller (``ARGV[2]``: it is asking, so it is alive) and for a holder whose time has not passed.
LIVE = (
    NOW
    + """
local now = clock(ARGV[1], 1000)
local me = ARGV[2]
local known = {}
local function alive(holders, token)
  if token == me then return true end
  local ok = known[token]
  if ok == nil then
    local ends = redis.call('ZSCORE', holders, token)
    ok = ends ~= false and tonumber(ends) > now
    known[token] = ok
  end
  return ok
end
"""
)

#: ``ns:holders`` says the caller is alive ``ARGV[3]`` ms more; the key and ``keys`` live ``ARGV[4]`` ms.
STAY = """
local function stay(holders, keys)
  redis.call('ZADD', holders, now + tonumber(ARGV[3]), me)
  redis.call('PEXPIRE', holders, ARGV[4])
  for _, key in ipairs(keys) do redis.call('PEXPIRE', key, ARGV[4]) end
end
"""

#: The places of the live holders of counter ``KEYS[1]`` (the dead ones' deleted).
COUNTED = (
    LIVE
    + STAY
    + """
local function counted()
  local held, total = redis.call('HGETALL', KEYS[1]), 0
  for i = 1, #held, 2 do
    if alive(KEYS[2], held[i]) then total = total + tonumber(held[i + 1])
    else redis.call('HDEL', KEYS[1], held[i]) end
  end
  return total
end
"""
)

#: KEYS counter, holders; ARGV now, token, ttl, keep, limit: one place more unless at the limit.
COUNT_ACQUIRE = Script(
    COUNTED
    + """
local limit = tonumber(ARGV[5])
if limit and counted() >= limit then return 0 end
redis.call('HINCRBY', KEYS[1], me, 1)
stay(KEYS[2], {KEYS[1]})
return 1
"""
)
#: KEYS counter, holders; ARGV now, token, ttl, keep: one place of the caller's less; the places left.
COUNT_RELEASE = Script(
    COUNTED
    + """
local left = tonumber(redis.call('HGET', KEYS[1], me) or '0') - 1
if left > 0 then redis.call('HSET', KEYS[1], me, left) else redis.call('HDEL', KEYS[1], me) end
return counted()
"""
)
#: KEYS counter, holders; ARGV now, token, ttl, keep.
COUNT_READ = Script(COUNTED + "return counted()")
#: KEYS holders, counter...; ARGV now, token, ttl, keep, then each counter's places (0: none).
COUNT_BEAT = Script(
    LIVE
    + STAY
    + """
local kept = {}
for i = 2, #KEYS do
  local n = tonumber(ARGV[3 + i])
  if n > 0 then redis.call('HSET', KEYS[i], me, n); kept[#kept + 1] = KEYS[i]
  else redis.call('HDEL', KEYS[i], me) end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if #kept == 0 then redis.call('ZREM', KEYS[1], me) else stay(KEYS[1], kept) end
return 1
"""
)

#: The distinct members of the live holders of held set ``KEYS[1]`` (the dead ones' fields deleted).
MEMBERS = (
    LIVE
    + STAY
    + """
local function members()
  local have, distinct = {}, 0
  for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
    local cut = string.find(field, ' ', 1, true)
    if alive(KEYS[2], string.sub(field, 1, cut - 1)) then
      local member = string.sub(field, cut + 1)
      if not have[member] then have[member] = true; distinct = distinct + 1 end
    else redis.call('HDEL', KEYS[1], field) end
  end
  return have, distinct
end
"""
)

#: KEYS set, holders; ARGV now, token, ttl, keep, limit, members...: hold them too unless the set's
#: distinct members would then be over the limit; ``{1 or 0, distinct members held}``.
HOLD = Script(
    MEMBERS
    + """
local limit = tonumber(ARGV[5])
local have, distinct = members()
local more = 0
for i = 6, #ARGV do
  if not have[ARGV[i]] then have[ARGV[i]] = true; more = more + 1 end
end
if limit and distinct + more > limit then return {0, distinct} end
for i = 6, #ARGV do redis.call('HSET', KEYS[1], me .. ' ' .. ARGV[i], 1) end
stay(KEYS[2], {KEYS[1]})
return {1, distinct + more}
"""
)
#: KEYS set, holders; ARGV now, token, ttl, keep, members...: the caller holds them no longer.
LET_GO = Script(
    LIVE
    + """
for i = 5, #ARGV do redis.call('HDEL', KEYS[1], me .. ' ' .. ARGV[i]) end
return 1
"""
)
#: KEYS set, holders; ARGV now, token, ttl, keep: the distinct members of the live holders.
MEMBERS_READ = Script(
    MEMBERS
    + """
local have, list = members(), {}
for member in pairs(have) do list[#list + 1] = member end
return list
"""
)
#: KEYS holders, set...; ARGV now, token, ttl, keep, then per set: n, its n members.  The caller
#: holds exactly these now (its other fields in these sets deleted).
HELD_BEAT = Script(
    LIVE
    + STAY
    + """
local at, kept = 5, {}
for i = 2, #KEYS do
  local mine = {}
  local n = tonumber(ARGV[at])
  for j = 1, n do mine[me .. ' ' .. ARGV[at + j]] = true end
  at = at + n + 1
  for _, field in ipairs(redis.call('HKEYS', KEYS[i])) do
    if string.sub(field, 1, #me + 1) == me .. ' ' and not mine[field] then redis.call('HDEL', KEYS[i], field) end
  end
  for field in pairs(mine) do redis.call('HSET', KEYS[i], field, 1) end
  if n > 0 then kept[#kept + 1] = KEYS[i] end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if #kept == 0 then redis.call('ZREM', KEYS[1], me) else stay(KEYS[1], kept) end
return 1
"""
)


class Holder(RedisStore):
    """What a store whose places belong to this process shares: its token, its lock, its
    heartbeat (see the module docstring).  ``holder_ttl``: seconds its places outlive its last
    beat; ``beat_every``: seconds between beats (default a third of ``holder_ttl``); ``clock``: see
    :class:`~.stores.RedisStore`.  ``beats`` counts the beats (and wakes :attr:`beaten`).

    A subclass keeps in ``_table`` what this process holds (key -> places or members), and writes a
    whole holding with :meth:`_write`.  A key changed here while Redis was unreachable is "unsaid":
    the next beat that reaches Redis writes it too, so nothing given back meanwhile stays taken."""

    kind = ""
    #: What a key holds when nothing is held (0 places, no members).
    nothing: Callable[[], Any] = int

    def __init__(
        self,
        connection: Connection,
        *,
        holder_ttl: float = HOLDER_TTL,
        beat_every: float | None = None,
        clock: Clock | None = None,
    ):
        if not holder_ttl > 0 or (beat_every is not None and not beat_every > 0):
            raise ValueError("holder_ttl and beat_every must be positive numbers of seconds")
        RedisStore.__init__(self, connection, clock)
        self.holder_ttl = holder_ttl
        self.beat_every = holder_ttl / 3 if beat_every is None else beat_every
        self.beats = 0
        self.closed = False
        self._fresh_process()
        fresh_after_fork(self._fresh_process)

    def _fresh_process(self) -> None:
        """This process's part: a token of its own, nothing held, no heartbeat yet (in a forked
        child too: the parent's places are the parent's)."""
        self.token = f"{os.getpid()}-{os.urandom(6).hex()}"
        self._lock = threading.RLock()
        #: Notified after each beat (tests wait on it, with a timeout).
        self.beaten = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._beater: threading.Thread | None = None
        # key -> what this process holds of it (never an empty entry)
        self._table: dict[str, Any] = {}
        self._unsaid: set[str] = set()  # keys whose Redis side may differ from the table (a fault)

    def _args(self, *more: Any) -> list:
        """ARGV of every holder script: the time, the token, the TTL and the keys' lifetime (ms), then
        ``more``."""
        ttl = max(1, math.ceil(self.holder_ttl * 1000))
        return [self.now(1000), self.token, ttl, 3 * ttl, *more]

    def _key(self, key: str) -> str:
        return self.connection.key(self.kind, key)

    def _run(self, script: Script, key: str, *more: Any) -> Any:
        """``script`` on ``key``: KEYS its own and the table of live holders, ARGV :meth:`_args`."""
        keys = [self._key(key), self.connection.key("holders")]
        return script(self.connection, keys, self._args(*more))

    def _hold(self, key: str, held: Any) -> None:
        """This process holds ``held`` of ``key`` now (holding the lock): nothing, and the key leaves
        the table; something, and the heartbeat runs."""
        if held:
            self._table[key] = held
            self._keep_beating()
        else:
            self._table.pop(key, None)

    def _unreachable(self, error: Exception, key: str, consequence: str) -> None:
        """A write of ``key`` failed: it is said again at the next beat."""
        self.fault(error, consequence)
        self._unsaid.add(key)
        self._keep_beating()

    def _keep_beating(self) -> None:
        """Something is held (or unsaid) now: make sure the heartbeat runs (holding the lock)."""
        if self._beater is None and not self.closed:
            self._beater = threading.Thread(
                target=self._beat_loop,
                args=(self._stop,),
                daemon=True,
                name=f"mcp_ref-{self.kind}-holder",
            )
            self._beater.start()

    def _beat_loop(self, stop: threading.Event) -> None:
        while not stop.wait(self.beat_every):
            try:
                self.beat()
            except Exception:  # a bug, not Redis (beat copes with that): the places must still beat
                log.exception("%s holder: a heartbeat failed", self.kind)
            with self._lock:
                self.beats += 1
                self.beaten.notify_all()
                if stop.is_set() or not (self._table or self._unsaid):
                    if self._beater is threading.current_thread():
                        self._beater = None
                    return

    def beat(self) -> None:
        """One heartbeat now: this process is alive, and holds what its table says."""
        with self._lock:
            self._say(self._table)

    def _say(self, table: Mapping[str, Any]) -> None:
        """Write ``table`` as this process's whole holding of its keys and of the unsaid ones (holding
        the lock); Redis unreachable: a warning, and the next beat tries again."""
        whole = {key: self.nothing() for key in self._unsaid}
        whole.update(table)
        try:
            self._write(whole)
        except FAULTS as error:
            self.fault(error, "this process's places are said again when it is back")
            self._keep_beating()
            return
        self._unsaid.clear()

    def _write(self, whole: Mapping[str, Any]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Give every place back now, and stop the heartbeat (a worker exiting; best effort)."""
        with self._lock:
            self.closed = True
            self._stop.set()
            # every key held is said as holding nothing
            self._unsaid.update(self._table)
            self._table = {}
            if self._unsaid:
                self._say({})


class RedisCounters(Holder):
    """Bounded counts (:class:`~mcp_ref.state.stores.Counters`) shared by every process, each
    place held by the process that took it (see the module docstring): ``acquire`` is one script
    (one more only below the limit, counting the live holders' places), ``release`` one script
    (one of this process's places less, never below 0).

    Redis unreachable: ``acquire`` refuses (False: the caller answers as for a full count),
    ``release`` gives the place back here and to Redis at the next beat that reaches it, ``count``
    says 0; each with a warning at most once a minute.
    """

    kind = "count"
    what = "counters"
    nothing = int

    def acquire(self, key: str, limit: int | None) -> bool:
        """See :meth:`mcp_ref.state.stores.Counters.acquire`."""
        with self._lock:
            try:
                added = bool(self._run(COUNT_ACQUIRE, key, "" if limit is None else limit))
            except FAULTS as error:
                self.fault(error, "new places are refused until it is back")
                return False
            if added:
                self._hold(key, self._table.get(key, 0) + 1)
            return added

    def release(self, key: str) -> int:
        """See :meth:`mcp_ref.state.stores.Counters.release`: one of this process's places."""
        with self._lock:
            self._hold(key, max(0, self._table.get(key, 0) - 1))
            try:
                return int(self._run(COUNT_RELEASE, key))
            except FAULTS as error:
                self._unreachable(error, key, "a place given back reaches it when it is back")
                return 0

    def count(self, key: str) -> int:
        """See :meth:`mcp_ref.state.stores.Counters.count` (the live holders' places)."""
        try:
            return int(self._run(COUNT_READ, key))
        except FAULTS as error:
            self.fault(error, "counts read as 0")
            return 0

    def _write(self, whole: Mapping[str, Any]) -> None:
        COUNT_BEAT(
            self.connection,
            [self.connection.key("holders"), *map(self._key, whole)],
            self._args(*whole.values()),
        )


class RedisHeldSets(Holder):
    """Held sets (:class:`~mcp_ref.state.stores.HeldSets`) shared by every process: a member is held
    by each process that holds it, and counts once while any live one does.  ``hold`` is one script
    (check the distinct members of the live holders and add, atomically).

    Set :attr:`on_beat` to have the heartbeat say the process's whole holding from the truth instead
    of from this object's table (the server does: a connection that ended without a word lets go
    of its resources at the next beat; :meth:`hold_only`).

    Redis unreachable: each process counts only its own holding meanwhile (``hold`` checks the
    limit against this object's table), with a warning at most once a minute; the next beat that
    reaches Redis says the table again.  ``members`` then answers this process's own.
    """

    kind = "held"
    what = "held sets"
    nothing = set
    #: Called by each heartbeat instead of saying the table again (it calls :meth:`hold_only`).
    on_beat: Callable[[], None] | None = None

    def hold(self, key: str, members: Collection[str], limit: int | None) -> tuple[bool, int]:
        """See :meth:`mcp_ref.state.stores.HeldSets.hold`."""
        members = set(members)
        with self._lock:
            mine = self._table.get(key, set())
            try:
                verdict = self._run(HOLD, key, "" if limit is None else limit, *sorted(members))
                added, distinct = bool(verdict[0]), int(verdict[1])
            except FAULTS as error:
                self._unreachable(
                    error, key, "held sets are counted in each process until it is back"
                )
                added = limit is None or len(mine | members) <= limit
                distinct = len(mine | members) if added else len(mine)
            if added:
                self._hold(key, mine | members)
            return added, distinct

    def release(self, key: str, members: Collection[str]) -> None:
        """See :meth:`mcp_ref.state.stores.HeldSets.release`."""
        with self._lock:
            self._hold(key, self._table.get(key, set()) - set(members))
            try:
                self._run(LET_GO, key, *sorted(members))
            except FAULTS as error:
                self._unreachable(error, key, "what is let go reaches it when it is back")

    def members(self, key: str) -> set[str]:
        """See :meth:`mcp_ref.state.stores.HeldSets.members`."""
        try:
            return {reply_text(m) for m in self._run(MEMBERS_READ, key)}
        except FAULTS as error:
            self.fault(error, "only this process's own are known")
            with self._lock:
                return set(self._table.get(key, ()))

    def hold_only(self, table: Mapping[str, Collection[str]]) -> None:
        """See :meth:`mcp_ref.state.stores.HeldSets.hold_only`."""
        with self._lock:
            new = {key: set(members) for key, members in table.items() if members}
            # the keys no longer held are said as holding nothing (at the next beat too, if need be)
            self._unsaid.update(self._table.keys() - new.keys())
            self._table = new
            self._say(new)
            if new:
                self._keep_beating()

    def beat(self) -> None:
        """One heartbeat: :attr:`on_beat` when set, else the table said again."""
        on_beat = self.on_beat
        if on_beat is None:
            Holder.beat(self)
        else:
            on_beat()

    def _write(self, whole: Mapping[str, Any]) -> None:
        args = self._args()
        for members in whole.values():
            args += [len(members), *sorted(members)]
        HELD_BEAT(self.connection, [self.connection.key("holders"), *map(self._key, whole)], args)
