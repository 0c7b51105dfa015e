"""What the HTTP application asks of the server and of each connection: the transport contract.

The HTTP layer uses these and nothing deeper (no ``connection.session``, no ``server.policy``):
:class:`~mcp_ref.server.Server` and :class:`~mcp_ref.server.ServerConnection` satisfy them.  They
are Protocols, not imports, so the transport does not depend on the server's modules (the server
loads this package lazily, in ``Server.run_http``: a type import back would close a loop).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, Protocol


class Connection(Protocol):
    """One connection of the server, as a transport drives it (``ServerConnection``)."""

    #: Who is calling (``mcp_ref.oauth.resource.AccessInfo``), when the request carried a token.
    auth: Any
    #: The caller as the transport knows it without a token (``http-session:...``, ``http-client:...``).
    peer: str | None
    #: Who the caller is beyond its session (``http-client:...``): what its limits count against.
    client: str | None
    #: True when it serves one request only (stateless mode): nothing it declares may outlast it.
    stateless: bool
    #: What was negotiated (kept in a shared session table: ``shared.negotiated_by``, ``shared.resume``):
    #: the client's capabilities and info, its log level, the URIs it subscribed to.
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any]
    log_level: str | None
    subscriptions: set[str]
    #: Where the connection stands (``mcp_ref.lifecycle.Lifecycle``).
    lifecycle: Any
    #: Ids of requests a middleware step admitted (counted) before dispatch (``middleware.Admission``
    #: notes them); None while it noted none.
    admitted: dict[Any, bool] | None

    @property
    def transport(self) -> Any:
        """The transport this connection is served on."""

    @property
    def principal(self) -> Any:
        """Who is calling (``mcp_ref.server.principal.Principal``)."""

    @property
    def protocol_version(self) -> str | None:
        """The negotiated revision (None before ``initialize``)."""

    @property
    def initialized(self) -> bool:
        """True once ``initialize`` has been answered (or the connection serves statelessly)."""

    def assume_initialized(self, version: str) -> None:
        """Serve without an ``initialize`` (stateless mode: the version comes from the header)."""

    def dispatch(self, message: Any, *, inline: bool = False, envelope: Any = None) -> None:
        """Hand an already-parsed message (or batch) to the connection; ``envelope``: its 2026-07-28
        envelope, already read by the transport (not read again)."""

    def cancel_incoming(self, request_id: Any) -> bool:
        """Cancel a request no one can receive the answer of."""

    def close(self) -> None:
        """End the connection."""

    def ended(self) -> None:
        """Its session ended for good: the server's extensions are told (``connection_ended``)."""

    def negotiate(
        self, event: str, version: str, client_capabilities: dict, client_info: dict
    ) -> bool:
        """Take the lifecycle's ``event``, recording what was negotiated as it moves (False: not now)."""

    def holds(self, request_id: Any, *, ours: bool) -> bool:
        """True while a request is open here: ours awaiting its answer, or the client's being served."""

    def notify(self, method: str, params: dict | None = None) -> None:
        """Send the client a notification (dropped when the lifecycle does not allow it yet)."""

    def list_changed(self, kind: str) -> None:
        """Tell the client a listing changed, if the server declares ``listChanged`` for it."""


class Subscription(Protocol):
    """A ``subscriptions/listen`` stream of the server's hub (only its connection is asked)."""

    connection: Connection


class SubscriptionHub(Protocol):
    """The server's ``subscriptions/listen`` streams (``Server.subscriptions``)."""

    def close_all(self, which: Callable[[Any], bool]) -> int:
        """End, gracefully, the streams ``which`` picks; how many were ended."""

    def let_go(self, limit_id: str, server: Any, uris: Collection[str]) -> None:
        """``uris`` of the caller ``limit_id`` that nothing of this process holds any more leave
        the shared count of ``max_subscribed_resources``."""


class Paginator(Protocol):
    """The server's cursor signer (only whether it has a configured secret is asked)."""

    @property
    def configured(self) -> bool:
        """True when its secret is configured (every worker accepts the others' cursors)."""


class Host(Protocol):
    """The server an HTTP application serves (``mcp_ref.server.Server``)."""

    name: str
    paginator: Paginator

    @property
    def subscriptions(self) -> SubscriptionHub:
        """The hub of ``subscriptions/listen`` streams."""

    @property
    def gate(self) -> Any:
        """Which items each principal may see (``mcp_ref.server.seams.Gate``; ``OPEN``: all)."""

    @property
    def bus(self) -> Any:
        """The deployment's bus (``mcp_ref.state.stores.Bus``): a shared state's reaches every worker."""

    @property
    def extensions(self) -> list[Any]:
        """Its extensions (``mcp_ref.extension.Extension``), in the order they were added."""

    @property
    def shared_state(self) -> Any:
        """The deployment's shared state (``Server(state=...)``, ``MCP_REF_STATE``), or None."""

    def new_connection(self, transport: Any, **session_options: Any) -> Any:
        """A connection served on ``transport`` (a :class:`Connection`)."""

    def serves(self) -> None:
        """Mark the end of the process's start: registrations from now on are announced."""

    def add_connection(self, connection: Any) -> None:
        """Count a live connection (it receives change notifications)."""

    def remove_connection(self, connection: Any) -> None:
        """Send a connection no more change notifications (another process sends them now)."""

    def enter_lifespan(self) -> Any:
        """Enter the server's lifespan unless it is entered, held as serving holds it; its value."""

    def exit_lifespan(self) -> None:
        """Serving lets go of the server's lifespan: exited unless an in-memory client holds it."""

    def visible_tool(self, principal: Any, name: str, params: Any = None) -> Any:
        """The registered tool ``name`` if ``principal`` may see it, else None (hidden and missing
        alike, asked once: the dispatch reuses the verdict)."""

    def required_scopes(self, method: str, params: Any, principal: Any = None) -> tuple[str, ...]:
        """The OAuth scopes a request needs (those of the item it names, if ``principal`` may see it)."""
