"""The client's shorthand: the keyword arguments and methods that build and use this package's own
extensions, in one place, loaded only when one of them is used.

``Client(approve=, server_request_limit=, tasks=)`` build theirs (:func:`build`); ``call_tool(...,
task=)`` and the ``*_task`` methods find the era's tasks extension, added when first needed
(:func:`take_options`, :class:`ClientShorthand`); ``ToolCall.task_id`` (:class:`ToolCallShorthand`).
:class:`~mcp_ref.client.Client` and :class:`~mcp_ref.client.ToolCall` look these members up here the
first time one is asked for (their ``__getattr__``), so a plain client never loads this module.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ..types import CallToolResult

if TYPE_CHECKING:
    from ..extension import Extension
    from ..feature_types import Page

#: Held while a client's tasks extension is looked for and added (rare: once per client and era).
_ADDING = threading.Lock()
#: ``approve(request)`` or ``approve(request, context)``: True, False, or the edited request to answer.
ApproveHook = Callable[..., Any]


def build(
    *,
    approve: ApproveHook | None = None,
    server_request_limit: Any = None,
    tasks: bool = False,
    **unknown: Any,
) -> list[Extension]:
    """The keyword arguments' extensions, the limit first (a refused request makes no task), the
    hook last (a client-hosted task runs it, as the spec's diagram "Task-Augmented Sampling
    Request" shows the user's review after the CreateTaskResult)."""
    if unknown:
        raise TypeError(
            f"Client() got unexpected keyword argument(s): {', '.join(sorted(unknown))}"
        )
    built: list[Extension] = []
    if server_request_limit is not None:
        from ..extensions.approval import ServerRequestLimit

        built.append(ServerRequestLimit(server_request_limit))
    if tasks:
        from ..extensions.hosted_tasks import HostedTasks

        built.append(HostedTasks())
    if approve is not None:
        from ..extensions.approval import Approval

        built.append(Approval(approve))
    return built


def era_tasks(client: Any) -> Any:
    """The era's tasks extension of ``client``, added if the client has none."""
    if client.connection.modern:
        from ..extensions.client_tasks import ClientTasks as kind
    else:
        from ..extensions.client_tasks_2025 import ClientTasks2025 as kind  # type: ignore[assignment]
    with _ADDING:
        if not any(isinstance(extension, kind) for extension in client.extensions):
            client.add_extension(kind())
        return next(extension for extension in client.extensions if isinstance(extension, kind))


def take_options(client: Any, options: dict) -> dict:
    """``options`` with ``task`` for the era's tasks extension, added when needed: in 2026-07-28 when
    asked for a task; in the handshake era as soon as the server offers tasks (a tool may require one)."""
    task = options.pop("task", False)
    if task if client.connection.modern else "tasks" in client.server_capabilities:
        options["task"] = task
        era_tasks(client)
    return options


class ClientShorthand:
    """The members :class:`~mcp_ref.client.Client` takes from the shorthand (never instantiated:
    ``Client.__getattr__`` binds them to the client)."""

    connection: Any
    extensions: tuple[Any, ...]

    @property
    def hosted_tasks(self) -> Any:
        """``tasks=True``'s store (:class:`~mcp_ref.extensions.hosted_tasks.HostedTasks`), or None."""
        return next(
            (extension for extension in self.extensions if extension.name == "client-hosted tasks"),
            None,
        )

    @property
    def server_request_limiter(self) -> Any:
        """``server_request_limit``'s :class:`~mcp_ref.extensions.ratelimit.RateLimiter` (its
        ``clock`` is replaceable), or None."""
        return next(
            (e.limiter for e in self.extensions if e.name == "server request limit"),
            None,
        )

    def get_task(self, task_id: str) -> dict:
        """``tasks/get``: a task's state as the server reports it (2025-11-25 a Task; 2026-07-28 with its result)."""
        return era_tasks(self).request(self.connection, "tasks/get", {"taskId": task_id})

    def cancel_task(self, task_id: str) -> dict:
        """``tasks/cancel``: stop a task (2025-11-25: the cancelled Task, -32602 for an ended one; 2026-07-28: {})."""
        return era_tasks(self).request(self.connection, "tasks/cancel", {"taskId": task_id})

    def list_tasks(self, cursor: str | None = None) -> Page:
        """``tasks/list`` (2025-11-25): one page of the server's tasks (Task dicts); ``next_cursor`` for the next."""
        from ..extensions.client_tasks_2025 import list_tasks

        return list_tasks(cast(Any, self), cursor)

    def task_result(self, task_id: str) -> CallToolResult:
        """``tasks/result`` (2025-11-25) of a tool call's task: waits until it ends (a JSON-RPC error raises)."""
        from .connection import built

        raw = self.connection.request("tasks/result", {"taskId": task_id})
        return built(
            CallToolResult.from_wire, "tasks/result", raw, self.connection.protocol_version
        )


class ToolCallShorthand:
    """The members :class:`~mcp_ref.client.ToolCall` takes from the shorthand."""

    call: Any

    @property
    def task_id(self) -> str | None:
        """The id of the task the server made of the call (``task=True``), once it made one."""
        return getattr(self.call, "task_id", None)


def member(owner: Any, name: str, members: type) -> Any:
    """``owner.name`` from ``members`` (a class of this module), bound to ``owner``; AttributeError
    for a name the shorthand does not add."""
    found = members.__dict__.get(name) if not name.startswith("_") else None
    if found is None or not hasattr(found, "__get__"):
        raise AttributeError(f"{type(owner).__name__!r} object has no attribute {name!r}")
    return found.__get__(owner, type(owner))


#: What each class of the client takes from here, by its name.
MEMBERS = {"Client": ClientShorthand, "ToolCall": ToolCallShorthand}
