"""The client's cache of 2026-07-28 results, by the server's caching hints.

At 2026-07-28 the results of ``tools/list``, ``prompts/list``, ``resources/list``,
``resources/templates/list`` and ``resources/read`` carry ``ttlMs`` (how long the
client may consider them fresh) and ``cacheScope`` (server/utilities/caching).
:class:`ResultCache` keeps such results and hands them back while they are
fresh, so ``client.list_tools()`` twice in a row asks the server once.

* The key is the method and the parameters that shape the result (the cursor,
  the URI), never ``_meta`` (caching §Cache Key: clients "MUST NOT serve a cached
  response for a request whose method or parameters differ").
* A result is fresh while ``now < t_received + ttlMs`` (monotonic clock); a
  ``ttlMs`` that is absent, zero or negative is not kept (§Time-to-Live), and one over a day
  (:data:`MAX_TTL_MS`) is read as a day.
* A result reached through ``input_required`` rounds is never kept (§Cache Key:
  results of requests "carrying ``inputResponses`` or ``requestState`` MUST NOT be
  cached").
* A change notification invalidates at once (§Interaction with Notifications):
  ``tools/list_changed`` the tool pages, ``resources/updated`` that URI's read.  It also makes
  stale the answers still on their way: :meth:`ResultCache.fetch` keeps no result of a request
  sent before a notification that invalidates its method (the notification may come before the
  answer: a slow listing, or another HTTP stream), though its caller still gets it.
* Scope: the cache belongs to one :class:`~mcp_ref.client.Client`, which speaks for
  one authorization context; it is never shared, so ``"private"`` results may be
  kept as ``"public"`` ones are (§Cache Scope Field: private responses "MAY be
  reused for the same authorization context").
* Bounded: at most ``max_entries`` results, the least recently used dropped first.
* Each caller its own: a result is kept as its JSON text and each answer is parsed from it
  afresh, so no caller — not even the one whose request filled the cache — holds an object
  another gets (a JSON result survives the round trip unchanged, and it costs less than a deep
  copy on the way in and another on each way out).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Protocol

#: The methods whose results may be kept, and the parameters that shape each one's result.
CACHEABLE = {
    "tools/list": ("cursor",),
    "prompts/list": ("cursor",),
    "resources/list": ("cursor",),
    "resources/templates/list": ("cursor",),
    "resources/read": ("uri",),
}
#: What each list-changed notification makes stale.
INVALIDATES = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}
DEFAULT_MAX_ENTRIES = 256
#: The longest a result is kept, in milliseconds (one day), whatever ``ttlMs`` says: the hint is a
#: JSON integer of any size (``10**400`` is schema-valid, and as seconds no float holds it), and a
#: client that kept a result for years would never see the server's changes without a notification.
MAX_TTL_MS = 24 * 60 * 60 * 1000


class StartedCall(Protocol):
    """What :meth:`ResultCache.fetch` uses of a request it started (a connection's ``Call``)."""

    #: ``input_required`` rounds the request took (a result reached through any is not kept).
    rounds: int

    def result(self) -> dict:
        """Wait for the request's final result."""


class ResultCache:
    """Fresh results by (method, shaping parameters); see the module docstring.  Thread-safe."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES, clock=time.monotonic):
        self.max_entries = max_entries
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple, tuple[float, str]] = OrderedDict()
        #: The change notifications so far that made each method's results stale (see :meth:`fetch`).
        self._generations: Counter[str] = Counter()
        #: Answers served from the cache, and requests that had to go to the server (for tests and tuning).
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(method: str, params: dict | None) -> tuple | None:
        """The cache key of a request, or None when its result may not be kept."""
        shaping = CACHEABLE.get(method)
        params = params or {}
        # A request carrying parameters beyond those that shape its result (an MRTR retry's
        # ``inputResponses`` / ``requestState``, or anything unknown): its result is not kept.
        if shaping is None or any(name not in shaping and name != "_meta" for name in params):
            return None
        return (method, json.dumps([params.get(name) for name in shaping], sort_keys=True))

    def fetch(self, method: str, params: dict | None, start: Callable[[], StartedCall]) -> dict:
        """The result of request ``method`` with ``params``: the fresh one kept, else the one of
        the request ``start()`` sends, kept for later unless it took ``input_required`` rounds or
        a change notification made the method's results stale while it was on its way.

        2026-07-28 server/utilities/caching §Interaction with Notifications: a change notification
        "invalidates the cached response and it should be considered immediately stale"; a result
        the server sent before it (it may arrive after it) is such a response.  §Cache Key: results
        of requests "carrying ``inputResponses`` or ``requestState`` MUST NOT be cached".
        """
        key = self.key(method, params)
        cached = self.get(key)
        if cached is not None:
            return cached
        with self._lock:
            generation = self._generations[method]  # read before the request is sent
        call = start()
        result = call.result()
        if call.rounds == 0:
            self.put(key, result, generation)
        return result

    def get(self, key: tuple | None) -> dict | None:
        """The fresh result stored under ``key`` (None: none, or stale)."""
        if key is None or self.max_entries <= 0:
            return None
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or self._clock() >= entry[0]:
                self._entries.pop(key, None)
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            text = entry[1]
        # each caller its own: a caller changing its result changes no other's
        return json.loads(text)

    def put(self, key: tuple | None, result: dict, generation: int | None = None) -> None:
        """Keep a copy of ``result`` (its JSON text: the caller keeps ``result`` itself) for as long
        as its ``ttlMs`` says, at most :data:`MAX_TTL_MS` (not at all for 0, absent or negative).
        ``generation``: the method's when its request was sent (see :meth:`fetch`); a change
        notification since then, and the result is not kept."""
        ttl = result.get("ttlMs")
        if (
            key is None
            or self.max_entries <= 0
            or not isinstance(ttl, int)
            or isinstance(ttl, bool)
            or ttl <= 0
        ):
            return
        text = json.dumps(result, ensure_ascii=False)  # compact: a str of what came
        with self._lock:
            if generation is not None and generation != self._generations[key[0]]:
                return  # stale already: a change notification came while it was on its way
            self._entries[key] = (self._clock() + min(ttl, MAX_TTL_MS) / 1000, text)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def invalidate(self, method: str, params: dict | None = None) -> None:
        """A change notification arrived: drop what it makes stale."""
        with self._lock:
            if method == "notifications/resources/updated":
                uri = (params or {}).get("uri")
                methods: tuple[str, ...] = ("resources/read",)
                stale = [
                    k
                    for k in self._entries
                    if k[0] == "resources/read" and json.loads(k[1]) == [uri]
                ]
            else:
                methods = INVALIDATES.get(method, ())
                stale = [k for k in self._entries if k[0] in methods]
            # the answers on their way too (any URI's read: a result's request is not looked into)
            self._generations.update(methods)
            for key in stale:
                del self._entries[key]

    def forget(self, method: str) -> None:
        """Drop every result of ``method`` (a listing's pages), the answers on their way too."""
        with self._lock:
            for key in [k for k in self._entries if k[0] == method]:
                del self._entries[key]
            self._generations[method] += 1

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
