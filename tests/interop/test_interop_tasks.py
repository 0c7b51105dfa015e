"""mcp_ref's client as the requestor of 2025-11-25 tasks, against the reference "everything" server.

``npx -y @modelcontextprotocol/server-everything`` (stdio; skipped when npx is missing or the
server cannot start) declares ``tasks: {list, cancel, requests: {tools: {call}}}`` at 2025-11-25
and lists ``simulate-research-query`` with ``execution.taskSupport: "required"``: four 1 s stages,
and with ``ambiguous: true`` an ``elicitation/create`` for the task, delivered while the client
holds ``tasks/result`` open.  Every message is validated against the 2025-11-25 schema.
"""

from __future__ import annotations

import threading

import pytest
from conftest import WireChecker
from everything_server import everything_client

from mcp_ref import Client, McpError
from mcp_ref.errors import RequestCancelled

RESEARCH = "simulate-research-query"
RELATED_TASK = "io.modelcontextprotocol/related-task"
WAIT = 30.0

#: A real subprocess of another project's server, several seconds per test.
pytestmark = pytest.mark.slow


class Peer:
    """The client, its wire checker, the elicitations it answered, and events on what it sent."""

    def __init__(self):
        self.wire = WireChecker()
        self.elicitations: list = []
        self.watchers: list[tuple[bytes, threading.Event]] = []
        self.lock = threading.Lock()
        self.client: Client | None = None

    def trace(self, direction: str, data: bytes) -> None:
        self.wire(direction, data)
        with self.lock:
            for needle, event in self.watchers:
                if direction == "-->" and needle in data:
                    event.set()

    def when_sent(self, needle: bytes) -> threading.Event:
        """An event set when the client next writes a message containing ``needle``."""
        event = threading.Event()
        with self.lock:
            self.watchers.append((needle, event))
        return event

    def elicit(self, params):
        self.elicitations.append(params)
        return {"action": "accept", "content": {"interpretation": "snake"}}

    def exchange(self, task_id: str) -> list[tuple[str, dict]]:
        """The messages about ``task_id`` (sent and received), in wire order, status notifications left out."""
        out = []
        for direction, message in self.wire.messages:
            if (
                isinstance(message, dict)
                and task_id in repr(message)
                and message.get("method") != "notifications/tasks/status"
            ):
                out.append((direction, message))
        return out


@pytest.fixture(scope="module")
def peer():
    peer = Peer()
    with everything_client(
        request_timeout=WAIT,
        trace=peer.trace,
        protocol_version="2025-11-25",
        elicitation_handler=peer.elicit,
    ) as client:
        peer.client = client
        yield peer
    peer.wire.assert_valid()


@pytest.mark.timeout(60)
def test_a_task_augmented_call_is_followed_to_its_report(peer):
    client = peer.client
    assert client.protocol_version == "2025-11-25"
    assert client.server_capabilities["tasks"]["requests"]["tools"]["call"] == {}
    call = client.start_tool_call(RESEARCH, {"topic": "python"}, task=True)
    result = call.result()
    assert not result.is_error and result.text.startswith("# Research Report: python\n")
    task_id = call.task_id
    assert task_id and result.meta[RELATED_TASK] == {
        "taskId": task_id
    }  # §Related Task Metadata: MUST on tasks/result
    request = next(m for m in peer.wire.sent("tools/call") if m["id"] == call.request_id)
    assert request["params"]["task"] == {}
    created = next(
        m for d, m in peer.wire.messages if d == "<--" and m.get("id") == call.request_id
    )
    assert created["result"]["task"]["taskId"] == task_id
    methods = [m.get("method") for d, m in peer.exchange(task_id) if d == "-->"]
    assert (
        methods[0] == "tasks/get"
        and methods[-1] == "tasks/result"
        and methods.count("tasks/result") == 1
    )
    assert "tasks/cancel" not in methods
    assert client.get_task(task_id)["status"] == "completed"
    peer.wire.assert_valid()


@pytest.mark.timeout(60)
def test_an_elicitation_during_the_task_arrives_through_tasks_result(peer):
    client = peer.client
    before = len(peer.elicitations)
    call = client.start_tool_call(RESEARCH, {"topic": "python", "ambiguous": True}, task=True)
    result = call.result()
    assert (
        result.text.startswith("# Research Report: python (snake)\n")
        and "**Clarification**: snake" in result.text
    )
    (asked,) = peer.elicitations[before:]
    assert asked.meta[RELATED_TASK] == {
        "taskId": call.task_id
    }  # §Input Required Status: MUST include it
    assert "python" in asked.message
    # The client saw input_required, opened tasks/result, and the elicitation came while it was open.
    flow = peer.exchange(call.task_id)
    result_request = next(
        i for i, (d, m) in enumerate(flow) if d == "-->" and m.get("method") == "tasks/result"
    )
    elicitation = next(
        i for i, (d, m) in enumerate(flow) if d == "<--" and m.get("method") == "elicitation/create"
    )
    answer = next(
        i
        for i, (d, m) in enumerate(flow)
        if d == "<--" and m.get("id") == flow[result_request][1]["id"]
    )
    assert result_request < elicitation < answer
    statuses = [
        m["result"]["status"] for d, m in flow if d == "<--" and "status" in m.get("result", {})
    ]
    assert statuses[-1] == "input_required"  # what sent the client to tasks/result
    peer.wire.assert_valid()


@pytest.mark.timeout(60)
def test_a_required_tool_is_a_task_without_task_true(peer):
    client = peer.client
    tools = {tool.name: tool for tool in client.list_tools()}
    assert tools[RESEARCH].execution == {"taskSupport": "required"}
    call = client.start_tool_call(
        RESEARCH, {"topic": "rust"}
    )  # "clients MUST invoke the tool as a task"
    result = call.result()
    assert not result.is_error and result.text.startswith("# Research Report: rust\n")
    request = next(m for m in peer.wire.sent("tools/call") if m["id"] == call.request_id)
    assert request["params"]["task"] == {} and call.task_id
    # A tool whose taskSupport is forbidden is called normally, even with task=True.
    forbidden = next(
        name
        for name, tool in tools.items()
        if (tool.execution or {}).get("taskSupport", "forbidden") == "forbidden"
    )
    call = client.start_tool_call(
        forbidden, {"message": "hi"} if forbidden == "echo" else {}, task=True
    )
    call.result()
    assert (
        "task"
        not in next(m for m in peer.wire.sent("tools/call") if m["id"] == call.request_id)["params"]
    )
    assert call.task_id is None


@pytest.mark.timeout(60)
def test_list_tasks_and_a_cancel_of_a_finished_task(peer):
    client = peer.client
    call = client.start_tool_call(RESEARCH, {"topic": "go"}, task={"ttl": 60000})
    call.result()
    request = next(m for m in peer.wire.sent("tools/call") if m["id"] == call.request_id)
    assert request["params"]["task"] == {"ttl": 60000}
    ids, cursor = [], None
    for _ in range(50):
        page = client.list_tasks(cursor)
        ids += [task["taskId"] for task in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
    assert call.task_id in ids
    with pytest.raises(McpError) as refused:
        client.cancel_task(
            call.task_id
        )  # §Task Cancellation: a terminal task MUST be refused with -32602
    assert refused.value.code == -32602
    assert call.cancel() is False  # the call had finished
    peer.wire.assert_valid()


@pytest.mark.timeout(60)
def test_cancelling_a_followed_call_sends_tasks_cancel(peer):
    client = peer.client
    polled = peer.when_sent(b'"tasks/get"')
    call = client.start_tool_call(RESEARCH, {"topic": "cancel me"})
    outcome: list = []

    def follow():
        try:
            outcome.append(call.result())
        except Exception as exc:  # the test looks at what it was
            outcome.append(exc)

    follower = threading.Thread(target=follow)
    follower.start()
    assert polled.wait(WAIT)  # the follower is polling
    assert call.cancel("enough") is True
    follower.join(WAIT)
    assert not follower.is_alive() and isinstance(outcome[0], RequestCancelled)
    assert call.done()
    task = client.get_task(call.task_id)
    assert (
        task["status"] == "cancelled"
    )  # §Task Cancellation: cancelled before the answer, and it stays so
    sent = [m for d, m in peer.exchange(call.task_id) if d == "-->"]
    assert [m["method"] for m in sent if m.get("method") == "tasks/cancel"] == ["tasks/cancel"]
    # tasks/cancel, never notifications/cancelled, for the task-augmented tools/call
    assert not [
        m
        for m in peer.wire.sent("notifications/cancelled")
        if m["params"].get("requestId") == call.request_id
    ]
    peer.wire.assert_valid()
