"""The session engine over real subprocesses, mcp_ref on both sides: concurrency,
timeouts, progress, cancellation both ways, ping both ways, closing."""

import json
import queue
import sys
import threading
import time

import pytest
from conftest import (
    DEMO_IN_PROCESS,
    SERVERS,
    WAIT,
    Collector,
    InMemory,
    Workers,
    handshake_era,
    outcome_within,
    run_threads,
    schema_errors,
)

from mcp_ref import Client, ConnectionClosed, InvalidRequest, RequestCancelled, RequestTimeout
from mcp_ref.session import DEFAULT_MAX_TOTAL_FACTOR


@pytest.fixture
def connect(connect):
    """The session's own machinery (ping, cancellation both ways, initialize): the handshake era."""
    return handshake_era(connect)


SESSION_SERVER = [sys.executable, str(SERVERS / "session_server.py")]


def closed_completely(client):
    """Close the client and wait for its reader to see the server's end of output.

    Afterwards the trace holds every message the server ever wrote, so a test
    can assert that some answer was never sent.
    """
    client.close()
    assert client.session.wait_closed(WAIT)


# -- concurrency ----------------------------------------------------------------------------


@pytest.mark.slow
def test_hundreds_of_requests_in_flight_from_many_threads(connect, wire):
    threads_count, per_thread = 16, 16  # 256 calls, all outstanding before any is answered
    client = connect(SESSION_SERVER, roots=[])
    started = threading.Barrier(threads_count + 1, timeout=WAIT)
    gate_open = threading.Event()
    calls: dict[int, list] = {}

    def worker(t: int) -> None:
        try:
            mine = [
                (t * 1000 + i, client.start_tool_call("gated", {"n": t * 1000 + i}))
                for i in range(per_thread)
            ]
            calls[t] = mine
            started.wait()
            assert gate_open.wait(WAIT)
            for n, call in mine:
                result = call.result()
                assert not result.is_error, result
                assert result.content[0].text == str(n)
                assert result.structured_content in (None, {"result": n})
        except BaseException:
            started.abort()  # the main thread stops waiting; workers.join() reports the failure
            raise

    workers = Workers(worker, threads_count).start()
    started.wait()
    in_flight = [call for mine in calls.values() for _, call in mine]
    assert len(in_flight) == threads_count * per_thread
    # The server holds every call at the gate, so none can have been answered yet.
    assert sum(not call.done() for call in in_flight) == threads_count * per_thread
    assert len({call.request_id for call in in_flight}) == len(in_flight)
    client.set_roots([])  # notifications/roots/list_changed opens the gate
    gate_open.set()
    workers.join(WAIT * 2)  # fails with every thread's failure listed
    # Every request got exactly one answer, carrying its own id.
    init_id = wire.sent("initialize")[0]["id"]
    answers = [
        m["id"] for m in wire.received() if ("result" in m or "error" in m) and m["id"] != init_id
    ]
    asked = [m["id"] for m in wire.sent("tools/call")]
    assert sorted(answers) == sorted(asked) and len(asked) == threads_count * per_thread


# -- timeouts and progress ---------------------------------------------------------------------


@pytest.mark.slow
def test_timeout_raises_and_the_server_is_told_to_cancel(connect, wire):
    client = connect(SESSION_SERVER)
    call = client.start_tool_call("block", {"key": "timed-out"}, timeout=0.3)
    start = time.monotonic()
    with pytest.raises(RequestTimeout):
        call.result()
    assert time.monotonic() - start >= 0.25
    cancels = wire.sent("notifications/cancelled")
    assert [c["params"]["requestId"] for c in cancels] == [call.request_id]
    # The server's handler saw the cancellation.
    assert client.call_tool("recorded", {"key": "timed-out"}).content[0].text == "cancelled"
    closed_completely(client)
    assert not [m for m in wire.received() if m.get("id") == call.request_id and "method" not in m]


def test_progress_callbacks_arrive_in_order_before_the_result(connect, wire):
    client = connect(DEMO_IN_PROCESS)
    seen = []
    caller = threading.current_thread()
    threads = set()

    def on_progress(progress, total, message):
        threads.add(threading.current_thread())
        seen.append((progress, total, message))

    result = client.call_tool("count_slowly", {"steps": 8, "delay": 0.001}, on_progress=on_progress)
    assert result.content[0].text == "counted to 8"
    assert seen == [(step, 8, f"step {step} of 8") for step in range(1, 9)]
    assert caller not in threads  # callbacks run on the session's callback thread
    token = wire.sent("tools/call")[0]["params"]["_meta"]["progressToken"]
    assert {n["params"]["progressToken"] for n in wire.received("notifications/progress")} == {
        token
    }


def test_without_on_progress_no_token_is_sent_and_no_progress_arrives(connect, wire):
    client = connect(DEMO_IN_PROCESS)
    client.call_tool("count_slowly", {"steps": 3, "delay": 0.001})
    assert "_meta" not in wire.sent("tools/call")[0]["params"]
    assert wire.received("notifications/progress") == []


def test_slow_call_without_progress_reset_times_out(connect):
    client = connect(DEMO_IN_PROCESS)
    with pytest.raises(RequestTimeout):
        client.call_tool(
            "count_slowly", {"steps": 10, "delay": 0.1}, timeout=0.5, on_progress=lambda *a: None
        )


def test_progress_resets_the_timeout_of_a_slow_call(connect):
    client = connect(DEMO_IN_PROCESS)
    steps = []
    start = time.monotonic()
    result = client.call_tool(
        "count_slowly",
        {"steps": 20, "delay": 0.05},
        timeout=0.5,
        reset_timeout_on_progress=True,
        on_progress=lambda progress, total, message: steps.append(progress),
    )
    assert result.content[0].text == "counted to 20"
    assert time.monotonic() - start > 0.5  # it outlived its own timeout
    assert steps == list(range(1, 21))


def test_max_total_timeout_caps_a_call_kept_alive_by_progress(connect, wire):
    client = connect(DEMO_IN_PROCESS)
    steps = []
    call = client.start_tool_call(
        "count_slowly",
        {"steps": 20, "delay": 0.05},
        timeout=0.5,
        reset_timeout_on_progress=True,
        max_total_timeout=0.7,
        on_progress=lambda progress, total, message: steps.append(progress),
    )
    with pytest.raises(RequestTimeout, match="total time limit"):
        call.result()
    assert steps and steps[-1] < 20  # it was still progressing when the cap cut it off
    assert [c["params"]["requestId"] for c in wire.sent("notifications/cancelled")] == [
        call.request_id
    ]


@pytest.mark.parametrize("where", ["progress callback", "list-changed callback"])
def test_a_call_with_progress_made_from_a_callback_gets_its_answer(connect, wire, where):
    """A callback runs on the session's callback thread; a call with ``on_progress`` made there
    must not wait for its answer to be settled on that same thread, behind itself (it waited for
    ever: past its timeout, and past close()).  Its progress reports all come, after it returns."""
    outcome = {}
    answered, drained = threading.Event(), threading.Event()
    inner_progress = []

    def call_from_callback(*_):
        if outcome:  # once
            return
        try:
            result = client.call_tool(
                "count_slowly",
                {"steps": 1, "delay": 0},
                on_progress=lambda *report: inner_progress.append(report),
                timeout=WAIT / 2,
            )
            outcome["value"] = result.content[0].text
        except Exception as exc:  # a timeout would show here
            outcome["value"] = exc
        answered.set()

    client = connect(on_list_changed=call_from_callback)  # the demo server, over stdio
    if where == "progress callback":
        client.start_tool_call(
            "count_slowly", {"steps": 1, "delay": 0}, on_progress=call_from_callback
        )
    else:
        client.call_tool("add_tool", {"name": "fresh"})
    assert answered.wait(WAIT), "the call made from the callback never returned"
    assert outcome["value"] == "counted to 1"
    client.session.call_soon(drained.set)  # runs after the inner call's progress callback
    assert drained.wait(WAIT)
    assert inner_progress == [(1, 1, "step 1 of 1")]


def test_an_answer_queued_behind_a_slow_callback_is_the_caller_s_past_its_timeout(connect, wire):
    """An answer with progress is settled on the callback thread, after the callbacks queued
    before it.  One that came within the timeout is the caller's, and it has it at its deadline
    however long those callbacks take: the thread is the session's, shared by every request, so
    another request's callback that blocks held the caller without bound (and before that the
    answer was thrown away 1 s past the timeout, RequestTimeout).  The peer gets no cancellation.
    The other request's callback blocks until the call returns (WAIT at most)."""
    client = connect()  # the demo server, over stdio
    busy, returned = threading.Event(), threading.Event()
    released_by_the_return = []

    def blocking(*_):
        busy.set()
        released_by_the_return.append(returned.wait(WAIT))

    def call():
        try:
            return client.call_tool(
                "count_slowly", {"steps": 1, "delay": 0}, on_progress=lambda *_: None, timeout=1.0
            )
        finally:
            returned.set()

    first = client.start_tool_call("count_slowly", {"steps": 1, "delay": 0}, on_progress=blocking)
    assert busy.wait(WAIT)
    outcome = outcome_within(call)
    assert not isinstance(outcome, Exception), outcome
    assert outcome.content[0].text == "counted to 1"
    assert first.result().content[0].text == "counted to 1"
    assert released_by_the_return == [True]  # it returned while the callback still blocked
    assert wire.sent("notifications/cancelled") == []


@pytest.mark.parametrize("end", ["close()", "the server exits"])
def test_the_end_of_the_session_gives_a_held_answer_to_its_caller(wire, end):
    """An answer held behind a callback that blocks (another request's: the callback thread is
    the session's) is settled with that answer when the session ends, by close() or at the end of
    input: a caller with no timeout waited as long as the callback blocked, past close()."""
    from conftest import DEMO

    busy, release, answer_read = threading.Event(), threading.Event(), threading.Event()

    def blocking(*_):
        busy.set()
        release.wait(WAIT * 2)  # past the wait for the outcome below

    def trace(direction, data):
        wire(direction, data)
        if direction == "<--" and b"counted to 2" in data:
            answer_read.set()  # its answer: the next message read comes after it was routed

    client = Client.stdio(DEMO, era="handshake", trace=trace, timeout=None)
    try:
        client.start_tool_call("count_slowly", {"steps": 1, "delay": 0}, on_progress=blocking)
        assert busy.wait(WAIT)
        call = client.start_tool_call(
            "count_slowly", {"steps": 2, "delay": 0}, on_progress=lambda *_: None
        )
        assert answer_read.wait(WAIT)
        client.ping()  # answered after the call's answer was read: that one is held now
        assert not call.done()
        if end == "close()":
            client.close()
        else:
            client.session.transport.process.kill()
        outcome = outcome_within(call.result)
        assert not isinstance(outcome, Exception), outcome
        assert outcome.content[0].text == "counted to 2"
    finally:
        release.set()
        client.close()


def test_a_call_sent_from_a_callback_and_waited_for_elsewhere_sees_its_progress_first(connect):
    """Whether a caller waits on the callback thread is decided where it waits: a call with
    ``on_progress`` started in a callback and waited for on another thread gets every progress
    report before its result, as any such call (it got its result first: the thread that sent it
    decided).  The callback goes on for a while after starting it, or until the result came."""
    client = connect()  # the demo server, over stdio
    started, returned = queue.Queue(), threading.Event()
    seen = []

    def start_inner(*_):
        if started.empty():  # once
            started.put(
                client.start_tool_call(
                    "count_slowly",
                    {"steps": 3, "delay": 0},
                    on_progress=lambda progress, *_: seen.append(progress),
                )
            )
            returned.wait(1.0)  # the answer comes meanwhile, behind this callback

    client.start_tool_call("count_slowly", {"steps": 1, "delay": 0}, on_progress=start_inner)
    inner = started.get(timeout=WAIT)
    try:
        assert inner.result().content[0].text == "counted to 3"
        assert seen == [1, 2, 3]
    finally:
        returned.set()


# -- cancellation ---------------------------------------------------------------------------------


def started_block(client, key: str, **arguments):
    """A ``block`` call, once its handler runs on the server (its first progress says so)."""
    running = threading.Event()
    call = client.start_tool_call(
        "block", {"key": key, **arguments}, on_progress=lambda *_: running.set()
    )
    assert running.wait(WAIT)
    return call


@pytest.mark.slow
def test_client_cancels_a_call(connect, wire):
    client = connect(SESSION_SERVER)
    call = started_block(client, "c1")
    assert call.cancel("user pressed stop") is True
    with pytest.raises(RequestCancelled):
        call.result()
    assert call.done()
    assert call.cancel() is False  # already settled
    assert [c["params"] for c in wire.sent("notifications/cancelled")] == [
        {"requestId": call.request_id, "reason": "user pressed stop"}
    ]
    # The handler on the server saw ctx.is_cancelled ...
    assert client.call_tool("recorded", {"key": "c1"}).content[0].text == "cancelled"
    # ... and, once everything the server wrote has been read, no answer to the cancelled call was sent.
    closed_completely(client)
    assert not [m for m in wire.received() if m.get("id") == call.request_id and "method" not in m]


@pytest.mark.slow
@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_cancelled_request_gets_no_more_messages_from_a_handler_that_goes_on(
    connect, wire, version
):
    # 2026-07-28 basic/transports/stdio §Cancellation: servers "MUST NOT send any further messages
    # for it"; 2025-11-25 basic/utilities/cancellation: the receiver SHOULD "Stop processing".
    logs, sampled = Collector(), []
    client = connect(
        SESSION_SERVER, protocol_version=version, on_log=logs, sampling_handler=sampled.append
    )
    running = threading.Event()
    call = client.start_tool_call(
        "keeps_going", {"key": version}, on_progress=lambda *_: running.set()
    )
    assert running.wait(WAIT)
    call.cancel()
    handshake = version == "2025-11-25"
    asked = "refused" if handshake else "not asked"  # (2026-07-28: no request to the client)
    assert client.call_tool("recorded", {"key": version}).text == f"progress sent: False, {asked}"
    closed_completely(client)  # every message the server wrote has been read
    progress = [m["params"]["progress"] for m in wire.received("notifications/progress")]
    assert progress == [1]
    messages = [m["params"]["data"] for m in wire.received("notifications/message")]
    assert messages == ["before the cancel"]
    assert sampled == [] and wire.received("sampling/createMessage") == []


@pytest.mark.slow
def test_cancelling_one_call_leaves_the_others_alone(connect, wire):
    client = connect(SESSION_SERVER)
    keep = client.start_tool_call("block", {"key": "keep", "seconds": 0.2})
    drop = started_block(client, "drop")
    drop.cancel()
    assert keep.result().content[0].text == "finished"
    assert client.call_tool("recorded", {"key": "keep"}).content[0].text == "not cancelled"
    assert client.call_tool("recorded", {"key": "drop"}).content[0].text == "cancelled"


def test_initialize_cannot_be_cancelled(connect, wire):
    client = connect(DEMO_IN_PROCESS)
    pending = client.session.send_request(
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "x", "version": "1"},
        },
    )
    with pytest.raises(ValueError):
        pending.cancel()
    with pytest.raises(
        InvalidRequest
    ):  # the server refuses a second initialize; it was not cancelled
        pending.result()
    assert wire.sent("notifications/cancelled") == []


@pytest.mark.slow
def test_server_cancels_its_request_to_the_client(connect, wire):
    saw_cancel = threading.Event()
    handler_done = threading.Event()

    def sampling(params, context):  # a two-argument handler is given its RequestContext
        try:
            if context.cancelled.wait(WAIT):
                saw_cancel.set()
            return {
                "role": "assistant",
                "content": {"type": "text", "text": "too late"},
                "model": "slow",
            }
        finally:
            handler_done.set()

    client = connect(SESSION_SERVER, sampling_handler=sampling)
    result = client.call_tool("sample_briefly", {"timeout": 0.3})
    assert result.content[0].text == "timed out"
    asked = wire.received("sampling/createMessage")
    assert len(asked) == 1
    cancels = wire.received("notifications/cancelled")
    assert [c["params"]["requestId"] for c in cancels] == [asked[0]["id"]]
    assert saw_cancel.wait(WAIT), "the client's handler context was not marked cancelled"
    assert handler_done.wait(WAIT)
    closed_completely(client)  # every handler has finished, every reply has been traced
    assert not [m for m in wire.sent() if m.get("id") == asked[0]["id"] and "method" not in m], (
        "a cancelled request was answered"
    )


# -- ping -----------------------------------------------------------------------------------------


def test_client_pings_server(connect, wire):
    client = connect(DEMO_IN_PROCESS)
    assert client.ping() is None
    ping = wire.sent("ping")
    assert len(ping) == 1 and "params" not in ping[0]
    assert {"jsonrpc": "2.0", "id": ping[0]["id"], "result": {}} in wire.received()


@pytest.mark.slow
def test_server_pings_client(connect, wire):
    client = connect(SESSION_SERVER)
    assert client.call_tool("ping_client").content[0].text == "pong {}"
    ping = wire.received("ping")
    assert len(ping) == 1
    assert {"jsonrpc": "2.0", "id": ping[0]["id"], "result": {}} in wire.sent()


# -- the trace hook -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("failing", ["-->", "<--"])
def test_a_trace_hook_that_raises_loses_no_message(failing, caplog):
    """A ``trace`` hook that raises for every message one way (the inspector's did, on a message
    nested too deep for its masking): the failure is logged and the message goes on, written or
    read, as with no hook (a message read was dropped, so its request waited for its timeout; one
    written was not written, and its request failed with the hook's exception)."""
    from conftest import DEMO

    seen: list[str] = []

    def trace(direction: str, data: bytes) -> None:
        seen.append(direction)
        if direction == failing:
            raise RuntimeError("the hook is broken")

    with caplog.at_level("ERROR", logger="mcp_ref.request"):
        with Client.stdio(DEMO, trace=trace, timeout=WAIT, era="handshake") as client:
            assert client.call_tool("echo", {"text": "hi"}).content[0].text == "hi"
    assert {"-->", "<--"} <= set(seen)
    failures = [
        r for r in caplog.records if r.exc_info and "the hook is broken" in str(r.exc_info[1])
    ]
    assert failures and all("failed" in r.getMessage() for r in failures)


# -- re-entrant handlers ------------------------------------------------------------------------------


@pytest.mark.slow
def test_callbacks_into_the_peer_while_other_calls_run_do_not_deadlock(connect, wire):
    holder = {}

    def sampling(params):
        # The client's handler calls back into the server while the server's tool waits for it.
        question = params.messages[0].content.text
        echoed = (
            holder["client"].call_tool("echo", {"text": f"answer to {question}"}).content[0].text
        )
        return {"role": "assistant", "content": {"type": "text", "text": echoed}, "model": "nested"}

    client = holder["client"] = connect(DEMO_IN_PROCESS, sampling_handler=sampling)

    def worker(t):
        for i in range(5):
            reply = client.call_tool("ask_llm", {"question": f"q{t}.{i}"})
            assert reply.content[0].text == f"nested says: answer to q{t}.{i}"
            assert client.call_tool("add", {"a": t, "b": i}).content[0].text in (
                f"{t + i}",
                f"{float(t + i)}",
            )

    run_threads(worker, 8, timeout=WAIT * 2)  # a deadlocked worker shows as "still running"
    assert len(wire.received("sampling/createMessage")) == 40


# -- closing --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_close_fails_every_pending_request_with_connection_closed(connect, wire):
    client = connect(SESSION_SERVER, shutdown_timeout=0.5)
    calls = [client.start_tool_call("block", {"key": f"k{i}"}) for i in range(5)]
    closer = threading.Thread(target=client.close)
    start = time.monotonic()
    closer.start()
    for call in calls:
        with pytest.raises(ConnectionClosed):
            call.result()
    assert time.monotonic() - start < WAIT / 2  # failed by close, not by a timeout
    closer.join(WAIT)
    assert not closer.is_alive()
    assert client.session.is_closed
    assert client.session.transport.returncode is not None  # the server process is gone


@pytest.mark.slow
def test_close_cancels_pending_calls_so_the_server_exits_by_itself(connect, wire):
    # A long shutdown_timeout: if the server did not stop its handlers on the
    # cancellations, close() would wait for it and then need SIGTERM.
    client = connect(SESSION_SERVER, shutdown_timeout=WAIT)
    calls = [client.start_tool_call("block", {"key": f"c{i}"}) for i in range(3)]
    start = time.monotonic()
    client.close()
    assert time.monotonic() - start < WAIT / 2
    assert client.session.transport.returncode == 0  # exited on stdin EOF, no signal
    cancelled = sorted(m["params"]["requestId"] for m in wire.sent("notifications/cancelled"))
    assert cancelled == sorted(call.request_id for call in calls)
    for call in calls:
        with pytest.raises(ConnectionClosed):
            call.result()


#: Client.close() waits this long for the connection's end; a close() on one of the session's own
#: threads used to wait all of it for itself (the end waits for that thread).
CLOSE_WAITS = 5.0


@pytest.mark.slow
@pytest.mark.parametrize("where", ["sampling handler", "progress callback"])
def test_close_from_the_sessions_own_thread_does_not_wait_for_itself(connect, wire, where):
    returned = threading.Event()
    client = None

    def close_here(*_):
        client.close()
        returned.set()
        return {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}

    if where == "sampling handler":
        client = connect(SESSION_SERVER, sampling_handler=close_here)
        call = client.start_tool_call("sample_briefly", {"timeout": WAIT})
    else:
        client = connect(SESSION_SERVER)
        call = client.start_tool_call("block", {"key": "closing"}, on_progress=close_here)
    assert returned.wait(CLOSE_WAITS / 2), f"close() from the {where} waited for itself"
    with pytest.raises(ConnectionClosed):
        call.result()
    assert client.session.wait_closed(WAIT)


def test_requests_after_close_raise_connection_closed(connect, wire):
    client = connect(DEMO_IN_PROCESS)
    client.close()
    written = len(wire.sent())
    with pytest.raises(ConnectionClosed):
        client.ping()
    with pytest.raises(ConnectionClosed):
        client.call_tool("echo", {"text": "x"})
    with pytest.raises(ConnectionClosed):
        client.list_tools()
    with pytest.raises(ConnectionClosed):
        client.session.notify("notifications/roots/list_changed")
    assert len(wire.sent()) == written
    client.close()  # idempotent


@pytest.mark.slow
def test_server_exit_fails_pending_requests(connect, wire):
    client = connect(SESSION_SERVER)
    call = client.start_tool_call("block", {"key": "k"})
    client.session.transport.process.kill()
    with pytest.raises(ConnectionClosed):
        call.result()
    assert client.session.wait_closed(WAIT)
    with pytest.raises(ConnectionClosed):
        client.ping()


# -- behaviour spec_notes listed as untested ------------------------------------------------------

UNTESTED = InMemory("untested_server", "full")
RAW_SERVER = [sys.executable, str(SERVERS / "untested_raw_server.py")]


def test_a_timed_out_initialize_is_not_cancelled(tmp_path, wire):
    record = tmp_path / "received"
    start = time.monotonic()
    with pytest.raises(RequestTimeout, match="initialize"):
        Client.stdio(
            [*RAW_SERVER, "silent-init", str(record)],
            timeout=0.3,
            stderr="capture",
            trace=wire,
            era="handshake",
            shutdown_timeout=WAIT,
        )
    assert time.monotonic() - start < WAIT / 2
    # The failed client closed the server's stdin and waited for it to exit: the record is complete.
    lines = record.read_text().splitlines()
    assert lines[-1] == "EOF"
    # cancellation: "The initialize request MUST NOT be cancelled by clients" — not even on timeout.
    assert [json.loads(line).get("method") for line in lines[:-1]] == ["initialize"]
    assert wire.sent("notifications/cancelled") == []


def test_ping_is_answered_while_every_handler_is_busy(connect, wire):
    client = connect(UNTESTED, roots=[])
    # More calls than the server's 32 handler threads: 32 block at the gate, 8 wait in the queue.
    calls = [client.start_tool_call("gated", {"n": n}) for n in range(40)]
    client.ping(timeout=2)  # read after all 40 calls; a ping queued behind them would time out
    assert not any(call.done() for call in calls)
    client.set_roots([])  # opens the gate
    assert [call.result().content[0].text for call in calls] == [str(n) for n in range(40)]


class SessionClock:
    """``time`` as mcp_ref.session and mcp_ref.request see it: ``monotonic()`` is ``now``, which only
    the test moves (a whole number to start with, so that steps of 1/8 s add up exactly)."""

    def __init__(self) -> None:
        self.now = float(int(time.monotonic()))

    def monotonic(self) -> float:
        return self.now

    def __getattr__(self, name: str):
        return getattr(time, name)


@pytest.mark.slow
def test_progress_reset_without_a_cap_is_capped_at_ten_timeouts(connect, wire, monkeypatch):
    # Deadlines are read on the session's clock, which the test moves: a busy machine that delays a
    # progress report past the timeout in real time cannot end the call by its timeout.
    import mcp_ref.cancellation  # where a progress report resets the timeout
    import mcp_ref.request
    import mcp_ref.session

    assert DEFAULT_MAX_TOTAL_FACTOR == 10
    clock = SessionClock()
    monkeypatch.setattr(mcp_ref.cancellation, "time", clock)
    monkeypatch.setattr(mcp_ref.request, "time", clock)
    monkeypatch.setattr(mcp_ref.session, "time", clock)
    client = connect(UNTESTED)
    progress = Collector()
    timeout = 0.25
    call = client.start_tool_call(
        "progress_forever",
        {"key": "capped"},
        timeout=timeout,
        reset_timeout_on_progress=True,
        on_progress=lambda value, total, message: progress(value),
    )
    # The cap is fixed as the request starts: 10 x the timeout from then.
    assert call.pending.hard_deadline == clock.now + 10 * timeout
    waiting = Workers(lambda _: call.result(), 1).start()  # waits all along, as a caller does
    # Time moves half a timeout at a time, each step once a report has reset the timeout at the
    # present time (the reader resets it before it queues the report's callback).
    while clock.now < call.pending.hard_deadline:
        progress.wait_until(lambda _: call.pending.deadline == clock.now + timeout)
        clock.now += timeout / 2
    # The cap ended it, not the timeout, which progress kept resetting.
    with pytest.raises(AssertionError, match="total time limit") as ended:
        waiting.join()
    assert isinstance(ended.value.__cause__, RequestTimeout)
    assert len(progress) >= 10
    assert [c["params"]["requestId"] for c in wire.sent("notifications/cancelled")] == [
        call.request_id
    ]
    assert client.call_tool("recorded", {"key": "capped"}).content[0].text == "cancelled"


def test_non_increasing_progress_is_refused_in_the_tool(connect, wire):
    client = connect(UNTESTED)
    seen = []
    result = client.call_tool(
        "bad_progress", on_progress=lambda value, total, message: seen.append(value)
    )
    first, again, lower, last = json.loads(result.content[0].text)
    assert first is True and last is True
    assert again.startswith("ValueError") and lower.startswith("ValueError")
    assert seen == [1, 2]
    assert [n["params"]["progress"] for n in wire.received("notifications/progress")] == [1, 2]


def test_client_handler_reports_progress_on_a_server_request(connect, wire):
    # Context.sample has no progress option; the session's send_request(on_progress=...) is used by the tool.
    def sampling(params, context):
        context.report_progress(1, 3, "thinking")
        context.report_progress(2, 3)
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "done"},
            "model": "progressive",
        }

    client = connect(UNTESTED, sampling_handler=sampling)
    answer = json.loads(client.call_tool("sample_with_progress").content[0].text)
    # Every report reached the server before the result did.
    assert answer == {"model": "progressive", "progress": [[1, 3, "thinking"], [2, 3, None]]}
    token = wire.received("sampling/createMessage")[0]["params"]["_meta"]["progressToken"]
    assert [n["params"] for n in wire.sent("notifications/progress")] == [
        {"progressToken": token, "progress": 1, "total": 3, "message": "thinking"},
        {"progressToken": token, "progress": 2, "total": 3},
    ]


@pytest.mark.slow
@pytest.mark.parametrize("params", [{"reason": "no id"}, {}], ids=["reason-only", "empty"])
def test_a_cancel_without_request_id_is_ignored(raw_peer, params):
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}
    assert (
        schema_errors("2025-11-25", "CancelledNotification", cancel) == []
    )  # requestId is optional there
    peer = raw_peer()
    peer.initialize("2025-11-25")
    peer.send_json(
        {
            "jsonrpc": "2.0",
            "id": "w",
            "method": "tools/call",
            "params": {"name": "wait_for_cancel", "arguments": {"seconds": 0.5}},
        }
    )
    peer.send_json(cancel)
    peer.send_json({"jsonrpc": "2.0", "id": "p", "method": "ping"})
    assert peer.recv() == {"jsonrpc": "2.0", "id": "p", "result": {}}
    # The call in flight was not taken for the cancelled one: it ran to its end and was answered.
    reply = peer.recv()
    assert reply["id"] == "w" and reply["result"]["content"] == [
        {"type": "text", "text": "not cancelled"}
    ]


# -- spec_notes items ------------------------------------------------------------------------------

LATE_ANSWER_SERVER = [sys.executable, str(SERVERS / "notes_raw_server.py")]


def test_an_answer_after_the_caller_cancelled_is_dropped(connect, wire, caplog):
    # cancellation §Behavior Requirements 5: "The sender of the cancellation notification SHOULD
    # ignore any response to the request that arrives afterward."  The server holds the call
    # until it reads the cancel, then answers it anyway.
    client = connect(LATE_ANSWER_SERVER)
    call = client.start_tool_call("stubborn")
    with caplog.at_level("DEBUG", logger="mcp_ref.session"):
        assert call.cancel("changed my mind") is True
        with pytest.raises(RequestCancelled):
            call.result()
        # The server reads the cancel, sends the late answer, then reads and answers this call.
        assert client.call_tool("echo", {"text": "next"}).content[0].text == "next"
    assert wire.sent("notifications/cancelled")[0]["params"] == {
        "requestId": call.request_id,
        "reason": "changed my mind",
    }
    late = [m for m in wire.received() if m.get("id") == call.request_id]
    assert late == [
        {
            "jsonrpc": "2.0",
            "id": call.request_id,
            "result": {"content": [{"type": "text", "text": "late answer"}]},
        }
    ]
    # ignored quietly: a debug line, no warning (a cancelled request's answer is expected to race)
    assert f"ignored the answer to request {call.request_id!r}, given up" in caplog.text
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    with pytest.raises(RequestCancelled):  # the late answer did not settle the cancelled call
        call.result()
    client.ping()
    assert client.call_tool("echo", {"text": "still fine"}).content[0].text == "still fine"


# -- a request's cancellation: an Event that calls back ------------------------------------------


def test_a_cancellation_calls_its_callbacks_once_whoever_sets_it(caplog):
    from mcp_ref.cancellation import Cancellation
    from mcp_ref.request import RequestContext

    context = RequestContext(None, 1, "tools/call", {})
    cancelled = context.cancelled
    assert isinstance(cancelled, Cancellation)
    calls: list[str] = []
    kept, removed = (lambda: calls.append("kept")), (lambda: calls.append("removed"))

    def failing():
        raise RuntimeError("a callback that fails")

    cancelled.add_callback(failing)  # logged; the others still run
    cancelled.add_callback(kept)
    cancelled.add_callback(removed)
    cancelled.remove_callback(removed)
    cancelled.remove_callback(removed)  # twice: nothing to forget
    assert calls == []
    with caplog.at_level("ERROR", logger="mcp_ref.session"):
        setter = threading.Thread(target=cancelled.set)  # another owner sets it
        setter.start()
        setter.join(WAIT)
    assert context.is_cancelled
    assert calls == ["kept"]
    assert "a cancellation callback failed" in caplog.text
    cancelled.set()  # again: no callback runs twice
    assert calls == ["kept"]
    late: list[str] = []
    cancelled.add_callback(lambda: late.append(threading.current_thread().name))
    assert late == [threading.current_thread().name]  # already set: called at once, here


def test_a_cancellation_holds_a_bounded_number_of_callbacks_and_only_cancellations():
    from mcp_ref import cancellation
    from mcp_ref.cancellation import Cancellation
    from mcp_ref.request import RequestContext

    assert cancellation.MAX_CALLBACKS == 1_000
    cancelled = Cancellation()
    waits = [(lambda: None) for _ in range(cancellation.MAX_CALLBACKS)]
    for wait in waits:
        cancelled.add_callback(wait)
    with pytest.raises(RuntimeError, match="holds 1000 callbacks"):
        cancelled.add_callback(lambda: None)
    cancelled.remove_callback(waits[0])
    cancelled.add_callback(lambda: None)  # room again
    context = RequestContext(None, 1, "tools/call", {})
    with pytest.raises(TypeError, match="is a Cancellation"):
        context.cancelled = threading.Event()
    context.cancelled = cancelled
    assert context.cancelled is cancelled


def test_jobs_a_stopped_pool_never_runs_are_not_waited_for():
    # close() stops the pool (queued jobs never run), then the end of input drains it: the jobs
    # dropped must not count as unfinished, or drain() waits its whole grace for them.
    from mcp_ref.jsonrpc import Request
    from mcp_ref.request import HandlerPool

    running, release = threading.Event(), threading.Event()
    ran = []

    def run(request, context, batch):
        ran.append(request.id)
        running.set()
        assert release.wait(WAIT)

    pool = HandlerPool("test", 1)
    for request_id in range(4):  # one runs, three wait for the one thread
        pool.submit(run, Request(request_id, "tools/call", {}), None, None)
    assert running.wait(WAIT)
    pool.stop()
    release.set()
    assert pool.drain(WAIT)  # at once once the one running has ended
    assert ran == [0]
    assert all(job.done() for job in pool.jobs)
