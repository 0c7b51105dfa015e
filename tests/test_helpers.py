"""The shared test helpers of conftest.py: Collector and run_threads / Workers."""

from __future__ import annotations

import re
import threading

import pytest

from conftest import WAIT, Collector, Workers, run_threads


# -- Collector ------------------------------------------------------------------------------------


def test_a_collector_records_each_call_as_an_item():
    got = Collector()
    got("one")
    got(2, 3, "three")
    assert got.items == ["one", (2, 3, "three")]
    assert len(got) == 2 and got[0] == "one" and "one" in got and list(got) == got.items
    mark = got.mark()
    got("later")
    assert got.since(mark) == ["later"]


def test_a_collector_waits_for_calls_from_other_threads():
    got = Collector()
    go = threading.Event()

    def call(i: int) -> None:
        assert go.wait(WAIT)
        got(i)

    workers = Workers(call, 5).start()
    go.set()
    assert sorted(got.wait_for(5)) == [0, 1, 2, 3, 4]
    assert got.wait_until(lambda items: 4 in items, since=0)
    workers.join()


def test_a_collector_fails_a_wait_that_is_not_met():
    got = Collector()
    got("only")
    with pytest.raises(AssertionError, match=r"condition not met within 0.05 s; received \['only'\]"):
        got.wait_for(2, timeout=0.05)
    with pytest.raises(AssertionError):
        got.wait_until(lambda items: "other" in items, timeout=0.05)
    mark = got.mark()
    with pytest.raises(AssertionError, match=r"received \[\]"):
        got.wait_for(1, since=mark, timeout=0.05)


# -- run_threads ----------------------------------------------------------------------------------


def test_run_threads_returns_the_results_in_order():
    assert run_threads(lambda i: i * i, 6) == [0, 1, 4, 9, 16, 25]


def test_run_threads_lists_every_failure():
    def work(i: int) -> int:
        assert i % 3, f"thread {i} is a multiple of 3"
        if i == 4:
            raise ValueError("four")
        return i

    with pytest.raises(AssertionError) as failed:
        run_threads(work, 7)
    message = str(failed.value)
    assert message.startswith("4 of 7 threads failed, 0 did not finish:")
    for i in (0, 3, 6):
        assert re.search(rf"thread {i} failed at test_helpers\.py:\d+: AssertionError: thread {i} is a multiple of 3", message)
    assert re.search(r"thread 4 failed at test_helpers\.py:\d+: ValueError: four", message)
    assert isinstance(failed.value.__cause__, AssertionError)  # the first failure, with its traceback


def test_run_threads_fails_on_a_thread_still_running():
    release = threading.Event()
    try:
        with pytest.raises(AssertionError, match=r"0 of 3 threads failed, 1 did not finish:\nthread 1 still running after 0.2 s"):
            run_threads(lambda i: i == 1 and release.wait(WAIT), 3, timeout=0.2)
    finally:
        release.set()
