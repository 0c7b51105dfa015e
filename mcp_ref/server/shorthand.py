"""The shorthand: the keyword arguments that build the project's own extensions, in one place.

``Server(authorize=, rate_limit=, ..., state=)``, ``server.policy``, ``server.tasks``, ``@server.tool(task=,
rate_limit=)``, ``server.add_file_root()``, ``server.wsgi_app()``/``run_http()`` each build an extension
(:mod:`mcp_ref.extensions`, :mod:`mcp_ref.http.server.protected`), loaded when asked for, and add
it as any other (``Server.add_extension``).  The protocol modules know only the interface.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from .serving import Serving

if TYPE_CHECKING:
    from ..extension import Extension
    from .principal import Principal

#: The shared state when ``Server(state=)`` is not given: ``redis://host:port/db`` (or ``rediss://``;
#: ``?namespace=NAME`` prefixes every key, default ``mcp_ref``).  Unset or empty: this process's memory.
STATE_ENV = "MCP_REF_STATE"
#: ``max_subscribed_resources`` not given: the policy extension's default (a cap of 1,000).
_DEFAULT: Any = object()
#: The options of a registered item the shorthand knows (``@server.tool(task=..., rate_limit=...)``).
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


class Shorthand(Serving):
    """The shorthand of :class:`~mcp_ref.server.Server` (a base of it; see the module docstring)."""

    add_extension: Callable[[Any], Any]
    _chosen_state = staticmethod(state_from)

    def _take_shorthand(
        self,
        *,
        authorize: Callable[[Principal, str, str], bool] | None = None,
        rate_limit: Any = None,
        max_subscribed_resources: Any = _DEFAULT,
        resource_update_interval: float | None = None,
        state: Any = None,
        **unknown: Any,
    ) -> None:
        if unknown:
            raise TypeError(
                f"Server() got unexpected keyword argument(s): {', '.join(sorted(unknown))}"
            )
        self._state_choice = (
            state if state is not None else os.environ.get(STATE_ENV, "").strip() or None
        )
        self._built: dict[str, Any] = {}
        self._subscribed_cap = max_subscribed_resources
        self._updates: Any = None
        settings = {
            "authorize": authorize,
            "rate_limit": rate_limit,
            "resource_update_interval": resource_update_interval,
        }
        if (
            any(value is not None for value in settings.values())
            or max_subscribed_resources is not _DEFAULT
        ):
            self._build("limits", settings)

    def _build(self, key: str, settings: dict[str, Any] | None = None) -> Any:
        """The extension the shorthand built for ``key`` (``"limits"``, ``"tasks"``), built now if need be."""
        extension = self._built.get(key)
        if extension is None:
            with self._registry_lock:
                extension = self._built.get(key)
                if extension is None:
                    extension = self._built[key] = self.add_extension(
                        self._new(key, settings or {})
                    )
                    if key == "tasks":  # the 2025-11-25 protocol, on the same store
                        from ..extensions.tasks_2025 import Tasks2025Extension

                        self.add_extension(Tasks2025Extension())
        return extension

    def _new(self, key: str, settings: dict[str, Any]) -> Extension:
        if key == "tasks":
            from ..extensions.tasks_2026 import TasksExtension

            return TasksExtension()
        from ..extensions.policy import DEFAULT_MAX_SUBSCRIBED_RESOURCES, Policy

        cap = self._subscribed_cap
        return Policy(
            max_subscribed_resources=DEFAULT_MAX_SUBSCRIBED_RESOURCES if cap is _DEFAULT else cap,
            buckets=self.shared_store("buckets"),
            **settings,
        )

    @property
    def policy(self) -> Any:
        """Who may see and call what, and how often (:class:`~mcp_ref.extensions.policy.Policy`; added on first use)."""
        return self._build("limits")

    @property
    def tasks(self) -> Any:
        """The store (:class:`~mcp_ref.extensions.tasks.TaskStore`) of the tasks extensions, both protocols,
        added on first use; replace it to change its bounds (``server.tasks = TaskStore(max_tasks=...)``)."""
        return self._build("tasks").store

    @tasks.setter
    def tasks(self, store: Any) -> None:
        self._build("tasks").store = store

    def _changes_relay(self) -> Any:
        """The relay of this server's change notifications across processes
        (:class:`~mcp_ref.state.changes.Relay`), made now if need be: on the shared state's bus, or
        one in memory (a ``subscriptions/listen`` stream asks for it)."""
        if self._relay is None:
            from ..state.changes import Relay

            self._relay = Relay.on_state(self._hear, self._reannounce, self.shared_state)
        return self._relay

    def _relay_through(self, channel: Any) -> None:
        from ..state.changes import Relay

        if self._relay is not None:
            self._relay.close()
        self._relay = Relay(self._hear, self._reannounce, channel)

    bus = property(
        lambda self: self._changes_relay().bus,
        _relay_through,
        doc="""The change bus (:class:`~mcp_ref.state.stores.Bus`; made when first asked for: the
        shared state's, or one in memory): the server publishes each change on it, and this
        process's connections and listen streams hear it (:mod:`mcp_ref.state.changes`).  Set it to
        relay the changes through another (tests: two servers on one bus).""",
    )

    def _take_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """An item's options for extensions (``@server.tool(task=..., rate_limit=...)``), checked,
        with the extensions they need added."""
        unknown = sorted(options.keys() - set(ITEM_OPTIONS))
        if unknown:
            raise TypeError(
                f"unexpected option(s): {', '.join(unknown)} (known: {', '.join(ITEM_OPTIONS)})"
            )
        taken = {option: value for option, value in options.items() if value is not None}
        if "task" in taken:
            from ..extensions.tasks_2026 import check_option

            check_option(taken["task"])
            self._build("tasks")  # the tasks extensions: their methods, interceptors, capabilities
        if "rate_limit" in taken:
            limits = self._build("limits")
            taken["rate_limit"] = limits.take_item_limit(taken["rate_limit"])
        return taken

    def subscription_cap(self) -> Any:
        """What bounds the resources one principal is subscribed to (``max_subscribed_resources``:
        the policy extension, made now if need be, with ``subscription_lock`` and
        ``check_subscriptions``), or None."""
        limits = self._built.get("limits")
        if limits is None and self._subscribed_cap is not None:
            limits = self._build(
                "limits"
            )  # the default cap: the extension is loaded on the first subscription
        return (
            limits if limits is not None and limits.max_subscribed_resources is not None else None
        )

    def notify_resource_updated(self, uri: str) -> None:
        """Send ``notifications/resources/updated`` to every client subscribed to ``uri`` (handshake-era
        ``resources/subscribe``, 2026-07-28 listen streams); with ``resource_update_interval``, once
        per interval (:class:`~mcp_ref.extensions.policy.UpdateCoalescer`)."""
        limits: Any = self._built.get("limits")
        interval = limits.resource_update_interval if limits is not None else None
        if not interval:
            self._publish_resource_updated(
                {"uri": uri}
            )  # Serving: to this process's subscribers, or on the bus
            return
        with self._registry_lock:
            if self._updates is None or self._updates.interval != interval:
                self._updates = limits.coalescer(
                    lambda _uri, params: self._publish_resource_updated(params)
                )
            updates = self._updates
        updates.announce(uri, {"uri": uri})

    def add_file_root(
        self,
        root: str,
        *,
        uri_prefix: str | None = None,
        name: str | None = None,
        max_file_size: int | None = None,
        allow_hidden: bool = False,
        follow_links: bool = False,
    ) -> str:
        """Serve every file under directory ``root`` as a resource, confined to that directory: a
        :class:`~mcp_ref.extensions.files.FileRootExtension` (see it for the options).  Returns the URI
        template registered."""
        from ..extensions.files import FileRootExtension

        extension = FileRootExtension(
            root,
            uri_prefix,
            name=name,
            max_file_size=max_file_size,
            allow_hidden=allow_hidden,
            follow_links=follow_links,
        )
        self.add_extension(extension)
        return extension.template

    def wsgi_app(self, **options: Any) -> Any:
        """This server as a WSGI application (Streamable HTTP at ``/mcp``, HTTP+SSE at ``/sse``):
        options are :class:`~mcp_ref.http.server.McpWsgiApp`'s (``path``, ``stateless``,
        ``allowed_hosts``, ``auth``: the OAuth resource server ...).  Mount it anywhere WSGI runs
        (gunicorn, Flask, Django), or :meth:`run_http`; its ``close()`` exits the lifespan."""
        from ..http.server import McpWsgiApp

        return McpWsgiApp(cast(Any, self), **options)

    def http_server(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        connection_limits: Any = None,
        **options: Any,
    ) -> Any:
        """A standard-library HTTP server for :meth:`wsgi_app`, bound but not serving yet (port 0: a
        free one; ``.port``, ``.url``): call ``serve_forever()`` and ``shutdown()``.
        ``connection_limits`` (:class:`~mcp_ref.http.wsgi_server.ConnectionLimits`) bounds its
        connections; the other options are :meth:`wsgi_app`'s."""
        from ..http.wsgi_server import WsgiServer

        return WsgiServer((host, port), self.wsgi_app(**options), limits=connection_limits)

    def run_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        on_ready: Callable | None = None,
        **options: Any,
    ) -> None:
        """Serve over HTTP on the standard library until interrupted (127.0.0.1 by default): the
        lifespan entered, :meth:`http_server` bound, ``on_ready(httpd)`` called (default: a line on
        stderr saying ``httpd.url``), then served; the options are :meth:`http_server`'s."""
        self.enter_lifespan()
        try:
            httpd = self.http_server(host, port, **options)
            if on_ready is None:
                print(
                    f"serving {self.name} at {httpd.url}{options.get('path', '/mcp')}",
                    file=sys.stderr,
                    flush=True,
                )
            else:
                on_ready(httpd)
            try:
                httpd.serve_forever()
            except KeyboardInterrupt:
                pass
            finally:
                httpd.server_close()
                httpd.app.close()  # exits the lifespan too
        finally:
            self.exit_lifespan()

    def _shorthand_context(self, name: str) -> Callable[[Any], Any] | None:
        """``ctx.start_task()`` (False: a plain call) and ``ctx.in_task`` of a server without tasks."""
        return _SHORTHAND_CONTEXT.get(name)


def _plain_call(ctx: Any) -> Callable[[], Any]:
    from .context import done

    return lambda: done(False)


_SHORTHAND_CONTEXT: dict[str, Callable[[Any], Any]] = {
    "start_task": _plain_call,
    "in_task": lambda ctx: False,
}
