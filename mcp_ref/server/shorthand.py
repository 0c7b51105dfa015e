"""The shorthand: the keyword arguments that build the project's own extensions, in one place.

``Server(authorize=, rate_limit=, ..., state=)``, ``server.policy``, ``server.tasks``, ``@server.tool(task=,
rate_limit=)`` and ``server.add_file_root()`` each build an extension (:mod:`mcp_ref.extensions`),
loaded when asked for, and add it as any other (``Server.add_extension``).  The protocol modules
know only the interface.  This module itself is loaded only when one of them is used (or the
environment names a shared state, ``MCP_REF_STATE``): a plain server never loads it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..extension import Extension
    from .principal import Principal

#: The shared state when ``Server(state=)`` is not given: ``redis://host:port/db`` (or ``rediss://``;
#: ``?namespace=NAME`` prefixes every key, default ``mcp_ref``).  Unset or empty: this process's memory.
STATE_ENV = "MCP_REF_STATE"
#: ``max_subscribed_resources`` not given: the policy extension's default (a cap of 1,000).
_DEFAULT: Any = object()
#: The options of a registered item the shorthand knows (``@server.tool(task=..., rate_limit=...)``;
#: FastMCP's ``tags=`` too, kept for the server's own code: :mod:`mcp_ref.server.fastmcp_names`).
ITEM_OPTIONS = ("task", "rate_limit")


def state_from(choice: Any) -> Any:
    """The :class:`~mcp_ref.state.stores.State` of ``Server(state=choice)``: ``choice`` itself, or
    for a ``redis://`` URL a :class:`~mcp_ref.state.redis.RedisState` (the redis extra),
    or for ``"memory"`` a :class:`~mcp_ref.state.stores.MemoryState`.  ValueError for another URL."""
    if not isinstance(choice, str):
        return choice
    if choice == "memory":
        from ..state.stores import MemoryState

        return MemoryState()
    where = choice.split("@")[-1]  # never the password in a message
    if choice.startswith(("redis://", "rediss://", "unix://")):
        try:
            from ..state.redis import RedisState
        except ImportError as exc:  # redis-py missing
            raise ImportError(
                f"{STATE_ENV} / state={where!r} needs the redis extra: "
                "pip install 'redis[hiredis]>=5'"
            ) from exc
        return RedisState.from_url(choice)
    raise ValueError(
        f"{STATE_ENV} / state=: not a state backend URL (redis://host:port/db): {where!r}"
    )


class Shorthand:
    """What the shorthand keeps for one :class:`~mcp_ref.server.Server`: the state it chose, and the
    extensions it built (``"limits"``: the :class:`~mcp_ref.extensions.policy.Policy`; ``"tasks"``:
    both task protocols).  Made by the server when a shorthand keyword or member is first used."""

    def __init__(self, server: Any, lock: Any):
        self.server = server
        self.lock = lock  # the server's registry lock: what it builds, it adds to the server
        self.state_choice = os.environ.get(STATE_ENV, "").strip() or None
        self.state: Any = None
        self.built: dict[str, Any] = {}
        self.subscribed_cap: Any = _DEFAULT
        self.updates: Any = None

    def take(
        self,
        *,
        authorize: Callable[[Principal, str, str], bool] | None = None,
        rate_limit: Any = None,
        max_subscribed_resources: Any = _DEFAULT,
        resource_update_interval: float | None = None,
        state: Any = None,
        **unknown: Any,
    ) -> None:
        """Take ``Server(...)``'s shorthand keywords: the state first (an extension's setup may ask
        for it), then the policy extension if any of its settings is given."""
        if unknown:  # FastMCP's (log_level=, stateless_http= ...): taken, or refused naming ours
            from .fastmcp_names import take_constructor_keywords

            take_constructor_keywords(self.server, unknown)
        if state is not None:
            self.state_choice = state
        self.subscribed_cap = max_subscribed_resources
        settings = {
            "authorize": authorize,
            "rate_limit": rate_limit,
            "resource_update_interval": resource_update_interval,
        }
        if (
            any(value is not None for value in settings.values())
            or max_subscribed_resources is not _DEFAULT
        ):
            self.build("limits", settings)

    def shared_state(self) -> Any:
        """The chosen state (``Server.shared_state``), made on first use; None: none was chosen."""
        if self.state is None and self.state_choice is not None:
            with self.lock:
                if self.state is None:
                    self.state = state_from(self.state_choice)
        return self.state

    def build(self, key: str, settings: dict[str, Any] | None = None) -> Any:
        """The extension built for ``key`` (``"limits"``, ``"tasks"``), built now if need be."""
        extension = self.built.get(key)
        if extension is None:
            with self.lock:
                extension = self.built.get(key)
                if extension is None:
                    extension = self.built[key] = self.server.add_extension(
                        self._new(key, settings or {})
                    )
                    if key == "tasks":  # the 2025-11-25 protocol, on the same store
                        from ..extensions.tasks_2025 import Tasks2025Extension

                        self.server.add_extension(Tasks2025Extension())
        return extension

    def _new(self, key: str, settings: dict[str, Any]) -> Extension:
        if key == "tasks":
            from ..extensions.tasks_2026 import TasksExtension

            return TasksExtension()
        from ..extensions.policy import DEFAULT_MAX_SUBSCRIBED_RESOURCES, Policy

        cap = self.subscribed_cap
        return Policy(
            max_subscribed_resources=DEFAULT_MAX_SUBSCRIBED_RESOURCES if cap is _DEFAULT else cap,
            buckets=self.server.shared_store("buckets"),
            **settings,
        )

    def take_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """An item's options for extensions (``@server.tool(task=..., rate_limit=...)``), checked,
        with the extensions they need added."""
        if options.keys() - set(
            ITEM_OPTIONS
        ):  # FastMCP's (tags= ...): taken, or refused naming ours
            from .fastmcp_names import take_item_options

            options = take_item_options("a tool, resource or prompt", options)
        unknown = sorted(options.keys() - set(ITEM_OPTIONS) - {"tags"})
        if unknown:
            raise TypeError(
                f"unexpected option(s): {', '.join(unknown)} (known: {', '.join(ITEM_OPTIONS)})"
            )
        taken = {option: value for option, value in options.items() if value is not None}
        if "task" in taken:
            from ..extensions.tasks_2026 import check_option

            check_option(taken["task"])
            self.build("tasks")  # the tasks extensions: their methods, interceptors, capabilities
        if "rate_limit" in taken:
            limits = self.build("limits")
            taken["rate_limit"] = limits.take_item_limit(taken["rate_limit"])
        return taken

    def subscription_cap(self) -> Any:
        """``Server.subscription_cap``: the policy extension (made now for the default cap), or None."""
        limits = self.built.get("limits")
        if limits is None and self.subscribed_cap is not None:
            limits = self.build("limits")  # the default cap: loaded on the first subscription
        return (
            limits if limits is not None and limits.max_subscribed_resources is not None else None
        )

    def update_coalescer(self, publish: Callable[[dict], None]) -> Any:
        """With ``resource_update_interval``, what sends each resource's updates at most once per
        interval through ``publish(params)`` (:class:`~mcp_ref.extensions.policy.UpdateCoalescer`);
        else None: each update is sent at once."""
        limits: Any = self.built.get("limits")
        interval = limits.resource_update_interval if limits is not None else None
        if not interval:
            return None
        with self.lock:
            if self.updates is None or self.updates.interval != interval:
                self.updates = limits.coalescer(lambda _uri, params: publish(params))
            return self.updates


def add_file_root(server: Any, root: str, uri_prefix: str | None, **options: Any) -> str:
    """``Server.add_file_root``: a :class:`~mcp_ref.extensions.files.FileRootExtension` added;
    the URI template it registered."""
    from ..extensions.files import FileRootExtension

    extension = FileRootExtension(root, uri_prefix, **options)
    server.add_extension(extension)
    return extension.template


def _plain_call(ctx: Any) -> Callable[[], Any]:
    from .context import done

    return lambda: done(False)


#: ``ctx.start_task()`` (False: a plain call) and ``ctx.in_task`` of a server without tasks.
CONTEXT_DEFAULTS: dict[str, Callable[[Any], Any]] = {
    "start_task": _plain_call,
    "in_task": lambda ctx: False,
}


def context_attribute(
    attributes: dict[str, Callable[[Any], Any]], name: str
) -> Callable[[Any], Any] | None:
    """``Server.context_attribute``: what gives ``ctx.<name>``: the extensions' (``attributes``),
    else the :data:`CONTEXT_DEFAULTS`, else None."""
    attribute = attributes.get(name)
    return CONTEXT_DEFAULTS.get(name) if attribute is None else attribute
