"""The client side of one connection: its era, the lifecycle, the caller's requests, and what the
server sends.

:class:`ClientConnection` is the session's dispatcher, as
:class:`~mcp_ref.server.connection.ServerConnection` is on the other side.  It chooses the era
when it connects (:meth:`ClientConnection.connect`: the 2026-07-28 probe, else the handshake),
keeps what was negotiated or discovered, gates what the client sends by the lifecycle table
(:data:`mcp_ref.lifecycle.RULES`), starts the caller's requests, and hands the server's
requests and notifications to :mod:`mcp_ref.client.answering`.

A request of the caller's (``client.call_tool()``, ``client.request()`` ...) is a :class:`Call`:
in the handshake era one JSON-RPC request and its answer.  In the 2026-07-28 era it is a
:class:`ModernCall`, which may take several requests on the wire, each with a new id:

* ``input_required`` (MRTR, 2026-07-28 basic/patterns/mrtr): the client answers the
  ``inputRequests`` with its sampling, elicitation and roots handlers — the same ones that answer
  a handshake-era server's requests — and retries with ``inputResponses`` and the
  ``requestState`` echoed exactly (:mod:`mcp_ref.client.mrtr`, loaded at the first such round);
* ``UnsupportedProtocolVersionError`` (-32022): retry with a version from its ``supported`` list
  (basic/versioning: the client "SHOULD select a mutually supported version from the
  ``supported`` list and retry the request");
* a lost HTTP response stream: re-issue the request with a new id (changelog, SEP-2575:
  "clients MUST re-issue it as a new request with a new request ID");
* ``HeaderMismatch`` (-32020) for a ``tools/call`` over HTTP: list the tools again (from the
  server, not the result cache), then retry once when the tool's ``x-mcp-header`` parameters
  are now other than the call sent (a tool not listed before, or one the server changed).

Every one of these is bounded (``Client(max_input_rounds=)``, default :data:`MAX_INPUT_ROUNDS`;
the retries by :data:`mcp_ref.client.mrtr.RETRIES`: one version retry, one header retry,
:data:`~mcp_ref.client.mrtr.MAX_REISSUES` re-issues).  A call whose first answer is its final result
needs none of it; any other goes on in :mod:`mcp_ref.client.mrtr`, loaded then.  A modern server has no handshake:
the client learns its era once (:func:`probe`), and from then on every request names its own
protocol version and capabilities in ``_meta`` (:func:`with_envelope`).

What only some clients need loads when it is first needed, so a plain client reads none of it:
listen streams (:mod:`mcp_ref.client.listening`), the result cache
(:mod:`mcp_ref.client.cache`), the tool headers of HTTP (:mod:`mcp_ref.client.tool_headers`), the
answering of the server's requests and notifications (:mod:`mcp_ref.client.answering`).  What
the client's extensions add (:class:`~mcp_ref.extension.Extension`) reaches it through two doors
only: :meth:`ClientConnection.start` passes every request the client their ``start_request`` hooks (which may return a call of their own: extend :class:`Call` or
:class:`ModernCall`, whose ``settle`` receives a ``resultType`` of theirs),
:meth:`ClientConnection.handle_request` every request of the server's through their methods and
``intercept_request`` hooks.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from .. import lifecycle
from ..errors import (
    CapabilityError,
    HeaderMismatchError,
    McpError,
    MCPRefError,
    RequestCancelled,
    RequestTimeout,
    ResponseStreamLost,
    UnsupportedProtocolVersionError,
)
from ..lifecycle import MODERN_VERSIONS, SUPPORTED_VERSIONS, Lifecycle
from ..request import DEFAULT, Default, run_logged
from ..session import PendingRequest, RequestContext, Session
from ..types import DiscoverResult, InitializeResult

if TYPE_CHECKING:
    from .cache import ResultCache
    from .interfaces import ClientSettings, Connection
    from .listening import Streams
    from .tool_headers import KnownTools

#: The eras a client may ask for (``Client(era=...)``).
AUTO, MODERN, HANDSHAKE = "auto", "modern", "handshake"
ERAS = (AUTO, MODERN, HANDSHAKE)
#: How long the stdio probe waits for a server that does not answer ``server/discover`` at all
#: (stdio §Backward Compatibility: "does not respond within a reasonable timeout: the server is
#: legacy"); the default of ``Client(probe_timeout=)``.
PROBE_TIMEOUT = 10.0
#: ``input_required`` rounds one request may take before the client gives up (a server that asks
#: forever must not hold the caller forever; 2026-07-28 mrtr lets a server ask again and again).
#: The default of ``Client(max_input_rounds=)``, which bounds a task's input rounds too.
MAX_INPUT_ROUNDS = 16

#: The methods whose 2026-07-28 results may be cached: :data:`mcp_ref.client.cache.CACHEABLE`'s keys
#: (named here so that a request of another method does not load the cache).
CACHED_METHODS = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)


def resolve_era(era: str, protocol_version: str | None) -> tuple[str, str | None]:
    """Check ``Client(era=, protocol_version=)`` and return the era to use and the pinned version.

    A pinned revision implies its era; ``era="auto"`` with no version prefers the newest modern
    revision and falls back to the newest handshake one.
    """
    if era not in ERAS:
        raise ValueError(f"era must be one of {', '.join(ERAS)}, not {era!r}")
    if protocol_version is None:
        return era, None
    if protocol_version in MODERN_VERSIONS:
        if era == HANDSHAKE:
            raise ValueError(
                f"{protocol_version} is a modern revision; the handshake era speaks "
                f"{', '.join(SUPPORTED_VERSIONS)}"
            )
        return MODERN, protocol_version
    if protocol_version in SUPPORTED_VERSIONS:
        if era == MODERN:
            raise ValueError(
                f"{protocol_version} is a handshake-era revision; the modern era speaks "
                f"{', '.join(MODERN_VERSIONS)}"
            )
        return HANDSHAKE, protocol_version
    raise ValueError(
        f"unsupported protocol version {protocol_version!r}; mcp_ref speaks "
        f"{', '.join(MODERN_VERSIONS + SUPPORTED_VERSIONS)}"
    )


class ClientConnection:
    """The client side of one connection: the session's dispatcher and the negotiated state.

    ``initialize_result`` is the server's answer to ``initialize`` (None before
    it, and in the modern era); ``discover_result`` its answer to
    ``server/discover`` (modern era only); ``modern`` says which era this
    connection speaks; ``lifecycle`` is where the connection stands.  The
    handlers and callbacks are the :class:`~mcp_ref.client.Client`'s
    attributes, read when a message arrives.
    """

    def __init__(self, client: ClientSettings, transport, **session_options):
        self.client = client
        self.session = Session(transport, self, **session_options)
        self.lifecycle = Lifecycle(lifecycle.CLIENT)
        self.initialize_result: InitializeResult | None = None
        self.discover_result: DiscoverResult | None = None
        #: True once the connection speaks a modern (2026-07-28) revision.
        self.modern = False
        #: The log level asked for: every modern request carries it; a handshake-era re-initialize asks it again.
        self.log_level: str | None = None
        #: The modern ``_meta`` envelopes built (:func:`envelope_meta`); emptied when what the client declares changes.
        self.metas: dict[tuple[str, tuple[str, ...], str | None], dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._streams: Streams | None = None
        self._cache: ResultCache | None = None
        #: The tools listed, for their ``x-mcp-header`` parameters: 2026-07-28 over HTTP only
        #: (a tools page holds only the tools whose declarations are valid; a call refused with
        #: -32020 lists them again).
        self.known_tools: KnownTools | None = None
        #: ``tools/list_changed`` received and sessions begun so far: what was learnt from a listing made before is stale.
        self.tools_changed = 0
        #: What the HTTP client transport offers beyond the transport contract
        #: (``transports.http_client.ClientHooks``); None off HTTP.  The one optional lookup on a
        #: transport (see ``session.py`` ``Transport``).
        self.http_hooks: Any = getattr(transport, "http_hooks", None)
        if self.http_hooks is not None:  # Streamable HTTP: a new session after 404
            from .renewal import renew

            self.http_hooks.set_reinitialize(functools.partial(renew, self))

    @property
    def protocol_version(self) -> str | None:
        """The revision in use (None before the handshake or the probe)."""
        return self.session.protocol_version

    @property
    def streams(self) -> Streams:
        """The open listen streams (:class:`mcp_ref.client.listening.Streams`, made when first needed)."""
        with self._lock:
            if self._streams is None:
                from .listening import Streams

                self._streams = Streams(self)
            return self._streams

    def stop_feed(self) -> None:
        """Close the callbacks' stream for good, if one was made (the client is closing)."""
        if self._streams is not None:
            self._streams.stop_feed()

    @property
    def cache(self) -> ResultCache:
        """2026-07-28 results kept by their ``ttlMs`` (:mod:`mcp_ref.client.cache`; made when first needed)."""
        with self._lock:
            if self._cache is None:
                from .cache import ResultCache

                self._cache = ResultCache(self.client.cache_size)
            return self._cache

    # -- choosing the era ----------------------------------------------------------------------

    def connect(
        self,
        era: str,
        pinned: str | None,
        timeout: float | None | Default,
        probe_timeout: float,
    ) -> None:
        """Speak the modern era if the server does (``era`` ``"auto"`` or ``"modern"``), else the handshake.

        2026-07-28 basic/versioning §Backward Compatibility: a client for both eras "detects
        the server's era with transport-specific mechanics": :func:`probe`,
        which waits at most ``probe_timeout`` seconds for an answer on a stream transport.
        ``pinned`` is a revision the caller insists on (None: the newest).  A server found to
        speak the handshake only is spoken to as :func:`mcp_ref.client.fallback.initialize_instead`
        says (loaded then).
        """
        if era == HANDSHAKE:
            self.initialize(timeout)
            return
        wait = self.session.default_timeout if timeout is DEFAULT else timeout
        # ``timeout`` bounds connecting: the probe and then ``initialize`` share one deadline
        began = time.monotonic()
        try:
            # over HTTP every request gets an HTTP status: the probe needs no timeout of its own
            self.discover(pinned, wait, None if self.http_hooks is not None else probe_timeout)
            return
        except MCPRefError as exc:
            found = exc
        # past the except: the handshake's own errors are not chained to the probe's finding
        from .fallback import initialize_instead  # raises found unless it is a LegacyServer

        initialize_instead(self, found, era == MODERN, wait, began)

    def discover(self, pinned: str | None, timeout: float | None, bounded: float | None) -> None:
        """Speak 2026-07-28 if the server does (:func:`probe`, whose arguments these are); else
        raise what the probe raised (a handshake-era server: a ``LegacyServer``), nothing changed."""
        version, result = probe(self, pinned, timeout, bounded=bounded)

        def discovered() -> None:
            self.session.protocol_version = version
            self.discover_result = result
            self.modern = True
            # 2026-07-28 basic/transports/stdio: "The client MUST NOT write JSON-RPC responses"
            self.session.answers = False

        self.lifecycle.advance(lifecycle.STATELESS, discovered)
        if self.http_hooks is not None:  # HTTP: no session from now on; the Mcp-Param-* headers
            from .tool_headers import KnownTools

            self.known_tools = KnownTools(self)
            self.http_hooks.stateless(self.known_tools.input_schema)

    def initialize(
        self,
        timeout: float | None | Default = DEFAULT,
        *,
        refused: Callable[[], bool] | None = None,
    ) -> None:
        """The handshake: ``initialize``, accept the server's version, then ``notifications/initialized``.

        ``timeout`` bounds the ``initialize`` request (default: the connection's request timeout).
        ``refused``: called when the server refuses ``initialize`` with -32022 (after a probe that
        went unanswered: :func:`mcp_ref.client.fallback.initialize_instead`); True when it connected
        otherwise, else the refusal is raised.
        Run once when the client is created, and again by a transport whose
        server forgot the session (Streamable HTTP's 404: :mod:`mcp_ref.client.renewal`).
        """
        client = self.client
        params = {
            "protocolVersion": client.requested_version,
            "capabilities": client.capabilities(),
            "clientInfo": client.client_info,
        }
        try:
            raw = self.request("initialize", params, timeout=timeout)
        except UnsupportedProtocolVersionError:
            if refused is None or not refused():
                raise
            return
        result = built(InitializeResult.from_wire, "initialize", raw, client.requested_version)
        # "If the client does not support the version in the server's response, it SHOULD
        # disconnect" (2025-11-25 basic/lifecycle §Version Negotiation); pinned, it supports one.
        version = lifecycle.client_accept_version(result.protocol_version, client.pinned_version)

        def negotiated() -> None:
            self.session.protocol_version = version
            self.initialize_result = result
            # a new session (after a 404: perhaps a new server) lists its tools anew
            self.tools_changed += 1

        self.lifecycle.advance(lifecycle.INITIALIZE_ANSWERED, negotiated)
        if self.http_hooks is not None:  # HTTP: the version header from now on, the GET stream
            self.http_hooks.initialized(version)
        # 2025-11-25 basic/lifecycle: "After successful initialization, the client MUST send
        # an initialized notification to indicate it is ready to begin normal operations."
        self.notify("notifications/initialized")

    # -- sending -----------------------------------------------------------------------------

    def send_request(
        self, method: str, params: dict | None = None, *, declares: tuple[str, ...] = (), **options
    ) -> PendingRequest:
        """Send one JSON-RPC request without waiting (CapabilityError, unsent, when the lifecycle
        forbids it now); in the modern era it carries the envelope, its capabilities declaring the
        extensions named in ``declares`` too (2026-07-28 per-request capabilities)."""
        self.lifecycle.check_send(method)
        if self.modern:
            params = with_envelope(params, envelope_meta(self, declares=declares))
        return self.session.send_request(method, params, **options)

    def start(self, method: str, params: dict | None = None, **options) -> Call:
        """Start a request of the caller's through the client's extensions (each one's
        ``start_request``, the first given outermost), then as :meth:`send_call` does.

        ``options`` are :meth:`Session.send_request`'s, ``declares`` (see :meth:`send_request`) and
        those an extension takes out (an option no extension took is a TypeError)."""
        start = self.send_call
        for extension in reversed(self.client.extensions):
            start = functools.partial(extension.start_request, self, start=start)
        return start(method, params, options)

    def send_call(self, method: str, params: dict | None, options: dict) -> Call:
        """Start a request (the innermost step of :meth:`start`): a :class:`Call`, or in
        the modern era a :class:`ModernCall`, which may take several rounds."""
        declares = options.pop("declares", ())
        return (ModernCall if self.modern else Call)(self, method, params, options, declares)

    def request(self, method: str, params: dict | None = None, **options) -> dict:
        """Send a request and wait for its final result (options as :meth:`Session.send_request`).

        In the modern era a cacheable result still fresh by its ``ttlMs`` comes from
        :attr:`cache` instead of the server (2026-07-28 server/utilities/caching), and the
        server's result is kept there (:meth:`~mcp_ref.client.cache.ResultCache.fetch`).
        """
        if not self.modern or method not in CACHED_METHODS:
            return self.start(method, params, **options).result()
        return self.cache.fetch(method, params, lambda: self.start(method, params, **options))

    def require_capability(self, capability: str, method: str) -> None:
        """CapabilityError, naming ``method``, unless the server declared ``capability``.

        2025-11-25 basic/lifecycle §Operation: both parties MUST "Only use capabilities that were
        successfully negotiated"."""
        if capability not in self.client.server_capabilities:
            raise CapabilityError(
                f"{method}: the server did not declare the {capability} capability"
            )

    def notify(self, method: str, params: dict | None = None) -> None:
        """Send a notification (CapabilityError, unsent, when the lifecycle forbids it now)."""
        if not self.lifecycle.may_notify(method):
            raise CapabilityError(self.lifecycle.rules.unsent.format(method=method))
        self.session.notify(method, params)

    # -- the Dispatcher protocol: what the server sends ---------------------------------------

    def handle_request(self, context: RequestContext, method: str, params: dict) -> dict:
        """Answer a request of the server's, in both eras
        (:func:`mcp_ref.client.answering.answer_request`)."""
        # Loaded with the first request of the server's: a plain client is sent none.
        from .answering import answer_request

        return answer_request(self, context, method, params)

    def handle_notification(self, method: str, params: dict) -> None:
        """Route a notification of the server's to a listen stream or the client's callbacks
        (:func:`mcp_ref.client.answering.route_notification`)."""
        # Loaded with the first notification of the server's: a plain client is sent none.
        from .answering import route_notification

        route_notification(self, method, params, self._cache, self._streams)

    def ended(self) -> None:
        """The connection ended for good: its input ended or it was closed (the session's reader
        says so).  Each of the client's extensions' ``connection_ended`` is told; one that raises
        is logged, and the others are told."""
        for extension in self.client.extensions:
            run_logged(extension.connection_ended, (self,))


# -- the caller's requests: a Call in either era, a ModernCall's rounds in 2026-07-28 -------------


class Call:
    """One request of the caller's: ``result()`` waits for its result, ``cancel()`` stops it."""

    #: ``input_required`` rounds answered so far (2026-07-28; a result reached through any is not cached).
    rounds = 0

    def __init__(
        self,
        connection: Connection,
        method: str,
        params: dict | None,
        options: dict,
        declares: tuple[str, ...] = (),
    ):
        #: The connection the call travels on.
        self.connection = connection
        self.method = method
        #: Its params as the caller gave them (each 2026-07-28 round sends them again, with more).
        self.params = params
        #: Its options (:meth:`Session.send_request`'s), given to each request it sends.
        self.options = options
        #: The extensions its 2026-07-28 per-request capabilities declare (on every round).
        self.declares = declares
        #: The JSON-RPC request on the wire now.
        self.pending: PendingRequest = connection.send_request(
            method, params, declares=declares, **options
        )

    @property
    def id(self):
        """The JSON-RPC id of the request on the wire now."""
        return self.pending.id

    def done(self) -> bool:
        """True once the call has settled."""
        return self.pending.done()

    def cancel(self, reason: str | None = None) -> bool:
        """Cancel the request (the server is told, as the transport requires); False if it had finished."""
        return self.pending.cancel(reason)

    def result(self) -> dict:
        """Wait for the result (raises RequestTimeout, RequestCancelled, McpError ...)."""
        return self.pending.result()


class ModernCall(Call):
    """One request of the caller's, across the rounds the modern era may need (see the module
    docstring).  ``result()`` waits for the final result; ``cancel()`` stops it at any round.

    A first answer that is a complete result is the result; past any other (``input_required``,
    an error retried) the call goes on in :mod:`mcp_ref.client.mrtr` (loaded then), which also
    decides :meth:`done` and :meth:`cancel`."""

    def __init__(
        self,
        connection: Connection,
        method: str,
        params: dict | None,
        options: dict,
        declares: tuple[str, ...] = (),
    ):
        on_progress = options.get("on_progress")
        if on_progress is not None:
            from .mrtr import ProgressAcrossRounds

            options = dict(options, on_progress=ProgressAcrossRounds(on_progress))
        #: The reason of the ``cancel()`` that took effect (None while none did).
        self.cancel_reason: str | None = None
        #: The contexts of the input handlers running for the call now (a cancel cancels them).
        self.contexts: list[RequestContext] = []
        #: True once ``result()`` returned or raised.
        self.settled = False
        #: Orders ``cancel()`` against the call's settling.
        self.state_lock = threading.Lock()
        #: The retries made so far, by the error class that asked for each (bounded by
        #: :data:`mcp_ref.client.mrtr.RETRIES`).
        self.retries: dict[type, int] = {}
        super().__init__(connection, method, params, options, declares)

    def done(self) -> bool:
        """True once the call's outcome is fixed: ``result()`` returned or raised, a ``cancel()``
        took effect, or the answer that came ends it (``result()`` sends no ``input_required``
        round and no retry after it)."""
        with self.state_lock:
            return self.finished()

    def finished(self) -> bool:
        """:meth:`done`, under the state lock (:func:`mcp_ref.client.mrtr.finished`)."""
        from .mrtr import finished

        return finished(self)

    def cancel(self, reason: str | None = None) -> bool:
        """Cancel the call at whatever round it is (:func:`mcp_ref.client.mrtr.cancel`):
        ``result()`` then raises RequestCancelled.  False if the call's outcome was fixed already
        (:meth:`done`)."""
        from .mrtr import cancel

        return cancel(self, reason)

    def result(self) -> dict:
        """Wait for the final result: answer ``input_required`` rounds, retry as the module says."""
        try:
            try:
                answer = self.pending.result()
            except (UnsupportedProtocolVersionError, ResponseStreamLost, HeaderMismatchError):
                answer = None  # perhaps retried: mcp_ref.client.mrtr.RETRIES
            # absent: "MUST treat ... as complete"
            if answer is None or answer.get("resultType", lifecycle.COMPLETE) != lifecycle.COMPLETE:
                from .mrtr import drive

                return drive(self)
            # the answer came after a cancel() that took effect (it said True): that wins
            self.check_cancelled()
            return answer
        finally:
            with self.state_lock:
                self.settled = True

    def settle(self, kind: str, result: dict) -> dict:
        """The final result of an answer whose ``resultType`` is neither complete nor input_required:
        an error here; a call that declares an extension defining ``kind`` overrides it."""
        raise McpError(
            f"{self.method}: the server answered with resultType {kind!r}, which this "
            f"client did not ask for"
        )

    def check_cancelled(self) -> None:
        """RequestCancelled if a ``cancel()`` took effect."""
        if self.cancel_reason is not None:
            raise RequestCancelled(f"{self.method}: cancelled ({self.cancel_reason})")


# -- the 2026-07-28 era: the probe, the per-request envelope, the version retry -------------------


def built(build: Callable[[dict], Any], method: str, result: dict, version: str | None) -> Any:
    """``build(result)``: the result of ``method`` as its type.  A result without the shape of
    that type (``build`` raises TypeError: a required key missing, an object or an array that is
    not one) raises :class:`~mcp_ref.errors.InvalidResult`, in the wire's words, made by
    :mod:`mcp_ref.client.invalid_results` (loaded only then; ``version``: the revision spoken); a tool
    result of more than text, and the server's capabilities, are checked further there too."""
    try:
        made = build(result)
    except TypeError as exc:
        from .invalid_results import invalid_result

        raise invalid_result(method, result, version, exc) from None
    if not _plain(method, result):
        from .invalid_results import check_result

        check_result(method, result, version)
    return made


def _plain(method: str, result: dict) -> bool:
    """True for a result holding only what building it checked: an ``initialize`` or
    ``server/discover`` result whose capabilities are an object of objects (schema.json
    ServerCapabilities: each member an object), a tool result of text blocks (``type`` and
    ``text``), ``isError``, and object ``structuredContent`` and ``_meta``; any other is checked
    further (:func:`~mcp_ref.client.invalid_results.check_result`)."""
    if method in ("initialize", "server/discover"):
        members = result["capabilities"]
        return isinstance(members, dict) and all(isinstance(m, dict) for m in members.values())
    return method not in ("tools/call", "tasks/result") or (
        isinstance(result.get("structuredContent", {}), dict)
        and isinstance(result.get("_meta", {}), dict)
        and all(
            type(b) is dict and b.get("type") == "text" and len(b) == 2
            for b in result.get("content", ())
        )
    )


def probe(
    connection: Connection,
    pinned: str | None,
    timeout: float | None,
    *,
    bounded: float | None,
) -> tuple[str, DiscoverResult]:
    """Ask ``server/discover``; return the version to speak and the server's answer.

    With ``bounded`` (stream transports, where no HTTP status drives the fallback:
    ``Client(probe_timeout=)``, in seconds) it waits at most that long.  What any other outcome
    means is :mod:`mcp_ref.client.fallback`'s to say (loaded then): a handshake-era server
    (its ``LegacyServer`` raised), or an error raised as it is.  -32022 is retried once, with a
    version from the error's ``supported`` list.
    """
    version = pinned or MODERN_VERSIONS[0]
    wait = timeout
    if bounded is not None:
        wait = bounded if timeout is None else min(timeout, bounded)
    retried = False
    while True:
        params = {"_meta": envelope_meta(connection, version)}
        try:
            raw = connection.session.request("server/discover", params, timeout=wait)
        except UnsupportedProtocolVersionError as exc:
            from .fallback import choose_version

            # A modern server that does not speak ``version``: "Use one of the versions in its
            # advertised supported list. Do not fall back to initialize."  Once.
            version = choose_version(exc.supported, pinned, retried=retried)
            retried = True
            continue
        except (McpError, RequestTimeout) as exc:
            from .fallback import judge_refusal

            judge_refusal(exc, bounded)
        try:
            result: DiscoverResult | None = DiscoverResult.from_wire(raw)
        except TypeError:
            result = None
        # Not a DiscoverResult: a server that answers any method it does not know with
        # something; "any other" answer than a modern one identifies a legacy server.
        if (
            result is None
            or not isinstance(result.supported_versions, list)
            or not isinstance(result.capabilities, dict)
        ):
            from .fallback import LegacyServer

            raise LegacyServer(None)
        # a modern server's answer: InvalidResult if it does not have the shape (its capabilities)
        built(DiscoverResult.from_wire, "server/discover", raw, version)
        offered = [v for v in result.supported_versions if isinstance(v, str)]
        if version in offered:
            return version, result
        from .fallback import choose_version

        return choose_version(offered, pinned), result


def with_envelope(params: dict | None, meta: dict) -> dict:
    """A copy of a request's params with the envelope's keys added to its ``_meta`` (keys the caller
    put there, such as trace context, are kept)."""
    out = dict(params or {})
    own = out.get("_meta")
    out["_meta"] = {**own, **meta} if isinstance(own, dict) else dict(meta)
    return out


def envelope_meta(
    connection: Connection, version: str | None = None, *, declares: tuple[str, ...] = ()
) -> dict:
    """The ``_meta`` of a modern request: version, capabilities, client info, log level.

    2026-07-28 basic/index §_meta: every request carries ``protocolVersion`` and
    ``clientCapabilities``; ``clientInfo`` "SHOULD" be on every request.  ``declares``: extensions
    its capabilities declare too (an extension declared "in its per-request capabilities", SEP-2663),
    with no settings.  Built once per version, ``declares`` (a few: the calls of the client's
    extensions) and log level (9 of them), and kept in ``connection.metas``, which the client
    empties when what it declares changes; shared, so never changed.
    """
    # Given (the server/discover probe), or chosen by then: every other modern request follows connect().
    version = cast(str, version or connection.protocol_version)
    key = (version, declares, connection.log_level)
    meta = connection.metas.get(key)
    if meta is None:
        capabilities = connection.client.capabilities(version)
        if declares:
            extensions: dict[str, dict] = {name: {} for name in declares}
            capabilities = {
                **capabilities,
                "extensions": {**extensions, **capabilities.get("extensions", {})},
            }
        meta = connection.metas[key] = lifecycle.request_meta(
            version, capabilities, connection.client.client_info, key[2]
        )
    return meta
