"""``max_subscribed_resources`` over every process of a shared state (issue 22): two Server objects on
one Redis namespace are two workers of one deployment, and one principal's cap holds across them, in
the handshake era (``resources/subscribe``) and at 2026-07-28 (``subscriptions/listen``).

Each client reaches its server over an in-process transport, named as one caller (``peer``), so the
two connections are one principal.  A place is let go when its connection unsubscribes or its
stream ends; a connection that ended without a word lets go at its worker's next heartbeat
(called here, not waited for).  A worker that dies is the held sets' own test
(tests/state/test_server_state.py, tests/state/test_redis_state.py).
"""

from __future__ import annotations

import pytest
from conftest import WAIT
from redis_fixture import redis_server, redis_url  # noqa: F401 - fixtures

from mcp_ref import Client, LimitExceeded
from mcp_ref.memory import memory_pair
from mcp_ref.server import Server

CAP = 3


def worker(url: str) -> Server:
    """One worker of the deployment: resources ``mem://r/<n>``, at most CAP per caller."""
    server = Server("shared-caps", max_subscribed_resources=CAP, state=url)

    @server.resource("mem://r/{n}")
    def item(n: str) -> str:
        return n

    return server


@pytest.fixture
def workers(redis_url):
    made = worker(redis_url), worker(redis_url)
    yield made
    for server in made:
        server.shared_state.close()


def connect(server: Server, who: str, era: str) -> Client:
    """A client of ``server`` whose caller is ``who`` (the principal id)."""
    client_end, server_end = memory_pair()
    server.connect(server_end, peer=who)
    return Client(client_end, era=era, timeout=WAIT)


def refused(call, *args, **kwargs) -> LimitExceeded:
    with pytest.raises(LimitExceeded) as refusal:
        call(*args, **kwargs)
    assert refusal.value.data == {"limit": CAP}
    return refusal.value


def test_one_callers_subscriptions_are_capped_over_every_worker_in_the_handshake_era(workers):
    one, two = workers
    with (
        connect(one, "alice", "handshake") as on_one,
        connect(two, "alice", "handshake") as on_two,
        connect(two, "bob", "handshake") as bob,
    ):
        on_one.subscribe("mem://r/1")
        on_one.subscribe("mem://r/2")
        on_two.subscribe("mem://r/2")  # held on the other worker: counted once
        on_two.subscribe("mem://r/3")
        assert "(3 held)" in refused(on_two.subscribe, "mem://r/4").message
        refused(on_one.subscribe, "mem://r/4")
        for n in (1, 3, 4):  # another caller has places of its own
            bob.subscribe(f"mem://r/{n}")
        on_one.unsubscribe("mem://r/2")
        refused(on_two.subscribe, "mem://r/4")  # r/2 is still held on two
        on_one.unsubscribe("mem://r/1")
        on_two.subscribe("mem://r/4")  # r/1 was let go on one: room on two
        refused(on_one.subscribe, "mem://r/5")

    # Every connection ended without unsubscribing: each worker's next heartbeat lets go of theirs.
    with connect(one, "alice", "handshake") as again:
        refused(again.subscribe, "mem://r/5")  # one cannot know two's connections have ended
        two.subscriptions.say_held(two)  # two's heartbeat
        for n in (5, 6, 7):
            again.subscribe(f"mem://r/{n}")


def test_one_callers_listen_streams_are_capped_over_every_worker_at_2026_07_28(workers):
    one, two = workers
    with connect(one, "alice", "modern") as on_one, connect(two, "alice", "modern") as on_two:
        first = on_one.listen(resource_uris=["mem://r/1", "mem://r/2"])
        refused(on_two.listen, resource_uris=["mem://r/3", "mem://r/4"])  # 4 distinct over both
        with on_two.listen(resource_uris=["mem://r/2", "mem://r/3"]) as second:  # r/2 counted once
            assert second.acknowledged["resourceSubscriptions"] == ["mem://r/2", "mem://r/3"]
            refused(on_one.listen, resource_uris=["mem://r/4"])
            first.close()
            assert one.subscriptions.wait_at_most(
                0, WAIT
            )  # one has noticed: r/1 let go, r/2 is two's
            with on_one.listen(resource_uris=["mem://r/1"]):
                refused(on_two.listen, resource_uris=["mem://r/4"])
        assert two.subscriptions.wait_at_most(0, WAIT)
        with on_one.listen(resource_uris=["mem://r/4", "mem://r/5"]):
            pass


def test_both_eras_share_one_callers_places(workers):
    one, two = workers
    with connect(one, "alice", "handshake") as old, connect(two, "alice", "modern") as new:
        old.subscribe("mem://r/1")
        with new.listen(resource_uris=["mem://r/1", "mem://r/2", "mem://r/3"]):
            refused(old.subscribe, "mem://r/4")


def test_a_refused_listen_keeps_no_place(redis_url):
    # max_subscriptions refuses the stream after its resources were held: they are let go again
    one, two = worker(redis_url), worker(redis_url)
    one.subscriptions.max_subscriptions = 0
    try:
        with connect(one, "alice", "modern") as on_one, connect(two, "alice", "modern") as on_two:
            with pytest.raises(Exception) as busy:
                on_one.listen(resource_uris=["mem://r/1", "mem://r/2", "mem://r/3"])
            assert getattr(busy.value, "code", None) == -31000
            with on_two.listen(resource_uris=["mem://r/4", "mem://r/5", "mem://r/6"]):
                pass
    finally:
        one.shared_state.close()
        two.shared_state.close()
