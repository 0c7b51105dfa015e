"""Serving a :class:`~mcp_ref.server.Server`: its connections, on stdio or over HTTP.

The part of ``Server`` that is about transports, not about what is registered: it makes a
:class:`~mcp_ref.server.connection.ServerConnection` per connection, remembers them (to tell them
of changes), and runs the stdio loop (the HTTP server is the shorthand's: ``Server.run_http``).
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from .connection import ServerConnection
from .seams import LISTING_ACTIONS, OPEN

if TYPE_CHECKING:
    from .seams import Gate, Registry


class Serving:
    """How a server is served (a base of :class:`~mcp_ref.server.Server`)."""

    name: str
    _connections: weakref.WeakSet[ServerConnection]
    _subscriptions: Any
    subscriptions: Any
    #: Carries changes to every process's listeners (:class:`~mcp_ref.state.changes.Relay`), once
    #: made (:meth:`_relay_in_use`); None: changes go straight to this process's listeners.
    _relay: Any = None
    _state_choice: Any
    _state: Any = None
    _registry_lock: threading.RLock
    _lifespan: Any = None  # Server(lifespan=...): a mcp_ref.server.lifespan.Lifespan
    #: True once this process serves (:meth:`serves`): what it registered before is its start, the same
    #: on every worker of a deployment, and not announced to the others' clients (:meth:`_listeners`).
    _served = False
    #: The shorthand's (:class:`~mcp_ref.server.Server`): the state a choice names; serving over HTTP.
    _chosen_state: Callable[[Any], Any]
    _changes_relay: Callable[[], Any]
    run_http: Callable[..., None]

    @property
    def gate(self) -> Gate:
        """Which items each principal may see and use (``Server.gate``: its extensions')."""
        return OPEN

    # -- the lifespan (mcp_ref.server.lifespan: when it is entered and exited) -----------------------

    @property
    def lifespan(self) -> Callable[[Any], Any] | None:
        """``Server(lifespan=fn)``: ``fn(server)`` gives a (sync or async) context manager; None: none."""
        return None if self._lifespan is None else self._lifespan.fn

    @lifespan.setter
    def lifespan(self, fn: Callable[[Any], Any] | None) -> None:
        self._lifespan = None
        if fn is not None:  # a server without one never loads mcp_ref.server.lifespan
            from .lifespan import Lifespan

            self._lifespan = Lifespan(self, fn)

    @property
    def lifespan_context(self) -> Any:
        """What ``Server(lifespan=fn)``'s context manager gave, while it is entered; else None."""
        return None if self._lifespan is None else self._lifespan.value

    def enter_lifespan(self) -> Any:
        """Enter ``Server(lifespan=...)`` unless entered (serving does, at its start); its value, or None."""
        return None if self._lifespan is None else self._lifespan.enter()

    def exit_lifespan(self) -> None:
        """Exit ``Server(lifespan=...)`` if it is entered (the end of ``run()``, ``app.close()``)."""
        if self._lifespan is not None:
            self._lifespan.exit()

    # -- the deployment's shared state ------------------------------------------------------------

    @property
    def shared_state(self) -> Any:
        """The deployment's :class:`~mcp_ref.state.stores.State` when one was chosen (``state=`` or
        ``MCP_REF_STATE``), else None: every store is this process's own, made in memory."""
        if self._state is None and self._state_choice is not None:
            with self._registry_lock:
                if self._state is None:
                    self._state = self._chosen_state(self._state_choice)
        return self._state

    def shared_store(self, kind: str) -> Any:
        """The chosen state's store of ``kind`` (``"buckets"``, ``"counters"``, ``"task_records"``,
        ``"bus"``), or None: an extension makes its own in memory (``Extension.setup`` asks)."""
        state = self.shared_state
        return None if state is None else getattr(state, kind)()

    # -- connections ------------------------------------------------------------------------------

    def new_connection(self, transport, **session_options) -> ServerConnection:
        """A connection serving this server on ``transport``: not started, and not yet told of changes.

        For transports that feed the session themselves (HTTP); see :meth:`connect`
        for the usual path.  ``session_options`` are :class:`~mcp_ref.session.Session`'s.
        The server's lifespan is entered first, if it is not (a WSGI app has no start).
        """
        self.enter_lifespan()
        self._served = True
        return ServerConnection(cast("Registry", self), transport, **session_options)

    def serves(self) -> None:
        """Mark the end of this process's start (an HTTP application is made for this server, or a first
        connection): a tool, prompt or resource registered from now on is announced as a change, to
        every worker's clients when the state is shared; what was registered before is not."""
        self._served = True

    def add_connection(self, connection: ServerConnection) -> None:
        """Send ``connection`` list-changed and resource-updated notifications from now on (held weakly).

        With a shared state (``Server(state=...)``), the first connection makes this process hear the
        deployment's changes (:meth:`_relay_in_use`), so that a change made on another worker reaches it too."""
        self._connections.add(connection)
        self._relay_in_use()

    def remove_connection(self, connection: ServerConnection) -> None:
        """Send ``connection`` no more change notifications (another process sends them now)."""
        self._connections.discard(connection)

    def connections(self) -> list[ServerConnection]:
        """The connections that receive list-changed and resource-updated notifications."""
        return list(self._connections)

    def connect(self, transport, *, peer: str | None = None, **session_options) -> ServerConnection:
        """Serve one connection on ``transport``; returns it (its reader thread is running).

        ``peer`` names the caller when no token does (``ctx.principal.id``; default ``connection-<n>``).
        """
        connection = self.new_connection(transport, **session_options)
        connection.peer = peer
        self.add_connection(connection)
        connection.session.start()
        return connection

    # -- change notifications: straight to this process's listeners, or through the relay ---------

    def _relay_in_use(self) -> Any:
        """The relay (:mod:`mcp_ref.state.changes`), if changes go through one: made now when the
        state is shared (a change made here must reach the other processes' listeners even if no
        listener ever connected here).  None: changes go to this process's listeners directly."""
        if self._relay is None and self._state_choice is not None:
            return self._changes_relay()
        return self._relay

    def _reannounce(self) -> None:
        """The relay came back after an outage: tell this process's listeners that every list may have
        changed (a change announced meanwhile on another worker never arrived); they list again."""
        for kind in ("tools", "prompts", "resources"):
            self._deliver(kind, (self.connections(), None))

    def _hear(self, message: dict) -> None:
        """A change from the relay, delivered to this process's connections and streams."""
        if message.get("kind") == "list_changed":
            self._deliver(message["list"], self._local_listeners(message["list"], message["name"]))
        elif message.get("kind") == "resource_updated":
            self._deliver_resource_updated(message["params"])

    def _listeners(self, kind: str, name: str) -> tuple[list, Callable | None, str | None]:
        """Who is told that item ``name`` of ``kind`` changed (asked before a removal): see
        :meth:`_local_listeners`; with a relay, its receivers ask."""
        if (
            not self._served
        ):  # this process's start (a worker's tools, at import): nobody is told, no relay is made
            return [], None, None
        return (
            ([], None, name)
            if self._relay_in_use() is not None
            else (*self._local_listeners(kind, name), name)
        )

    def _local_listeners(self, kind: str, name: str) -> tuple[list, Callable | None]:
        """This process's listeners of item ``name`` of ``kind``: ``(connections, which streams)``.

        With ``authorize``, only callers who may see that item: a caller whose own listing did not
        change is not told that something changed, which would tell it a hidden item exists.
        Without it, everyone (``which`` None).
        """
        gate = self.gate
        if not gate.restricts:
            return self.connections(), None
        action = LISTING_ACTIONS[kind]
        verdicts: dict[str, bool] = {}

        def concerned(principal) -> bool:
            if principal.id not in verdicts:
                verdicts[principal.id] = gate.allows(principal, action, name)
            return verdicts[principal.id]

        streams = set(
            self.subscriptions.streams(lambda stream: concerned(stream.connection.principal))
            if self._subscriptions is not None
            else ()
        )
        return [c for c in self.connections() if concerned(c.principal)], streams.__contains__

    def _announce(self, kind: str, listeners: tuple) -> None:
        """``notifications/{kind}/list_changed`` to ``listeners`` (see :meth:`_listeners`), or on the relay."""
        if listeners[2] is None:
            return  # see _listeners
        if self._relay is not None:
            self._relay.publish({"kind": "list_changed", "list": kind, "name": listeners[2]})
        else:
            self._deliver(kind, listeners[:2])

    def _deliver(self, kind: str, listeners: tuple) -> None:
        connections, which = listeners
        for connection in connections:
            connection.list_changed(kind)
        if self._subscriptions is not None:  # no listen stream was ever opened without it
            self._subscriptions.publish(f"notifications/{kind}/list_changed", which=which)

    def _publish_resource_updated(self, params: dict) -> None:
        """``notifications/resources/updated`` (``params``) to the subscribers of its URI, or on the relay."""
        relay = self._relay_in_use()
        if relay is not None:
            relay.publish({"kind": "resource_updated", "params": params})
        else:
            self._deliver_resource_updated(params)

    def _deliver_resource_updated(self, params: dict) -> None:
        for connection in self.connections():
            if params["uri"] in connection.subscriptions:
                connection.notify("notifications/resources/updated", params)
        if self._subscriptions is not None:
            self._subscriptions.publish("notifications/resources/updated", params)

    # -- serving ----------------------------------------------------------------------------------

    def run(
        self,
        transport: str = "stdio",
        *,
        host: str | None = None,
        port: int | None = None,
        **options,
    ) -> None:
        """Serve until stopped: ``run()`` on stdio, ``run(transport="http", host=, port=)`` over HTTP.

        As ``FastMCP.run`` does.  ``"http"`` (or ``"streamable-http"``) and ``"sse"`` both run
        :meth:`run_http`, which serves Streamable HTTP at ``/mcp`` and the 2024-11-05 HTTP+SSE
        transport at ``/sse`` from one server; the name only chooses which address is announced.
        ``options`` go to :meth:`run_stdio` or :meth:`run_http`.  From the environment
        (:mod:`mcp_ref.server.settings`): ``MCP_REF_HOST`` / ``MCP_REF_PORT`` (default 127.0.0.1:8000),
        and ``MCP_REF_LOG_LEVEL``, mcp_ref's own log records on stderr from that level.
        """
        if os.environ.get("MCP_REF_LOG_LEVEL"):  # settings.LOG_LEVEL_ENV
            from .settings import log_level_from_environment, log_to_stderr

            log_to_stderr(log_level_from_environment() or 0)
        if transport == "stdio":
            self.run_stdio(**options)
        elif transport in ("http", "streamable-http", "sse"):
            path = (
                options.get("sse_path", "/sse")
                if transport == "sse"
                else options.get("path", "/mcp")
            )
            kind = "HTTP+SSE" if transport == "sse" else "Streamable HTTP"
            if "on_ready" not in options:
                options["on_ready"] = lambda httpd: print(
                    f"serving {self.name} at {httpd.url}{path} ({kind})",
                    file=sys.stderr,
                    flush=True,
                )
            from .settings import address

            self.run_http(*address(host, port), **options)
        else:
            raise ValueError(
                f"transport must be 'stdio', 'http' (or 'streamable-http') or 'sse', not {transport!r}"
            )

    def run_stdio(self, *, max_message_size: int | None = None) -> None:
        """Serve one client on this process's stdin/stdout until stdin ends.

        Logs go to stderr; ``print()`` in a handler is redirected to stderr so
        stdout carries only protocol messages.  On end of input, the requests
        already received are answered before this returns; then the lifespan is exited.
        """
        from ..stdio import DEFAULT_MAX_MESSAGE_SIZE, StreamTransport, server_streams

        reader, writer = server_streams()
        transport = StreamTransport(
            reader, writer, max_message_size=max_message_size or DEFAULT_MAX_MESSAGE_SIZE
        )
        connection = self.connect(
            transport, name=f"{self.name}-stdio", peer="stdio"
        )  # enters the lifespan
        try:
            while not connection.session.wait_closed(1.0):
                pass
        finally:
            self.exit_lifespan()
