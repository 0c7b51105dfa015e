"""Shared state on Redis (or Valkey): every worker and host of a deployment sees the same stores.

``Server(state="redis://host:port/db?namespace=NAME")``, or ``MCP_REF_STATE`` set to that URL
(:func:`mcp_ref.server.shorthand.state_from`), picks :class:`RedisState`.  Needs the redis extra
(``pip install "mcp-ref[redis]"``): redis-py's sync client, one connection pool per process, made
after a fork (:mod:`.connection`).  The stores are in :mod:`.stores` (buckets, task records),
:mod:`.holders` (counters and held sets, tied to the process holding them), :mod:`.bus` (the change
bus), :mod:`.http_stores` (the HTTP transport's event store),
:mod:`.sessions` (its session table) and :mod:`.auth_tables` (the demo authorization server's tables).
"""

from __future__ import annotations

from typing import Any

from ..stores import Buckets, Bus, Counters, HeldSets, TaskRecords
from .connection import Connection
from .holders import RedisCounters, RedisHeldSets
from .stores import RedisBuckets, RedisTaskRecords

__all__ = [
    "Connection",
    "RedisBuckets",
    "RedisCounters",
    "RedisHeldSets",
    "RedisState",
    "RedisTaskRecords",
]


class RedisState:
    """A :class:`~mcp_ref.state.stores.State` on one Redis: ``shared`` (every process of the
    deployment sees it), each store made on the one :class:`~.connection.Connection`.

    ``fail_closed``: when Redis is unreachable, refuse rate-limited requests (ServerBusy) instead
    of counting them in each process meanwhile (see :class:`~.stores.RedisBuckets`).
    """

    shared = True

    def __init__(self, connection: Connection, *, fail_closed: bool = False):
        self.connection = connection
        self.fail_closed = fail_closed
        # the stores with threads or connections of their own, closed by close()
        self._made: list[Any] = []
        self._bus: Any = None

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisState:
        """The state at ``url`` (``redis://host:port/db?namespace=NAME``; also ``rediss://`` and
        ``unix://``).  ``options``: ``fail_closed``, and the :class:`~.connection.Connection`'s
        ``socket_timeout`` and ``max_connections``."""
        fail_closed = bool(options.pop("fail_closed", False))
        return cls(Connection(url, **options), fail_closed=fail_closed)

    def buckets(self) -> Buckets:
        """A :class:`~.stores.RedisBuckets`."""
        return RedisBuckets(self.connection, fail_closed=self.fail_closed)

    def counters(self) -> Counters:
        """A :class:`~.holders.RedisCounters` (each place held by this process: a dead worker's go)."""
        counters = RedisCounters(self.connection)
        self._made.append(counters)  # close() gives its places back at once
        return counters

    def held_sets(self, **options: Any) -> HeldSets:
        """A :class:`~.holders.RedisHeldSets` (``max_subscribed_resources`` over every worker; the
        sessions' homes).  ``options``: its ``holder_ttl`` and ``beat_every``."""
        held = RedisHeldSets(self.connection, **options)
        self._made.append(held)
        return held

    def bus(self) -> Bus:
        """The deployment's :class:`~.bus.RedisBus` (pub/sub: every process's listeners hear every
        change); one per state, shared by the server's change notifications and its tasks."""
        if self._bus is None:
            from .bus import RedisBus

            self._bus = RedisBus(self.connection)
            self._made.append(self._bus)
        return self._bus

    def task_records(self) -> TaskRecords:
        """A :class:`~.stores.RedisTaskRecords`."""
        return RedisTaskRecords(self.connection)

    def event_store(self, **options: Any) -> Any:
        """A :class:`~.http_stores.RedisEventStore` (``Last-Event-ID`` replays, and streams followed,
        on any worker), its followers woken on the state's :meth:`bus`."""
        from .http_stores import RedisEventStore

        store = RedisEventStore(self.connection, **{"bus": self.bus(), **options})
        self._made.append(store)
        return store

    def auth_table(self, name: str, *, limit: int, clock: Any = None) -> Any:
        """The demo authorization server's table ``name`` (a :class:`~.auth_tables.RedisAuthTable`:
        clients, codes and tokens every worker sees)."""
        from .auth_tables import RedisAuthTable

        return RedisAuthTable(self.connection, name, limit=limit, clock=clock)

    def session_table(self, **options: Any) -> Any:
        """A :class:`~.sessions.RedisSessionTable` (``options``: ``max_sessions``, ``idle_timeout``,
        ``handshake_timeout``, ``clock``): one table, and one ``max_sessions``, for every worker."""
        from .sessions import RedisSessionTable

        return RedisSessionTable(self.connection, **options)

    def close(self) -> None:
        """Close what the stores opened (the bus's listener thread, ...) and this process's connections."""
        made, self._made, self._bus = self._made, [], None
        for store in made:
            store.close()
        self.connection.close()
