"""2025-11-25 client-hosted tasks: ``Client(tasks=True)`` runs the server's task-augmented sampling and
elicitation requests as tasks it keeps, and answers the server's ``tasks/*`` requests about them.

2025-11-25 basic/utilities/tasks §Definitions: the *receiver* of a task-augmented request "can be the
client or the server"; a client receives ``sampling/createMessage`` and ``elicitation/create`` so
(§Client Capabilities).  The server is then the requestor: it sends the request with ``params.task:
{ttl?}``, is answered at once with a ``CreateTaskResult`` (``{"task": Task}``), polls ``tasks/get`` and
fetches the outcome with ``tasks/result`` (§Message Flow, "Task-Augmented Sampling Request").

:class:`HostedTasks` is a client extension (:mod:`mcp_ref.extension`) that ``Client(tasks=True)``
builds; ``client.hosted_tasks`` finds it.

* **The capability** (:meth:`HostedTasks.capabilities`, declared at 2025-11-25 only: 2026-07-28 removed client-hosted tasks, older revisions have no ``tasks`` capability):
  ``{"list": {}, "cancel": {}, "requests": {...}}``, ``requests`` naming ``sampling.createMessage``
  only with a sampling handler and ``elicitation.create`` only with an elicitation handler ("The set
  of capabilities in ``capabilities.tasks.requests`` is exhaustive", §Capability Negotiation).  On a
  connection that negotiated another revision nothing here is used: a ``task`` param is ignored
  (§Task Support and Handling 1: "MUST process requests of that type normally") and ``tasks/*``
  are -32601, as for a client without ``tasks=True``.
* **Accepting** (:meth:`HostedTasks.intercept_request`, around answering a sampling or elicitation
  request): the request passes the usual checks first — the lifecycle, the capability offered (a
  handler; else -32601), the client's ``server_request_limit`` (over it: -32005, no task is made;
  the shorthand puts the limit before this extension) and a well-formed ``task`` (an object whose
  ``ttl`` is a non-negative integer; else -32602).  Then a task is made (status
  ``working``, §Task Status Lifecycle 1), its work queued on the store's workers, and
  ``{"task": Task}`` answered at once (§Result Retrieval 1: "as soon as possible").  The work runs
  the rest of the request's way — the client's ``approve`` hook (a refusal is the task's outcome: an
  elicitation ``decline``, a sampling error -1), then the handler — exactly as an ordinary request would; its result makes
  the task ``completed``, its JSON-RPC error ``failed`` (statusMessage: the error's message,
  §Task Execution Errors).  The handler's ``context.is_cancelled`` turns True on ``tasks/cancel``,
  when the task expires, and when the connection ends.
* **Answering** (:meth:`HostedTasks.methods`) ``tasks/get`` (the Task), ``tasks/result`` (blocks until the task is terminal, then
  exactly the underlying result with ``_meta["io.modelcontextprotocol/related-task"]``, or the same
  JSON-RPC error; §Result Retrieval 2-4, §Related Task Metadata), ``tasks/list`` (by creation,
  :attr:`HostedTasks.page_size` a page, an opaque ``nextCursor``; a cursor not ours: -32602) and
  ``tasks/cancel`` (a working task becomes ``cancelled`` before the answer, and stays so even if its
  handler then finishes; a terminal one: -32602; §Task Cancellation).  An unknown or expired
  ``taskId``: -32602 (§Protocol Errors).  No ``notifications/tasks/status`` are sent (a MAY).

Bounds, each with its policy (§Resource Management asks receivers to enforce and document them):

* ``max_tasks`` (:data:`MAX_TASKS`) tasks kept at once, working or finished.  A new task first drops
  expired ones, then cancelled ones (which "MAY" be deleted "at any time", §Task Cancellation 4); if
  the store is still full the request is refused with -32000 (:class:`~mcp_ref.errors.ServerBusy`,
  a JSON-RPC implementation-defined server error, ``data.maxTasks``) and no task is made.
* ``max_running`` (:data:`MAX_RUNNING`) handlers run at once, on the daemon threads of a
  :class:`~mcp_ref.extensions.task_pool.TaskPool`; later tasks wait, ``working``, in its queue (bounded
  by ``max_tasks``).
* TTL: the requested ``ttl`` clamped to [:data:`MIN_TTL_MS`, ``max_ttl_ms`` (:data:`MAX_TTL_MS`, one
  hour)], :data:`DEFAULT_TTL_MS` when none is asked for ("Receivers MAY override the requested ttl",
  §TTL and Resource Management 3); the actual value is in every Task.  Past it the task is deleted
  (and its handler told to stop): its id is then unknown (-32602).  Expiry is checked on every
  operation of the store, so no thread is needed for it.
* ``tasks/result`` waits on one of the connection's handler threads (never the reader), so at most
  ``max_result_waiters`` (:data:`MAX_RESULT_WAITERS`, well under the session's 32 handler threads,
  so ``tasks/get`` is always served) wait at once; one more is refused with -32000.  A wait ends
  when the task is terminal, when it expires (-32602), when the server cancels the ``tasks/result``
  request, or when the connection ends.

Task ids are random UUIDs (122 bits from ``os.urandom``).  §Task Isolation: a client-hosted task
belongs to the one connection (so the one server) that made it, and only that connection's requests
reach this store: ``tasks/list`` shows nothing to anyone else.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import INTERNAL_ERROR, InvalidParams, McpError, RequestCancelled, ServerBusy
from ..extension import Extension
from ..session import RequestContext
from ..state.stores import TERMINAL, MemoryTaskQueue, cursor_position, iso_now, page_cursor
from .task_pool import TaskPool

if TYPE_CHECKING:
    from ..client.answering import IncomingRequest
    from ..client.interfaces import ClientSettings, Connection

log = logging.getLogger(__name__)

#: The one revision with client-hosted tasks (2026-07-28 removed them: SEP-2663 §Supported Methods).
VERSION = "2025-11-25"
#: The server's requests a client may run as tasks, and their path in ``capabilities.tasks.requests``.
AUGMENTABLE = {
    "sampling/createMessage": ("sampling", "createMessage"),
    "elicitation/create": ("elicitation", "create"),
}
#: The ``_meta`` key tying a message to its task (§Related Task Metadata).
RELATED_TASK = "io.modelcontextprotocol/related-task"
WORKING, COMPLETED, FAILED, CANCELLED = "working", "completed", "failed", "cancelled"

#: Tasks kept at once (working or finished); see the module docstring for the policy when full.
MAX_TASKS = 64
#: Handlers running at once.
MAX_RUNNING = 4
#: ``tasks/result`` requests waiting at once.
MAX_RESULT_WAITERS = 8
#: The TTL bounds, and the TTL of a task whose requestor asked for none (milliseconds).
MIN_TTL_MS, DEFAULT_TTL_MS, MAX_TTL_MS = 1_000, 600_000, 3_600_000
#: The ``pollInterval`` suggested to the requestor (milliseconds).
POLL_INTERVAL_MS = 1_000
#: Tasks in one ``tasks/list`` page.
PAGE_SIZE = 50
#: How often a waiting ``tasks/result`` looks whether its request was cancelled or the connection
#: ended (seconds); the task's end wakes it at once.
WAKE_SECONDS = 0.25
#: What a cancelled task's ``tasks/result`` answers: the underlying request never finished, so there
#: is no result to return; -32603 as §Protocol Errors allows, saying why.
CANCELLED_MESSAGE = "Task {task_id} was cancelled"


class HostedTask:
    """One client-hosted task: its wire fields, its outcome, and the events its waiters use."""

    def __init__(self, number: int, method: str, ttl_ms: int, poll_interval_ms: int, now: float):
        #: The task's id (a random UUID: unguessable, §Task Isolation).
        self.task_id = str(uuid.uuid4())
        #: Its place in creation order (the ``tasks/list`` cursor).
        self.number = number
        #: The request it runs (``sampling/createMessage`` or ``elicitation/create``).
        self.method = method
        self.status = WORKING
        self.status_message: str | None = None
        self.created_at = self.updated_at = iso_now()
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        #: When it may be deleted (in seconds of its store's ``clock``).
        self.expires = now + ttl_ms / 1000
        #: The underlying request's result (``completed``), or its JSON-RPC error (``failed``).
        self.result: dict | None = None
        self.error: dict | None = None
        #: Set when the task is terminal (or deleted): ``tasks/result`` waits on it.
        self.done = threading.Event()
        #: Set when the handler should stop: the handler's ``context.cancelled``.
        self.cancelled = threading.Event()

    def wire(self) -> dict:
        """The 2025-11-25 ``Task`` (schema ``Task``: ttl and both timestamps always present)."""
        task: dict[str, Any] = {"taskId": self.task_id, "status": self.status}
        if self.status_message is not None:
            task["statusMessage"] = self.status_message
        task.update(
            createdAt=self.created_at,
            lastUpdatedAt=self.updated_at,
            ttl=self.ttl_ms,
            pollInterval=self.poll_interval_ms,
        )
        return task

    def move(self, status: str, message: str | None) -> None:
        """(Holding the store's lock) take a new status and stamp ``lastUpdatedAt``."""
        self.status, self.status_message, self.updated_at = status, message, iso_now()


class HostedTasks(Extension):
    """The store of one client's hosted tasks (``client.hosted_tasks`` with ``Client(tasks=True)``).

    Its limits are attributes, read when used (change them before the first task; the number of
    running handlers is fixed when the first task starts): ``max_tasks``, ``max_running``,
    ``max_result_waiters``, ``default_ttl_ms``, ``max_ttl_ms``, ``poll_interval_ms``, ``page_size``.
    ``clock`` (monotonic seconds) measures the TTLs: a test moves it instead of sleeping.  See the
    module docstring.
    """

    name = "client-hosted tasks"
    #: The client it serves (set by :meth:`setup`).
    client: ClientSettings | None = None
    max_tasks = MAX_TASKS
    max_running = MAX_RUNNING
    max_result_waiters = MAX_RESULT_WAITERS
    default_ttl_ms = DEFAULT_TTL_MS
    max_ttl_ms = MAX_TTL_MS
    poll_interval_ms = POLL_INTERVAL_MS
    page_size = PAGE_SIZE

    def __init__(self) -> None:
        self.clock = time.monotonic
        self._lock = threading.Lock()
        self._tasks: OrderedDict[str, HostedTask] = OrderedDict()
        self._numbers = 0
        self._waiters = 0
        self._pool: TaskPool | None = None
        self._watching = False

    # -- the extension's hooks -----------------------------------------------------------------------

    def setup(self, host: ClientSettings) -> None:
        """Keep the client: its handlers say which requests may become tasks."""
        self.client = host

    def capabilities(self, version: str | None, peer: Any = None) -> dict | None:
        """``capabilities.tasks`` at 2025-11-25 only (§Client Capabilities): list, cancel, and the
        request types this client has a handler for (the ``requests`` object is exhaustive)."""
        if version != VERSION or self.client is None:
            return None
        requests: dict[str, dict] = {}
        if self.client.sampling_handler is not None:
            requests["sampling"] = {"createMessage": {}}
        if self.client.elicitation_handler is not None:
            requests["elicitation"] = {"create": {}}
        return {"tasks": {"list": {}, "cancel": {}, "requests": requests}}

    def methods(self, version: str | None) -> dict[str, Any]:
        """``tasks/*`` on a connection that negotiated 2025-11-25 (elsewhere -32601, as without ``tasks=True``)."""
        if version != VERSION:
            return {}
        return {
            "tasks/get": self._get,
            "tasks/result": self._result,
            "tasks/list": self._list,
            "tasks/cancel": self._cancel,
        }

    def intercept_request(self, call: IncomingRequest, proceed: Callable[[], Any]) -> Any:
        """A sampling or elicitation request carrying ``task`` at 2025-11-25 becomes a task, whose
        work is ``proceed()`` on a worker; the others go on."""
        connection = call.connection
        if (
            call.method not in AUGMENTABLE
            or "task" not in call.params
            or connection.protocol_version != VERSION
        ):
            return proceed()
        return self._accept(call, proceed)

    # -- making and running tasks ------------------------------------------------------------------

    def _accept(self, call: IncomingRequest, proceed: Callable[[], Any]) -> dict:
        connection, context, method = call.connection, call.context, call.method
        ttl_ms = self._ttl(call.params["task"])
        task = self._create(method, ttl_ms)
        # The handler's context: the request's own (its progressToken stays valid, §Task Progress
        # Notifications) but cancelled by tasks/cancel, expiry or the connection's end.
        task_context = RequestContext(context.session, context.request_id, method, call.params)
        task_context.cancelled = task.cancelled
        call.context = task_context
        pool = self._start(connection)
        try:
            pool.run(lambda: self._work(task, proceed), task.task_id)
        except ServerBusy:
            with self._lock:
                self._tasks.pop(task.task_id, None)
            raise
        log.info(
            "client-hosted task %s: %s accepted (ttl %d ms)", task.task_id, method, task.ttl_ms
        )
        return {"task": task.wire()}

    def _ttl(self, meta: Any) -> int:
        if not isinstance(meta, dict):
            raise InvalidParams("Invalid params: task must be an object (TaskMetadata)")
        ttl = meta.get("ttl")
        if ttl is None:
            return self.default_ttl_ms
        if isinstance(ttl, bool) or not isinstance(ttl, int) or ttl < 0:
            raise InvalidParams(
                "Invalid params: task.ttl must be a non-negative integer of milliseconds"
            )
        return min(
            max(ttl, MIN_TTL_MS), self.max_ttl_ms
        )  # §TTL and Resource Management 3: MAY override

    def _create(self, method: str, ttl_ms: int) -> HostedTask:
        with self._lock:
            self._purge()
            if len(self._tasks) >= self.max_tasks:
                for task_id in [t.task_id for t in self._tasks.values() if t.status == CANCELLED]:
                    del self._tasks[
                        task_id
                    ]  # §Task Cancellation 4: cancelled tasks MAY be deleted at any time
                    if len(self._tasks) < self.max_tasks:
                        break
            if len(self._tasks) >= self.max_tasks:
                log.warning(
                    "refused a client-hosted task for the server's %s: %d tasks kept already",
                    method,
                    self.max_tasks,
                )
                raise ServerBusy(
                    f"Client busy: it keeps {self.max_tasks} tasks already; retry when some have "
                    "expired",
                    data={"maxTasks": self.max_tasks},
                )
            self._numbers += 1
            task = HostedTask(self._numbers, method, ttl_ms, self.poll_interval_ms, self.clock())
            self._tasks[task.task_id] = task
            return task

    def _start(self, connection: Connection) -> TaskPool:
        with self._lock:
            if self._pool is None:
                self._pool = TaskPool(self.max_running, 0, MemoryTaskQueue(self.max_tasks))
                self._pool.max_tasks = self.max_tasks
            if (
                not self._watching
            ):  # when the connection ends, every task still working is told to stop
                self._watching = True
                threading.Thread(
                    target=self._watch,
                    args=(connection,),
                    name="mcp-hosted-tasks-watch",
                    daemon=True,
                ).start()
            return self._pool

    def _watch(self, connection: Connection) -> None:
        connection.session.closed.wait()
        with self._lock:
            tasks = [t for t in self._tasks.values() if t.status not in TERMINAL]
        for task in tasks:
            task.cancelled.set()

    def _work(self, task: HostedTask, proceed: Callable[[], Any]) -> None:
        """On a worker: the rest of the request's way (the approve hook, the handler); its outcome ends the task."""
        if task.cancelled.is_set():
            return  # cancelled (or expired) before a worker took it
        method = task.method
        try:
            result = proceed()
        except McpError as exc:
            self._finish(task, error=exc.to_error())
        except RequestCancelled:
            self._finish(
                task,
                error={
                    "code": INTERNAL_ERROR,
                    "message": CANCELLED_MESSAGE.format(task_id=task.task_id),
                },
            )
        except Exception:  # never leak internals to the peer
            log.exception("client-hosted task %s: the handler of %s failed", task.task_id, method)
            self._finish(task, error={"code": INTERNAL_ERROR, "message": "Internal error"})
        else:
            self._finish(task, result=result)

    def _finish(
        self, task: HostedTask, *, result: dict | None = None, error: dict | None = None
    ) -> None:
        with self._lock:
            if task.status in TERMINAL:
                return  # §Task Cancellation 3: a cancelled task "MUST remain in cancelled status"
            task.result, task.error = result, error
            # §Task Execution Errors: failed, with "a statusMessage field with diagnostic information".
            if error is not None:
                task.move(FAILED, str(error.get("message")))
            else:
                task.move(COMPLETED, None)
        task.done.set()
        log.info("client-hosted task %s: %s", task.task_id, task.status)

    # -- the store ---------------------------------------------------------------------------------

    def _purge(self) -> None:
        """(Holding the lock) delete the tasks past their TTL (§TTL and Resource Management 5), telling
        their handlers to stop and their waiters to look again."""
        now = self.clock()
        for task_id in [t.task_id for t in self._tasks.values() if t.expires <= now]:
            task = self._tasks.pop(task_id)
            task.cancelled.set()
            task.done.set()

    def _find(self, params: dict) -> HostedTask:
        """(Holding the lock) the task ``params.taskId`` names; -32602 when it names none (now)."""
        task_id = params.get("taskId")
        if not isinstance(task_id, str):
            raise InvalidParams("Invalid params: taskId must be a string")
        self._purge()
        task = self._tasks.get(task_id)
        if task is None:
            # §Protocol Errors: "Invalid or nonexistent taskId ...: -32602"; an expired task is purged.
            raise InvalidParams(
                "Failed to retrieve task: Task not found (unknown, or expired)",
                data={"taskId": task_id},
            )
        return task

    def _get(self, connection: Connection, context: RequestContext, params: dict) -> dict:
        with self._lock:
            return self._find(params).wire()

    def _result(self, connection: Connection, context: RequestContext, params: dict) -> dict:
        with self._lock:
            task = self._find(params)
            waiting = not task.done.is_set()
            if waiting:
                if self._waiters >= self.max_result_waiters:
                    raise ServerBusy(
                        f"Client busy: {self.max_result_waiters} tasks/result requests wait already; "
                        "poll tasks/get and retry",
                        data={"maxResultWaiters": self.max_result_waiters},
                    )
                self._waiters += 1
        if waiting:
            try:
                # §Result Retrieval 3: a task not yet terminal "MUST block the response until" it is.
                while not task.done.wait(max(0.0, min(WAKE_SECONDS, task.expires - self.clock()))):
                    if context.is_cancelled or connection.session.is_closed:
                        raise RequestCancelled(
                            "the tasks/result request ended before its task"
                        )  # no answer is sent
                    if self.clock() >= task.expires:
                        break
            finally:
                with self._lock:
                    self._waiters -= 1
        with self._lock:
            task = self._find(params)  # expired meanwhile: -32602
            if (
                task.status not in TERMINAL
            ):  # pragma: no cover - done is set only for terminal or deleted tasks
                raise McpError("Internal error: the task is not finished", code=INTERNAL_ERROR)
            result, error = task.result, task.error
        if result is None:
            # §Result Retrieval 4: "exactly what the underlying request would have returned": its error.
            raise McpError.from_error(
                error
                or {
                    "code": INTERNAL_ERROR,
                    "message": CANCELLED_MESSAGE.format(task_id=task.task_id),
                }
            )
        # §Related Task Metadata: tasks/result "MUST include this metadata in its response".
        return {
            **result,
            "_meta": {**(result.get("_meta") or {}), RELATED_TASK: {"taskId": task.task_id}},
        }

    def _list(self, connection: Connection, context: RequestContext, params: dict) -> dict:
        cursor = params.get("cursor")
        with self._lock:
            self._purge()
            try:
                after = cursor_position(None, cursor, self._numbers)
            except InvalidParams:
                # §Protocol Errors: "Invalid or nonexistent cursor in tasks/list: -32602".
                raise InvalidParams(
                    "Invalid params: a tasks/list cursor this client did not give",
                    data={"cursor": cursor},
                ) from None
            later = [t for t in self._tasks.values() if t.number > after]
            page = later[: self.page_size]
            result: dict[str, Any] = {"tasks": [t.wire() for t in page]}
            if len(later) > len(page):
                # §Task Listing 2: "MUST include a nextCursor in the response if more tasks are available".
                result["nextCursor"] = page_cursor(None, page[-1].number)
        return result

    def _cancel(self, connection: Connection, context: RequestContext, params: dict) -> dict:
        with self._lock:
            task = self._find(params)
            if task.status in TERMINAL:
                # §Task Cancellation 1: "MUST reject cancellation requests for tasks already in a terminal status".
                raise InvalidParams(
                    f"Cannot cancel task: already in terminal status '{task.status}'",
                    data={"taskId": task.task_id, "status": task.status},
                )
            # §Task Cancellation 2: "MUST transition the task to cancelled status before sending the response".
            task.move(CANCELLED, "The task was cancelled by request.")
            wire = task.wire()
        task.cancelled.set()
        task.done.set()
        log.info("client-hosted task %s: cancelled by the server", task.task_id)
        return wire
