"""The HTTP server's seams (issue 21): the session table and the event store (each a Protocol and its
in-memory implementation, with an injectable clock), the middleware chain, the one status table,
and the layering of the HTTP package (no workbench import; the auth middleware only with ``auth=``).
"""

from __future__ import annotations

import ast
import inspect
import json
import logging
import secrets
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from conftest import WAIT, run_threads
from http_fixtures import TIMEOUT, SseReader, raw_session, serve  # noqa: F401  (fixtures)
from redis_fixture import own_redis, redis_server, redis_url  # noqa: F401  (fixtures)

from mcp_ref.errors import LIMIT_EXCEEDED, METHOD_NOT_FOUND, LimitExceeded
from mcp_ref.http import server as http_server
from mcp_ref.http.server import (
    STATUS_OF,
    EventStore,
    HttpError,
    MemoryEventStore,
    MemorySessionTable,
    Middleware,
    SessionTable,
    modern_status,
    status as statuses,
)
from mcp_ref.http.server.events import EventsForgotten, Followed, event_number
from mcp_ref.state.redis import RedisState
from mcp_ref.state.redis.connection import Connection
from mcp_ref.state.redis.http_stores import EventStoreUnavailable, RedisEventStore
from mcp_ref.state.redis.sessions import RedisSessionTable, SessionTableUnavailable, session_digest

PACKAGE = Path(http_server.__file__).parent


class Clock:
    """A clock the test moves: expiry without sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def protocol_members(protocol) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(protocol).items()
        if callable(member) and (not name.startswith("_") or name == "__len__")
    }


@pytest.mark.parametrize(
    "implementation, protocol",
    [
        (MemorySessionTable, SessionTable),
        (RedisSessionTable, SessionTable),
        (MemoryEventStore, EventStore),
        (RedisEventStore, EventStore),
    ],
)
def test_the_in_memory_state_implements_its_protocol(implementation, protocol):
    members = protocol_members(protocol)
    assert members  # the protocol is really read
    for name, signature in members.items():
        mine = inspect.signature(getattr(implementation, name))
        assert list(mine.parameters) == list(signature.parameters), name
        assert [p.kind for p in mine.parameters.values()] == [
            p.kind for p in signature.parameters.values()
        ], name


def test_a_protocol_check_that_can_fail():
    class Partial:
        def add(self, session_id: str) -> None: ...

    with pytest.raises(AttributeError):
        test_the_in_memory_state_implements_its_protocol(Partial, SessionTable)


@pytest.fixture
def redis_connections(redis_url):
    """Factory: a new Connection to this test's Redis namespace (each one stands for a worker); closed after."""
    made: list[Connection] = []

    def connect() -> Connection:
        made.append(Connection(redis_url))
        return made[-1]

    yield connect
    for connection in made:
        connection.close()


# -- the session table: one contract, on memory and on Redis ---------------------------------------


@pytest.fixture(params=["memory", "redis"])
def session_tables(request):
    """Factory: ``session_tables(**options)`` -> ``worker()``, which gives each worker of one
    deployment its table: in memory one table (a deployment of one process), on Redis one table
    per connection on one namespace.  All share ``options["clock"]`` (a :class:`Clock` by default)."""

    def deployment(**options):
        options.setdefault("clock", Clock())
        if request.param == "memory":
            table = MemorySessionTable(**options)
            return lambda: table
        connect = request.getfixturevalue("redis_connections")
        return lambda: RedisSessionTable(connect(), **options)

    return deployment


def test_a_session_table_keeps_each_sessions_record_and_state(session_tables):
    table = session_tables()()
    table.add("a")
    table.add("b", {"version": "2025-06-18", "client": {"name": "c", "n": [1, {}]}, "level": None})
    assert table.get("a") == {
        "created": 1000.0,
        "last_seen": 1000.0,
        "established": False,
        "state": {},
    }
    assert table.get("b")["state"] == {
        "version": "2025-06-18",
        "client": {"name": "c", "n": [1, {}]},
        "level": None,
    }
    assert table.update("b", {"level": "debug", "subscriptions": []})  # merged: its other keys stay
    assert table.get("b")["state"] == {
        "version": "2025-06-18",
        "client": {"name": "c", "n": [1, {}]},
        "level": "debug",
        "subscriptions": [],
    }
    assert table.update("b", {"level": None, "client": {"name": "d"}})  # None: the key is removed
    assert table.get("b")["state"] == {
        "version": "2025-06-18",
        "client": {"name": "d"},
        "subscriptions": [],
    }
    assert table.update("b", {"level": "debug", "gone": None})  # removing a key it lacks is nothing
    copy = table.get("b")
    copy["state"]["level"] = "mutated"
    assert table.get("b")["state"]["level"] == "debug"  # a copy, not the table's own
    assert table.remove("b") and not table.remove("b")
    assert (
        not table.update("b", {"level": "info"}) and table.get("b") is None
    )  # gone: False, not brought back
    assert table.alive([]) == set() and table.alive(["a", "b", "c", "a"]) == {"a"}
    table.add("a", {"version": "x"})  # an id added again is a new record
    assert table.get("a")["state"] == {"version": "x"} and len(table) == 1
    assert table.shared == (type(table) is RedisSessionTable)


def test_the_session_table_expires_by_its_clock(session_tables):
    clock = Clock()
    table = session_tables(idle_timeout=60, handshake_timeout=5, clock=clock)()
    table.add("a")
    table.add("b")
    assert table.touch("b") and not table.touch(
        "nobody"
    )  # "b" came back after initialize: established
    assert table.get("b")["established"] and not table.get("a")["established"]
    clock.now += 5.5
    assert table.is_expired("a") and not table.is_expired(
        "b"
    )  # the handshake timeout is for "a" only
    assert table.touch("b", established=False)  # seen: stays established
    assert table.get("b") == {
        "created": 1000.0,
        "last_seen": 1005.5,
        "established": True,
        "state": {},
    }
    expired = table.expired()
    assert expired == ["a"]
    if table.shared:  # removed by the call that returned it: one worker hears of each
        assert table.get("a") is None and table.expired() == [] and not table.is_expired("a")
    else:
        assert table.remove("a")
    clock.now += 61
    assert table.is_expired("b") and table.expired() == ["b"]
    if not table.shared:
        table.touch("b")
        assert table.expired() == [] and not table.is_expired("b")  # touched: not expired any more
        assert table.remove("b")
    assert (
        not table.remove("a")
        and table.get("a") is None
        and not table.is_expired("a")
        and len(table) == 0
    )
    table.add("c")
    clock.now += 6
    if table.shared:  # an expired session touched is gone for every worker, at once
        assert not table.touch("c") and table.get("c") is None and table.expired() == []
    else:  # the caller ends it (it alone knows whether a client listens on it)
        assert table.touch("c") and table.get("c") is not None


def test_expired_sessions_are_each_heard_once_across_workers(session_tables):
    clock = Clock()
    worker = session_tables(handshake_timeout=5, clock=clock)
    one, two = worker(), worker()
    ids = [f"s{n}" for n in range(40)]
    for number, session_id in enumerate(ids):
        (one if number % 2 else two).add(session_id)
    clock.now += 6
    heard = run_threads(lambda i: (one, two)[i % 2].expired(), 8)
    everything = [session_id for batch in heard for session_id in batch]
    if one.shared:
        assert sorted(everything) == sorted(ids)  # each id once, to one of the eight callers
    else:
        assert all(
            sorted(batch) == sorted(ids) for batch in heard
        )  # in memory the caller removes them


def test_the_session_table_is_bounded_and_evicts_the_oldest_unproven_session(session_tables):
    clock = Clock()
    worker = session_tables(max_sessions=3, clock=clock)
    one, two = (
        worker(),
        worker(),
    )  # two workers, one cap: max_sessions counts the deployment's sessions
    for number, (session_id, table) in enumerate([("old", one), ("proven", two), ("young", one)]):
        clock.now += number
        assert table.make_room() == (True, None)
        table.add(session_id)
    two.touch("proven")
    assert two.make_room() == (
        True,
        "old",
    )  # the oldest that never came back, whichever worker made it
    assert one.get("old") is None and len(one) == 2 and len(two) == 2
    clock.now += 1
    two.add("new")
    assert one.make_room() == (True, "young")
    one.add("newer")
    two.touch("new")
    one.touch("newer")
    assert one.make_room() == (False, None) and two.make_room() == (
        False,
        None,
    )  # every session established: 503
    assert len(one) == 3


def test_a_redis_session_table_expires_on_redis_clock(redis_connections):
    """No injected clock: the deadlines are Redis's ``TIME``; the test waits on Redis's clock too
    (a ``BLPOP`` that times out), past the deadline it computes from the record."""
    connection = redis_connections()
    table = RedisSessionTable(connection, handshake_timeout=0.3, idle_timeout=0.6)
    table.add("a")
    table.add("b")
    table.touch("b")
    record = table.get("a")
    assert record is not None and abs(record["created"] - _redis_now(connection)) < WAIT
    assert not table.is_expired("a") and table.expired() == []
    _wait_on_redis(connection, record["created"] + 0.3)
    assert table.is_expired("a") and not table.is_expired("b")
    assert table.expired() == ["a"] and len(table) == 1
    _wait_on_redis(connection, table.get("b")["last_seen"] + 0.6)
    assert table.expired() == ["b"] and len(table) == 0


def test_a_redis_session_table_keeps_nothing_for_ever(redis_connections):
    connection = redis_connections()
    table = RedisSessionTable(connection, idle_timeout=100, handshake_timeout=10)
    table.add("a", {"version": "v"})
    record, every = table.record_key("a"), connection.key("sessions")
    assert (
        0 < connection.client.pttl(record) <= (2 * 10 + 60) * 1000
    )  # twice its timeout, and a margin
    table.touch("a")
    assert (2 * 10 + 60) * 1000 < connection.client.pttl(record) <= (2 * 100 + 60) * 1000
    assert 0 < connection.client.pttl(every) <= (2 * 100 + 60) * 1000
    assert table.remove("a") and connection.client.exists(record) == 0


def test_the_redis_state_gives_the_http_app_its_shared_stores(redis_url):
    state = RedisState.from_url(redis_url)
    try:
        table = state.session_table(max_sessions=7, idle_timeout=9.0, handshake_timeout=3.0)
        assert isinstance(table, RedisSessionTable) and table.shared
        assert (table.max_sessions, table.idle_timeout, table.handshake_timeout) == (7, 9.0, 3.0)
        store = state.event_store(max_events=5)
        assert isinstance(store, RedisEventStore) and store.shared and store.bus is state.bus()
    finally:
        state.close()


def test_a_redis_session_table_without_redis_says_503_or_degrades(own_redis, caplog):
    connection = Connection(f"{own_redis.url}?namespace=faults", socket_timeout=1.0)
    table = RedisSessionTable(connection)
    try:
        table.add("a", {"version": "v"})
        own_redis.stop()
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="mcp_ref.state.redis.stores"):
            for call in (
                table.make_room,
                lambda: table.add("b"),
                lambda: table.get("a"),
                lambda: len(table),
            ):
                with pytest.raises(SessionTableUnavailable) as refused:
                    call()
                assert isinstance(
                    refused.value, ConnectionError
                )  # what the transport answers 503 for
            assert table.touch("a")  # nothing recorded, no raise: not known to be gone
            assert table.update("a", {"level": "debug"})  # not known to be gone
            assert not table.is_expired("a") and table.expired() == [] and not table.remove("a")
            assert table.alive(["a", "b"]) == {"a", "b"}  # nothing is ended during an outage
        assert time.monotonic() - started < WAIT  # a bounded wait each, not a hang
        assert table.failures == 10
        warnings = [r.getMessage() for r in caplog.records if "session table" in r.getMessage()]
        assert len(warnings) == 1 and "Redis is unreachable" in warnings[0]  # once a minute
        own_redis.start()  # empty again (no persistence): the table works, its scripts loaded again
        assert table.get("a") is None and table.make_room() == (True, None)
        table.add("a")
        assert table.get("a")["established"] is False
    finally:
        connection.close()


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _redis_now(connection: Connection) -> float:
    seconds, micros = connection.client.time()
    return seconds + micros / 1e6


def _wait_on_redis(connection: Connection, until: float) -> None:
    """Wait until Redis's clock passes ``until``: a ``BLPOP`` on a key nobody writes, timed by Redis."""
    left = until - _redis_now(connection) + 0.02
    assert left < WAIT
    if left > 0:
        assert connection.client.blpop([connection.key("never-written")], timeout=left) is None
    assert _redis_now(connection) > until


@pytest.fixture(params=["memory", "redis"])
def event_stores(request):
    """Factory of event stores of one backend: ``event_stores(max_events=...)``; the Redis ones share a namespace."""
    if request.param == "memory":
        yield lambda **options: MemoryEventStore(**options)
        return
    connect = request.getfixturevalue("redis_connections")
    made: list[RedisEventStore] = []

    def make(**options) -> RedisEventStore:
        made.append(RedisEventStore(connect(), **options))
        return made[-1]

    yield make
    for store in made:
        store.close()


def test_the_event_store_replays_one_stream_after_an_id_and_is_bounded(event_stores):
    store = event_stores(max_events=4)
    first = store.store("s1", "p1", b"one")
    other = store.store("s1", "p2", b"elsewhere")
    second = store.store("s1", "p1", b"two")
    store.store("s2", "p1", b"another session")
    assert first.startswith("p1.") and other.startswith("p2.")
    assert store.replay_after("s1", first) == ("p1", [(second, b"two")])
    assert store.replay_after("s1", "p1.999") is None and store.replay_after("s9", first) is None
    for n in range(4):
        store.store("s1", "p3", b"%d" % n)
    with pytest.raises(EventsForgotten):  # past max_events the oldest went, all of p1 with them
        store.replay_after("s1", first)
    store.forget("s1")
    assert store.replay_after("s1", second) is None


def test_past_max_bytes_a_session_forgets_its_oldest_events_and_replays_what_is_kept(event_stores):
    """A session's events were bounded by count only (1,000 by default), each as long as a message
    may be: one session could hold gigabytes.  Now their data is bounded in bytes too
    (``max_bytes``): past it the oldest are forgotten, as past ``max_events``, and a replay gets
    what is kept; the newest event is kept however long."""
    store = event_stores(max_events=100, max_bytes=10)
    first = store.store("s1", "p1", b"1234")
    second = store.store("s1", "p1", b"5678")
    other = store.store("s2", "p1", b"0123456789")  # another session's bytes are its own
    third = store.store("s1", "p1", b"abcd")  # 12 bytes: first is forgotten
    assert store.replay_after("s1", first) == ("p1", [(second, b"5678"), (third, b"abcd")])
    assert store.replay_after("s1", second) == ("p1", [(third, b"abcd")])
    priming = store.store("s1", "p2", b"")
    long = store.store("s1", "p2", b"x" * 50)  # past the bound alone: every older one goes
    for gone in (first, second, third):
        with pytest.raises(EventsForgotten):
            store.replay_after("s1", gone)
    assert store.replay_after("s1", priming) == ("p2", [(long, b"x" * 50)])
    assert store.replay_after("s2", other) == ("p1", [])
    fourth = store.store("s1", "p2", b"12345678")  # 58 bytes: the long one goes
    assert store.replay_after("s1", priming) == ("p2", [(fourth, b"12345678")])


def test_an_id_past_max_events_replays_what_is_left_of_its_stream(event_stores):
    """spec_notes/security.md: "the oldest are forgotten; a GET resuming from one gets what is left"
    (2025-11-25 basic/transports §Resumability and Redelivery: on "the stream that was
    disconnected", never another's).  Before, an id no longer kept replayed nothing (None), and the
    transport handed the GET the standalone stream instead."""
    store = event_stores(max_events=3)
    first = store.store("s1", "p1", b"one")
    second = store.store("s1", "p1", b"two")
    other = store.store("s1", "p2", b"x")
    third = store.store("s1", "p1", b"three")
    fourth = store.store("s1", "p2", b"y")  # first and second are forgotten
    assert store.replay_after("s1", first) == ("p1", [(third, b"three")])
    assert store.replay_after("s1", second) == ("p1", [(third, b"three")])
    assert store.replay_after("s1", other) == ("p2", [(fourth, b"y")])
    store.end_stream("s1", "p1")  # other is forgotten; the end marker is never replayed
    assert store.replay_after("s1", first) == ("p1", [(third, b"three")])
    last = store.store("s1", "p3", b"z")  # third is forgotten: of p1 only its end marker is left
    for gone in (first, second, f"p1.{event_number(other)}"):
        with pytest.raises(EventsForgotten):
            store.replay_after("s1", gone)
    assert store.replay_after("s1", other) == ("p2", [(fourth, b"y")])  # p2 is still kept
    # Still refused: a kept number named with another stream, a number not issued yet, one not
    # written as issued, and another session's ids.
    for foreign in (
        f"p1.{event_number(fourth)}",
        f"p1.{event_number(last) + 1000}",
        "p1.0",
        f"p1.0{event_number(first)}",
        f"p1.{event_number(first)}.0",
    ):
        assert store.replay_after("s1", foreign) is None, foreign
    assert store.replay_after("s2", first) is None
    store.forget("s1")
    assert store.replay_after("s1", first) is None  # a session forgotten whole: nothing known


def test_the_memory_store_tells_open_streams_only_when_shared():
    """``stream_open`` is asked only of a shared store (the transport stores a stream's end only for
    a shared session): a shared memory store tells it as Redis does; one of a single process keeps
    no note of its streams, which would stay for the session's whole life (none ever ends)."""

    class SharedMemoryEventStore(MemoryEventStore):
        shared = True

    shared = SharedMemoryEventStore(max_events=2)
    shared.store("s1", "p1", b"one")
    shared.store("s1", "p2", b"two")
    shared.store("s1", "p2", b"three")  # p1's only event is forgotten; p1 has not ended
    assert shared.stream_open("s1", "p1") and shared.stream_open("s1", "p2")
    shared.end_stream("s1", "p1")
    assert not shared.stream_open("s1", "p1") and shared.stream_open("s1", "p2")
    alone = MemoryEventStore(max_events=2)
    for n in range(10):
        alone.store("s1", f"p{n}", b"x")
    assert not alone.stream_open("s1", "p9") and not alone._open


def test_the_event_store_refuses_ids_it_never_issued(event_stores):
    store = event_stores()
    first = store.store("s1", "p1", b"one")
    number = first.rpartition(".")[2]
    assert int(number) >= 1  # <stream id>.<n>: what the transport and its clients expect
    for foreign in [
        f"p2.{number}",
        number,
        f".{number}",
        "p1.",
        "p1.x",
        "p1.-1",
        "p1.1e3",
        "p1.\u00b2",
        "p1." + "9" * 40,
        f"p1.{number}.0",
    ]:
        assert store.replay_after("s1", foreign) is None, foreign
    assert store.replay_after("s1", first) == ("p1", [])
    assert event_number("p1.\u00b2") is None  # a digit to str.isdigit, not to int()


def test_event_ids_are_unique_and_growing_in_a_session_across_writers(event_stores):
    store = event_stores(max_events=10_000)
    ids = run_threads(lambda i: [store.store("s1", "p1", b"%d" % i) for _ in range(50)], 8)
    numbers = [int(eid.rpartition(".")[2]) for batch in ids for eid in batch]
    assert len(set(numbers)) == 400
    for batch in ids:
        assert [int(eid.rpartition(".")[2]) for eid in batch] == sorted(
            int(eid.rpartition(".")[2]) for eid in batch
        )


class ObservedMemoryEventStore(MemoryEventStore):
    """The memory store, saying when a waiter found nothing and is about to wait: it still holds the
    store's lock then, so a ``wake``, ``store`` or ``claim_stream`` from then on reaches it."""

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.waiting = threading.Event()

    def _after(self, session_id, stream_id, number, generation):
        found = super()._after(session_id, stream_id, number, generation)
        if not (found.events or found.ended or found.superseded):
            self.waiting.set()
        return found


class ObservedRedisEventStore(RedisEventStore):
    """The Redis store, saying when a waiter's read found nothing: its wake-ups were counted from
    before that read, and its claim made the bus subscription (confirmed by Redis), so a store or
    claim of any worker from then on wakes it."""

    def __init__(self, *args, **options) -> None:
        super().__init__(*args, **options)
        self.waiting = threading.Event()
        self.reads: list[int] = []  # the number each read (of one or more scripts) started after

    def _read(self, session_id, stream_id, number, generation):
        self.reads.append(number)
        found = super()._read(session_id, stream_id, number, generation)
        if found is None or not (found.events or found.ended or found.superseded):
            self.waiting.set()
        return found


@pytest.fixture(params=["memory", "redis"])
def event_workers(request):
    """Factory: ``event_workers(**options)`` -> ``worker()``, each worker's event store of one
    deployment: in memory one store, on Redis one store (its own connection and bus) per worker."""
    made: list[RedisEventStore] = []

    def deployment(**options):
        if request.param == "memory":
            store = ObservedMemoryEventStore(**options)
            return lambda: store
        connect = request.getfixturevalue("redis_connections")

        def worker() -> RedisEventStore:
            made.append(ObservedRedisEventStore(connect(), **options))
            return made[-1]

        return worker

    yield deployment
    for store in made:
        store.close()


@pytest.fixture
def follow():
    """``follow(store, session_id, stream_id, number, timeout, generation)``: ``wait_after`` on a
    thread of its own, returned once its read found nothing and it waits (a future: ``.result(WAIT)``)."""
    pool = ThreadPoolExecutor(4)

    def start(store, session_id, stream_id, number, timeout, generation):
        store.waiting.clear()
        future = pool.submit(store.wait_after, session_id, stream_id, number, timeout, generation)
        assert store.waiting.wait(WAIT)
        return future

    yield start
    pool.shutdown(wait=True)


def test_an_event_store_numbers_its_stream_ends_and_never_replays_them(event_workers):
    store = event_workers()()
    first = store.store("s1", "p1", b"one")
    other = store.store("s1", "p2", b"elsewhere")
    second = store.store("s1", "p1", b"two")
    store.end_stream("s1", "p1")
    assert store.replay_after("s1", first) == (
        "p1",
        [(second, b"two")],
    )  # the end marker is no event
    started = time.monotonic()
    generation, start = store.claim_stream("s1", "p1")
    assert (generation, start) == (1, 0)  # the first follower; nothing delivered yet
    found = store.wait_after("s1", "p1", 0, WAIT, generation)
    assert (
        found.events == [(first, b"one"), (second, b"two")] and found.ended and not found.superseded
    )
    assert found.last > event_number(second)  # the marker is numbered, and was read
    assert store.wait_after("s1", "p1", event_number(second), WAIT, generation) == Followed(
        [], True, found.last, False
    )
    other_generation, _ = store.claim_stream("s1", "p2")
    assert store.wait_after("s1", "p2", 0, WAIT, other_generation) == Followed(
        [(other, b"elsewhere")], False, found.last, False
    )
    assert time.monotonic() - started < WAIT / 2  # each at once: there was something to answer
    assert store.wait_after(
        "s1", "p9", 0, WAIT, 1
    ).superseded  # never claimed: no follower of it may read


def test_a_follower_is_woken_by_another_workers_store_and_stream_end(event_workers, follow):
    worker = event_workers()
    one, two = worker(), worker()
    generation, _ = one.claim_stream("s1", "p1")
    waiting = follow(
        one, "s1", "p1", 0, 30.0, generation
    )  # far longer than the test waits: a wake-up
    try:
        stored = two.store("s1", "p1", b"hello")
        assert waiting.result(WAIT) == Followed(
            [(stored, b"hello")], False, event_number(stored), False
        )
        waiting = follow(one, "s1", "p1", event_number(stored), 30.0, generation)
        two.end_stream("s1", "p1")
        found = waiting.result(WAIT)
        assert found.ended and found.events == [] and found.last > event_number(stored)
    finally:
        one.wake("s1")
        one.leave_stream("s1", "p1", generation)


def test_a_newer_follower_supersedes_the_older_on_any_worker_at_once(event_workers, follow):
    worker = event_workers()
    one, two = worker(), worker()
    old, start = one.claim_stream("s1", "s")
    assert start == 0
    waiting = follow(one, "s1", "s", 0, 30.0, old)
    new, start = two.claim_stream("s1", "s")  # a GET on another worker (2025-11-25: no broadcast)
    assert new == old + 1 and start == 0
    assert waiting.result(WAIT) == Followed(
        [], False, 0, True
    )  # woken by the claim: not its timeout
    stored = one.store("s1", "s", b"only once")
    assert two.wait_after("s1", "s", 0, WAIT, new).events == [(stored, b"only once")]
    assert one.wait_after("s1", "s", 0, WAIT, old) == Followed([], False, 0, True)  # never sees it
    one.leave_stream("s1", "s", old)  # the superseded one leaving takes nothing of the newer's
    assert two.wait_after("s1", "s", event_number(stored), 0, new) == Followed(
        [], False, event_number(stored), False
    )
    two.leave_stream("s1", "s", new)
    generation, _ = two.claim_stream(
        "s2", "s"
    )  # another session: no earlier wake-up still on its way
    waiting = follow(two, "s2", "s", 0, 30.0, generation)
    one.forget("s2")  # the session ended: its follower on every worker ends at once
    assert waiting.result(WAIT) == Followed([], False, 0, True)
    two.leave_stream("s2", "s", generation)


def test_the_standalone_streams_cursor_outlives_its_followers_and_a_post_streams_does_not(
    event_workers,
):
    store = event_workers()()
    generation, start = store.claim_stream("s1", "s")
    sent = [store.store("s1", "s", b"a"), store.store("s1", "s", b"b")]
    found = store.wait_after("s1", "s", start, WAIT, generation)
    assert [event_id for event_id, _ in found.events] == sent
    assert (
        store.wait_after("s1", "s", found.last, 0, generation).events == []
    )  # delivered up to found.last
    store.leave_stream("s1", "s", generation)
    missed = store.store("s1", "s", b"sent while no one followed")
    again, start = store.claim_stream("s1", "s")
    assert (again, start) == (
        generation + 1,
        found.last,
    )  # a GET without Last-Event-ID starts there
    assert store.wait_after("s1", "s", start, WAIT, again).events == [
        (missed, b"sent while no one followed")
    ]
    store.leave_stream("s1", "s", again)
    first, _ = store.claim_stream("s1", "p1")
    newest, _ = store.claim_stream("s1", "p1")
    store.wait_after("s1", "p1", found.last, 0, newest)
    store.leave_stream("s1", "p1", first)  # not the newest: nothing of the stream's goes
    assert store.claim_stream("s1", "p1") == (newest + 1, found.last)
    store.leave_stream("s1", "p1", newest + 1)  # the newest: a POST stream's record goes with it
    assert store.claim_stream("s1", "p1") == (1, 0)


def test_a_follower_advances_past_other_streams_events(event_workers):
    """``last`` is the highest entry read, of any stream: the next wait starts after it (no entry
    read twice); more other-stream entries than one Redis read takes are read on at once."""
    store = event_workers(max_events=2000)()
    generation, _ = store.claim_stream("s1", "s")
    for n in range(600):
        store.store("s1", "p1", b"%d" % n)
    mine = store.store("s1", "s", b"mine")
    found = store.wait_after("s1", "s", 0, WAIT, generation)
    assert found == Followed([(mine, b"mine")], False, event_number(mine), False)
    more = [store.store("s1", "p1", b"more") for _ in range(3)]
    assert store.wait_after("s1", "s", found.last, 0, generation) == Followed(
        [], False, event_number(more[-1]), False
    )
    if isinstance(store, ObservedRedisEventStore):
        store.reads.clear()
        store.wait_after("s1", "s", event_number(more[-1]), 0, generation)
        assert store.reads == [event_number(more[-1])]  # one read, from there


def test_wake_ends_a_wait_and_another_sessions_store_does_not_answer_it(event_workers, follow):
    worker = event_workers()
    one, two = worker(), worker()
    generation, _ = one.claim_stream("s1", "p1")
    waiting = follow(one, "s1", "p1", 0, 30.0, generation)
    one.wake("s1")
    assert waiting.result(WAIT) == Followed([], False, 0, False)
    waiting = follow(one, "s1", "p1", 0, 0.3, generation)
    two.store("s2", "p1", b"another session's")
    other = two.store("s1", "p2", b"another stream's")
    assert waiting.result(WAIT) == Followed([], False, event_number(other), False)
    one.leave_stream("s1", "p1", generation)
    if isinstance(one, RedisEventStore):  # the last follower gone: no subscription left behind
        assert one.following("s1") == 0
        assert one.bus.wait_for(lambda: not one.bus.confirmed(one.channel("s1")), WAIT)


def test_a_redis_store_keeps_one_subscription_per_session_followed(redis_connections):
    """Made by the first claim, kept across waits (not one per wait), dropped with the last follower."""
    store = RedisEventStore(redis_connections())
    channel = store.channel("s1")
    try:
        standalone, _ = store.claim_stream("s1", "s")
        assert store.bus.confirmed(channel) and store.bus.subscribers(channel) == 1
        post, _ = store.claim_stream("s1", "p1")
        assert store.following("s1") == 2 and store.bus.subscribers(channel) == 1
        for _ in range(3):
            assert store.wait_after("s1", "s", 0, 0.01, standalone) == Followed([], False, 0, False)
            assert store.bus.subscribers(channel) == 1 and store.bus.confirmed(channel)
        store.leave_stream("s1", "s", standalone)
        assert store.following("s1") == 1 and store.bus.subscribers(channel) == 1
        store.leave_stream("s1", "p1", post)
        assert store.following("s1") == 0 and store.bus.subscribers(channel) == 0
        assert store.bus.wait_for(lambda: not store.bus.confirmed(channel), WAIT)
    finally:
        store.close()


def test_a_redis_follower_without_wake_ups_still_gets_every_event(redis_connections):
    """No subscription (``max_followed=0``: as when a wake-up is lost): the waiter reads again at its timeout."""
    deaf, writer = (
        RedisEventStore(redis_connections(), max_followed=0),
        RedisEventStore(redis_connections()),
    )
    try:
        generation, _ = deaf.claim_stream("s1", "p1")
        assert deaf.following("s1") == 1 and deaf.bus.subscribers(deaf.channel("s1")) == 0
        waiting = ThreadPoolExecutor(1).submit(deaf.wait_after, "s1", "p1", 0, 0.5, generation)
        stored = writer.store("s1", "p1", b"late")
        assert waiting.result(WAIT) == Followed(
            [(stored, b"late")], False, event_number(stored), False
        )
        deaf.leave_stream("s1", "p1", generation)
    finally:
        writer.close()
        deaf.close()


def test_a_redis_follower_without_redis_is_refused_or_waits_its_timeout(own_redis):
    connection = Connection(f"{own_redis.url}?namespace=follow", socket_timeout=1.0)
    store = RedisEventStore(connection)
    try:
        stored = store.store("s1", "p1", b"one")
        generation, _ = store.claim_stream("s1", "p1")
        own_redis.stop()
        with pytest.raises(
            EventStoreUnavailable
        ) as refused:  # 503: no follower starts at a wrong place
            store.claim_stream("s1", "s")
        assert isinstance(refused.value, ConnectionError) and store.following("s1") == 1
        failures, started = store.failures, time.monotonic()
        waiting = ThreadPoolExecutor(1).submit(store.wait_after, "s1", "p1", 0, 0.3, generation)
        assert waiting.result(WAIT) == Followed([], False, 0, False)  # no hang: ended within WAIT
        assert store.failures == failures + 1  # one read, failed, then the wait: no busy loop
        # It waited its timeout, not returning at once for its caller to ask again: a lower bound
        # that load cannot break (the deadline is taken inside the call, after `started`).
        assert time.monotonic() - started >= 0.3
        assert (
            store.end_stream("s1", "p1") is None
            and store.leave_stream("s1", "p1", generation) is None
        )
        assert store.following("s1") == 0
        own_redis.start()  # empty again (no persistence)
        assert store.replay_after("s1", stored) is None
        again = store.store("s1", "p1", b"two")
        generation, start = store.claim_stream("s1", "p1")
        assert (generation, start) == (1, 0)
        assert store.wait_after("s1", "p1", 0, WAIT, generation).events == [(again, b"two")]
    finally:
        store.close()
        connection.close()


def test_a_redis_event_store_replays_what_another_worker_stored(redis_connections):
    one, two = RedisEventStore(redis_connections()), RedisEventStore(redis_connections())
    first = one.store("s1", "p1", b"one")
    second = two.store("s1", "p1", b"two")  # numbered after the other worker's event
    third = one.store("s1", "p1", b"three")
    assert two.replay_after("s1", first) == ("p1", [(second, b"two"), (third, b"three")])
    assert one.replay_after("s1", second) == ("p1", [(third, b"three")])
    two.forget("s1")
    assert one.replay_after("s1", first) is None


def test_a_redis_event_store_expires_a_sessions_keys_after_their_last_use(redis_connections):
    connection = redis_connections()
    store = RedisEventStore(connection, expire_after=90)
    stored = store.store("s1", "p1", b"one")
    generation, _ = store.claim_stream("s1", "s")
    store.wait_after(
        "s1", "s", event_number(stored), 0, generation
    )  # the standalone cursor: at stored
    store.leave_stream("s1", "s", generation)
    keys = store.keys("s1")
    assert all(key.startswith(connection.namespace + ":") for key in keys)
    for name in keys:
        assert 0 < connection.client.pttl(name) <= 90_000  # refreshed by each store, claim and read
    connection.client.delete(keys[0], keys[1])  # the events and counter expired; the cursor did not
    assert store.claim_stream("s1", "s") == (
        generation + 1,
        0,
    )  # back to the (new) numbering's start
    store.forget("s1")
    assert connection.client.exists(*keys) == 0


def test_a_redis_byte_total_left_by_expired_events_does_not_trim_the_new_ones(redis_connections):
    """The bytes of a session's events are counted beside them, in its followers' hash; when its
    events expired and that hash did not (as above), the old total stayed, past ``max_bytes``, and
    every later store forgot all but its own event: nothing could be resumed for the session's
    life.  Now a store that leaves its event alone in the stream counts its bytes alone."""
    connection = redis_connections()
    store = RedisEventStore(connection, max_bytes=10)
    store.store("s1", "p1", b"x" * 50)
    generation, _ = store.claim_stream("s1", "s")
    store.leave_stream("s1", "s", generation)
    keys = store.keys("s1")
    connection.client.delete(keys[0], keys[1])  # the events and counter expired; the hash did not
    first = store.store("s1", "p1", b"one")
    second = store.store("s1", "p1", b"two")
    third = store.store("s1", "p1", b"three")
    assert store.replay_after("s1", first) == ("p1", [(second, b"two"), (third, b"three")])


def test_no_redis_key_or_channel_names_a_session_id(redis_connections):
    """2025-11-25 basic/security_best_practices §Session Hijacking: without authorization the id is
    the session's credential; keys and channels name a digest of it (a key listing, ``PUBSUB
    CHANNELS`` or a log line gives nothing away)."""
    connection = redis_connections()
    session_id = secrets.token_urlsafe(24)
    table, store = RedisSessionTable(connection, handshake_timeout=0.5), RedisEventStore(connection)
    try:
        table.add(session_id, {"version": "2025-11-25"})
        assert table.touch(session_id) and table.update(session_id, {"level": "debug"})
        event = store.store(session_id, "p1", b"x")
        generation, _ = store.claim_stream(session_id, "s")
        store.wait_after(session_id, "s", event_number(event), 0, generation)
        store.end_stream(session_id, "p1")
        names = [
            _text(key)
            for key in connection.client.scan_iter(match=connection.namespace + ":*", count=1000)
        ]
        names += [_text(channel) for channel in connection.client.pubsub_channels()]
        digest = session_digest(session_id)
        assert any(digest in name for name in names)  # the check looks at the session's names
        assert [name for name in names if session_id in name or session_id[:8] in name] == []
        assert (
            table.alive([session_id, "gone"]) == {session_id}
            and table.get(session_id)["state"]["level"] == "debug"
        )
        store.leave_stream(session_id, "s", generation)
    finally:
        store.close()


def test_a_redis_event_store_without_redis_degrades_and_says_so(caplog):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"redis://127.0.0.1:{probe.getsockname()[1]}/0"
    connection = Connection(url, socket_timeout=1.0)
    store = RedisEventStore(connection)
    session_id = secrets.token_urlsafe(24)
    try:
        with caplog.at_level(logging.WARNING, logger="mcp_ref.state.redis.http_stores"):
            unkept = store.store(session_id, "p1", b"one")
            assert (
                unkept.rpartition(".")[0] == "p1"
            )  # still names its stream: a live stream still sends it
            assert store.store(session_id, "p1", b"two") != unkept
            assert store.replay_after(session_id, unkept) is None
            assert (
                store.replay_after(session_id, "p1.1") is None
            )  # Redis not asked, or not reachable: no replay
            store.forget(session_id)  # no raise: the keys expire
        assert store.failures == 4
        warnings = [
            r.getMessage() for r in caplog.records if "event store: could not" in r.getMessage()
        ]
        assert len(warnings) == 1 and "lost unless sent live" in warnings[0]  # once a minute
        assert session_id[:8] not in warnings[0] and session_digest(session_id)[:8] in warnings[0]
    finally:
        connection.close()


def test_a_stream_resumes_over_http_from_the_redis_event_store(
    serve, raw_session, redis_connections
):
    """The transport takes the Redis store's ids as its own: GET with Last-Event-ID replays what was missed."""
    srv = serve(event_store=RedisEventStore(redis_connections()))
    session = raw_session(srv.mcp)
    session.initialize()
    arguments = {
        "name": "count_slowly",
        "arguments": {"steps": 3, "delay": 0.01},
        "_meta": {"progressToken": "r"},
    }
    request_id, response = session.call("tools/call", arguments, stream=True)
    reader = SseReader(response)
    priming = reader.next()
    everything = reader.messages(request_id, session.checker)
    response.close()
    replay = session.get(headers={"Last-Event-ID": priming["id"]})
    assert replay.status_code == 200
    rest = SseReader(replay).messages(None, session.checker)
    assert [m for _, m in rest] == [m for _, m in everything] and len(
        rest
    ) == 4  # 3 progress, the answer
    assert [eid for eid, _ in rest] == [eid for eid, _ in everything]


def test_every_refusal_has_its_status_in_the_one_table():
    kinds = [
        value
        for value in vars(statuses).values()
        if isinstance(value, type) and issubclass(value, HttpError)
    ]
    assert len(kinds) >= 10
    for kind in kinds:
        assert kind in STATUS_OF, kind
        assert kind("x").status == STATUS_OF[kind]
    assert statuses.InsufficientScope("x").status == "403 Forbidden"
    limited = statuses.refusal(LimitExceeded("slow down", data={"retryAfter": 2.2}), 7)
    assert limited.status == "429 Too Many Requests" and ("Retry-After", "3") in limited.headers
    assert limited.code == LIMIT_EXCEEDED and limited.request_id == 7
    assert modern_status(METHOD_NOT_FOUND) == "404 Not Found" and modern_status(-32603) == "200 OK"
    with pytest.raises(LookupError):
        statuses.status_of(ValueError("not a refusal"))


def test_a_session_expires_over_http_when_the_table_clock_moves(serve, raw_session):
    clock = Clock()
    srv = serve(session_table=MemorySessionTable(idle_timeout=60, clock=clock))
    session = raw_session(srv.mcp)
    session.initialize()
    assert session.call("ping")[1].status_code == 200
    clock.now += 61
    assert session.call("ping")[1].status_code == 404
    assert session.session_id not in srv.app.sessions


class Refuse(Middleware):
    """A user middleware: refuses one method before any session is looked up, answers one path."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_request(self, call):
        if call.path == "/hello":
            call.start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"hello"]
        return None

    def on_messages(self, environ, messages, resource_path):
        self.seen += [getattr(m, "method", None) for m in messages]
        if any(getattr(m, "method", None) == "tools/list" for m in messages):
            raise statuses.Forbidden("Forbidden: not today")


def test_a_middleware_in_the_chain_sees_each_request_and_refuses_with_the_tables_status(
    serve, raw_session
):
    srv = serve()
    mine = Refuse()
    assert [type(m).__name__ for m in srv.app.middleware] == [
        "Admission"
    ]  # no auth; the demo's rate limits
    srv.app.middleware.insert(0, mine)
    assert requests.get(srv.url + "/hello", timeout=TIMEOUT).text == "hello"
    session = raw_session(srv.mcp)
    session.initialize()
    assert session.call("ping")[1].status_code == 200
    refused = session.call("tools/list")[1]
    assert (
        refused.status_code == 403 and refused.json()["error"]["message"] == "Forbidden: not today"
    )
    assert mine.seen == ["ping", "tools/list"]


def test_the_auth_middleware_loads_only_with_auth():
    code = (
        "import sys\nfrom mcp_ref import Server\nfrom mcp_ref.http.server import McpWsgiApp\n"
        "app = McpWsgiApp(Server('x'))\n"
        "print(json.dumps(sorted(m for m in sys.modules if 'protected' in m or m.startswith('mcp_ref.oauth'))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", "import json\n" + code], capture_output=True, text=True, timeout=WAIT
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def imports_in(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            names.append("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return names


def test_no_transport_imports_the_workbench_and_the_http_server_is_split():
    """(Each module's size is held by test_layers' code-token cap, whatever the layout.)"""
    transports = PACKAGE.parent
    found = {
        str(p.relative_to(transports)): name
        for p in transports.rglob("*.py")
        for name in imports_in(p)
        if "workbench" in name
    }
    assert found == {}
    assert len(list(PACKAGE.glob("*.py"))) >= 8  # really split


def test_the_import_checker_can_fail(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("def f():\n    from ..workbench.wsgi_server import WsgiServer\n")
    assert imports_in(sample) == ["..workbench.wsgi_server"]
