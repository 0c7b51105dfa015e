"""The server side of one connection: the session's dispatcher, and what was negotiated.

Every request goes through :meth:`ServerConnection.handle_request`.  A request
whose ``_meta`` names its protocol version is a 2026-07-28 (modern) request,
served on its own (:meth:`ServerConnection.handle_modern`); any other belongs
to the handshake era.  Each era applies, in order, its method table (an
unknown method is -32601), its gate (handshake: the lifecycle table
:data:`mcp_ref.lifecycle.RULES`, out of phase is -32600; modern: the request's
envelope, :func:`mcp_ref.lifecycle.read_envelope`), and the declared
capabilities (a feature the server did not declare is -32601).  Then the
feature's handler runs: each is a plain function
``handler(caller, context, params) -> result`` in the feature's module, the
same for both eras, given the connection through the narrow
:class:`~mcp_ref.server.seams.Caller` interface.  A feature's module is loaded
when one of its methods is first called (:class:`MethodTable`), so a server
pays only for what it uses; the server's middleware (``Server.middleware``)
runs around all of it.
"""

from __future__ import annotations

import importlib
import itertools
import logging
import sys
from typing import TYPE_CHECKING, Any

from .. import lifecycle
from ..errors import (
    RESOURCE_NOT_FOUND,
    InvalidParams,
    InvalidRequest,
    McpError,
    MethodNotFound,
)
from ..lifecycle import Lifecycle, Phase
from ..request import DEFAULT, Default
from ..session import RequestContext, Session

if TYPE_CHECKING:
    from .principal import Principal
    from .seams import Handler, Registry as Server

log = logging.getLogger(__name__)

#: Names connections without a better caller id (ServerConnection.peer).
_SERIALS = itertools.count(1)


class MethodTable(dict):
    """Request methods and their handlers, each named ``"module:function"`` (a module of this
    package) and loaded on first use, or given as a function."""

    def __getitem__(self, method: str) -> Handler:
        handler = super().__getitem__(method)
        if isinstance(handler, str):
            module, _, name = handler.partition(":")
            handler = getattr(importlib.import_module(f"{__package__}.{module}"), name)
            self[method] = handler
        return handler

    def get(self, method: str, default: Any = None) -> Any:
        """The handler of ``method`` (loaded on first use), else ``default``."""
        # one look-up for a loaded handler: this runs for every request
        handler = super().get(method, default)
        return self[method] if isinstance(handler, str) else handler


def initialize(connection: ServerConnection, context: RequestContext, params: dict) -> dict:
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
    if not connection.negotiate(lifecycle.INITIALIZE_ANSWERED, version, capabilities, client_info):
        raise InvalidRequest(connection.lifecycle.rules.refusal.format(method="initialize"))
    result = {
        "protocolVersion": version,
        "capabilities": connection.capabilities,
        "serverInfo": server.server_info(version),
    }
    if server.instructions:
        result["instructions"] = server.instructions
    return result


#: The handlers of the features, by method, as "module:function" (the same in both eras).
_FEATURES = {
    "tools/list": "listing:list_tools",
    "tools/call": "tools:call_tool",
    "resources/list": "listing:list_resources",
    "resources/templates/list": "listing:list_templates",
    "resources/read": "resources:read_resource",
    "prompts/list": "listing:list_prompts",
    "prompts/get": "prompts:get_prompt",
    "completion/complete": "completion:complete",
}

#: Every request method a server answers, and its handler.  (``ping``: the session's, :func:`mcp_ref.lifecycle.answered_at_once`.)
METHODS = MethodTable(
    {
        "initialize": initialize,
        **_FEATURES,
        "resources/subscribe": "resources:subscribe",
        "resources/unsubscribe": "resources:unsubscribe",
        "logging/setLevel": "logging:set_level",
    }
)


def discover(connection: ServerConnection, context: RequestContext, params: dict) -> dict:
    """``server/discover`` (2026-07-28 server/discover): versions, capabilities and instructions.

    "Servers MUST implement it."  The server's identity rides in ``_meta``, as on every modern result.
    """
    server = connection.server
    result = {
        "supportedVersions": lifecycle.supported_versions(),
        "capabilities": server.capabilities(connection.version_for(context)),
    }
    if server.instructions:
        result["instructions"] = server.instructions
    return result


#: Every request method a modern (2026-07-28) request may name.  Gone from the handshake era's
#: table: ``initialize``, ``ping``, ``logging/setLevel``, ``resources/subscribe`` and
#: ``resources/unsubscribe`` (changelog, "Remove ping, logging/setLevel ..."; "Replace ...
#: resources/subscribe/resources/unsubscribe with subscriptions/listen").
#: (An extension's methods are added per server: ``Extension.methods``, ``Server.extension_method``.)
MODERN_METHODS = MethodTable(
    {
        "server/discover": discover,
        **_FEATURES,
        # returns None: the request stays open (context.defer), so its result is never used
        "subscriptions/listen": "subscriptions:listen",
    }
)

#: The capability a method needs: 2025-11-25 basic/lifecycle §Operation, "Only use capabilities
#: that were successfully negotiated".  (``completion/complete`` needs none at 2024-11-05, which
#: had the method but not the capability.)
CAPABILITY_OF = {
    "tools/list": "tools",
    "tools/call": "tools",
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "resources/read": "resources",
    "resources/subscribe": "resources",
    "resources/unsubscribe": "resources",
    "prompts/list": "prompts",
    "prompts/get": "prompts",
    "logging/setLevel": "logging",
    "completion/complete": "completions",
}


#: Open ``subscriptions/listen`` streams a server holds by default (``Server(max_subscriptions=)``).
DEFAULT_MAX_SUBSCRIPTIONS = 1024


# -- the item gate of a server without one -------------------------------------------------------


class OpenGate:
    """The default :class:`~mcp_ref.server.seams.Gate`: every principal may use every item.  Its
    methods take the protocol's arguments, and read none but what they hand back."""

    restricts = False

    def allows(self, *question: Any, **options: Any) -> bool:
        """Always True."""
        return True

    resource_allowed = allows  # always True too

    def visible(
        self, principal: Any, action: str, name: str, entry: Any, *more: Any, **options: Any
    ) -> Any:
        """``entry`` itself."""
        return entry

    def visible_resource(
        self, principal: Any, uri: str, found: Any, *more: Any, **options: Any
    ) -> Any:
        """``found`` itself."""
        return found

    def filter_listing(self, principal: Principal | None, kind: str, items: list) -> list:
        """All of ``items``."""
        return items


#: The gate of a server none of whose extensions has one.
OPEN = OpenGate()


# -- caching hints (2026-07-28 server/utilities/caching) -------------------------------------------
# ``ttlMs`` and ``cacheScope`` on cacheable results, added by the dispatcher of a modern request.
# "Servers MUST include caching hints on results with resultType: "complete"
# returned by" ``server/discover``, the four listings and ``resources/read``;
# "Servers MUST provide a ttlMs value that is >= 0".  Interim
# ``input_required`` results carry none.  The hints come from
# ``Server(ttl_ms=, cache_scope=)``, and for ``resources/read`` from the
# resource itself when it sets its own (``@server.resource(uri, ttl_ms=...)``).

CACHEABLE = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)


def add_hints(server: Server, method: str, params: dict, result: dict) -> None:
    """Put the caching hints on a complete ``result`` of ``method``, if it is cacheable."""
    if method not in CACHEABLE:
        return
    ttl_ms, scope = server.cache_hints
    if method == "resources/read":
        uri = params.get("uri")
        found = server.find_resource(uri) if isinstance(uri, str) else None
        if found is not None:  # the resource's own hints, where it sets them
            ttl_ms, scope = found[0].hints(ttl_ms, scope)
    if server.gate.restricts and method != "server/discover":
        # What a caller may see is its own, so "private" outright, even over a scope the result
        # carries (a proxy keeps its target's): 2026-07-28 server/utilities/caching §Cache Scope
        # Field: "private": "Caches MUST NOT be shared across authorization contexts".
        result["cacheScope"] = "private"
    result.setdefault("ttlMs", ttl_ms)
    result.setdefault("cacheScope", scope)


class ServerConnection:
    """The server side of one connection: the session's dispatcher and the negotiated state.

    ``lifecycle`` is where the connection stands (:class:`~mcp_ref.lifecycle.Lifecycle`);
    ``client_capabilities`` and ``client_info`` come from ``initialize``;
    ``capabilities`` is what this server declared; ``log_level`` is the
    client's ``logging/setLevel`` (None: everything); ``subscriptions`` the
    URIs it subscribed to.
    """

    def __init__(self, server: Server, transport, **session_options):
        self.server = server
        self.session = Session(transport, self, **session_options)
        self.lifecycle = Lifecycle(lifecycle.SERVER)
        self.client_capabilities: dict = {}
        self.client_info: dict = {}
        self.capabilities: dict = {}
        self.subscriptions: set[str] = set()
        #: Its number: ``connection-<n>`` names its caller when nothing better does (numbered now:
        #: two first looks at :attr:`principal` agree).
        self.serial = next(_SERIALS)

    # Starting values, replaced on the instance when they change (a one-request HTTP connection
    # changes few of them).
    log_level: str | None = None
    #: True: served without a session, one request only (assume_initialized; a stateless HTTP
    #: initialize sets it first, so the capabilities it declares promise no notification)
    stateless = False
    #: ``(request id, Envelope)`` when the transport already read that request's envelope
    #: (2026-07-28 HTTP checks it against the headers first): not read twice.
    envelope_read: tuple[Any, lifecycle.Envelope] | None = None
    #: Who is calling (``mcp_ref.oauth.resource.AccessInfo``), when the transport authenticates
    #: its requests (HTTP with ``auth=``); None otherwise.  ``Context.auth`` reads it.
    auth: Any = None
    #: The caller as the transport knows it, without a token (``stdio``, ``http-session:...``,
    #: ``http-client:<address>``); None: ``connection-<n>``.  See :attr:`principal`.
    peer: str | None = None
    #: Who the caller is beyond this session, when the transport knows (an HTTP session's
    #: ``http-client:<address>``): what its per-caller limits count against (``Principal.limit_id``).
    client: str | None = None
    #: Ids of requests an HTTP middleware step already admitted (counted) before dispatch, so that an
    #: extension's ``intercept_request`` does not count them again: noted by
    #: :class:`mcp_ref.http.server.middleware.Admission`; None while it noted none.
    admitted: dict[Any, bool] | None = None
    _principal: Principal | None = None

    @property
    def principal(self) -> Principal:
        """Who is calling (:class:`~mcp_ref.extensions.policy.Principal`): the token's client and
        subject when there is one, else :attr:`peer`.  Follows ``auth`` (a step-up's new scopes)."""
        principal = self._principal
        if principal is None or principal.auth is not self.auth:
            from .principal import principal_of  # a plain stdio server never asks who calls

            principal = self._principal = principal_of(self)
        return principal

    @property
    def owner(self) -> str | None:
        """The caller that what this server hands out is bound to (an MRTR ``requestState``, a task):
        the :attr:`principal`'s ``id`` when the request carried a verified token, else None (whoever
        holds the handle).  A string, so that it compares equal after a JSON round trip (a sealed
        tuple came back as a list and matched no one: issue 20)."""
        return self.principal.id if self.auth is not None else None

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
        self.stateless = True
        self.negotiate(lifecycle.STATELESS, version, {}, {})

    def negotiate(
        self, event: str, version: str, client_capabilities: dict, client_info: dict
    ) -> bool:
        """Take the lifecycle's ``event`` (False: not now), recording what was negotiated as it
        moves: the version, what the client declared, and the capabilities this server declares."""

        def apply() -> None:
            self.session.protocol_version = version
            self.client_capabilities = client_capabilities
            self.client_info = client_info
            self.capabilities = self.server.capabilities(version, self)

        return self.lifecycle.advance(event, apply)

    def holds(self, request_id, *, ours: bool) -> bool:
        """See :meth:`Session.holds <mcp_ref.session.Session.holds>`."""
        return self.session.holds(request_id, ours=ours)

    # -- the Dispatcher protocol -------------------------------------------------------------

    def version_for(self, context: RequestContext) -> str | None:
        """The revision a request speaks: its own (2026-07-28), else the one this connection negotiated."""
        return self.protocol_version if context.envelope is None else context.envelope.version

    def handle_request(self, context: RequestContext, method: str, params: dict) -> dict:
        """Route one request to its handler, inside the extensions' ``intercept_request``: then the
        method table, lifecycle, capabilities."""
        hooks = self.server.request_hooks
        if hooks:
            # the extensions' seams: loaded by the first extension
            from .seams import Call, run_chain

            return run_chain(
                hooks,
                Call(self, context, method, params),
                lambda: self._route(context, method, params),
            )
        return self._route(context, method, params)

    def _route(self, context: RequestContext, method: str, params: dict) -> dict:
        read = self.envelope_read
        # -32602 / -32022 for a broken envelope
        modern = (
            read[1]
            if read is not None and read[0] == context.request_id
            else lifecycle.read_envelope(params)
        )
        if modern is not None:
            return self.handle_modern(context, method, params, modern)
        handler = METHODS.get(method) or self.server.extension_method(method, self.protocol_version)
        if handler is None:
            raise MethodNotFound(f"Method not found: {method}")
        self.lifecycle.check_receive(method)
        capability = CAPABILITY_OF.get(method)
        # (resources/subscribe without ``subscribe`` declared: mcp_ref.server.resources.subscribable)
        if (
            capability is not None
            and self.capabilities.get(capability) is None
            # 2024-11-05 had completion/complete but no capability for it
            and (
                capability != "completions"
                or self.session.protocol_version_at_least(lifecycle.COMPLETIONS_CAPABILITY)
            )
        ):
            raise MethodNotFound(
                f"Method not found: this server does not offer {capability} ({method})"
            )
        return handler(self, context, params)

    def handle_modern(
        self, context: RequestContext, method: str, params: dict, modern: lifecycle.Envelope
    ) -> dict:
        """Serve one 2026-07-28 request on its own: no handshake, no state from earlier requests.

        basic/index §Statelessness: "Servers MUST NOT rely on prior requests over the same
        connection to establish context".  The result carries ``resultType`` and the server's
        identity, plus caching hints where the method is cacheable; a handler that needs the
        client ends in an ``InputRequiredResult`` (:mod:`mcp_ref.server.input_required`).
        """
        server = self.server
        handler = MODERN_METHODS.get(method) or server.extension_method(method, modern.version)
        if handler is None:
            raise MethodNotFound(f"Method not found: {method}")
        context.envelope = modern
        capability = CAPABILITY_OF.get(method)
        if capability is not None and not server.offers(capability, modern.version):
            raise MethodNotFound(
                f"Method not found: this server does not offer {capability} ({method})"
            )
        if "requestState" in params or "inputResponses" in params:
            # a retry: only then is MRTR's machinery loaded
            from .input_required import take_inputs

            take_inputs(self, context, method, params)
        try:
            result = handler(self, context, params)
            if context.deferred:
                return result  # a subscriptions/listen stream: its answer, if any, comes later
        except McpError as exc:
            if exc.code != RESOURCE_NOT_FOUND:
                raise
            # -32002 is never a 2026-07-28 answer: the one mapping, a failed task's too
            from .seams import modern_error

            raise modern_error(exc) from None
        except BaseException as exc:
            # A handler's ask whose answer the request lacks raises InputRequired (a BaseException,
            # so that its own ``except Exception`` cannot swallow it); the ask loaded its module, so
            # while seams is not loaded no exception can be one.  Any other exception goes on to
            # the session, which answers it.
            seams = sys.modules.get("mcp_ref.server.seams")
            if seams is None or not isinstance(exc, seams.InputRequired):
                raise
            from .input_required import input_required_result

            return input_required_result(self, context, method, params, exc)
        result = dict(result)
        # tools/call: the one modern method that is never cacheable, and the most frequent
        if method != "tools/call":
            add_hints(server, method, params, result)
        return lifecycle.complete_result(result, server.server_info(modern.version))

    # -- for transports: what an HTTP server may ask of a connection -------------------------------

    @property
    def transport(self):
        """The transport this connection is served on."""
        return self.session.transport

    def dispatch(
        self, message, *, inline: bool = False, envelope: lifecycle.Envelope | None = None
    ) -> None:
        """Hand an already-parsed message (or batch) to the session (see :meth:`Session.dispatch`).

        ``envelope``: the 2026-07-28 envelope of ``message`` (a request), when the transport already
        read it (HTTP checks it against the headers first): it is not read again.
        """
        if envelope is not None:
            self.envelope_read = (message.id, envelope)
        self.session.dispatch(message, inline=inline)

    def cancel_incoming(self, request_id) -> bool:
        """Cancel a request of the client's that no one can receive the answer of (see
        :meth:`Session.cancel_incoming`)."""
        return self.session.cancel_incoming(request_id)

    def close(self) -> None:
        """End the connection (see :meth:`Session.close`)."""
        self.session.close()

    def read_own_resource(self, context: RequestContext, uri: str) -> dict:
        """This server's ``resources/read`` of ``uri`` for a handler already serving ``context``
        (no gates: the request being served already passed them)."""
        return METHODS["resources/read"](self, context, {"uri": uri})

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

    def ended(self) -> None:
        """The connection ended for good: its input ended or it was closed (the session's reader
        says so), or it was an HTTP session that ended for good (the HTTP application says so).
        Each extension's ``connection_ended`` is told (:func:`mcp_ref.server.seams.tell_ended`)."""
        if self.server.extensions:
            from .seams import tell_ended  # a plain server has none to tell

            tell_ended(self)

    # -- sending to the client --------------------------------------------------------------

    def request(
        self,
        method: str,
        params: dict | None,
        *,
        timeout: float | None | Default = DEFAULT,
        related_request_id=None,
    ) -> dict:
        """Send a request to the client and wait for its result (CapabilityError when out of phase)."""
        self.lifecycle.check_send(method)
        return self.session.request(
            method, params, timeout=timeout, related_request_id=related_request_id
        )

    def notify(self, method: str, params: dict | None = None, *, related_request_id=None) -> None:
        """Send a notification to the client (dropped quietly when out of phase or the connection has closed)."""
        if not self.lifecycle.may_notify(method):
            log.debug(
                "notification %s dropped: not allowed in phase %s",
                method,
                self.lifecycle.phase.value,
            )
            return
        try:
            self.session.notify(method, params, related_request_id=related_request_id)
        except ConnectionError:
            log.debug("notification %s dropped: connection closed", method)

    def log(
        self,
        level: str,
        data: Any,
        logger: str | None = None,
        *,
        related_request_id=None,
        envelope: lifecycle.Envelope | None = None,
    ) -> bool:
        """Send ``notifications/message`` if ``level`` is at or above the client's chosen level (True
        when sent): :func:`mcp_ref.server.logging.send_log`.  For a 2026-07-28 request
        (``envelope``) that level is the request's own."""
        from .logging import send_log

        return send_log(self, level, data, logger, related_request_id, envelope)

    def list_changed(self, kind: str) -> None:
        """Tell the client a listing changed, if that capability declared ``listChanged``."""
        if self.capabilities.get(kind, {}).get("listChanged"):
            self.notify(f"notifications/{kind}/list_changed")
