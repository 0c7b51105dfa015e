"""The change bus on Redis pub/sub (issue 22): a real ``redis-server`` (tests/redis_fixture.py).

Two :class:`RedisBus` objects on one URL stand for two worker processes (each has its own pub/sub
connection and threads); a forked child stands for a gunicorn worker forked after ``--preload``.
The fault tests start a Redis of their own, so stopping it disturbs no other test of the worker.
"""

from __future__ import annotations

import inspect
import logging
import multiprocessing
import threading
import time
from collections import Counter

import pytest
from conftest import WAIT, Collector
from redis_fixture import own_redis, redis_server, redis_url  # noqa: F401 - fixtures

from mcp_ref.state.redis.bus import RedisBus
from mcp_ref.state.redis.connection import Connection
from mcp_ref.state.stores import Bus


@pytest.fixture
def buses():
    """Factory: ``buses(url, **options)`` -> a RedisBus on its own Connection; all closed after."""
    made: list[tuple[RedisBus, Connection]] = []

    def make(url: str, **options) -> RedisBus:
        connection = Connection(url, socket_timeout=options.pop("socket_timeout", 2.0))
        bus = RedisBus(connection, **options)
        made.append((bus, connection))
        return bus

    yield make
    for bus, connection in made:
        bus.close()
        connection.close()


def test_the_redis_bus_implements_the_bus_protocol():
    members = {
        name: inspect.signature(m)
        for name, m in vars(Bus).items()
        if callable(m) and not name.startswith("_")
    }
    assert set(members) == {"publish", "subscribe"}
    for name, signature in members.items():
        assert list(inspect.signature(getattr(RedisBus, name)).parameters) == list(
            signature.parameters
        ), name


def test_two_processes_hear_each_others_publishes_each_exactly_once(buses, redis_url):
    one, two = buses(redis_url), buses(redis_url)
    heard_one, heard_two = Collector(), Collector()
    one.subscribe("changes", heard_one)
    two.subscribe("changes", heard_two)
    assert one.confirmed("changes") and two.confirmed("changes")  # subscribe waited for Redis
    assert one.publish("changes", {"from": "one"}) == 2  # both processes' connections: its own too
    assert two.publish("changes", {"from": "two"}) == 2
    # One more after: a duplicate (say a local delivery as well as Redis's) would show before it.
    one.publish("changes", {"from": "marker"})
    for heard in (heard_one, heard_two):
        heard.wait_until(lambda items: {"from": "marker"} in items)
        assert heard.items == [{"from": "one"}, {"from": "two"}, {"from": "marker"}]


def test_namespaces_and_channels_isolate(buses, redis_server):
    first = buses(redis_server.url + "?namespace=first-ns")
    second = buses(redis_server.url + "?namespace=second-ns")
    heard, other_channel = Collector(), Collector()
    first.subscribe("changes", heard)
    first.subscribe("tasks/1", other_channel)
    assert (
        second.publish("changes", {"n": 1}) == 0
    )  # nobody subscribes that channel in its namespace
    assert first.publish("changes", {"n": 2}) == 1
    heard.wait_for(1)
    first.publish("tasks/1", {"n": 3})
    other_channel.wait_for(1)
    assert heard.items == [{"n": 2}] and other_channel.items == [{"n": 3}]


def test_messages_arrive_in_order_and_each_subscriber_has_its_own_copy(buses, redis_url):
    listener, publisher = buses(redis_url), buses(redis_url)
    heard, mutating = Collector(), Collector()

    def mutate(message: dict) -> None:
        message["touched"] = True
        mutating(message)

    listener.subscribe("changes", mutate)
    listener.subscribe("changes", heard)
    for n in range(300):
        publisher.publish("changes", {"n": n})
    heard.wait_for(300)
    assert [m["n"] for m in heard.items] == list(range(300))
    assert not any("touched" in m for m in heard.items) and len(mutating) == 300


def test_a_slow_callback_blocks_neither_publish_nor_reading_and_a_full_queue_drops(
    buses, redis_url, caplog
):
    listener, publisher = buses(redis_url, max_queue=3), buses(redis_url)
    gate, entered, heard = threading.Event(), threading.Event(), Collector()

    def slow(message: dict) -> None:
        entered.set()
        assert gate.wait(WAIT)
        heard(message)

    listener.subscribe("changes", slow)
    publisher.publish("changes", {"n": 0})
    assert entered.wait(WAIT)  # message 0 is out of the queue, its callback stuck
    done = threading.Event()

    def publish_rest() -> None:
        for n in range(1, 11):
            assert publisher.publish("changes", {"n": n}) == 1
        done.set()

    with caplog.at_level(logging.WARNING, logger="mcp_ref.state.redis.bus"):
        threading.Thread(target=publish_rest, daemon=True).start()
        assert done.wait(WAIT)  # publishing never waits for a subscriber
        assert listener.wait_for(lambda: listener.received == 11, WAIT)  # the listener kept reading
    assert listener.dropped == 7  # the queue held 1, 2, 3; the rest were dropped, counted ...
    drops = [r for r in caplog.records if "delivery queue is full" in r.getMessage()]
    assert len(drops) == 1  # ... and logged once (then at most once a minute)
    gate.set()
    heard.wait_for(4)
    publisher.publish("changes", {"n": 11})
    heard.wait_for(5)
    assert [m["n"] for m in heard.items] == [0, 1, 2, 3, 11]


def test_a_failing_callback_does_not_stop_the_others(buses, redis_url, caplog):
    bus = buses(redis_url)
    heard = Collector()

    def broken(message: dict) -> None:
        raise RuntimeError("boom")

    bus.subscribe("changes", broken)
    bus.subscribe("changes", heard)
    bus.publish("changes", {"n": 1})
    bus.publish("changes", {"n": 2})
    assert heard.wait_for(2) == [{"n": 1}, {"n": 2}]
    assert sum("a subscriber of 'changes' failed" in r.getMessage() for r in caplog.records) == 2


def test_unsubscribe_and_the_subscriber_bound(buses, redis_url):
    bus = buses(redis_url, max_subscribers=2)
    gone, stays, marker = Collector(), Collector(), Collector()
    unsubscribe = bus.subscribe("tasks/1", gone)
    bus.subscribe("tasks/1", stays)
    with pytest.raises(OverflowError):
        bus.subscribe("tasks/1", Collector())
    bus.subscribe("tasks/2", marker)
    unsubscribe()
    unsubscribe()  # twice is harmless
    assert bus.subscribers("tasks/1") == 1
    bus.publish("tasks/1", {"n": 1})
    bus.publish("tasks/2", {"n": "marker"})
    marker.wait_for(1)
    stays.wait_for(1)
    assert gone.items == []
    bus.subscribe("tasks/1", gone)  # room again
    assert bus.subscribers("tasks/1") == 2


def test_the_last_local_subscriber_leaving_unsubscribes_from_redis(buses, redis_url):
    bus, publisher = buses(redis_url), buses(redis_url)
    unsubscribe = bus.subscribe("tasks/9", Collector())
    assert publisher.publish("tasks/9", {}) == 1
    unsubscribe()
    assert bus.wait_for(lambda: not bus.confirmed("tasks/9"), WAIT)
    marker = Collector()
    bus.subscribe("tasks/10", marker)  # sent after the UNSUBSCRIBE on the same connection
    assert publisher.publish("tasks/9", {}) == 0


def test_the_listener_keeps_the_pub_sub_connection_it_opened(buses, redis_server, redis_url):
    """The listener kept only the ``PubSub`` of the client it made: once the client was collected,
    redis-py closed its pool (``Redis.__del__``) with the pub/sub connection in it, and at the next
    read opened another and subscribed every channel again on its own.  A message published in
    between went to the closed connection and was lost, though PUBLISH said a process heard it.
    Now each channel is subscribed once, on the connection the listener opened (Redis's MONITOR
    lists the SUBSCRIBEs, up to a marker sent once the bus confirmed its channel)."""
    import redis

    namespace = redis_url.split("namespace=", 1)[1]
    admin = redis.Redis.from_url(redis_server.url, socket_timeout=WAIT)
    subscribed: Counter[str] = Counter()
    with admin.monitor() as monitor:
        bus = buses(redis_url)
        bus.subscribe("changes", Collector())
        marker = f"{namespace}-subscribed"
        admin.echo(marker)
        while marker not in (command := monitor.next_command()["command"]):
            words = command.split()
            if words[0] == "SUBSCRIBE":
                subscribed.update(word for word in words[1:] if word.startswith(namespace))
    admin.close()
    # this bus's control channel and the channel subscribed: each once
    assert len(subscribed) == 2 and set(subscribed.values()) == {1}, subscribed


def test_redis_stopped_and_restarted_the_bus_reconnects_resubscribes_and_calls_its_hooks(
    own_redis, buses, caplog
):
    listener = buses(own_redis.url, min_backoff=0.02, max_backoff=0.2)
    publisher = buses(own_redis.url)
    heard, reconnected = Collector(), Collector()
    listener.subscribe("changes", heard)
    listener.on_reconnect(lambda: reconnected("again"))
    assert publisher.publish("changes", {"n": 1}) == 1
    heard.wait_for(1)

    with caplog.at_level(logging.WARNING, logger="mcp_ref.state.redis.bus"):
        own_redis.stop()
        assert listener.wait_for(lambda: not listener.connected, WAIT)
        started = time.monotonic()
        assert (
            publisher.publish("changes", {"n": "lost"}) == 0
        )  # no raise, no hang: counted and logged
        assert publisher.publish("changes", {"n": "lost"}) == 0
        late = Collector()
        listener.subscribe("late", late)  # while down: registered, not waited for
        assert time.monotonic() - started < WAIT
        assert publisher.failed_publishes == 2 and reconnected.items == []
        own_redis.start()  # same port
        reconnected.wait_for(1)
    assert listener.connected and listener.reconnects == 1
    assert listener.confirmed("changes") and listener.confirmed(
        "late"
    )  # every channel subscribed again
    assert publisher.publish("changes", {"n": 2}) == 1
    assert publisher.publish("late", {"n": 3}) == 1
    assert heard.wait_for(2) == [{"n": 1}, {"n": 2}] and late.wait_for(1) == [{"n": 3}]
    messages = [r.getMessage() for r in caplog.records]
    assert (
        sum("a publish on 'changes' failed" in m for m in messages) == 1
    )  # rate-limited: once a minute
    assert any("lost the pub/sub connection" in m for m in messages)
    assert any("connected to Redis again" in m for m in messages)


@pytest.mark.slow
def test_a_silent_connection_is_found_by_the_heartbeat(own_redis, buses):
    listener = buses(
        own_redis.url, heartbeat=0.2, socket_timeout=1.0, min_backoff=0.02, max_backoff=0.1
    )
    publisher = buses(own_redis.url)
    heard, reconnected = Collector(), Collector()
    listener.subscribe("changes", heard)
    listener.on_reconnect(lambda: reconnected("again"))
    publisher.connection.client.execute_command(
        "CLIENT", "PAUSE", "1500", "ALL"
    )  # Redis answers nobody
    reconnected.wait_for(1)  # the PING went unanswered: reconnected once Redis answered again
    assert publisher.publish("changes", {"n": 1}) == 1
    assert heard.wait_for(1) == [{"n": 1}]


def test_close_ends_the_threads(buses, redis_url):
    bus, publisher = buses(redis_url), buses(redis_url)
    assert not bus.alive  # nothing starts before the first subscribe
    bus.subscribe("changes", Collector())
    assert bus.alive and bus.connected
    bus.close()
    assert not bus.alive and not bus.connected
    with pytest.raises(RuntimeError):
        bus.subscribe("changes", Collector())
    assert publisher.publish("changes", {}) == 0  # its pub/sub connection is closed
    assert bus.publish("changes", {}) == 0  # publishing still works (nobody listens)


def _child(bus: RedisBus, heard: Collector, ready, results) -> None:
    """In a forked child: the inherited bus has a listener of its own again; report what it hears."""
    ready.put(bus.wait_for(lambda: bus.confirmed("changes"), WAIT))
    results.put(heard.wait_for(1))


def test_a_forked_child_gets_a_listener_of_its_own(buses, redis_url):
    bus = buses(redis_url)
    heard = Collector()
    bus.subscribe("changes", heard)  # before the fork (gunicorn --preload)
    context = multiprocessing.get_context("fork")
    ready, results = context.Queue(), context.Queue()
    child = context.Process(target=_child, args=(bus, heard, ready, results))
    child.start()
    try:
        assert ready.get(timeout=WAIT) is True
        assert (
            bus.publish("changes", {"n": 1}) == 2
        )  # the parent and the child, one connection each
        assert results.get(timeout=WAIT) == [{"n": 1}]
        assert heard.wait_for(1) == [{"n": 1}]
    finally:
        child.join(WAIT)
        if child.is_alive():
            child.kill()
    assert child.exitcode == 0
