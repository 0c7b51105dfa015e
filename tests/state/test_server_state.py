"""The state seams (mcp_ref.state.stores): a contract per interface, and a server really using them.

Each contract test takes its store from a fixture parametrized over implementations: in memory, and
on Redis (:mod:`mcp_ref.state.redis`, on the pytest worker's real ``redis-server``, each test
in a key namespace of its own: tests/redis_fixture.py); both must pass the same tests.  Time is a
:class:`Clock` the test moves: the Redis stores take an injected clock too (their scripts are then
given its time instead of Redis's), so no test sleeps.  What only Redis does (keys expiring on
Redis's clock, namespaces, a fork, faults) is in tests/state/test_redis_state.py.
"""

from __future__ import annotations

import threading

import pytest
from conftest import WAIT
from redis_fixture import redis_server, redis_url  # noqa: F401 - fixtures

from mcp_ref import Client, Context, LimitExceeded, McpError
from mcp_ref.errors import InvalidParams, RequestCancelled
from mcp_ref.extensions.ratelimit import RateLimiter
from mcp_ref.extensions.tasks import CANCELLED, COMPLETED, INPUT_REQUIRED, TaskRun, TaskStore
from mcp_ref.server import Server
from mcp_ref.server.input_required import Ask
from mcp_ref.state.stores import (
    MemoryBuckets,
    MemoryBus,
    MemoryCounters,
    MemoryTaskQueue,
    MemoryTaskRecords,
    page_cursor,
)

IMPLEMENTATIONS = ["memory", "redis"]


class Clock:
    """Monotonic seconds the test sets."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def connection(request):
    """A Redis connection in the test's own namespace (closed after the test)."""
    from mcp_ref.state.redis import Connection

    made = Connection(request.getfixturevalue("redis_url"))
    request.addfinalizer(made.close)
    return made


@pytest.fixture(params=IMPLEMENTATIONS)
def buckets(request, clock):
    if request.param == "redis":
        from mcp_ref.state.redis import RedisBuckets

        return RedisBuckets(connection(request), clock=clock)
    return MemoryBuckets(clock=clock, max_keys=100)


@pytest.fixture(params=IMPLEMENTATIONS)
def counters(request):
    if request.param == "redis":
        from mcp_ref.state.redis import RedisCounters

        return RedisCounters(connection(request))
    return MemoryCounters()


@pytest.fixture(params=["memory"])  # the Redis bus delivers asynchronously: tested on its own
def bus(request):
    return MemoryBus()


@pytest.fixture(params=IMPLEMENTATIONS)
def records(request, clock):
    if request.param == "redis":
        from mcp_ref.state.redis import RedisTaskRecords

        return RedisTaskRecords(connection(request), clock=clock)
    return MemoryTaskRecords(clock=clock)


@pytest.fixture(params=["memory"])  # always the process's own (State's docstring): no shared one
def queue(request):
    return MemoryTaskQueue(3)


class Recording:
    """Wraps a store and records the names of the operations called on it (and wakes waiters)."""

    def __init__(self, store) -> None:
        self.store = store
        self.calls: list[str] = []
        self.called = threading.Condition()

    def __getattr__(self, name: str):
        value = getattr(self.store, name)
        if not callable(value):
            return value

        def call(*args, **kwargs):
            result = value(*args, **kwargs)
            with self.called:
                self.calls.append(name)
                self.called.notify_all()
            return result

        return call

    def __setattr__(self, name, value):
        if name in ("store", "calls", "called"):
            object.__setattr__(self, name, value)
        else:
            setattr(self.store, name, value)

    def __len__(self) -> int:
        return len(self.store)

    def wait_for(self, name: str) -> bool:
        with self.called:
            return self.called.wait_for(lambda: name in self.calls, WAIT)


# -- buckets ----------------------------------------------------------------------------------------


def test_buckets_admit_a_burst_then_refill_with_the_clock(buckets, clock):
    assert [buckets.take("alice", 2, 60.0) for _ in range(2)] == [0.0, 0.0]
    assert buckets.take("alice", 2, 60.0) == pytest.approx(30.0)  # one token per 30 s
    assert buckets.take("bob", 2, 60.0) == 0.0  # keys are independent
    clock.now += 30.0
    assert buckets.take("alice", 2, 60.0) == 0.0
    assert buckets.take("alice", 2, 60.0) > 0.0


def test_buckets_take_from_several_in_one_call_stopping_at_the_first_refusal(buckets, clock):
    # one call (one round trip to a shared store) for a request under two limits: the server's, the tool's
    assert buckets.take_all([("server", 5, 60.0), ("tool", 1, 60.0)]) == (-1, 0.0)
    index, wait = buckets.take_all([("server", 5, 60.0), ("tool", 1, 60.0)])
    assert index == 1 and wait == pytest.approx(
        60.0
    )  # the tool's bucket is empty: a minute for one token
    assert [buckets.take("server", 5, 60.0) for _ in range(3)] == [0.0, 0.0, 0.0]  # its last three
    index, wait = buckets.take_all([("server", 5, 60.0), ("tool", 1, 60.0)])
    assert index == 0 and wait == pytest.approx(
        12.0
    )  # the server's is empty (taken 5 of 5): the tool's untouched
    clock.now += 60.0
    assert buckets.take_all([("server", 5, 60.0), ("tool", 1, 60.0)]) == (-1, 0.0)
    assert buckets.take_all([]) == (-1, 0.0)


def test_buckets_forget_refilled_ones_and_keep_their_bound(buckets, clock):
    if not isinstance(buckets, MemoryBuckets):
        pytest.skip(
            "in memory only: Redis forgets a bucket on its own clock (PEXPIRE, see "
            "test_redis_state.py) and is bounded by its maxmemory"
        )
    buckets.take("quiet", 1, 1.0)
    clock.now += 10.0  # refilled: indistinguishable from new
    buckets.take("other", 1, 1.0)
    assert len(buckets) == 1
    for n in range(500):
        buckets.take(f"k{n}", 5, 86400.0)
    assert len(buckets) <= 100


# -- counters ---------------------------------------------------------------------------------------


def test_counters_acquire_up_to_the_limit_and_release(counters):
    assert [counters.acquire("streams", 2) for _ in range(3)] == [True, True, False]
    assert counters.count("streams") == 2
    assert counters.release("streams") == 1
    assert counters.acquire("streams", 2)
    assert counters.acquire("any", None) and counters.count("any") == 1
    assert counters.release("any") == 0 and counters.release("any") == 0  # never below 0
    assert counters.count("never") == 0


def test_counters_acquire_is_atomic_under_contention(counters):
    admitted: list[bool] = []
    start = threading.Barrier(8)

    def racer() -> None:
        start.wait(WAIT)
        for _ in range(50):
            admitted.append(counters.acquire("race", 100))

    threads = [threading.Thread(target=racer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert admitted.count(True) == 100 and counters.count("race") == 100


def test_memory_counters_refuse_a_new_key_when_full():
    counters = MemoryCounters(max_keys=2)
    assert counters.acquire("a", None) and counters.acquire("b", None)
    assert not counters.acquire("c", None)  # full: refused, like a full count
    counters.release("a")  # back at 0: forgotten, room again
    assert counters.acquire("c", None)


# -- places tied to their holder (shared counters and held sets) ------------------------------------


def holders(request, clock, kind: str, **options):
    """Two Redis stores of ``kind`` on one namespace: two processes of one deployment (each its own
    holder token), on the test's clock, with a holder TTL of 5 s and no heartbeat of their own
    unless ``beat_every`` is given."""
    from mcp_ref.state.redis import RedisCounters, RedisHeldSets

    made = connection(request)
    kind_class = {"counters": RedisCounters, "held": RedisHeldSets}[kind]
    options = {"holder_ttl": 5.0, "beat_every": 3600.0, "clock": clock, **options}
    stores = (
        kind_class(made, **options),
        kind_class(made, holder_ttl=5.0, beat_every=3600.0, clock=clock),
    )
    for store in stores:
        request.addfinalizer(store.close)
    assert stores[0].token != stores[1].token
    return stores


@pytest.fixture
def redis_only(request):
    request.getfixturevalue("redis_url")  # skipped (failed under CI) without a redis-server


def test_a_holder_that_stops_beating_frees_its_places_and_a_beating_one_keeps_them(
    request, clock, redis_only
):
    # ``live`` beats every 10 ms (its real thread); ``dead`` never beats: a worker killed holding places
    live, dead = holders(request, clock, "counters", beat_every=0.01)
    assert live.acquire("streams", 3) and dead.acquire("streams", 3) and dead.acquire("streams", 3)
    assert not live.acquire("streams", 3) and live.count("streams") == 3
    clock.now += 4.0
    with live.beaten:  # a beat after the clock moved: live's places last until 1009
        seen = live.beats
        assert live.beaten.wait_for(lambda: live.beats > seen + 1, WAIT)
    clock.now += 2.0  # 1006: dead's last word (1000) is 6 s old, past its 5 s
    assert live.count("streams") == 1  # dead's two places are gone, live's stays
    assert (
        live.acquire("streams", 3) and live.acquire("streams", 3) and not live.acquire("streams", 3)
    )


def test_a_holder_that_comes_back_says_its_places_again(request, clock, redis_only):
    # Redis unreachable (or the process stalled) longer than the TTL: the others dropped its places;
    # its next beat writes its whole holding again, so the cap counts them once more
    one, other = holders(request, clock, "counters")
    assert one.acquire("streams", 2)
    clock.now += 6.0
    assert other.count("streams") == 0  # one seemed dead
    one.beat()
    assert other.count("streams") == 1 and not (
        other.acquire("streams", 2) and other.acquire("streams", 2)
    )
    assert one.release("streams") == 1  # one's place back; other's one place left


def test_a_holder_that_closes_gives_its_places_back_at_once(request, clock, redis_only):
    one, other = holders(request, clock, "counters")
    assert one.acquire("streams", 2) and one.acquire("any", None)
    one.close()
    assert other.count("streams") == 0 and other.count("any") == 0


def test_held_sets_count_distinct_members_over_every_holder(request, clock, redis_only):
    here, there = holders(request, clock, "held")
    assert here.hold("alice", {"a", "b"}, 3) == (True, 2)
    assert there.hold("alice", {"b", "c"}, 3) == (True, 3)  # b counts once
    assert there.hold("alice", {"d"}, 3) == (False, 3)  # refused: nothing added
    assert here.hold("alice", {"a", "c"}, 3) == (True, 3)  # held already, somewhere: no room needed
    assert here.hold("bob", {"d"}, 3) == (True, 1)  # another key
    assert here.members("alice") == {"a", "b", "c"}
    here.release("alice", {"a", "b", "c"})
    assert there.members("alice") == {"b", "c"}  # there still holds b and c
    assert here.hold("alice", {"d"}, 3) == (True, 3)
    there.hold_only({"bob": {"e"}})  # there holds exactly this now: its alice members go
    assert here.members("alice") == {"d"} and here.members("bob") == {"d", "e"}


def test_a_dead_holders_members_go(request, clock, redis_only):
    here, there = holders(request, clock, "held")
    assert there.hold("alice", {"a", "b", "c"}, 3)[0]
    assert not here.hold("alice", {"d"}, 3)[0]
    clock.now += 6.0  # there never beat
    assert here.hold("alice", {"d"}, 3) == (True, 1) and here.members("alice") == {"d"}


def test_held_sets_take_the_last_place_once_under_contention(request, clock, redis_only):
    stores = holders(request, clock, "held")
    won: list[str] = []
    start = threading.Barrier(8)

    def racer(n: int) -> None:
        start.wait(WAIT)
        if stores[n % 2].hold("alice", {f"r{n}"}, 5)[0]:
            won.append(f"r{n}")

    threads = [threading.Thread(target=racer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert len(won) == 5 and stores[0].members("alice") == set(won)


def test_a_memory_state_has_no_held_sets():
    from mcp_ref.state.stores import MemoryState

    assert (
        MemoryState().held_sets() is None
    )  # one process: its connections and streams are the truth


# -- the bus ----------------------------------------------------------------------------------------


def test_the_bus_delivers_copies_to_each_subscriber_until_it_unsubscribes(bus):
    got_a: list[dict] = []
    got_b: list[dict] = []
    stop_a = bus.subscribe("changes", got_a.append)
    bus.subscribe("changes", got_b.append)
    bus.subscribe("other", lambda m: pytest.fail("wrong channel"))
    message = {"kind": "list_changed", "list": "tools"}
    assert bus.publish("changes", message) == 2
    got_a[0]["list"] = "changed by a"
    assert got_b == [message]  # each its own copy
    stop_a()
    bus.publish("changes", {"n": 2})
    assert len(got_a) == 1 and got_b[-1] == {"n": 2}


def test_a_failing_subscriber_does_not_stop_the_others(bus):
    got: list[dict] = []

    def broken(message: dict) -> None:
        raise RuntimeError("broken subscriber")

    bus.subscribe("changes", broken)
    bus.subscribe("changes", got.append)
    bus.publish("changes", {"n": 1})
    assert got == [{"n": 1}]


def test_the_memory_bus_bounds_subscribers_per_channel():
    bus = MemoryBus(max_subscribers=1)
    stop = bus.subscribe("c", lambda m: None)
    with pytest.raises(OverflowError):
        bus.subscribe("c", lambda m: None)
    stop()
    bus.subscribe("c", lambda m: None)
    assert bus.subscribers("c") == 1


# -- task records -----------------------------------------------------------------------------------


def record(task_id: str, caller: str = "alice", status: str = "working") -> dict:
    return {
        "taskId": task_id,
        "owner": caller,
        "caller": caller,
        "status": status,
        "statusMessage": None,
        "createdAt": "t",
        "lastUpdatedAt": "t",
        "ttlMs": 1000,
        "pollIntervalMs": 10,
        "started": False,
        "cancelRequested": False,
        "result": None,
        "error": None,
        "inputRequests": {},
        "inputResponses": {},
    }


def create(records, task_id: str, caller: str = "alice", **bounds) -> str:
    options = {"ttl": 60.0, "caller": caller, "max_per_caller": 2, "max_total": 3, **bounds}
    return records.create(task_id, record(task_id, caller), **options)


def test_records_create_within_their_bounds_atomically(records):
    assert create(records, "a1") == create(records, "a2") == "created"
    assert create(records, "a3") == "caller_full"  # alice has 2 unfinished
    assert create(records, "b1", "bob") == "created"
    assert create(records, "b2", "bob") == "full"  # 3 held, none finished
    assert records.count() == 3 and records.count("alice") == 2
    assert records.transition("a1", {"status": COMPLETED}) is not None
    assert records.count("alice") == 1
    assert create(records, "b2", "bob") == "created"  # the oldest finished one made room
    assert records.get("a1") is None and records.count() == 3


def test_a_full_store_makes_room_with_the_creating_callers_own_finished_task_first(records):
    """A full store dropped the oldest finished task of anyone: one caller's stream of quick tasks
    wiped out another caller's results before their ttl (its tasks/result then said "no task").
    Now the caller's own oldest finished task goes first; another's only when it has none."""
    create(records, "b1", "bob")
    records.transition("b1", {"status": COMPLETED})
    create(records, "a1")
    records.transition("a1", {"status": COMPLETED})
    create(records, "a2")
    assert create(records, "a3") == "created"  # full: alice's a1 goes, bob's older b1 stays
    assert records.get("a1") is None and records.get("b1")["status"] == COMPLETED
    assert create(records, "c1", "carol") == "created"  # carol has none: the oldest finished, b1
    assert records.get("b1") is None and records.get("a3") is not None


def test_a_record_read_is_a_copy_and_a_terminal_one_never_changes(records):
    create(records, "t")
    got = records.get("t")
    got["status"] = "tampered"
    assert records.get("t")["status"] == "working"
    assert records.transition("t", {"statusMessage": "half"})["statusMessage"] == "half"
    assert (
        records.transition("t", {"status": CANCELLED}, when={"started": [True]}) is None
    )  # condition failed
    assert (
        records.transition("t", {"status": CANCELLED}, when={"started": [False]})["status"]
        == CANCELLED
    )
    for change in ({"status": COMPLETED}, {"statusMessage": "again"}):
        assert records.transition("t", change) is None
    assert not records.put_inputs("t", {"k": {"method": "roots/list"}})
    assert records.put_responses("t", {"k": {}}) == []
    assert (
        records.get("t")["status"] == CANCELLED and records.transition("missing", {"x": 1}) is None
    )


def test_records_carry_input_requests_and_responses(records):
    create(records, "t")
    assert records.put_inputs("t", {"a": {"method": "roots/list"}, "b": {"method": "roots/list"}})
    assert records.get("t")["status"] == INPUT_REQUIRED
    assert records.put_responses("t", {"a": {"roots": []}, "unknown": {}}) == [
        "a"
    ]  # others ignored
    assert records.get("t")["status"] == INPUT_REQUIRED  # b is still outstanding
    assert records.put_responses("t", {"b": {"roots": [1]}}) == ["b"]
    assert records.get("t")["status"] == "working" and records.get("t")["inputRequests"] == {}
    assert records.take_responses("t", ["a", "b"]) == {"a": {"roots": []}, "b": {"roots": [1]}}
    assert records.take_responses("t", ["a"]) == {}
    records.put_inputs("t", {"c": {"method": "roots/list"}})
    records.withdraw_inputs("t", ["c"])
    assert records.get("t")["status"] == "working"


def test_records_expire_with_the_clock(records, clock):
    create(records, "short", ttl=5.0)
    create(records, "forever", ttl=None)
    clock.now += 4.9
    assert records.get("short") is not None
    clock.now += 0.2
    assert records.get("short") is None and records.count() == 1  # a read forgets it
    # In memory the next sweep names it, so the process running it stops it; on Redis that process
    # is told by its lease instead (renew_lease: False), whichever process read the record.
    assert records.sweep() == (["short"] if isinstance(records, MemoryTaskRecords) else [])
    assert records.sweep() == []
    create(records, "next", ttl=1.0)
    clock.now += 2.0
    assert records.sweep() == ["next"] and records.get("forever") is not None
    assert records.delete("forever") and not records.delete("forever")


# -- task records: listing (2025-11-25 tasks/list) --------------------------------------------------


def owned(
    records,
    task_id: str,
    owner: str | None,
    ttl: float | None = 60.0,
    status: str = "working",
    **bounds,
) -> None:
    """A record of ``owner`` (its caller too), with no bound in the way unless given."""
    options = {"max_per_caller": None, "max_total": 1000, **bounds}
    assert (
        records.create(task_id, record(task_id, owner, status), ttl=ttl, caller=owner, **options)
        == "created"
    )


def pages(records, owner: str | None, limit: int) -> list[list[str]]:
    """Every page of ``owner``'s listing, as task ids, checking that none is over ``limit``."""
    found, cursor = [], None
    for _page in range(100):  # a bound: a listing that never ends fails here
        page, cursor = records.list(owner, cursor, limit)
        assert len(page) <= max(1, limit)
        found.append([listed["taskId"] for listed in page])
        if cursor is None:
            return found
    raise AssertionError("the listing never ended")


def index_entries(records) -> int:
    """What the listing's indexes hold (two per record): in memory, or the Redis keys and fields."""
    if isinstance(records, MemoryTaskRecords):
        return records.index_size()
    client, key = records.connection.client, records.connection.key
    return client.hlen(key("tasks", "owners")) + sum(
        client.zcard(index) for index in client.scan_iter(match=key("tasks", "owner", "*"))
    )


def test_records_list_pages_an_owners_records_in_creation_order(records):
    for n in range(7):  # three owners interleaved
        owned(records, f"a{n}", "alice")
        if n % 2:
            owned(records, f"b{n}", "bob")
        if n % 3 == 0:
            owned(records, f"n{n}", None)
    assert pages(records, "alice", 3) == [["a0", "a1", "a2"], ["a3", "a4", "a5"], ["a6"]]
    assert pages(records, "alice", 7) == [
        [f"a{n}" for n in range(7)]
    ]  # no empty page after a full one
    assert pages(records, "bob", 2) == [["b1", "b3"], ["b5"]]
    assert pages(records, None, 1) == [
        ["n0"],
        ["n3"],
        ["n6"],
    ]  # None: the records whose owner is None
    assert pages(records, "carol", 5) == [[]]
    assert pages(records, "alice", 0) == [[f"a{n}"] for n in range(7)]  # a limit is at least 1
    listed, _ = records.list("bob", None, 10_000)  # and at most MAX_PAGE
    assert listed == [records.get("b1"), records.get("b3"), records.get("b5")]  # whole records
    listed[0]["status"] = "tampered"
    assert records.get("b1")["status"] == "working"  # a copy


def test_records_list_never_shows_an_expired_record(records, clock):
    owned(records, "a0", "alice", ttl=5.0)
    owned(records, "a1", "alice", ttl=None)
    owned(records, "a2", "alice", ttl=5.0)
    owned(records, "a3", "alice", ttl=60.0)
    first, cursor = records.list("alice", None, 2)
    assert [listed["taskId"] for listed in first] == ["a0", "a1"]
    clock.now += 5.0
    rest, end = records.list("alice", cursor, 2)  # the cursor was made before a2 expired
    assert [listed["taskId"] for listed in rest] == ["a3"] and end is None
    assert pages(records, "alice", 10) == [["a1", "a3"]]
    assert records.count() == 2  # listing forgot what it found expired


def test_records_list_refuses_a_bad_cursor_with_invalid_params(records):
    owned(records, "a0", "alice")
    owned(records, "a1", "alice")
    owned(records, "b0", "bob")
    _, alices = records.list("alice", None, 1)
    _, nobodys = records.list(None, None, 1)  # owner None has no record: no cursor
    assert alices is not None and nobodys is None
    number, _, tag = alices.partition(".")
    bad = [
        "",
        "x",
        "1",
        "1.",
        ".1",
        f"-1.{tag}",
        f"0.{tag}",
        f"1e3.{tag}",
        f"{'9' * 16}.{tag}",
        f"{number}.{tag}x",
        f"{number}.{tag[:-1]}",
        page_cursor("alice", 99),  # a position never reached
        page_cursor("bob", int(number)),
        page_cursor(None, int(number)),
        12,
        ["a0"],
    ]
    for cursor in bad:
        with pytest.raises(InvalidParams) as refused:
            records.list("alice", cursor, 1)
        assert refused.value.code == -32602, cursor
    with pytest.raises(InvalidParams):
        records.list("bob", alices, 1)  # another owner's cursor
    assert [listed["taskId"] for listed in records.list("alice", alices, 1)[0]] == [
        "a1"
    ]  # the good one


def test_a_deleted_records_cursor_pages_on_after_its_place(records):
    for n in range(5):
        owned(records, f"a{n}", "alice")
    first, cursor = records.list("alice", None, 2)
    assert [listed["taskId"] for listed in first] == ["a0", "a1"]
    assert records.delete("a1") and records.delete("a2")  # the cursor's record, and the next one
    rest, end = records.list("alice", cursor, 2)
    assert [listed["taskId"] for listed in rest] == ["a3", "a4"] and end is None
    _, after_a0 = records.list("alice", None, 1)
    records.delete("a0")
    page, after_a3 = records.list("alice", after_a0, 1)
    assert page == [records.get("a3")] and after_a3 is not None
    assert records.list("alice", after_a3, 1) == ([records.get("a4")], None)
    owned(records, "a1", "alice")  # an id made again is a new record: last in the order
    assert pages(records, "alice", 10) == [["a3", "a4", "a1"]]


def test_the_listing_index_goes_with_the_records(records, clock):
    secret = "http-session-id-" + "s3cr3t" * 8  # an owner may be a session id: no key names it
    for n in range(6):
        owned(records, f"s{n}", secret, ttl=5.0 if n % 2 else None, max_total=9)
        owned(records, f"a{n}", "alice", ttl=None, status=COMPLETED, max_total=9)
    assert index_entries(records) == 2 * records.count() == 2 * 9
    assert pages(records, "alice", 10) == [
        ["a3", "a4", "a5"]
    ]  # full, the oldest finished records made room
    if not isinstance(records, MemoryTaskRecords):
        client = records.connection.client
        assert not [
            key for key in client.scan_iter(match=records.connection.key("*")) if b"s3cr3t" in key
        ]
    clock.now += 6.0
    assert sorted(records.sweep()) == ["s1", "s3", "s5"]
    for n in (0, 2, 4):
        assert records.delete(f"s{n}")
    for n in (3, 4, 5):
        records.delete(f"a{n}")
    assert records.count() == 0 and index_entries(records) == 0
    assert pages(records, secret, 5) == [[]]


def test_a_record_redis_forgot_on_its_own_is_not_listed_and_leaves_the_index(
    request, clock, redis_only
):
    # Redis expires a record's keys on its own clock (or evicts them under maxmemory) before the
    # expiry index says so: the listing checks each record it pages over, and forgets a gone one.
    from mcp_ref.state.redis import RedisTaskRecords

    records = RedisTaskRecords(connection(request), clock=clock)
    for n in range(4):
        owned(records, f"a{n}", "alice")
    records.connection.client.delete(records.connection.key("task", "a1"))
    assert pages(records, "alice", 2) == [["a0", "a2"], ["a3"]]
    assert index_entries(records) == 2 * 3 == 2 * records.count()


# -- the queue --------------------------------------------------------------------------------------


def test_the_queue_is_first_in_first_out_and_bounded(queue):
    assert all(queue.push(f"t{n}") for n in range(3))
    assert not queue.push("t3") and len(queue) == 3  # full: refused
    assert queue.discard("t1") and not queue.discard("t1")
    assert [queue.pop(), queue.pop(), queue.pop()] == ["t0", "t2", None]


# -- tasks: the record is the truth -----------------------------------------------------------------


def parked_work(store: TaskStore, task, outcome: list):
    """A task's work as ``begin`` runs it: ask for ``go``, then finish with the answer."""

    def work() -> None:
        stop = store.watch(task)
        try:
            if task.begin_run():
                try:
                    (answer,) = TaskRun(task, {}, store).ask(
                        [
                            Ask(
                                "go",
                                "elicitation/create",
                                {"message": "go?"},
                                lambda value: value["action"],
                            )
                        ]
                    )
                    task.finish(COMPLETED, result={"content": [{"type": "text", "text": answer}]})
                except RequestCancelled:
                    task.finish(CANCELLED)
        finally:
            with task.lock:  # the test waits on the task's condition for this
                outcome.append(task.status)
                task.lock.notify_all()
            stop()
            store.ended(task)

    return work


def test_another_process_answers_tasks_get_update_and_cancel_from_the_records(records):
    # Two stores sharing records and a bus are two processes of one server: the task runs in the
    # first; the second, which has only the record, shows it, answers it and cancels another.
    records, bus = Recording(records), MemoryBus()
    here = TaskStore(records=records, bus=bus, workers=2)
    there = TaskStore(records=records, bus=bus)
    outcome: list[str] = []
    task = here.create("alice")
    here.run(parked_work(here, task, outcome), task.id)
    assert records.wait_for("put_inputs")
    seen = there.find(task.id, "alice")
    assert seen is not task and seen.to_wire()["status"] == INPUT_REQUIRED
    assert seen.to_wire()["inputRequests"] == {
        "go": {"method": "elicitation/create", "params": {"message": "go?"}}
    }
    with pytest.raises(McpError) as invalid:
        there.update(seen, {"go": "not an object"})
    assert invalid.value.code == -32602
    there.update(seen, {"go": {"action": "accept", "content": {}}})
    with task.lock:
        assert task.lock.wait_for(lambda: task.status == COMPLETED, WAIT)
    assert there.find(task.id, "alice").to_wire()["result"]["content"][0]["text"] == "accept"

    other = here.create("alice")
    records.calls.clear()
    here.run(parked_work(here, other, outcome), other.id)
    assert records.wait_for("put_inputs")
    there.cancel(there.find(other.id, "alice"))
    assert there.find(other.id, "alice").status == CANCELLED  # at once: it was parked for input
    with other.lock:
        assert other.lock.wait_for(lambda: len(outcome) == 2, WAIT)
    assert outcome == [COMPLETED, CANCELLED]


def test_expired_task_records_are_gone_for_every_process(records, clock):
    store = TaskStore(records=records, ttl_ms=1000)
    task = store.create("alice")
    clock.now += 1.5
    with pytest.raises(McpError) as gone:
        TaskStore(records=records).find(task.id, "alice")
    assert gone.value.code == -32602 and len(store) == 0


def test_a_task_whose_record_a_read_found_expired_is_stopped(clock):
    """An expired task's record that a read forgot (a tasks/list after its TTL) still stops the
    handler this process runs for it (SEP-2663: after its TTL a server "MAY ... delete it"): the
    next sweep names it (here tasks/get's).  It was lost: only a record still held was swept."""
    store = TaskStore(records=MemoryTaskRecords(clock=clock), ttl_ms=1000)
    task = store.create("alice")
    running = threading.Event()

    def work() -> None:
        running.set()
        task.cancelled.wait(WAIT)

    store.run(work, task.id)
    assert running.wait(WAIT)
    clock.now += 1.5
    assert store.records.list("alice", None, 10) == ([], None)  # a tasks/list forgets it
    assert not task.cancelled.is_set()
    with pytest.raises(McpError) as gone:
        store.find(task.id, "alice")  # a tasks/get after it: the handler stops
    assert gone.value.code == -32602
    assert task.cancelled.is_set()


def test_a_full_run_queue_refuses_new_work():
    store = TaskStore(queue=MemoryTaskQueue(0))
    with pytest.raises(McpError) as busy:
        store.run(lambda: None, "t1")
    assert busy.value.code == -31000


# -- a server using the stores it is given ----------------------------------------------------------


def test_a_servers_rate_limits_are_counted_in_the_store_it_is_given(buckets, clock):
    server = Server("limited")

    @server.tool(rate_limit="2/minute")  # counted for tools/call of echo only
    def echo(text: str) -> str:
        return text

    buckets = Recording(buckets)
    server.policy.limiter = RateLimiter(store=buckets)
    with Client.in_memory(server) as client:
        buckets.calls.clear()
        assert client.call_tool("echo", {"text": "a"}).text == "a"
        assert buckets.calls == [
            "take_all"
        ]  # one call of the store per request, whatever its limits
        client.call_tool("echo", {"text": "b"})
        with pytest.raises(LimitExceeded):
            client.call_tool("echo", {"text": "c"})
        clock.now += 60.0  # the store's clock: the window passed
        assert client.call_tool("echo", {"text": "d"}).text == "d"


def test_a_servers_tasks_are_answered_from_the_records_it_is_given(records):
    server = Server("tasks")

    @server.tool(task="optional")
    def confirm(ctx: Context) -> str:
        ctx.start_task()
        return "done"

    records = Recording(records)
    server.tasks = TaskStore(records=records, poll_interval_ms=10)
    with Client.in_memory(server) as client:
        assert client.call_tool("confirm", task=True).text == "done"
    assert {"create", "get", "transition"} <= set(records.calls)


def test_list_changes_and_resource_updates_travel_on_the_bus_it_is_given():
    server = Server("changes")

    @server.resource("note://a")
    def note() -> str:
        return "a"

    server.add_tool(lambda: "x", name="first")
    bus = Recording(MemoryBus())
    server.bus = bus
    heard: list[str] = []
    got = threading.Event()

    def on_list_changed(kind: str) -> None:
        heard.append(kind)
        got.set()

    updated = threading.Event()
    with Client.in_memory(
        server, on_list_changed=on_list_changed, on_resource_updated=lambda uri: updated.set()
    ) as client:
        client.subscribe("note://a")
        server.add_tool(lambda: "x", name="late")
        assert got.wait(WAIT) and heard == ["tools"]
        server.notify_resource_updated("note://a")
        assert updated.wait(WAIT)
    assert bus.calls.count("publish") == 2


def test_a_workers_start_is_not_announced_to_the_other_workers_clients():
    """Two workers of one deployment share a bus.  What the second registers before it serves anyone is
    its start (every worker registers the same at import), not a change: the first worker's clients
    are not told.  What it registers while it serves is announced to them."""
    bus = MemoryBus()
    first = Server("worker")
    first.add_tool(lambda: "x", name="a")

    @first.resource("note://a")
    def note() -> str:
        return "a"

    first.bus = bus
    heard: list[str] = []
    updated = threading.Event()
    with Client.in_memory(
        first, on_list_changed=heard.append, on_resource_updated=lambda uri: updated.set()
    ) as client:
        client.subscribe("note://a")
        second = Server("worker")
        second.bus = bus
        second.add_tool(lambda: "x", name="a")  # its start
        with Client.in_memory(second) as its_client:
            assert [tool.name for tool in its_client.list_tools()] == ["a"]
            second.add_tool(lambda: "x", name="late")  # a change, while it serves
            second.notify_resource_updated(
                "note://a"
            )  # after it on the bus: once this arrives, so has the change
            assert updated.wait(WAIT)
    assert heard == ["tools"]


def test_a_worker_whose_app_is_made_announces_what_it_registers_before_serving_anyone():
    """The start ends when the HTTP application is made: a tool registered after it (an admin route, a
    thread) is a change, announced to the other workers' clients though this worker served no one yet."""
    bus = MemoryBus()
    first = Server("worker")
    first.add_tool(lambda: "x", name="a")
    first.bus = bus
    heard = threading.Event()
    with Client.in_memory(first, on_list_changed=lambda kind: kind == "tools" and heard.set()):
        second = Server("worker")
        second.bus = bus
        second.add_tool(lambda: "x", name="a")  # its start
        app = second.wsgi_app(stateless=True)
        try:
            second.add_tool(lambda: "x", name="late")
            assert heard.wait(WAIT)
        finally:
            app.close()


def test_the_state_is_chosen_by_url_and_a_wrong_one_is_refused_without_its_password():
    from mcp_ref.server.shorthand import state_from
    from mcp_ref.state.stores import MemoryState

    assert isinstance(state_from("memory"), MemoryState)
    mine = MemoryState()
    assert state_from(mine) is mine
    with pytest.raises(ValueError, match="redis://host:port/db") as refused:
        state_from("postgres://user:hunter2@db.example:5432/x")
    assert "hunter2" not in str(refused.value)


def test_a_plain_server_has_no_shared_state_and_loads_no_store(monkeypatch):

    from mcp_ref import Server

    monkeypatch.delenv("MCP_REF_STATE", raising=False)
    server = Server("plain")
    assert server.shared_state is None
    monkeypatch.setenv("MCP_REF_STATE", "memory")
    assert type(Server("from-the-environment").shared_state).__name__ == "MemoryState"
