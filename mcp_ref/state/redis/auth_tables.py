"""The demo authorization server's tables on Redis: clients, codes and tokens every worker sees.

:class:`RedisAuthTable` implements the workbench's ``AuthTable`` interface
(:mod:`mcp_ref.workbench.auth_tables`; structurally: nothing here imports the workbench): keys
strings, values JSON text, each operation one Lua script, so atomic across every process of the
deployment.  ``take`` reads and removes in one script: an authorization code is used at most once
(OAuth 2.1 §4.1.3: the server "MUST NOT" accept a code twice), whichever workers the two requests reach.

Keys (``ns`` the URL's namespace, ``T`` the table's name: ``clients``, ``codes``, ...):

=============================  ====================================================================
``ns:auth:T:entry:<key>``      the value (JSON text); with a ttl, Redis expires it too (a backstop)
``ns:auth:T:order``            unpinned keys by the order they were put (sorted set; evicted from the front)
``ns:auth:T:pinned``           pinned keys (a set: counted, never evicted)
``ns:auth:T:expires``          keys with a ttl, by their expiry (ms on the table's clock)
``ns:auth:T:seq``              the counter that orders puts
=============================  ====================================================================

Bounded: a put that leaves more than ``limit`` entries evicts the oldest unpinned ones in the same
script (the memory table's policy); expired entries are forgotten as they are met, and up to
:data:`SWEEP_LIMIT` by every put.  Time is Redis's (``TIME``), unless a test injects a ``clock``.

Redis unreachable: every operation raises the builtin :class:`ConnectionError` (after a warning at
most once a minute): the demo answers 503 ``temporarily_unavailable``, and its in-process token
check treats the token as not valid (as an introspection that fails does); nothing is answered from
a copy that other workers cannot see.
"""

from __future__ import annotations

import json
from typing import Any

from .connection import Connection
from .stores import FAULTS, NOW, RedisStore, Script

#: Expired entries one put forgets at most (bounded work per call).
SWEEP_LIMIT = 100

TABLE = Script(
    NOW
    + """
local op, P, key = ARGV[1], ARGV[2], ARGV[3]
local now = clock(ARGV[4], 1000)
local ORDER, PINNED, EXP, SEQ = P .. 'order', P .. 'pinned', P .. 'expires', P .. 'seq'

local function forget(k)
  redis.call('ZREM', ORDER, k)
  redis.call('ZREM', EXP, k)
  redis.call('SREM', PINNED, k)
  return redis.call('DEL', P .. 'entry:' .. k)
end

local function sweep(limit)
  local gone = redis.call('ZRANGEBYSCORE', EXP, '-inf', '(' .. string.format('%.17g', now), 'LIMIT', 0, limit)
  for _, k in ipairs(gone) do forget(k) end
end

-- the value under k, if it is there and has not expired (an expired one is forgotten)
local function live(k)
  local ends = redis.call('ZSCORE', EXP, k)
  if ends and tonumber(ends) < now then
    forget(k)
    return false
  end
  return redis.call('GET', P .. 'entry:' .. k)
end

if op == 'put' then
  local value, ttl, pinned, limit = ARGV[5], tonumber(ARGV[6]), ARGV[7] == '1', tonumber(ARGV[8])
  sweep(@@SWEEP_LIMIT@@)
  forget(key)
  if ttl then
    redis.call('SET', P .. 'entry:' .. key, value, 'PX', math.max(1, math.ceil(ttl)))
    redis.call('ZADD', EXP, string.format('%.17g', now + ttl), key)
  else
    redis.call('SET', P .. 'entry:' .. key, value)
  end
  if pinned then
    redis.call('SADD', PINNED, key)
  else
    redis.call('ZADD', ORDER, redis.call('INCR', SEQ), key)
  end
  local evicted = 0
  while redis.call('ZCARD', ORDER) + redis.call('SCARD', PINNED) > limit do
    local oldest = redis.call('ZRANGE', ORDER, 0, 0)
    if #oldest == 0 then break end
    forget(oldest[1])
    evicted = evicted + 1
  end
  return evicted
elseif op == 'get' then
  return live(key)
elseif op == 'take' then
  local value = live(key)
  forget(key)
  return value
elseif op == 'delete' then
  local value = live(key)
  forget(key)
  if value then return 1 end
  return 0
elseif op == 'len' then
  sweep(redis.call('ZCARD', EXP))
  return redis.call('ZCARD', ORDER) + redis.call('SCARD', PINNED)
end
return redis.error_reply('unknown operation ' .. op)
""".replace("@@SWEEP_LIMIT@@", str(SWEEP_LIMIT))
)


class RedisAuthTable(RedisStore):
    """One table of the demo authorization server on Redis (see the module docstring): the
    workbench's ``AuthTable`` interface, shared by every process on ``connection``."""

    def __init__(self, connection: Connection, name: str, *, limit: int, clock: Any = None):
        RedisStore.__init__(self, connection, clock)
        if not name or any(c in name for c in ": \r\n{}"):
            raise ValueError(f"not a usable table name: {name!r}")
        self.name, self.limit = name, limit
        self.prefix = connection.key("auth", name, "")
        self.what = f"the authorization server's {name} table"

    def _run(self, op: str, key: str, *more: Any) -> Any:
        try:
            return TABLE(self.connection, [], [op, self.prefix, key, self.now(1000), *more])
        except FAULTS as error:
            self.fault(error, f"the {self.name} table answers ConnectionError until it is back")
            raise ConnectionError(
                f"the authorization server's {self.name} table is unreachable"
            ) from error

    def put(self, key: str, value: Any, *, ttl: float | None = None, pinned: bool = False) -> None:
        """See ``AuthTable.put`` (one script: set, order, evict the oldest unpinned while over the limit)."""
        self._run(
            "put",
            key,
            json.dumps(value),
            "" if ttl is None else repr(ttl * 1000.0),
            "1" if pinned else "",
            self.limit,
        )

    def get(self, key: str) -> Any | None:
        """See ``AuthTable.get``."""
        held = self._run("get", key)
        return None if not held else json.loads(held)

    def take(self, key: str) -> Any | None:
        """See ``AuthTable.take``: read and removed in one script (at most one taker gets it)."""
        held = self._run("take", key)
        return None if not held else json.loads(held)

    def delete(self, key: str) -> bool:
        """See ``AuthTable.delete``."""
        return bool(self._run("delete", key))

    def __len__(self) -> int:
        return int(self._run("len", ""))
