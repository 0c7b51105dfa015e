"""The server side of one connection: the session's dispatcher, and what was negotiated.

Every request goes through :meth:`ServerConnection.handle_request`, which
applies, in order: the method table (:data:`METHODS`; an unknown method is
-32601), the lifecycle table (:data:`mcp_ref.lifecycle.RULES`; out of phase is
-32600), and the declared capabilities (a feature the server did not declare is
-32601).  Then the feature's handler runs: each is a plain function
``handler(connection, context, params) -> result`` in the feature's module.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

from .. import lifecycle
from ..errors import CapabilityError, InvalidParams, InvalidRequest, MethodNotFound
from ..lifecycle import Lifecycle, Phase
from ..session import RequestContext, Session
from . import completion, prompts, resources, tools
from . import logging as logging_feature

if TYPE_CHECKING:
    from .registry import Server

log = logging.getLogger(__name__)

Handler = Callable[["ServerConnection", RequestContext, dict], dict]


def initialize(connection: "ServerConnection", context: RequestContext, params: dict) -> dict:
    """``initialize``: negotiate the version, record the client's capabilities, declare ours.

    2025-11-25 basic/lifecycle §Initialization: "The initialization phase MUST
    be the first interaction between client and server."
    """
    requested = params.get("protocolVersion")
    if not isinstance(requested, str):
        raise InvalidParams("Invalid params: protocolVersion must be a string")
    capabilities = params.get("capabilities")
    client_info = params.get("clientInfo")
    if not isinstance(capabilities, dict) or not isinstance(client_info, dict):
        raise InvalidParams("Invalid params: initialize needs capabilities and clientInfo objects")
    version = lifecycle.server_choose_version(requested)
    server = connection.server

    def negotiated() -> None:
        connection.session.protocol_version = version
        connection.client_capabilities = capabilities
        connection.client_info = client_info
        connection.capabilities = server.capabilities(version)

    if not connection.lifecycle.advance(lifecycle.INITIALIZE_ANSWERED, negotiated):
        raise InvalidRequest(connection.lifecycle.rules.refusal.format(method="initialize"))
    result = {
        "protocolVersion": version,
        "capabilities": connection.capabilities,
        "serverInfo": server.server_info(version),
    }
    if server.instructions:
        result["instructions"] = server.instructions
    return result


#: Every request method a server answers, and its handler.  (``ping`` is answered by the session.)
METHODS: dict[str, Handler] = {
    "initialize": initialize,
    **tools.HANDLERS,
    **resources.HANDLERS,
    **prompts.HANDLERS,
    **logging_feature.HANDLERS,
    **completion.HANDLERS,
}

#: The capability a method needs: 2025-11-25 basic/lifecycle §Operation, "Only use capabilities
#: that were successfully negotiated".  (``completion/complete`` needs none at 2024-11-05, which
#: had the method but not the capability.)
CAPABILITY_OF = {
    "tools/list": "tools", "tools/call": "tools",
    "resources/list": "resources", "resources/templates/list": "resources", "resources/read": "resources",
    "resources/subscribe": "resources", "resources/unsubscribe": "resources",
    "prompts/list": "prompts", "prompts/get": "prompts",
    "logging/setLevel": "logging",
    "completion/complete": "completions",
}


class ServerConnection:
    """The server side of one connection: the session's dispatcher and the negotiated state.

    ``lifecycle`` is where the connection stands (:class:`~mcp_ref.lifecycle.Lifecycle`);
    ``client_capabilities`` and ``client_info`` come from ``initialize``;
    ``capabilities`` is what this server declared; ``log_level`` is the
    client's ``logging/setLevel`` (None: everything); ``subscriptions`` the
    URIs it subscribed to.
    """

    def __init__(self, server: "Server", transport, **session_options):
        self.server = server
        self.session = Session(transport, self, **session_options)
        self.lifecycle = Lifecycle(lifecycle.SERVER)
        self.client_capabilities: dict = {}
        self.client_info: dict = {}
        self.capabilities: dict = {}
        self.log_level: str | None = None
        self.subscriptions: set[str] = set()
        #: Who is calling (``mcp_ref.auth.resource.AccessInfo``), when the transport authenticates
        #: its requests (HTTP with ``auth=``); None otherwise.  ``Context.auth`` reads it.
        self.auth = None

    @property
    def protocol_version(self) -> str | None:
        """The negotiated revision (None before ``initialize``)."""
        return self.session.protocol_version

    @property
    def initialized(self) -> bool:
        """True once ``initialize`` has been answered (or the connection serves statelessly)."""
        return self.lifecycle.phase is not Phase.AWAITING_INITIALIZE

    def assume_initialized(self, version: str) -> None:
        """Serve without an ``initialize`` on this connection (HTTP's stateless mode).

        Each request arrives on a fresh connection, so the version comes from
        the ``MCP-Protocol-Version`` header instead.  The client's capabilities
        are unknown: requests to the client are refused.
        """

        def negotiated() -> None:
            self.session.protocol_version = version
            self.capabilities = self.server.capabilities(version)

        self.lifecycle.advance(lifecycle.STATELESS, negotiated)

    # -- the Dispatcher protocol -------------------------------------------------------------

    def batches_allowed(self) -> bool:
        """Batches are part of 2024-11-05 and 2025-03-26 only."""
        return lifecycle.batches_allowed(self.session.protocol_version)

    def handle_request(self, context: RequestContext, method: str, params: dict) -> dict:
        """Route one request to its handler: method table, then lifecycle, then capabilities."""
        handler = METHODS.get(method)
        if handler is None:
            raise MethodNotFound(f"Method not found: {method}")
        self.lifecycle.check_receive(method)
        capability = CAPABILITY_OF.get(method)
        if capability is not None:
            self._require_capability(capability, method)
        return handler(self, context, params)

    def _require_capability(self, capability: str, method: str) -> None:
        if capability == "completions" and not lifecycle.at_least(self.protocol_version, lifecycle.COMPLETIONS_CAPABILITY):
            return  # 2024-11-05 had completion/complete but no capability for it
        declared = self.capabilities.get(capability)
        if declared is None:
            raise MethodNotFound(f"Method not found: this server does not offer {capability} ({method})")
        if method in ("resources/subscribe", "resources/unsubscribe") and not declared.get("subscribe"):
            raise MethodNotFound(f"Method not found: this server does not support subscriptions ({method})")

    def handle_notification(self, method: str, params: dict) -> None:
        """Lifecycle and roots notifications; anything else is ignored."""
        if method == "notifications/initialized":
            self.lifecycle.advance(lifecycle.INITIALIZED_RECEIVED)
        elif method == "notifications/roots/list_changed":
            callback = self.server.on_roots_list_changed
            if callback is not None:
                self.session.call_soon(callback, self)
        else:
            log.debug("ignored notification %s", method)

    # -- sending to the client --------------------------------------------------------------

    def request(self, method: str, params: dict | None, *, timeout=..., related_request_id=None) -> dict:
        """Send a request to the client and wait for its result (CapabilityError when out of phase)."""
        self.lifecycle.check_send(method)
        return self.session.request(method, params, timeout=timeout, related_request_id=related_request_id)

    def notify(self, method: str, params: dict | None = None, *, related_request_id=None) -> None:
        """Send a notification to the client (dropped quietly when out of phase or the connection has closed)."""
        if not self.lifecycle.may_notify(method):
            log.debug("notification %s dropped: not allowed in phase %s", method, self.lifecycle.phase.value)
            return
        try:
            self.session.notify(method, params, related_request_id=related_request_id)
        except ConnectionError:
            log.debug("notification %s dropped: connection closed", method)

    def require_client_capability(self, name: str, method: str) -> dict:
        """The client's capability ``name``, or CapabilityError if it did not declare it."""
        caps = self.client_capabilities.get(name)
        if caps is None:
            raise CapabilityError(f"{method}: the client did not declare the {name} capability")
        return caps

    def log(self, level: str, data: Any, logger: str | None = None, *, related_request_id=None) -> bool:
        """Send ``notifications/message`` if ``level`` is at or above the client's chosen level."""
        params = logging_feature.log_message(level, data, logger, self.log_level)
        if params is None:
            return False
        self.notify("notifications/message", params, related_request_id=related_request_id)
        return True

    def list_changed(self, kind: str) -> None:
        """Tell the client a listing changed, if that capability declared ``listChanged``."""
        if self.capabilities.get(kind, {}).get("listChanged"):
            self.notify(f"notifications/{kind}/list_changed")
