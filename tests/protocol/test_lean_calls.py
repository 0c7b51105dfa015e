"""A client call's own synchronisation, and the 2026-07-28 ``_meta`` built once (issue 24, item 2).

A :class:`~mcp_ref.session.PendingRequest` is a :class:`concurrent.futures.Future` held in the
session's table keyed by request id.  The tests below prove what its users rely on: the first settle wins
(under a race of threads too), done callbacks run once (at once when already settled), a timeout
tells the peer and raises RequestTimeout, an answer that is itself a TimeoutError is the outcome, and
every thread waiting on one request wakes.  Then, with a real in-memory modern server that records
the ``_meta`` of each request it receives: the envelope the client reuses changes whenever what it
says changes (log level, handlers, client info, version, the tasks extension), and what a caller put
in its own ``_meta`` never leaks into the next request.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future

import pytest
from conftest import WAIT, run_threads

from mcp_ref import Client, Context, RequestTimeout, Server
from mcp_ref.client.connection import envelope_meta
from mcp_ref.lifecycle import CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROTOCOL_VERSION
from mcp_ref.session import PendingRequest


class Table:
    """A stand-in for a session's table of pending requests: ``forget`` and ``send_cancel`` recorded."""

    def __init__(self, *, answered: bool = False):
        self.answered = answered  # forget() finds nothing: the reader took the answer first
        self.cancels: list = []
        self.forgotten = threading.Event()
        self.pending: PendingRequest | None = None

    def forget(self, request_id):
        self.forgotten.set()
        return None if self.answered else self.pending

    def send_cancel(self, request_id, reason, related=None):
        self.cancels.append((request_id, reason))


def pending_request(
    table: Table, method: str = "tools/call", timeout: float | None = WAIT
) -> PendingRequest:
    table.pending = PendingRequest(
        table.forget, table.send_cancel, 7, method, timeout, None, False, None
    )
    return table.pending


def race_to_settle(pending: PendingRequest, threads: int) -> list[bool]:
    """Settle ``pending`` from ``threads`` threads at once (odd ones with a result, even ones with an error)."""
    start = threading.Barrier(threads)

    def settle(i: int) -> bool:
        start.wait(WAIT)
        return pending.set_result({"n": i}) if i % 2 else pending.set_exception(ValueError(str(i)))

    return run_threads(settle, threads)


def test_the_first_settle_wins_when_threads_race():
    for _ in range(20):
        pending = pending_request(Table())
        called: list = []
        pending.add_done_callback(called.append)
        wins = race_to_settle(pending, 8)
        assert wins.count(True) == 1 and called == [pending]
        winner = wins.index(True)
        if winner % 2:
            assert pending.result() == {"n": winner} and pending.exception() is None
        else:
            with pytest.raises(ValueError, match=str(winner)):
                pending.result()
        assert not pending.set_result({"late": True}) and called == [
            pending
        ]  # a late settle changes nothing


def test_done_callbacks_run_once_and_at_once_when_already_settled(caplog):
    pending = pending_request(Table())
    seen: list = []
    pending.add_done_callback(lambda p: seen.append(("first", threading.current_thread())))
    pending.add_done_callback(lambda p: 1 / 0)  # logged, and the others still run
    pending.add_done_callback(lambda p: seen.append(("third", p.done())))
    assert seen == []
    settler = threading.Thread(target=pending.set_result, args=({},))
    settler.start()
    settler.join(WAIT)
    assert seen == [("first", settler), ("third", True)]
    assert "exception calling callback" in caplog.text and "ZeroDivisionError" in caplog.text
    pending.add_done_callback(lambda p: seen.append(("late", threading.current_thread())))
    assert seen[-1] == ("late", threading.current_thread())  # already settled: called at once, here
    pending.set_exception(ValueError("late"))
    assert len(seen) == 3 and pending.result() == {}


class WatchedCondition(threading.Condition):
    """A future's condition that says when a thread starts to wait on it."""

    def __init__(self):
        super().__init__()
        self.waiting = threading.Semaphore(0)

    def wait(self, timeout=None):
        self.waiting.release()
        return super().wait(timeout)


def test_every_thread_waiting_on_one_request_wakes_with_its_answer():
    pending = pending_request(
        Table(), timeout=None
    )  # no deadline: a thread left waiting fails run_threads
    gate = pending._condition = WatchedCondition()

    def wait(i: int) -> dict:
        if i == 0:
            for _ in range(6):  # the six others are waiting on the future's condition
                assert gate.waiting.acquire(timeout=WAIT)
            pending.set_result({"ok": True})
            return {}
        return pending.result()

    assert run_threads(wait, 7)[1:] == [{"ok": True}] * 6


def test_a_timeout_tells_the_peer_and_raises_request_timeout():
    table = Table()
    pending = pending_request(table, timeout=0.05)
    with pytest.raises(RequestTimeout, match="timeout of 0.05 s"):
        pending.result()
    assert table.cancels == [(7, "timeout")] and pending.done()
    assert not pending.set_result({"too": "late"})
    with pytest.raises(RequestTimeout):
        pending.result()
    # initialize is never cancelled (2025-11-25 cancellation), but it still times out
    table = Table()
    with pytest.raises(RequestTimeout):
        pending_request(table, "initialize", timeout=0.01).result()
    assert table.cancels == []


def test_an_answer_that_wins_the_race_with_the_timeout_is_the_outcome():
    table = Table(
        answered=True
    )  # the reader took the answer from the table just as the time ran out
    pending = pending_request(table, timeout=0.01)

    def settle_when_forgotten() -> None:
        assert table.forgotten.wait(WAIT)
        pending.set_result({"answered": True})

    settler = threading.Thread(target=settle_when_forgotten)
    settler.start()
    assert pending.result() == {"answered": True}  # neither RequestTimeout nor a cancel
    settler.join(WAIT)
    assert table.cancels == []


def test_an_error_that_is_itself_a_timeout_error_is_the_requests_outcome():
    table = Table()
    pending = pending_request(table, timeout=WAIT)
    pending.set_exception(TimeoutError("the transport gave up"))
    with pytest.raises(TimeoutError, match="the transport gave up") as raised:
        pending.result()
    assert not isinstance(raised.value, RequestTimeout) and table.cancels == []


# -- the 2026-07-28 envelope, built once per connection, revision and what it says -----------------


@pytest.fixture
def recorded():
    server = Server("meta-recorder", version="1.0")
    metas: list[dict] = []

    @server.tool()
    def record(ctx: Context) -> str:
        """Keep the _meta of this request."""
        metas.append(dict(ctx.request.params["_meta"]))
        return "ok"

    client = Client.in_memory(server, era="modern", timeout=WAIT, roots=["file:///a"])
    try:
        yield client, metas
    finally:
        client.close()


def test_the_envelope_follows_the_log_level_the_handlers_and_the_client_info(recorded):
    client, metas = recorded

    def envelope() -> dict:
        client.call_tool("record")
        return metas[-1]

    first = envelope()
    assert first[PROTOCOL_VERSION] == client.protocol_version == "2026-07-28"
    assert first[CLIENT_CAPABILITIES] == {"roots": {}} and LOG_LEVEL not in first
    assert envelope() == first  # built once, sent again
    client.set_logging_level("debug")
    assert envelope()[LOG_LEVEL] == "debug"
    client.set_logging_level(None)
    assert LOG_LEVEL not in envelope()
    client.sampling_handler = lambda params: {
        "role": "assistant",
        "content": {"type": "text", "text": "hi"},
        "model": "m",
    }
    assert envelope()[CLIENT_CAPABILITIES] == {"roots": {}, "sampling": {}}
    client.elicitation_handler = lambda params: {"action": "decline"}
    assert envelope()[CLIENT_CAPABILITIES] == {
        "roots": {},
        "sampling": {},
        "elicitation": {"form": {}},
    }
    client.client_info = {"name": "renamed", "version": "2"}
    assert envelope()[CLIENT_INFO] == {"name": "renamed", "version": "2"}
    client.set_roots(["file:///b"])
    assert envelope()[CLIENT_CAPABILITIES]["roots"] == {}


def test_a_callers_own_meta_and_the_tasks_extension_stay_with_their_request(recorded):
    client, metas = recorded
    client.request("tools/call", {"name": "record", "_meta": {"trace": "abc"}})
    assert metas[-1]["trace"] == "abc" and metas[-1][PROTOCOL_VERSION] == "2026-07-28"
    client.call_tool("record")
    assert "trace" not in metas[-1]
    tasked = envelope_meta(client.connection, declares=("io.modelcontextprotocol/tasks",))
    assert "extensions" in tasked[CLIENT_CAPABILITIES]
    client.call_tool("record")
    assert "extensions" not in metas[-1][CLIENT_CAPABILITIES]


def test_another_revision_gets_its_own_envelope(recorded):
    client, _metas = recorded
    speaking = envelope_meta(client.connection)
    other = envelope_meta(client.connection, "2099-01-01")  # a version adopted after -32022
    assert (speaking[PROTOCOL_VERSION], other[PROTOCOL_VERSION]) == ("2026-07-28", "2099-01-01")
    assert envelope_meta(client.connection) is speaking


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_the_pending_table_holds_futures_keyed_by_request_id(era):
    """The card's shape: an outgoing request waits on a ``concurrent.futures.Future`` held in the
    session's dict keyed by its request id, and leaves it once answered."""
    server, gate = Server("held", version="1.0"), threading.Event()

    @server.tool()
    def held() -> str:
        """Answer once the test lets it."""
        assert gate.wait(WAIT)
        return "ok"

    client = Client.in_memory(server, era=era, timeout=WAIT)
    try:
        session = client.connection.session
        future = client.start_tool_call("held").pending
        assert isinstance(future, Future) and session._pending[future.id] is future
        gate.set()
        assert future.result()["content"][0]["text"] == "ok"
        assert future.done() and future.id not in session._pending
    finally:
        gate.set()
        client.close()
