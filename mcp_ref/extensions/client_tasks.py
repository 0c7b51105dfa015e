"""The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663), client side.

:class:`ClientTasks` is a client extension (:mod:`mcp_ref.extension`), which the client adds
the first time a call asks for a task in the 2026-07-28 era.  ``client.call_tool(name, args,
task=True)`` then starts a :class:`TaskCall`, which declares the extension on that request
(per-request capabilities, 2026-07-28).  The server then decides: it
answers with the tool's result, or with a task handle (``resultType: "task"``).
For a handle :func:`follow` drives the task to its end and returns what the
call would have returned (SEP-2663 §Polymorphic Results: clients "can
transparently drive the polling flow internally and surface only the final,
completed result"):

* ``tasks/get`` every ``pollIntervalMs`` (kept between :data:`MIN_POLL` and
  :data:`MAX_POLL` seconds), the wait cut short by ``cancel()``;
* ``input_required``: the ``inputRequests`` are answered by the client's
  sampling, elicitation and roots handlers, as any server request is, and sent
  with ``tasks/update``; a key is answered once, however many polls show it
  (§Task Update Requests: clients "SHOULD deduplicate inputRequests keys");
  at most ``Client(max_input_rounds=)`` rounds of them (the bound on
  ``input_required`` rounds, 16 by default): a task still asking after that is
  cancelled (``tasks/cancel``) and the call raises LimitExceeded;
* ``completed`` → the result (``isError`` results included); ``failed`` → the
  JSON-RPC error raised; ``cancelled`` → RequestCancelled;
* ``ToolCall.cancel()`` sends ``tasks/cancel`` once the call's answer, the task handle, is in,
  whether or not ``result()`` follows the task (never ``notifications/cancelled``, which "MUST
  NOT be used for task cancellation"); before that answer it cancels the request itself;
* bounded: the task's ``ttlMs`` (when not null) and ``max_total_timeout`` end
  the wait with RequestTimeout; every request it sends has the call's timeout.

``client.get_task(task_id)`` and ``client.cancel_task(task_id)`` reach a task
directly, e.g. one whose id was kept across a restart.

The module loads with the first request that asks for a task: a client that never passes
``task=True`` never reads it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..client.connection import Call, ModernCall
from ..client.mrtr import answer, too_many_rounds
from ..errors import McpError, RequestCancelled, RequestTimeout
from ..extension import Extension

if TYPE_CHECKING:
    from ..client.interfaces import Connection

log = logging.getLogger(__name__)

EXTENSION = "io.modelcontextprotocol/tasks"
TASK = "task"
MIN_POLL = 0.05
MAX_POLL = 30.0
DEFAULT_POLL = 0.5
#: The longest a task's ttl is taken to be (ms, about 31.7 years): a longer one, a valid JSON integer
#: of any size, is cut to it, so that its deadline is a float and fits a thread's wait
#: (``threading.TIMEOUT_MAX``).  The poll interval is clamped (:func:`interval`) before it is divided.
LONGEST_TTL_MS = 10**12


class ClientTasks(Extension):
    """The tasks extension, client side: a request given the option ``task=True`` in the 2026-07-28
    era is a :class:`TaskCall`; :meth:`request` sends the extension's own requests."""

    name = EXTENSION

    def start_request(
        self,
        connection: Connection,
        method: str,
        params: dict | None,
        options: dict,
        start: Callable[[str, dict | None, dict], Any],
    ) -> Any:
        """Take the ``task`` option out (2026-07-28 only: 2025-11-25's tasks are another extension's)."""
        if connection.modern and options.pop("task", False):
            return TaskCall(connection, method, params, options)
        return start(method, params, options)

    @staticmethod
    def request(connection: Connection, method: str, params: dict, **options: Any) -> dict:
        """``tasks/get``, ``tasks/update``, ``tasks/cancel``: sent declaring the extension."""
        return connection.request(method, params, declares=(EXTENSION,), **options)


class TaskCall(ModernCall):
    """A request that declares the extension: the server may answer with a task, which
    :meth:`result` follows to its end (:func:`follow`); ``task_id`` is then its id, and
    :meth:`cancel` sends ``tasks/cancel``."""

    #: The id of the task the server made of the call, once it made one.
    task_id: str | None = None

    def __init__(self, connection: Connection, method: str, params: dict | None, options: dict):
        self._stop = threading.Event()  # set by cancel(): a task being followed gets tasks/cancel
        self._task_lock = threading.Lock()
        self._task_cancelled = False  # tasks/cancel was sent (once, by cancel() or the follower)
        options = dict(options, late_answer=self._late_answer)
        super().__init__(connection, method, params, options, (EXTENSION,))

    def finished(self) -> bool:
        """As any call's (the answer that came ends it: a result, an error), except for a task
        handle: that answer is only the task's start, so the call is finished once ``result()``
        returned or raised (a cancelled task may still end with its result, see :meth:`cancel`)."""
        if self.settled or not self.pending.done():
            return self.settled
        try:
            answer = self.pending.result()  # it came: at once
        except BaseException:
            answer = None
        if isinstance(answer, dict) and answer.get("resultType") == TASK:
            return False
        return super().finished()

    def cancel(self, reason: str | None = None) -> bool:
        """Cancel the request, or the task it became; False if it had finished.

        SEP-2663 §Task Cancellation: a task is cancelled with ``tasks/cancel`` ("The
        ``notifications/cancelled`` notification MUST NOT be used for task cancellation").  The
        task's id is learnt from the request's answer, the task handle, whether or not
        ``result()`` is following it: once the handle is there, ``tasks/cancel`` is sent here.
        Before it, the request itself is cancelled (as any is); and when the handle wins that
        race (it was on its way), ``tasks/cancel`` goes as soon as it is in.
        """
        self._stop.set()
        cancelled = super().cancel(reason)
        if not cancelled:
            return False
        try:  # at once: answered, or cancelled just now (or its answer being settled as we speak)
            answer = self.pending.result()
        except BaseException:  # cancelled before any answer (or one that is an error): no task
            return True
        task_id = answer.get("taskId") if answer.get("resultType") == TASK else None
        if isinstance(task_id, str) and task_id:
            self.task_id = task_id
            self.cancel_task(task_id)
        return True

    def _late_answer(self, result: dict) -> None:
        """The answer to a round that came after it was cancelled (or timed out): a task handle
        that crossed the cancellation.  Nobody follows that task: ``tasks/cancel``, not waited for
        (on the callback thread)."""
        task_id = result.get("taskId") if result.get("resultType") == TASK else None
        if not isinstance(task_id, str) or not task_id:
            return
        with self._task_lock:
            if self._task_cancelled:
                return
            self._task_cancelled = True
        self.task_id = task_id
        try:
            self.connection.send_request(
                "tasks/cancel", {"taskId": task_id}, declares=(EXTENSION,), **request_options(self)
            )
        except ConnectionError:
            log.debug("tasks/cancel of %s not sent: the connection is closed", task_id)

    def cancel_task(self, task_id: str) -> None:
        """``tasks/cancel`` for the call's task, once (cancel() and the follower may both get here)."""
        with self._task_lock:
            if self._task_cancelled:
                return
            self._task_cancelled = True
        _cancel(self.connection, task_id, request_options(self))

    def settle(self, kind: str, result: dict) -> dict:
        """A task handle (``resultType: "task"``): follow the task to its end."""
        if kind != TASK:
            return super().settle(kind, result)
        return follow(self, result, self._stop, self.options.get("max_total_timeout"))


def request_options(call: Call) -> dict[str, Any]:
    """The call's options that apply to each request it sends for its task (its timeout)."""
    return {"timeout": call.options["timeout"]} if "timeout" in call.options else {}


def interval(task: dict, field: str = "pollIntervalMs") -> float:
    """Seconds to wait before the next ``tasks/get``: the task's poll interval (``pollIntervalMs``; at
    2025-11-25 ``pollInterval``, also milliseconds) kept between :data:`MIN_POLL` and :data:`MAX_POLL`."""
    poll = task.get(field)
    if not isinstance(poll, (int, float)) or isinstance(poll, bool) or poll <= 0:
        return DEFAULT_POLL
    # clamped in milliseconds, then divided: an integer too large for a float divides no more
    return min(max(poll, MIN_POLL * 1000), MAX_POLL * 1000) / 1000


def deadline_of(ttl: Any, max_total: float | None) -> float | None:
    """When following a task gives up (monotonic seconds): at the end of its ``ttl`` (milliseconds;
    null: "unlimited") or ``max_total`` seconds from now, whichever comes first; None: neither."""
    limits = [] if max_total is None else [max_total]
    if isinstance(ttl, int) and not isinstance(ttl, bool) and ttl > 0:
        limits.append(min(ttl, LONGEST_TTL_MS) / 1000)
    return time.monotonic() + min(limits) if limits else None


def follow(call: TaskCall, created: dict, stop: threading.Event, max_total: float | None) -> dict:
    """Drive the task ``created`` (a CreateTaskResult) to its end; the call's final result."""
    connection = call.connection
    task_id = created.get("taskId")
    if not isinstance(task_id, str) or not task_id:
        raise McpError(f"{call.method}: the server's task handle has no taskId")
    call.task_id = task_id
    deadline = deadline_of(created.get("ttlMs"), max_total)
    options = request_options(call)
    answered: set[str] = set()
    rounds = 0
    state = created
    while True:
        status = state.get("status")
        if status == "completed":
            result = state.get("result")
            if not isinstance(result, dict):
                raise McpError(f"{call.method}: task {task_id} completed without a result object")
            return result
        if status == "failed":
            error = state.get("error")
            raise McpError.from_error(
                error if isinstance(error, dict) else {"code": -32603, "message": "task failed"}
            )
        if status == "cancelled":
            raise RequestCancelled(f"{call.method}: task {task_id} was cancelled")
        if status == "input_required":
            requests = state.get("inputRequests")
            fresh = (
                {k: v for k, v in requests.items() if k not in answered}
                if isinstance(requests, dict)
                else {}
            )
            if fresh:
                rounds += 1
                if rounds > call.connection.client.max_input_rounds:
                    # A server that asks again and again must not hold the caller (nor run its
                    # handlers) forever: the same bound as input_required rounds; the task ends.
                    _cancel(connection, task_id, options)
                    raise too_many_rounds(call)
                try:
                    responses = answer(call, fresh)
                except Exception:
                    # refused (approve, server_request_limit), unanswerable, or a handler's answer
                    # no ElicitResult the spec allows: the task could only wait in input_required
                    # until its ttl, holding a worker of the server's; end it now
                    _cancel(connection, task_id, options)
                    raise
                answered.update(responses)
                ClientTasks.request(
                    connection,
                    "tasks/update",
                    {"taskId": task_id, "inputResponses": responses},
                    **options,
                )
                state = ClientTasks.request(connection, "tasks/get", {"taskId": task_id}, **options)
                continue
        wait = interval(state)
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RequestTimeout(
                    f"{call.method}: task {task_id} did not finish in time (status {status})"
                )
            wait = min(wait, left)
        if stop.wait(wait):
            call.cancel_task(task_id)
            raise RequestCancelled(f"{call.method}: cancelled (task {task_id})")
        state = ClientTasks.request(connection, "tasks/get", {"taskId": task_id}, **options)


def _cancel(connection, task_id: str, options: dict) -> None:
    """``tasks/cancel``, best effort: the task may be gone already, and the caller stops either way."""
    try:
        ClientTasks.request(connection, "tasks/cancel", {"taskId": task_id}, **options)
    except (McpError, ConnectionError, TimeoutError):
        log.debug("tasks/cancel of %s failed", task_id, exc_info=True)
