"""The client as requestor of 2025-11-25 tasks (mcp_ref.extensions.client_tasks_2025).

First against a scripted receiver in this process (:class:`Receiver`: JSON-RPC over the in-memory
transport, each answer chosen by the test), so that every rule of the follower can be shown on its
own: when a call is augmented (§Tool-Level Negotiation), polling (§Getting Tasks), ``input_required``
→ ``tasks/result`` (§Input Required Status), the terminal statuses (§Result Retrieval, §Task
Execution Errors), ``tasks/cancel`` (§Task Cancellation), the bounds.  Then against mcp_ref's own
server (extensions/tasks_2025.py), in process, over stdio and over HTTP.  Every message the client
sees is validated against the 2025-11-25 schema.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time

import pytest
from conftest import WAIT, InMemory, WireChecker, client_over
from http_fixtures import serve  # noqa: F401 - a fixture

from mcp_ref import CapabilityError, Client, McpError
from mcp_ref.errors import InvalidParams, LimitExceeded, RequestCancelled, RequestTimeout
from mcp_ref.memory import memory_pair

VERSION = "2025-11-25"
RELATED_TASK = "io.modelcontextprotocol/related-task"
TASKS_CAPABILITY = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
TOOLS = [
    {"name": "slow", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}},
    {"name": "batch", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"}},
    {"name": "plain", "inputSchema": {"type": "object"}},
    {"name": "never", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "forbidden"}},
]
NOW = "2025-11-25T10:30:00Z"


def task(
    task_id: str,
    status: str = "working",
    *,
    ttl: int | None = 60000,
    poll: int | None = 10,
    **extra,
) -> dict:
    """A schema-valid Task."""
    out = {
        "taskId": task_id,
        "status": status,
        "createdAt": NOW,
        "lastUpdatedAt": NOW,
        "ttl": ttl,
        **extra,
    }
    if poll is not None:
        out["pollInterval"] = poll
    return out


def text_result(text: str, task_id: str | None = None, *, is_error: bool = False) -> dict:
    out: dict = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if task_id is not None:
        out["_meta"] = {RELATED_TASK: {"taskId": task_id}}
    return out


class Refuse(Exception):
    """Raised by a scripted handler: the receiver answers with this JSON-RPC error."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code, self.message = code, message


class Receiver:
    """A scripted 2025-11-25 server on the in-memory transport.

    ``handlers[method](params)`` returns the result (or raises :class:`Refuse`); each request is
    answered on its own thread, so a handler may block (``tasks/result``) or ask the client
    something (:meth:`ask`).  ``received`` is every message from the client, in order.
    """

    def __init__(self, capabilities: dict | None = None, tools: list | None = None):
        self.client_end, self.end = memory_pair()
        self.capabilities = (
            {"tools": {}, "tasks": TASKS_CAPABILITY} if capabilities is None else capabilities
        )
        self.received: list[dict] = []
        self.lock = threading.Lock()
        self.answers: dict = {}
        self.ids = itertools.count(1)
        self.handlers: dict = {
            "initialize": lambda p: {
                "protocolVersion": VERSION,
                "capabilities": self.capabilities,
                "serverInfo": {"name": "scripted", "version": "1"},
            },
            "tools/list": lambda p: {"tools": TOOLS if tools is None else tools},
        }
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while (data := self.end.read()) is not None:
            message = json.loads(data)
            with self.lock:
                self.received.append(message)
            if "method" in message and "id" in message:
                threading.Thread(target=self._answer, args=(message,), daemon=True).start()
            elif "id" in message and message["id"] in self.answers:
                slot = self.answers[message["id"]]
                slot.append(message)
                slot[0].set()

    def _answer(self, message: dict) -> None:
        handler = self.handlers.get(message["method"])
        try:
            if handler is None:
                raise Refuse(-32601, f"Method not found: {message['method']}")
            reply = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "result": handler(message.get("params") or {}),
            }
        except Refuse as refused:
            reply = {
                "jsonrpc": "2.0",
                "id": message["id"],
                "error": {"code": refused.code, "message": refused.message},
            }
        try:
            self.end.write(json.dumps(reply).encode())
        except OSError:
            pass  # the client has gone

    def ask(self, method: str, params: dict) -> dict:
        """Send the client a request and wait for its answer (the whole message)."""
        request_id = f"s{next(self.ids)}"
        slot: list = [threading.Event()]
        self.answers[request_id] = slot
        self.end.write(
            json.dumps(
                {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            ).encode()
        )
        assert slot[0].wait(WAIT), f"the client did not answer {method}"
        return slot[1]

    def sent(self, method: str) -> list[dict]:
        """The client's requests (and notifications) of ``method``, in order."""
        with self.lock:
            return [m for m in self.received if m.get("method") == method]

    def client(self, wire: WireChecker, **options) -> Client:
        options.setdefault("timeout", WAIT)
        return Client(self.client_end, trace=wire, protocol_version=VERSION, **options)


class Script:
    """One task's life as the scripted receiver tells it: ``tasks/get`` answers the statuses in turn
    (the last one again and again); ``tasks/result`` answers ``result`` (or raises ``error``) once the
    task is terminal, and blocks until then — as §Result Retrieval says — or until ``released``."""

    def __init__(
        self,
        receiver: Receiver,
        statuses: list[str],
        *,
        result: dict | None = None,
        error: Refuse | None = None,
        ttl: int | None = 60000,
        poll: int | None = 10,
    ):
        self.receiver, self.statuses, self.ttl, self.poll = receiver, list(statuses), ttl, poll
        self.result = (
            result if result is not None or error is not None else text_result("done", "t1")
        )
        self.error = error
        self.status = "working"
        self.released = threading.Event()
        self.on_result = None  # what tasks/result does first (e.g. ask the client something)
        receiver.handlers.update(
            {
                "tools/call": self.call,
                "tasks/get": self.get,
                "tasks/result": self.fetch,
                "tasks/cancel": self.cancel,
            }
        )

    def task(self) -> dict:
        return task("t1", self.status, ttl=self.ttl, poll=self.poll)

    def call(self, params: dict) -> dict:
        if "task" not in params:
            return text_result(f"ran {params['name']} at once")
        return {"task": self.task()}

    def get(self, params: dict) -> dict:
        if params["taskId"] != "t1":
            raise Refuse(-32602, "Failed to retrieve task: Task not found")
        if self.status != "cancelled":
            self.status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
        if self.status in ("completed", "failed", "cancelled"):
            self.released.set()
        return self.task()

    def fetch(self, params: dict) -> dict:
        if self.on_result is not None:
            self.on_result()
        assert self.released.wait(WAIT)
        if self.error is not None:
            raise self.error
        return self.result

    def cancel(self, params: dict) -> dict:
        if self.status in ("completed", "failed", "cancelled"):
            raise Refuse(-32602, f"Cannot cancel task: already in terminal status '{self.status}'")
        self.status = "cancelled"
        self.released.set()
        return self.task()


@pytest.fixture
def scripted(wire):
    """``scripted(capabilities=, tools=, **client_options)`` → (receiver, client); closed after the test."""
    made = []

    def factory(capabilities=None, tools=None, **options):
        receiver = Receiver(capabilities, tools)
        client = receiver.client(wire, **options)
        made.append(client)
        return receiver, client

    yield factory
    for client in made:
        client.close()


# -- when a call is a task (§Tool-Level Negotiation) -----------------------------------------------


def test_task_true_augments_an_optional_tool_and_follows_it(scripted):
    receiver, client = scripted()
    Script(receiver, ["working", "working", "completed"])
    call = client.start_tool_call("slow", {"n": 1}, task=True)
    result = call.result()
    assert result.text == "done" and result.meta[RELATED_TASK] == {"taskId": "t1"}
    assert call.task_id == "t1" and call.done()
    (sent,) = receiver.sent("tools/call")
    assert sent["params"] == {"name": "slow", "arguments": {"n": 1}, "task": {}}
    assert [m["params"] for m in receiver.sent("tasks/get")] == [{"taskId": "t1"}] * 3
    assert len(receiver.sent("tasks/result")) == 1 and receiver.sent("tasks/cancel") == []
    # tasks/get, tasks/result: no related-task _meta from the requestor (§Associating Task-Related Messages)
    assert all(
        "_meta" not in m["params"]
        for m in receiver.sent("tasks/get") + receiver.sent("tasks/result")
    )


def test_a_required_tool_is_a_task_without_task_true_and_the_listing_is_reused(scripted):
    receiver, client = scripted()
    Script(receiver, ["completed"])
    assert client.call_tool("batch").text == "done"  # "clients MUST invoke the tool as a task"
    assert (
        client.call_tool("slow").text == "ran slow at once"
    )  # optional, not asked for: a normal call
    assert [m["params"].get("task") for m in receiver.sent("tools/call")] == [{}, None]
    assert len(receiver.sent("tools/list")) == 1  # taskSupport learnt once per listing


def test_a_tools_list_changed_makes_the_client_learn_task_support_again(scripted):
    tools = [dict(tool, execution=dict(tool.get("execution") or {})) for tool in TOOLS]
    changed = threading.Event()
    receiver, client = scripted(
        tools=tools, on_list_changed=lambda kind: kind == "tools" and changed.set()
    )
    Script(receiver, ["completed"])
    assert (
        client.call_tool("slow").text == "ran slow at once"
    )  # optional, not asked for: a normal call
    next(tool for tool in tools if tool["name"] == "slow")["execution"]["taskSupport"] = "required"
    receiver.end.write(
        json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}).encode()
    )
    assert changed.wait(WAIT)
    assert client.call_tool("slow").text == "done"  # required now: called as a task
    assert [m["params"].get("task") for m in receiver.sent("tools/call")] == [None, {}]
    assert len(receiver.sent("tools/list")) == 2  # listed again after the change, once


@pytest.mark.parametrize("tool", ["plain", "never", "unknown"])
def test_a_forbidden_or_unlisted_tool_is_never_a_task(scripted, tool):
    receiver, client = scripted()
    Script(receiver, ["completed"])
    assert (
        client.call_tool(tool, task=True).text == f"ran {tool} at once"
    )  # "MUST NOT attempt to invoke the tool as a task"
    assert "task" not in receiver.sent("tools/call")[0]["params"]


def test_a_listing_that_fails_means_a_usual_call_and_is_tried_again_later(scripted, caplog):
    """taskSupport is learnt from tools/list; when the listing fails (a cursor another worker signed
    ...) the call goes on as a usual one, and the next call lists again."""
    receiver, client = scripted()
    Script(receiver, ["completed"])
    listed = receiver.handlers["tools/list"]
    receiver.handlers["tools/list"] = lambda p: (_ for _ in ()).throw(
        Refuse(-32602, "Invalid params: invalid cursor")
    )
    with caplog.at_level("WARNING", logger="mcp_ref.extensions.client_tasks_2025"):
        assert client.call_tool("slow", task=True).text == "ran slow at once"
    assert "could not list the tools to learn whether slow runs as a task" in caplog.text
    receiver.handlers["tools/list"] = listed
    assert client.call_tool("slow", task=True).text == "done"  # listed again: optional, asked for
    assert [m["params"].get("task") for m in receiver.sent("tools/call")] == [None, {}]


@pytest.mark.parametrize(
    "capabilities",
    [{"tools": {}}, {"tools": {}, "tasks": {"list": {}, "cancel": {}}}],
    ids=["no-tasks", "no-tools-call"],
)
def test_without_tasks_requests_tools_call_no_call_is_a_task(scripted, capabilities):
    receiver, client = scripted(capabilities)
    Script(receiver, ["completed"])
    assert (
        client.call_tool("batch", task=True).text == "ran batch at once"
    )  # rule 1: "regardless of taskSupport"
    assert "task" not in receiver.sent("tools/call")[0]["params"]


def test_a_requested_ttl_is_sent_and_a_bad_one_refused(scripted):
    receiver, client = scripted()
    Script(receiver, ["completed"])
    client.call_tool("slow", task={"ttl": 5000})
    assert receiver.sent("tools/call")[0]["params"]["task"] == {"ttl": 5000}
    for bad in ({"ttl": 0}, {"ttl": "5"}, {"ttl": True}, {"keep": 1}):
        with pytest.raises(ValueError):
            client.start_tool_call("slow", task=bad)


def test_a_receiver_that_runs_the_call_at_once_is_answered_as_usual(scripted):
    receiver, client = scripted()
    Script(receiver, ["completed"])
    receiver.handlers["tools/call"] = lambda params: text_result("no task after all")
    call = client.start_tool_call("slow", task=True)
    assert call.result().text == "no task after all" and call.task_id is None and call.done()
    assert receiver.sent("tasks/get") == []


# -- the follower ---------------------------------------------------------------------------------


def test_input_required_opens_tasks_result_and_the_elicitation_is_answered_there(scripted):
    asked: list = []

    def elicit(params):
        asked.append(params)
        return {"action": "accept", "content": {"choice": "b"}}

    receiver, client = scripted(elicitation_handler=elicit)
    script = Script(receiver, ["working", "input_required"])
    answers: list = []

    def ask_then_finish():  # §Input Required Status: the request carries the related-task metadata
        answers.append(
            receiver.ask(
                "elicitation/create",
                {
                    "mode": "form",
                    "message": "which?",
                    "_meta": {RELATED_TASK: {"taskId": "t1"}},
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"choice": {"type": "string"}},
                    },
                },
            )
        )
        script.status = "completed"
        script.result = text_result(f"chose {answers[0]['result']['content']['choice']}", "t1")
        script.released.set()

    script.on_result = ask_then_finish
    assert client.call_tool("slow", task=True).text == "chose b"
    assert asked[0].meta == {RELATED_TASK: {"taskId": "t1"}}
    # §Related Task Metadata: "All requests, notifications, and responses related to a task MUST include" it.
    assert answers[0]["result"]["_meta"] == {RELATED_TASK: {"taskId": "t1"}}
    assert len(receiver.sent("tasks/get")) == 2  # no polling while tasks/result was open


def test_a_tasks_result_that_times_out_in_input_required_goes_back_to_polling(scripted):
    receiver, client = scripted()
    script = Script(receiver, ["input_required", "working", "completed"])
    first = threading.Event()

    def hold_the_first():
        if not first.is_set():
            first.set()
            script.released.clear()

    script.on_result = hold_the_first
    result = client.call_tool(
        "slow", task=True, timeout=0.3
    )  # §Retrieving Task Results: polling may resume
    assert result.text == "done"
    assert len(receiver.sent("tasks/result")) == 2 and len(receiver.sent("tasks/get")) == 3
    assert (
        receiver.sent("notifications/cancelled")[0]["params"]["requestId"]
        == receiver.sent("tasks/result")[0]["id"]
    )


def test_a_tasks_result_refused_while_the_task_runs_goes_back_to_polling(scripted):
    receiver, client = scripted()
    script = Script(
        receiver,
        ["input_required", "working", "failed"],
        error=Refuse(-32603, "it broke at the end"),
    )
    fetch = receiver.handlers["tasks/result"]
    refused: list = []

    def busy_once(params):
        if not refused:
            refused.append(params)
            raise Refuse(-32000, "Server busy: the task goes on, poll tasks/get and ask again")
        return fetch(params)

    receiver.handlers["tasks/result"] = busy_once
    with pytest.raises(McpError) as failed:  # the task's own error, once tasks/get shows it ended
        client.call_tool("slow", task=True)
    assert failed.value.code == -32603 and script.status == "failed"
    assert len(receiver.sent("tasks/result")) == 2 and len(receiver.sent("tasks/get")) == 3


def test_a_task_asking_for_input_again_and_again_is_cancelled_after_max_input_rounds(scripted):
    receiver, client = scripted(max_input_rounds=2)
    Script(receiver, ["input_required", "working"] * 5)
    receiver.handlers["tasks/result"] = lambda params: (_ for _ in ()).throw(
        Refuse(-32000, "still going")
    )
    with pytest.raises(LimitExceeded) as exceeded:
        client.call_tool("slow", task=True)
    assert exceeded.value.data == {"limit": 2}
    assert len(receiver.sent("tasks/result")) == 2 and len(receiver.sent("tasks/cancel")) == 1


def test_a_failed_task_returns_its_is_error_result(scripted):
    receiver, client = scripted()
    Script(receiver, ["failed"], result=text_result("the tool broke", "t1", is_error=True))
    result = client.call_tool(
        "slow", task=True
    )  # §Task Execution Errors: isError → failed, tasks/result has it
    assert result.is_error and result.text == "the tool broke"


def test_a_failed_task_raises_its_json_rpc_error(scripted):
    receiver, client = scripted()
    Script(receiver, ["failed"], error=Refuse(-32603, "the handler crashed"))
    with pytest.raises(McpError) as failed:  # tasks/result "MUST return that same JSON-RPC error"
        client.call_tool("slow", task=True)
    assert failed.value.code == -32603 and "crashed" in failed.value.message


def test_a_task_cancelled_by_someone_else_raises_request_cancelled(scripted):
    receiver, client = scripted()
    Script(receiver, ["working", "cancelled"])
    with pytest.raises(RequestCancelled):
        client.call_tool("slow", task=True)
    assert receiver.sent("tasks/result") == []


@pytest.mark.parametrize("bound", ["ttl", "max_total_timeout"])
def test_the_task_ttl_and_max_total_timeout_bound_the_wait(scripted, bound):
    receiver, client = scripted()
    Script(receiver, ["working"], ttl=300 if bound == "ttl" else None, poll=50)
    began = time.monotonic()
    with pytest.raises(RequestTimeout):
        client.call_tool(
            "slow",
            task=True,
            **({"max_total_timeout": 0.3} if bound == "max_total_timeout" else {}),
        )
    assert time.monotonic() - began < WAIT / 2
    assert [m["params"] for m in receiver.sent("tasks/cancel")] == [
        {"taskId": "t1"}
    ]  # abandoned, as a timed-out request


def test_the_poll_interval_is_respected_and_clamped(scripted):
    receiver, client = scripted()
    Script(receiver, ["working", "working", "completed"], poll=300)
    began = time.monotonic()
    client.call_tool("slow", task=True)
    assert time.monotonic() - began >= 0.8  # three polls, each after pollInterval (300 ms)
    from mcp_ref.extensions.client_tasks import MAX_POLL, MIN_POLL, interval

    assert interval({"pollInterval": 1}, "pollInterval") == MIN_POLL
    assert interval({"pollInterval": 10**9}, "pollInterval") == MAX_POLL
    assert interval({"pollIntervalMs": 1000}) == 1.0


@pytest.mark.parametrize("huge", ["ttl", "pollInterval"])
def test_a_huge_ttl_or_poll_interval_is_clamped_not_an_overflow(scripted, huge):
    """A receiver's ``ttl`` or ``pollInterval`` may be any JSON integer: one too large for a float
    is clamped (the poll interval to MAX_POLL, the ttl to LONGEST_TTL_MS) before it is divided, and
    the call is bounded as usual; the old client raised OverflowError from the call."""
    receiver, client = scripted()
    Script(
        receiver,
        ["working"],
        ttl=10**400 if huge == "ttl" else 60000,
        poll=10**400 if huge == "pollInterval" else 10,
    )
    with pytest.raises(RequestTimeout):
        client.call_tool("slow", task=True, max_total_timeout=0.3)
    assert [m["params"] for m in receiver.sent("tasks/cancel")] == [{"taskId": "t1"}]
    from mcp_ref.extensions.client_tasks import LONGEST_TTL_MS, MAX_POLL, deadline_of, interval

    assert interval({"pollIntervalMs": 10**400}) == MAX_POLL
    before = time.monotonic()
    deadline = deadline_of(10**400, None)
    assert deadline is not None and deadline - before <= LONGEST_TTL_MS / 1000 + 1


# -- cancelling (§Task Cancellation) ---------------------------------------------------------------


@pytest.mark.slow
def test_cancel_sends_tasks_cancel_and_wakes_the_follower(scripted):
    receiver, client = scripted()
    script = Script(receiver, ["working"], poll=10)
    polled = threading.Event()
    get = receiver.handlers["tasks/get"]

    def get_then_poll_slowly(params):
        script.poll = 30_000  # the follower's next wait: 30 s (MAX_POLL), longer than any here
        answer = get(params)
        polled.set()
        return answer

    receiver.handlers["tasks/get"] = get_then_poll_slowly
    call = client.start_tool_call("slow", task=True)
    outcome: list = []
    follower = threading.Thread(target=lambda: outcome.append(_outcome(call.result)))
    follower.start()
    assert polled.wait(WAIT)
    assert call.cancel() is True
    follower.join(WAIT)
    assert not follower.is_alive(), "cancel() did not wake the follower out of its poll interval"
    assert isinstance(outcome[0], RequestCancelled) and call.done()
    assert [m["params"] for m in receiver.sent("tasks/cancel")] == [{"taskId": "t1"}]
    # "the tasks/cancel request MUST be used instead of the notifications/cancelled notification"
    assert receiver.sent("notifications/cancelled") == []


def test_cancel_before_anyone_follows_and_of_a_finished_task(scripted):
    receiver, client = scripted()
    Script(receiver, ["completed"])
    call = client.start_tool_call("slow", task=True)
    assert call.cancel() is True and call.task_id == "t1" and call.done()
    assert call.cancel() is False  # settled already
    with pytest.raises(RequestCancelled):
        call.result()
    assert receiver.sent("tasks/get") == []  # nothing more was asked of a task the caller gave up

    receiver2, client2 = scripted()
    Script(receiver2, ["completed"])
    call = client2.start_tool_call("slow", task=True)
    assert call.result().text == "done"
    assert call.cancel() is False  # finished: nothing sent
    assert receiver2.sent("tasks/cancel") == []


def test_cancel_of_a_task_that_ended_meanwhile_is_false(scripted):
    receiver, client = scripted()
    script = Script(receiver, ["working"])
    call = client.start_tool_call("slow", task=True)
    script.status = "completed"  # it ended on the receiver before the caller cancelled
    assert call.cancel() is False  # -32602 "already in a terminal status"


def test_a_task_calls_progress_ends_when_it_is_cancelled_or_answered_without_a_task(scripted):
    """A task call's progress token outlives the ``tools/call``'s answer only while a task may send
    progress; it ends when the call is cancelled and when the answer is no task, whether or not
    ``result()`` is ever called (the old client kept both registered for the connection's life, one
    per call, and went on calling their ``on_progress``)."""
    receiver, client = scripted()
    Script(receiver, ["working"])
    heard: dict = {"cancelled": [], "no task": [], "live": threading.Event()}
    cancelled = client.start_tool_call(
        "slow", task=True, on_progress=lambda *a: heard["cancelled"].append(a)
    )
    assert cancelled.cancel() is True  # never result()
    receiver.handlers["tools/call"] = lambda params: text_result("no task after all")
    no_task = client.start_tool_call(
        "slow", task=True, on_progress=lambda *a: heard["no task"].append(a)
    )
    assert no_task.pending.result()["content"][0]["text"] == "no task after all"  # never result()
    started, release = threading.Event(), threading.Event()

    def live_call(params):
        started.set()
        assert release.wait(WAIT)
        return text_result("live")

    receiver.handlers["tools/call"] = live_call
    live = client.start_tool_call("slow", task=True, on_progress=lambda *a: heard["live"].set())
    assert started.wait(WAIT)
    # each call's token, in order; progress on the first two, then on the live call's: the
    # client handles them in order, so once the live one is heard the others were handled
    tokens = [m["params"]["_meta"]["progressToken"] for m in receiver.sent("tools/call")]
    for token in tokens:
        receiver.end.write(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 1},
                }
            ).encode()
        )
    assert heard["live"].wait(WAIT)
    release.set()
    assert live.result().text == "live"
    assert heard["cancelled"] == [] and heard["no task"] == []


# -- get_task, cancel_task, list_tasks, task_result -------------------------------------------------


def test_the_task_methods_of_the_client(scripted):
    receiver, client = scripted()
    script = Script(receiver, ["working"])
    pages = {
        None: {"tasks": [task("t1")], "nextCursor": "p2"},
        "p2": {"tasks": [task("t2", "completed")]},
    }
    receiver.handlers["tasks/list"] = lambda params: pages[params.get("cursor")]
    page = client.list_tasks()
    assert [t["taskId"] for t in page.items] == ["t1"] and page.next_cursor == "p2"
    page = client.list_tasks(page.next_cursor)
    assert [t["status"] for t in page.items] == ["completed"] and page.next_cursor is None
    assert receiver.sent("tasks/list")[1]["params"] == {"cursor": "p2"}
    assert client.get_task("t1")["status"] == "working"
    with pytest.raises(InvalidParams):
        client.get_task("nope")
    assert client.cancel_task("t1")["status"] == "cancelled"
    with pytest.raises(InvalidParams):
        client.cancel_task("t1")  # already terminal
    script.result = text_result("late", "t1")
    assert client.task_result("t1").text == "late"


def test_list_tasks_needs_the_tasks_list_capability(scripted):
    receiver, client = scripted(
        {"tools": {}, "tasks": {"cancel": {}, "requests": {"tools": {"call": {}}}}}
    )
    with pytest.raises(CapabilityError):
        client.list_tasks()
    assert receiver.sent("tasks/list") == []


@pytest.mark.slow
def test_a_client_of_a_server_without_tasks_never_loads_the_module(tmp_path):
    """A plain handshake-era client calling a plain server reads nothing of this feature."""
    server = tmp_path / "server.py"
    server.write_text(
        "from mcp_ref import Server\n"
        "server = Server('plain')\n"
        "@server.tool()\n"
        "def echo(text: str) -> str:\n"
        "    'Echo.'\n"
        "    return text\n"
        "server.run_stdio()\n"
    )
    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\n"
        "from mcp_ref import Client\n"
        "with Client.stdio([sys.executable, sys.argv[1]], protocol_version='2025-11-25') as c:\n"
        "    assert c.call_tool('echo', {'text': 'x'}, task=True).text == 'x'\n"
        "print('mcp_ref.extensions.client_tasks_2025' in sys.modules)\n"
    )
    import subprocess

    done = subprocess.run(
        [sys.executable, str(script), str(server)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


def _outcome(function):
    try:
        return function()
    except Exception as exc:  # the test looks at what it was
        return exc


# -- mcp_ref's client and mcp_ref's server (extensions/tasks_2025.py) ------------------------------------

TASKS_SERVER = InMemory("tasks_server")  # tests/servers/tasks_server.py: the tools serve both eras


def answer_elicitation(params):
    if "name" in params.message.lower():
        return {"action": "accept", "content": {"name": "Ada"}}
    return {"action": "accept", "content": {"confirm": True}}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["memory", "stdio", "http"])
def test_mcp_ref_client_and_server_at_2025_11_25(kind, wire, serve):
    asked: list = []

    def elicit(params):
        asked.append(params)
        return answer_elicitation(params)

    polled = threading.Event()
    watching = threading.Event()

    def trace(direction: str, data: bytes) -> None:
        wire(direction, data)
        if watching.is_set() and direction == "-->" and b'"tasks/get"' in data:
            polled.set()

    with client_over(
        kind, TASKS_SERVER, serve, trace=trace, protocol_version=VERSION, elicitation_handler=elicit
    ) as client:
        assert client.server_capabilities["tasks"] == TASKS_CAPABILITY
        # a required tool, asking three questions during its task (through tasks/result)
        call = client.start_tool_call("confirm", {"filename": "a.txt"})
        result = call.result()
        assert result.text == "Ada deleted a.txt (True)" and result.meta[RELATED_TASK] == {
            "taskId": call.task_id
        }
        assert [a.meta[RELATED_TASK]["taskId"] for a in asked] == [call.task_id] * 3
        assert wire.sent("tools/call")[-1]["params"]["task"] == {}
        assert wire.sent("tasks/result") and client.get_task(call.task_id)["status"] == "completed"
        # isError: the task is failed and its result returned; a JSON-RPC error raised
        result = client.call_tool("tool_error")
        assert result.is_error and result.text == "no luck"
        with pytest.raises(McpError) as failed:
            client.call_tool("protocol_error")
        assert failed.value.code == -32603 and failed.value.message == "the backend refused"
        # cancel a task being followed
        call = client.start_tool_call("forever")
        outcome: list = []
        watching.set()
        follower = threading.Thread(target=lambda: outcome.append(_outcome(call.result)))
        follower.start()
        assert polled.wait(WAIT)  # the follower polls the task
        assert call.cancel() is True
        follower.join(WAIT)
        assert isinstance(outcome[0], RequestCancelled)
        assert client.get_task(call.task_id)["status"] == "cancelled"
        ids = [task["taskId"] for task in client.list_tasks().items]
        assert call.task_id in ids and len(ids) == 4
        with pytest.raises(InvalidParams):
            client.cancel_task(call.task_id)  # already terminal
        # an optional tool is a task only when asked
        # ... and its progress, sent by the task after the CreateTaskResult, reaches on_progress
        # (§Task Progress Notifications: the token "remains valid throughout the task lifetime")
        steps, progressed = [], threading.Event()
        call = client.start_tool_call(
            "compute",
            {"n": 3},
            task=True,
            on_progress=lambda *p: (steps.append(p[2]), progressed.set()),
        )
        assert progressed.wait(WAIT) and steps == ["half way"]
        client.call_tool("release")
        assert call.result().text == "3 squared is 9" and call.task_id
        assert client.call_tool("compute", {"n": 4}).text == "4 squared is 16"
        assert "task" not in wire.sent("tools/call")[-1]["params"]
