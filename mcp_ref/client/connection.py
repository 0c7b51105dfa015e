"""The client side of one connection: the handshake, the lifecycle, and what the server sends.

:class:`ClientConnection` is the session's dispatcher, as
:class:`~mcp_ref.server.connection.ServerConnection` is on the other side.  It
runs the handshake (:meth:`ClientConnection.initialize`), keeps what was
negotiated, gates what the client sends by the lifecycle table
(:data:`mcp_ref.lifecycle.RULES`), answers the server's requests through the
feature modules (:data:`METHODS`), and hands notifications to the client's
callbacks on the callback thread.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable

from .. import lifecycle
from ..errors import CapabilityError, MethodNotFound
from ..lifecycle import Lifecycle
from ..session import PendingRequest, RequestContext, Session
from ..types import InitializeResult, LogMessage
from . import elicitation, roots, sampling

if TYPE_CHECKING:
    from .client import Client

log = logging.getLogger(__name__)

Handler = Callable[["ClientConnection", RequestContext, dict], dict]

#: Every request a client answers, and its handler.  (``ping`` is answered by the session.)
METHODS: dict[str, Handler] = {
    **sampling.HANDLERS,
    **elicitation.HANDLERS,
    **roots.HANDLERS,
}


class ClientConnection:
    """The client side of one connection: the session's dispatcher and the negotiated state.

    ``initialize_result`` is the server's answer to ``initialize`` (None before
    it); ``lifecycle`` is where the connection stands.  The handlers and
    callbacks are the :class:`~mcp_ref.client.Client`'s attributes, read when
    a message arrives.
    """

    def __init__(self, client: "Client", transport, **session_options):
        self.client = client
        self.session = Session(transport, self, **session_options)
        self.lifecycle = Lifecycle(lifecycle.CLIENT)
        self.initialize_result: InitializeResult | None = None
        transport.set_reinitialize(self.initialize)

    @property
    def protocol_version(self) -> str | None:
        """The negotiated revision (None before the handshake)."""
        return self.session.protocol_version

    def initialize(self, timeout: float | None | type(...) = ...) -> None:
        """The handshake: ``initialize``, accept the server's version, then ``notifications/initialized``.

        ``timeout`` bounds the ``initialize`` request (default: the connection's request timeout).

        Run once when the client is created, and again by a transport whose
        server forgot the session (Streamable HTTP's 404).
        """
        client = self.client
        params = {
            "protocolVersion": client.requested_version,
            "capabilities": client.capabilities(),
            "clientInfo": client.client_info,
        }
        result = InitializeResult.from_wire(self.request("initialize", params, **({} if timeout is ... else {"timeout": timeout})))
        # "If the client does not support the version in the server's response, it SHOULD disconnect."
        version = lifecycle.client_accept_version(result.protocol_version)

        def negotiated() -> None:
            self.session.protocol_version = version
            self.initialize_result = result

        self.lifecycle.advance(lifecycle.INITIALIZE_ANSWERED, negotiated)
        self.session.transport.initialized(version)  # HTTP: the version header from now on, the GET stream
        # 2025-11-25 basic/lifecycle: "After successful initialization, the client MUST send
        # an initialized notification to indicate it is ready to begin normal operations."
        self.notify("notifications/initialized")

    # -- sending -----------------------------------------------------------------------------

    def send_request(self, method: str, params: dict | None = None, **options) -> PendingRequest:
        """Send a request without waiting (CapabilityError, unsent, when the lifecycle forbids it now)."""
        self.lifecycle.check_send(method)
        return self.session.send_request(method, params, **options)

    def request(self, method: str, params: dict | None = None, **options) -> dict:
        """Send a request and wait for its result (options as :meth:`Session.send_request`)."""
        return self.send_request(method, params, **options).result()

    def notify(self, method: str, params: dict | None = None) -> None:
        """Send a notification (CapabilityError, unsent, when the lifecycle forbids it now)."""
        if not self.lifecycle.may_notify(method):
            raise CapabilityError(self.lifecycle.rules.unsent.format(method=method))
        self.session.notify(method, params)

    # -- the Dispatcher protocol: what the server sends ---------------------------------------

    def batches_allowed(self) -> bool:
        """Batches are part of 2024-11-05 and 2025-03-26 only."""
        return lifecycle.batches_allowed(self.session.protocol_version)

    def handle_request(self, context: RequestContext, method: str, params: dict) -> dict:
        """Answer the server's requests: sampling, elicitation, roots."""
        handler = METHODS.get(method)
        if handler is None:
            raise MethodNotFound(f"Method not found: {method}")
        self.lifecycle.check_receive(method)
        return handler(self, context, params)

    def handle_notification(self, method: str, params: dict) -> None:
        """Route the server's notifications to the client's callbacks (on the callback thread)."""
        client = self.client
        callback: Callable | None
        argument: Any
        if method == "notifications/message":
            callback = client.on_log
            argument = LogMessage.from_wire(params) if callback is not None else None
        elif method == "notifications/resources/updated":
            callback, argument = client.on_resource_updated, params.get("uri")
        elif method == "notifications/elicitation/complete":
            # client/elicitation: clients MUST ignore ids they do not know; the callback decides.
            callback, argument = client.on_elicitation_complete, params.get("elicitationId")
        elif method.startswith("notifications/") and method.endswith("/list_changed"):
            callback, argument = client.on_list_changed, method[len("notifications/"):-len("/list_changed")]
        else:
            log.debug("ignored notification %s", method)
            return
        if callback is not None:
            self.session.call_soon(callback, argument)
