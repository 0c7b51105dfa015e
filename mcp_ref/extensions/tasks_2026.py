"""The 2026-07-28 tasks extension (SEP-2663) on a server: :class:`TasksExtension`.

The protocol half of :mod:`mcp_ref.extensions.tasks` (which holds the store, :class:`~.tasks.TaskStore`,
and the tasks): ``tasks/get``, ``tasks/update`` and ``tasks/cancel``, the ``tools/call``
interceptor that turns a call into a task where its handler calls ``ctx.start_task()``, and the
capability.  The 2025-11-25 protocol is :mod:`mcp_ref.extensions.tasks_2025`, on the same store.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from ..errors import INTERNAL_ERROR, InvalidParams, McpError, RequestCancelled
from ..extension import Extension
from ..lifecycle import MODERN_VERSIONS
from ..request import RequestContext
from ..server.input_required import Inputs
from ..server.seams import RequestState, modern_error, state_of
from .tasks import (
    CANCELLED,
    COMPLETED,
    EXTENSION,
    FAILED,
    OPTIONAL,
    REQUIRED,
    TASK,
    StartTask,
    Task,
    TaskRun,
    TaskStore,
    declared,
    missing,
)

if TYPE_CHECKING:
    from ..lifecycle import Envelope
    from ..server.seams import Caller as ServerConnection

__all__ = [
    "TasksExtension",
    "HANDLERS",
    "intercept_call",
    "run_task",
    "cancel_with_request",
    "store_of",
    "mode_of",
    "check_option",
]

log = logging.getLogger("mcp_ref.extensions.tasks")

#: The tool option that makes a tool task-capable, and its mark on a request (``RequestState.mark``).
OPTION = MARK = "task"
#: The mark of a call whose tool may become a task: ``ctx.start_task()`` starts it.
MAY_START = "may start"


def mode_of(tool: Any) -> str | None:
    """A tool's ``task=`` option: None (never a task), ``"optional"`` or ``"required"``."""
    return tool.options.get(OPTION)


def check_option(value: Any) -> None:
    """ValueError unless ``value`` is a ``task=`` a tool may have."""
    if value is not None and value not in (OPTIONAL, REQUIRED):
        raise ValueError(f"task must be None, {OPTIONAL!r} or {REQUIRED!r}, not {value!r}")


def store_of(server: Any) -> TaskStore:
    """The task store of ``server``'s :class:`TasksExtension` (``server.tasks``)."""
    for extension in server.extensions:
        if isinstance(extension, TasksExtension) and extension.store is not None:
            return extension.store
    raise LookupError(f"{server.name} has no tasks extension")


def task_capable(server: Any) -> bool:
    """True while some tool of ``server`` is task-capable."""
    return any(mode_of(tool) for tool in server.registered_tools())


def start_task(ctx: Any) -> Callable[[], Any]:
    """``ctx.start_task()`` (:meth:`TasksExtension.context_attributes`): here the work of a
    task-capable tool becomes a task.

    For a 2026-07-28 client that declared the tasks extension, the client is answered now with a
    task handle and the handler runs again as that task, where this returns True (asks made before
    this point are answered from their ``input_required`` rounds, as in any retry; so put side
    effects after it).  A 2025-11-25 task runs from the first line: this returns True at once.
    For any other call it returns False: it goes on as a plain call."""
    from ..server.context import done

    def start() -> Any:
        mark = state_of(ctx.request).mark_of(MARK)
        if mark == MAY_START:
            raise StartTask()
        return done(mark is not None)

    return start


def in_task(ctx: Any) -> bool:
    """``ctx.in_task``: True while the handler runs as a task (2026-07-28 or 2025-11-25)."""
    return state_of(ctx.request).mark_of(MARK) not in (None, MAY_START)


def intercept_call(
    caller: ServerConnection,
    tool: Any,
    arguments: dict,
    context: RequestContext,
    run: Callable[[RequestContext], dict],
) -> dict:
    """The ``tools/call`` interceptor (``intercept_tool_call``): a
    task-capable tool's call, from a client that declared the extension, may become a task where
    its handler calls ``ctx.start_task()``."""
    mode = mode_of(tool)
    # invalid arguments: run answers them
    if mode is None or context.envelope is None or arguments is None:
        return run(context)
    if declared(context):
        state_of(context).mark(MARK, MAY_START)  # ctx.start_task() turns the call into a task
    elif mode == REQUIRED:
        # SEP-2663: a server "unable to service a request ... without returning CreateTaskResult
        # MUST return an error with the code -32021", naming the extension.
        raise missing(f"tool {tool.name} runs only as a task")
    try:
        return run(context)
    except StartTask:
        return begin(caller, context, run)


#: What the tasks add to a handler's ``Context`` (both protocols).
CONTEXT_ATTRIBUTES: dict[str, Callable[[Any], Any]] = {"start_task": start_task, "in_task": in_task}


class TasksExtension(Extension):
    """The 2026-07-28 tasks extension (SEP-2663) on a server: ``tasks/get``, ``tasks/update`` and
    ``tasks/cancel``, its ``tools/call`` interceptor, ``ctx.start_task()``, and its capability
    (declared while some tool is task-capable).  ``store``: the :class:`TaskStore` (made in
    :meth:`setup` from the server's shared stores when None).  ``server.tasks`` installs it, with
    :class:`~mcp_ref.extensions.tasks_2025.Tasks2025Extension` on the same store."""

    name = EXTENSION
    #: The server it serves (:meth:`setup`).
    server: Any = None

    def __init__(self, store: TaskStore | None = None):
        self.store = store

    def setup(self, host: Any) -> None:
        """Make the store, in the server's shared stores when it has them."""
        if self.store is None:
            self.store = TaskStore(
                records=host.shared_store("task_records"), bus=host.shared_store("bus")
            )
        self.server = host

    def capabilities(self, version: str | None, peer: Any = None) -> dict | None:
        """SEP-2663 §Capability Negotiation: the server "advertises the same extension in its own
        server/discover capabilities" (an empty object: no settings are defined)."""
        return {} if version in MODERN_VERSIONS and task_capable(self.server) else None

    def methods(self, version: str | None) -> dict[str, Callable[..., Any]]:
        """``tasks/get``, ``tasks/update``, ``tasks/cancel`` at 2026-07-28."""
        return HANDLERS if version in MODERN_VERSIONS else {}

    #: The ``tools/call`` interceptor (:func:`intercept_call`).
    intercept_tool_call = staticmethod(intercept_call)

    def context_attributes(self) -> dict[str, Callable[[Any], Any]]:
        """``ctx.start_task()`` and ``ctx.in_task``."""
        return CONTEXT_ATTRIBUTES


def begin(
    connection: ServerConnection, context: RequestContext, run: Callable[[RequestContext], dict]
) -> dict:
    """``ctx.start_task()`` was reached: create the task, run the handler again on a task worker
    (``run(task_context)`` gives its result), and return the CreateTaskResult."""
    server = connection.server
    store = store_of(server)
    # a call the client cancelled before this point makes no task: no answer goes, so no one could
    # reach it, and it would count against the caller's cap for its ttl
    context.check_cancelled()
    # SEP-2663 §Security Implications ("Auth binding"): the task is its verified caller's; and every
    # caller, token or not, is counted against max_tasks_per_principal (Principal.limit_id).
    task = store.create(connection.owner, connection.principal.limit_id)
    cancel_with_request(context, lambda: store.cancel(task))
    inputs = state_of(context).inputs
    before = dict(inputs.answers) if inputs is not None else {}
    # a modern request (MAY_START is only set on one with an envelope); no log messages from a task
    quiet = replace(cast("Envelope", context.envelope), log_level=None)
    task_context = RequestContext(
        context.session, f"task:{task.id}", context.method, context.params
    )
    task_context.progress_token = None
    task_context.envelope = quiet
    state = task_context.role_state = RequestState()
    state.inputs = Inputs(dict(before))
    state.runner = TaskRun(task, before, store)  # ctx's asks and progress go to the task
    state.mark(MARK, state.runner)
    task_context.cancelled = task.cancelled

    created = task.to_wire(
        detailed=False
    )  # as created (working): the work may end before the answer goes

    def work() -> dict:
        try:
            return run(task_context)
        except McpError as exc:
            # the error tasks/get shows is a 2026-07-28 answer too: no -32002 (modern_error)
            raise modern_error(exc) from None

    store.start(task, lambda: run_task(store, task, work))
    return {**created, "resultType": TASK}


def cancel_with_request(context: RequestContext, cancel: Callable[[], Any]) -> None:
    """A task was made for the request of ``context``: if that request is cancelled before its
    answer goes (``notifications/cancelled`` crossing the handle's creation), ``cancel()`` the task.

    The answer, the task handle, is then not sent (2025-11-25 basic/utilities/cancellation:
    receivers "SHOULD NOT send a response for the cancelled request"), so no one could poll or
    cancel the task; and receivers SHOULD "Free associated resources" (ibid.).  Once the answer is
    sent the request has left the session, and a late cancellation no longer reaches it here (the
    client cancels a handle that crossed its cancellation with ``tasks/cancel``).

    The cancel writes the task's records (a round trip each with a shared store) and may end the
    work it withdraws from the queue (``TaskPool.withdraw``): not on the thread that sets the
    cancellation, the session's reader (``Session.cancel_incoming``), whose every later message
    (a ping, an answer) would wait for it.  It goes to the session's callback thread
    (``Session.call_soon``, kept: never dropped), one thread per session, in order; one cancel per
    request that made a task, so at most as many as the session has requests in flight
    (``max_incoming``).  A request cancelled already (this is its handler's thread) cancels here.
    """
    call_soon = getattr(context.session, "call_soon", None)

    def hand_off() -> None:
        if call_soon is None or not call_soon(cancel, keep=True):
            cancel()  # no callback thread (its session has ended): on this thread

    if context.cancelled.is_set():
        cancel()
        return
    context.cancelled.add_callback(hand_off)


def run_task(
    store: TaskStore,
    task: Task,
    call: Callable[[], dict],
    settle: Callable[[dict], None] | None = None,
    after: Callable[[], None] | None = None,
) -> None:
    """A task's work, on a worker of ``store``: unless cancelled while it waited for a run slot, run
    its handler (``call()``) and record how it ended; then ``after()``.  ``settle(result)`` records
    a result (default: ``completed``; 2025-11-25's tasks fail on ``isError``,
    :mod:`mcp_ref.extensions.tasks_2025`, which runs its tasks here too).  A start that cannot be
    written is queued again (:meth:`TaskStore.start_again`), not dropped."""
    stop_watching = store.watch(task)
    again = False
    try:
        try:
            began = task.begin_run()
        except McpError as exc:  # its start cannot be written (its shared store is unreachable)
            again = store.start_again(
                task, lambda: run_task(store, task, call, settle, after), exc.message
            )
            return
        if began:  # else cancelled while it waited for a run slot: the handler never runs
            _finish(task, call, settle)
    except McpError as exc:  # its outcome cannot be written past its tries: its lease says
        log.warning("task %s: %s", task.id, exc.message)
    finally:
        stop_watching()
        if not again:  # queued again: its lease is still renewed here, and it runs later
            store.ended(task)
            if after is not None:
                after()


def _finish(task: Task, call: Callable[[], dict], settle: Callable[[dict], None] | None) -> None:
    """Run a task's handler (``call()``) and record how it ended."""
    try:
        result = call()
    except RequestCancelled:
        task.finish(CANCELLED)
    except McpError as exc:
        # SEP-2663 §Task Execution Errors: a JSON-RPC error "moves to the failed status".  The
        # error as it would be answered (its message a string); data no JSON can carry is left out
        # (the record is written as JSON: it would never be, and the task never end).
        error = exc.to_error()
        try:
            json.dumps(error, allow_nan=False)
        except (TypeError, ValueError, RecursionError):
            error = {"code": error["code"], "message": error["message"]}
        task.finish(FAILED, error=error, message=error["message"])
    except BaseException:  # never leak internals to the client
        log.exception("task %s failed", task.id)
        task.finish(
            FAILED,
            error={"code": INTERNAL_ERROR, "message": "Internal error"},
            message="the task failed with an internal error",
        )
    else:
        if settle is not None:
            settle(result)
        else:  # SEP-2663: a result, "even if isError: true", is completed; cancellation is cooperative.
            task.finish(COMPLETED, result=result)


# -- the methods ------------------------------------------------------------------------------------


def _task_of(
    connection: ServerConnection, context: RequestContext, params: dict, method: str
) -> Task:
    """The task a ``tasks/*`` request names, after the capability check (SEP-2663: -32021 "for
    non-declaring clients issuing tasks/get, tasks/update, and tasks/cancel requests", checked
    before the id)."""
    if not declared(context):
        raise missing(f"{method} needs the {EXTENSION} extension")
    return store_of(connection.server).find(params.get("taskId"), connection.owner)


def get_task(connection: ServerConnection, context: RequestContext, params: dict) -> dict:
    """``tasks/get``: the task as it is now (SEP-2663 §Task Polling; ``resultType`` "complete")."""
    return _task_of(connection, context, params, "tasks/get").to_wire()


def update_task(connection: ServerConnection, context: RequestContext, params: dict) -> dict:
    """``tasks/update``: answers for the task's outstanding asks; an empty acknowledgement."""
    task = _task_of(connection, context, params, "tasks/update")
    responses = params.get("inputResponses")
    if not isinstance(responses, dict):
        raise InvalidParams("Invalid params: tasks/update needs an inputResponses object")
    store_of(connection.server).update(task, responses)
    return {}


def cancel_task(connection: ServerConnection, context: RequestContext, params: dict) -> dict:
    """``tasks/cancel``: an empty acknowledgement, for a finished task too (cooperative cancellation)."""
    store_of(connection.server).cancel(_task_of(connection, context, params, "tasks/cancel"))
    return {}


HANDLERS = {"tasks/get": get_task, "tasks/update": update_task, "tasks/cancel": cancel_task}
