"""The experimental tasks of 2025-11-25, client side: the client as requestor.

At 2025-11-25 (the handshake era) the *requestor* makes a request a task, by putting
``task: {ttl?}`` in its params (2025-11-25 basic/utilities/tasks §Creating Tasks).
:class:`ClientTasks2025` is a client extension (:mod:`mcp_ref.extension`), which the client adds
when a call asks for a task, or the server declares ``tasks``, in the handshake era.  For
``tools/call`` :func:`start_call` decides, per call, from what the server declared:

* the server's ``tasks.requests.tools.call`` capability — without it the client "MUST NOT attempt
  to use task augmentation on that server's tools" (§Tool-Level Negotiation, rule 1);
* the tool's ``execution.taskSupport`` from the server's ``tools/list`` (listed when the tool is
  not yet known): absent or ``"forbidden"`` → a normal call; ``"optional"`` → a task when the
  caller passed ``task=True`` (or ``task={"ttl": ms}``); ``"required"`` → always a task: clients
  "MUST invoke the tool as a task" (rule 2.3), so the caller need not know.

:class:`LegacyTaskCall` then follows the ``CreateTaskResult`` (``{task}``) to its end and returns
what the call would have returned:

* ``tasks/get`` every ``pollInterval`` (clamped as :func:`mcp_ref.extensions.client_tasks.interval`
  clamps it; §Getting Tasks: requestors "SHOULD respect the pollInterval");
* ``input_required`` → ``tasks/result`` at once (§Input Required Status: the requestor "SHOULD
  preemptively call tasks/result"): the server's ``elicitation/create`` / ``sampling/createMessage``
  for the task arrive while it is open, as ordinary requests carrying the related-task ``_meta``,
  and are answered by the client's usual handlers (``approve`` and ``server_request_limit``
  included).  ``tasks/result`` blocks until the task ends; if it times out first (the call's
  timeout) the client goes back to polling, as §Retrieving Task Results allows;
* ``completed`` / ``failed`` → ``tasks/result``: "exactly what the underlying request would have
  returned" (§Result Retrieval) — a tool's ``isError`` result (the task is then ``failed``) is
  returned, a JSON-RPC error is raised as McpError; ``cancelled`` → RequestCancelled;
* ``ToolCall.cancel()`` → ``tasks/cancel`` (2025-11-25 cancellation: "For task-augmented requests,
  the tasks/cancel request MUST be used instead of the notifications/cancelled notification");
  False when the server answers -32602, which it must for a task already ended (§Task Cancellation);
* bounded: the task's ``ttl`` (null: none) and ``max_total_timeout`` end the wait with
  RequestTimeout, after a best-effort ``tasks/cancel`` (as a timed-out request is cancelled);
  every request sent has the call's timeout; a task that enters ``input_required`` more than
  ``Client(max_input_rounds=)`` times is cancelled and the call raises LimitExceeded (the server's
  requests themselves pass ``approve`` and ``server_request_limit``, as any do).

``notifications/tasks/status`` is not needed: "Requestors MUST NOT rely on receiving" it
(§Task Status Notification); the follower polls.  :func:`list_tasks` is ``client.list_tasks()``.
The module loads with the first ``tools/call`` to a server that declares ``tasks`` (or that asks for a task).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Protocol

from ..client.connection import Call
from ..errors import (
    CapabilityError,
    ConnectionClosed,
    InvalidParams,
    LimitExceeded,
    McpError,
    RequestCancelled,
    RequestTimeout,
)
from ..extension import Extension
from ..feature_types import Page
from ..request import DEFAULT
from ..session import PendingRequest
from .client_tasks import deadline_of, interval, request_options

if TYPE_CHECKING:
    from ..client.answering import IncomingRequest
    from ..client.connection import ClientConnection
    from ..types import Tool

log = logging.getLogger(__name__)

#: The revision whose handshake carries these tasks (the 2026-07-28 extension is :mod:`.client_tasks`).
VERSION = "2025-11-25"
#: ``execution.taskSupport`` values (schema ``ToolExecution``); absent means forbidden.
FORBIDDEN, OPTIONAL, REQUIRED = "forbidden", "optional", "required"
#: The ``_meta`` key tying a message to its task (§Related Task Metadata).
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: Task statuses (§Task Status); a terminal task never changes again.
TERMINAL = frozenset({"completed", "failed", "cancelled"})

#: Per connection: tool name → its ``taskSupport``, from the last ``tools/list`` this module made, and
#: the connection's ``tools_changed`` then (a listing older than the last ``tools/list_changed`` is
#: not used).  Bounded by the server's listing (``Client(max_pages=)``); replaced, never grown.
_SUPPORT: weakref.WeakKeyDictionary[ClientConnection, tuple[int, dict[str, str]]] = (
    weakref.WeakKeyDictionary()
)
_SUPPORT_LOCK = threading.Lock()


class Client(Protocol):
    """What this module uses of a :class:`~mcp_ref.client.Client` (a Protocol: the client module loads this one)."""

    connection: ClientConnection

    @property
    def era(self) -> str:
        """``"handshake"`` or ``"modern"``."""

    @property
    def protocol_version(self) -> str:
        """The revision in use."""

    @property
    def server_capabilities(self) -> dict:
        """The capabilities the server declared."""

    def list_tools(self) -> list[Tool]:
        """Every tool, following pagination."""


def tools_call_declared(client: Client) -> bool:
    """True when the server declared ``tasks.requests.tools.call`` at 2025-11-25."""
    if client.era != "handshake" or client.protocol_version != VERSION:
        return False
    requests = _mapping(_mapping(client.server_capabilities.get("tasks")).get("requests"))
    return isinstance(_mapping(requests.get("tools")).get("call"), dict)


def task_support(client: Client, name: str) -> str:
    """The ``execution.taskSupport`` of tool ``name`` ("forbidden" for a tool the server does not list)."""
    connection = client.connection
    generation = connection.tools_changed
    with _SUPPORT_LOCK:
        generation_known, known = _SUPPORT.get(connection, (-1, {}))
    if generation_known != generation or name not in known:
        known = {}
        try:
            tools = client.list_tools()
        except (
            McpError
        ) as exc:  # e.g. a cursor another worker signed: call the tool as usual, learn later
            log.warning(
                "could not list the tools to learn whether %s runs as a task (%s): calling it as usual",
                name,
                exc,
            )
            return FORBIDDEN
        for tool in tools:
            support = _mapping(tool.execution).get("taskSupport")
            known[tool.name] = support if support in (OPTIONAL, REQUIRED) else FORBIDDEN
        with _SUPPORT_LOCK:  # (a change while it listed: listed again next time; an older listing never replaces a newer)
            if _SUPPORT.get(connection, (-1, {}))[0] <= generation:
                _SUPPORT[connection] = (generation, known)
    return known.get(name, FORBIDDEN)


def task_metadata(task: Any) -> dict | None:
    """``params.task`` for the caller's ``task`` option: True → ``{}``, ``{"ttl": ms}`` as given, falsy → None."""
    if isinstance(task, dict):
        ttl = task.get("ttl")
        if set(task) - {"ttl"} or (
            ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0)
        ):
            raise ValueError(f"task must be True or {{'ttl': milliseconds}}, not {task!r}")
        return dict(task)
    return {} if task else None


class ClientTasks2025(Extension):
    """2025-11-25's tasks, the client as requestor: a ``tools/call`` (given the option ``task``) may
    be a :class:`LegacyTaskCall` (:func:`start_call`); :meth:`request` sends ``tasks/*``."""

    name = "tasks 2025-11-25"
    #: The client it serves (set by :meth:`setup`).
    client: Client | None = None

    def setup(self, host: Client) -> None:
        """Keep the client: its listing says which tools take tasks."""
        self.client = host

    def start_request(
        self,
        connection: ClientConnection,
        method: str,
        params: dict | None,
        options: dict,
        start: Callable[[str, dict | None, dict], Any],
    ) -> Any:
        """Take the ``task`` option out (the handshake era only: 2026-07-28's is another extension's);
        a request without it (``client.request(...)``) is sent as it is."""
        if connection.modern or self.client is None or "task" not in options:
            return start(method, params, options)
        task = options.pop("task")
        if (
            method != "tools/call"
            or params is None
            or "tasks" not in self.client.server_capabilities
        ):
            return start(method, params, options)
        return start_call(self.client, params, task, options, start)

    def intercept_request(self, call: IncomingRequest, proceed: Callable[[], Any]) -> Any:
        """The answer to a request of the server's that belongs to one of its tasks carries the task
        too (§Related Task Metadata: "All requests, notifications, and responses related to a task
        MUST include" it)."""
        result = proceed()
        meta = call.params.get("_meta")
        related = meta.get(RELATED_TASK) if isinstance(meta, dict) else None
        if isinstance(related, dict) and isinstance(result, dict):
            result = {**result, "_meta": {**(result.get("_meta") or {}), RELATED_TASK: related}}
        return result

    @staticmethod
    def request(connection: ClientConnection, method: str, params: dict) -> dict:
        """``tasks/get``, ``tasks/cancel``: plain requests of the handshake era."""
        return connection.request(method, params)


def start_call(
    client: Client,
    params: dict,
    task: Any,
    options: dict,
    start: Callable[[str, dict | None, dict], Any],
) -> Call:
    """Start a handshake-era ``tools/call`` to a server that declares ``tasks``: a task when the
    module docstring's rules say so (:class:`LegacyTaskCall`), else as ``start`` does."""
    metadata = task_metadata(task)
    if tools_call_declared(client):
        support = task_support(client, params["name"])
        if support == REQUIRED or (support == OPTIONAL and metadata is not None):
            return LegacyTaskCall(client.connection, {**params, "task": metadata or {}}, options)
    return start("tools/call", params, options)


def created_task(answer: Any) -> dict | None:
    """The Task of a ``CreateTaskResult`` (``{task: {taskId, status, ...}}``), or None for any other result."""
    task = answer.get("task") if isinstance(answer, dict) else None
    if not isinstance(task, dict):
        return None
    if not isinstance(task.get("taskId"), str) or not task["taskId"]:
        raise McpError("tools/call: the server's CreateTaskResult has no taskId")
    return task


class LegacyTaskCall(Call):
    """A task-augmented ``tools/call`` (2025-11-25): ``result()`` follows the task, ``cancel()``
    sends ``tasks/cancel``; see the module docstring."""

    def __init__(self, connection: ClientConnection, params: dict, options: dict):
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._finished = False
        self._follow: PendingRequest | None = None  # the tasks/get or tasks/result in flight
        # tasks §Task Progress Notifications: the token "remains valid throughout the task lifetime"
        super().__init__(
            connection, "tools/call", params, {**options, "progress_outlives_answer": True}
        )
        self.pending.add_done_callback(self._answered)

    def _answered(self, pending: Future) -> None:
        """The ``tools/call`` has its answer: unless it is a task, its progress ends with it (its
        token outlives the answer only for a task; progress §Behavior Requirements: notifications
        "MUST stop after completion"), whether or not ``result()`` is ever called."""
        try:
            task = created_task(pending.result())
        except BaseException:  # an error, a timeout, a cancellation: no task
            task = None
        if task is None:
            self.connection.session.end_progress(self.pending)

    def done(self) -> bool:
        """True once the call has settled: its result fetched, or the ``tools/call`` answered with no task."""
        if self._finished:
            return True
        if not self.pending.done():
            return False
        try:
            return created_task(self.pending.result()) is None
        except Exception:  # an error answer: settled
            return True

    def cancel(self, reason: str | None = None) -> bool:
        """``tasks/cancel`` for the call's task (waiting first for the ``CreateTaskResult`` if it is
        still on its way: bounded by the call's timeout); False if the call or its task had ended."""
        if self._finished:
            return False
        try:
            task = created_task(self.pending.result())
        except (McpError, RequestTimeout, RequestCancelled, ConnectionClosed):
            return False  # the tools/call itself ended without a task
        if task is None:
            return False  # the server ran it as a normal request, which has answered
        self.task_id = task["taskId"]
        if not self._abandon(task["taskId"]):
            return False
        with self._lock:
            self._stop.set()
            self._finished = (
                True  # settled: result() raises RequestCancelled, a second cancel() is False
            )
            follow = self._follow
        # the task's progress is no longer wanted: its token ends here, result() or not
        self.connection.session.end_progress(self.pending)
        if follow is not None:
            follow.cancel(reason)  # wake a follower waiting on tasks/result or tasks/get
        return True

    def result(self) -> dict:
        """The call's result: the tool's, or its task's through ``tasks/result``."""
        try:
            answer = self.pending.result()
            task = created_task(answer)
            # tasks §Task Progress Notifications: the token "remains valid throughout the task lifetime"
            # (the session keeps calling on_progress after the CreateTaskResult, until end_progress)
            return answer if task is None else self._follow_task(task)
        finally:
            self._finished = True
            self.connection.session.end_progress(self.pending)

    def _follow_task(self, task: dict) -> dict:
        task_id = self.task_id = task["taskId"]
        deadline = deadline_of(task.get("ttl"), self.options.get("max_total_timeout") or None)
        state, rounds, previous = task, 0, None
        while True:
            status = state.get("status")
            if status == "cancelled":
                raise RequestCancelled(f"tools/call: task {task_id} was cancelled")
            if status == "input_required" and previous != status:
                rounds += 1  # one more time the task waits for input: bounded as input_required rounds are
                limit = self.connection.client.max_input_rounds
                if rounds > limit:
                    self._abandon(task_id)
                    raise LimitExceeded(
                        f"tools/call: task {task_id} still needed input after {limit} rounds; this "
                        f"client answers at most {limit} (max_input_rounds)",
                        data={"limit": limit},
                    )
            previous = status
            if status in TERMINAL or status == "input_required":
                try:
                    return self._send("tasks/result", task_id, deadline)
                except (RequestTimeout, McpError) as exc:
                    if status in TERMINAL or (
                        isinstance(exc, RequestTimeout) and _expired(deadline)
                    ):
                        raise
                    # Still running: tasks/result timed out or the receiver stopped waiting (busy, its own
                    # bound), or the task ended with this error.  Polling resumes and tells which (a task
                    # ended meanwhile is asked again): §Retrieving Task Results allows it.
            wait = interval(state, "pollInterval")
            if deadline is not None:
                wait = min(wait, max(deadline - time.monotonic(), 0.0))
            if self._stop.wait(wait):
                raise RequestCancelled(f"tools/call: cancelled (task {task_id})")
            state = self._send("tasks/get", task_id, deadline)
            if not isinstance(state.get("status"), str):
                raise McpError(f"tools/call: tasks/get of {task_id} answered no task status")

    def _send(self, method: str, task_id: str, deadline: float | None) -> dict:
        """One request of the follower's: the call's timeout, cut to what is left before ``deadline``."""
        timeout = self.options.get("timeout", DEFAULT)
        if timeout is DEFAULT:
            timeout = self.connection.session.default_timeout
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                self._abandon(task_id)
                raise RequestTimeout(f"tools/call: task {task_id} did not finish in time")
            timeout = left if timeout is None else min(timeout, left)
        with self._lock:
            if self._stop.is_set():
                raise RequestCancelled(f"tools/call: cancelled (task {task_id})")
            self._follow = pending = self.connection.send_request(
                method, {"taskId": task_id}, timeout=timeout
            )
        try:
            return pending.result()
        except RequestCancelled:
            raise RequestCancelled(f"tools/call: cancelled (task {task_id})") from None
        except McpError:
            if self._stop.is_set():  # the task was cancelled under it (cancel()): its error is moot
                raise RequestCancelled(f"tools/call: cancelled (task {task_id})") from None
            raise
        except RequestTimeout:
            if _expired(deadline):
                self._abandon(task_id)
                raise RequestTimeout(f"tools/call: task {task_id} did not finish in time") from None
            raise
        finally:
            with self._lock:
                self._follow = None

    def _abandon(self, task_id: str) -> bool:
        """``tasks/cancel``, best effort: on :meth:`cancel`, and past the task's ttl or the call's
        ``max_total_timeout`` (the caller stops waiting either way, as a timed-out request is
        cancelled).  False when the server answers -32602: "already in a terminal status" (§Task
        Cancellation), the task had finished."""
        try:
            self.connection.request("tasks/cancel", {"taskId": task_id}, **request_options(self))
        except InvalidParams:
            return False
        except (McpError, ConnectionError, TimeoutError):
            log.debug("tasks/cancel of %s failed", task_id, exc_info=True)
        return True


def list_tasks(client: Client, cursor: str | None = None) -> Page:
    """``tasks/list`` (2025-11-25 §Listing Tasks): one page of the server's tasks, each a Task dict;
    CapabilityError unless the server declared ``tasks.list``."""
    if client.era != "handshake" or not isinstance(
        _mapping(client.server_capabilities.get("tasks")).get("list"), dict
    ):
        raise CapabilityError(
            "tasks/list: the server did not declare the tasks.list capability (2025-11-25)"
        )
    result = client.connection.request(
        "tasks/list", {"cursor": cursor} if cursor is not None else None
    )
    tasks = result.get("tasks")
    if not isinstance(tasks, list):
        raise McpError("tasks/list: the answer has no tasks list")
    return Page(items=tasks, next_cursor=result.get("nextCursor"), raw=result)


def _mapping(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _expired(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline
