"""The policy's mechanisms on their own: rate limits (mcp_ref.extensions.ratelimit), the bounded bucket table,
and the coalescing of resource updates (mcp_ref.extensions.policy.UpdateCoalescer).  Through real
transports they are tested in test_policy.py."""

from __future__ import annotations

import threading

import pytest
from conftest import WAIT

from mcp_ref import LimitExceeded, RateLimit
from mcp_ref.extensions.policy import Policy, Principal, UpdateCoalescer
from mcp_ref.extensions.ratelimit import RateLimiter


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


@pytest.mark.parametrize(
    "text, count, seconds",
    [
        ("100/minute", 100, 60),
        ("10/second", 10, 1),
        ("5/hour", 5, 3600),
        ("1000/day", 1000, 86400),
        ("20/10s", 20, 10),
        ("3 / 5 min", 3, 300),
        ("1/0.5s", 1, 0.5),
        ("7/M", 7, 60),
    ],
)
def test_rate_limits_are_read_from_text(text, count, seconds):
    assert RateLimit.parse(text) == RateLimit(count, seconds)
    assert RateLimit.of(text) == RateLimit.of((count, seconds)) == RateLimit(count, seconds)


@pytest.mark.parametrize(
    "text", ["", "100", "100/fortnight", "0/minute", "-1/minute", "ten/minute", "5/0s", "5/m/s"]
)
def test_a_malformed_rate_limit_is_refused_with_its_form(text):
    with pytest.raises(ValueError) as refused:
        RateLimit.parse(text)
    assert repr(text) in str(refused.value) or "positive" in str(refused.value)


def test_a_bucket_admits_its_burst_then_one_per_interval():
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    limit = RateLimit(3, 60)
    assert [limiter.take("k", limit) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert limiter.take("k", limit) == pytest.approx(20.0)  # one token every 20 s
    clock.now += 10
    assert limiter.take("k", limit) == pytest.approx(
        10.0
    )  # refused: nothing taken, half a token there
    clock.now += 10
    assert limiter.take("k", limit) == 0.0
    clock.now += 600  # a long rest fills the bucket, never past its burst
    assert [limiter.take("k", limit) == 0.0 for _ in range(4)] == [True, True, True, False]
    assert limiter.take("other", limit) == 0.0  # keys are independent


def test_refilled_buckets_are_dropped_and_the_table_is_bounded():
    clock = Clock()
    limiter = RateLimiter(clock=clock, max_keys=100)
    limit = RateLimit(2, 10)
    for n in range(50):
        limiter.take(("caller", n), limit)
    assert len(limiter) == 50
    clock.now += 10  # every bucket has refilled: the principals that went away leave nothing behind
    limiter.take("newcomer", limit)
    assert len(limiter) == 1
    for n in range(500):  # more live buckets than the bound: the idlest are dropped
        limiter.take(("crowd", n), limit)
    assert len(limiter) == 100


def test_a_limit_holds_under_concurrent_takers():
    limiter = RateLimiter(clock=Clock())
    limit = RateLimit(25, 60)
    admitted, start = [], threading.Barrier(8, timeout=WAIT)

    def taker():
        start.wait()
        for _ in range(20):
            if limiter.take("shared", limit) == 0.0:
                admitted.append(1)

    threads = [threading.Thread(target=taker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert len(admitted) == 25


def test_the_error_says_when_to_retry():
    error = RateLimit(5, 60).refusal("tool x", 12.000000000000002)
    assert isinstance(error, LimitExceeded)
    assert error.code == -31005 and error.retry_after == 12.0
    assert error.to_error()["data"] == {"limit": "5/60s", "retryAfter": 12.0}
    assert "retry in 12 s" in error.message


def test_a_failing_authorize_denies_and_tells_the_peer_nothing(caplog):
    def broken(principal, action, name):
        raise RuntimeError("/secret/path/policy.py exploded")

    policy = Policy(authorize=broken)
    assert policy.allows(Principal("p"), "tools/call", "x") is False
    assert policy.filter_listing(Principal("p"), "tools", [{"name": "x"}]) == []
    assert "exploded" in caplog.text  # logged for the operator, with its traceback


def test_coalescing_sends_the_first_at_once_and_the_last_when_the_interval_ends():
    sent, cond = [], threading.Condition()

    def send(uri, params):
        with cond:
            sent.append((uri, params["n"]))
            cond.notify_all()

    import time

    updates = UpdateCoalescer(0.2, send, time.monotonic)
    assert updates.announce("a", {"n": 1}) is True
    for n in range(2, 1000):
        assert updates.announce("a", {"n": n}) is False
    assert updates.held() == 1  # one entry, never a queue
    assert updates.announce("b", {"n": 1}) is True  # resources are independent
    with cond:
        assert cond.wait_for(lambda: len(sent) == 3, WAIT)
    assert sent == [("a", 1), ("b", 1), ("a", 999)]  # the last one wins
    thread = updates._thread
    thread.join(WAIT)  # quiet for an interval: forgotten, and the thread ends
    assert not thread.is_alive() and updates._state == {}
    assert updates.announce("a", {"n": 1000}) is True


def test_filling_the_table_does_not_give_an_emptied_bucket_its_burst_back():
    clock = Clock()
    limiter = RateLimiter(clock=clock, max_keys=100)
    daily = RateLimit(5, 86400)
    for _ in range(5):
        limiter.take("victim", daily)
    assert limiter.take("victim", daily) > 0  # used up for the day
    for n in range(1000):  # a crowd of new callers, each a little used
        clock.now += 1
        limiter.take(("crowd", n), daily)
    assert len(limiter) == 100
    assert limiter.take("victim", daily) > 0  # still used up: the fuller buckets were dropped
