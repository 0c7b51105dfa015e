"""The client side of one connection: its era, the lifecycle, and what the server sends.

:class:`ClientConnection` is the session's dispatcher, as
:class:`~mcp_ref.server.connection.ServerConnection` is on the other side.  It
chooses the era when it connects (:meth:`ClientConnection.connect`: the
2026-07-28 probe, else the handshake), keeps what was negotiated or discovered,
gates what the client sends by the lifecycle table
(:data:`mcp_ref.core.lifecycle.RULES`), puts the per-request envelope on every
modern request, answers the server's requests through the feature modules
(:data:`METHODS`) — in the modern era the same handlers answer ``input_required``
rounds (:mod:`mcp_ref.client.modern`) — and hands notifications to the client's
callbacks on the callback thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from types import EllipsisType
from typing import TYPE_CHECKING, Any, cast

from ..core import envelope, lifecycle
from ..core.errors import CapabilityError, McpError, MethodNotFound
from ..core.lifecycle import Lifecycle
from ..core.pagination import follow_cursors
from ..core.session import PendingRequest, RequestContext, Session
from ..core.types import DiscoverResult, InitializeResult, LogMessage
from ..extras import approval
from ..extras import client_tasks as client_tasks
from . import elicitation, listening, modern, roots, sampling
from .cache import ResultCache

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
#: For each of them, the check that the client answers it at all (a handler, a declared capability).
OFFERED: dict[str, Callable[[ClientConnection], None]] = {
    **sampling.OFFERED,
    **elicitation.OFFERED,
    **roots.OFFERED,
}


class ClientConnection:
    """The client side of one connection: the session's dispatcher and the negotiated state.

    ``initialize_result`` is the server's answer to ``initialize`` (None before
    it, and in the modern era); ``discover_result`` its answer to
    ``server/discover`` (modern era only); ``modern`` says which era this
    connection speaks; ``lifecycle`` is where the connection stands.  The
    handlers and callbacks are the :class:`~mcp_ref.client.Client`'s
    attributes, read when a message arrives.
    """

    #: Tool input schemas remembered for their ``x-mcp-header`` parameters; past this many the
    #: oldest is forgotten (a call to a forgotten tool lists the tools again if the server asks).
    MAX_KNOWN_TOOLS = 4096

    def __init__(self, client: Client, transport, **session_options):
        self.client = client
        self.session = Session(transport, self, **session_options)
        self.lifecycle = Lifecycle(lifecycle.CLIENT)
        self.initialize_result: InitializeResult | None = None
        self.discover_result: DiscoverResult | None = None
        #: True once the connection speaks a modern (2026-07-28) revision.
        self.modern = False
        #: The ``io.modelcontextprotocol/logLevel`` every modern request carries (None: no log messages).
        self.log_level: str | None = None
        self._input_schemas: dict[str, dict] = {}
        self._schemas_lock = threading.Lock()
        #: Open listen streams: by request id (modern era), or filtering locally (handshake era).
        self._listens: dict[Any, listening.Subscription] = {}
        self._local_listens: list[listening.Subscription] = []
        self._listens_lock = threading.Lock()
        #: The stream behind the change callbacks and ``Client.subscribe`` (its ``uris``, both eras).
        self.feed = listening.CallbackFeed(self)
        #: 2026-07-28 results kept by their ``ttlMs`` (:mod:`mcp_ref.client.cache`).
        self.cache = ResultCache(client.cache_size)
        transport.set_reinitialize(self.initialize)

    @property
    def protocol_version(self) -> str | None:
        """The revision in use (None before the handshake or the probe)."""
        return self.session.protocol_version

    # -- choosing the era ----------------------------------------------------------------------

    def connect(self, era: str, pinned: str | None, timeout: float | None | EllipsisType = ...) -> None:
        """Speak the modern era if the server does (``era`` ``"auto"`` or ``"modern"``), else the handshake.

        2026-07-28 basic/versioning §Backward Compatibility: a client for both eras "detects
        the server's era with transport-specific mechanics": :func:`mcp_ref.client.modern.probe`.
        ``pinned`` is a revision the caller insists on (None: the newest).
        """
        wait = self.session.default_timeout if timeout is ... else timeout
        if era != modern.HANDSHAKE:
            try:
                version, result = modern.probe(self, pinned, wait, bounded=not self.session.transport.mirrors_headers)
            except modern.LegacyServer as legacy:
                if era == modern.MODERN:
                    raise McpError(f"the server does not speak {pinned or 'a modern revision'}: it did not answer "
                                   f"server/discover as a 2026-07-28 server does (a handshake-era server?)") from None
                if legacy.args[0] is not None:
                    self.client.requested_version = legacy.args[0]
                log.debug("server/discover was not answered as a modern server would: falling back to initialize")
            else:
                self._become_modern(version, result)
                return
        self.initialize(timeout)

    def _become_modern(self, version: str, result: DiscoverResult) -> None:
        def discovered() -> None:
            self.session.protocol_version = version
            self.discover_result = result
            self.modern = True

        self.lifecycle.advance(lifecycle.STATELESS, discovered)
        self.session.transport.stateless(self.input_schema)

    def adopt_version(self, error) -> None:
        """After -32022 for a request: speak a version from the error's ``supported`` list, or re-raise it."""
        choice = modern.pick_version(error.supported, self.client.pinned_version)
        if choice is None:
            raise error
        self.session.protocol_version = choice

    def envelope_meta(self, version: str | None = None, *, task: bool = False) -> dict:
        """The ``_meta`` of a modern request: version, capabilities, client info, log level.

        2026-07-28 basic/index §_meta: every request carries ``protocolVersion`` and
        ``clientCapabilities``; ``clientInfo`` "SHOULD" be on every request.  ``task``: the
        capabilities declare the tasks extension (SEP-2663: "in its per-request capabilities").
        """
        # Given (the server/discover probe), or chosen by then: every other modern request follows connect().
        version = cast(str, version or self.session.protocol_version)
        capabilities = self.client.capabilities(version)
        if task:
            capabilities = client_tasks.with_extension(capabilities)
        return envelope.request_meta(version, capabilities, self.client.client_info, self.log_level)

    # -- tools and their x-mcp-header parameters ------------------------------------------------

    def usable_tools(self, tools: list) -> list:
        """The listed tools a caller may use: in the modern era over HTTP, those whose ``x-mcp-header``
        declarations are valid, and their schemas are remembered for the headers of calls.

        2026-07-28 streamable-http §Schema Extension: "Clients using the Streamable HTTP transport
        MUST reject tool definitions" with invalid declarations, and "MUST exclude the invalid
        tool from the result of tools/list".
        """
        if not self.modern or not self.session.transport.mirrors_headers:
            return tools
        from ..transports.http_headers import InvalidHeaderDeclaration, header_params

        usable = []
        for tool in tools:
            try:
                header_params(tool.input_schema)
            except InvalidHeaderDeclaration as exc:
                log.warning("tool %r left out: %s", tool.name, exc)
                continue
            usable.append(tool)
            self._remember_schema(tool.name, tool.input_schema)
        return usable

    def _remember_schema(self, name: str, schema: dict) -> None:
        with self._schemas_lock:
            self._input_schemas.pop(name, None)
            self._input_schemas[name] = schema
            while len(self._input_schemas) > self.MAX_KNOWN_TOOLS:
                del self._input_schemas[next(iter(self._input_schemas))]

    def input_schema(self, tool: str) -> dict | None:
        """The remembered ``inputSchema`` of ``tool`` (for its ``Mcp-Param-*`` headers), or None."""
        with self._schemas_lock:
            return self._input_schemas.get(tool)

    def learn_tool_headers(self, method: str, params: dict | None) -> bool:
        """After -32020 for a ``tools/call`` of a tool not yet listed: list the tools, True when the
        call now has header parameters to send (so a retry can succeed)."""
        from ..core.types import Tool
        from ..transports.http_headers import header_params

        name = (params or {}).get("name")
        if method != "tools/call" or not isinstance(name, str) or self.input_schema(name) is not None:
            return False
        def fetch(cursor: str | None) -> dict:
            result = self.request("tools/list", {"cursor": cursor} if cursor else None)
            self.usable_tools([Tool.from_wire(t) for t in result.get("tools", []) if isinstance(t, dict)])
            return result

        for _ in follow_cursors(fetch, "tools/list", self.client.max_pages):  # bounded as Client.list_tools
            pass
        schema = self.input_schema(name)
        return schema is not None and bool(header_params(schema))

    def initialize(self, timeout: float | None | EllipsisType = ...) -> None:
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

    def send_request(self, method: str, params: dict | None = None, *, task: bool = False,
                     **options) -> PendingRequest:
        """Send one JSON-RPC request without waiting (CapabilityError, unsent, when the lifecycle
        forbids it now); in the modern era it carries the envelope, declaring the tasks extension
        when ``task``."""
        self.lifecycle.check_send(method)
        if self.modern:
            params = modern.with_envelope(params, self.envelope_meta(task=task))
        return self.session.send_request(method, params, **options)

    def start(self, method: str, params: dict | None = None, *, task: bool = False, **options) -> modern.Call:
        """Start a request of the caller's: a :class:`~mcp_ref.client.modern.Call`, which in the
        modern era may take several rounds, or become a task when ``task`` (options as
        :meth:`Session.send_request`)."""
        return modern.Call(self, method, params, options, task=task)

    def request(self, method: str, params: dict | None = None, **options) -> dict:
        """Send a request and wait for its final result (options as :meth:`Session.send_request`).

        In the modern era a cacheable result still fresh by its ``ttlMs`` comes from
        :attr:`cache` instead of the server (2026-07-28 server/utilities/caching).
        """
        key = self.cache.key(method, params) if self.modern and not options.get("task") else None
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        call = self.start(method, params, **options)
        result = call.result()
        if call.rounds == 0:  # caching §Cache Key: results of MRTR retries "MUST NOT be cached"
            self.cache.put(key, result)
        return result

    def notify(self, method: str, params: dict | None = None) -> None:
        """Send a notification (CapabilityError, unsent, when the lifecycle forbids it now)."""
        if not self.lifecycle.may_notify(method):
            raise CapabilityError(self.lifecycle.rules.unsent.format(method=method))
        self.session.notify(method, params)

    # -- change notifications ----------------------------------------------------------------

    def listen(self, wanted: dict, on_notification: listening.NotificationCallback | None,
               on_end: Callable | None = None) -> listening.Subscription:
        """Open a stream of the change notifications in filter ``wanted``; not yet acknowledged.

        Modern era: a ``subscriptions/listen`` request, open until either side ends it.  Handshake
        era: the server sends list changes unasked, so the stream is a filter over what arrives,
        and its resource URIs are subscribed with ``resources/subscribe``.
        """
        stream = listening.Subscription(self, wanted, on_notification, on_end)
        if self.modern:
            def register(request_id) -> None:
                stream.id = request_id
                with self._listens_lock:
                    self._listens[request_id] = stream

            params = modern.with_envelope({"notifications": wanted}, self.envelope_meta())
            self.lifecycle.check_send("subscriptions/listen")
            stream.attach(self.session.send_request("subscriptions/listen", params, timeout=None,
                                                    before_write=register))
            return stream
        agreed = listening.honoured(wanted, self.client.server_capabilities)
        with self._listens_lock:
            subscribed = self._subscribed_uris()
            self._local_listens.append(stream)
        for uri in agreed.get("resourceSubscriptions", ()):
            if uri not in subscribed:
                self.request("resources/subscribe", {"uri": uri})
        stream.deliver(listening.ACKNOWLEDGED, {"notifications": agreed})
        return stream

    def _subscribed_uris(self) -> set:
        """The URIs subscribed on a handshake-era server: the client's own and its open streams'."""
        uris = set(self.feed.uris)
        for stream in self._local_listens:
            uris.update((stream.acknowledged or {}).get("resourceSubscriptions", ()))
        return uris

    def forget_listen(self, request_id) -> None:
        """A modern listen stream ended: route no more to it."""
        with self._listens_lock:
            self._listens.pop(request_id, None)

    def forget_local_listen(self, stream: listening.Subscription) -> None:
        """A handshake-era stream was closed: unsubscribe the URIs nothing else wants."""
        with self._listens_lock:
            if stream not in self._local_listens:
                return
            self._local_listens.remove(stream)
            still = self._subscribed_uris()
        for uri in (stream.acknowledged or {}).get("resourceSubscriptions", ()):
            if uri not in still and not self.session.is_closed:
                try:
                    self.request("resources/unsubscribe", {"uri": uri})
                except (McpError, ConnectionError) as exc:
                    log.debug("resources/unsubscribe %s failed: %s", uri, exc)

    def notify_callbacks(self, method: str, params: dict) -> None:
        """Hand a change notification to ``on_list_changed`` / ``on_resource_updated`` (callback thread)."""
        client = self.client
        if method == "notifications/resources/updated":
            callback, argument = client.on_resource_updated, params.get("uri")
        elif method.startswith("notifications/") and method.endswith("/list_changed"):
            callback, argument = client.on_list_changed, method[len("notifications/"):-len("/list_changed")]
        else:
            return
        if callback is not None:
            self.session.call_soon(callback, argument)

    # -- the Dispatcher protocol: what the server sends ---------------------------------------

    def batches_allowed(self) -> bool:
        """Batches are part of 2024-11-05 and 2025-03-26 only."""
        return lifecycle.batches_allowed(self.session.protocol_version)

    @staticmethod
    def answers(method: str) -> bool:
        """True for a request a client answers (sampling, elicitation, roots): what an
        ``input_required`` round may ask for (2026-07-28 mrtr §InputRequests)."""
        return method in METHODS

    def handle_request(self, context: RequestContext, method: str, params: dict) -> dict:
        """Answer the server's requests: sampling, elicitation, roots — in both eras (a 2026-07-28
        ``inputRequests`` entry comes here too, from :class:`~mcp_ref.client.modern.Call`).

        A request the client answers first passes the client's ``server_request_limit`` and its
        ``approve`` hook (:func:`mcp_ref.extras.approval.approve`); a refused one is answered as
        the spec says (:func:`mcp_ref.extras.approval.refuse`): declined, or error -1.
        """
        handler = METHODS.get(method)
        if handler is None:
            raise MethodNotFound(f"Method not found: {method}")
        self.lifecycle.check_receive(method)
        OFFERED[method](self)  # what the client does not offer is not shown to the hook, nor counted
        if method in approval.GATED:
            approved = approval.approve(self, context, method, params)
            if approved is None:
                return approval.refuse(method)
            params = approved
        return handler(self, context, params)

    def handle_notification(self, method: str, params: dict) -> None:
        """Route the server's notifications: a listen stream's to that stream (by its
        ``subscriptionId``), the rest to the client's callbacks (on the callback thread)."""
        client = self.client
        # caching §Interaction with Notifications: a change notification "invalidates the cached response".
        self.cache.invalidate(method, params)
        subscription = listening.subscription_id(params)
        if subscription is not None:
            # subscriptions §Receiving Notifications: "clients MUST use this field to correlate
            # notifications with their originating subscription".
            with self._listens_lock:
                stream = self._listens.get(subscription)
            if stream is None:
                log.debug("dropped %s for unknown subscription %r", method, subscription)
            else:
                stream.deliver(method, params)
            return
        if method == "notifications/message":
            if client.on_log is not None:
                self.session.call_soon(client.on_log, LogMessage.from_wire(params))
        elif method == "notifications/elicitation/complete":
            # client/elicitation: clients MUST ignore ids they do not know; the callback decides.
            if client.on_elicitation_complete is not None:
                self.session.call_soon(client.on_elicitation_complete, params.get("elicitationId"))
        elif method == "notifications/resources/updated" or method.endswith("/list_changed"):
            self.notify_callbacks(method, params)
            with self._listens_lock:
                local = [s for s in self._local_listens if listening.wants(s.acknowledged or {}, method, params)]
            for stream in local:
                stream.deliver(method, params)
        else:
            log.debug("ignored notification %s", method)
