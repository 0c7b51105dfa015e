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
cancelled, its ``input_timeout`` passes (the task fails, -32005, saying so) or
its time to live runs out.  ``ctx.report_progress`` sets the task's
``statusMessage``; log messages are not sent (SEP-2663: progress and log
notifications "are not supported on tasks").

:class:`TaskStore` (``server.tasks``) holds the tasks and runs them:

* at most ``max_tasks`` (past it the oldest finished one is forgotten; if none
  has finished, a new task is refused with -32000), and at most
  ``max_tasks_per_principal`` unfinished ones per caller (past it, -32005), each
  kept ``ttl_ms`` after its creation;
* at most ``workers`` tasks *run* at once.  A task waiting for input gives its
  run slot up while it waits (another task runs meanwhile) and keeps only its
  thread; at most ``max_waiting`` tasks wait so (one more that asks for input
  fails at once with -32000), and each waits at most ``input_timeout`` seconds.
  So the store never has more than ``workers + max_waiting`` threads (daemon
  threads: a parked task never keeps the process alive; an idle one ends after
  a minute).  A task whose answers came waits for a free run slot before it
  goes on, ahead of tasks not yet started.

A task belongs to whoever created it: over HTTP with authorization, another
principal's ``taskId`` is "not found".
"""

from __future__ import annotations

import itertools
import logging
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, cast

from ..core.errors import (
    INTERNAL_ERROR,
    InvalidParams,
    LimitExceeded,
    McpError,
    MissingRequiredClientCapabilityError,
    RequestCancelled,
    ServerBusy,
)
from ..core.requests import RequestContext
from ..server.input_required import Ask, Inputs, answer_all
from ..server.seams import MAY_START, RequestState, state_of

if TYPE_CHECKING:
    from ..core.envelope import Envelope
    from ..server.seams import Caller as ServerConnection
    from ..server.seams import Registry

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
#: Tasks that may wait for input at once (each keeps its thread, not its run slot), and for how long (seconds).
DEFAULT_MAX_WAITING = 64
DEFAULT_INPUT_TIMEOUT = 5 * 60.0
#: Unfinished tasks one caller (``Principal.id``) may have at once.
DEFAULT_MAX_TASKS_PER_PRINCIPAL = 16
#: Seconds an idle task thread waits for work before it ends.
IDLE_SECONDS = 60.0
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

    def __init__(self, task_id: str, owner: str | None, ttl_ms: int | None, poll_interval_ms: int,
                 caller: str | None = None):
        self.id = task_id
        #: Who may see and answer it (``Principal.id`` of a verified caller; None: whoever has the id).
        self.owner = owner
        #: Whose count of unfinished tasks it is in (``Principal.id``, token or not).
        self.caller = caller if caller is not None else owner
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
        #: True once its handler got a run slot and started (see :meth:`begin_run`).
        self.started = False

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

    def ask(self, asks: list[Ask], deadline: float | None, input_timeout: float | None = None) -> list:
        """Park in ``input_required`` until ``tasks/update`` answered every ask; their answers, read.

        ``deadline`` (monotonic) is the task's time to live; ``input_timeout`` (seconds) bounds this
        wait: past it the asks are withdrawn and LimitExceeded (-32005) says so.

        SEP-2663 §Task Update Requests: "Each request key in inputRequests MUST be unique over the
        lifetime of a single task": a key already used gets a number.
        """
        waited_until = None if input_timeout is None else time.monotonic() + input_timeout
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
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    self._withdraw(keyed)
                    raise McpError(f"task {self.id}: its time to live ran out while it waited for input",
                                   code=INTERNAL_ERROR)
                if waited_until is not None and now >= waited_until:
                    self._withdraw(keyed)
                    raise LimitExceeded(f"no input came within {input_timeout:g} s (tasks/update); "
                                        "the task stopped waiting", data={"limit": input_timeout})
                ends = [end for end in (deadline, waited_until) if end is not None]
                self.lock.wait(min(ends) - now if ends else None)
            if not self.outstanding:
                self._set(WORKING)
            answers = {ask.key: self.answers[ask.key] for ask in keyed}
        return answer_all(keyed, answers)

    def _withdraw(self, asks: list[Ask]) -> None:
        """(Under the lock) take back asks no answer will come for: no longer outstanding."""
        for ask in asks:
            self.outstanding.pop(ask.key, None)
        if not self.outstanding and self.status == INPUT_REQUIRED:
            self._set(WORKING)

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
        """``tasks/cancel``: ask the handler to stop (cooperative: it may still finish otherwise).

        A task still waiting for a run slot is cancelled at once: its handler will never run (no
        side effect after the caller said stop), and it no longer counts against its caller's
        ``max_tasks_per_principal``.  SEP-2663 §Task Cancellation: the server "decides whether and
        when to honor it"; one that has not started can always be honoured, and so can one parked in
        ``input_required``: its handler cannot go on without the input, and wakes only to stop, so
        a ``tasks/get`` just after the cancel already says ``cancelled``.
        """
        self.cancelled.set()
        with self.lock:
            if not self.started or self.status == INPUT_REQUIRED:
                self._set(CANCELLED)  # the asks stay outstanding: ask() wakes, sees the cancel, raises
            self.lock.notify_all()

    def begin_run(self) -> bool:
        """A run slot came: True if the handler may start now, False if the task was cancelled (or
        ended) while it waited for one; then it never runs."""
        with self.lock:
            if self.cancelled.is_set() or self.terminal:
                self._set(CANCELLED)
                return False
            self.started = True
            return True


class TaskStore:
    """The tasks of one server, and the threads that run them (see the module docstring).

    ``workers``: tasks running at once; ``max_waiting``: tasks waiting for input at once (each
    keeps a thread, so the threads are at most ``workers + max_waiting``); ``input_timeout``:
    seconds a task waits for one round of input (None: until its TTL); ``max_tasks_per_principal``:
    unfinished tasks per caller (None: no cap but ``max_tasks``).
    """

    def __init__(self, *, max_tasks: int = DEFAULT_MAX_TASKS, ttl_ms: int | None = DEFAULT_TTL_MS,
                 poll_interval_ms: int = DEFAULT_POLL_INTERVAL_MS, workers: int = DEFAULT_WORKERS,
                 max_waiting: int = DEFAULT_MAX_WAITING, input_timeout: float | None = DEFAULT_INPUT_TIMEOUT,
                 max_tasks_per_principal: int | None = DEFAULT_MAX_TASKS_PER_PRINCIPAL):
        if ttl_ms is not None and (not isinstance(ttl_ms, int) or ttl_ms <= 0):
            # tasks-wire-field-renames: ttlMs is null (unlimited) or a positive integer.
            raise ValueError("ttl_ms must be a positive number of milliseconds, or None for unlimited")
        _whole("workers", workers, 1)
        _whole("max_waiting", max_waiting, 0)
        if max_tasks_per_principal is not None:
            _whole("max_tasks_per_principal", max_tasks_per_principal, 1)
        if input_timeout is not None and (isinstance(input_timeout, bool) or not isinstance(input_timeout, (int, float))
                                          or not input_timeout > 0):
            raise ValueError("input_timeout must be a positive number of seconds, or None (until the task's TTL)")
        self.max_tasks = max_tasks
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.workers = workers
        self.max_waiting = max_waiting
        self.input_timeout = input_timeout
        self.max_tasks_per_principal = max_tasks_per_principal
        self._tasks: dict[str, Task] = {}
        self._lock = threading.Lock()
        self._numbers = itertools.count(1)
        # The pool: work not yet started, and how many threads exist, wait for work (idle), hold a
        # run slot (running), wait for input (waiting) or wait for a slot after their input (resuming).
        self._cond = threading.Condition()
        self._pending: deque[Callable[[], None]] = deque()
        self._threads = self._idle = self._running = self._waiting = self._resuming = 0
        self._local = threading.local()  # .slot: this thread holds a run slot of this store

    def __len__(self) -> int:
        return len(self._tasks)

    @property
    def threads(self) -> int:
        """The store's threads now (at most ``workers + max_waiting``)."""
        return self._threads

    @property
    def waiting(self) -> int:
        """Tasks waiting for input now (at most ``max_waiting``)."""
        return self._waiting

    def create(self, owner: str | None, caller: str | None = None) -> Task:
        """A new task of ``owner`` (who may find it), counted against ``caller`` (default: ``owner``).

        Findable at once (SEP-2663: the server "MUST NOT return CreateTaskResult until the task is
        durably created").  LimitExceeded (-32005) when ``caller`` has ``max_tasks_per_principal``
        unfinished tasks; ServerBusy (-32000) when ``max_tasks`` unfinished tasks exist."""
        key = caller if caller is not None else owner
        with self._lock:
            self._forget_expired()
            cap = self.max_tasks_per_principal
            if cap is not None and sum(1 for t in self._tasks.values() if t.caller == key and not t.terminal) >= cap:
                raise LimitExceeded(f"Too many tasks: at most {cap} unfinished tasks per caller; wait for one to "
                                    "finish, or cancel one (tasks/cancel)", data={"limit": cap})
            if len(self._tasks) >= self.max_tasks:
                finished = [t for t in self._tasks.values() if t.terminal]
                if not finished:
                    raise ServerBusy(f"Server busy: {self.max_tasks} tasks are in progress; retry later",
                                     data={"maxTasks": self.max_tasks})
                del self._tasks[min(finished, key=lambda t: t.created).id]
            task = Task(secrets.token_urlsafe(16), owner, self.ttl_ms, self.poll_interval_ms, key)
            self._tasks[task.id] = task
            return task

    def find(self, task_id: object, owner: str | None) -> Task:
        """The task ``task_id`` of ``owner``, or -32602 (SEP-2663 §Protocol Errors: "Invalid or
        nonexistent taskId: -32602"; §Security Implications: servers "MUST perform authentication
        and authorization checks on each task-related request")."""
        if not isinstance(task_id, str):
            raise InvalidParams("Invalid params: taskId must be a string")
        with self._lock:
            self._forget_expired()
            task = self._tasks.get(task_id)
        if task is None or task.owner != owner:
            raise InvalidParams(f"Invalid params: no task {task_id!r} (it does not exist, or has expired)")
        return task

    def _forget_expired(self) -> None:
        now = time.monotonic()
        for task in [t for t in self._tasks.values() if t.expired(now)]:
            task.cancel()  # SEP-2663: after its TTL a server "MAY ... delete it at any time"
            del self._tasks[task.id]

    # -- the pool ---------------------------------------------------------------------------------

    def run(self, work: Callable[[], None]) -> None:
        """Run ``work`` on a task thread, once a run slot is free (the queue is bounded by ``max_tasks``:
        each work is a task's)."""
        with self._cond:
            self._pending.append(work)
            self._dispatch()

    def _dispatch(self) -> None:
        """(Holding ``_cond``) wake or start a thread if pending work may take a free run slot now."""
        if not self._pending or self._running >= self.workers or self._resuming:
            return
        if self._idle:
            self._cond.notify_all()
        elif self._threads < self.workers + self.max_waiting:
            self._threads += 1
            threading.Thread(target=self._work, name=f"mcp-task-{next(self._numbers)}", daemon=True).start()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._pending or self._running >= self.workers or self._resuming:
                    if not self._pending and self._threads > self.workers:
                        self._threads -= 1  # past the workers' count, an idle thread ends at once
                        return
                    self._idle += 1
                    try:
                        woken = self._cond.wait(IDLE_SECONDS)
                    finally:
                        self._idle -= 1
                    if not woken and not self._pending:
                        self._threads -= 1
                        return
                work = self._pending.popleft()
                self._running += 1
                self._dispatch()
            self._local.slot = True
            try:
                work()
            except BaseException:  # a worker never dies
                log.exception("a task's work failed")
            finally:
                self._local.slot = False
                with self._cond:
                    self._running -= 1
                    if self._resuming:
                        self._cond.notify_all()  # a task whose input came goes first

    @contextmanager
    def waiting_for_input(self) -> Iterator[None]:
        """Around a task's wait for input (on its own thread): its run slot is given to another task
        while it waits, and taken back after (once one is free).  ServerBusy (-32000) when
        ``max_waiting`` tasks wait already: the task does not wait (nor hold a slot while it waits)."""
        if not getattr(self._local, "slot", False):
            yield  # not on this store's worker (no slot to give up)
            return
        with self._cond:
            if self._waiting >= self.max_waiting:
                raise ServerBusy(f"Server busy: {self.max_waiting} tasks are waiting for input already; "
                                 "this one cannot wait too (try again later)", data={"maxWaiting": self.max_waiting})
            self._waiting += 1
            self._running -= 1
            self._local.slot = False
            self._dispatch()
            if self._resuming:
                self._cond.notify_all()
        try:
            yield
        finally:
            with self._cond:
                self._waiting -= 1
                self._resuming += 1
                try:
                    while self._running >= self.workers:
                        self._cond.wait()
                finally:
                    self._resuming -= 1
                self._running += 1
                self._local.slot = True
                self._dispatch()

    def cancel_all(self) -> None:
        """Cancel every unfinished task (at shutdown)."""
        with self._lock:
            tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()


def _whole(name: str, value: object, least: int) -> None:
    """ValueError unless ``value`` is a whole number >= ``least``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be a whole number >= {least}")


class TaskRun:
    """What a handler running as a task has: its :class:`Task`, and the answers of the
    ``input_required`` rounds that came before the task (replayed as they were)."""

    def __init__(self, task: Task, before: dict, store: TaskStore | None = None):
        self.task = task
        self.before = before
        self.store = store

    def report(self, message: str) -> None:
        """Set the task's ``statusMessage`` (``ctx.report_progress`` inside a task)."""
        self.task.report(message)

    def ask(self, asks: list[Ask]) -> list:
        """The answers to ``asks``: from the rounds before the task if it had them all, else from
        ``tasks/update`` (the task parks in ``input_required`` meanwhile, without its run slot, for
        at most the store's ``input_timeout``)."""
        if all(ask.key in self.before for ask in asks):
            return answer_all(asks, self.before)
        task = self.task
        deadline = None if task.ttl_ms is None else task.created + task.ttl_ms / 1000
        store = self.store
        if store is None:
            return task.ask(asks, deadline)
        with store.waiting_for_input():
            return task.ask(asks, deadline, store.input_timeout)


# MAY_START (mcp_ref.server.seams) marks a request whose tool may become a task: ctx.start_task() starts it.


def install(server: Registry) -> None:
    """Plug the extension into ``server`` (once): its methods (``tasks/get``, ``tasks/update``,
    ``tasks/cancel``), its ``tools/call`` interceptor, and its capability (declared at 2026-07-28
    while some tool is task-capable)."""
    if server.modern_methods.get("tasks/get") is get_task:
        return
    server.modern_methods.update(HANDLERS)
    server.tool_call_interceptors.append(intercept_call)
    server.extension_capabilities[EXTENSION] = _capability


def _capability(server: Any) -> dict | None:
    # SEP-2663 §Capability Negotiation: the server "advertises the same extension in its own
    # server/discover capabilities" (an empty object: no settings are defined).
    return {} if any(tool.task for tool in server.registered_tools()) else None


def intercept_call(connection: ServerConnection, tool: Any, arguments: dict, context: RequestContext,
                   run: Callable[[RequestContext], dict]) -> dict:
    """The ``tools/call`` interceptor (:data:`~mcp_ref.server.seams.ToolCallInterceptor`): a
    task-capable tool's call, from a client that declared the extension, may become a task where
    its handler calls ``ctx.start_task()``."""
    if tool.task is None or context.envelope is None:
        return run(context)
    if declared(context):
        state_of(context).task = MAY_START  # ctx.start_task() turns the call into a task
    elif tool.task == REQUIRED:
        # SEP-2663: a server "unable to service a request ... without returning CreateTaskResult
        # MUST return an error with the code -32021", naming the extension.
        raise missing(f"tool {tool.name} runs only as a task")
    try:
        return run(context)
    except StartTask:
        return begin(connection, context, run)


def begin(connection: ServerConnection, context: RequestContext, run: Callable[[RequestContext], dict]) -> dict:
    """``ctx.start_task()`` was reached: create the task, run the handler again on a task worker
    (``run(task_context)`` gives its result), and return the CreateTaskResult."""
    server = connection.server
    store = server.tasks
    # SEP-2663 §Security Implications ("Auth binding"): the task is its verified caller's; and every
    # caller, token or not, is counted against max_tasks_per_principal.
    task = store.create(connection.owner, connection.principal.id)
    inputs = state_of(context).inputs
    before = dict(inputs.answers) if inputs is not None else {}
    # a modern request (MAY_START is only set on one with an envelope); no log messages from a task
    quiet = replace(cast("Envelope", context.envelope), log_level=None)
    task_context = RequestContext(context.session, f"task:{task.id}", context.method, context.params)
    task_context.progress_token = None
    task_context.envelope = quiet
    state = task_context.role_state = RequestState()
    state.inputs = Inputs(dict(before))
    state.task = TaskRun(task, before, store)
    task_context.cancelled = task.cancelled

    def work() -> None:
        if not task.begin_run():
            return  # cancelled while it waited for a run slot: the handler never runs
        try:
            result = run(task_context)
        except RequestCancelled:
            task.finish(CANCELLED)
        except McpError as exc:
            # SEP-2663 §Task Execution Errors: a JSON-RPC error "moves to the failed status".
            task.finish(FAILED, error=exc.to_error(), message=exc.message)
        except BaseException:  # never leak internals to the client
            log.exception("task %s failed", task.id)
            task.finish(FAILED, error={"code": INTERNAL_ERROR, "message": "Internal error"},
                        message="the task failed with an internal error")
        else:
            # SEP-2663: a result, "even if isError: true", is completed; cancellation is cooperative.
            task.finish(COMPLETED, result=result)

    store.run(work)
    created = task.to_wire(detailed=False)
    created["resultType"] = TASK
    return created


# -- the methods ------------------------------------------------------------------------------------


def _task_of(connection: ServerConnection, context: RequestContext, params: dict, method: str) -> Task:
    """The task a ``tasks/*`` request names, after the capability check (SEP-2663: -32021 "for
    non-declaring clients issuing tasks/get, tasks/update, and tasks/cancel requests", checked
    before the id)."""
    if not declared(context):
        raise missing(f"{method} needs the {EXTENSION} extension")
    return connection.server.tasks.find(params.get("taskId"), connection.owner)


def get_task(connection: ServerConnection, context: RequestContext, params: dict) -> dict:
    """``tasks/get``: the task as it is now (SEP-2663 §Task Polling; ``resultType`` "complete")."""
    return _task_of(connection, context, params, "tasks/get").to_wire()


def update_task(connection: ServerConnection, context: RequestContext, params: dict) -> dict:
    """``tasks/update``: answers for the task's outstanding asks; an empty acknowledgement."""
    task = _task_of(connection, context, params, "tasks/update")
    responses = params.get("inputResponses")
    if not isinstance(responses, dict):
        raise InvalidParams("Invalid params: tasks/update needs an inputResponses object")
    task.update(responses)
    return {}


def cancel_task(connection: ServerConnection, context: RequestContext, params: dict) -> dict:
    """``tasks/cancel``: an empty acknowledgement, for a finished task too (cooperative cancellation)."""
    _task_of(connection, context, params, "tasks/cancel").cancel()
    return {}


HANDLERS = {"tasks/get": get_task, "tasks/update": update_task, "tasks/cancel": cancel_task}
