"""The state seams (:mod:`mcp_ref.state.stores`) on Redis: buckets and task records (counters and
held sets, whose places belong to the process holding them, are in :mod:`.holders`).

Each operation is one Lua script (``EVALSHA``; ``EVAL`` when Redis answers ``NOSCRIPT``, as it does
after a restart), so it is atomic across every process of a deployment, and costs one round trip.
Time is Redis's own (``TIME``), so the workers' clocks need not agree; a test may inject a ``clock``
instead (then the scripts are given its time, and only the keys' expiry is Redis's).

Keys (``ns`` is the URL's namespace, :class:`~mcp_ref.state.redis.connection.Connection`):

=================================  ===============================================================
``ns:bucket:<key>``                a token bucket: hash ``tokens``, ``at``; expires once full again
``ns:task:<id>``                   a task record: hash, one field per record field, as JSON text
``ns:task:<id>:in`` / ``:out``     its ``inputRequests`` / ``inputResponses`` (key -> JSON text)
``ns:tasks``                       every record, by creation order (sorted set; ``ns:tasks:seq`` counts)
``ns:tasks:open:<caller digest>``  a caller's unfinished tasks (``max_tasks_per_principal``)
``ns:tasks:owner:<owner digest>``  an owner's records, by creation order (``tasks/list``'s pages)
``ns:tasks:done``                  finished records, by creation order (evicted oldest first)
``ns:tasks:expires``               records by the time they expire (swept by ``sweep``)
``ns:tasks:callers`` / ``:owners`` id -> caller / owner digest (so a record gone by expiry is still unindexed)
=================================  ===============================================================

A digest is :func:`~mcp_ref.state.stores.owner_digest` of the id: an owner or caller may be a
session id, a credential, which no key names.

Every key expires: a record and its parts with its TTL; the indexes (``ns:tasks`` and the others
above) :data:`INDEX_MARGIN_MS` after the last record they may name (the deployment's: the latest
expiry of any record; an owner's or a caller's: of its records), so a deployment that stopped
leaves nothing for ever.  A record created without a TTL never expires: while one lives, the
indexes that name it do not either (they are bounded by ``max_tasks``).

One Redis (or Valkey) primary: the task scripts touch keys they compute, which Redis Cluster does
not allow.  Faults (Redis down, restarting, loading, a replica after a failover): see each class.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any

try:
    import redis
except ImportError as missing:  # pragma: no cover - the extra is not installed
    raise ImportError(
        'shared state on Redis needs the redis extra, redis-py: pip install "redis[hiredis]>=5"'
    ) from missing

from ...errors import InternalError, InvalidParams, ServerBusy
from ..stores import (
    MAX_PAGE,
    TERMINAL,
    Clock,
    MemoryBuckets,
    cursor_position,
    iso_now,
    owner_digest,
    page_cursor,
)
from .connection import Connection, Throttled, json_text, reply_text

log = logging.getLogger(__name__)

#: Pauses (seconds) between the tries of a task's final write, and of the write that says its run
#: began (``started``), while Redis is unreachable (about 30 s in all): a task's start and outcome
#: are retried, not dropped; past them the write fails as any other would (a start that still cannot
#: be written is queued again by its worker, its lease kept: extensions/tasks_2026.py ``run_task``).
FINAL_WRITE_PAUSES = (0.1, 0.2, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0)

#: What a store treats as "Redis cannot serve now" (not a bug of a script: those raise as they are):
#: unreachable, timing out, read-only (a replica after a failover), or out of memory (at its
#: ``maxmemory`` under the ``noeviction`` policy, Redis refuses every write: "OOM command not
#: allowed"; reads still work, and writes again once memory is freed).
FAULTS: tuple[type[Exception], ...] = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.ReadOnlyError,
    redis.exceptions.OutOfMemoryError,
)
#: How Redis words a refused write at ``maxmemory``; before Redis 7 a script's refused write comes
#: back inside a script error ("Error running script ... -OOM command not allowed ..."), which
#: redis-py reads as a plain ResponseError.
OUT_OF_MEMORY = "OOM command not allowed"
#: Milliseconds a task index key (``ns:tasks``, ``:seq``, ``:expires``, ``:owners``, ``:callers``,
#: ``:done``, ``:owner:<digest>``, ``:open:<digest>``) outlives the last record it may name.
INDEX_MARGIN_MS = 60_000
#: Keys ``RedisBuckets.__len__`` looks at at most (SCAN: bounded work), and expired records one
#: script forgets at most (``sweep``, and ``create`` before it counts).
MAX_SCANNED = 100_000
SWEEP_LIMIT = 1000
#: What a task request that must write answers while Redis is out of memory (ServerBusy, -31000).
FULL = "Server busy: the task store is full (Redis reached its maxmemory); retry later"
#: What a task whose worker stopped renewing its lease reads as (see :meth:`RedisTaskRecords.renew_lease`).
LEASE_ERROR = {"code": -32603, "message": "the worker running the task stopped"}

#: The prelude of every script: Redis's time unless the caller gave one (effects replication, so a
#: script may write after reading TIME: the default from Redis 5 on, asked for on older ones).
NOW = """
if redis.replicate_commands then pcall(redis.replicate_commands) end
local function clock(given, scale)
  local now = tonumber(given)
  if now then return now end
  local t = redis.call('TIME')
  return (tonumber(t[1]) + tonumber(t[2]) / 1000000) * scale
end
"""


class Script:
    """One Lua script, run by ``EVALSHA``; when Redis no longer has it (``NOSCRIPT``: it restarted,
    or ``SCRIPT FLUSH``), by ``EVAL``, which also loads it again."""

    def __init__(self, source: str):
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()

    def __call__(self, connection: Connection, keys: list[str], args: list[Any]) -> Any:
        """Run it with ``keys`` and ``args`` on this process's client of ``connection``."""
        client = connection.client
        try:
            try:
                return client.evalsha(self.sha, len(keys), *keys, *args)
            except redis.exceptions.NoScriptError:
                return client.eval(self.source, len(keys), *keys, *args)
        except redis.exceptions.ResponseError as error:
            wrapped = not isinstance(error, redis.exceptions.OutOfMemoryError)
            if wrapped and OUT_OF_MEMORY in str(error):
                # a script's first write refused at maxmemory (Redis < 7 wraps it): nothing was
                # written (a script is refused at its first write only): a fault, not a bug
                raise redis.exceptions.OutOfMemoryError(str(error)) from error
            raise


class RedisStore:
    """What every store on Redis has: its :class:`~.connection.Connection`; a ``clock`` (monotonic
    seconds for whoever reads it; once a test sets it, the scripts use its time instead of Redis's);
    and how it copes with an unreachable Redis (:meth:`fault`)."""

    #: What the store is called in its warnings.
    what = ""

    def __init__(self, connection: Connection, clock: Clock | None = None):
        self.connection = connection
        self.injected = clock
        self.warnings = Throttled(log)

    @property
    def clock(self) -> Clock:
        """The injected clock, else ``time.monotonic`` (the scripts then use Redis's ``TIME``)."""
        return self.injected if self.injected is not None else time.monotonic

    @clock.setter
    def clock(self, clock: Clock) -> None:
        self.injected = clock

    def now(self, scale: float) -> str:
        """The time a script is given: the injected clock's (times ``scale``), else '' (Redis's)."""
        return "" if self.injected is None else repr(self.injected() * scale)

    def fault(self, error: Exception, consequence: str) -> None:
        """Note a fault: ``error`` happened, ``consequence`` is what the store does instead.  A
        warning at most every :data:`~.connection.WARN_EVERY` seconds, and the pool's idle
        connections dropped (after a restart each would fail once)."""
        # out of memory, the connection is fine: no writes until memory is freed
        if isinstance(error, redis.exceptions.OutOfMemoryError):
            self.warnings.warning(
                "full",
                "%s: Redis is out of memory (maxmemory reached, it refuses writes: %s); %s",
                self.what,
                error,
                consequence,
            )
            return
        try:
            self.connection.client.connection_pool.disconnect(inuse_connections=False)
        except Exception:  # best effort: the next command makes a new connection anyway
            pass
        self.warnings.warning(
            "fault", "%s: Redis is unreachable (%s); %s", self.what, error, consequence
        )


# -- rate-limit buckets ---------------------------------------------------------------------------

#: Take a token from each bucket in turn, in one call (a request under the server's limit and its
#: tool's): refill, test and take on Redis's clock, then PEXPIRE the bucket until it would be full
#: again.  KEYS the buckets, ARGV the time then ``count, seconds`` per bucket; stops at the first
#: refusal and answers ``"<index> <wait>"`` (index -1: every bucket gave a token).
TAKE_ALL = Script(
    NOW
    + """
local now = clock(ARGV[1], 1)
for i, key in ipairs(KEYS) do
  local count, seconds = tonumber(ARGV[2 * i]), tonumber(ARGV[2 * i + 1])
  local rate = count / seconds
  local held = redis.call('HMGET', key, 'tokens', 'at')
  local tokens = count
  if held[1] then
    tokens = math.min(count, tonumber(held[1]) + math.max(0, now - tonumber(held[2])) * rate)
  end
  local wait = 0
  if tokens >= 1 then tokens = tokens - 1 else wait = (1 - tokens) / rate end
  redis.call('HSET', key, 'tokens', string.format('%.17g', tokens), 'at', string.format('%.17g', now))
  redis.call('PEXPIRE', key, math.max(1, math.ceil((count - tokens) / rate * 1000)))
  if wait > 0 then return (i - 1) .. ' ' .. string.format('%.17g', wait) end
end
return '-1 0'
"""
)


class RedisBuckets(RedisStore):
    """Token buckets (:class:`~mcp_ref.state.stores.Buckets`) shared by every process: one script
    per ``take`` (refill, test and take in one step, on Redis's clock), the bucket one hash that
    expires once it would be full again (a full bucket is a new one), so Redis holds only the
    buckets in use; bounded by Redis's own ``maxmemory``.

    Redis unreachable: by default each process falls back to a bucket of its own (a
    :class:`~mcp_ref.state.stores.MemoryBuckets`, so the limit is counted per process meanwhile),
    with a warning at most once a minute; with ``fail_closed=True`` a request is refused with
    ServerBusy (-31000, "retry later": the limit is not known to be exceeded, it cannot be checked).
    """

    what = "rate limits"

    def __init__(
        self, connection: Connection, *, fail_closed: bool = False, clock: Clock | None = None
    ):
        RedisStore.__init__(self, connection, clock)
        self.fail_closed = fail_closed
        self.fallback = MemoryBuckets(clock=self.clock)

    def take(self, key: str, count: int, seconds: float) -> float:
        """See :meth:`mcp_ref.state.stores.Buckets.take` (:meth:`take_all` of one bucket)."""
        return self.take_all([(key, count, seconds)])[1]

    def take_all(self, items: Sequence[tuple[str, int, float]]) -> tuple[int, float]:
        """See :meth:`mcp_ref.state.stores.MemoryBuckets.take_all`: one script, one round trip."""
        if not items:
            return -1, 0.0
        args: list = [self.now(1)]
        for _key, count, seconds in items:
            args += [count, repr(float(seconds))]
        try:
            answer = reply_text(
                TAKE_ALL(
                    self.connection,
                    [self.connection.key("bucket", key) for key, _, _ in items],
                    args,
                )
            )
        except FAULTS as error:
            if self.fail_closed:
                self.fault(error, "requests under a rate limit are refused (fail_closed)")
                raise ServerBusy(
                    "Server busy: the rate limit cannot be checked now; retry later"
                ) from error
            self.fault(error, "rate limits are counted in each process until it is back")
            self.fallback.clock = self.clock
            return self.fallback.take_all(items)
        index, wait = answer.split()
        return int(index), float(wait)

    def __len__(self) -> int:
        """The buckets held (by SCAN, looking at :data:`MAX_SCANNED` keys at most; 0 when Redis is
        unreachable)."""
        pattern = _glob_escape(self.connection.key("bucket", "")) + "*"
        try:
            keys = self.connection.client.scan_iter(match=pattern, count=1000)
            return sum(1 for _key in itertools.islice(keys, MAX_SCANNED))
        except FAULTS as error:
            self.fault(error, "the buckets cannot be counted")
            return 0


def _glob_escape(text: str) -> str:
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


# -- task records ---------------------------------------------------------------------------------

RECORDS = Script(
    NOW
    + """
local op, P, iso, id = ARGV[1], ARGV[2], ARGV[4], ARGV[5]
local now = clock(ARGV[3], 1000)
local ALL, DONE, EXP, CALLERS = P .. 'tasks', P .. 'tasks:done', P .. 'tasks:expires', P .. 'tasks:callers'
local OWNERS, SEQ = P .. 'tasks:owners', P .. 'tasks:seq'
local TERMINAL = {['"completed"'] = true, ['"failed"'] = true, ['"cancelled"'] = true}
local RUNNING = {['"working"'] = true, ['"input_required"'] = true}
local R = P .. 'task:' .. id
local IN, OUT = R .. ':in', R .. ':out'

local function opens(caller) return P .. 'tasks:open:' .. caller end
local function owned(owner) return P .. 'tasks:owner:' .. owner end

-- every index key expires MARGIN after the last record it may name: the deployment's indexes
-- (ALL, DONE, EXP, CALLERS, OWNERS, SEQ) after the latest expiry of any record, while every record
-- has one (else they stay, bounded by max_tasks); an owner's or caller's (``k``, just written for a
-- record of ``ttl`` ms, nil: none) after the latest of its records
local MARGIN = @@MARGIN_MS@@
local function keep()
  local keys = {ALL, DONE, EXP, CALLERS, OWNERS, SEQ}
  if redis.call('ZCARD', ALL) > redis.call('ZCARD', EXP) then
    for _, k in ipairs(keys) do redis.call('PERSIST', k) end
    return
  end
  local last = redis.call('ZRANGE', EXP, -1, -1, 'WITHSCORES')[2]
  if not last then return end
  local ms = math.max(1, math.ceil(tonumber(last) - now)) + MARGIN
  for _, k in ipairs(keys) do redis.call('PEXPIRE', k, ms) end
end
local function keep_index(k, fresh, ttl)
  if not ttl then redis.call('PERSIST', k) return end
  local left = redis.call('PTTL', k)
  if fresh or (left > 0 and left < ttl + MARGIN) then redis.call('PEXPIRE', k, ttl + MARGIN) end
end

local function drop(t)
  local r = P .. 'task:' .. t
  local caller = redis.call('HGET', CALLERS, t)
  if caller then redis.call('ZREM', opens(caller), t) end
  local owner = redis.call('HGET', OWNERS, t)
  if owner then redis.call('ZREM', owned(owner), t) end
  redis.call('HDEL', CALLERS, t)
  redis.call('HDEL', OWNERS, t)
  redis.call('ZREM', ALL, t)
  redis.call('ZREM', DONE, t)
  redis.call('ZREM', EXP, t)
  return redis.call('DEL', r, r .. ':in', r .. ':out') > 0
end

local function sweep()
  local gone = redis.call('ZRANGEBYSCORE', EXP, '-inf', now, 'LIMIT', 0, @@SWEEP_LIMIT@@)
  for _, t in ipairs(gone) do drop(t) end
  return gone
end

-- after a change of status: a finished task leaves its caller's count and joins the evictable
local function indexed(t, was)
  local r = P .. 'task:' .. t
  if TERMINAL[redis.call('HGET', r, 'status')] and not TERMINAL[was] then
    local caller = redis.call('HGET', CALLERS, t)
    if caller then redis.call('ZREM', opens(caller), t) end
    redis.call('ZADD', DONE, redis.call('ZSCORE', ALL, t) or 0, t)
    redis.call('HDEL', r, '@lease')
    keep()  -- DONE may be new
  end
end

-- the record exists and has not expired; a running one whose lease ran out has failed.  Only an
-- id the index names is a task: another ("<id>:in") would name one of a task's own keys
local function live(t)
  local r = P .. 'task:' .. t
  if not redis.call('ZSCORE', ALL, t) then return false end
  local ends = redis.call('ZSCORE', EXP, t)
  if (ends and now >= tonumber(ends)) or redis.call('EXISTS', r) == 0 then
    drop(t)
    return false
  end
  local held = redis.call('HMGET', r, 'status', '@lease')
  if held[2] and RUNNING[held[1]] and now >= tonumber(held[2]) then
    redis.call('DEL', r .. ':in')
    redis.call('HSET', r, 'status', '"failed"', 'error', @@LEASE_ERROR@@, 'statusMessage', @@LEASE_MESSAGE@@,
               'lastUpdatedAt', iso)
    indexed(t, held[1])
  end
  return true
end

local function open(t)
  return live(t) and not TERMINAL[redis.call('HGET', P .. 'task:' .. t, 'status')]
end

-- the parts of a record live as long as the record
local function follow(k)
  local ms = redis.call('PTTL', R)
  if ms > 0 then redis.call('PEXPIRE', k, ms) end
end

local function settle()
  if redis.call('EXISTS', IN) == 0 and redis.call('HGET', R, 'status') == '"input_required"' then
    redis.call('HSET', R, 'status', '"working"', 'lastUpdatedAt', iso)
  end
end

local at = 6
local function list()
  local n, l = tonumber(ARGV[at]), {}
  for i = 1, n do l[i] = ARGV[at + i] end
  at = at + n + 1
  return l
end

local function hset(k, l)
  for i = 1, #l, 2 do redis.call('HSET', k, l[i], l[i + 1]) end
end

local function snapshot(t)
  local r = P .. 'task:' .. t
  return {redis.call('HGETALL', r), redis.call('HGETALL', r .. ':in'), redis.call('HGETALL', r .. ':out')}
end

if op == 'create' then
  local caller, cap, total, ttl, owner = ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]), ARGV[10]
  at = 11
  local fields, inputs, answers = list(), list(), list()
  -- the first write grows memory (INCR), so that at maxmemory Redis refuses the script before it
  -- writes anything (a first ZREM or HDEL would let every later write through); a refusal below
  -- leaves a gap in the sequence, which only orders the records
  local seq = redis.call('INCR', SEQ)
  sweep()
  if cap then
    for _, t in ipairs(redis.call('ZRANGE', opens(caller), 0, cap)) do live(t) end
    if redis.call('ZCARD', opens(caller)) >= cap then return 'caller_full' end
  end
  if redis.call('ZCARD', ALL) >= total then
    -- the caller's own oldest finished task, else the oldest finished one (TaskRecords.create)
    local done = redis.call('ZRANGE', DONE, 0, -1)
    if not done[1] then return 'full' end
    local oldest = done[1]
    for _, t in ipairs(done) do
      if redis.call('HGET', CALLERS, t) == caller then oldest = t break end
    end
    drop(oldest)
  end
  drop(id)
  hset(R, fields)
  hset(IN, inputs)
  hset(OUT, answers)
  redis.call('ZADD', ALL, seq, id)
  redis.call('HSET', CALLERS, id, caller)
  redis.call('HSET', OWNERS, id, owner)
  local fresh = redis.call('EXISTS', owned(owner)) == 0
  redis.call('ZADD', owned(owner), seq, id)
  keep_index(owned(owner), fresh, ttl)
  if TERMINAL[redis.call('HGET', R, 'status')] then
    redis.call('ZADD', DONE, seq, id)
  else
    fresh = redis.call('EXISTS', opens(caller)) == 0
    redis.call('ZADD', opens(caller), seq, id)
    keep_index(opens(caller), fresh, ttl)
  end
  if ttl then
    redis.call('ZADD', EXP, now + ttl, id)
    for _, k in ipairs({R, IN, OUT}) do redis.call('PEXPIRE', k, ttl) end
  end
  keep()
  return 'created'
elseif op == 'get' then
  if not live(id) then return nil end
  return snapshot(id)
elseif op == 'transition' then
  local replace, allowed = ARGV[6], {}
  at = 7
  for _ = 1, tonumber(ARGV[at]) do
    local name, m, values = ARGV[at + 1], tonumber(ARGV[at + 2]), {}
    for j = 1, m do values[ARGV[at + 2 + j]] = true end
    allowed[name] = values
    at = at + 2 + m
  end
  at = at + 1
  local fields, inputs, answers = list(), list(), list()
  if not open(id) then return nil end
  for name, values in pairs(allowed) do
    if not values[redis.call('HGET', R, name) or 'null'] then return nil end
  end
  local was = redis.call('HGET', R, 'status')
  hset(R, fields)
  if string.find(replace, 'i', 1, true) then redis.call('DEL', IN) hset(IN, inputs) follow(IN) end
  if string.find(replace, 'o', 1, true) then redis.call('DEL', OUT) hset(OUT, answers) follow(OUT) end
  indexed(id, was)
  return snapshot(id)
elseif op == 'put_inputs' then
  local inputs = list()
  if not open(id) then return 0 end
  hset(IN, inputs)
  follow(IN)
  redis.call('HSET', R, 'status', '"input_required"', 'lastUpdatedAt', iso)
  return 1
elseif op == 'withdraw_inputs' then
  local keys = list()
  if open(id) then
    for _, k in ipairs(keys) do redis.call('HDEL', IN, k) end
    settle()
  end
  return 0
elseif op == 'put_responses' then
  local answers, taken = list(), {}
  if not open(id) then return taken end
  for i = 1, #answers, 2 do
    if redis.call('HDEL', IN, answers[i]) == 1 then
      redis.call('HSET', OUT, answers[i], answers[i + 1])
      taken[#taken + 1] = answers[i]
    end
  end
  if #taken > 0 then
    follow(OUT)
    redis.call('HSET', R, 'lastUpdatedAt', iso)
    settle()
  end
  return taken
elseif op == 'take_responses' then
  local keys, got = list(), {}
  if not live(id) then return got end
  for _, k in ipairs(keys) do
    local answer = redis.call('HGET', OUT, k)
    if answer then
      redis.call('HDEL', OUT, k)
      got[#got + 1] = k
      got[#got + 1] = answer
    end
  end
  return got
elseif op == 'delete' then
  if redis.call('ZSCORE', ALL, id) and drop(id) then return 1 end
  return 0
elseif op == 'sweep' then
  return sweep()
elseif op == 'count' then
  if ARGV[6] == '' then return redis.call('ZCARD', ALL) end
  return redis.call('ZCARD', opens(ARGV[6]))
elseif op == 'list' then
  -- an owner's page: its index from just after the cursor's position, one more than the page (is
  -- there a next?); a record found gone on the way leaves the index; at most SWEEP_LIMIT of them a call
  local index, after, limit = owned(ARGV[6]), ARGV[7], tonumber(ARGV[8])  -- after: a score's text
  if tonumber(after) > tonumber(redis.call('GET', SEQ) or '0') then return 0 end
  sweep()
  local page, positions, gone = {''}, {}, 0
  while #positions <= limit and gone < @@SWEEP_LIMIT@@ do
    local batch = redis.call('ZRANGEBYSCORE', index, '(' .. after, '+inf', 'WITHSCORES', 'LIMIT', 0, limit + 1 - #positions)
    if #batch == 0 then break end
    for i = 1, #batch, 2 do
      after = batch[i + 1]
      if live(batch[i]) then
        positions[#positions + 1] = after
        if #positions <= limit then page[#page + 1] = snapshot(batch[i]) end
      else
        gone = gone + 1
      end
    end
  end
  if #positions > limit then page[1] = positions[limit]
  elseif gone >= @@SWEEP_LIMIT@@ then page[1] = after end
  return page
elseif op == 'renew_lease' then
  if not open(id) then return 0 end
  redis.call('HSET', R, '@lease', now + tonumber(ARGV[6]))
  return 1
end
return redis.error_reply('unknown operation ' .. op)
""".replace("@@SWEEP_LIMIT@@", str(SWEEP_LIMIT))
    .replace("@@MARGIN_MS@@", str(INDEX_MARGIN_MS))
    .replace("@@LEASE_ERROR@@", "[[" + json_text(LEASE_ERROR) + "]]")
    .replace("@@LEASE_MESSAGE@@", "[[" + json_text(LEASE_ERROR["message"]) + "]]")
)

#: The record fields kept in hashes of their own (one entry per key), not as one JSON text.
PARTS = ("inputRequests", "inputResponses")


def _flat(mapping: Mapping[str, Any]) -> list[Any]:
    """A mapping as a script's argument list: its length, then key, JSON text, key, JSON text..."""
    items = [part for key, value in mapping.items() for part in (key, json_text(value))]
    return [len(items), *items]


def _split(record: Mapping[str, Any]) -> list[Any]:
    """A record (or a change of one) as a script's three argument lists (:func:`_flat`): its own
    fields, then its :data:`PARTS` (each empty when absent)."""
    fields = {key: value for key, value in record.items() if key not in PARTS}
    asks, answers = record.get("inputRequests") or {}, record.get("inputResponses") or {}
    return [*_flat(fields), *_flat(asks), *_flat(answers)]


def _pairs(flat: list) -> dict[str, Any]:
    """A hash read by a script (key, JSON text, ...) as a dict of JSON values."""
    return {reply_text(flat[i]): json.loads(flat[i + 1]) for i in range(0, len(flat), 2)}


class RedisTaskRecords(RedisStore):
    """The tasks extension's records (:class:`~mcp_ref.state.stores.TaskRecords`) shared by every
    process: each operation one script, so ``create`` checks ``max_tasks_per_principal`` and
    ``max_tasks`` in the step that adds (full: the caller's oldest finished record is evicted, else the oldest finished one, else refused),
    and ``transition`` never changes a terminal record (SEP-2663 §Task Lifecycle).  A record is a
    hash of JSON texts (its asks and answers in hashes of their own, so no script re-encodes a
    handler's result); it expires with its TTL (``PEXPIRE``, and the index that ``sweep`` reads).

    A lease (:meth:`renew_lease`): a task whose worker renews it reads as ``failed`` once the lease
    runs out (the process running it stopped); a record never leased never fails so.

    Redis unreachable: every operation raises InternalError (-32603, "the task store is
    unreachable"), which ``tasks/get`` and the others answer; nothing is kept aside.  Redis out of
    memory (its ``maxmemory`` reached, ``noeviction``): an operation that writes raises ServerBusy
    (-31000, :data:`FULL`: retry later; a task is not created, a change not made); reads answer as
    usual.  A task's final write, and the one that starts its run, are retried either way
    (:data:`FINAL_WRITE_PAUSES`).
    """

    what = "task records"

    def __init__(self, connection: Connection, *, clock: Clock | None = None):
        RedisStore.__init__(self, connection, clock)

    def _run(self, op: str, task_id: str, *args: Any) -> Any:
        try:
            return RECORDS(
                self.connection,
                [],
                [op, self.connection.key(""), self.now(1000), json_text(iso_now()), task_id, *args],
            )
        except FAULTS as error:
            if isinstance(error, redis.exceptions.OutOfMemoryError):
                self.fault(error, "task writes answer -31000 (retry later) until memory is freed")
                raise ServerBusy(FULL) from error
            self.fault(error, "task requests answer -32603 until it is back")
            raise InternalError("the task store is unreachable") from error

    @staticmethod
    def _record(snapshot: list | None) -> dict | None:
        if not snapshot:
            return None
        main, inputs, answers = snapshot
        record = {key: value for key, value in _pairs(main).items() if not key.startswith("@")}
        record["inputRequests"], record["inputResponses"] = _pairs(inputs), _pairs(answers)
        return record

    def create(
        self,
        task_id: str,
        record: dict,
        *,
        ttl: float | None,
        caller: str | None,
        max_per_caller: int | None,
        max_total: int,
    ) -> str:
        """See :meth:`mcp_ref.state.stores.TaskRecords.create`."""
        verdict = self._run(
            "create",
            task_id,
            owner_digest(caller),
            "" if max_per_caller is None else max_per_caller,
            max_total,
            "" if ttl is None else max(1, math.ceil(ttl * 1000)),
            owner_digest(record.get("owner")),
            *_split(record),
        )
        return reply_text(verdict)

    def get(self, task_id: str) -> dict | None:
        """See :meth:`mcp_ref.state.stores.TaskRecords.get`."""
        return self._record(self._run("get", task_id))

    def transition(
        self,
        task_id: str,
        changes: Mapping[str, Any],
        *,
        when: Mapping[str, Collection] | None = None,
    ) -> dict | None:
        """See :meth:`mcp_ref.state.stores.TaskRecords.transition` (``when``'s values are compared
        by their JSON text: meant for scalars, as the tasks extension uses it)."""
        conditions: list[Any] = [len(when or {})]
        for name, values in (when or {}).items():
            conditions += [name, len(values), *(json_text(value) for value in values)]
        replace = "".join(flag for flag, part in zip("io", PARTS, strict=True) if part in changes)
        args = (replace, *conditions, *_split(changes))
        # an ordinary write fails at once; a final one, or a run's start, after its tries: the start
        # and the outcome of a task are retried, not lost (Redis may be back soon)
        pause = threading.Event()  # never set: a bounded wait between tries
        kept = changes.get("status") in TERMINAL or "started" in changes
        for wait in FINAL_WRITE_PAUSES if kept else ():
            try:
                return self._record(self._run("transition", task_id, *args))
            except (InternalError, ServerBusy):  # unreachable, or out of memory
                pause.wait(wait)
        return self._record(self._run("transition", task_id, *args))

    def put_inputs(self, task_id: str, requests: Mapping[str, dict]) -> bool:
        """See :meth:`mcp_ref.state.stores.TaskRecords.put_inputs`."""
        return bool(self._run("put_inputs", task_id, *_flat(requests)))

    def withdraw_inputs(self, task_id: str, keys: Collection[str]) -> None:
        """See :meth:`mcp_ref.state.stores.TaskRecords.withdraw_inputs`."""
        self._run("withdraw_inputs", task_id, len(keys), *keys)

    def put_responses(self, task_id: str, responses: Mapping[str, Any]) -> list[str]:
        """See :meth:`mcp_ref.state.stores.TaskRecords.put_responses`."""
        return [reply_text(key) for key in self._run("put_responses", task_id, *_flat(responses))]

    def take_responses(self, task_id: str, keys: Collection[str]) -> dict:
        """See :meth:`mcp_ref.state.stores.TaskRecords.take_responses`."""
        return _pairs(self._run("take_responses", task_id, len(keys), *keys))

    def delete(self, task_id: str) -> bool:
        """See :meth:`mcp_ref.state.stores.TaskRecords.delete`."""
        return bool(self._run("delete", task_id))

    def sweep(self) -> list[str]:
        """See :meth:`mcp_ref.state.stores.TaskRecords.sweep` (at most :data:`SWEEP_LIMIT` a call)."""
        return [reply_text(task_id) for task_id in self._run("sweep", "")]

    def count(self, caller: str | None = None) -> int:
        """See :meth:`mcp_ref.state.stores.TaskRecords.count`."""
        return int(self._run("count", "", "" if caller is None else owner_digest(caller)))

    def renew_lease(self, task_id: str, seconds: float) -> bool:
        """The process running ``task_id`` is alive: its lease now ends in ``seconds``.  False when
        the task is gone or has ended (its lease ran out before: it reads as failed; stop it).

        Once leased, a ``working`` or ``input_required`` record whose lease ran out reads as
        ``failed`` with the error :data:`LEASE_ERROR` (atomically: on the first operation that sees
        it, which also takes it out of its caller's count).  SEP-2663 §Task Lifecycle leaves how a
        task fails to the server; a task no process runs can only fail.
        """
        return bool(self._run("renew_lease", task_id, max(1, math.ceil(seconds * 1000))))

    def list(
        self, owner: str | None, cursor: str | None, limit: int
    ) -> tuple[list[dict], str | None]:
        """See :meth:`mcp_ref.state.stores.TaskRecords.list`: one script, reading the owner's index
        (``ns:tasks:owner:<digest>``) from the cursor's position on, so the work is the page's (and
        the expired records it meets, which it forgets: at most :data:`SWEEP_LIMIT` a call; past
        them the page may be short, with a cursor to go on from)."""
        # the format and the owner here; the script: a position given
        after = cursor_position(owner, cursor)
        answer = self._run("list", "", owner_digest(owner), after, max(1, min(limit, MAX_PAGE)))
        if not isinstance(answer, list):
            raise InvalidParams("Invalid cursor: not one this server gave for your tasks/list")
        position, *snapshots = answer
        records = [record for record in map(self._record, snapshots) if record is not None]
        position = reply_text(position)
        return records, page_cursor(owner, int(position)) if position else None
