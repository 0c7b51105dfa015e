"""Rate limits: ``"100/minute"`` read into a :class:`RateLimit`, enforced by a :class:`RateLimiter`.

The MCP specification asks for rate limiting in many places and defines none: servers "MUST ...
Rate limit tool invocations" (2025-11-25 server/tools §Security Considerations), completion and
log messages likewise; clients "SHOULD implement rate limiting" of the sampling and elicitation
requests servers send them (client/sampling, client/elicitation).  mcp_ref uses one mechanism for
all of them: a token bucket per key.

A bucket holds at most ``count`` tokens (the burst) and refills at ``count`` per ``seconds``;
each admitted request takes one token.  A caller that used up its burst waits
``1 / rate`` seconds per further request: the limit holds over any window, and a bucket left alone
for one whole window is full again ("resets after its window").

Memory is bounded.  A bucket that has refilled is indistinguishable from a new one, so it is
dropped; the table is kept in least-recently-used order and swept from its old end.  Past
``max_keys`` live buckets, one is dropped: the fullest of the :data:`EVICTION_SAMPLE` idlest (its
owner's next request starts from a full bucket, which costs it the least).  Not simply the idlest:
a caller who has emptied a long-window bucket ("5/day") and then goes quiet would be the idlest,
and filling the table with new keys would hand it its burst back.
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass

_UNITS = {"s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0,
          "m": 60.0, "min": 60.0, "minute": 60.0, "minutes": 60.0,
          "h": 3600.0, "hour": 3600.0, "hours": 3600.0,
          "d": 86400.0, "day": 86400.0, "days": 86400.0}
_LIMIT = re.compile(r"\s*(\d+)\s*/\s*(\d+(?:\.\d+)?)?\s*([a-z]+)\s*")

#: How many buckets a :class:`RateLimiter` keeps at most (see the module docstring).
DEFAULT_MAX_KEYS = 65536
#: How many of the idlest buckets are looked at to choose the one to drop when the table is full.
EVICTION_SAMPLE = 16


@dataclass(frozen=True)
class RateLimit:
    """At most ``count`` requests per ``seconds``, in a burst or spread out (a token bucket)."""

    count: int
    seconds: float

    def __post_init__(self):
        if not isinstance(self.count, int) or isinstance(self.count, bool) or self.count < 1:
            raise ValueError(f"a rate limit's count must be a positive integer, not {self.count!r}")
        if not self.seconds > 0:
            raise ValueError(f"a rate limit's window must be positive, not {self.seconds!r}")

    @classmethod
    def parse(cls, text: str) -> RateLimit:
        """``"100/minute"``, ``"10/second"``, ``"5/hour"``, ``"1000/day"``, ``"20/10s"``, ``"3/5 min"``."""
        match = _LIMIT.fullmatch(text.lower()) if isinstance(text, str) else None
        if match is None or match.group(3) not in _UNITS:
            raise ValueError(f"not a rate limit: {text!r} (write it as \"100/minute\", \"10/second\" or \"20/10s\")")
        count, multiple, unit = match.groups()
        return cls(int(count), float(multiple or 1) * _UNITS[unit])

    @classmethod
    def of(cls, value) -> RateLimit | None:
        """``value`` as a RateLimit: None, a RateLimit, a string for :meth:`parse`, or ``(count, seconds)``."""
        if value is None or isinstance(value, RateLimit):
            return value
        if isinstance(value, str):
            return cls.parse(value)
        if isinstance(value, tuple) and len(value) == 2:
            return cls(value[0], float(value[1]))
        raise TypeError(f"a rate limit is a string such as \"100/minute\", not {type(value).__name__}")

    @property
    def rate(self) -> float:
        """Tokens added per second."""
        return self.count / self.seconds

    def __str__(self) -> str:
        return f"{self.count}/{self.seconds:g}s"


class RateLimiter:
    """Token buckets, one per key, each with the :class:`RateLimit` given when it is used.

    Thread-safe.  ``clock`` (seconds, monotonic) is the time source; tests replace it.
    """

    def __init__(self, *, max_keys: int = DEFAULT_MAX_KEYS, clock: Callable[[], float] = time.monotonic):
        if max_keys < 1:
            raise ValueError("max_keys must be at least 1")
        self.max_keys = max_keys
        self.clock = clock
        self._lock = threading.Lock()
        # key -> [tokens, when they were counted, the bucket's RateLimit], least recently used first
        self._buckets: OrderedDict[Hashable, list] = OrderedDict()

    def take(self, key: Hashable, limit: RateLimit) -> float:
        """Take one token from ``key``'s bucket: 0.0 when admitted, else the seconds until one is
        available (nothing is taken then)."""
        with self._lock:
            now = self.clock()
            bucket = self._buckets.get(key)
            if bucket is None:
                tokens = float(limit.count)
            else:
                tokens = min(float(limit.count), bucket[0] + (now - bucket[1]) * limit.rate)
                self._buckets.move_to_end(key)
            if tokens >= 1.0:
                tokens -= 1.0
                wait = 0.0
            else:
                wait = (1.0 - tokens) / limit.rate
            if bucket is None:
                self._buckets[key] = [tokens, now, limit]
            else:
                bucket[0], bucket[1], bucket[2] = tokens, now, limit
            self._sweep(now)
            return wait

    def _sweep(self, now: float) -> None:
        """Drop refilled buckets from the idle end; past ``max_keys``, the fullest of the idlest."""
        buckets = self._buckets
        while buckets:
            key, (tokens, counted, limit) = next(iter(buckets.items()))
            if tokens + (now - counted) * limit.rate < limit.count:
                break
            del buckets[key]
        while len(buckets) > self.max_keys:
            idlest = itertools.islice(buckets.items(), EVICTION_SAMPLE)
            key = max(idlest, key=lambda item: _fill(item[1], now))[0]
            del buckets[key]

    def __len__(self) -> int:
        """The buckets held now (full ones not yet swept included)."""
        return len(self._buckets)


def _fill(bucket: list, now: float) -> float:
    """How full a bucket is now, 0 to 1."""
    tokens, counted, limit = bucket
    return min(1.0, (tokens + (now - counted) * limit.rate) / limit.count)
