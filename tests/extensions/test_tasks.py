"""The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663), both sides.

The server is tests/servers/tasks_server.py: over stdio a real subprocess driven with raw JSON
lines, over HTTP raw POSTs to a real socket (the same two peers as test_modern_server.py); the
client is mcp_ref's, against the same server in memory, over stdio and over HTTP, with every
message checked against the official schema (CreateTaskResult, outside the core schema, by
``wire_check.task_errors``).  See spec_notes/tasks.md.
"""

from __future__ import annotations

import re
import sys
import threading

import pytest
from conftest import SERVERS, WAIT, InMemory, WireChecker, client_over, raw_peer  # noqa: F401 - a fixture
from http_fixtures import serve  # noqa: F401 - a fixture
from test_modern_server import HttpPeer, StdioPeer, meta

from mcp_ref import (
    Client,
    Context,
    Extension,
    McpError,
    RequestCancelled,
    RequestTimeout,
    Server,
)
from mcp_ref.extensions.tasks import TaskStore
from mcp_ref.state.stores import MemoryTaskRecords

TASKS = InMemory("tasks_server")
SERVER = [sys.executable, str(SERVERS / "tasks_server.py")]
EXTENSION = "io.modelcontextprotocol/tasks"
WITH_TASKS = {"elicitation": {}, "extensions": {EXTENSION: {}}}
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")


class Raw:
    """A peer (stdio or HTTP) speaking 2026-07-28 with or without the extension."""

    def __init__(self, peer):
        self.peer = peer

    def ask(self, method: str, params: dict, capabilities=None, **headers) -> dict:
        params = {**params, "_meta": meta(WITH_TASKS if capabilities is None else capabilities)}
        if method.startswith("tasks/"):
            return self._raw(method, params, **headers)
        return self.peer.ask(method, params, **headers)

    def _raw(self, method: str, params: dict, **headers) -> dict:
        # tasks/* results are not in the core schema: the peers' schema check is for core methods only.
        peer = self.peer
        if isinstance(peer, StdioPeer):
            peer.next_id += 1
            peer.peer.send_json(
                {"jsonrpc": "2.0", "id": peer.next_id, "method": method, "params": params}
            )
            while True:
                message = peer.peer.recv()
                assert message is not None
                if message.get("id") == peer.next_id:
                    return message
        import requests

        from mcp_ref.http.headers import request_headers

        peer.next_id += 1
        sent = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            **request_headers(method, params),
            **headers,
        }
        reply = requests.post(
            peer.url,
            json={"jsonrpc": "2.0", "id": peer.next_id, "method": method, "params": params},
            headers=sent,
            timeout=WAIT,
        )
        return reply.json()

    def call(self, name: str, arguments=None, capabilities=None, **headers) -> dict:
        return self.ask(
            "tools/call", {"name": name, "arguments": arguments or {}}, capabilities, **headers
        )


@pytest.fixture(params=["stdio", "http"])
def raw(request, raw_peer, serve):
    if request.param == "stdio":
        peer = StdioPeer.__new__(StdioPeer)  # StdioPeer, on this module's server
        peer.peer, peer.next_id = raw_peer(SERVER), 0
        return Raw(peer)
    return Raw(HttpPeer(serve(TASKS.build())))


def created(answer: dict) -> dict:
    """A CreateTaskResult, checked as SEP-2663 §Task Creation shapes it."""
    result = answer["result"]
    assert result["resultType"] == "task"
    assert isinstance(result["taskId"], str) and result["status"] == "working"
    assert ISO.match(result["createdAt"]) and ISO.match(result["lastUpdatedAt"])
    assert isinstance(result["ttlMs"], int) and result["ttlMs"] > 0 and result["pollIntervalMs"] > 0
    assert (
        not {"task", "result", "error", "inputRequests", "requestState", "ttl", "pollInterval"}
        & result.keys()
    )
    return result


def poll(raw: Raw, task_id: str, done) -> dict:
    """``tasks/get`` until ``done(state)``, at the pace the task asks for (``pollIntervalMs``, as
    SEP-2663 says clients SHOULD), for at most WAIT seconds: polling is how the extension reports."""
    import time

    deadline = time.monotonic() + WAIT
    pause = threading.Event()
    while True:
        state = raw.ask("tasks/get", {"taskId": task_id})["result"]
        if done(state):
            return state
        assert time.monotonic() < deadline, f"task {task_id} stayed {state['status']}"
        pause.wait(state["pollIntervalMs"] / 1000)


# -- the server ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_discover_advertises_the_extension(raw):
    caps = raw.ask("server/discover", {})["result"]["capabilities"]
    assert caps["extensions"] == {EXTENSION: {}} and "tasks" not in caps


@pytest.mark.slow
def test_a_declaring_client_gets_a_task_it_can_poll_and_an_undeclaring_one_the_result(raw):
    task = created(raw.call("compute", {"n": 3}))
    got = raw.ask("tasks/get", {"taskId": task["taskId"]})
    # "MUST NOT return CreateTaskResult until the task is durably created": found at once.
    assert got["result"]["taskId"] == task["taskId"] and got["result"]["resultType"] == "complete"
    assert got["result"]["status"] == "working" and "requestState" not in got["result"]
    assert raw.call("release")["result"]["content"][0]["text"] == "released"
    sync = raw.call(
        "compute", {"n": 4}, capabilities={}
    )  # SEP-2663: never a task to a non-declaring client
    assert (
        sync["result"]["resultType"] == "complete"
        and sync["result"]["content"][0]["text"] == "4 squared is 16"
    )
    plain = raw.call("plain", {"text": "hi"})
    assert plain["result"]["resultType"] == "complete" and "taskId" not in plain["result"]


@pytest.mark.slow
def test_a_required_task_without_the_extension_is_missing_capability(raw):
    error = raw.call("forever", capabilities={})["error"]
    assert error["code"] == -32021
    assert error["data"]["requiredCapabilities"] == {"extensions": {EXTENSION: {}}}


@pytest.mark.slow
@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_task_methods_need_the_extension_then_a_known_id(raw, method):
    params = {"taskId": "no-such-task", "inputResponses": {}}
    assert (
        raw.ask(method, params, capabilities={})["error"]["code"] == -32021
    )  # checked before the id
    assert raw.ask(method, params)["error"]["code"] == -32602


@pytest.mark.slow
@pytest.mark.parametrize("method", ["tasks/result", "tasks/list"])
def test_methods_the_extension_removed_are_not_found(raw, method):
    assert raw.ask(method, {"taskId": "x"})["error"]["code"] == -32601


@pytest.mark.slow
def test_input_inside_a_task_goes_through_tasks_update(raw):
    task_id = created(raw.call("confirm", {"filename": "a.txt"}))["taskId"]
    state = poll(
        raw, task_id, lambda t: t["status"] != "working"
    )  # it reaches its ask on its own thread
    assert state["status"] == "input_required" and list(state["inputRequests"]) == ["confirm"]
    assert state["inputRequests"]["confirm"]["method"] == "elicitation/create"
    # Keys not outstanding are ignored (SEP-2663), even malformed: the acknowledgement is empty.
    ack = raw.ask(
        "tasks/update", {"taskId": task_id, "inputResponses": {"unknown": {"ignored": True}}}
    )["result"]
    assert ack == {"resultType": "complete", "_meta": ack["_meta"]}
    bad = raw.ask("tasks/update", {"taskId": task_id, "inputResponses": {"confirm": "yes"}})
    assert bad["error"]["code"] == -32602  # an outstanding ask's answer that is not a result object
    raw.ask(
        "tasks/update",
        {
            "taskId": task_id,
            "inputResponses": {"confirm": {"action": "accept", "content": {"confirm": True}}},
        },
    )
    state = poll(
        raw, task_id, lambda t: t["status"] == "input_required" and "name" in t["inputRequests"]
    )
    # Keys are unique over the task's life: the second "confirm" ask has a key of its own.
    second = sorted(state["inputRequests"])
    assert second[0] != "confirm" and second[0].startswith("confirm") and second[1] == "name"
    raw.ask(
        "tasks/update",
        {
            "taskId": task_id,
            "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}},
        },
    )  # a part: the other stays
    state = raw.ask("tasks/get", {"taskId": task_id})["result"]
    assert state["status"] == "input_required" and list(state["inputRequests"]) == [second[0]]
    raw.ask(
        "tasks/update",
        {
            "taskId": task_id,
            "inputResponses": {second[0]: {"action": "accept", "content": {"confirm": False}}},
        },
    )
    state = poll(raw, task_id, lambda t: t["status"] == "completed")
    assert state["result"]["content"][0]["text"] == "Ada deleted a.txt (False)"
    assert (
        "_meta" not in state["result"]
        or "io.modelcontextprotocol/related-task" not in state["result"]["_meta"]
    )


@pytest.mark.slow
def test_a_cancelled_task_ends_cancelled_and_cancel_is_acknowledged_even_when_finished(raw):
    task_id = created(raw.call("forever"))["taskId"]
    ack = raw.ask("tasks/cancel", {"taskId": task_id})["result"]
    assert (
        ack["resultType"] == "complete" and not {"taskId", "status", "result", "error"} & ack.keys()
    )
    state = poll(raw, task_id, lambda t: t["status"] in ("cancelled", "completed", "failed"))
    assert state["status"] == "cancelled"
    assert raw.ask("tasks/cancel", {"taskId": task_id})["result"]["resultType"] == "complete"


def test_a_task_waiting_for_input_is_cancelled_when_cancel_returns():
    # Its handler cannot go on without the input, so the server honours the cancel at once: a
    # tasks/get right after the acknowledgement says cancelled (it said input_required until the
    # handler's thread woke: a client that cancels and then looks saw a live task).  Here no runner
    # would ever finish the task, so only cancel() itself can make it cancelled.
    from mcp_ref.extensions.tasks import CANCELLED, INPUT_REQUIRED, Task
    from mcp_ref.server.input_required import Ask

    task = Task("t1", None, 60_000, 100)
    task.begin_run()
    raised: list[BaseException] = []

    def handler() -> None:
        try:
            task.ask([Ask("confirm", "elicitation/create", {"message": "sure?"}, dict)], None)
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=handler)
    with task.lock:
        thread.start()
        assert task.lock.wait_for(lambda: task.status == INPUT_REQUIRED, WAIT)
    task.cancel()
    assert task.status == CANCELLED and "inputRequests" not in task.to_wire()
    thread.join(WAIT)
    assert not thread.is_alive() and isinstance(raised[0], RequestCancelled)
    task.update({"confirm": {"action": "accept", "content": {}}})  # too late: ignored
    assert task.status == CANCELLED


@pytest.mark.slow
def test_failures_are_failed_and_tool_errors_completed(raw):
    failing = created(raw.call("protocol_error"))["taskId"]
    erring = created(raw.call("tool_error"))["taskId"]
    for task_id in (failing, erring):
        state = poll(raw, task_id, lambda t: t["status"] != "working")
        if task_id == failing:
            assert (
                state["status"] == "failed"
                and state["error"]["code"] == -32603
                and "result" not in state
            )
        else:
            assert state["status"] == "completed" and state["result"]["isError"] is True


@pytest.mark.parametrize(
    "kind, message", [("message", "not valid"), ("data", "refused")], ids=["message", "data"]
)
def test_a_task_failing_with_an_oddly_made_mcp_error_ends_failed(raw, kind, message):
    # An exception as the message was recorded as is, and data no JSON carries could not be
    # written: the task stayed "working" for its whole ttl.  It ends failed, its message a string
    # (schema Task.statusMessage: string), data no JSON carries left out.
    task_id = created(raw.call("odd_error", {"kind": kind}))["taskId"]
    state = poll(raw, task_id, lambda t: t["status"] != "working")
    assert state["status"] == "failed"
    assert state["error"] == {"code": -32603, "message": message}
    assert state.get("statusMessage", message) == message


@pytest.mark.slow
@pytest.mark.parametrize("relayed", [False, True])
def test_resource_not_found_is_32602_whether_the_call_is_a_task_or_not(raw, relayed):
    # 2026-07-28 basic/index §Error Codes: "Implementations of this protocol version MUST NOT emit
    # these codes: -32002"; server/resources §Error Handling: -32602.  A task's recorded error
    # (tasks/get) is emitted too, and a bare -32002 (relayed from an older server) is mapped as well.
    expected = {
        "code": -32602,
        "message": "Resource not found: notes://missing",
        "data": {"uri": "notes://missing"},
    }
    arguments = {"relayed": relayed}
    plain = raw.call("missing_resource", arguments, capabilities={})
    assert plain["error"] == expected
    task_id = created(raw.call("missing_resource", arguments))["taskId"]
    state = poll(raw, task_id, lambda t: t["status"] != "working")
    assert state["status"] == "failed" and state["error"] == expected


@pytest.mark.slow
def test_asks_before_the_task_are_input_required_rounds(raw):
    first = raw.call("ask_then_task")["result"]
    assert first["resultType"] == "input_required" and "taskId" not in first
    (key,) = first["inputRequests"]
    answer = raw.peer.ask(
        "tools/call",
        {
            "name": "ask_then_task",
            "arguments": {},
            "_meta": meta(WITH_TASKS),
            "inputResponses": {key: {"action": "accept", "content": {"name": "Alice"}}},
            "requestState": first["requestState"],
        },
    )
    task = created(answer)
    state = poll(raw, task["taskId"], lambda t: t["status"] != "working")
    assert state["result"]["content"][0]["text"] == "Hello, Alice!"


@pytest.mark.slow
def test_task_notifications_on_a_listen_stream_need_the_extension(raw):
    listen = {"notifications": {"taskIds": ["t1"], "toolsListChanged": True}}
    params = {**listen, "_meta": meta({})}
    answer = raw._raw("subscriptions/listen", params)  # refused before any stream opens
    assert answer["error"]["code"] == -32021
    assert answer["error"]["data"]["requiredCapabilities"] == {"extensions": {EXTENSION: {}}}


def test_the_http_routing_header_must_name_the_task(serve):
    raw = Raw(HttpPeer(serve(TASKS.build())))
    task_id = created(raw.call("forever"))["taskId"]
    assert (
        raw.ask("tasks/get", {"taskId": task_id}, **{"Mcp-Name": task_id})["result"]["taskId"]
        == task_id
    )
    wrong = raw.ask("tasks/get", {"taskId": task_id}, **{"Mcp-Name": "another-task"})
    assert wrong["error"]["code"] == -32020
    raw.ask("tasks/cancel", {"taskId": task_id})


def test_the_store_is_bounded_and_tasks_belong_to_their_creator():
    store = TaskStore(max_tasks=1)
    task = store.create("alice")
    assert store.find(task.id, "alice") is task
    with pytest.raises(McpError) as other:
        store.find(task.id, "bob")
    assert other.value.code == -32602
    with pytest.raises(McpError) as busy:
        store.create("alice")  # the only task has not finished
    assert busy.value.code == -31000 and busy.value.data == {"maxTasks": 1}
    task.finish("completed", result={"content": []})
    assert store.create("alice").id != task.id  # a finished task makes room
    with pytest.raises(ValueError):
        TaskStore(ttl_ms=0)  # ttlMs is null or positive


# -- the client ---------------------------------------------------------------------------------


def answers(params):
    schema = params.requested_schema["properties"]
    return {
        "action": "accept",
        "content": {"confirm": True} if "confirm" in schema else {"name": "Ada"},
    }


def clients(kind: str, serve, **options):
    wire = WireChecker()
    options.setdefault("elicitation_handler", answers)
    return client_over(kind, TASKS, serve, trace=wire, **options), wire


@pytest.fixture(params=["memory", "stdio", "http"])
def kind(request):
    return request.param


@pytest.mark.slow
def test_call_tool_with_task_polls_to_the_same_result(kind, serve):
    client, wire = clients(kind, serve)
    with client:
        assert (
            client.call_tool("confirm", {"filename": "b.txt"}, task=True).text
            == "Ada deleted b.txt (True)"
        )
        assert client.call_tool("ask_then_task", task=True).text == "Hello, Ada!"
        assert client.call_tool("tool_error", task=True).is_error
        with pytest.raises(McpError) as failed:
            client.call_tool("protocol_error", task=True)
        assert failed.value.code == -32603 and "refused" in failed.value.message
        # the extension travels on the requests that asked for it, and only on them
        calls = wire.sent("tools/call")
        assert all(
            EXTENSION
            in m["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]["extensions"]
            for m in calls
        )
        assert {m["method"] for m in wire.sent() if m.get("method", "").startswith("tasks/")} == {
            "tasks/get",
            "tasks/update",
        }
        assert client.call_tool("plain", {"text": "x"}).text == "x"
        assert (
            "extensions"
            not in wire.sent("tools/call")[-1]["params"]["_meta"][
                "io.modelcontextprotocol/clientCapabilities"
            ]
        )
    wire.assert_valid()


@pytest.mark.slow
def test_cancelling_a_task_sends_tasks_cancel(kind, serve):
    """A followed task is cancelled with ``tasks/cancel``, never ``notifications/cancelled``
    (SEP-2663).  The test cancelled as soon as the handle was read (traced), before the reader
    hands it to the call: a cancel then is the crossing case (the next test), and failed here.
    It now cancels once the handle is in."""
    wire = WireChecker()
    with client_over(kind, TASKS, serve, trace=wire) as client:
        call = client.start_tool_call("forever", task=True)
        outcome = []
        waiter = threading.Thread(target=lambda: outcome.append(_outcome(call)))
        waiter.start()
        assert call.pending.result()["resultType"] == "task"  # the handle is in, not only read
        assert call.cancel("enough") is True
        waiter.join(WAIT)
        assert outcome and isinstance(outcome[0], RequestCancelled)
        assert call.task_id and wire.sent("tasks/cancel")[-1]["params"]["taskId"] == call.task_id
        assert not wire.sent(
            "notifications/cancelled"
        )  # SEP-2663: "MUST NOT be used for task cancellation"
        state = client.get_task(call.task_id)
        assert state["taskId"] == call.task_id
    wire.assert_valid()


@pytest.mark.slow
def test_cancelling_a_task_no_one_follows_sends_tasks_cancel(kind, serve):
    # docs/first-client.md: "cancel() sends tasks/cancel" -- whether or not result() is following
    # the task: the id is the call's answer's, the task handle.  Sent once, and never
    # notifications/cancelled (SEP-2663 §Task Cancellation).
    wire = WireChecker()
    with client_over(kind, TASKS, serve, trace=wire) as client:
        call = client.start_tool_call("forever", task=True)
        assert call.pending.result()["resultType"] == "task"  # the handle is in; no result() asked
        assert call.cancel("enough") is True
        cancels = wire.sent("tasks/cancel")
        assert len(cancels) == 1 and cancels[0]["params"]["taskId"] == call.task_id
        with pytest.raises(RequestCancelled):
            call.result()
        # (its status may stay working a while: "Cancellation processing is eventually consistent")
        assert len(wire.sent("tasks/cancel")) == 1 and not wire.sent("notifications/cancelled")
        assert call.cancel() is False  # settled
    wire.assert_valid()


def test_a_task_handle_that_crossed_the_cancellation_gets_tasks_cancel():
    """cancel() before the handle is in cancels the ``tools/call``; when the handle was already on
    its way (the server made the task before it read the cancellation), no one follows that task:
    the late handle gets ``tasks/cancel`` (SEP-2663 §Task Cancellation), not dropped unnoticed."""
    wire = WireChecker()
    calls: list = []
    task_cancelled = threading.Event()

    def trace(direction, data):
        wire(direction, data)
        handle = direction == "<--" and b'"resultType":"task"' in data.replace(b" ", b"")
        if handle and calls and not calls[0].done():
            calls[0].cancel("enough")  # the handle has come, but not yet been read: the race
        if direction == "-->" and b'"tasks/cancel"' in data:
            task_cancelled.set()

    with Client.in_memory(TASKS.build(), trace=trace, timeout=WAIT) as client:
        call = client.start_tool_call("forever", task=True)
        calls.append(call)
        with pytest.raises(RequestCancelled):
            call.result()
        assert task_cancelled.wait(WAIT)
        (handle,) = [m for m in wire.received() if m.get("result", {}).get("resultType") == "task"]
        (cancel,) = wire.sent("tasks/cancel")
        assert cancel["params"]["taskId"] == handle["result"]["taskId"] == call.task_id
        assert wire.sent("notifications/cancelled")  # for the tools/call: its handle was not in
    wire.assert_valid()


def _outcome(call):
    try:
        return call.result()
    except Exception as exc:
        return exc


def test_a_task_that_outlives_the_callers_bound_is_a_timeout():
    with Client.in_memory(TASKS.build(), timeout=WAIT) as client:
        with pytest.raises(RequestTimeout):
            client.call_tool("forever", task=True, max_total_timeout=0.3)


def test_in_the_handshake_era_a_task_is_a_2025_11_25_one_and_before_it_task_changes_nothing():
    """The same tools serve the handshake era: at 2025-11-25 a task-augmented call becomes a task of
    that revision (``{task}``, followed with tasks/get and tasks/result: tests/extensions/test_tasks_2025.py);
    before it the server declares no tasks and the call simply answers."""
    with Client.in_memory(
        TASKS.build(), era="handshake", protocol_version="2025-06-18", timeout=WAIT
    ) as client:
        assert "tasks" not in client.server_capabilities
        assert client.call_tool("plain", {"text": "x"}, task=True).text == "x"
        call = client.start_tool_call("compute", {"n": 5}, task=True)
        client.call_tool("release")
        assert call.result().text == "5 squared is 25" and call.task_id is None
    wire = WireChecker()
    with Client.in_memory(TASKS.build(), era="handshake", timeout=WAIT, trace=wire) as client:
        assert client.protocol_version == "2025-11-25" and "tasks" in client.server_capabilities
        call = client.start_tool_call("compute", {"n": 5}, task=True)
        client.call_tool("release")
        assert call.result().text == "5 squared is 25" and call.task_id is not None
        created = next(
            m["result"] for m in wire.received() if m.get("id") == wire.sent("tools/call")[0]["id"]
        )
        assert created["task"]["taskId"] == call.task_id and "resultType" not in created
        assert not wire.sent("tasks/update")  # the 2026-07-28 extension's method: not in this era
    wire.assert_valid()


def test_a_created_task_is_answered_as_created_even_when_its_work_ends_first():
    """The work may end before CreateTaskResult is sent (a fast tool, a busy machine): the answer is
    the task as created, ``working`` (SEP-2663 §Task Creation); a ``completed`` one carries no
    ``result`` there, and the client could not read one (it failed: "completed without a result")."""

    class RunsAtOnce(TaskStore):
        def run(self, work, task_id=None):  # the work ends before begin() builds its answer
            work()

    server = Server("fast")

    @server.tool(task="required")
    def quick(ctx: Context) -> str:
        ctx.start_task()
        return "quick"

    server.tasks = RunsAtOnce()
    with Client.in_memory(server, timeout=WAIT) as client:
        created = client.connection.send_request(
            "tools/call", {"name": "quick"}, declares=(EXTENSION,)
        ).result()
        assert created["resultType"] == "task" and created["status"] == "working"
        assert client.get_task(created["taskId"])["status"] == "completed"
        assert client.call_tool("quick", task=True).content[0].text == "quick"


# -- a call cancelled on its way to becoming a task -------------------------------------------------


def crossing_server(at: str):
    """A server whose first task call meets the client's cancellation ``at`` "call" (before the
    task is made: the client's ``notifications/cancelled`` has come when the handler reaches
    ``ctx.start_task()``) or "create" (just after the task was made, before its answer went)."""
    entered, left, contexts, made, ran = threading.Event(), threading.Event(), [], [], []

    class Crossing(TaskStore):
        def create(self, *args, **kwargs):
            task = super().create(*args, **kwargs)
            made.append(task)
            if at == "create" and len(contexts) == 1:
                entered.set()
                assert contexts[0].cancelled.wait(WAIT)
            return task

    class Hold(Extension):
        """Outermost around tools/call: it sees the call's context, and when the call ended."""

        name = "hold"

        def intercept_tool_call(self, caller, tool, arguments, context, run):
            contexts.append(context)
            try:
                if at == "call" and len(contexts) == 1:
                    entered.set()
                    assert context.cancelled.wait(WAIT)
                return run(context)
            finally:
                left.set()

    server = Server("crossing", extensions=[Hold()])

    @server.tool(task="optional")
    def work(ctx: Context) -> str:
        if ctx.start_task():
            ran.append(ctx.request_id)
        return "done"

    server.tasks = Crossing(max_tasks_per_principal=1)
    return server, entered, left, made, ran


@pytest.mark.parametrize("at", ["call", "create"])
@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
def test_a_call_cancelled_before_its_task_was_answered_leaves_no_task_running(era, at):
    """The client cancelled the ``tools/call`` (``notifications/cancelled``) before its answer: the
    answer is not sent, so no one could reach a task made for it.  Cancelled before the task is
    made, none is; cancelled just after, the task is cancelled (its handler never runs) and frees
    the caller's place at once, not after its ttl (one place here: the next task call works)."""
    server, entered, left, made, ran = crossing_server(at)
    modern = era == "2026-07-28"
    options = {} if modern else {"era": "handshake", "protocol_version": era}
    with Client.in_memory(server, timeout=WAIT, **options) as client:
        if modern:
            call = client.start_tool_call("work", task=True)
        else:  # (a 2025-11-25 ToolCall.cancel() waits for the CreateTaskResult: the request's own)
            call = client.connection.send_request(
                "tools/call", {"name": "work", "arguments": {}, "task": {}}
            )
        assert entered.wait(WAIT)
        assert call.cancel("stop") is True
        assert left.wait(WAIT)
        if at == "call":
            assert made == []  # the old server: a task, working, that no one knew of
        else:
            (task,) = made
            record = task.record()
            assert record["status"] == "cancelled" and record["cancelRequested"] is True
        assert client.call_tool("work", task=True).text == "done"
    assert len(ran) == 1  # the task call that followed; never the cancelled one


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
def test_a_call_cancelled_after_its_task_was_made_is_cancelled_off_the_reader(era):
    """The client cancels the ``tools/call`` after its task was made, before its answer went: the
    task is cancelled, but its records' writes (a round trip each with a shared store) are not made
    on the session's reader, which would hold up every message after the cancellation: here the
    writes wait until the request sent after it is answered (a reader doing them never answers
    it)."""
    made, writing, pinged, writers = threading.Event(), threading.Event(), threading.Event(), []

    class Records(MemoryTaskRecords):
        def transition(self, task_id, changes, *args, **kwargs):
            if changes.get("cancelRequested") or changes.get("status") == "cancelled":
                writers.append(threading.current_thread().name)
                writing.set()
                pinged.wait(2 * WAIT)  # a slow store: until the next request was answered
            return super().transition(task_id, changes, *args, **kwargs)

    class Started(TaskStore):
        def start(self, task, work):
            made.set()  # the task was made: the call's cancellation comes before its answer
            assert task.cancelled.wait(2 * WAIT)
            return super().start(task, work)

    server = Server("cancelled-after-made")

    @server.tool(task="optional")
    def work(ctx: Context) -> str:
        ctx.start_task()
        return "done"

    server.tasks = Started(records=Records())
    modern = era == "2026-07-28"
    options = {} if modern else {"era": "handshake", "protocol_version": era}
    with Client.in_memory(server, timeout=WAIT, **options) as client:
        params = {"name": "work", "arguments": {}, "task": {}}
        if modern:
            call = client.connection.start("tools/call", params, declares=(EXTENSION,))
        else:
            call = client.connection.send_request("tools/call", params)
        try:
            assert made.wait(WAIT)
            call.cancel("changed my mind")
            assert client.list_tools()  # answered while the store writes wait
            assert writing.wait(WAIT)  # the cancellation's writes began, off the reader
        finally:
            pinged.set()
    assert writers and not [name for name in writers if name.endswith("-reader")]


def test_a_task_call_answered_with_its_result_is_done_and_cancel_loses_nothing():
    """``start_tool_call(..., task=True)`` that the server answers with the result (the tool never
    reached ``ctx.start_task()``, or is never a task): once that answer is in, the call is done,
    ``cancel()`` is False ("False if it had finished") and ``result()`` returns the result.  The
    old TaskCall counted only a settled ``result()``: cancel() said True and the result was lost
    (RequestCancelled)."""
    server = Server("answers-at-once")

    @server.tool(task="optional")
    def build(ctx: Context) -> str:
        return "built"  # no ctx.start_task(): the call is answered with this

    @server.tool()
    def plain() -> str:
        return "plain"

    with Client.in_memory(server, timeout=WAIT) as client:
        for name, text in (("build", "built"), ("plain", "plain")):
            call = client.start_tool_call(name, task=True)
            assert call.pending.result().get("resultType", "complete") == "complete"
            assert call.done() is True and call.cancel() is False
            assert call.result().text == text and call.task_id is None
        failing = client.start_tool_call("missing", task=True)
        with pytest.raises(McpError):
            failing.pending.result()
        assert failing.done() is True and failing.cancel() is False  # an error ends it too
