"""The official TypeScript SDK's client as the requestor of 2025-11-25 tasks, against an mcp_ref server.

The other direction of tests/interop/test_interop_tasks.py.  tests/servers/ts_tasks_client.mjs (Node, ESM)
imports the SDK (``@modelcontextprotocol/sdk`` 1.x, the copy ``npx`` fetched with the reference
everything server) and drives tests/servers/tasks_server.py over stdio through
tests/servers/stdio_proxy.py, which logs the traffic.  The script prints what the SDK saw (one
JSON object); the tests check it, and check the log: every message valid against the 2025-11-25
schema, and the server's side of the rules of basic/utilities/tasks (2025-11-25).

Skipped, saying why, when node or npx is missing or no SDK with ``client.experimental.tasks`` can be
found in the npx cache (it is fetched by running the everything server once, as tests/interop/test_interop.py
does).  One run of the script serves every test here (about 2 s).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import SERVERS, WireChecker, command_label, watch_stderr
from everything_server import everything_client

#: A real Node process and a real server subprocess, run once: the tests share one xdist worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ts-client-tasks")]

SCRIPT = SERVERS / "ts_tasks_client.mjs"
SERVER = [sys.executable, str(SERVERS / "tasks_server.py")]
RELATED = "io.modelcontextprotocol/related-task"
RUN_TIMEOUT = 60.0  # seconds: the script's own watchdog (MCP_TS_DEADLINE_MS) is half of it


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


def _sdk_candidates() -> list[tuple[tuple[int, ...], Path]]:
    """SDK packages in the npx cache(s) whose client has ``experimental.tasks`` (``callToolStream``)."""
    caches = {Path(os.environ["npm_config_cache"])} if os.environ.get("npm_config_cache") else set()
    caches.add(Path.home() / ".npm")
    found = []
    for cache in caches:
        for manifest in cache.glob("_npx/*/node_modules/@modelcontextprotocol/sdk/package.json"):
            package = manifest.parent
            tasks = package / "dist" / "esm" / "experimental" / "tasks" / "client.js"
            try:
                version = _version(json.loads(manifest.read_text())["version"])
                if "callToolStream" in tasks.read_text():
                    found.append((version, package))
            except (OSError, ValueError, KeyError):
                continue
    return sorted(found)


@pytest.fixture(scope="module")
def sdk() -> Path:
    """The newest TypeScript SDK package with experimental tasks in the npx cache; or a skip."""
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH, so the TypeScript SDK's client cannot be run")
    try:
        node = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"node --version failed: {exc}")
    if _version(node.stdout or "v0") < (18,):
        pytest.skip(f"node {node.stdout.strip()} is older than 18, which the TypeScript SDK needs")
    found = _sdk_candidates()
    if not found:  # fetch it: the everything server depends on the SDK (skips when npx cannot)
        with everything_client():
            pass
        found = _sdk_candidates()
    if not found:
        pytest.skip(
            "no @modelcontextprotocol/sdk with client.experimental.tasks in the npx cache "
            "(~/.npm/_npx/*/node_modules/@modelcontextprotocol/sdk)"
        )
    return found[-1][1]


class Run:
    """One run of the script: ``seen`` (what the SDK reported), ``wire`` (the proxy's log, checked)."""

    def __init__(self, seen: dict, wire: WireChecker):
        self.seen = seen
        self.wire = wire

    def answer_to(self, request: dict) -> dict:
        """The server's answer to a request the client sent."""
        return next(
            m
            for d, m in self.wire.messages
            if d == "<--" and m.get("id") == request["id"] and "method" not in m
        )

    def calls(self, name: str) -> list[dict]:
        """The ``tools/call`` requests of tool ``name``."""
        return [m for m in self.wire.sent("tools/call") if m["params"]["name"] == name]

    def about(self, task_id: str) -> list[tuple[str, dict]]:
        """Messages naming ``task_id`` (status notifications left out), in wire order."""
        return [
            (d, m)
            for d, m in self.wire.messages
            if task_id in json.dumps(m) and m.get("method") != "notifications/tasks/status"
        ]


@pytest.fixture(scope="module")
def run(sdk, tmp_path_factory) -> Iterator[Run]:
    """The script, run once against tasks_server.py behind the logging proxy."""
    log = tmp_path_factory.mktemp("ts-tasks") / "traffic.log"
    proxy = [sys.executable, str(SERVERS / "stdio_proxy.py"), "--log", str(log), "--", *SERVER]
    env = {**os.environ, "MCP_TS_SDK": str(sdk), "MCP_TS_DEADLINE_MS": str(int(RUN_TIMEOUT * 500))}
    command = ["node", str(SCRIPT), *proxy]
    errors: list[str] = []
    unwatch = watch_stderr(command_label(command), lambda: errors, keep=True)
    try:
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=RUN_TIMEOUT, env=env
            )
        except subprocess.TimeoutExpired as exc:
            errors.append(
                exc.stderr.decode(errors="replace")
                if isinstance(exc.stderr, bytes)
                else str(exc.stderr or "")
            )
            pytest.fail(f"the TypeScript client did not end within {RUN_TIMEOUT:g} s")
        errors.append(done.stderr)
        assert done.returncode == 0 and done.stdout.strip(), (
            f"the TypeScript client failed (exit {done.returncode}): {done.stdout.strip()}"
        )
        seen = json.loads(done.stdout.strip().splitlines()[-1])
        assert seen.get("done") and not seen.get("fatal"), seen
        wire = WireChecker()
        for line in log.read_bytes().splitlines():
            if line[:4] in (b"--> ", b"<-- "):
                wire(line[:3].decode(), line[4:])
        yield Run(seen, wire)
    finally:
        unwatch()


def test_every_message_is_valid_at_2025_11_25(run):
    init = run.answer_to(run.wire.sent("initialize")[0])
    assert init["result"]["protocolVersion"] == "2025-11-25"
    assert run.wire.sent("initialize")[0]["params"]["capabilities"] == {"elicitation": {"form": {}}}
    assert len(run.wire.messages) > 40
    run.wire.assert_valid()


def test_the_sdk_sees_the_capability_and_each_tools_task_support(run):
    seen = run.seen
    # §Server Capabilities: the server supports tasks/list, tasks/cancel and task-augmented tools/call.
    assert seen["taskCapability"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
    # §Tool-Level Negotiation: execution.taskSupport, absent for a tool that never runs as a task.
    assert seen["taskSupport"] == {
        "plain": None,
        "compute": "optional",
        "release": None,
        "forever": "required",
        "tool_error": "required",
        "protocol_error": "required",
        "odd_error": "required",
        "confirm": "required",
        "ask_then_task": "optional",
        "missing_resource": "optional",
    }


def test_a_task_augmented_call_through_call_tool_stream(run):
    compute = run.seen["compute"]
    task_id = compute["taskId"]
    assert compute["messages"][0] == "taskCreated" and compute["messages"][-1] == "result"
    assert (
        compute["created"]["status"] == "working" and compute["created"]["ttl"] == 60000
    )  # the ttl asked for
    assert compute["released"] == "released"
    assert compute["text"] == "7 squared is 49"
    assert compute["meta"] == {
        RELATED: {"taskId": task_id}
    }  # §Related Task Metadata: MUST on tasks/result
    # Task progress: the call's progressToken stays valid; the notification carries related-task.
    assert [(p["progress"], p["total"], p["message"]) for p in compute["progress"]] == [
        (1, 2, "half way")
    ]
    (progress,) = [
        m for m in run.wire.received("notifications/progress") if task_id in json.dumps(m)
    ]
    assert progress["params"]["_meta"] == {RELATED: {"taskId": task_id}}
    (request,) = run.calls("compute")
    assert request["params"]["task"] == {"ttl": 60000}
    assert (
        run.answer_to(request)["result"]["task"]["taskId"] == task_id
    )  # CreateTaskResult, at once
    flow = [m.get("method") for d, m in run.about(task_id) if d == "-->"]
    assert flow[:1] == ["tasks/get"] and flow.count("tasks/result") == 1


def test_an_elicitation_of_a_task_reaches_the_sdk_with_related_task(run):
    confirm = run.seen["confirm"]
    task_id = confirm["taskId"]
    assert confirm["messages"][0] == "taskCreated" and confirm["messages"][-1] == "result"
    assert "input_required" in confirm["statuses"]  # what sent the SDK to tasks/result
    # §Input Required Status: the requests of the task carry the related-task _meta.
    asked = run.seen["elicitations"]
    assert [(e["message"], e["keys"]) for e in asked][:1] == [("Delete notes.txt?", ["confirm"])]
    assert sorted(e["message"] for e in asked[1:]) == ["Sure?", "Your name?"]
    assert all(
        e["meta"] == {RELATED: {"taskId": task_id}} and e["extraTaskId"] == task_id for e in asked
    )
    # The result reflects the answers (confirm: true, the name Ada), with the related-task _meta.
    assert confirm["text"] == "Ada deleted notes.txt (True)"
    assert confirm["meta"] == {RELATED: {"taskId": task_id}}
    assert run.seen["confirmStatusAfter"] == "completed"
    # On the wire: the asks came while the SDK's tasks/result of the task was open.
    flow = run.about(task_id)
    opened = next(
        i for i, (d, m) in enumerate(flow) if d == "-->" and m.get("method") == "tasks/result"
    )
    answered = next(
        i
        for i, (d, m) in enumerate(flow)
        if d == "<--" and m.get("id") == flow[opened][1]["id"] and "method" not in m
    )
    elicits = [
        i for i, (d, m) in enumerate(flow) if d == "<--" and m.get("method") == "elicitation/create"
    ]
    assert len(elicits) == 3 and all(opened < i < answered for i in elicits)
    # The task went input_required and back (the receiver "SHOULD move the task to the input_required status").
    statuses = [n["status"] for n in run.seen["statusNotifications"] if n["taskId"] == task_id]
    assert (
        statuses.count("input_required") >= 2 and statuses[-1] == "completed"
    )  # the last two asks may overlap


def test_tasks_list_and_tasks_cancel(run):
    seen = run.seen
    listed = {task["taskId"]: task["status"] for task in seen["listed"]}
    assert listed == {
        seen["compute"]["taskId"]: "completed",
        seen["confirm"]["taskId"]: "completed",
    }
    assert seen["listedNextCursor"] is None
    # §Task Cancellation: a task in a terminal status is -32602.
    assert seen["cancelFinished"]["error"]["code"] == -32602
    assert "terminal status 'completed'" in seen["cancelFinished"]["error"]["message"]
    # A running task is cancelled before the answer, stays so, and a second cancel is -32602.
    forever = seen["forever"]
    assert (forever["created"], forever["cancelled"], forever["after"]) == (
        "working",
        "cancelled",
        "cancelled",
    )
    assert forever["cancelAgain"]["error"]["code"] == -32602
    # tasks/get, tasks/list, tasks/cancel answers carry no related-task _meta (SHOULD NOT).
    for method in ("tasks/get", "tasks/list", "tasks/cancel"):
        for request in run.wire.sent(method):
            result = run.answer_to(request).get("result") or {}
            assert RELATED not in (result.get("_meta") or {}), (method, result)


def test_a_required_tool_without_a_task_is_method_not_found(run):
    seen = run.seen
    # The SDK's callTool refuses a required tool itself (-32600, nothing sent) ...
    assert seen["callToolGuard"]["error"]["code"] == -32600
    # ... sent as a plain request anyway, the server answers -32601 (§Tool-Level Negotiation: MUST).
    assert seen["withoutTask"]["error"]["code"] == -32601
    plain = [m for m in run.calls("forever") if "task" not in m["params"]]
    assert len(plain) == 1 and run.answer_to(plain[0])["error"]["code"] == -32601


def test_a_failed_task_and_its_result(run):
    failed = run.seen["failed"]
    task_id = failed["taskId"]
    # §Task Execution Errors: an isError tool result fails the task, with a statusMessage ...
    assert failed["status"] == "failed" and failed["messages"][-1] == "error"
    gets = [
        run.answer_to(m)["result"]
        for m in run.wire.sent("tasks/get")
        if m["params"]["taskId"] == task_id
    ]
    assert gets[-1]["statusMessage"] == "Tool execution failed: no luck"
    # ... and tasks/result returns exactly what the call would have: the isError result.
    assert failed["payload"] == {
        "isError": True,
        "text": "no luck",
        "meta": {RELATED: {"taskId": task_id}},
    }


def test_status_notifications_carry_the_full_task_without_related_task(run):
    assert run.seen["endsNotified"] is True  # each task's end was notified (within 5 s)
    notes = run.seen["statusNotifications"]
    ended = {n["taskId"]: n["status"] for n in notes}
    seen = run.seen
    assert (
        ended[seen["compute"]["taskId"]] == "completed"
        and ended[seen["failed"]["taskId"]] == "failed"
    )
    assert ended[seen["forever"]["taskId"]] == "cancelled"
    # §Task Notifications: "SHOULD NOT include the io.modelcontextprotocol/related-task metadata".
    assert all(RELATED not in (n.get("_meta") or {}) for n in notes)
    assert all({"taskId", "status", "createdAt", "lastUpdatedAt", "ttl"} <= set(n) for n in notes)
