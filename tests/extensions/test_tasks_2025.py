"""The experimental tasks of 2025-11-25 (basic/utilities/tasks), server side: mcp_ref.extensions.tasks_2025.

The server is tests/servers/tasks_server.py (the same tools serve the 2026-07-28 extension,
tests/extensions/test_tasks.py): in this process, driven with mcp_ref's client sending raw requests
(``client.request``); over stdio a real subprocess fed raw JSON lines; over HTTP raw POSTs to a real
socket.  Every message is checked against the 2025-11-25 schema (WireChecker: CreateTaskResult,
GetTaskResult, GetTaskPayloadResult, ListTasksResult, CancelTaskResult, TaskStatusNotification).
"""

from __future__ import annotations

import json
import queue
import socket
import sys
import threading

import pytest
from conftest import SERVERS, WAIT, InMemory, WireChecker, raw_peer, schema_errors  # noqa: F401 - a fixture
from http_fixtures import init_params, serve  # noqa: F401 - a fixture

from mcp_ref import Client, Context, Extension, McpError, Server
from mcp_ref.extensions import tasks, tasks_2025
from mcp_ref.extensions.tasks import TaskStore

VERSION = "2025-11-25"
RELATED = "io.modelcontextprotocol/related-task"
TASKS = InMemory("tasks_server")
SERVER = [sys.executable, str(SERVERS / "tasks_server.py")]
CAPABILITY = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


def answers(params):
    """The elicitation handler: confirm, and the name Ada."""
    schema = params.requested_schema["properties"]
    return {
        "action": "accept",
        "content": {"confirm": True} if "confirm" in schema else {"name": "Ada"},
    }


@pytest.fixture
def legacy():
    """Factory: ``legacy(server=None, **client_options)`` -> ``(client, wire)``: mcp_ref's client at
    2025-11-25, in this process; every message schema-checked after the test."""
    opened = []

    def factory(server=None, **options):
        wire = WireChecker()
        options.setdefault("elicitation_handler", answers)
        options.setdefault("protocol_version", VERSION)
        client = Client.in_memory(
            server if server is not None else TASKS.build(),
            era="handshake",
            timeout=WAIT,
            trace=wire,
            **options,
        )
        opened.append((client, wire))
        return client, wire

    yield factory
    for client, wire in opened:
        client.close()
        wire.assert_valid()


def status_heard(client: Client, wire: WireChecker, status: str) -> threading.Event:
    """Set once ``client`` reads a ``notifications/tasks/status`` saying ``status``.  The task's own
    thread sends the last one after the task ended, while the ``tasks/result`` it woke is answered
    from another thread: that answer may come first."""
    heard = threading.Event()

    def trace(direction: str, data: bytes) -> None:
        wire(direction, data)
        message = json.loads(data)
        if direction == "<--" and message.get("method") == "notifications/tasks/status":
            if message["params"]["status"] == status:
                heard.set()

    client.session.trace = trace
    return heard


def create(client, name: str, arguments=None, **task) -> dict:
    """``tools/call`` augmented with ``task``: the Task of its CreateTaskResult."""
    answer = client.request(
        "tools/call", {"name": name, "arguments": arguments or {}, "task": task}
    )
    assert set(answer) == {"task"} and schema_errors(VERSION, "CreateTaskResult", answer) == []
    created = answer["task"]
    assert (
        created["status"] == "working"
        and isinstance(created["ttl"], int)
        and created["pollInterval"] > 0
    )
    return created


def related_to(message_or_result: dict, task_id: str) -> bool:
    params = message_or_result.get("params", message_or_result)
    return params.get("_meta", {}).get(RELATED) == {"taskId": task_id}


def code_of(call) -> int:
    with pytest.raises(McpError) as caught:
        call()
    return caught.value.code


# -- negotiation -----------------------------------------------------------------------------------


def test_the_capability_and_execution_are_declared_at_2025_11_25_only(legacy):
    client, wire = legacy()
    assert client.server_capabilities["tasks"] == CAPABILITY
    support = {
        tool["name"]: tool.get("execution") for tool in client.request("tools/list", {})["tools"]
    }
    assert support["compute"] == {"taskSupport": "optional"} and support["forever"] == {
        "taskSupport": "required"
    }
    assert support["plain"] is None and support["release"] is None  # absent: "forbidden"
    # 2025-06-18: no tasks, no execution (the revision has neither)
    older, _ = legacy(protocol_version="2025-06-18")
    assert "tasks" not in older.server_capabilities
    assert all("execution" not in tool for tool in older.request("tools/list", {})["tools"])
    assert code_of(lambda: older.request("tasks/get", {"taskId": "x"})) == -32601
    plain = older.request(
        "tools/call", {"name": "plain", "arguments": {"text": "x"}, "task": {}}
    )  # task ignored
    assert plain["content"] == [{"type": "text", "text": "x"}]


def test_at_2026_07_28_nothing_of_it_shows():
    wire = WireChecker()
    with Client.in_memory(TASKS.build(), timeout=WAIT, trace=wire) as client:  # the modern era
        assert "tasks" not in client.server_capabilities
        assert client.server_capabilities["extensions"] == {"io.modelcontextprotocol/tasks": {}}
        assert all("execution" not in tool for tool in client.request("tools/list", {})["tools"])
        for method in ("tasks/result", "tasks/list"):  # conformance tasks-dispatch-and-envelope
            assert code_of(lambda method=method: client.request(method, {"taskId": "x"})) == -32601
    wire.assert_valid()


def test_a_plain_call_of_an_optional_tool_is_a_plain_call_and_two_calls_are_method_not_found(
    legacy,
):
    client, wire = legacy()
    client.request("tools/call", {"name": "release", "arguments": {}})
    assert (
        client.request("tools/call", {"name": "compute", "arguments": {"n": 3}})["content"][0][
            "text"
        ]
        == "3 squared is 9"
    )
    # §Tool-Level Negotiation: a required tool without task "MUST" be -32601; task on a tool
    # without task support "SHOULD" be -32601.
    assert (
        code_of(lambda: client.request("tools/call", {"name": "forever", "arguments": {}}))
        == -32601
    )
    # ... before its arguments are looked at: bad ones change nothing
    assert (
        code_of(lambda: client.request("tools/call", {"name": "forever", "arguments": {"nope": 1}}))
        == -32601
    )
    assert (
        code_of(
            lambda: client.request(
                "tools/call", {"name": "plain", "arguments": {"text": "x"}, "task": {}}
            )
        )
        == -32601
    )
    assert (
        code_of(
            lambda: client.request("tools/call", {"name": "compute", "arguments": {}, "task": 5})
        )
        == -32602
    )
    assert wire.errors == [
        "CallToolRequest: 5 is not of type 'object' at /params/task"
    ]  # ours, on purpose
    wire.errors.clear()


# -- the lifecycle ----------------------------------------------------------------------------------


def test_a_task_answers_at_once_and_tasks_result_blocks_until_it_ends(legacy):
    client, wire = legacy()
    task = create(client, "compute", {"n": 5}, ttl=60_000)
    assert task["ttl"] == 60_000
    assert client.request("tasks/get", {"taskId": task["taskId"]})["status"] == "working"
    waiting = client.session.send_request("tasks/result", {"taskId": task["taskId"]})
    # the task cannot end before `release`: the tasks/result still waits after a later request was answered
    assert client.request("tasks/get", {"taskId": task["taskId"]})["status"] == "working"
    assert not waiting.done()
    completed = status_heard(client, wire, "completed")
    client.request("tools/call", {"name": "release", "arguments": {}})
    result = waiting.result()
    assert result["content"] == [{"type": "text", "text": "5 squared is 25"}] and related_to(
        result, task["taskId"]
    )
    done = client.request("tasks/get", {"taskId": task["taskId"]})
    assert done["status"] == "completed" and done["createdAt"] == task["createdAt"]
    assert RELATED not in done.get("_meta", {})  # §Related Task Metadata: not on tasks/get
    # tasks/result of an ended task answers at once, the same
    assert client.request("tasks/result", {"taskId": task["taskId"]}) == result
    assert completed.wait(WAIT)
    statuses = [m["params"]["status"] for m in wire.received("notifications/tasks/status")]
    assert statuses[-1] == "completed" and all(
        RELATED not in m["params"].get("_meta", {})
        for m in wire.received("notifications/tasks/status")
    )


def test_the_requested_ttl_is_capped_and_unknown_ids_are_invalid_params(legacy):
    client, _ = legacy()
    assert create(client, "forever", ttl=10**12)["ttl"] == 3_600_000  # the store's ttl_ms
    assert create(client, "forever", ttl=1)["ttl"] == tasks_2025.MIN_TTL_MS
    assert create(client, "forever")["ttl"] == 3_600_000
    # an id this server never mints (":in" would name a task's own key on Redis) is one that does
    # not exist: -32602 too, before any store is asked
    for task_id in ("no-such-task", "no-such-task:in", ""):
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            assert (
                code_of(
                    lambda method=method, task_id=task_id: client.request(
                        method, {"taskId": task_id}
                    )
                )
                == -32602
            )


def test_a_huge_requested_ttl_is_granted_as_the_longest_even_by_a_store_without_a_ceiling(legacy):
    """A ``task.ttl`` of any size is a valid JSON integer: at a store without a ceiling
    (``ttl_ms=None``) it is granted as ``LONGEST_TTL_MS`` (§TTL: "Receivers MAY override the
    requested ttl duration"), where the old server divided it into a float and answered -32603; the
    store's own ``ttl_ms`` is bounded so too."""
    server = TASKS.build()
    server.tasks = TaskStore(ttl_ms=None)
    client, _ = legacy(server)
    granted = create(client, "forever", ttl=10**400)["ttl"]  # the old server: -32603
    assert granted == tasks.LONGEST_TTL_MS == 10**12  # about 31.7 years
    assert create(client, "forever", ttl=granted + 1)["ttl"] == granted
    assert create(client, "forever", ttl=5000)["ttl"] == 5000
    unasked = client.request("tools/call", {"name": "forever", "arguments": {}, "task": {}})
    assert unasked["task"]["ttl"] is None  # unlimited, as the store says
    for too_long in (tasks.LONGEST_TTL_MS + 1, 10**400):
        with pytest.raises(ValueError, match="at most"):
            TaskStore(ttl_ms=too_long)


def test_a_tool_error_fails_the_task_and_tasks_result_returns_it(legacy):
    client, _ = legacy()
    task = create(client, "tool_error")
    result = client.request("tasks/result", {"taskId": task["taskId"]})
    assert (
        result["isError"] is True
        and result["content"][0]["text"] == "no luck"
        and related_to(result, task["taskId"])
    )
    failed = client.request("tasks/get", {"taskId": task["taskId"]})
    assert (
        failed["status"] == "failed" and "no luck" in failed["statusMessage"]
    )  # §Task Execution Errors


def test_a_json_rpc_error_fails_the_task_and_tasks_result_raises_the_same(legacy):
    client, _ = legacy()
    task = create(client, "protocol_error")
    with pytest.raises(McpError) as caught:
        client.request("tasks/result", {"taskId": task["taskId"]})
    assert caught.value.code == -32603 and caught.value.message == "the backend refused"
    assert client.request("tasks/get", {"taskId": task["taskId"]})["status"] == "failed"


def test_an_extension_refusing_a_tool_refuses_it_in_a_task_too(legacy):
    """An extension's ``intercept_tool_call`` added after the task-capable tool (so after the tasks
    extensions) sees a task-augmented call as it sees any other: the task's work runs through the
    rest of the chain, so a guard refusing the tool fails the task with its error and the tool never
    runs (the old server called the tool directly, past the guard), as at 2026-07-28.  What the tool
    asks in the task still goes through the task (the related-task ``_meta``)."""
    seen, ran = [], []

    class Guard(Extension):
        name = "guard"

        def intercept_tool_call(self, caller, tool, arguments, context, run):
            seen.append(tool.name)
            if tool.name == "secret":
                raise McpError("refused by guard", code=-32600)
            return run(context)

    server = Server("guarded")

    @server.tool(task="optional")
    def secret(ctx: Context) -> str:
        ran.append(ctx.in_task)
        return "the secret"

    @server.tool(task="optional")
    def greet(ctx: Context) -> str:
        ctx.start_task()
        name = ctx.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        return f"Hello, {name.content['name']}!"

    server.add_extension(Guard())
    client, wire = legacy(server)
    assert code_of(lambda: client.call_tool("secret")) == -32600
    task = create(client, "secret")
    with pytest.raises(McpError) as caught:
        client.request("tasks/result", {"taskId": task["taskId"]})
    assert caught.value.code == -32600 and caught.value.message == "refused by guard"
    assert client.request("tasks/get", {"taskId": task["taskId"]})["status"] == "failed"
    with Client.in_memory(server, timeout=WAIT) as modern:  # 2026-07-28
        assert code_of(lambda: modern.call_tool("secret", task=True)) == -32600
    assert ran == [] and seen == ["secret"] * 3
    greeted = create(client, "greet")
    assert client.request("tasks/result", {"taskId": greeted["taskId"]})["content"][0]["text"] == (
        "Hello, Ada!"
    )
    (asked,) = wire.received("elicitation/create")
    assert related_to(asked, greeted["taskId"]) and seen[-1] == "greet"


def test_invalid_arguments_make_a_failed_task(legacy):
    client, _ = legacy()
    task = create(client, "compute", {"n": "five"})
    result = client.request("tasks/result", {"taskId": task["taskId"]})
    assert result["isError"] is True and "Invalid arguments" in result["content"][0]["text"]


def test_cancel_makes_the_task_cancelled_before_it_answers_and_a_second_cancel_is_invalid(legacy):
    client, wire = legacy()
    task = create(client, "forever")
    cancelled = client.request("tasks/cancel", {"taskId": task["taskId"]})
    assert cancelled["taskId"] == task["taskId"] and cancelled["status"] == "cancelled"
    assert client.request("tasks/get", {"taskId": task["taskId"]})["status"] == "cancelled"
    assert code_of(lambda: client.request("tasks/cancel", {"taskId": task["taskId"]})) == -32602
    assert (
        code_of(lambda: client.request("tasks/result", {"taskId": task["taskId"]})) == -32602
    )  # no result
    # a finished task cannot be cancelled either (§Task Cancellation), and stays as it ended
    ended = create(client, "tool_error")
    # 2025-11-25 basic/utilities/tasks: tasks/result "MUST block the response until the task
    # reaches a terminal status"
    assert client.request("tasks/result", {"taskId": ended["taskId"]})["isError"] is True
    assert code_of(lambda: client.request("tasks/cancel", {"taskId": ended["taskId"]})) == -32602
    assert client.request("tasks/get", {"taskId": ended["taskId"]})["status"] == "failed"


def test_tasks_list_is_paged_and_each_requestor_sees_only_its_own(legacy, monkeypatch):
    monkeypatch.setattr(tasks_2025, "LIST_PAGE", 2)
    server = TASKS.build()
    alice, _ = legacy(server)
    bob, _ = legacy(server)  # another connection (session) of the same server
    mine = {create(alice, "forever")["taskId"] for _ in range(3)}
    theirs = create(bob, "forever")["taskId"]
    first = alice.request("tasks/list", {})
    assert len(first["tasks"]) == 2 and "nextCursor" in first
    second = alice.request("tasks/list", {"cursor": first["nextCursor"]})
    assert "nextCursor" not in second
    assert {t["taskId"] for t in first["tasks"] + second["tasks"]} == mine
    assert [t["taskId"] for t in bob.request("tasks/list", {})["tasks"]] == [theirs]
    # §Task Isolation: another requestor's task is not found, nor a cursor made for another requestor
    assert code_of(lambda: bob.request("tasks/get", {"taskId": next(iter(mine))})) == -32602
    assert code_of(lambda: bob.request("tasks/cancel", {"taskId": next(iter(mine))})) == -32602
    assert code_of(lambda: bob.request("tasks/list", {"cursor": first["nextCursor"]})) == -32602
    assert code_of(lambda: alice.request("tasks/list", {"cursor": "not-a-cursor"})) == -32602


# -- input, progress and logs during a task ---------------------------------------------------------------


def test_an_elicitation_of_a_task_carries_related_task_and_the_task_waits_in_input_required(
    legacy, monkeypatch
):
    monkeypatch.setattr(
        tasks_2025, "INPUT_ROUTE_WAIT", 0
    )  # no tasks/result is open when it asks: ask at once
    asked = threading.Event()
    go_on = threading.Event()

    def slow_answers(params):
        asked.set()
        assert go_on.wait(WAIT)
        return answers(params)

    client, wire = legacy(elicitation_handler=slow_answers)
    task = create(client, "confirm", {"filename": "a.txt"})
    assert asked.wait(WAIT)
    assert client.request("tasks/get", {"taskId": task["taskId"]})["status"] == "input_required"
    completed = status_heard(client, wire, "completed")
    go_on.set()
    result = client.request("tasks/result", {"taskId": task["taskId"]})
    assert result["content"][0]["text"] == "Ada deleted a.txt (True)"
    assert completed.wait(WAIT)
    elicitations = wire.received("elicitation/create")
    assert len(elicitations) == 3 and all(related_to(m, task["taskId"]) for m in elicitations)
    # and the client's answers too (§Related Task Metadata: "responses related to a task MUST include" it)
    asked_ids = {m["id"] for m in elicitations}
    replies = [m for m in wire.sent() if m.get("id") in asked_ids and "result" in m]
    assert len(replies) == 3 and all(
        m["result"]["_meta"][RELATED] == {"taskId": task["taskId"]} for m in replies
    )
    statuses = [m["params"]["status"] for m in wire.received("notifications/tasks/status")]
    assert "input_required" in statuses and statuses[-1] == "completed"


def test_progress_and_log_messages_of_a_task_reach_the_client_with_related_task(legacy):
    server = Server("noisy")

    @server.tool(task="optional")
    def noisy(ctx: Context) -> str:
        assert ctx.start_task() and ctx.in_task
        ctx.info("working on it")
        ctx.report_progress(1, 2, "half way")
        return "done"

    client, wire = legacy(server)
    answer = client.request(
        "tools/call",
        {"name": "noisy", "arguments": {}, "task": {}, "_meta": {"progressToken": "p"}},
    )
    task_id = answer["task"]["taskId"]
    assert client.request("tasks/result", {"taskId": task_id})["content"][0]["text"] == "done"
    [progress] = wire.received("notifications/progress")
    assert progress["params"]["progressToken"] == "p" and related_to(progress, task_id)
    [logged] = wire.received("notifications/message")
    assert logged["params"]["data"] == "working on it" and related_to(logged, task_id)


def test_cancelling_a_task_waiting_for_input_withdraws_its_request(monkeypatch):
    monkeypatch.setattr(tasks_2025, "INPUT_ROUTE_WAIT", 0)
    asked, seen_cancel, release = threading.Event(), threading.Event(), threading.Event()

    def blocked(params):
        asked.set()
        release.wait(WAIT)
        return answers(params)

    wire = WireChecker()

    def trace(direction, data):
        wire(direction, data)
        if direction == "<--" and b"notifications/cancelled" in data:
            seen_cancel.set()

    with Client.in_memory(
        TASKS.build(),
        era="handshake",
        protocol_version=VERSION,
        timeout=WAIT,
        trace=trace,
        elicitation_handler=blocked,
    ) as client:
        task = create(client, "confirm", {"filename": "d.txt"})
        assert asked.wait(WAIT)
        assert client.request("tasks/cancel", {"taskId": task["taskId"]})["status"] == "cancelled"
        assert seen_cancel.wait(
            WAIT
        )  # the elicitation is withdrawn (notifications/cancelled names it)
        release.set()
        [withdrawn] = wire.received("notifications/cancelled")
        assert withdrawn["params"]["requestId"] == wire.received("elicitation/create")[0]["id"]
        assert client.request("tasks/get", {"taskId": task["taskId"]})["status"] == "cancelled"
    wire.assert_valid()


def test_a_task_belongs_to_the_verified_principal_else_to_the_session():
    from types import SimpleNamespace

    class Connection:  # what tasks_2025 reads of a ServerConnection
        def __init__(self, auth, peer, principal):
            self.auth, self.peer, self.principal = auth, peer, SimpleNamespace(id=principal)

    def connection(auth, peer, principal="oauth:app:ada"):
        return Connection(auth, peer, principal)

    token = object()
    # two sessions of one user: one owner (§Task Isolation: bound to the authorization context)
    assert tasks_2025.owner_of(connection(token, "http-session:a")) == tasks_2025.owner_of(
        connection(token, "http-session:b")
    )
    # without a token: the session (every worker names an HTTP session alike), or the connection itself
    assert tasks_2025.owner_of(connection(None, "http-session:a")) != tasks_2025.owner_of(
        connection(None, "http-session:b")
    )
    assert tasks_2025.owner_of(connection(None, "stdio")) != tasks_2025.owner_of(
        connection(None, "stdio")
    )
    assert (
        tasks_2025.requestor(connection(None, "http-client:127.0.0.1")) is None
    )  # stateless: no one to bind to
    # never a 2026-07-28 task's owner (the principal's id, or None)
    assert all(
        tasks_2025.owner_of(connection(t, "stdio")).startswith("2025-11-25|") for t in (token, None)
    )


def test_the_cap_of_tasks_per_caller_holds_over_the_sessions_of_one_client(serve):
    """A caller without a token owns its tasks by its HTTP session, but ``max_tasks_per_principal``
    counts them by the client opening the sessions (``Principal.limit_id``, its address): a new
    session is free to open, and used to bring a fresh allowance of tasks with it."""
    from mcp_ref import LimitExceeded
    from mcp_ref.extensions.tasks import TaskStore

    server = TASKS.build()
    server.tasks = TaskStore(max_tasks_per_principal=1)
    url = serve(server).mcp
    with (
        Client.http(url, era="handshake", timeout=WAIT) as first,
        Client.http(url, era="handshake", timeout=WAIT) as second,
    ):
        assert first.protocol_version == second.protocol_version == VERSION
        task_id = create(first, "forever")["taskId"]
        with pytest.raises(LimitExceeded) as refused:
            second.request("tools/call", {"name": "forever", "arguments": {}, "task": {}})
        assert refused.value.data == {"limit": 1}
        # still the first session's own: the other session cannot see it
        assert code_of(lambda: second.request("tasks/get", {"taskId": task_id})) == -32602
        first.request("tasks/cancel", {"taskId": task_id})
        # cancelled before the answer (§Task Cancellation), and the cap counts it no more
        assert first.request("tasks/get", {"taskId": task_id})["status"] == "cancelled"
        second.request("tasks/cancel", {"taskId": create(second, "forever")["taskId"]})


def stoppable(server: Server) -> tuple[threading.Event, threading.Event]:
    """Add ``until_stopped`` to ``server``: a task that runs until it is cancelled; the events are
    set once a run of it has started, and once it has stopped (a task cancelled before its run
    began never runs)."""
    started, stopped = threading.Event(), threading.Event()

    @server.tool(task="required")
    def until_stopped(ctx: Context) -> str:
        """Runs until it is cancelled."""
        ctx.start_task()
        started.set()
        try:
            ctx.sleep(3 * WAIT)  # raises as soon as the task is cancelled
        finally:
            stopped.set()
        return "never cancelled"

    return started, stopped


@pytest.mark.parametrize("ended_by", ["the client (DELETE)", "the server (expired)"])
def test_an_ended_sessions_tasks_are_cancelled_and_no_longer_count(serve, ended_by):
    """Without a token a session owns its tasks (§Task Isolation), but they count against its
    client (``max_tasks_per_principal`` per ``Principal.limit_id``).  Once the session has ended no
    one can reach them: they are cancelled (their handlers stop), so the client's next session may
    create tasks at once (was: refused with -31005 "cancel one", which it could not, for the TTL)."""
    from mcp_ref.extensions.tasks import TaskStore

    server = TASKS.build()
    started, stopped = stoppable(server)
    server.tasks = TaskStore(max_tasks_per_principal=2)
    served = serve(server)
    first = Client.http(served.mcp, era="handshake", timeout=WAIT)
    try:
        ids = [create(first, "until_stopped")["taskId"], create(first, "forever")["taskId"]]
        assert started.wait(WAIT)
        if ended_by == "the server (expired)":
            assert served.app.end_session(first.session.transport.session_id)
    finally:
        first.close()  # DELETE (404 once the server has ended the session: ended all the same)
    assert stopped.wait(WAIT)  # its handler was told to stop
    for task_id in ids:
        record = server.tasks.records.get(task_id)
        assert record["status"] == "cancelled", record
        assert (
            record["statusMessage"] == "The task was cancelled: the session that created it ended."
        )
    with Client.http(served.mcp, era="handshake", timeout=WAIT) as second:
        for _ in range(2):  # the client's whole allowance again
            second.request("tasks/cancel", {"taskId": create(second, "forever")["taskId"]})
        # still not the new session's: the ended one's tasks are found by no one
        assert code_of(lambda: second.request("tasks/get", {"taskId": ids[0]})) == -32602


CANCELLED_AT_END = "The task was cancelled: the session that created it ended."


@pytest.mark.parametrize("ended_by", ["the client (close)", "the server (connection.close)"])
def test_an_in_memory_connections_tasks_are_cancelled_when_it_ends(ended_by):
    """A connection without a token owns its tasks (§Task Isolation), as an HTTP session does: once
    it has ended no one can reach them.  Was: they ran on until their ttl, their handlers working
    for no one and their records saying ``working``; now they are cancelled (their handlers told to
    stop) as an ended session's are, their records kept, ``cancelled``."""
    server = TASKS.build()
    started, stopped = stoppable(server)
    client = Client.in_memory(server, era="handshake", protocol_version=VERSION, timeout=WAIT)
    try:
        ids = [create(client, "until_stopped")["taskId"], create(client, "forever")["taskId"]]
        assert started.wait(WAIT)
        [connection] = server.connections()
        if ended_by == "the server (connection.close)":
            connection.close()  # the client sees the end of its input
        else:
            client.close()
        assert stopped.wait(WAIT)  # its handler was told to stop
        # The extensions are told before the connection counts as closed; the tasks are cancelled
        # one by one, so the first handler's stop does not mean the second record is cancelled yet.
        assert connection.session.wait_closed(WAIT)
    finally:
        client.close()
    for task_id in ids:
        record = server.tasks.records.get(task_id)
        assert record["status"] == "cancelled" and record["statusMessage"] == CANCELLED_AT_END


@pytest.mark.slow
def test_a_stdio_servers_tasks_are_cancelled_when_its_input_ends(raw_peer):
    """A real stdio server: its client starts a task, then closes the server's input.  Was: the
    server's ``run_stdio()`` returned with the task still running (until its ttl, or the process's
    exit cut it off unfinished); now its handler is told to stop as the connection ends."""
    peer = raw_peer([sys.executable, str(SERVERS / "tasks_ending_server.py"), str(WAIT / 2)])
    lines = Lines(peer)
    lines.ask(
        "initialize",
        init_params(VERSION),
    )
    lines.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    call = {"name": "until_stopped", "arguments": {}, "task": {}, "_meta": {"progressToken": "p"}}
    assert lines.ask("tools/call", call)["result"]["task"]["status"] == "working"
    while not any(m.get("method") == "notifications/progress" for m in lines.others):
        message = peer.recv()  # its handler runs once it reports progress
        assert message is not None, "the server ended its output"
        lines.others.append(message)
    peer.proc.stdin.close()  # the end of the server's input: the connection ends
    assert peer.stderr_done.wait(WAIT) and peer.proc.wait(WAIT) == 0
    said = b"".join(peer.stderr).decode()
    assert "the task was told to stop" in said, said


def test_a_tokens_tasks_outlive_the_session_that_made_them(serve):
    """With a token, a task is its principal's (§Task Isolation: "receivers MUST bind tasks to said
    context"), not its session's: the session ends, the task goes on, and the principal's next
    session reads it and may cancel it; a session of another principal's ending cancels nothing."""
    from policy_tokens import Tokens, bearer

    from mcp_ref.oauth.resource import ProtectedResource

    server = TASKS.build()
    started, stopped = stoppable(server)
    tokens = Tokens()
    served = serve(app=server.wsgi_app(auth=ProtectedResource(tokens, ["https://as.example"])))
    tokens.audience = (served.mcp,)
    with Client.http(served.mcp, era="handshake", auth=bearer("alice-token"), timeout=WAIT) as one:
        task_id = create(one, "until_stopped")["taskId"]
        assert started.wait(WAIT)
    with Client.http(served.mcp, era="handshake", auth=bearer("bob-token"), timeout=WAIT) as bob:
        assert code_of(lambda: bob.request("tasks/get", {"taskId": task_id})) == -32602
    with Client.http(served.mcp, era="handshake", auth=bearer("alice-token"), timeout=WAIT) as two:
        assert two.request("tasks/get", {"taskId": task_id})["status"] == "working"
        assert not stopped.is_set()
        two.request("tasks/cancel", {"taskId": task_id})
        assert stopped.wait(WAIT)


def test_over_stateless_http_tasks_work_unlisted(serve):
    http = Http(serve(TASKS.build(), stateless=True).mcp)
    init = http.ask(
        "initialize",
        init_params(VERSION),
    )
    # §Task Isolation: "receivers that cannot identify requestors SHOULD NOT declare the tasks.list capability"
    assert init["result"]["capabilities"]["tasks"] == {
        "cancel": {},
        "requests": {"tools": {"call": {}}},
    }
    assert http.session is None
    task = http.ask("tools/call", {"name": "tool_error", "arguments": {}, "task": {}})["result"][
        "task"
    ]
    result = http.ask("tasks/result", {"taskId": task["taskId"]})["result"]  # whoever holds the id
    assert result["isError"] is True and related_to(result, task["taskId"])
    assert http.ask("tasks/list", {})["error"]["code"] == -32601
    http.wire.assert_valid()


def test_tasks_result_waits_are_bounded(legacy, monkeypatch):
    monkeypatch.setattr(tasks_2025, "RESULT_WAIT", 0.2)
    client, _ = legacy()
    task = create(client, "forever")
    with pytest.raises(McpError) as caught:
        client.request("tasks/result", {"taskId": task["taskId"]})
    assert caught.value.code == -31000 and "still working" in caught.value.message


def test_one_connections_waiting_tasks_results_are_bounded_and_polling_goes_on(legacy):
    """Each waiting tasks/result holds a handler thread of its connection: past
    MAX_RESULT_WAITERS_PER_CONNECTION one more is refused (-31000), so tasks/get and tasks/cancel
    are still answered; another connection may still wait."""
    server = TASKS.build()
    client, _ = legacy(server)
    other, _ = legacy(server)
    cap = tasks_2025.MAX_RESULT_WAITERS_PER_CONNECTION
    tasks = [create(client, "forever")["taskId"] for _ in range(cap + 1)]
    waiters = tasks_2025.waiters_of(server.tasks)
    waiting = []
    for task_id in tasks[:cap]:
        waiting.append(client.session.send_request("tasks/result", {"taskId": task_id}))
        assert waiters.latest(task_id, WAIT) is not None  # it waits now
    assert code_of(lambda: client.request("tasks/result", {"taskId": tasks[cap]})) == -31000
    assert (
        client.request("tasks/get", {"taskId": tasks[0]})["status"] == "working"
    )  # polling is served
    theirs = create(other, "forever")["taskId"]
    pending = other.session.send_request("tasks/result", {"taskId": theirs})
    assert waiters.latest(theirs, WAIT) is not None  # the other connection's own count
    for task_id in tasks + [theirs]:
        owner = other if task_id == theirs else client
        assert owner.request("tasks/cancel", {"taskId": task_id})["status"] == "cancelled"
    for request in waiting + [pending]:
        with pytest.raises(McpError):  # a cancelled task has no result
            request.result()


# -- real transports ------------------------------------------------------------------------------------


class Lines:
    """A stdio peer fed raw JSON lines, every message seen by a WireChecker."""

    def __init__(self, peer):
        self.peer, self.wire, self.next_id = peer, WireChecker(), 0
        self.others: list[dict] = []

    def send(self, message: dict) -> None:
        self.wire("-->", json.dumps(message).encode())
        self.peer.send_json(message)

    def ask(self, method: str, params: dict) -> dict:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            message = self.peer.recv()
            assert message is not None, "the server ended its output"
            self.wire("<--", json.dumps(message).encode())
            if message.get("id") == self.next_id and "method" not in message:
                return message
            self.others.append(message)


@pytest.mark.slow
def test_over_stdio(raw_peer):
    lines = Lines(raw_peer(SERVER))
    init = lines.ask(
        "initialize",
        init_params(VERSION),
    )
    assert init["result"]["capabilities"]["tasks"] == CAPABILITY
    lines.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    task = lines.ask(
        "tools/call", {"name": "compute", "arguments": {"n": 4}, "task": {"ttl": 30_000}}
    )["result"]["task"]
    assert lines.ask("tasks/get", {"taskId": task["taskId"]})["result"]["status"] == "working"
    lines.ask("tools/call", {"name": "release", "arguments": {}})
    result = lines.ask("tasks/result", {"taskId": task["taskId"]})["result"]
    assert result["content"][0]["text"] == "4 squared is 16" and related_to(result, task["taskId"])
    listed = lines.ask("tasks/list", {})["result"]["tasks"]
    assert [t["taskId"] for t in listed] == [task["taskId"]] and listed[0]["status"] == "completed"
    lines.wire.assert_valid()


class Http:
    """A 2025-11-25 session over Streamable HTTP, raw: POSTs, their JSON or SSE answers."""

    def __init__(self, url: str):
        self.url, self.wire, self.next_id, self.session = url, WireChecker(), 0, None

    def post(self, message: dict, **options):
        import requests

        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
        }
        if self.session is not None:
            headers["Mcp-Session-Id"] = self.session
        self.wire("-->", json.dumps(message).encode())
        return requests.post(self.url, json=message, headers=headers, timeout=WAIT, **options)

    def stream(self, method: str, params: dict) -> tuple[int, queue.Queue]:
        """POST a request; its answer's messages (SSE or JSON) arrive in the queue (None once it ends);
        ``self.reply`` is its HTTP response."""
        self.next_id += 1
        reply = self.post(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}, stream=True
        )
        if self.session is None:
            self.session = reply.headers.get("Mcp-Session-Id")
        self.reply = reply
        messages: queue.Queue = queue.Queue()

        def read() -> None:
            if reply.headers.get("Content-Type", "").startswith("application/json"):
                messages.put(reply.json())
            else:
                try:
                    for line in reply.iter_lines():
                        if (
                            line.startswith(b"data:") and line[5:].strip()
                        ):  # (a priming event has no data)
                            messages.put(json.loads(line[5:]))
                except Exception:  # the test closed the response under this reader
                    pass
            messages.put(None)

        threading.Thread(target=read, daemon=True).start()
        return self.next_id, messages

    def next(self, messages: queue.Queue) -> dict:
        message = messages.get(timeout=WAIT)
        assert message is not None, "the stream ended"
        self.wire("<--", json.dumps(message).encode())
        return message

    def ask(self, method: str, params: dict) -> dict:
        request_id, messages = self.stream(method, params)
        while True:
            message = self.next(messages)
            if message.get("id") == request_id and "method" not in message:
                return message


def test_over_http_the_asks_of_a_task_come_on_its_tasks_result_stream(serve, monkeypatch):
    monkeypatch.setattr(
        tasks_2025, "INPUT_ROUTE_WAIT", WAIT
    )  # the ask waits for the tasks/result below
    served = serve(TASKS.build())
    http = Http(served.mcp)
    init = http.ask(
        "initialize",
        init_params(VERSION, {"elicitation": {}}),
    )
    assert init["result"]["capabilities"]["tasks"] == CAPABILITY and http.session
    assert http.post({"jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202
    task = http.ask(
        "tools/call", {"name": "confirm", "arguments": {"filename": "c.txt"}, "task": {}}
    )["result"]["task"]
    result_id, stream = http.stream("tasks/result", {"taskId": task["taskId"]})
    asked = 0
    while True:
        message = http.next(stream)
        if (
            message.get("id") == result_id and "method" not in message
        ):  # (the server numbers its own requests)
            break
        if (
            message.get("method") == "elicitation/create"
        ):  # on the tasks/result stream, tied to the task
            assert related_to(message, task["taskId"])
            asked += 1
            schema = message["params"]["requestedSchema"]["properties"]
            content = {"confirm": True} if "confirm" in schema else {"name": "Grace"}
            answer = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "result": {"action": "accept", "content": content},
            }
            assert http.post(answer).status_code == 202
    assert asked == 3
    assert message["result"]["content"][0]["text"] == "Grace deleted c.txt (True)" and related_to(
        message["result"], task["taskId"]
    )
    # another session never sees this one's tasks
    other = Http(served.mcp)
    other.ask(
        "initialize",
        init_params(VERSION),
    )
    other.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert other.ask("tasks/get", {"taskId": task["taskId"]})["error"]["code"] == -32602
    assert other.ask("tasks/list", {})["result"]["tasks"] == []
    assert [t["taskId"] for t in http.ask("tasks/list", {})["result"]["tasks"]] == [task["taskId"]]
    http.wire.assert_valid()
    other.wire.assert_valid()


def test_over_http_an_ask_moves_to_a_newer_tasks_result_when_the_client_left_the_first(
    serve, monkeypatch
):
    """§Retrieving Task Results: "clients MAY disconnect from an SSE stream opened by the server in
    response to a tasks/result request at any time"; asking again, the client gets the ask again."""
    monkeypatch.setattr(tasks_2025, "INPUT_ROUTE_WAIT", WAIT)
    http = Http(serve(TASKS.build()).mcp)
    http.ask(
        "initialize",
        init_params(VERSION, {"elicitation": {}}),
    )
    http.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
    task = http.ask(
        "tools/call", {"name": "confirm", "arguments": {"filename": "e.txt"}, "task": {}}
    )["result"]["task"]
    _, first = http.stream("tasks/result", {"taskId": task["taskId"]})
    left = http.next(first)
    assert left["method"] == "elicitation/create" and related_to(left, task["taskId"])
    http.reply.raw.connection.sock.shutdown(
        socket.SHUT_RDWR
    )  # the client leaves that stream, unanswered
    result_id, second = http.stream("tasks/result", {"taskId": task["taskId"]})
    again = http.next(second)
    assert (
        again["method"] == "elicitation/create"
        and again["params"] == left["params"]
        and again["id"] != left["id"]
    )
    message = again
    while not (message.get("id") == result_id and "method" not in message):
        if message.get("method") == "elicitation/create":  # the first one again, then the next two
            schema = message["params"]["requestedSchema"]["properties"]
            content = {"confirm": True} if "confirm" in schema else {"name": "Lin"}
            http.post(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {"action": "accept", "content": content},
                }
            )
        message = http.next(second)
    assert message["result"]["content"][0]["text"] == "Lin deleted e.txt (True)"
    http.wire.assert_valid()


def test_an_ask_outlives_the_tasks_result_the_client_stopped_waiting_for(legacy):
    """The client times its ``tasks/result`` out (and cancels it) while the user still answers the
    task's question: the question is not cancelled with it (it only travelled on that request's
    stream: tasks_2025 ``_ask``), the answer reaches the task, and the call ends with its result."""
    gave_up_waiting = threading.Event()

    def slow_answers(params):
        # the person answers only after the client gave up one tasks/result
        assert gave_up_waiting.wait(WAIT)
        return answers(params)

    client, wire = legacy(elicitation_handler=slow_answers)

    def watch(direction, data):
        wire(direction, data)
        if direction == "-->" and b'"notifications/cancelled"' in data:
            gave_up_waiting.set()

    client.session.trace = watch
    result = client.call_tool("confirm", {"filename": "a.txt"}, task=True, timeout=1.0)
    assert result.text == "Ada deleted a.txt (True)"
    cancelled = [m["params"]["requestId"] for m in wire.sent("notifications/cancelled")]
    results = [m["id"] for m in wire.sent("tasks/result")]
    assert cancelled and set(cancelled) <= set(results)  # only tasks/result requests were cancelled
    assert wire.received("notifications/cancelled") == []  # the server cancelled no question
