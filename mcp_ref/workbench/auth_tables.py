"""The demo authorization server's tables, behind one small declared interface (issue 22).

:class:`~mcp_ref.workbench.demo_auth_server.DemoAuthorizationServer` keeps four tables: registered
clients (RFC 7591), authorization codes, refresh tokens and access tokens.  Each is an
:class:`AuthTable`: keys are strings, values JSON, and every operation is one atomic call, so a
shared implementation (Redis: :class:`mcp_ref.state.redis.auth_tables.RedisAuthTable`) lets
every worker of a deployment answer for a client another registered, a code another issued, a token
another minted.  :class:`MemoryAuthTable` is the default: this process's memory, as before.

The records kept (:class:`RegisteredClient`, :class:`Grant`) are here too, with their JSON forms;
:class:`Records` is a table seen as records of one kind.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

Clock = Callable[[], float]


class AuthTable(Protocol):
    """A bounded map of string keys to JSON values; each operation is one atomic call.

    Bounded by ``limit``: a put that makes the table hold more than ``limit`` entries forgets what
    expired, then the oldest entries (the least recently put) that are not ``pinned``; pinned entries count towards the
    limit but are never forgotten that way.  An entry put with a ``ttl`` is gone once its table's
    clock is past its expiry (``expires < now``).  A table that cannot reach its store raises the
    builtin :class:`ConnectionError` (a memory table never does).
    """

    limit: int

    def put(self, key: str, value: Any, *, ttl: float | None = None, pinned: bool = False) -> None:
        """Keep ``value`` under ``key`` (replacing what was there; it becomes the newest entry),
        for ``ttl`` seconds (None: until forgotten), then evict the oldest unpinned entries while
        the table is over its limit."""

    def get(self, key: str) -> Any | None:
        """The value under ``key`` (a copy), or None when there is none or it expired."""

    def take(self, key: str) -> Any | None:
        """The value under ``key``, removed in the same step: of two concurrent takes, from any
        processes, at most one gets it (an authorization code is used at most once)."""

    def delete(self, key: str) -> bool:
        """Forget ``key``; whether a live entry was there."""

    def __len__(self) -> int:
        """How many live entries the table holds."""


class MemoryAuthTable:
    """An :class:`AuthTable` in this process's memory (thread-safe): an ordered dict of
    ``key -> (JSON text, expiry, pinned)``; values are copied in and out as JSON text, as a remote
    store would.  When full, the oldest unpinned entry goes (see :class:`AuthTable`)."""

    def __init__(self, limit: int, *, clock: Clock = time.monotonic):
        self.limit = limit
        self.clock = clock
        self.items: collections.OrderedDict[str, tuple[str, float, bool]] = (
            collections.OrderedDict()
        )
        self.lock = threading.Lock()

    def put(self, key: str, value: Any, *, ttl: float | None = None, pinned: bool = False) -> None:
        """See :meth:`AuthTable.put`."""
        text = json.dumps(value)
        expires = math.inf if ttl is None else self.clock() + ttl
        with self.lock:
            self.items.pop(key, None)
            self.items[key] = (text, expires, pinned)
            # full: what expired goes first (one pass, only when full), then the oldest unpinned
            if len(self.items) > self.limit:
                self._sweep()
                unpinned = [k for k, (_, _, kept) in self.items.items() if not kept]
                for oldest in unpinned[: len(self.items) - self.limit]:
                    del self.items[oldest]

    def get(self, key: str) -> Any | None:
        """See :meth:`AuthTable.get`."""
        return self._live(key)

    def take(self, key: str) -> Any | None:
        """See :meth:`AuthTable.take`."""
        return self._live(key, remove=True)

    def delete(self, key: str) -> bool:
        """See :meth:`AuthTable.delete`."""
        return self._live(key, remove=True) is not None

    def __len__(self) -> int:
        with self.lock:
            self._sweep()
            return len(self.items)

    def _sweep(self) -> None:
        now = self.clock()
        for key in [k for k, (_, expires, _) in self.items.items() if expires < now]:
            del self.items[key]

    def _live(self, key: str, *, remove: bool = False) -> Any | None:
        """The value under ``key`` (a copy, read from its JSON text) unless it expired (then it is
        forgotten); ``remove``: taken out in the same step."""
        with self.lock:
            held = self.items.pop(key, None) if remove else self.items.get(key)
            if held is None or held[1] < self.clock():
                self.items.pop(key, None)  # expired: forgotten
                return None
        return json.loads(held[0])


def auth_table(state: Any, name: str, limit: int, clock: Clock | None) -> AuthTable:
    """The table ``name`` of ``state`` (a :class:`~mcp_ref.state.stores.State`) when it offers
    shared ones (``state.auth_table``, e.g. :class:`~mcp_ref.state.redis.RedisState`), else a
    :class:`MemoryAuthTable`.  ``clock``: the one a test injected (None: the store's own time)."""
    make = getattr(state, "auth_table", None)
    if make is None:
        return MemoryAuthTable(limit, clock=clock or time.monotonic)
    return make(name, limit=limit, clock=clock)


# -- the records ----------------------------------------------------------------------------------


@dataclass
class RegisteredClient:
    """A client the server knows: its id, its secret (None for a public client), its redirect URIs."""

    client_id: str
    redirect_uris: tuple[str, ...]
    token_endpoint_auth_method: str = "none"
    client_secret: str | None = None
    client_name: str | None = None
    grant_types: tuple[str, ...] = ("authorization_code", "refresh_token")
    issued_at: int = field(default_factory=lambda: int(time.time()))

    def to_json(self) -> dict:
        """Its JSON form (what an :class:`AuthTable` keeps)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> RegisteredClient:
        """The client :meth:`to_json` gave."""
        return cls(
            **{
                **data,
                "redirect_uris": tuple(data["redirect_uris"]),
                "grant_types": tuple(data["grant_types"]),
            }
        )


@dataclass
class Grant:
    """What a code, an access token or a refresh token stands for.  ``expires`` is on the
    authorization server's clock (``inf``: never; JSON null)."""

    client_id: str
    scope: str
    resource: str | None
    expires: float
    subject: str = "demo-user"
    redirect_uri: str | None = None
    challenge: str | None = None

    def to_json(self) -> dict:
        """Its JSON form (what an :class:`AuthTable` keeps)."""
        data = dataclasses.asdict(self)
        data["expires"] = None if math.isinf(self.expires) else self.expires
        return data

    @classmethod
    def from_json(cls, data: dict) -> Grant:
        """The grant :meth:`to_json` gave."""
        return cls(**{**data, "expires": math.inf if data["expires"] is None else data["expires"]})


R = TypeVar("R", RegisteredClient, Grant)


@dataclass
class Records(Generic[R]):
    """An :class:`AuthTable` seen as records of one kind (``kind.to_json`` in, ``kind.from_json`` out)."""

    table: AuthTable
    kind: type[R]

    def put(self, key: str, record: R, *, ttl: float | None = None, pinned: bool = False) -> None:
        """Keep ``record`` under ``key`` (see :meth:`AuthTable.put`)."""
        self.table.put(key, record.to_json(), ttl=ttl, pinned=pinned)

    def get(self, key: str) -> R | None:
        """The record under ``key``, or None."""
        data = self.table.get(key)
        return None if data is None else self.kind.from_json(data)

    def take(self, key: str) -> R | None:
        """The record under ``key``, removed in the same atomic step (single use), or None."""
        data = self.table.take(key)
        return None if data is None else self.kind.from_json(data)

    def __len__(self) -> int:
        return len(self.table)
