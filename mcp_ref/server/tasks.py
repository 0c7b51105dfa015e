"""The tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663), server side.

A ``tools/call`` may answer with a *task* instead of its result: a handle the
client polls with ``tasks/get`` until the work is done, answers with
``tasks/update`` when the task needs input, and may stop with ``tasks/cancel``.
It exists only at 2026-07-28, and only for a request whose client capabilities
declare the extension (SEP-2663 §Capability Negotiation: a server "MUST NOT
return CreateTaskResult to a client that did not include the extension
capability on its request").

How a tool becomes a task (the server decides, per request):

* ``@server.tool(task="optional")`` — the handler runs as a call normally does
  until it calls ``ctx.start_task()``.  For a client that declared the extension
  that is where the task begins: the client gets a ``CreateTaskResult`` and the
  handler is run again on the server's task workers, where ``start_task()``
  returns True and the work goes on.  For any other client ``start_task()``
  returns False and the call simply goes on synchronously.  Asks made before
  ``start_task()`` are ordinary ``input_required`` rounds, answered before the
  task exists (§Composition with Multi Round-Trip Requests: "SHOULD resolve all
  MRTR exchanges synchronously before responding with a CreateTaskResult"); the
  re-run finds their answers, as an MRTR retry does.
* ``@server.tool(task="required")`` — the same, but a client that did not
  declare the extension gets -32021 naming it, before the handler runs.

Inside the task an ask (``ctx.elicit``, ``ctx.sample``, ``ctx.list_roots``)
parks the task in ``input_required`` with the ask in ``inputRequests``; the
handler's thread waits until ``tasks/update`` brings every answer, the task is
cancelled, or its time to live runs out.  ``ctx.report_progress`` sets the
task's ``statusMessage``; log messages are not sent (SEP-2663: progress and log
notifications "are not supported on tasks").

:class:`TaskStore` (``server.tasks``) holds the tasks and runs them: at most
``max_tasks`` (past it the oldest finished one is forgotten; if none has
finished, a new task is refused with -32000), each kept ``ttl_ms`` after its
creation, run by at most ``workers`` threads (daemon threads: a parked task
never keeps the process alive).  A task belongs to whoever created it: over
HTTP with authorization, another principal's ``taskId`` is "not found".
"""

from __future__ import annotations

import itertools
import logging
import queue
import secrets
import threading
import time
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable

from ..errors import INTERNAL_ERROR, InvalidParams, McpError, MissingRequiredClientCapabilityError, RequestCancelled, ServerBusy
from ..session import RequestContext
from .input_required import Ask, Inputs, answer_all

if TYPE_CHECKING:
    from .connection import ServerConnection

log = logging.getLogger(__name__)

EXTENSION = "io.modelcontextprotocol/tasks"
#: ``resultType`` of a CreateTaskResult (SEP-2663 §Polymorphic Results).
TASK = "task"
#: What ``Server.tool(task=...)`` accepts.
OPTIONAL, REQUIRED = "optional", "required"
WORKING, INPUT_REQUIRED, COMPLETED, FAILED, CANCELLED = "working", "input_required", "completed", "failed", "cancelled"
TERMINAL = frozenset({COMPLETED, FAILED, CANCELLED})

DEFAULT_MAX_TASKS = 1024
DEFAULT_TTL_MS = 60 * 60 * 1000
DEFAULT_POLL_INTERVAL_MS = 250
DEFAULT_WORKERS = 16
#: Input requests one task may have outstanding at once, and keys it may hand out over its life.
MAX_OUTSTANDING = 64
MAX_KEYS = 4096


def declared(context: RequestContext) -> bool:
    """True when a request's own client capabilities declare the tasks extension (2026-07-28 only)."""
    modern = context.envelope
    if modern is None:
        return False
    extensions = modern.client_capabilities.get("extensions")
    return isinstance(extensions, dict) and EXTENSION in extensions


def missing(why: str) -> MissingRequiredClientCapabilityError:
    """-32021 naming the extension (SEP-2663 §Capability Negotiation)."""
    return MissingRequiredClientCapabilityError.needing({"extensions": {EXTENSION: {}}}, why)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class StartTask(BaseException):
    """Raised by ``ctx.start_task()`` where a call becomes a task; ``tools/call`` catches it.

    A BaseException, so a handler's ``except Exception`` does not swallow it.
    """


class Task:
    """One task: its state as ``tasks/get`` shows it, and what its handler waits for."""

    def __init__(self, task_id: str, principal: str | None, ttl_ms: int | None, poll_interval_ms: int):
        self.id = task_id
        self.principal = principal
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.created_at = self.updated_at = _now()
        self.created = time.monotonic()
        self.status = WORKING
        self.status_message: str | None = None
        self.result: dict | None = None
        self.error: dict | None = None
        #: The asks waiting for ``tasks/update``, by key; and the answers that came.
        self.outstanding: dict[str, Ask] = {}
        self.answers: dict[str, dict] = {}
        self._keys = 0
        self.lock = threading.Condition()
        self.cancelled = threading.Event()

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def expired(self, now: float) -> bool:
        return self.ttl_ms is not None and now >= self.created + self.ttl_ms / 1000

    def to_wire(self, detailed: bool = True) -> dict:
        """The Task object; ``detailed`` adds what its status carries (DetailedTask: ``inputRequests``,
        ``result`` or ``error``)."""
        with self.lock:
            wire: dict[str, Any] = {"taskId": self.id, "status": self.status, "createdAt": self.created_at,
                                    "lastUpdatedAt": self.updated_at, "ttlMs": self.ttl_ms,
                                    "pollIntervalMs": self.poll_interval_ms}
            if self.status_message is not None:
                wire["statusMessage"] = self.status_message
            if detailed:
                if self.status == INPUT_REQUIRED:
                    wire["inputRequests"] = {key: ask.input_request() for key, ask in self.outstanding.items()}
                elif self.status == COMPLETED:
                    wire["result"] = self.result
                elif self.status == FAILED:
                    wire["error"] = self.error
            return wire

    def _set(self, status: str, **fields) -> None:
        """Move to ``status`` (under the lock); a terminal status never changes again."""
        if self.terminal:
            return
        self.status = status
        for name, value in fields.items():
            setattr(self, name, value)
        self.updated_at = _now()
        self.lock.notify_all()

    def finish(self, status: str, *, result: dict | None = None, error: dict | None = None,
               message: str | None = None) -> None:
        """End the task: ``completed`` with a result, ``failed`` with a JSON-RPC error, or ``cancelled``."""
        with self.lock:
            self.outstanding.clear()
            self._set(status, result=result, error=error,
                      status_message=message if message is not None else self.status_message)

    def report(self, message: str) -> None:
        """Set ``statusMessage`` (what ``ctx.report_progress`` does inside a task)."""
        with self.lock:
            if not self.terminal:
                self.status_message = message
                self.updated_at = _now()

    def ask(self, asks: list[Ask], deadline: float | None) -> list:
        """Park in ``input_required`` until ``tasks/update`` answered every ask; their answers, read.

        SEP-2663 §Task Update Requests: "Each request key in inputRequests MUST be unique over the
        lifetime of a single task": a key already used gets a number.
        """
        with self.lock:
            if len(asks) + len(self.outstanding) > MAX_OUTSTANDING or self._keys + len(asks) > MAX_KEYS:
                raise McpError(f"task {self.id}: too many input requests", code=INTERNAL_ERROR)
            keyed = []
            for ask in asks:
                self._keys += 1
                keyed.append(replace(ask, key=f"{ask.key}.{self._keys}" if ask.key in self.answers else ask.key))
            for ask in keyed:
                self.answers.pop(ask.key, None)
                self.outstanding[ask.key] = ask
            self._set(INPUT_REQUIRED)
            while any(ask.key in self.outstanding for ask in keyed):
                if self.cancelled.is_set():
                    raise RequestCancelled(f"task {self.id} was cancelled")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise McpError(f"task {self.id}: its time to live ran out while it waited for input",
                                   code=INTERNAL_ERROR)
                self.lock.wait(left)
            if not self.outstanding:
                self._set(WORKING)
            answers = {ask.key: self.answers[ask.key] for ask in keyed}
        return answer_all(keyed, answers)

    def update(self, responses: dict) -> None:
        """``tasks/update``: take the answers to outstanding asks; others are ignored.

        SEP-2663: a server "SHOULD ignore any inputResponses responses mapped to a key that is not
        currently outstanding"; an answer to an outstanding ask that cannot be read is -32602 (the
        ask stays outstanding).
        """
        with self.lock:
            taken = {}
            for key, value in responses.items():
                ask = self.outstanding.get(key)
                if ask is None:
                    continue
                answer_all([ask], {key: value})  # -32602 for an answer that is not a valid result
                taken[key] = value
            for key, value in taken.items():
                del self.outstanding[key]
                self.answers[key] = value
            if taken:
                self.updated_at = _now()
                self.lock.notify_all()

    def cancel(self) -> None:
        """``tasks/cancel``: ask the handler to stop (cooperative: it may still finish otherwise)."""
        self.cancelled.set()
        with self.lock:
            self.lock.notify_all()


class TaskStore:
    """The tasks of one server, and the threads that run them (see the module docstring)."""

    def __init__(self, *, max_tasks: int = DEFAULT_MAX_TASKS, ttl_ms: int | None = DEFAULT_TTL_MS,
                 poll_interval_ms: int = DEFAULT_POLL_INTERVAL_MS, workers: int = DEFAULT_WORKERS):
        if ttl_ms is not None and (not isinstance(ttl_ms, int) or ttl_ms <= 0):
            # tasks-wire-field-renames: ttlMs is null (unlimited) or a positive integer.
            raise ValueError("ttl_ms must be a positive number of milliseconds, or None for unlimited")
        self.max_tasks = max_tasks
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.workers = workers
        self._tasks: dict[str, Task] = {}
        self._lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._numbers = itertools.count(1)

    def __len__(self) -> int:
        return len(self._tasks)

    def create(self, principal: str | None) -> Task:
        """A new task, findable at once (SEP-2663: the server "MUST NOT return CreateTaskResult until
        the task is durably created"); ServerBusy when ``max_tasks`` unfinished tasks exist."""
        with self._lock:
            self._forget_expired()
            if len(self._tasks) >= self.max_tasks:
                finished = [t for t in self._tasks.values() if t.terminal]
                if not finished:
                    raise ServerBusy(f"Server busy: {self.max_tasks} tasks are in progress; retry later",
                                     data={"maxTasks": self.max_tasks})
                del self._tasks[min(finished, key=lambda t: t.created).id]
            task = Task(secrets.token_urlsafe(16), principal, self.ttl_ms, self.poll_interval_ms)
            self._tasks[task.id] = task
            return task

    def find(self, task_id: object, principal: str | None) -> Task:
        """The task ``task_id`` of ``principal``, or -32602 (SEP-2663 §Protocol Errors: "Invalid or
        nonexistent taskId: -32602")."""
        if not isinstance(task_id, str):
            raise InvalidParams("Invalid params: taskId must be a string")
        with self._lock:
            self._forget_expired()
            task = self._tasks.get(task_id)
        if task is None or task.principal != principal:
            raise InvalidParams(f"Invalid params: no task {task_id!r} (it does not exist, or has expired)")
        return task

    def _forget_expired(self) -> None:
        now = time.monotonic()
        for task in [t for t in self._tasks.values() if t.expired(now)]:
            task.cancel()  # SEP-2663: after its TTL a server "MAY ... delete it at any time"
            del self._tasks[task.id]

    def run(self, work: Callable[[], None]) -> None:
        """Run ``work`` on a task worker (started when first needed, at most ``workers``)."""
        with self._lock:
            if len(self._threads) < self.workers:
                thread = threading.Thread(target=self._work, name=f"mcp-task-{next(self._numbers)}", daemon=True)
                self._threads.append(thread)
                thread.start()
        self._queue.put(work)

    def _work(self) -> None:
        while True:
            work = self._queue.get()
            try:
                work()
            except BaseException:  # noqa: BLE001 - a worker never dies
                log.exception("a task's work failed")

    def cancel_all(self) -> None:
        """Cancel every unfinished task (at shutdown)."""
        with self._lock:
            tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()


class TaskRun:
    """What a handler running as a task has: its :class:`Task`, and the answers of the
    ``input_required`` rounds that came before the task (replayed as they were)."""

    def __init__(self, task: Task, before: dict):
        self.task = task
        self.before = before

    def ask(self, asks: list[Ask]) -> list:
        """The answers to ``asks``: from the rounds before the task if it had them all, else from
        ``tasks/update`` (the task parks in ``input_required`` meanwhile)."""
        if all(ask.key in self.before for ask in asks):
            return answer_all(asks, self.before)
        task = self.task
        deadline = None if task.ttl_ms is None else task.created + task.ttl_ms / 1000
        return task.ask(asks, deadline)


#: Marks a request whose tool may become a task (``RequestContext.task``): ``ctx.start_task()`` starts it.
MAY_START = "may start"


def begin(connection: "ServerConnection", context: RequestContext, run: Callable[[RequestContext], dict]) -> dict:
    """``ctx.start_task()`` was reached: create the task, run the handler again on a task worker
    (``run(task_context)`` gives its result), and return the CreateTaskResult."""
    server = connection.server
    principal = connection.auth.principal if connection.auth is not None else None
    task = server.tasks.create(principal)
    before = dict(context.inputs.answers) if context.inputs is not None else {}
    quiet = replace(context.envelope, log_level=None)  # no log messages from a task
    task_context = RequestContext(context.session, f"task:{task.id}", context.method, context.params)
    task_context.progress_token = None
    task_context.envelope = quiet
    task_context.inputs = Inputs(dict(before))
    task_context.task = TaskRun(task, before)
    task_context.cancelled = task.cancelled

    def work() -> None:
        try:
            result = run(task_context)
        except RequestCancelled:
            task.finish(CANCELLED)
        except McpError as exc:
            # SEP-2663 §Task Execution Errors: a JSON-RPC error "moves to the failed status".
            task.finish(FAILED, error=exc.to_error(), message=exc.message)
        except BaseException:  # noqa: BLE001 - never leak internals to the client
            log.exception("task %s failed", task.id)
            task.finish(FAILED, error={"code": INTERNAL_ERROR, "message": "Internal error"},
                        message="the task failed with an internal error")
        else:
            # SEP-2663: a result, "even if isError: true", is completed; cancellation is cooperative.
            task.finish(COMPLETED, result=result)

    server.tasks.run(work)
    created = task.to_wire(detailed=False)
    created["resultType"] = TASK
    return created


# -- the methods ------------------------------------------------------------------------------------


def _task_of(connection: "ServerConnection", context: RequestContext, params: dict, method: str) -> Task:
    """The task a ``tasks/*`` request names, after the capability check (SEP-2663: -32021 "for
    non-declaring clients issuing tasks/get, tasks/update, and tasks/cancel requests", checked
    before the id)."""
    if not declared(context):
        raise missing(f"{method} needs the {EXTENSION} extension")
    principal = connection.auth.principal if connection.auth is not None else None
    return connection.server.tasks.find(params.get("taskId"), principal)


def get_task(connection: "ServerConnection", context: RequestContext, params: dict) -> dict:
    """``tasks/get``: the task as it is now (SEP-2663 §Task Polling; ``resultType`` "complete")."""
    return _task_of(connection, context, params, "tasks/get").to_wire()


def update_task(connection: "ServerConnection", context: RequestContext, params: dict) -> dict:
    """``tasks/update``: answers for the task's outstanding asks; an empty acknowledgement."""
    task = _task_of(connection, context, params, "tasks/update")
    responses = params.get("inputResponses")
    if not isinstance(responses, dict):
        raise InvalidParams("Invalid params: tasks/update needs an inputResponses object")
    task.update(responses)
    return {}


def cancel_task(connection: "ServerConnection", context: RequestContext, params: dict) -> dict:
    """``tasks/cancel``: an empty acknowledgement, for a finished task too (cooperative cancellation)."""
    _task_of(connection, context, params, "tasks/cancel").cancel()
    return {}


HANDLERS = {"tasks/get": get_task, "tasks/update": update_task, "tasks/cancel": cancel_task}
