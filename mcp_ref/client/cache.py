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
  ``tools/list_changed`` the tool pages, ``resources/updated`` that URI's read.
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
from collections import OrderedDict

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


class ResultCache:
    """Fresh results by (method, shaping parameters); see the module docstring.  Thread-safe."""

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES, clock=time.monotonic):
        self.max_entries = max_entries
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple, tuple[float, str]] = OrderedDict()
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

    def put(self, key: tuple | None, result: dict) -> None:
        """Keep a copy of ``result`` (its JSON text: the caller keeps ``result`` itself) for as long
        as its ``ttlMs`` says, at most :data:`MAX_TTL_MS` (not at all for 0, absent or negative)."""
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
            self._entries[key] = (self._clock() + min(ttl, MAX_TTL_MS) / 1000, text)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def invalidate(self, method: str, params: dict | None = None) -> None:
        """A change notification arrived: drop what it makes stale."""
        with self._lock:
            if method == "notifications/resources/updated":
                uri = (params or {}).get("uri")
                stale = [
                    k
                    for k in self._entries
                    if k[0] == "resources/read" and json.loads(k[1]) == [uri]
                ]
            else:
                methods = INVALIDATES.get(method, ())
                stale = [k for k in self._entries if k[0] in methods]
            for key in stale:
                del self._entries[key]

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
