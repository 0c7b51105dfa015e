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

The buckets live in a store (:class:`mcp_ref.state.stores.Buckets`: one atomic ``take`` per
request, keys are strings), so several processes can share them; in memory by default.
Memory is bounded.  A bucket that has refilled is indistinguishable from a new one, so it is
dropped; the table is kept in least-recently-used order and swept from its old end.  Past
``max_keys`` live buckets, one is dropped: the fullest of the :data:`EVICTION_SAMPLE` idlest (its
owner's next request starts from a full bucket, which costs it the least).  Not simply the idlest:
a caller who has emptied a long-window bucket ("5/day") and then goes quiet would be the idlest,
and filling the table with new keys would hand it its burst back.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from ..errors import LimitExceeded
from ..state.stores import DEFAULT_MAX_KEYS, EVICTION_SAMPLE, Buckets, MemoryBuckets, take_each

_UNITS = {
    "s": 1.0,
    "sec": 1.0,
    "second": 1.0,
    "seconds": 1.0,
    "m": 60.0,
    "min": 60.0,
    "minute": 60.0,
    "minutes": 60.0,
    "h": 3600.0,
    "hour": 3600.0,
    "hours": 3600.0,
    "d": 86400.0,
    "day": 86400.0,
    "days": 86400.0,
}
_LIMIT = re.compile(r"\s*(\d+)\s*/\s*(\d+(?:\.\d+)?)?\s*([a-z]+)\s*")

#: DEFAULT_MAX_KEYS: how many buckets a :class:`RateLimiter` keeps at most (see the module docstring);
#: EVICTION_SAMPLE: how many of the idlest are looked at to choose the one to drop when it is full.
__all__ = ["RateLimit", "RateLimiter", "bucket_key", "DEFAULT_MAX_KEYS", "EVICTION_SAMPLE"]


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
            raise ValueError(
                f'not a rate limit: {text!r} (write it as "100/minute", "10/second" or "20/10s")'
            )
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
        raise TypeError(
            f'a rate limit is a string such as "100/minute", not {type(value).__name__}'
        )

    @property
    def rate(self) -> float:
        """Tokens added per second."""
        return self.count / self.seconds

    def __str__(self) -> str:
        return f"{self.count}/{self.seconds:g}s"

    def refusal(self, what: str, retry_after: float) -> LimitExceeded:
        """The error for a request on ``what`` over this limit, to be retried in ``retry_after``
        seconds (``data.retryAfter``: whole milliseconds, rounded up)."""
        wait = max(0.001, math.ceil(retry_after * 1000 - 1e-6) / 1000)
        return LimitExceeded(
            f"Rate limit exceeded: {what} allows {self.count} per {self.seconds:g} s; retry in {wait:g} s",
            data={"limit": str(self), "retryAfter": wait},
        )


class RateLimiter:
    """Token buckets, one per key, each with the :class:`RateLimit` given when it is used.

    Thread-safe.  The buckets are kept in ``store`` (a :class:`~mcp_ref.state.stores.Buckets`;
    default: :class:`~mcp_ref.state.stores.MemoryBuckets` of at most ``max_keys``, see the module
    docstring), whose ``clock`` (seconds, monotonic) is the time source; tests replace it.
    """

    def __init__(
        self,
        *,
        max_keys: int = DEFAULT_MAX_KEYS,
        clock: Callable[[], float] = time.monotonic,
        store: Buckets | None = None,
    ):
        if max_keys < 1:
            raise ValueError("max_keys must be at least 1")
        self.max_keys = max_keys
        self.store: Buckets = (
            store if store is not None else MemoryBuckets(max_keys=max_keys, clock=clock)
        )

    @property
    def clock(self) -> Callable[[], float]:
        """The time source of the buckets (the store's)."""
        return self.store.clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self.store.clock = clock

    def take(self, key: Hashable, limit: RateLimit) -> float:
        """Take one token from ``key``'s bucket: 0.0 when admitted, else the seconds until one is
        available (nothing is taken then).  One atomic call of the store."""
        return self.store.take(bucket_key(key), limit.count, limit.seconds)

    def take_all(self, limits: Sequence[tuple[Hashable, RateLimit]]) -> tuple[int, float]:
        """:meth:`take` for each ``(key, limit)`` in turn, stopping at the first refused: ``(its
        index, seconds to wait)``, or ``(-1, 0.0)``.  One call of the store when it offers
        ``take_all`` (a shared store: one round trip for a request under two limits)."""
        items = [(bucket_key(key), limit.count, limit.seconds) for key, limit in limits]
        take_all = getattr(self.store, "take_all", None)
        return take_all(items) if take_all is not None else take_each(self.store, items)

    def __len__(self) -> int:
        """The buckets held now (full ones not yet swept included)."""
        return len(self.store)


def bucket_key(key: Hashable) -> str:
    """The store's string key for ``key``: a string as it is, anything else (a tuple of strings and
    None, as the policy's keys are) as its JSON array, so no two keys meet."""
    if isinstance(key, str):
        return key
    return json.dumps(list(key) if isinstance(key, tuple) else key, separators=(",", ":"))
