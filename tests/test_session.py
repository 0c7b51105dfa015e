"""The session engine over real subprocesses, mcp_ref on both sides: concurrency,
timeouts, progress, cancellation both ways, ping both ways, closing."""

import sys
import threading
import time

import pytest

from mcp_ref import ConnectionClosed, InvalidRequest, RequestCancelled, RequestTimeout

from conftest import SERVERS, WAIT

SESSION_SERVER = [sys.executable, str(SERVERS / "session_server.py")]


def closed_completely(client):
    """Close the client and wait for its reader to see the server's end of output.

    Afterwards the trace holds every message the server ever wrote, so a test
    can assert that some answer was never sent.
    """
    client.close()
    assert client.session.wait_closed(WAIT)


# -- concurrency ----------------------------------------------------------------------------


def test_hundreds_of_requests_in_flight_from_many_threads(connect, wire):
    threads_count, per_thread = 16, 16  # 256 calls, all outstanding before any is answered
    client = connect(SESSION_SERVER, roots=[])
    started = threading.Barrier(threads_count + 1, timeout=WAIT)
    gate_open = threading.Event()
    calls: dict[int, list] = {}
    failures: list = []

    def worker(t: int) -> None:
        try:
            mine = [(t * 1000 + i, client.start_tool_call("gated", {"n": t * 1000 + i})) for i in range(per_thread)]
            calls[t] = mine
            started.wait()
            assert gate_open.wait(WAIT)
            for n, call in mine:
                result = call.result()
                assert not result.is_error, result
                assert result.content[0].text == str(n)
                assert result.structured_content in (None, {"result": n})
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)
            started.abort()

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(threads_count)]
    for thread in threads:
        thread.start()
    started.wait()
    in_flight = [call for mine in calls.values() for _, call in mine]
    assert len(in_flight) == threads_count * per_thread
    # The server holds every call at the gate, so none can have been answered yet.
    assert sum(not call.done() for call in in_flight) == threads_count * per_thread
    assert len({call.request_id for call in in_flight}) == len(in_flight)
    client.set_roots([])  # notifications/roots/list_changed opens the gate
    gate_open.set()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive()
    assert not failures, failures[0]
    # Every request got exactly one answer, carrying its own id.
    init_id = wire.sent("initialize")[0]["id"]
    answers = [m["id"] for m in wire.received() if ("result" in m or "error" in m) and m["id"] != init_id]
    asked = [m["id"] for m in wire.sent("tools/call")]
    assert sorted(answers) == sorted(asked) and len(asked) == threads_count * per_thread


# -- timeouts and progress ---------------------------------------------------------------------


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
    client = connect()
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
    assert {n["params"]["progressToken"] for n in wire.received("notifications/progress")} == {token}


def test_without_on_progress_no_token_is_sent_and_no_progress_arrives(connect, wire):
    client = connect()
    client.call_tool("count_slowly", {"steps": 3, "delay": 0.001})
    assert "_meta" not in wire.sent("tools/call")[0]["params"]
    assert wire.received("notifications/progress") == []


def test_slow_call_without_progress_reset_times_out(connect):
    client = connect()
    with pytest.raises(RequestTimeout):
        client.call_tool("count_slowly", {"steps": 10, "delay": 0.1}, timeout=0.5, on_progress=lambda *a: None)


def test_progress_resets_the_timeout_of_a_slow_call(connect):
    client = connect()
    steps = []
    start = time.monotonic()
    result = client.call_tool(
        "count_slowly", {"steps": 20, "delay": 0.05}, timeout=0.5, reset_timeout_on_progress=True,
        on_progress=lambda progress, total, message: steps.append(progress),
    )
    assert result.content[0].text == "counted to 20"
    assert time.monotonic() - start > 0.5  # it outlived its own timeout
    assert steps == list(range(1, 21))


def test_max_total_timeout_caps_a_call_kept_alive_by_progress(connect, wire):
    client = connect()
    steps = []
    call = client.start_tool_call(
        "count_slowly", {"steps": 20, "delay": 0.05}, timeout=0.5, reset_timeout_on_progress=True,
        max_total_timeout=0.7, on_progress=lambda progress, total, message: steps.append(progress),
    )
    with pytest.raises(RequestTimeout, match="total time limit"):
        call.result()
    assert steps and steps[-1] < 20  # it was still progressing when the cap cut it off
    assert [c["params"]["requestId"] for c in wire.sent("notifications/cancelled")] == [call.request_id]


# -- cancellation ---------------------------------------------------------------------------------


def test_client_cancels_a_call(connect, wire):
    client = connect(SESSION_SERVER)
    call = client.start_tool_call("block", {"key": "c1"})
    assert call.cancel("user pressed stop") is True
    with pytest.raises(RequestCancelled):
        call.result()
    assert call.done()
    assert call.cancel() is False  # already settled
    assert [c["params"] for c in wire.sent("notifications/cancelled")] == [
        {"requestId": call.request_id, "reason": "user pressed stop"}]
    # The handler on the server saw ctx.is_cancelled ...
    assert client.call_tool("recorded", {"key": "c1"}).content[0].text == "cancelled"
    # ... and, once everything the server wrote has been read, no answer to the cancelled call was sent.
    closed_completely(client)
    assert not [m for m in wire.received() if m.get("id") == call.request_id and "method" not in m]


def test_cancelling_one_call_leaves_the_others_alone(connect, wire):
    client = connect(SESSION_SERVER)
    keep = client.start_tool_call("block", {"key": "keep", "seconds": 0.2})
    drop = client.start_tool_call("block", {"key": "drop"})
    drop.cancel()
    assert keep.result().content[0].text == "finished"
    assert client.call_tool("recorded", {"key": "keep"}).content[0].text == "not cancelled"
    assert client.call_tool("recorded", {"key": "drop"}).content[0].text == "cancelled"


def test_initialize_cannot_be_cancelled(connect, wire):
    client = connect()
    pending = client.session.send_request("initialize", {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}})
    with pytest.raises(ValueError):
        pending.cancel()
    with pytest.raises(InvalidRequest):  # the server refuses a second initialize; it was not cancelled
        pending.result()
    assert wire.sent("notifications/cancelled") == []


def test_server_cancels_its_request_to_the_client(connect, wire):
    saw_cancel = threading.Event()
    handler_done = threading.Event()

    def sampling(params, context):  # a two-argument handler is given its RequestContext
        try:
            if context.cancelled.wait(WAIT):
                saw_cancel.set()
            return {"role": "assistant", "content": {"type": "text", "text": "too late"}, "model": "slow"}
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
    assert not [m for m in wire.sent() if m.get("id") == asked[0]["id"] and "method" not in m], \
        "a cancelled request was answered"


# -- ping -----------------------------------------------------------------------------------------


def test_client_pings_server(connect, wire):
    client = connect()
    assert client.ping() is None
    ping = wire.sent("ping")
    assert len(ping) == 1 and "params" not in ping[0]
    assert {"jsonrpc": "2.0", "id": ping[0]["id"], "result": {}} in wire.received()


def test_server_pings_client(connect, wire):
    client = connect(SESSION_SERVER)
    assert client.call_tool("ping_client").content[0].text == "pong {}"
    ping = wire.received("ping")
    assert len(ping) == 1
    assert {"jsonrpc": "2.0", "id": ping[0]["id"], "result": {}} in wire.sent()


# -- re-entrant handlers ------------------------------------------------------------------------------


def test_callbacks_into_the_peer_while_other_calls_run_do_not_deadlock(connect, wire):
    holder = {}

    def sampling(params):
        # The client's handler calls back into the server while the server's tool waits for it.
        question = params.messages[0].content.text
        echoed = holder["client"].call_tool("echo", {"text": f"answer to {question}"}).content[0].text
        return {"role": "assistant", "content": {"type": "text", "text": echoed}, "model": "nested"}

    client = holder["client"] = connect(sampling_handler=sampling)
    failures = []

    def worker(t):
        try:
            for i in range(5):
                reply = client.call_tool("ask_llm", {"question": f"q{t}.{i}"})
                assert reply.content[0].text == f"nested says: answer to q{t}.{i}"
                assert client.call_tool("add", {"a": t, "b": i}).content[0].text in (f"{t + i}", f"{float(t + i)}")
        except BaseException as exc:  # noqa: BLE001
            failures.append(exc)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
        assert not thread.is_alive(), "deadlock: a worker never finished"
    assert not failures, failures[0]
    assert len(wire.received("sampling/createMessage")) == 40


# -- closing --------------------------------------------------------------------------------------


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


def test_requests_after_close_raise_connection_closed(connect, wire):
    client = connect()
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


def test_server_exit_fails_pending_requests(connect, wire):
    client = connect(SESSION_SERVER)
    call = client.start_tool_call("block", {"key": "k"})
    client.session.transport.process.kill()
    with pytest.raises(ConnectionClosed):
        call.result()
    assert client.session.wait_closed(WAIT)
    with pytest.raises(ConnectionClosed):
        client.ping()
