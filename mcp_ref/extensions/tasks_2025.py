"""The experimental tasks of 2025-11-25 (basic/utilities/tasks), server side.

A handshake-era client at 2025-11-25 augments a ``tools/call`` with ``params.task`` (``{ttl?}``);
the server answers at once with ``{"task": Task}`` (CreateTaskResult) and runs the tool on its task
workers.  The client polls ``tasks/get``, reads the outcome with ``tasks/result`` (which blocks
until the task ends), may list its tasks (``tasks/list``) and cancel one (``tasks/cancel``).  The
2026-07-28 extension (:mod:`mcp_ref.extensions.tasks`) is another protocol on the same store: installed
together, each answers only in its own era (an SDK speaking both "dispatch[es] on the negotiated
protocol version", SEP-2663 §Backward Compatibility).

Nothing changes for authors: a tool registered with ``@server.tool(task="optional"|"required")``
serves both eras.  Here it runs as a task from its first line, where ``ctx.start_task()`` returns
True at once.

* **Negotiation.**  At 2025-11-25 only, while some tool is task-capable, the server declares
  ``tasks: {list, cancel, requests: {tools: {call}}}`` (§Server Capabilities) and ``tools/list``
  gives those tools ``execution.taskSupport`` (:meth:`Tasks2025Extension.intercept_request`;
  §Tool-Level Negotiation).  ``task`` on a tool without task support is -32601 (SHOULD), a
  ``required`` tool called without it -32601 (MUST).  A server without task-capable tools declares
  nothing and ignores ``task`` (§Task Support and Handling).
* **Who sees a task.**  Its requestor: the verified principal (HTTP with authorization: "receivers
  MUST bind tasks to said context", §Task Isolation), else the session (an HTTP session, a stdio or
  in-memory connection; when it ends, its unfinished tasks are cancelled:
  :meth:`Tasks2025Extension.connection_ended`); another requestor's ``taskId`` is "not found"
  (-32602).  Over stateless HTTP without authorization requestors cannot be told apart: a task is
  then reachable by whoever holds its id (128 random bits, as §Task Isolation asks), and
  ``tasks.list`` is not declared (-32601).
* **Bounds** (§Resource Management): the store's (``max_tasks``, ``max_tasks_per_principal``,
  ``workers``, ``max_waiting``, ``input_timeout``); a requested ``ttl`` is capped by the store's
  ``ttl_ms`` and raised to :data:`MIN_TTL_MS`; at most :data:`MAX_RESULT_WAITERS` ``tasks/result``
  requests wait at once per store, :data:`MAX_RESULT_WAITERS_PER_CONNECTION` per connection (one more:
  -31000), each at most :data:`RESULT_WAIT` seconds (then
  -31000, saying the task goes on: poll ``tasks/get`` and ask again).
* **Outcome.**  A result ends the task ``completed``, or ``failed`` when it has ``isError: true``
  (§Task Execution Errors); ``tasks/result`` answers exactly that result, with
  ``_meta["io.modelcontextprotocol/related-task"]``.  A JSON-RPC error ends it ``failed``, and
  ``tasks/result`` answers the same error.  ``tasks/cancel`` moves a task to ``cancelled`` before it
  answers and asks the handler to stop (its late result is dropped: a terminal status is final);
  ``tasks/result`` of a cancelled task is -32602 (it has no result).
* **Input during a task** (§Input Required Status): ``ctx.elicit``, ``ctx.sample`` and
  ``ctx.list_roots`` send ordinary requests to the client, with the related-task ``_meta``; the task
  is ``input_required`` while one waits (giving its run slot up), ``working`` after.  Over HTTP they
  go on the stream of an open ``tasks/result`` request of the task (one that opens within
  :data:`INPUT_ROUTE_WAIT` seconds; a newer one takes the ask over, the client being told the older
  request is cancelled), else outside any request (the GET stream); progress notifications (the
  call's ``progressToken`` stays valid until the task ends) and log messages go the same way.  Each
  carries the related-task ``_meta``.
* **Status notifications**: ``notifications/tasks/status`` (the full Task, no related-task ``_meta``)
  as its handler moves the task (an ask sent, answered; the end), to the connection that created it
  (MAY: §Task Status Notification; requestors "MUST NOT rely on" them).

Several processes sharing the task records (``MCP_REF_STATE``) answer ``tasks/get``, ``tasks/list``,
``tasks/cancel`` and ``tasks/result`` from them (a ``tasks/result`` served by a process that does
not run the task rereads the record every second); messages of the task's handler go to the session
that created it.
"""

from __future__ import annotations

import itertools
import logging
import secrets
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, cast

from ..errors import InvalidParams, McpError, MethodNotFound, RequestCancelled, ServerBusy
from ..extension import Extension
from ..lifecycle import MODERN_VERSIONS
from ..request import DEFAULT, RequestContext
from ..server.seams import Caller, state_of
from ..state.stores import TERMINAL, iso_now
from . import tasks
from .tasks import Task, TaskStore
from .tasks_2026 import (
    CONTEXT_ATTRIBUTES,
    MARK,
    cancel_with_request,
    mode_of,
    run_task,
    store_of,
    task_capable,
)

__all__ = [
    "Tasks2025Extension",
    "TaskReceiver",
    "wire_of",
    "owner_of",
    "intercept_call",
    "TaskCaller",
    "Waiters",
]

log = logging.getLogger("mcp_ref.extensions.tasks")

#: The revision whose experimental tasks this module serves (the record's ``era`` too).
VERSION = "2025-11-25"
#: §Related Task Metadata: the ``_meta`` key tying a message to its task.
RELATED = "io.modelcontextprotocol/related-task"
#: The tasks' mark on a handler running as a 2025-11-25 task: ``ctx.start_task()`` is True.
RUNNING = "2025-11-25 task"
WORKING, COMPLETED, FAILED, CANCELLED = "working", "completed", "failed", "cancelled"
#: The shortest ``ttl`` granted (ms): a smaller request is raised to it (§TTL: receivers "MAY override").
MIN_TTL_MS = 1000
#: ``tasks/result`` requests waiting at once, per store; and how long each waits (seconds).
MAX_RESULT_WAITERS = 256
#: ... and at most this many of one connection's: each holds one of its handler threads (a stdio or
#: in-memory connection has 32), so tasks/get and tasks/cancel are still served while they wait.
MAX_RESULT_WAITERS_PER_CONNECTION = 8
RESULT_WAIT = 300.0
#: Seconds an ask of a task waits for a ``tasks/result`` of it to carry it, before it goes outside any request.
INPUT_ROUTE_WAIT = 2.0
#: Tasks per ``tasks/list`` page.
LIST_PAGE = 100
#: Seconds at most between a waiter's looks at the record (a change made by another process).
RECHECK = 1.0
#: The ``statusMessage`` of a task whose ``tools/call`` was cancelled before its CreateTaskResult went.
REQUEST_CANCELLED = (
    "The task was cancelled: its request was cancelled before the task was answered."
)
#: The longest ``statusMessage`` taken from a failed tool result.
MAX_MESSAGE = 200


def told(caller: Caller) -> bool:
    """True for a connection at 2025-11-25 that was told of the ``tasks`` capability."""
    return caller.protocol_version == VERSION and "tasks" in caller.capabilities


def intercept_call(
    caller: Caller,
    tool: Any,
    arguments: dict | None,
    context: RequestContext,
    run: Callable[[RequestContext], dict],
) -> dict:
    """The ``tools/call`` interceptor of the 2025-11-25 tasks: acts only on a handshake-era request
    at 2025-11-25 on a connection (``caller``) that was told of the ``tasks`` capability; otherwise the call runs."""
    if context.envelope is not None or not told(caller):
        # §Task Support and Handling: no capability declared, ``task`` is ignored
        return run(context)
    wanted = context.params.get("task")
    mode = mode_of(tool)
    # invalid arguments of a tool that is never a task: run answers
    if arguments is None and mode is None:
        return run(context)
    if wanted is None:
        if mode == "required":
            # §Tool-Level Negotiation: "Servers MUST return a -32601 (Method not found) error if a
            # client does not attempt to do so."
            raise MethodNotFound(
                f"Method not found: tool {tool.name} runs only as a task (add params.task)"
            )
        return run(context)
    if mode is None:
        # §Tool-Level Negotiation: taskSupport absent or "forbidden": "Servers SHOULD return a -32601".
        raise MethodNotFound(
            f"Method not found: tool {tool.name} does not run as a task (execution.taskSupport)"
        )
    ceiling = store_of(caller.server).ttl_ms
    ttl_ms = granted_ttl(wanted, ceiling, ceiling)
    return begin(caller, tool, context, run, ttl_ms)


# -- who a task belongs to ------------------------------------------------------------------------

_OWN_IDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_OWN_IDS_LOCK = threading.Lock()


def requestor(connection: Any) -> str | None:
    """Who is asking, as far as tasks go: the verified principal's id, else the session (an HTTP
    session's ``peer``, else this connection, named at random); None over stateless HTTP without
    authorization (``peer`` is the client's address: no session to bind to)."""
    if connection.auth is not None:
        return str(connection.principal.id)
    peer = getattr(connection, "peer", None)
    if isinstance(peer, str) and peer.startswith("http-client:"):
        return None
    if isinstance(peer, str) and peer.startswith("http-session:"):
        return peer  # every worker sharing the session names it so
    # stdio, in memory: this connection (two stdio processes never share "stdio")
    with _OWN_IDS_LOCK:
        own = _OWN_IDS.get(connection)
        if own is None:  # made once: random bytes are not drawn for every call
            own = _OWN_IDS[connection] = "connection:" + secrets.token_urlsafe(12)
        return own


def owner_of(connection: Any) -> str:
    """The ``owner`` of the records of this connection's 2025-11-25 tasks: its :func:`requestor`, in
    a namespace of its own (no 2026-07-28 task has it: neither era finds the other's tasks)."""
    who = requestor(connection)
    return f"{VERSION}|" + ("anyone" if who is None else who)


# -- the wire ----------------------------------------------------------------------------------------


def wire_of(record: dict) -> dict:
    """The 2025-11-25 ``Task`` of a record (:class:`~mcp_ref.state.stores.TaskRecords`): ``ttl``
    (an integer or null) and ``pollInterval`` where the 2026-07-28 one says ``ttlMs``/``pollIntervalMs``."""
    wire = tasks.wire_of(record, detailed=False)
    wire["ttl"] = wire.pop("ttlMs")
    poll = wire.pop("pollIntervalMs")
    if poll is not None:
        wire["pollInterval"] = poll
    return wire


def related(params: dict | None, task_id: str) -> dict:
    """``params`` with the related-task ``_meta`` (§Associating Task-Related Messages)."""
    params = dict(params or {})
    params["_meta"] = {**(params.get("_meta") or {}), RELATED: {"taskId": task_id}}
    return params


# -- the call ----------------------------------------------------------------------------------------


def granted_ttl(wanted: object, ceiling: int | None, default: int | None) -> int | None:
    """The ``ttl`` (ms) a task gets for ``params.task`` (TaskMetadata): the one asked for, capped by
    ``ceiling`` (None: no ceiling but :data:`~mcp_ref.extensions.tasks.LONGEST_TTL_MS`) and at least
    :data:`MIN_TTL_MS`; ``default`` without one.  §TTL and Resource Management: "Receivers MAY
    override the requested ttl duration" (the actual one is in the Task)."""
    if not isinstance(wanted, dict):
        raise InvalidParams('Invalid params: task must be an object ({"ttl": milliseconds})')
    ttl = wanted.get("ttl")
    if ttl is None:
        return default
    if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0:
        raise InvalidParams("Invalid params: task.ttl must be a whole number of milliseconds")
    ttl = max(ttl, MIN_TTL_MS)
    return min(ttl, tasks.LONGEST_TTL_MS if ceiling is None else ceiling)


def begin(
    connection: Caller,
    tool: Any,
    context: RequestContext,
    run: Callable[[RequestContext], dict],
    ttl_ms: int | None,
) -> dict:
    """Create the task, start its handler on the store's workers, and answer the CreateTaskResult
    (§Result Retrieval: "as soon as possible after accepting the task").  ``run`` is the rest of the
    ``tools/call`` chain (with invalid arguments, it gives the isError result the task fails with)."""
    store = store_of(connection.server)
    # counted against the client beyond its session (Principal.limit_id): a new session is free
    counted_as = connection.principal.limit_id
    context.check_cancelled()  # a call cancelled before its task exists makes none (tasks_2026.begin)
    task = store.create(owner_of(connection), counted_as, ttl_ms=ttl_ms, era=VERSION)
    # cancelled before the CreateTaskResult goes: no one gets its taskId, so the task is cancelled
    cancel_with_request(context, lambda: cancel(store, task, REQUEST_CANCELLED))
    caller = TaskCaller(connection, task, store)
    task_context = RequestContext(caller, f"task:{task.id}", context.method, context.params)
    task_context.progress_token = (
        context.progress_token
    )  # progress §Behavior Requirements 3: valid until it ends
    task_context.cancelled = task.cancelled
    state = state_of(task_context)
    state.mark(MARK, RUNNING)
    state.caller = caller  # the handler's Context sees the connection through the task

    def call() -> dict:
        # the rest of the tools/call chain: the interceptors of the extensions after this one (a
        # guard's refusal fails the task), then the tool; the same path a 2026-07-28 task takes
        return run(task_context)

    def record(result: dict) -> None:
        # progress §Behavior Requirements: "Progress notifications MUST stop after completion" (the
        # task's: its token lasts until then), also from a thread the handler left behind.
        task_context.end()
        settle(task, result)

    def after() -> None:
        task_context.end()
        caller.announce()

    created = wire_of(
        task.record()
    )  # as created (working): the work may end before the answer goes
    store.start(task, lambda: run_task(store, task, call, record, after))
    log.info("task %s created for tools/call %s", task.id, tool.name)
    return {"task": created}


def settle(task: Any, result: dict) -> None:
    """Record a 2025-11-25 task's result (§Task Execution Errors): "when the tool result has isError
    set to true, the task should reach failed status"; tasks/get "SHOULD include a statusMessage"."""
    if result.get("isError"):
        task.finish(FAILED, result=result, message=failure_message(result))
    else:
        task.finish(COMPLETED, result=result)
    log.info("task %s ended %s", task.id, task.status)


def failure_message(result: dict) -> str:
    """A failed tool result's ``statusMessage``: its first text, shortened."""
    text = next(
        (
            block.get("text")
            for block in result.get("content") or []
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ),
        None,
    )
    if not text:
        return "Tool execution failed"
    return "Tool execution failed: " + (
        text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."
    )


# -- the handler's view of the connection --------------------------------------------------------------


class TaskCaller:
    """The connection as the handler of a 2025-11-25 task sees it (its ``Context``'s, and the
    ``session`` its progress goes through): what it sends the client carries the related-task
    ``_meta`` and goes where :meth:`route` says; a request to the client makes the task
    ``input_required`` until its answer comes.  Anything else is the connection's own."""

    def __init__(self, connection: Any, task: Any, store: Any):
        self.connection = connection
        self.task = task
        self.store = store
        self._keys = itertools.count(1)
        self._announced: str | None = WORKING  # the status last sent in notifications/tasks/status

    def __getattr__(self, name: str) -> Any:
        if name == "connection":  # not set yet (a copy being made): no recursion
            raise AttributeError(name)
        return getattr(self.connection, name)

    def route(self, wait: float = 0.0) -> tuple[Any, Any]:
        """``(connection, request id)`` a message of the task goes on: the latest open ``tasks/result``
        of the task in this process (its stream, over HTTP; waiting at most ``wait`` seconds for one),
        else the task's own connection, related to no request (§Input Required Status: clients "SHOULD
        expect messages to be delivered on any SSE stream, including the HTTP GET stream")."""
        found = waiters_of(self.store).latest(self.task.id, wait, self.task.cancelled)
        return found if found is not None else (self.connection, None)

    def protocol_version_at_least(self, revision: str) -> bool:
        """As the connection's session (the task's progress goes through this object)."""
        return bool(self.connection.session.protocol_version_at_least(revision))

    def notify(
        self, method: str, params: dict | None = None, *, related_request_id: Any = None
    ) -> None:
        """Send a notification of the task (progress, a log message ...), with the related-task ``_meta``."""
        target, request_id = self.route()
        target.notify(method, related(params, self.task.id), related_request_id=request_id)

    def log(
        self,
        level: str,
        data: Any,
        logger: str | None = None,
        *,
        related_request_id: Any = None,
        envelope: Any = None,
    ) -> bool:
        """``notifications/message`` at the connection's level (``logging/setLevel``), tied to the task."""
        from ..server.logging import log_message

        params = log_message(level, data, logger, self.connection.log_level)
        if params is None:
            return False
        self.notify("notifications/message", params)
        return True

    def request(
        self,
        method: str,
        params: dict | None,
        *,
        timeout: Any = DEFAULT,
        related_request_id: Any = None,
    ) -> dict:
        """Ask the client (``elicitation/create``, ``sampling/createMessage``, ``roots/list``) for the task.

        The task is ``input_required`` while the answer is awaited (§Input Required Status: the
        receiver "SHOULD move the task to the input_required status"), and gives its run slot up;
        ``working`` again once no ask is outstanding.  ``timeout``: the ask's own, else the store's
        ``input_timeout``.  A cancel of the task cancels the request (the client is told)."""
        task, records = self.task, self.store.records
        key = f"ask-{next(self._keys)}"
        if not records.put_inputs(task.id, {key: {"method": method, "params": params or {}}}):
            raise RequestCancelled(f"task {task.id} ended")
        self.announce()
        try:
            with self.store.waiting_for_input():
                return self._ask(
                    method,
                    related(params, task.id),
                    self.store.input_timeout if timeout is DEFAULT else timeout,
                )
        finally:
            records.withdraw_inputs(task.id, [key])
            self.announce()

    def _ask(self, method: str, params: dict, timeout: float | None) -> dict:
        """Send one ask and wait for its answer.  Sent on a ``tasks/result`` stream, it moves to a newer
        ``tasks/result`` of the task when one opens (the client left the first: "clients MAY disconnect
        from an SSE stream opened by the server in response to a tasks/result request at any time"):
        the first request is cancelled (the client is told) and the ask sent again there."""
        task, waiters = self.task, waiters_of(self.store)
        # the requestor, seeing input_required, "SHOULD preemptively call tasks/result": its stream carries the ask
        target, request_id = self.route(INPUT_ROUTE_WAIT)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            target.lifecycle.check_send(
                method
            )  # CapabilityError when the connection may not send it now
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            # the tasks/result only carries the ask (its stream): the ask outlives it, and moves
            # to a newer one (below) when the client leaves it, or cancels it as a timeout
            pending = target.session.send_request(
                method, params, timeout=left, related_request_id=request_id, outlives_related=True
            )
            pending.add_done_callback(lambda _pending: task.wake())
            moved = None
            with task.lock:
                while not pending.done() and not task.cancelled.is_set():
                    if pending.deadline is not None and time.monotonic() >= pending.deadline:
                        break  # result() below times out (and tells the client)
                    latest = waiters.latest(task.id)
                    if (
                        request_id is not None
                        and latest is not None
                        and latest != (target, request_id)
                    ):
                        moved = latest
                        break
                    task.lock.wait(RECHECK)
            if moved is not None and pending.cancel(
                "asked again on a newer tasks/result of the task"
            ):
                target, request_id = moved
                continue
            if task.cancelled.is_set() and not pending.done():
                pending.cancel("the task was cancelled")
            return cast(dict, pending.result())

    def announce(self) -> None:
        """``notifications/tasks/status`` when the status changed since the last one sent (MAY: §Task
        Status Notification; the full Task, without the related-task ``_meta``, §Task Notifications)."""
        try:
            record = self.store.records.get(self.task.id)
        except McpError as exc:  # a shared store unreachable: the notification is optional
            log.debug("task %s: no status notification (%s)", self.task.id, exc.message)
            return
        if record is None or record["status"] == self._announced:
            return
        self._announced = record["status"]
        self.connection.notify("notifications/tasks/status", wire_of(record))


# -- the open tasks/result requests ---------------------------------------------------------------------


class Waiters:
    """The ``tasks/result`` requests waiting in this process, by task: at most ``limit`` at once
    (one more is refused, -31000).  The latest of a task's is where its messages go."""

    def __init__(
        self,
        limit: int = MAX_RESULT_WAITERS,
        per_connection: int = MAX_RESULT_WAITERS_PER_CONNECTION,
    ):
        self.limit = limit
        self.per_connection = per_connection
        self._cond = threading.Condition()
        self._open: dict[str, list[tuple[Any, Any]]] = {}
        self._count = 0
        # waiting requests per connection (bounded by limit)
        self._of_connection: Counter[Any] = Counter()

    @contextmanager
    def waiting(self, task_id: str, connection: Any, request_id: Any) -> Iterator[None]:
        """Around one ``tasks/result`` request's wait for its task."""
        entry = (connection, request_id)
        with self._cond:
            full = self._count >= self.limit
            if full or self._of_connection[connection] >= self.per_connection:
                limit = self.limit if full else self.per_connection
                raise ServerBusy(
                    f"Busy: {limit} tasks/result requests are waiting already; poll "
                    "tasks/get and retry later",
                    data={"maxWaiters": limit},
                )
            self._open.setdefault(task_id, []).append(entry)
            self._count += 1
            self._of_connection[connection] += 1
            self._cond.notify_all()
        try:
            yield
        finally:
            with self._cond:
                entries = self._open[task_id]
                entries.remove(entry)
                if not entries:
                    del self._open[task_id]
                self._count -= 1
                self._of_connection[connection] -= 1
                if not self._of_connection[connection]:
                    del self._of_connection[connection]

    def latest(
        self, task_id: str, wait: float = 0.0, stop: threading.Event | None = None
    ) -> tuple[Any, Any] | None:
        """The latest open ``tasks/result`` of ``task_id``: ``(connection, request id)``; or None when
        none opens within ``wait`` seconds (or ``stop`` is set)."""
        deadline = time.monotonic() + wait
        with self._cond:
            while True:
                entries = self._open.get(task_id)
                if entries:
                    return entries[-1]
                left = deadline - time.monotonic()
                if left <= 0 or (stop is not None and stop.is_set()):
                    return None
                self._cond.wait(min(left, RECHECK))

    def __len__(self) -> int:
        return self._count


_WAITERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_WAITERS_LOCK = threading.Lock()


def waiters_of(store: Any) -> Waiters:
    """The :class:`Waiters` of a task store (made on first use)."""
    with _WAITERS_LOCK:
        waiters = _WAITERS.get(store)
        if waiters is None:
            waiters = _WAITERS[store] = Waiters()
        return waiters


# -- the methods --------------------------------------------------------------------------------------


class TaskReceiver(Extension):
    """The receiver of 2025-11-25 tasks (§Definitions: it "can be the client or the server"): it
    answers the requestor's ``tasks/get``, ``tasks/result``, ``tasks/list`` and ``tasks/cancel`` from a
    :class:`~mcp_ref.extensions.tasks.TaskStore`.  The server's (:class:`Tasks2025Extension`) and the
    client's (:class:`~mcp_ref.extensions.hosted_tasks.HostedTasks`) differ only where their roles
    do: where the store is, who owns a task and to whom the methods are offered (:meth:`tasks_of`),
    and what ``tasks/result`` answers for a cancelled task (:meth:`no_result`)."""

    @property
    def page_size(self) -> int:
        """Tasks per ``tasks/list`` page (:data:`LIST_PAGE`)."""
        return LIST_PAGE

    def tasks_of(self, connection: Any, method: str) -> tuple[TaskStore, str | None]:
        """The store and the owner of ``connection``'s tasks; -32601 unless it is offered ``method``."""
        raise NotImplementedError

    def no_result(self, task_id: str) -> McpError:
        """``tasks/result`` of a cancelled task: -32602, it has no result."""
        return InvalidParams(f"Invalid params: task {task_id!r} was cancelled: it has no result")

    def methods(self, version: str | None) -> dict[str, Callable[..., Any]]:
        """The handshake era's ``tasks/*`` (each answers only at 2025-11-25: :meth:`tasks_of`)."""
        if version in MODERN_VERSIONS:
            return {}
        return {
            "tasks/get": self.get_task,
            "tasks/result": self.task_result,
            "tasks/list": self.list_tasks,
            "tasks/cancel": self.cancel_task,
        }

    def _task_of(self, connection: Any, params: dict, method: str) -> tuple[TaskStore, Task]:
        """The store, and the task ``params.taskId`` names if this requestor's (§Protocol Errors: an
        invalid or nonexistent taskId is -32602; §Task Isolation: so is another requestor's)."""
        store, owner = self.tasks_of(connection, method)
        task = store.find(params.get("taskId"), owner)
        if task.record().get("era") != VERSION:  # a 2026-07-28 task (never the case: owners differ)
            raise InvalidParams(
                f"Invalid params: no task {task.id!r} (it does not exist, or has expired)"
            )
        return store, task

    def get_task(self, connection: Any, context: RequestContext, params: dict) -> dict:
        """``tasks/get``: the Task as it is now (§Getting Tasks)."""
        return wire_of(self._task_of(connection, params, "tasks/get")[1].record())

    def task_result(self, connection: Any, context: RequestContext, params: dict) -> dict:
        """``tasks/result``: once the task has ended, exactly what the request would have answered,
        with the related-task ``_meta``; or the same JSON-RPC error (§Result Retrieval: it "MUST block
        the response until the task reaches a terminal status").  Bounded: see :data:`RESULT_WAIT`,
        :data:`MAX_RESULT_WAITERS`."""
        store, task = self._task_of(connection, params, "tasks/result")
        with waiters_of(store).waiting(task.id, connection, context.request_id):
            task.wake()  # an ask of the task waiting on an older tasks/result moves here (TaskCaller._ask)
            record = _ended(task, store.records, context, time.monotonic() + RESULT_WAIT)
        if record.get("result") is not None:  # completed, or failed with an isError result
            return related(record["result"], task.id)
        if record.get("error") is not None:
            raise McpError.from_error(record["error"])
        raise self.no_result(task.id)

    def list_tasks(self, connection: Any, context: RequestContext, params: dict) -> dict:
        """``tasks/list``: one page of this requestor's tasks (§Listing Tasks); a bad cursor is -32602."""
        store, owner = self.tasks_of(connection, "tasks/list")
        cursor = params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise InvalidParams("Invalid params: cursor must be a string")
        records, next_cursor = store.records.list(owner, cursor, self.page_size)
        result: dict[str, Any] = {"tasks": [wire_of(record) for record in records]}
        if next_cursor is not None:
            # "MUST include a nextCursor ... if more tasks are available"
            result["nextCursor"] = next_cursor
        return result

    def cancel_task(self, connection: Any, context: RequestContext, params: dict) -> dict:
        """``tasks/cancel``: the task moves to ``cancelled`` before the answer (§Task Cancellation: it
        "MUST transition the task to cancelled status before sending the response", and stays so); its
        handler is asked to stop.  A terminal task: -32602."""
        store, task = self._task_of(connection, params, "tasks/cancel")
        record = cancel(store, task, "The task was cancelled by request.")
        if record is None:  # terminal already (or expired just now)
            status = task.record()["status"]
            raise InvalidParams(
                f"Invalid params: cannot cancel task {task.id!r}: already in terminal status {status!r}"
            )
        log.info("task %s cancelled", task.id)
        return wire_of(record)


def cancel(store: TaskStore, task: Task, message: str) -> dict | None:
    """Move ``task`` to ``cancelled`` (§Task Cancellation: receivers "MUST transition the task to
    cancelled status before sending the response", and it stays so) and ask its handler to stop;
    the record after, or None when it was terminal already (or just expired)."""
    changes = {
        "status": CANCELLED,
        "cancelRequested": True,
        "inputRequests": {},
        "statusMessage": message,
        "lastUpdatedAt": iso_now(),
    }
    record = store.records.transition(task.id, changes)
    if record is not None:
        store.cancel(task)  # wakes its handler here, or tells the process running it (the bus)
    return record


def cancel_unreachable(store: TaskStore, owner: str) -> int:
    """Cancel every unfinished task of ``owner``, a session or connection that ended (no requestor
    can reach its tasks any more: :meth:`Tasks2025Extension.connection_ended`); how many were
    cancelled."""
    cursor, cancelled = None, 0
    while True:
        records, cursor = store.records.list(owner, cursor, LIST_PAGE)
        for record in records:
            if record["status"] in TERMINAL:
                continue
            try:
                task = store.find(record["taskId"], owner)
            except InvalidParams:  # expired meanwhile
                continue
            if cancel(store, task, "The task was cancelled: the session that created it ended."):
                log.info("task %s cancelled: the session that created it ended", task.id)
                cancelled += 1
        if cursor is None:
            return cancelled


def _ended(task: Any, records: Any, context: RequestContext, deadline: float) -> dict:
    """The task's record once terminal; -32602 if it expires meanwhile (its handler is told to stop),
    -31000 past ``deadline``."""
    with task.lock:  # its handler (in this process) wakes it as the record changes
        while True:
            record = records.get(task.id)
            if record is None:
                task.cancelled.set()
                raise InvalidParams(f"Invalid params: task {task.id!r} has expired")
            if record["status"] in TERMINAL:
                return dict(record)
            context.check_cancelled()  # the client gave up this tasks/result: no answer
            left = deadline - time.monotonic()
            if left <= 0:
                raise ServerBusy(
                    f"Task {task.id} is still {record['status']} after {RESULT_WAIT:g} s; it goes on: "
                    "poll tasks/get and call tasks/result again",
                    data={"taskId": task.id},
                )
            task.lock.wait(min(left, RECHECK))


class Tasks2025Extension(TaskReceiver):
    """The experimental tasks of 2025-11-25 on a server, on the store of the 2026-07-28
    :class:`~mcp_ref.extensions.tasks_2026.TasksExtension` it follows (``server.tasks`` installs both):
    ``tasks/get``, ``tasks/result``, ``tasks/list`` and ``tasks/cancel`` as handshake-era methods,
    a ``tools/call`` interceptor, the ``tasks`` capability, and ``execution.taskSupport`` in the
    ``tools/list`` of a connection told of it."""

    name = "tasks-2025-11-25"
    #: The server it serves (:meth:`setup`).
    server: Any = None

    def setup(self, host: Any) -> None:
        """Remember the server (its tools say what is task-capable)."""
        self.server = host

    def capabilities(self, version: str | None, peer: Any = None) -> dict | None:
        """``{"tasks": ...}`` at 2025-11-25 (only) while some tool is task-capable; ``list`` unless
        ``peer`` cannot be told apart from other requestors (§Task Isolation: such receivers
        "SHOULD NOT declare the tasks.list capability")."""
        if version != VERSION or not task_capable(self.server):
            return None
        capability: dict[str, Any] = {"cancel": {}, "requests": {"tools": {"call": {}}}}
        if peer is None or requestor(peer) is not None:
            capability = {"list": {}, **capability}
        return {"tasks": capability}

    def tasks_of(self, connection: Caller, method: str) -> tuple[TaskStore, str | None]:
        """The server's store, and the :func:`owner_of` the connection; -32601 unless it speaks
        2025-11-25 and was told of the ``tasks`` capability, and for ``tasks/list`` unless its
        requestor can be told apart (it is not declared to such a requestor, §Task Isolation)."""
        if not told(connection):
            raise MethodNotFound(f"Method not found: {method}")
        if method == "tasks/list" and requestor(connection) is None:
            raise MethodNotFound(
                "Method not found: tasks/list (this server cannot tell requestors apart here)"
            )
        return store_of(self.server), owner_of(connection)

    def intercept_request(self, call: Any, proceed: Callable[[], Any]) -> Any:
        """``tools/list`` at 2025-11-25, to a connection told of the ``tasks`` capability: each
        task-capable tool with ``execution.taskSupport`` (§Tool-Level Negotiation: absent means
        "forbidden", the default)."""
        result = proceed()
        caller = call.caller
        if call.method != "tools/list" or call.context.envelope is not None or not told(caller):
            return result
        tools = []
        for item in result.get("tools", ()):
            tool = self.server.get_tool(item.get("name"))
            mode = None if tool is None else mode_of(tool)
            tools.append(item if mode is None else {**item, "execution": {"taskSupport": mode}})
        return {**result, "tools": tools}

    #: The ``tools/call`` interceptor (:func:`intercept_call`).
    intercept_tool_call = staticmethod(intercept_call)

    def connection_ended(self, connection: Any) -> None:
        """The connection's unfinished tasks are cancelled when no one else can reach them: those of
        a connection without a token, whose requestor was the connection itself (:func:`requestor`):
        an HTTP session that ended for good, a stdio or in-memory connection whose input ended or
        that was closed.  Their records stay, ``cancelled``, until their ttl (the first a full
        store forgets).

        §Task Isolation: "When an authorization context is provided, receivers MUST bind tasks to
        said context"; without one ("Some MCP servers operate in environments without
        authorization, such as single-user tools, or use transports that don't support
        authorization": stdio, basic/authorization "SHOULD NOT follow this specification") this
        server binds them to the session or connection, so once it has ended (basic/transports
        §Session Management: the client's DELETE, or "The server MAY terminate the session at any
        time"; basic/lifecycle §Shutdown, stdio: the client closes "the input stream to the child
        process") no ``tasks/get``, ``tasks/result`` or ``tasks/cancel`` can name them, and no one
        can read their results.  Left to run, they would hold workers and count against the
        client's ``max_tasks_per_principal`` (``Principal.limit_id``: all its sessions) for up to
        their ``ttl``, while the refusal tells it to cancel what it cannot (§Resource Management:
        receivers SHOULD "Enforce limits on concurrent tasks per requestor", "Clean up expired
        tasks promptly to free resources").  A token's tasks are its principal's: they outlive the
        session, as the next session of the same principal may ask for them."""
        if not told(connection) or connection.auth is not None or requestor(connection) is None:
            return
        try:
            cancel_unreachable(store_of(self.server), owner_of(connection))
        except McpError as exc:  # a shared store out of reach: they end with their ttl instead
            log.warning("the ended connection's tasks could not be cancelled (%s)", exc.message)

    def context_attributes(self) -> dict[str, Callable[[Any], Any]]:
        """``ctx.start_task()`` (True at once in a 2025-11-25 task) and ``ctx.in_task``."""
        return CONTEXT_ATTRIBUTES
