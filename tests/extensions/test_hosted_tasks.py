"""2025-11-25 client-hosted tasks: ``Client(tasks=True)`` (mcp_ref.extensions.hosted_tasks).

The server is the requestor of task-augmented ``sampling/createMessage`` and ``elicitation/create``,
the client the receiver (2025-11-25 basic/utilities/tasks).  Two peers drive it over real stdio:

* tests/servers/hosted_tasks_peer.py, a raw server written by hand that sends whatever requests a
  test asks for (``tasks/get``, ``tasks/result``, ``tasks/list``, ``tasks/cancel``, the -32602 cases,
  the bounds);
* the reference TypeScript "everything" server (``npx -y @modelcontextprotocol/server-everything``),
  whose ``trigger-elicitation-request-async`` / ``trigger-sampling-request-async`` tools exist only
  for clients declaring these capabilities (slow; skipped when it cannot start).

Every message both ways is checked against the official 2025-11-25 schema.  No test sleeps: each
waits on an event, bounded by ``WAIT``.
"""

from __future__ import annotations

import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import SERVERS, WAIT, Collector, WireChecker, command_label, watch_stderr
from everything_server import everything_client

from mcp_ref import Client, Extension, McpError, Server
from mcp_ref.extensions import hosted_tasks

PEER = [sys.executable, str(SERVERS / "hosted_tasks_peer.py")]
RELATED = "io.modelcontextprotocol/related-task"
NAME_SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
ELICIT = {"message": "Your name?", "requestedSchema": NAME_SCHEMA}
SAMPLE = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "Hello?"}}],
    "maxTokens": 5,
}
ACCEPTED = {"action": "accept", "content": {"name": "Ada"}}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}
BOTH = {"sampling": {"createMessage": {}}, "elicitation": {"create": {}}}


class Tap:
    """The client's ``trace``: feeds the WireChecker, and sets the events tests wait on."""

    def __init__(self, wire: WireChecker):
        self.wire = wire
        self._watches: list = []
        self._lock = threading.Lock()

    def __call__(self, direction: str, data: bytes) -> None:
        self.wire(direction, data)
        message = json.loads(data)
        with self._lock:
            watches = list(self._watches)
        for predicate, event in watches:
            if isinstance(message, dict) and predicate(direction, message):
                event.set()

    def when(self, predicate) -> threading.Event:
        """An Event set once a message with ``predicate(direction, message)`` passes."""
        event = threading.Event()
        with self._lock:
            self._watches.append((predicate, event))
        return event


@pytest.fixture
def peer(wire):
    """Factory: ``peer(*args, **client_options)`` -> (Client on hosted_tasks_peer.py, Tap); closed after."""
    clients = []

    def factory(*args: str, **options):
        tap = Tap(wire)
        options.setdefault("protocol_version", "2025-11-25")
        options.setdefault("timeout", WAIT)
        options["stderr"] = lines = Collector()
        watch_stderr(command_label(PEER), lambda: lines.items)
        client = Client.stdio(PEER + list(args), trace=tap, **options)
        clients.append(client)
        return client, tap

    yield factory
    for client in clients:
        client.close()


def ask(client: Client, *requests: tuple[str, object]) -> list[dict]:
    """Have the peer send ``(method, params)`` requests at once: the client's answers, in request order."""
    answers = arrival(client, *requests)
    return [next(a for a in answers if a["index"] == i) for i in range(len(requests))]


def arrival(client: Client, *requests: tuple[str, object]) -> list[dict]:
    """Like :func:`ask`, in the order the answers arrived (each has its request's ``index``)."""
    wanted = [{"method": m} if p is None else {"method": m, "params": p} for m, p in requests]
    return json.loads(client.call_tool("send", {"requests": wanted}).content[0].text)


def create(
    client: Client, method: str = "elicitation/create", params: dict | None = None, **task
) -> dict:
    """Have the peer send a task-augmented request; the Task the client answered with."""
    (answer,) = ask(
        client,
        (
            method,
            {**(params or (ELICIT if method == "elicitation/create" else SAMPLE)), "task": task},
        ),
    )
    assert set(answer["result"]) == {"task"}, answer
    return answer["result"]["task"]


class Gate:
    """Handlers that wait: for ``release`` (``handler``), or for their task's cancellation (``until_cancelled``)."""

    def __init__(self):
        self.entered = threading.Event()
        self.release = threading.Event()
        self.cancelled = threading.Event()
        self.left = threading.Event()
        self.calls = Collector()

    def handler(self, params, context):
        self.calls(params)
        self.entered.set()
        assert self.release.wait(WAIT)
        self.left.set()
        return ACCEPTED

    def until_cancelled(self, params, context):
        self.calls(params)
        self.entered.set()
        if context.cancelled.wait(WAIT):
            self.cancelled.set()
        self.left.set()
        return ACCEPTED  # a late result: must not change a cancelled task


def error_code(answer: dict) -> int:
    return answer["error"]["code"]


# -- the capability --------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_tasks_capability_names_the_requests_the_client_has_handlers_for(peer, wire):
    client, _ = peer(
        tasks=True, elicitation_handler=lambda p: ACCEPTED, sampling_handler=lambda p: SAMPLED
    )
    # 2025-11-25 §Client Capabilities; "The set of capabilities in capabilities.tasks.requests is exhaustive".
    declared = json.loads(client.call_tool("capabilities").content[0].text)
    assert declared["tasks"] == {"list": {}, "cancel": {}, "requests": BOTH}
    only, _ = peer(tasks=True, elicitation_handler=lambda p: ACCEPTED)
    assert json.loads(only.call_tool("capabilities").content[0].text)["tasks"]["requests"] == {
        "elicitation": {"create": {}}
    }
    none, _ = peer(tasks=True)
    assert json.loads(none.call_tool("capabilities").content[0].text)["tasks"] == {
        "list": {},
        "cancel": {},
        "requests": {},
    }
    plain, _ = peer(elicitation_handler=lambda p: ACCEPTED)
    assert "tasks" not in json.loads(plain.call_tool("capabilities").content[0].text)
    # Another revision: 2026-07-28 removed client-hosted tasks; older ones never had the capability.
    assert "tasks" not in client.capabilities("2026-07-28") and "tasks" not in client.capabilities(
        "2025-06-18"
    )


# -- the lifecycle ---------------------------------------------------------------------------------


def test_an_elicitation_task_is_answered_at_once_and_tasks_result_waits_for_its_handler(peer, wire):
    gate = Gate()
    client, tap = peer(tasks=True, elicitation_handler=gate.handler)
    task = create(client, ttl=60_000)
    # §Creating Tasks: CreateTaskResult at once; §Task Status Lifecycle 1: it begins "working".
    assert task["status"] == "working" and task["ttl"] == 60_000 and task["pollInterval"] == 1000
    assert isinstance(task["taskId"], str) and task["createdAt"] == task["lastUpdatedAt"]
    assert gate.entered.wait(WAIT)  # the handler runs, on a worker, after the answer
    (params,) = gate.calls.items
    assert params.message == "Your name?"
    tid = {"taskId": task["taskId"]}
    (got,) = ask(client, ("tasks/get", tid))
    assert got["result"]["status"] == "working" and got["result"]["taskId"] == task["taskId"]
    assert RELATED not in got["result"].get(
        "_meta", {}
    )  # §Associating Task-Related Messages: SHOULD NOT
    (listed,) = ask(client, ("tasks/list", None))
    assert [t["taskId"] for t in listed["result"]["tasks"]] == [task["taskId"]]

    # tasks/result blocks (on a handler thread, not the reader): a tasks/get sent after it is answered first.
    polled = tap.when(
        lambda d, m: (
            d == "-->"
            and isinstance(m.get("result"), dict)
            and m["result"].get("taskId") == task["taskId"]
        )
    )
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(arrival, client, ("tasks/result", tid), ("tasks/get", tid))
        assert polled.wait(WAIT)
        assert not pending.done()
        gate.release.set()
        answers = {answer["index"]: answer for answer in pending.result(WAIT)}
    # The tasks/get was answered (``polled``) while the tasks/result still waited for its handler:
    # that is the proof.  Not the order the peer read them in: a trace sees a message just before
    # it is written, so the released tasks/result may still reach the peer first.
    first, second = answers[1], answers[0]
    assert first["result"]["status"] == "working"
    # §Result Retrieval: exactly the underlying result, with related-task in _meta (MUST).
    assert second["index"] == 0 and second["result"] == {**ACCEPTED, "_meta": {RELATED: tid}}

    (done, again, cancel) = ask(
        client, ("tasks/get", tid), ("tasks/result", tid), ("tasks/cancel", tid)
    )
    assert (
        done["result"]["status"] == "completed"
        and done["result"]["lastUpdatedAt"] >= task["createdAt"]
    )
    assert again["result"] == second["result"]
    # §Task Cancellation 1: a terminal task's cancellation is rejected with -32602.
    assert error_code(cancel) == -32602 and "completed" in cancel["error"]["message"]


def test_a_cancelled_task_stays_cancelled_and_its_handler_is_told(peer, wire):
    gate = Gate()
    client, _ = peer(tasks=True, elicitation_handler=gate.until_cancelled)
    task = create(client)
    assert task["ttl"] == hosted_tasks.DEFAULT_TTL_MS  # no ttl asked: the store's default
    assert gate.entered.wait(WAIT)
    tid = {"taskId": task["taskId"]}
    (cancel,) = ask(client, ("tasks/cancel", tid))
    # §Task Cancellation 2: moved to cancelled "before sending the response"; the answer is the Task.
    assert cancel["result"]["status"] == "cancelled" and cancel["result"]["statusMessage"]
    assert gate.cancelled.wait(WAIT) and gate.left.wait(
        WAIT
    )  # the handler saw context.cancelled, then returned
    (got, twice, result) = ask(
        client, ("tasks/get", tid), ("tasks/cancel", tid), ("tasks/result", tid)
    )
    assert (
        got["result"]["status"] == "cancelled"
    )  # §Task Cancellation 3: its late result changed nothing
    assert error_code(twice) == -32602
    assert error_code(result) == -32603 and "cancelled" in result["error"]["message"]


def test_a_handler_error_fails_the_task_and_tasks_result_returns_that_error(peer, wire):
    def broken(params):
        raise McpError("The model is unavailable", code=-32000, data={"retry": True})

    client, _ = peer(tasks=True, sampling_handler=broken)
    task = create(client, "sampling/createMessage", ttl=30_000)
    tid = {"taskId": task["taskId"]}
    (result,) = ask(client, ("tasks/result", tid))
    (got,) = ask(client, ("tasks/get", tid))  # after tasks/result: the task is terminal
    # §Task Execution Errors: failed, with a statusMessage; tasks/result "MUST return that same JSON-RPC error".
    assert result["error"] == {
        "code": -32000,
        "message": "The model is unavailable",
        "data": {"retry": True},
    }
    assert (
        got["result"]["status"] == "failed"
        and got["result"]["statusMessage"] == "The model is unavailable"
    )


def test_a_sampling_task_completes_with_the_handlers_result(peer, wire):
    client, _ = peer(tasks=True, sampling_handler=lambda p: SAMPLED)
    task = create(client, "sampling/createMessage", ttl=30_000)
    (result,) = ask(client, ("tasks/result", {"taskId": task["taskId"]}))
    assert result["result"] == {**SAMPLED, "_meta": {RELATED: {"taskId": task["taskId"]}}}


# -- errors ------------------------------------------------------------------------------------------


def test_protocol_errors_are_32602(peer, wire):
    client, _ = peer(tasks=True, elicitation_handler=lambda p: ACCEPTED)
    unknown = {"taskId": "no-such-task"}
    answers = ask(
        client,
        ("tasks/get", unknown),
        ("tasks/result", unknown),
        ("tasks/cancel", unknown),
        ("tasks/get", {"taskId": 42}),
        ("tasks/list", {"cursor": "not-a-cursor-of-ours"}),
        ("elicitation/create", {**ELICIT, "task": "soon"}),
        ("elicitation/create", {**ELICIT, "task": {"ttl": -5}}),
    )
    # §Protocol Errors: unknown taskId, bad cursor -> -32602; and a malformed task field.
    assert [error_code(a) for a in answers] == [-32602] * 7
    # The peer broke the schema on purpose (taskId 42, task "soon"); nothing else may.
    assert wire.errors and all(
        e.startswith(("GetTaskRequest:", "ElicitRequest:")) for e in wire.errors
    )
    wire.errors.clear()
    # §TTL and Resource Management 3: the receiver MAY override the requested ttl; the Task says which.
    assert create(client, ttl=0)["ttl"] == hosted_tasks.MIN_TTL_MS
    assert create(client, ttl=10**12)["ttl"] == hosted_tasks.MAX_TTL_MS


def test_tasks_list_is_paged_with_an_opaque_cursor(peer, wire):
    client, _ = peer(tasks=True, sampling_handler=lambda p: SAMPLED)
    client.hosted_tasks.page_size = 2
    made = [create(client, "sampling/createMessage")["taskId"] for _ in range(3)]
    (first,) = ask(client, ("tasks/list", {}))
    assert [t["taskId"] for t in first["result"]["tasks"]] == made[:2]
    cursor = first["result"]["nextCursor"]
    (second,) = ask(client, ("tasks/list", {"cursor": cursor}))
    # §Task Listing 2: nextCursor only while more tasks are available.
    assert [t["taskId"] for t in second["result"]["tasks"]] == made[
        2:
    ] and "nextCursor" not in second["result"]


# -- the usual checks still apply ------------------------------------------------------------------


def test_a_refusal_by_the_approve_hook_is_the_tasks_outcome(peer, wire):
    shown = Collector()
    ran = Collector()

    def approve(request):
        shown(request)
        return False

    client, _ = peer(
        tasks=True,
        approve=approve,
        elicitation_handler=lambda p: ran(p) or ACCEPTED,
        sampling_handler=lambda p: ran(p) or SAMPLED,
    )
    elicit = create(client, ttl=30_000)
    sample = create(client, "sampling/createMessage", ttl=30_000)
    (declined, refused) = ask(
        client,
        ("tasks/result", {"taskId": elicit["taskId"]}),
        ("tasks/result", {"taskId": sample["taskId"]}),
    )
    (failed,) = ask(client, ("tasks/get", {"taskId": sample["taskId"]}))
    # 2025-11-25 client/elicitation: a refused elicitation is declined; client/sampling §Error Handling: -1.
    assert declined["result"] == {
        "action": "decline",
        "_meta": {RELATED: {"taskId": elicit["taskId"]}},
    }
    assert refused["error"] == {"code": -1, "message": "User rejected sampling request"}
    assert failed["result"]["status"] == "failed"
    assert [r.method for r in shown.items] == ["elicitation/create", "sampling/createMessage"]
    assert shown.items[0].params["task"] == {"ttl": 30_000}
    assert ran.items == []  # no handler ran


def test_a_task_cancelled_while_the_approve_hook_runs_never_reaches_the_handler(peer, wire):
    # 2025-11-25 basic/utilities/cancellation: receivers SHOULD "Stop processing the cancelled
    # request"; the approve hook runs inside the task, and the task is cancelled meanwhile.
    from mcp_ref.extensions.approval import Approval
    from mcp_ref.extensions.hosted_tasks import HostedTasks

    shown, saw_cancellation, ran = threading.Event(), [], Collector()
    outcomes, ended = [], threading.Event()

    def approve(request, context):
        shown.set()
        saw_cancellation.append(context.cancelled.wait(WAIT))
        return True

    class Outcome(Extension):  # inside the task, around the hook: how the task's work ended
        def intercept_request(self, call, proceed):
            if call.method != "sampling/createMessage":  # the one request watched
                return proceed()
            try:
                result = proceed()
            except BaseException as exc:
                outcomes.append(type(exc).__name__)
                raise
            finally:
                ended.set()
            outcomes.append("answered")
            return result

    client, _ = peer(
        extensions=[HostedTasks(), Outcome(), Approval(approve)],
        sampling_handler=lambda p: ran(p) or SAMPLED,
    )
    task = create(client, "sampling/createMessage", ttl=30_000)
    assert shown.wait(WAIT)
    (cancel,) = ask(client, ("tasks/cancel", {"taskId": task["taskId"]}))
    assert cancel["result"]["status"] == "cancelled"
    assert ended.wait(WAIT)
    assert saw_cancellation == [True] and outcomes == ["RequestCancelled"]
    assert ran.items == []  # the model was never sampled
    (got,) = ask(client, ("tasks/get", {"taskId": task["taskId"]}))
    assert got["result"]["status"] == "cancelled"


def test_the_server_request_limit_refuses_before_any_task_is_made(peer, wire):
    client, _ = peer(
        tasks=True, server_request_limit=(1, 3600), elicitation_handler=lambda p: ACCEPTED
    )
    task = create(client, ttl=30_000)
    (over, listed) = ask(
        client, ("elicitation/create", {**ELICIT, "task": {}}), ("tasks/list", None)
    )
    assert error_code(over) == -31005  # LimitExceeded, answered at once
    assert [t["taskId"] for t in listed["result"]["tasks"]] == [task["taskId"]]


def test_without_a_handler_a_task_augmented_request_is_method_not_found(peer, wire):
    client, _ = peer(tasks=True, elicitation_handler=lambda p: ACCEPTED)
    (answer,) = ask(client, ("sampling/createMessage", {**SAMPLE, "task": {}}))
    assert error_code(answer) == -32601


# -- bounds ------------------------------------------------------------------------------------------


def test_a_full_store_refuses_with_31000_and_a_cancelled_task_makes_room(peer, wire):
    gate = Gate()
    client, _ = peer(tasks=True, elicitation_handler=gate.until_cancelled)
    client.hosted_tasks.max_tasks = 2
    first, _second = create(client), create(client)
    (full,) = ask(client, ("elicitation/create", {**ELICIT, "task": {}}))
    assert error_code(full) == -31000 and full["error"]["data"] == {"maxTasks": 2}
    (cancelled,) = ask(client, ("tasks/cancel", {"taskId": first["taskId"]}))
    assert cancelled["result"]["status"] == "cancelled"
    third = create(client)  # §Task Cancellation 4: a cancelled task MAY be deleted at any time
    (listed,) = ask(client, ("tasks/list", None))
    assert first["taskId"] not in [t["taskId"] for t in listed["result"]["tasks"]]
    assert third["taskId"] in [t["taskId"] for t in listed["result"]["tasks"]]


def test_waiting_tasks_result_requests_are_bounded(peer, wire):
    gate = Gate()
    client, tap = peer(tasks=True, elicitation_handler=gate.handler)
    client.hosted_tasks.max_result_waiters = 1
    task = create(client, ttl=30_000)
    tid = {"taskId": task["taskId"]}
    refused = tap.when(
        lambda d, m: (
            d == "-->" and isinstance(m.get("error"), dict) and m["error"]["code"] == -31000
        )
    )
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(arrival, client, ("tasks/result", tid), ("tasks/result", tid))
        assert refused.wait(WAIT)  # one waiter is refused at once; the other still waits
        gate.release.set()
        answers = pending.result(WAIT)
    # The two requests are served on two handler threads, so either may be the one that waits.
    refused_ones = [a for a in answers if a.get("error", {}).get("code") == -31000]
    accepted = [a for a in answers if a.get("result", {}).get("action") == "accept"]
    assert len(refused_ones) == 1 and len(accepted) == 1, answers


def test_an_expired_task_is_gone_and_its_waiting_result_request_ends(peer, wire):
    gate = Gate()
    client, tap = peer(tasks=True, elicitation_handler=gate.until_cancelled)
    hosted = client.hosted_tasks
    now = [1000.0]
    hosted.clock = lambda: now[0]
    task = create(client, ttl=5_000)
    assert gate.entered.wait(WAIT)
    tid = {"taskId": task["taskId"]}
    asked = tap.when(lambda d, m: d == "<--" and m.get("method") == "tasks/result")
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(ask, client, ("tasks/result", tid))
        assert asked.wait(WAIT)
        now[0] += 6.0  # past the ttl: §TTL and Resource Management 5, the task MAY be deleted
        (result,) = pending.result(WAIT)
    assert error_code(result) == -32602
    assert gate.cancelled.wait(WAIT)  # its handler was told to stop
    (got,) = ask(client, ("tasks/get", tid))
    assert error_code(got) == -32602


def test_closing_the_client_tells_a_running_task_to_stop(peer, wire):
    gate = Gate()
    client, _ = peer(tasks=True, elicitation_handler=gate.until_cancelled)
    create(client)
    assert gate.entered.wait(WAIT)
    client.close()
    assert gate.cancelled.wait(WAIT)


def test_a_running_task_is_told_to_stop_when_close_returns_and_no_thread_watches_for_it(peer, wire):
    """The client-hosted tasks watched their connection's end with a thread of their own, which
    told the running tasks to stop only some time after ``close()`` returned.  They are now told
    through the client's ``Extension.connection_ended``: no watcher thread, and the task's
    handler has been told by the time ``close()`` returns."""
    contexts = []
    entered = threading.Event()

    def handler(params, context):
        contexts.append(context)
        entered.set()
        context.cancelled.wait(WAIT)
        return ACCEPTED

    client, _ = peer(tasks=True, elicitation_handler=handler)
    create(client)
    assert entered.wait(WAIT)
    assert [t for t in threading.enumerate() if t.name == "mcp-hosted-tasks-watch"] == []
    client.close()
    assert contexts[0].is_cancelled


# -- other revisions: nothing changes --------------------------------------------------------------


@pytest.mark.parametrize("pinned, answered", [("2025-06-18", None), (None, "2025-06-18")])
def test_at_another_revision_task_is_ignored_and_tasks_methods_are_not_found(
    peer, wire, pinned, answered
):
    ran = Collector()
    client, _ = peer(
        *([answered] if answered else []),
        protocol_version=pinned,
        tasks=True,
        elicitation_handler=lambda p: ran(p) or ACCEPTED,
    )
    assert client.protocol_version == "2025-06-18"
    declared = json.loads(client.call_tool("capabilities").content[0].text)
    # Pinned to 2025-06-18 the client never declares it; asking 2025-11-25 it does, but the server chose 2025-06-18.
    assert ("tasks" in declared) == (pinned is None)
    answers = ask(
        client,
        ("elicitation/create", {**ELICIT, "task": {"ttl": 1000}}),
        ("tasks/get", {"taskId": "t"}),
        ("tasks/list", None),
    )
    # §Task Support and Handling 1: processed normally, the task field ignored; tasks/* unknown.
    assert answers[0]["result"] == ACCEPTED and len(ran) == 1
    assert [error_code(a) for a in answers[1:]] == [-32601, -32601]
    wire.errors.clear()  # the 2025-06-18 schema has no task field: the peer's request breaks it on purpose


def test_in_the_2026_07_28_era_no_request_declares_the_capability(wire):
    server = Server("plain")

    @server.tool()
    def echo(text: str) -> str:
        """Echo ``text``."""
        return text

    with Client.in_memory(
        server,
        era="modern",
        tasks=True,
        trace=wire,
        timeout=WAIT,
        elicitation_handler=lambda p: ACCEPTED,
    ) as client:
        assert client.era == "modern"
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    requests = [m for m in wire.sent() if "method" in m and "id" in m]
    assert requests
    for message in requests:
        assert (
            "tasks" not in message["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
        )


# -- the reference TypeScript server ---------------------------------------------------------------


@pytest.fixture(scope="module")
def everything():
    """A tasks=True Client on the everything server (2025-11-25), or a skip when it cannot start in time."""
    wire = WireChecker()
    with everything_client(
        trace=wire,
        protocol_version="2025-11-25",
        tasks=True,
        elicitation_handler=lambda p: {
            "action": "accept",
            "content": {"name": "Ada", "favoriteColor": "Blue", "agreeToTerms": True},
        },
        sampling_handler=lambda p: {**SAMPLED, "content": {"type": "text", "text": "sampled!"}},
    ) as client:
        yield client, wire


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_everything_server_runs_an_elicitation_as_a_client_hosted_task(everything):
    client, wire = everything
    assert "trigger-elicitation-request-async" in {tool.name for tool in client.list_tools()}
    result = client.call_tool("trigger-elicitation-request-async")
    # It sent elicitation/create with task {ttl: 600000}, polled our tasks/get, then called tasks/result.
    assert result.text.startswith("[COMPLETED] User provided the requested information!"), (
        result.text
    )
    assert "- Name: Ada" in result.text
    (elicit,) = wire.received("elicitation/create")
    assert elicit["params"]["task"] == {"ttl": 600000}
    (created,) = [m for m in wire.sent() if "method" not in m and m.get("id") == elicit["id"]]
    task_id = created["result"]["task"]["taskId"]
    assert [m for m in wire.received("tasks/get") if m["params"] == {"taskId": task_id}]
    (fetch,) = [m for m in wire.received("tasks/result") if m["params"] == {"taskId": task_id}]
    (payload,) = [m for m in wire.sent() if "method" not in m and m.get("id") == fetch["id"]]
    assert payload["result"]["_meta"][RELATED] == {"taskId": task_id}
    wire.assert_valid()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_everything_server_runs_a_sampling_request_as_a_client_hosted_task(everything):
    client, wire = everything
    result = client.call_tool("trigger-sampling-request-async", {"prompt": "hello"})
    assert result.text.startswith("[COMPLETED] Async sampling completed!"), result.text
    assert "sampled!" in result.text
    (sample,) = wire.received("sampling/createMessage")
    assert "task" in sample["params"]
    (created,) = [m for m in wire.sent() if "method" not in m and m.get("id") == sample["id"]]
    assert created["result"]["task"]["status"] == "working"
    wire.assert_valid()
