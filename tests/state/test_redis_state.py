"""What only the Redis stores do (mcp_ref.state.redis.stores): namespaced keys that expire on
Redis's clock, a lease, a pool of each process's own after a fork, and faults (Redis stopped,
stalled, restarted).  The contract every store keeps is tests/state/test_server_state.py, run on both.

The fault tests start a ``redis-server`` of their own (tests/redis_fixture.py's RedisServer), so
stopping it disturbs no other test of the pytest worker.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time

import pytest
from conftest import WAIT, LoggedOnce, run_threads
from redis_fixture import (  # noqa: F401 - fixtures
    RedisServer,
    own_redis,
    redis_server,
    redis_url,
    required_binary,
    wait_for_writes,
)

from mcp_ref import Client, Context, McpError, ServerBusy
from mcp_ref.extensions.client_tasks import EXTENSION
from mcp_ref.extensions.tasks import COMPLETED, FAILED, TaskStore
from mcp_ref.server import Server
from mcp_ref.server.shorthand import state_from
from mcp_ref.state.redis import (
    Connection,
    RedisBuckets,
    RedisCounters,
    RedisHeldSets,
    RedisState,
    RedisTaskRecords,
    stores,
)

#: What a request that may become a task declares (the 2026-07-28 tasks extension).
TASKS = (EXTENSION,)


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


def create(records, task_id: str, caller: str = "alice", ttl: float | None = 60.0) -> str:
    return records.create(
        task_id, record(task_id, caller), ttl=ttl, caller=caller, max_per_caller=5, max_total=10
    )


@pytest.fixture
def connection(redis_url):
    made = Connection(redis_url)
    yield made
    made.close()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# -- keys: namespaced, and gone once they mean nothing ------------------------------------------------


@pytest.mark.parametrize("namespace", ["", "two words", "line\nbreak", "{hash}"])
def test_a_namespace_that_could_not_name_keys_is_refused_at_once(namespace):
    from urllib.parse import quote

    with pytest.raises(ValueError, match="namespace"):
        Connection(f"redis://127.0.0.1:1/0?namespace={quote(namespace)}")


def test_the_namespace_is_taken_out_of_the_url_and_the_rest_kept():
    from mcp_ref.state.redis.connection import split_url

    assert split_url("redis://:pw@host:6380/2?namespace=app&socket_keepalive=1") == (
        "redis://:pw@host:6380/2?socket_keepalive=1",
        "app",
    )
    assert split_url("redis://host/0")[1] == "mcp_ref"
    # a socket's URL keeps its empty authority: redis-py reads only unix:///path
    assert split_url("unix:///run/redis.sock?db=1&namespace=app") == (
        "unix:///run/redis.sock?db=1",
        "app",
    )
    assert Connection("unix:///run/redis.sock?namespace=app").url == "unix:///run/redis.sock"


@pytest.mark.parametrize(
    "url",
    [
        "redis://:Right/Pass@127.0.0.1:6379/0",  # '/' unencoded: the host ends there
        "redis://:Hash#Secret@127.0.0.1:6379/0?namespace=app",  # '#': the rest is a fragment
        "redis://admin:Right/Pass@127.0.0.1:6379/0",
        # what redis-py reads without an error, but wrongly: "6380" as the port, no host
        "redis://:6380/Secret@127.0.0.1:6379/0",
        # '?': the rest is a query, which a rebuilt URL writes back with "@" as "%40"
        "redis://:Right?Pass@127.0.0.1:6379/0",
    ],
)
def test_a_url_redis_cannot_read_fails_the_start_and_names_no_part_of_the_password(url):
    # redis-py read the URL only at the first command: the request got no answer, and the log's
    # traceback said "Port could not be cast to integer value as 'Right'"
    import traceback

    with pytest.raises(ValueError) as refused:
        Server("bad-url", state=url).wsgi_app()  # the HTTP app is made at start
    said = "".join(traceback.format_exception(refused.value))
    assert "not a usable Redis URL" in said and "127.0.0.1:6379/0" in said
    assert "percent-encode" in said
    for part in ("Right", "Pass", "Hash", "Secret", "admin", "6380"):
        assert part not in said
    assert refused.value.__context__ is None and refused.value.__cause__ is None


def test_two_namespaces_on_one_redis_never_meet(redis_server):
    one = Connection(f"{redis_server.url}?namespace=ns-one-{os.getpid()}")
    two = Connection(f"{redis_server.url}?namespace=ns-two-{os.getpid()}")
    try:
        assert RedisBuckets(one).take("k", 1, 60.0) == 0.0
        assert RedisBuckets(two).take("k", 1, 60.0) == 0.0  # its own bucket: full
        assert RedisCounters(one).acquire("c", 1) and RedisCounters(two).acquire("c", 1)
        assert create(RedisTaskRecords(one), "t") == "created"
        assert RedisTaskRecords(two).get("t") is None and RedisTaskRecords(two).count() == 0
        keys = [key.decode() for key in one.client.scan_iter(match=f"ns-one-{os.getpid()}:*")]
        assert keys and all(key.startswith(f"ns-one-{os.getpid()}:") for key in keys)
        assert len(RedisBuckets(one)) == 1
    finally:
        one.close()
        two.close()


def test_a_bucket_expires_once_it_would_be_full_again(connection):
    buckets = RedisBuckets(connection)
    key = connection.key("bucket", "alice")

    def redis_now() -> float:  # the buckets' clock
        seconds, microseconds = connection.client.time()
        return seconds + microseconds / 1e6

    began = redis_now()
    buckets.take("alice", 10, 60.0)  # one token of 10 gone: full again in 6 s
    assert 5000 < connection.client.pttl(key) <= 6000
    for _ in range(9):
        buckets.take("alice", 10, 60.0)
    assert 59000 < connection.client.pttl(key) <= 60000  # empty: full again in a minute
    wait = buckets.take("alice", 10, 60.0)  # a token comes 6 s after the first was taken
    passed = redis_now() - began  # on Redis's clock, however loaded the machine
    assert 6.0 - passed - 0.001 <= wait <= 6.0


def test_a_refilled_bucket_is_forgotten_on_redis_clock(connection):
    # Waited for by Redis's own expiry event (keyspace notifications), not by sleeping.
    client = connection.client
    client.config_set("notify-keyspace-events", "Ex")
    expired = client.pubsub(ignore_subscribe_messages=True)
    try:
        expired.subscribe("__keyevent@0__:expired")
        buckets = RedisBuckets(connection)
        assert buckets.take("quick", 1, 0.05) == 0.0
        assert buckets.take("quick", 1, 0.05) > 0.0  # empty now
        key = connection.key("bucket", "quick").encode()
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            message = expired.get_message(timeout=deadline - time.monotonic())
            if message is not None and message["data"] == key:
                break
        else:
            pytest.fail("the bucket never expired")
        assert (
            len(buckets) == 0 and buckets.take("quick", 1, 0.05) == 0.0
        )  # full again: a new bucket
    finally:
        expired.close()


def test_a_counter_back_at_zero_leaves_no_key(connection):
    counters = RedisCounters(connection)
    assert counters.acquire("streams", None) and counters.acquire("streams", None)
    assert counters.release("streams") == 1 and connection.client.exists(
        connection.key("count", "streams")
    )
    assert counters.release("streams") == 0 and not connection.client.exists(
        connection.key("count", "streams")
    )


def test_a_record_and_its_parts_expire_with_its_ttl(connection):
    records = RedisTaskRecords(connection)
    assert create(records, "t", ttl=30.0) == "created"
    records.put_inputs("t", {"a": {"method": "roots/list"}})
    records.put_responses("t", {"a": {"roots": []}})
    key = connection.key("task", "t")
    for part in (key, key + ":out"):
        assert 29000 < connection.client.pttl(part) <= 30000
    assert create(records, "kept", ttl=None) == "created"
    assert connection.client.pttl(connection.key("task", "kept")) == -1  # no TTL: until deleted
    assert records.get("t")["inputResponses"] == {"a": {"roots": []}}  # an empty list stays a list


def test_every_task_key_expires_after_the_last_record_it_may_name(connection):
    """Issue 32, item 10: the task indexes (``tasks``, ``:seq``, ``:expires``, ``:owners``,
    ``:callers``, ``:done``, an owner's and a caller's) expire too, a margin after the last record
    they may name, so a deployment that stopped leaves nothing for ever; while a record without a TTL
    lives, the indexes naming it stay (bounded by ``max_tasks``)."""
    from mcp_ref.state.redis.stores import INDEX_MARGIN_MS
    from mcp_ref.state.stores import owner_digest

    records = RedisTaskRecords(connection)
    client = connection.client
    assert create(records, "short", caller="alice", ttl=30.0) == "created"
    assert create(records, "long", caller="bob", ttl=90.0) == "created"
    assert (
        records.transition("short", {"status": "completed"})["status"] == "completed"
    )  # joins :done
    assert [task["taskId"] for task in records.list("bob", None, 10)[0]] == ["long"]
    names = {key.decode() for key in client.scan_iter(match=connection.key("*"))}
    indexes = {
        connection.key("tasks", *part)
        for part in (
            (),
            ("seq",),
            ("expires",),
            ("owners",),
            ("callers",),
            ("done",),
            ("owner", owner_digest("alice")),
            ("owner", owner_digest("bob")),
            ("open", owner_digest("bob")),
        )
    }
    assert indexes <= names, names
    ttls = {name: client.pttl(name) for name in names}
    assert all(ttl > 0 for ttl in ttls.values()), ttls  # every key expires
    for name in indexes - {connection.key("tasks", "owner", owner_digest("alice"))}:
        assert 85_000 < ttls[name] <= 90_000 + INDEX_MARGIN_MS, (name, ttls[name])  # after "long"
    alice = connection.key("tasks", "owner", owner_digest("alice"))
    assert 25_000 < ttls[alice] <= 30_000 + INDEX_MARGIN_MS  # after alice's one record

    assert create(records, "kept", caller="carol", ttl=None) == "created"  # never expires
    for name in (connection.key("tasks"), connection.key("tasks", "open", owner_digest("carol"))):
        assert client.pttl(name) == -1  # kept while it lives
    assert records.delete("kept")
    assert create(records, "next", caller="dave", ttl=10.0) == "created"
    assert (
        85_000 < client.pttl(connection.key("tasks")) <= 90_000 + INDEX_MARGIN_MS
    )  # expires again


@pytest.mark.parametrize("part", [":in", ":out"])
def test_the_key_of_a_tasks_part_is_no_task_id(connection, part):
    """``ns:task:<id>:in`` / ``:out`` are a task's asks and answers: an id naming them is not in the
    index, so no operation reads, changes or deletes them as a record."""
    records = RedisTaskRecords(connection)
    create(records, "t")
    records.put_inputs("t", {"a": {"method": "roots/list"}})
    records.put_responses("t", {"a": {"roots": []}})
    records.put_inputs("t", {"b": {"method": "roots/list"}})
    before = records.get("t")
    named = "t" + part
    assert records.get(named) is None
    assert records.transition(named, {"status": "cancelled"}) is None
    assert records.put_responses(named, {"b": {"roots": []}}) == []
    assert records.take_responses(named, ["a"]) == {}
    assert not records.renew_lease(named, 30.0) and not records.delete(named)
    records.withdraw_inputs(named, ["b"])
    assert records.get("t") == before
    assert before["inputRequests"] == {"b": {"method": "roots/list"}}
    assert before["inputResponses"] == {"a": {"roots": []}}


def test_a_task_id_naming_a_tasks_own_key_is_a_nonexistent_task(redis_url):
    """SEP-2663 §Protocol Errors: "Invalid or nonexistent taskId: -32602".  An id the server never
    mints ("<id>:in", the key of a waiting task's asks) is refused as one that does not exist,
    before any store is asked: never -32603 with a traceback in the log, and no other principal
    learns that a task is waiting for input."""
    server = Server("tasks")
    connection = Connection(redis_url)
    server.tasks = TaskStore(records=RedisTaskRecords(connection), poll_interval_ms=10)
    try:
        task = server.tasks.create(None)
        server.tasks.records.put_inputs(task.id, {"a": {"method": "roots/list"}})
        with Client.in_memory(server, timeout=WAIT) as client:
            for method in ("tasks/get", "tasks/cancel", "tasks/update"):
                for named in (task.id + ":in", task.id + ":out", "", "x" * 65, "é"):
                    params = {"taskId": named, "inputResponses": {}}
                    with pytest.raises(McpError) as refused:
                        client.connection.request(method, params, declares=TASKS)
                    assert refused.value.code == -32602, (method, named, refused.value)
                    assert refused.value.message == "Invalid params: no task with that taskId"
            waiting = client.get_task(task.id)
        assert waiting["status"] == "input_required" and list(waiting["inputRequests"]) == ["a"]
    finally:
        server.tasks.cancel_all()  # its lease is renewed no longer: the thread renewing it ends
        renewing = server.tasks._leases
        if renewing is not None:
            renewing.join(WAIT)
        connection.close()


def test_a_lease_that_runs_out_reads_as_failed_and_frees_its_callers_place(connection):
    clock = Clock()
    records = RedisTaskRecords(connection, clock=clock)
    create(records, "leased")
    create(records, "never-leased")
    records.put_inputs("leased", {"a": {"method": "roots/list"}})
    assert records.renew_lease("leased", 10.0)
    clock.now += 9.0
    assert records.get("leased")["status"] == "input_required"
    assert records.renew_lease("leased", 10.0)  # renewed: 10 s from now
    clock.now += 9.0
    assert records.get("leased")["status"] == "input_required" and records.count("alice") == 2
    clock.now += 1.0
    failed = records.get("leased")
    assert (
        failed["status"] == FAILED
        and failed["error"] == stores.LEASE_ERROR
        and failed["inputRequests"] == {}
    )
    assert records.count("alice") == 1  # no longer counted against its caller
    assert not records.renew_lease("leased", 10.0)  # the worker learns its task is over
    assert records.transition("leased", {"status": COMPLETED}) is None  # terminal is final
    assert records.get("never-leased")["status"] == "working"


# -- one pool per process ----------------------------------------------------------------------------


def test_a_forked_child_makes_its_own_pool(connection):
    records = RedisTaskRecords(connection)
    create(records, "parent")
    parent_pool = connection.client.connection_pool
    pid = os.fork()
    if pid == 0:  # the child: exit code 0 only if it used a pool of its own
        code = 1
        try:
            if (
                connection.client.connection_pool is not parent_pool
                and records.get("parent") is not None
                and create(records, "child") == "created"
            ):
                code = 0
        finally:
            os._exit(code)
    waited: list[int] = []
    reaper = threading.Thread(target=lambda: waited.append(os.waitpid(pid, 0)[1]), daemon=True)
    reaper.start()
    reaper.join(WAIT)
    if reaper.is_alive():
        os.kill(pid, signal.SIGKILL)
        pytest.fail("the forked child did not exit")
    assert os.waitstatus_to_exitcode(waited[0]) == 0
    assert (
        records.get("child") is not None
    )  # the parent's pool still works, and sees the child's record
    assert connection.client.connection_pool is parent_pool


def test_a_worker_killed_holding_places_frees_them_after_its_ttl(connection):
    """A forked child (a gunicorn worker) holds places under a token of its own; SIGKILLed, it never
    releases them: they count until its last heartbeat is ``holder_ttl`` old, then they go."""
    clock = Clock()
    counters = RedisCounters(connection, holder_ttl=5.0, beat_every=3600.0, clock=clock)
    assert counters.acquire("streams", 3)
    parent_token = counters.token
    ready_r, ready_w = os.pipe()
    block_r, block_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: two places of its own, then it waits to be killed
        try:
            if (
                counters.token != parent_token
                and counters.acquire("streams", 3)
                and counters.acquire("streams", 3)
            ):
                os.write(ready_w, b"+")
                os.read(block_r, 1)  # never written: only SIGKILL ends this
        finally:
            os._exit(1)
    os.close(ready_w)  # the child's end: a child that dies early gives the reader an end of file
    os.close(block_r)
    try:
        got: list[int] = []
        reader = threading.Thread(target=lambda: got.append(len(os.read(ready_r, 1))), daemon=True)
        reader.start()
        reader.join(WAIT)
        assert got == [1], "the child did not take its places"
        assert counters.count("streams") == 3 and not counters.acquire("streams", 3)
    finally:
        os.kill(pid, signal.SIGKILL)
        reaped: list[int] = []
        reaper = threading.Thread(target=lambda: reaped.append(os.waitpid(pid, 0)[1]), daemon=True)
        reaper.start()
        reaper.join(WAIT)
        os.close(block_w)
    reader.join(WAIT)  # the child is gone: its end of the pipe too
    os.close(ready_r)
    assert reaped and os.WIFSIGNALED(reaped[0])
    assert counters.count("streams") == 3  # dead, but its last word is not 5 s old yet
    clock.now += 6.0
    assert counters.count("streams") == 1  # the parent's own place stays
    assert counters.acquire("streams", 3) and counters.acquire("streams", 3)
    counters.close()


# -- choosing the state ------------------------------------------------------------------------------


def test_a_redis_url_names_the_shared_state(redis_url):
    state = state_from(redis_url)
    try:
        assert isinstance(state, RedisState) and state.shared
        assert isinstance(state.buckets(), RedisBuckets) and isinstance(
            state.counters(), RedisCounters
        )
        assert create(state.task_records(), "t") == "created"
        assert isinstance(state.held_sets(), RedisHeldSets)
        assert (
            state.session_table().shared
        )  # the HTTP app's sessions on Redis too (tests/http/test_http_state.py)
    finally:
        state.close()
    assert RedisState.from_url(redis_url, fail_closed=True).buckets().fail_closed  # type: ignore[attr-defined]


# -- faults ------------------------------------------------------------------------------------------


@pytest.fixture
def own_server(own_redis):
    return own_redis


def test_redis_stopped_then_restarted_no_crash_no_hang_then_all_works(own_server, caplog):
    connection = Connection(f"{own_server.url}?namespace=faults", socket_timeout=1.0)
    buckets, closed = RedisBuckets(connection), RedisBuckets(connection, fail_closed=True)
    counters, records = RedisCounters(connection), RedisTaskRecords(connection)
    assert (
        buckets.take("k", 2, 60.0) == 0.0
        and counters.acquire("c", 5)
        and create(records, "before") == "created"
    )

    own_server.stop()
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger=stores.__name__):
        # the fallback: this process's own buckets (a full bucket of its own), one warning a minute
        assert [buckets.take("k", 2, 60.0) for _ in range(3)] == [
            0.0,
            0.0,
            pytest.approx(30.0, abs=0.5),
        ]
        with pytest.raises(ServerBusy):
            closed.take("k", 2, 60.0)
        assert (
            not counters.acquire("c", 5) and counters.release("c") == 0 and counters.count("c") == 0
        )
        with pytest.raises(McpError) as unreachable:
            records.get("before")
        assert (
            unreachable.value.code == -32603
            and unreachable.value.message == "the task store is unreachable"
        )
        with pytest.raises(McpError):
            create(records, "during")
    assert time.monotonic() - started < WAIT
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert (
        sum("rate limits" in w for w in warnings) == 2
    )  # each store warns once, not once per call
    assert (
        sum("counters" in w for w in warnings) == 1
        and sum("task records" in w for w in warnings) == 1
    )

    own_server.start()  # same port, empty (no persistence here), no scripts loaded: EVAL reloads them
    assert buckets.take("k", 2, 60.0) == 0.0 and counters.acquire("c", 5)
    assert create(records, "after") == "created" and records.get("after")["status"] == "working"
    connection.close()


def test_a_stalled_redis_times_out_instead_of_hanging(own_server):
    connection = Connection(f"{own_server.url}?namespace=stall", socket_timeout=0.5)
    buckets, records = RedisBuckets(connection), RedisTaskRecords(connection)
    assert buckets.take("k", 1, 60.0) == 0.0
    assert own_server.process is not None

    def stalled(_) -> None:
        assert buckets.take("k", 1, 60.0) == 0.0  # the fallback's own full bucket
        with pytest.raises(McpError):
            records.count()

    os.kill(own_server.process.pid, signal.SIGSTOP)
    try:
        # Two socket timeouts, not a hang: the calls end within WAIT (else the thread is reported).
        run_threads(stalled, 1)
    finally:
        os.kill(own_server.process.pid, signal.SIGCONT)
    assert buckets.take("k", 1, 60.0) > 0.0  # Redis again: the bucket taken before the stall
    connection.close()


def test_a_script_flushed_from_redis_is_loaded_again(connection):
    buckets = RedisBuckets(connection)
    buckets.take("k", 5, 60.0)
    connection.client.script_flush()
    assert buckets.take("k", 5, 60.0) == 0.0  # NOSCRIPT: EVAL, not an error
    assert connection.client.script_exists(stores.TAKE_ALL.sha) == [True]


def test_tasks_get_answers_an_error_while_the_task_store_is_unreachable(own_server):
    server = Server("tasks")

    @server.tool(task="optional")
    def confirm(ctx: Context) -> str:
        ctx.start_task()
        return "done"

    connection = Connection(f"{own_server.url}?namespace=tasks", socket_timeout=1.0)
    server.tasks = TaskStore(records=RedisTaskRecords(connection), poll_interval_ms=10)
    try:
        with Client.in_memory(server) as client:
            assert client.call_tool("confirm", task=True).text == "done"
            task = server.tasks.create(None)
            assert client.get_task(task.id)["status"] == "working"
            own_server.stop()
            with pytest.raises(McpError) as unreachable:
                client.get_task(task.id)
            assert unreachable.value.code == -32603
            own_server.start()
            assert client.call_tool("confirm", task=True).text == "done"
    finally:
        # the task made above is still live: its lease is renewed no longer, and the thread
        # renewing it ends before the connection closes (no warning of it reaches a later test)
        server.tasks.cancel_all()
        renewing = server.tasks._leases
        if renewing is not None:
            renewing.join(WAIT)
        connection.close()


def test_a_task_store_keeps_renewing_its_tasks_leases_and_a_stopped_one_lets_them_fail(
    connection, monkeypatch
):
    """extensions/tasks.py: the process holding a task renews its lease every third of LEASE_SECONDS; a
    process that stops renewing (it died) leaves the task to read ``failed`` once the lease runs out."""
    from mcp_ref.extensions import tasks as tasks_module

    monkeypatch.setattr(tasks_module, "LEASE_SECONDS", 1.5)
    renewals = threading.Semaphore(0)

    class Counted(RedisTaskRecords):
        def renew_lease(self, task_id: str, seconds: float) -> bool:
            renewed = super().renew_lease(task_id, seconds)
            renewals.release()
            return renewed

    holder = TaskStore(records=Counted(connection))
    other = RedisTaskRecords(connection)  # what another worker reads
    task = holder.create("alice")
    for _ in range(5):  # the lease taken, then four renewals: past one lease's length
        assert renewals.acquire(timeout=WAIT)
    assert other.get(task.id)["status"] == "working"  # only the renewals kept it alive
    passing = threading.Event()
    holder._leases_stop.set()  # the holder stops, as a dead worker would
    # A bounded poll, as no event exists: nothing is written when a lease runs out (its end is a
    # time in the record, and a read after it says failed), and no one else is there to tell.
    deadline = time.monotonic() + WAIT
    while other.get(task.id)["status"] == "working" and time.monotonic() < deadline:
        passing.wait(0.05)
    record = other.get(task.id)
    assert record["status"] == FAILED and "stopped" in record["error"]["message"]


def test_a_task_that_starts_while_the_store_is_down_is_a_warning_not_a_crash(
    own_server, caplog, monkeypatch
):
    """Its work cannot record that it began: it logs why (no traceback) and is queued again (its
    lease kept); the worker thread lives on and runs the next task once Redis is back."""
    monkeypatch.setattr(stores, "FINAL_WRITE_PAUSES", ())  # the held task's end is not retried here
    server = Server("tasks")
    release = threading.Event()

    @server.tool(task="optional")
    def hold(ctx: Context) -> str:
        ctx.start_task()
        release.wait(WAIT)
        return "held"

    @server.tool(task="optional")
    def quick(ctx: Context) -> str:
        ctx.start_task()
        return "quick"

    connection = Connection(f"{own_server.url}?namespace=starts", socket_timeout=1.0)
    server.tasks = TaskStore(records=RedisTaskRecords(connection), workers=1, poll_interval_ms=10)
    with Client.in_memory(server) as client:
        held = client.connection.send_request(
            "tools/call", {"name": "hold"}, declares=TASKS
        ).result()
        queued = client.connection.send_request(
            "tools/call", {"name": "quick"}, declares=TASKS
        ).result()
        assert held["resultType"] == queued["resultType"] == "task"
        own_server.stop()
        heard = LoggedOnce(queued["taskId"])
        logging.getLogger().addHandler(heard)  # after caplog's: it has the record once this is set
        try:
            with caplog.at_level(logging.WARNING):
                release.set()  # the slot frees: "quick" starts with its store down
                assert heard.seen.wait(WAIT), caplog.text
        finally:
            logging.getLogger().removeHandler(heard)
        said = [r for r in caplog.records if queued["taskId"] in r.getMessage()]
        assert said and all(r.levelno == logging.WARNING and r.exc_info is None for r in said), (
            caplog.text
        )
        assert not any("a task's work failed" in r.getMessage() for r in caplog.records)
        own_server.start()
        assert client.call_tool("quick", task=True).text == "quick"  # the worker lives on
    connection.close()


def frozen_for_the_start(redis: RedisServer, calls, op: str):
    """Wrap a task records' method ``calls`` (``_run`` or ``transition``): its first call that
    writes a run's start (``started``) runs with ``redis`` frozen (SIGSTOP: every try times out),
    and Redis is thawed (SIGCONT) as that call ends."""
    frozen = []

    def call(task_id, *args, **options):
        starts = "started" in (args[0] if op == "transition" else args)
        if not starts or frozen or (op == "_run" and task_id != "transition"):
            return calls(task_id, *args, **options)
        frozen.append(task_id)
        assert redis.process is not None
        os.kill(redis.process.pid, signal.SIGSTOP)
        try:
            return calls(task_id, *args, **options)
        finally:
            os.kill(redis.process.pid, signal.SIGCONT)

    return call, frozen


def start_one_task(era: str, records: RedisTaskRecords):
    """A server whose tool ``work`` becomes a task on ``records``, and a client of ``era`` (2026-07-28,
    or the 2025-11-25 experimental tasks); yields a function that starts one task, giving its id."""
    server = Server("tasks")

    @server.tool(task="optional")
    def work(ctx: Context) -> str:
        ctx.start_task()
        return "worked"

    server.tasks = TaskStore(records=records, workers=1, poll_interval_ms=10)
    if era == "2025-11-25":
        client = Client.in_memory(server, era="handshake", protocol_version=era, timeout=WAIT)
        call = {"name": "work", "arguments": {}, "task": {"ttl": 60_000}}
        return server, client, lambda: client.request("tools/call", call)["task"]["taskId"]
    client = Client.in_memory(server, timeout=WAIT)
    return (
        server,
        client,
        lambda: client.connection.send_request(
            "tools/call", {"name": "work"}, declares=TASKS
        ).result()["taskId"],
    )


def ends_completed(records: RedisTaskRecords, task_id: str) -> dict:
    """The record of ``task_id`` once it is no longer ``working`` (WAIT seconds at most), waited
    for on its writes; a read while Redis is frozen fails, and the next write asks again."""

    def ended() -> bool:
        try:
            record = records.get(task_id)
        except McpError:
            return False
        return record is None or record["status"] != "working"

    url = f"{records.connection.url}?namespace={records.connection.namespace}"
    assert wait_for_writes(url, ("task", task_id), ended, WAIT)
    record = records.get(task_id)
    assert record is not None and record["status"] == COMPLETED, record
    assert record["result"]["content"][0]["text"] == "worked"
    return record


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
def test_a_short_outage_as_a_task_starts_is_retried_and_the_task_runs(own_server, monkeypatch, era):
    """Redis frozen just as a task's run begins: the write that says so (``started``) is retried as
    the final one is (stores.FINAL_WRITE_PAUSES), and the task runs and completes.  It was dropped,
    reading ``working`` and then ``failed`` ("the worker running the task stopped") by its lease,
    though no worker stopped (spec_notes/deployment.md "Faults": after Redis is back everything
    works again)."""
    monkeypatch.setattr(stores, "FINAL_WRITE_PAUSES", (0.05,) * 20)
    connection = Connection(f"{own_server.url}?namespace=begin", socket_timeout=0.5)
    records = RedisTaskRecords(connection)
    monkeypatch.setattr(records, "_run", frozen_for_the_start(own_server, records._run, "_run")[0])
    server, client, start = start_one_task(era, records)
    try:
        with client:
            ends_completed(records, start())
    finally:
        server.tasks.cancel_all()
        connection.close()


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
def test_a_task_whose_start_cannot_be_written_is_queued_again_not_dropped(
    own_server, monkeypatch, caplog, era
):
    """Redis frozen through every try of a run's start: the task is queued again (its lease still
    renewed by its worker, extensions/tasks.py ``TaskStore.start_again``), not abandoned, and runs
    once Redis answers."""
    from mcp_ref.extensions import tasks as tasks_module

    monkeypatch.setattr(stores, "FINAL_WRITE_PAUSES", (0.05, 0.05))
    monkeypatch.setattr(tasks_module, "START_AGAIN_SECONDS", 0.05)
    connection = Connection(f"{own_server.url}?namespace=again", socket_timeout=0.3)
    records = RedisTaskRecords(connection)
    frozen_start, frozen = frozen_for_the_start(own_server, records.transition, "transition")
    monkeypatch.setattr(records, "transition", frozen_start)
    server, client, start = start_one_task(era, records)
    try:
        with client, caplog.at_level(logging.WARNING):
            task_id = start()
            ends_completed(records, task_id)
        assert frozen == [task_id]
        said = [r.getMessage() for r in caplog.records if task_id in r.getMessage()]
        assert any("queued again" in message for message in said), said
    finally:
        server.tasks.cancel_all()
        connection.close()


def test_a_tasks_outcome_written_while_redis_is_down_is_retried_not_lost(tmp_path, monkeypatch):
    """Nothing acknowledged is lost silently: a task that ends while Redis is down keeps trying to
    record its result (stores.FINAL_WRITE_PAUSES), and the result is there once Redis is back (here
    a Redis that keeps its data on disk, as production should: appendonly yes)."""
    redis = RedisServer(required_binary(), tmp_path, persistent=True)
    redis.start()
    monkeypatch.setattr(stores, "FINAL_WRITE_PAUSES", (0.1,) * 100)
    server = Server("tasks")
    running, release = threading.Event(), threading.Event()

    @server.tool(task="optional")
    def hold(ctx: Context) -> str:
        ctx.start_task()
        running.set()
        release.wait(WAIT)
        return "held"

    connection = Connection(f"{redis.url}?namespace=outcome", socket_timeout=0.5)
    records = RedisTaskRecords(connection)
    failed = threading.Semaphore(0)  # a release for each try that failed
    fault = records.fault
    monkeypatch.setattr(records, "fault", lambda *args: (fault(*args), failed.release()))
    server.tasks = TaskStore(records=records, poll_interval_ms=10)
    try:
        with Client.in_memory(server) as client:
            task_id = client.connection.send_request(
                "tools/call", {"name": "hold"}, declares=TASKS
            ).result()["taskId"]
            assert running.wait(WAIT)  # it began (recorded) while Redis was up
            redis.stop()
            release.set()  # it ends now, with Redis down: its final write fails, and is tried again
            for _ in range(3):  # a few tries fail meanwhile
                assert failed.acquire(timeout=WAIT)
            redis.start()  # the same port, the same data
            assert wait_for_writes(
                f"{redis.url}?namespace=outcome",
                ("task", task_id),
                lambda: (records.get(task_id) or {}).get("status") == COMPLETED,
                WAIT,
            )
            record = records.get(task_id)
            assert record is not None and record["status"] == COMPLETED
            assert record["result"]["content"][0]["text"] == "held"
    finally:
        connection.close()
        redis.stop()


def test_a_place_given_back_while_redis_is_down_is_given_back_once_it_is_up(tmp_path):
    """A holder that keeps beating (it holds other places) must not keep, for ever, a place it gave
    back while Redis was unreachable: its next beat that reaches Redis says it (a Redis that keeps
    its data across the restart, so the stale place would survive)."""
    redis = RedisServer(required_binary(), tmp_path, persistent=True)
    redis.start()
    connection = Connection(f"{redis.url}?namespace=unsaid", socket_timeout=1.0)
    clock = Clock()
    holder = RedisCounters(connection, holder_ttl=5.0, beat_every=3600.0, clock=clock)
    other = RedisHeldSets(connection, holder_ttl=5.0, beat_every=3600.0, clock=clock)
    sets = RedisHeldSets(connection, holder_ttl=5.0, beat_every=3600.0, clock=clock)
    try:
        assert holder.acquire("streams", 2) and holder.acquire("kept", None)
        assert sets.hold("alice", {"a", "b"}, 5)[0] and sets.hold("bob", {"c"}, 5)[0]
        redis.stop()
        assert holder.release("streams") == 0  # given back here; Redis cannot hear it
        sets.release("alice", {"a"})
        redis.start()
        assert holder.count("streams") == 1 and other.members("alice") == {
            "a",
            "b",
        }  # still taken there
        holder.beat()
        sets.beat()
        assert holder.count("streams") == 0 and holder.count("kept") == 1
        assert other.members("alice") == {"b"} and other.members("bob") == {"c"}
    finally:
        for store in (holder, other, sets):
            store.close()
        connection.close()
        redis.stop()


# -- eviction ----------------------------------------------------------------------------------------


def eviction_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "maxmemory-policy" in r.getMessage()]


@pytest.mark.parametrize("policy", ["allkeys-lru", "volatile-lru"])
def test_a_redis_that_evicts_keys_is_warned_of_once(own_server, caplog, policy):
    # at its maxmemory such a Redis drops the session table's and the task indexes' keys: sessions
    # and tasks vanish with no error (spec_notes/deployment.md, "Redis at its maxmemory")
    Connection(own_server.url).client.config_set("maxmemory-policy", policy)
    connection = Connection(f"{own_server.url}?namespace=evicting")
    try:
        with caplog.at_level(logging.WARNING):
            for number in range(3):
                assert create(RedisTaskRecords(connection), f"t{number}") == "created"
        said = eviction_warnings(caplog)
        assert len(said) == 1 and policy in said[0] and "silently lost" in said[0]
        assert "noeviction" in said[0]
    finally:
        connection.close()


def test_the_eviction_policy_is_read_from_info_when_config_is_refused(own_server, caplog):
    # managed Redis often refuses CONFIG: INFO memory says the policy too
    admin = Connection(own_server.url).client
    admin.config_set("maxmemory-policy", "allkeys-lfu")
    admin.acl_setuser(
        "app",
        enabled=True,
        passwords=["+app-pass"],
        keys=["*"],
        channels=["*"],
        commands=["+@all", "-config"],
    )
    connection = Connection(f"redis://app:app-pass@127.0.0.1:{own_server.port}/0?namespace=acl")
    try:
        with caplog.at_level(logging.WARNING):
            assert create(RedisTaskRecords(connection), "t") == "created"
        said = eviction_warnings(caplog)
        assert len(said) == 1 and "allkeys-lfu" in said[0]
    finally:
        connection.close()


def test_a_redis_that_never_evicts_is_not_warned_of(connection, caplog):
    assert Connection(connection.url).client.config_get("maxmemory-policy") == {
        "maxmemory-policy": "noeviction"
    }
    with caplog.at_level(logging.WARNING):
        assert create(RedisTaskRecords(connection), "t") == "created"
    assert eviction_warnings(caplog) == []
