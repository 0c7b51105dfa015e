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
  handler; else -32601), the client's ``server_request_limit`` (over it: -31005, no task is made;
  the shorthand puts the limit before this extension) and a well-formed ``task`` (an object whose
  ``ttl`` is a non-negative integer; else -32602).  Then a task is made (status
  ``working``, §Task Status Lifecycle 1), its work queued on the store's workers, and
  ``{"task": Task}`` answered at once (§Result Retrieval 1: "as soon as possible").  The work runs
  the rest of the request's way — the client's ``approve`` hook (a refusal is the task's outcome: an
  elicitation ``decline``, a sampling error -1), then the handler — exactly as an ordinary request would; its result makes
  the task ``completed``, its JSON-RPC error ``failed`` (statusMessage: the error's message,
  §Task Execution Errors).  The handler's ``context.is_cancelled`` turns True on ``tasks/cancel``,
  when the task expires, and when the connection ends.
* **Answering** (:meth:`HostedTasks.methods`: the server's handlers,
  :class:`~mcp_ref.extensions.tasks_2025.TaskReceiver`, on the client's store) ``tasks/get`` (the
  Task), ``tasks/result`` (blocks until the task is terminal, then exactly the underlying result
  with ``_meta["io.modelcontextprotocol/related-task"]``, or the same JSON-RPC error; a cancelled
  task's is -32603, it has no result; §Result Retrieval 2-4, §Related Task Metadata), ``tasks/list``
  (by creation, :attr:`HostedTasks.page_size` a page, an opaque ``nextCursor``; a cursor not ours:
  -32602) and
  ``tasks/cancel`` (a working task becomes ``cancelled`` before the answer, and stays so even if its
  handler then finishes; a terminal one: -32602; §Task Cancellation).  An unknown or expired
  ``taskId``: -32602 (§Protocol Errors).  No ``notifications/tasks/status`` are sent (a MAY).

Bounds, each with its policy (§Resource Management asks receivers to enforce and document them):

* ``max_tasks`` (:data:`MAX_TASKS`) tasks kept at once, working or finished, in a
  :class:`~mcp_ref.extensions.tasks.TaskStore` in memory (the server's store).  A new task first
  drops expired ones, then the oldest finished one (a cancelled task "MAY" be deleted "at any time",
  §Task Cancellation 4); if every task is still working the request is refused with -31000
  (:class:`~mcp_ref.errors.ServerBusy`, mcp_ref's own code, outside the JSON-RPC reserved range,
  ``data.maxTasks``) and no task is made.
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
  so ``tasks/get`` is always served) wait at once; one more is refused with -31000.  A wait ends
  when the task is terminal, when it expires (-32602), when the server cancels the ``tasks/result``
  request, when the connection ends, or after
  :data:`~mcp_ref.extensions.tasks_2025.RESULT_WAIT` seconds (-31000: poll and ask again).

Task ids are 128 random bits (``secrets``).  §Task Isolation: a client-hosted task
belongs to the one connection (so the one server) that made it, and only that connection's requests
reach this store: ``tasks/list`` shows nothing to anyone else.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import INTERNAL_ERROR, McpError, MethodNotFound
from ..session import RequestContext
from ..state.stores import MemoryTaskRecords
from .tasks import TaskStore
from .tasks_2025 import MIN_TTL_MS, TaskReceiver, granted_ttl, waiters_of, wire_of
from .tasks_2026 import run_task

if TYPE_CHECKING:
    from ..client.answering import IncomingRequest
    from ..client.interfaces import ClientSettings, Connection

__all__ = ["HostedTasks", "MIN_TTL_MS", "DEFAULT_TTL_MS", "MAX_TTL_MS"]

log = logging.getLogger(__name__)

#: The one revision with client-hosted tasks (2026-07-28 removed them: SEP-2663 §Supported Methods).
VERSION = "2025-11-25"
#: The server's requests a client may run as tasks, and their path in ``capabilities.tasks.requests``.
AUGMENTABLE = {
    "sampling/createMessage": ("sampling", "createMessage"),
    "elicitation/create": ("elicitation", "create"),
}

#: Tasks kept at once (working or finished); see the module docstring for the policy when full.
MAX_TASKS = 64
#: Handlers running at once.
MAX_RUNNING = 4
#: ``tasks/result`` requests waiting at once.
MAX_RESULT_WAITERS = 8
#: The TTL of a task whose requestor asked for none, and the longest granted (milliseconds).
DEFAULT_TTL_MS, MAX_TTL_MS = 600_000, 3_600_000
#: The ``pollInterval`` suggested to the requestor (milliseconds).
POLL_INTERVAL_MS = 1_000
#: Tasks in one ``tasks/list`` page.
PAGE_SIZE = 50


class HostedTasks(TaskReceiver):
    """The store of one client's hosted tasks (``client.hosted_tasks`` with ``Client(tasks=True)``).

    Its limits are attributes, read when its store is made, at the first task or ``tasks/*``
    request (change them before): ``max_tasks``, ``max_running``, ``max_result_waiters``,
    ``max_ttl_ms``, ``poll_interval_ms``; ``default_ttl_ms`` and ``page_size`` are read when used.
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
        self._store: TaskStore | None = None

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
        return super().methods(version) if version == VERSION else {}

    def tasks_of(self, connection: Connection, method: str) -> tuple[TaskStore, None]:
        """The client's store (its tasks are the one connection's: nobody else reaches them)."""
        if connection.protocol_version != VERSION:
            raise MethodNotFound(f"Method not found: {method}")
        return self._store_of(connection), None

    def no_result(self, task_id: str) -> McpError:
        """``tasks/result`` of a cancelled task: the request never finished, so there is no result to
        return; -32603 as §Protocol Errors allows, saying why."""
        return McpError(f"Task {task_id} was cancelled", code=INTERNAL_ERROR)

    def intercept_request(self, call: IncomingRequest, proceed: Callable[[], Any]) -> Any:
        """A sampling or elicitation request carrying ``task`` at 2025-11-25 becomes a task, whose
        work is ``proceed()`` on a worker: the rest of the request's way (the approve hook, the
        handler); its outcome ends the task.  The others go on."""
        connection, context, method = call.connection, call.context, call.method
        if (
            method not in AUGMENTABLE
            or "task" not in call.params
            or connection.protocol_version != VERSION
        ):
            return proceed()
        # §TTL and Resource Management 3: the receiver MAY override the requested ttl
        ttl_ms = granted_ttl(call.params["task"], self.max_ttl_ms, self.default_ttl_ms)
        store = self._store_of(connection)
        task = store.create(None, ttl_ms=ttl_ms, era=VERSION)
        # The handler's context: the request's own (its progressToken stays valid, §Task Progress
        # Notifications) but cancelled by tasks/cancel, expiry or the connection's end.
        call.context = RequestContext(context.session, context.request_id, method, call.params)
        call.context.cancelled = task.cancelled
        created = wire_of(task.record())
        store.start(task, lambda: run_task(store, task, proceed))
        log.info("client-hosted task %s: %s accepted (ttl %d ms)", task.id, method, ttl_ms)
        return {"task": created}

    def _store_of(self, connection: Connection) -> TaskStore:
        """The tasks (in memory), made with the first one from the limits above (every task still
        working is told to stop when the connection ends: :meth:`connection_ended`)."""
        with self._lock:
            if self._store is None:
                store = self._store = TaskStore(
                    max_tasks=self.max_tasks,
                    ttl_ms=self.max_ttl_ms,
                    poll_interval_ms=self.poll_interval_ms,
                    workers=self.max_running,
                    max_waiting=0,
                    input_timeout=None,
                    max_tasks_per_principal=None,
                    records=MemoryTaskRecords(clock=lambda: self.clock()),
                )
                waiters = waiters_of(store)
                waiters.limit = waiters.per_connection = self.max_result_waiters
            return self._store

    def connection_ended(self, connection: Any) -> None:
        """The client's connection ended: every task still working is told to stop
        (:meth:`TaskStore.cancel_all`); nobody can reach them any more."""
        with self._lock:
            store = self._store
        if store is not None:
            store.cancel_all()
