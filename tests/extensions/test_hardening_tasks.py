"""Hardening of the 2026-07-28 asks for input: MRTR under OAuth, and tasks that wait for input.

Issue 20, class 7: a ``requestState`` is bound to its caller; the caller sealed must survive the
JSON round trip (a string, ``Principal.id``), or every retry that carries a bearer token is refused,
the caller's own included.  Class 5: a task parked in ``input_required`` must not hold one of the
store's run slots, its wait is bounded far below its time to live, and tasks are capped per
principal.

Every test talks to a real HTTP server on 127.0.0.1 (port 0) protected by a bearer token verifier,
with raw POSTs (so the exact wire answer is checked), and ends by checking the server still serves.
"""

from __future__ import annotations

import base64
import json
import threading
import time

import pytest
import requests
from conftest import WAIT
from http_fixtures import TIMEOUT, serve  # noqa: F401 - a fixture

from mcp_ref import Client, Context, Elicit, ListRoots, Sample, Server
from mcp_ref.errors import InvalidParams
from mcp_ref.extensions.tasks import TaskStore
from mcp_ref.extensions.tasks_2026 import run_task
from mcp_ref.http.headers import request_headers
from mcp_ref.oauth.resource import AccessInfo, ProtectedResource
from mcp_ref.server import input_required
from mcp_ref.state.stores import MemoryTaskRecords

VERSION = "2026-07-28"
EXTENSION = "io.modelcontextprotocol/tasks"
ALL_CAPS = {"elicitation": {}, "sampling": {}, "roots": {}, "extensions": {EXTENSION: {}}}
NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
GO = {"type": "object", "properties": {"go": {"type": "boolean"}}, "required": ["go"]}
ANOTHER_CALLER = "requestState belongs to another caller"


class Tokens:
    """A token verifier: one client, users alice, bob and carol (the token is ``<user>-token``)."""

    def __init__(self):
        self.audience: tuple = ()

    def verify(self, token: str):
        user = token.removesuffix("-token")
        if user not in ("alice", "bob", "carol") or not token.endswith("-token"):
            return None
        return AccessInfo("hardening-client", user, (), audience=self.audience)


def build(**task_options) -> Server:
    """A server asking for input in every way, and task tools; ``task_options`` bound its TaskStore."""
    server = Server("hardening-tasks", version="1.0")
    if task_options:
        server.tasks = TaskStore(**task_options)

    @server.tool()
    def whoami(ctx: Context) -> str:
        """The caller's principal id."""
        return ctx.principal.id

    @server.tool()
    def greet(ctx: Context) -> str:
        """One elicitation (key ``user_name``)."""
        answer = ctx.elicit("What is your name?", NAME, key="user_name")
        return f"Hello, {answer.content['name']}!"

    @server.tool()
    def two_rounds(ctx: Context) -> str:
        """Two rounds: the first answer rides in requestState into the second."""
        first = ctx.elicit("First name?", NAME, key="first")
        last = ctx.elicit("Last name?", NAME, key="last")
        return f"{first.content['name']} {last.content['name']}"

    @server.tool()
    def everything(ctx: Context) -> str:
        """Elicitation, sampling and roots in one round."""
        name, sample, roots = ctx.gather(
            Elicit("Name?", NAME, key="name"),
            Sample("Say hi", max_tokens=5, key="hi"),
            ListRoots(key="roots"),
        )
        return f"{name.content['name']}|{sample.content.text}|{','.join(r.uri for r in roots)}"

    @server.tool(task="required")
    def park(ctx: Context) -> str:
        """A task that asks whether to go on, and waits for tasks/update."""
        ctx.start_task()
        answer = ctx.elicit("Go on?", GO, key="go")
        return "went on" if answer.content["go"] else "stopped"

    @server.tool(task="required")
    def quick(ctx: Context) -> str:
        """A task that needs nothing."""
        ctx.start_task()
        return "quick done"

    return server


class Caller:
    """Raw 2026-07-28 POSTs to ``url`` with one bearer token (None: no Authorization header)."""

    def __init__(self, url: str, token: str | None):
        self.url = url
        self.token = token
        self.next_id = 0

    def ask(self, method: str, params: dict) -> dict:
        self.next_id += 1
        params = {
            **params,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": VERSION,
                "io.modelcontextprotocol/clientCapabilities": ALL_CAPS,
                "io.modelcontextprotocol/clientInfo": {"name": "hardening", "version": "0"},
            },
        }
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
            **request_headers(method, params),
        }
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        reply = requests.post(
            self.url,
            json={"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params},
            headers={k: v for k, v in headers.items() if v is not None},
            timeout=TIMEOUT,
        )
        assert reply.status_code in (200, 202, 400), (reply.status_code, reply.text)
        if reply.headers.get("Content-Type", "").startswith("text/event-stream"):
            return [
                json.loads(line[5:]) for line in reply.text.splitlines() if line.startswith("data:")
            ][-1]
        return reply.json()

    def call(self, name: str, **params) -> dict:
        return self.ask("tools/call", {"name": name, "arguments": {}, **params})

    def text(self, name: str) -> str:
        result = self.call(name)["result"]
        assert result["resultType"] == "complete", result
        return result["content"][0]["text"]


def protected(serve, server: Server) -> str:
    """``server`` behind the bearer verifier, served over HTTP: its /mcp URL."""
    tokens = Tokens()
    served = serve(app=server.wsgi_app(auth=ProtectedResource(tokens, ["https://as.example"])))
    tokens.audience = (served.mcp,)
    return served.mcp


def accept(**content) -> dict:
    return {"action": "accept", "content": content}


# -- class 7: MRTR under OAuth ------------------------------------------------------------------------


def test_mrtr_round_trips_complete_for_the_same_bearer_caller(serve):
    alice = Caller(protected(serve, build()), "alice-token")
    assert alice.text("whoami") == "oauth:hardening-client:alice"
    first = alice.call("greet")["result"]
    assert first["resultType"] == "input_required" and list(first["inputRequests"]) == ["user_name"]
    done = alice.call(
        "greet",
        inputResponses={"user_name": accept(name="Ada")},
        requestState=first["requestState"],
    )
    assert "error" not in done, (
        done
    )  # the old code: -32602 "requestState belongs to another caller"
    assert done["result"]["content"][0]["text"] == "Hello, Ada!"
    # two rounds: the first answer rides in the sealed state, which must open for its own caller
    one = alice.call("two_rounds")["result"]
    two = alice.call(
        "two_rounds", inputResponses={"first": accept(name="Ada")}, requestState=one["requestState"]
    )
    assert two["result"]["resultType"] == "input_required" and list(
        two["result"]["inputRequests"]
    ) == ["last"]
    three = alice.call(
        "two_rounds",
        inputResponses={"last": accept(name="Lovelace")},
        requestState=two["result"]["requestState"],
    )
    assert three["result"]["content"][0]["text"] == "Ada Lovelace"
    # elicitation, sampling and roots together
    asked = alice.call("everything")["result"]
    answers = {
        "name": accept(name="Ada"),
        "roots": {"roots": [{"uri": "file:///work"}]},
        "hi": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"},
    }
    answer = alice.call("everything", inputResponses=answers, requestState=asked["requestState"])
    assert answer["result"]["content"][0]["text"] == "Ada|hi|file:///work"


def test_mcp_ref_client_answers_elicitation_sampling_and_roots_over_oauth(serve):
    url = protected(serve, build())

    def bearer(request):
        request.headers["Authorization"] = "Bearer alice-token"
        return request

    with Client.http(
        url,
        era="modern",
        auth=bearer,
        timeout=WAIT,
        roots=["file:///work"],
        elicitation_handler=lambda p: accept(name="Ada"),
        sampling_handler=lambda p: {
            "role": "assistant",
            "content": {"type": "text", "text": "hi"},
            "model": "m",
        },
    ) as client:
        assert client.call_tool("two_rounds").text == "Ada Ada"
        assert client.call_tool("everything").text == "Ada|hi|file:///work"


def test_a_request_state_replayed_by_another_principal_is_refused_as_another_callers(serve):
    url = protected(serve, build())
    alice, bob = Caller(url, "alice-token"), Caller(url, "bob-token")
    one = alice.call("two_rounds")["result"]
    two = alice.call(
        "two_rounds", inputResponses={"first": accept(name="Ada")}, requestState=one["requestState"]
    )
    state = two["result"]["requestState"]  # carries alice's answer
    stolen = bob.call(
        "two_rounds", inputResponses={"last": accept(name="Mallory")}, requestState=state
    )
    assert stolen["error"]["code"] == -32602
    assert (
        stolen["error"]["message"] == f"Invalid params: {ANOTHER_CALLER}"
    )  # the reason: not the request, not expiry
    assert "result" not in stolen
    # the server still serves both: bob asks afresh, alice finishes with her own state
    assert bob.call("two_rounds")["result"]["resultType"] == "input_required"
    mine = alice.call(
        "two_rounds", inputResponses={"last": accept(name="Lovelace")}, requestState=state
    )
    assert mine["result"]["content"][0]["text"] == "Ada Lovelace"


def test_state_sealed_for_no_token_or_in_the_old_tuple_form_opens_for_no_bearer_caller(serve):
    server = build()
    url = protected(serve, server)
    alice = Caller(url, "alice-token")
    params = {"name": "greet", "arguments": {}}
    for sealed in (None, ["hardening-client", "alice"], "oauth:hardening-client:bob", {"id": "x"}):
        # None: an unauthenticated caller's state; a list: what a tuple became after JSON (the old form),
        # sealed by this server's own key, so only the caller check can refuse it
        state = seal(server, "tools/call", params, sealed, {"user_name": accept(name="Eve")})
        refused = alice.call("greet", requestState=state)
        assert refused["error"] == {
            "code": -32602,
            "message": f"Invalid params: {ANOTHER_CALLER}",
        }, sealed
    # the control: the same forgery sealed for alice's own id opens (so the refusals above were the caller check)
    own = alice.call(
        "greet",
        requestState=seal(
            server,
            "tools/call",
            params,
            "oauth:hardening-client:alice",
            {"user_name": accept(name="Eve")},
        ),
    )
    assert own["result"]["content"][0]["text"] == "Hello, Eve!"
    assert alice.call("greet")["result"]["resultType"] == "input_required"


def seal(server: Server, method: str, params: dict, principal, answers: dict) -> str:
    """A requestState sealed with ``server``'s key for any ``principal`` value (the wire format of
    mcp_ref.server.input_required, built by hand to forge the old tuple-turned-list form)."""
    payload = {
        "m": method,
        "d": input_required.digest(method, params),
        "p": principal,
        "x": int(time.time() + 600),
        "a": answers,
    }
    raw = json.dumps(payload, separators=(",", ":")).encode()

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    return b64(raw) + "." + b64(server.keyring.tag(raw, 16))


def test_sealing_refuses_a_caller_that_is_not_a_string():
    server = build()
    with pytest.raises(TypeError):  # a tuple would come back from JSON as a list and never match
        input_required.seal_state(
            input_required.Inputs(),
            "tools/call",
            {"name": "greet"},
            server.keyring,
            ("client", "alice"),
        )  # type: ignore[arg-type]


# -- class 5: tasks waiting for input ---------------------------------------------------------------


def settled(store: TaskStore, task_id: str, done) -> None:
    """Wait (WAIT s at most) until ``done(state)`` holds of the task's state: on its condition
    (``Task.lock``), which every change of its record notifies."""
    task = store.find(task_id, store.records.get(task_id)["owner"])
    with task.lock:
        assert task.lock.wait_for(lambda: done(task.to_wire()), WAIT), task.to_wire()


def state_once(server: Server, caller: Caller, task_id: str, done) -> dict:
    """The task's ``tasks/get`` state, asked once ``done(state)`` holds (see :func:`settled`)."""
    settled(server.tasks, task_id, done)
    state = caller.ask("tasks/get", {"taskId": task_id})["result"]
    assert done(state), state
    return state


def start(caller: Caller, name: str) -> str:
    answer = caller.call(name)
    assert answer.get("result", {}).get("resultType") == "task", answer
    return answer["result"]["taskId"]


def parked(server: Server, caller: Caller) -> str:
    task_id = start(caller, "park")
    state_once(server, caller, task_id, lambda t: t["status"] == "input_required")
    return task_id


def test_tasks_parked_for_input_do_not_starve_the_pool(serve):
    server = build(workers=2, max_waiting=4, poll_interval_ms=20)
    url = protected(serve, server)
    callers = [Caller(url, f"{user}-token") for user in ("alice", "bob")]
    waiting = [
        parked(server, callers[n % 2]) for n in range(4)
    ]  # twice as many as there are workers
    # the old store: every worker holds a parked task, and this stays "working" until the TTL
    carol = Caller(url, "carol-token")
    done = state_once(server, carol, start(carol, "quick"), lambda t: t["status"] != "working")
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "quick done"
    assert server.tasks.threads <= 2 + 4 and server.tasks.waiting == 4  # workers + max_waiting
    # past max_waiting a task that asks for input fails at once, with a clear error
    refused = state_once(
        server, carol, start(carol, "park"), lambda t: t["status"] in ("failed", "completed")
    )
    assert refused["status"] == "failed" and refused["error"]["code"] == -31000
    assert "waiting for input" in refused["error"]["message"]
    # the parked tasks are still theirs to answer, and finish
    for n, task_id in enumerate(waiting):
        callers[n % 2].ask(
            "tasks/update", {"taskId": task_id, "inputResponses": {"go": accept(go=True)}}
        )
    for n, task_id in enumerate(waiting):
        state = state_once(
            server,
            callers[n % 2],
            task_id,
            lambda t: t["status"] != "working" and t["status"] != "input_required",
        )
        assert state["status"] == "completed" and state["result"]["content"][0]["text"] == "went on"
    assert server.tasks.waiting == 0
    # the room is back: a task may wait for input again
    assert parked(server, carol)


def test_a_task_waits_for_input_only_input_timeout_seconds(serve):
    server = build(workers=1, input_timeout=0.3, poll_interval_ms=20)
    url = protected(serve, server)
    alice = Caller(url, "alice-token")
    task_id = start(alice, "park")
    state = state_once(
        server, alice, task_id, lambda t: t["status"] not in ("working", "input_required")
    )
    assert state["status"] == "failed" and state["error"]["code"] == -31005
    assert (
        "no input came within 0.3 s" in state["statusMessage"]
        and "tasks/update" in state["statusMessage"]
    )
    # the one worker is free again
    done = state_once(server, alice, start(alice, "quick"), lambda t: t["status"] == "completed")
    assert done["result"]["content"][0]["text"] == "quick done"


def test_tasks_are_capped_per_principal(serve):
    server = build(max_tasks_per_principal=2, poll_interval_ms=20)
    url = protected(serve, server)
    alice, bob = Caller(url, "alice-token"), Caller(url, "bob-token")
    first, _second = parked(server, alice), parked(server, alice)
    over = alice.call("park")
    assert over["error"]["code"] == -31005 and over["error"]["data"] == {"limit": 2}
    assert "at most 2 unfinished tasks per caller" in over["error"]["message"]
    # another principal is not affected
    done = state_once(server, bob, start(bob, "quick"), lambda t: t["status"] == "completed")
    assert done["result"]["content"][0]["text"] == "quick done"
    # a finished task makes room again
    alice.ask("tasks/cancel", {"taskId": first})
    assert state_once(server, alice, first, lambda t: t["status"] == "cancelled")
    assert alice.call("quick")["result"]["resultType"] == "task"
    assert alice.text("whoami") == "oauth:hardening-client:alice"


def test_a_principal_finds_only_its_own_tasks_by_its_string_id(serve):
    server = build(poll_interval_ms=20)
    url = protected(serve, server)
    alice, bob = Caller(url, "alice-token"), Caller(url, "bob-token")
    task_id = parked(server, alice)
    task = server.tasks.find(task_id, "oauth:hardening-client:alice")
    assert task.owner == "oauth:hardening-client:alice"
    for method, params in (
        ("tasks/get", {}),
        ("tasks/update", {"inputResponses": {"go": accept(go=False)}}),
        ("tasks/cancel", {}),
    ):
        refused = bob.ask(method, {"taskId": task_id, **params})
        assert refused["error"]["code"] == -32602, method
    alice.ask("tasks/update", {"taskId": task_id, "inputResponses": {"go": accept(go=False)}})
    assert (
        state_once(server, alice, task_id, lambda t: t["status"] == "completed")["result"][
            "content"
        ][0]["text"]
        == "stopped"
    )


def test_the_store_rejects_settings_that_bound_nothing():
    for options in (
        {"workers": 0},
        {"max_waiting": -1},
        {"input_timeout": 0},
        {"max_tasks_per_principal": 0},
        {"workers": 1.5},
    ):
        with pytest.raises(ValueError):
            TaskStore(**options)


def test_the_store_refuses_a_poll_interval_that_is_no_whole_milliseconds_and_an_empty_table():
    """``poll_interval_ms`` and ``max_tasks`` were taken unchecked: 0.5 (seconds meant) went out as
    ``pollInterval: 0.5``, which the 2025-11-25 schema's integer refuses, and ``max_tasks=0`` made a
    store refusing every task.  Both are ValueError now, as the store's other settings are."""
    for options in ({"poll_interval_ms": 0.5}, {"poll_interval_ms": 0}, {"max_tasks": 0}):
        with pytest.raises(ValueError):
            TaskStore(**options)


def test_the_pool_never_runs_more_than_workers_while_others_wait_for_input():
    store = TaskStore(workers=2, max_waiting=3)
    lock, answers, finished = threading.Lock(), threading.Event(), threading.Semaphore(0)
    running, most, parked = [0], [0], threading.Semaphore(0)

    def work(asks: bool) -> None:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            if asks:
                with lock:
                    running[0] -= 1
                with store.waiting_for_input():  # what a task's ctx.elicit does around its wait
                    parked.release()
                    assert answers.wait(WAIT)
                with lock:
                    running[0] += 1
                    most[0] = max(most[0], running[0])
        finally:
            with lock:
                running[0] -= 1
            finished.release()

    for _ in range(3):
        store.run(lambda: work(True))
    for _ in range(3):
        assert parked.acquire(timeout=WAIT)  # three wait for input, more than the two workers
    for _ in range(6):
        store.run(lambda: work(False))  # these still run, two at a time
    for _ in range(6):
        assert finished.acquire(timeout=WAIT)
    answers.set()
    for _ in range(3):
        assert finished.acquire(timeout=WAIT)
    assert most[0] <= 2 and store.threads <= 2 + 3 and store.waiting == 0


def test_a_task_cancelled_before_it_ran_never_runs_and_frees_its_place_at_once(serve):
    """A task still queued for a run slot (every slot busy) and cancelled is cancelled at once: its
    handler never runs (no side effect), and it no longer counts against its caller's cap."""
    server = build(workers=1, max_tasks_per_principal=2, poll_interval_ms=20)
    running, release, effects = threading.Event(), threading.Event(), []

    @server.tool(task="required")
    def hold(ctx: Context) -> str:
        """Holds the one run slot until the test releases it."""
        ctx.start_task()
        running.set()
        release.wait(WAIT)
        return "held"

    @server.tool(task="required")
    def effect(ctx: Context) -> str:
        """A task with a side effect."""
        ctx.start_task()
        effects.append(ctx.request_id)
        return "side effect"

    url = protected(serve, server)
    alice = Caller(url, "alice-token")
    try:
        holding = start(alice, "hold")
        assert running.wait(WAIT)
        queued = start(alice, "effect")  # waits for the slot
        assert alice.ask("tasks/cancel", {"taskId": queued})["result"] is not None
        # the old store: "working" until the slot frees, then the handler runs and completes anyway
        assert alice.ask("tasks/get", {"taskId": queued})["result"]["status"] == "cancelled"
        over_before = alice.call("quick")  # alice's place is back though the slot is still held
        assert over_before["result"]["resultType"] == "task", over_before
    finally:
        release.set()
    assert (
        state_once(server, alice, holding, lambda t: t["status"] == "completed")["result"][
            "content"
        ][0]["text"]
        == "held"
    )
    quick = over_before["result"]["taskId"]
    assert state_once(
        server, alice, quick, lambda t: t["status"] == "completed"
    )  # queued after the cancelled one
    assert (
        effects == []
        and alice.ask("tasks/get", {"taskId": queued})["result"]["status"] == "cancelled"
    )
    assert alice.text("whoami") == "oauth:hardening-client:alice"


def started_task(client, era: str, name: str) -> str:
    """A task call of ``name`` that nobody follows: the id of its task."""
    if era == VERSION:
        handle = client.connection.send_request(
            "tools/call", {"name": name, "arguments": {}}, declares=(EXTENSION,)
        ).result()
        assert handle["resultType"] == "task", handle
        return handle["taskId"]
    return client.request("tools/call", {"name": name, "arguments": {}, "task": {}})["task"][
        "taskId"
    ]


def status_of(client, era: str, task_id: str) -> str:
    if era == VERSION:
        return client.get_task(task_id)["status"]
    return client.request("tasks/get", {"taskId": task_id})["status"]


@pytest.mark.parametrize("era", [VERSION, "2025-11-25"])
def test_tasks_cancelled_while_queued_leave_the_run_queue_at_once(era):
    """A task cancelled while it waits for a run slot leaves the run queue at once: one caller
    making and cancelling tasks while the one worker is busy never fills the queue (bounded by
    ``max_tasks``), so another caller's new task is still accepted (the old store kept every
    cancelled id queued until a worker came: -31000 for every caller's task meanwhile)."""
    running, release = threading.Event(), threading.Event()
    server = Server("queue")

    @server.tool(task="optional")
    def hold(ctx: Context) -> str:
        """Holds the one run slot until the test releases it."""
        ctx.start_task()
        running.set()
        release.wait(WAIT)
        return "held"

    @server.tool(task="optional")
    def quick(ctx: Context) -> str:
        """A task that ends at once."""
        ctx.start_task()
        return "quick"

    store = server.tasks = TaskStore(workers=1, max_tasks=4, max_tasks_per_principal=2)
    options = {} if era == VERSION else {"era": "handshake", "protocol_version": era}
    with (
        Client.in_memory(server, timeout=WAIT, **options) as victim,
        Client.in_memory(server, timeout=WAIT, **options) as other,
    ):
        try:
            holding = started_task(victim, era, "hold")
            assert running.wait(WAIT)
            for _ in range(3 * store.max_tasks):
                task_id = started_task(other, era, "quick")
                if era == VERSION:
                    other.cancel_task(task_id)
                else:
                    other.request("tasks/cancel", {"taskId": task_id})
                assert status_of(other, era, task_id) == "cancelled" and len(store.queue) == 0
            queued = started_task(victim, era, "quick")  # accepted: the queue has room
            assert len(store.queue) == 1
        finally:
            release.set()
        settled(store, queued, lambda t: t["status"] == "completed")
        assert status_of(victim, era, queued) == "completed"
        assert status_of(victim, era, holding) == "completed"


def test_a_task_that_expires_while_queued_leaves_the_run_queue():
    """A task past its time to live while it waits for a run slot leaves the queue with its record
    (the sweep): its place is free for another task, and its handler never runs."""
    now = [0.0]
    store = TaskStore(
        workers=1, max_tasks=2, ttl_ms=1000, records=MemoryTaskRecords(clock=lambda: now[0])
    )
    running, release, ran = threading.Event(), threading.Event(), []
    store.run(lambda: running.set() or release.wait(WAIT))  # the one run slot is taken
    assert running.wait(WAIT)
    try:
        task = store.create("owner")
        store.start(task, lambda: run_task(store, task, lambda: ran.append(task.id) or {}))
        assert len(store.queue) == 1
        now[0] += 2.0  # past its ttl
        with pytest.raises(InvalidParams):  # any look at the store sweeps: it is gone
            store.find(task.id, "owner")
        assert len(store.queue) == 0 and task.cancelled.is_set()
    finally:
        release.set()
    assert ran == []
