"""The lifecycle, as data: revisions, negotiation, and what each role may do in each phase.

Two kinds of rule live here, both as tables the rest of the code consults:

* **What each revision allows.**  Behaviour that changed between revisions is
  named by the revision that introduced it, so the code asks
  ``at_least(version, STRUCTURED_OUTPUT)`` instead of comparing dates
  (revisions are ISO dates, so string order is time order).
* **What each role may do in each phase of a connection** (:data:`RULES`,
  :data:`TRANSITIONS`): which requests it answers or refuses, which requests
  and notifications it may send, and the spec sentence behind each row.  A
  connection keeps one :class:`Lifecycle`; only a transition in the table moves
  its phase.  h11's ``_state.py`` is the model: an illegal event is a missing
  key.  In the stateless 2026-07-28 era a connection has no handshake: a
  server serves each modern request as it comes (``STATELESS``), and a client
  moves to operating once ``server/discover`` is answered.

And the modern era's negotiation, per request: the 2026-07-28 **envelope**
every modern request carries in ``_meta`` (2026-07-28 basic/index §_meta,
"Per-request protocol fields") — :func:`read_envelope`, the server's view of
a request (None for a handshake-era request, an :class:`Envelope` for a modern
one, or the error the spec requires: -32602 for a missing field, -32022 for an
unknown version); :func:`request_meta`, the client's ``_meta``;
:func:`complete_result`, a modern result with ``resultType`` and the server's
identity.  A request is modern when its ``_meta`` carries
``io.modelcontextprotocol/protocolVersion`` (2026-07-28 basic/versioning
§Backward Compatibility: "A request carrying modern per-request ``_meta`` is
served statelessly according to this revision").
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import Any

from .errors import (
    CapabilityError,
    InvalidParams,
    InvalidRequest,
    UnsupportedProtocolVersionError,
)

__all__ = [
    "__version__",
    "SUPPORTED_VERSIONS",
    "LATEST_VERSION",
    "MODERN_VERSIONS",
    "at_least",
    "batches_allowed",
    "server_choose_version",
    "client_accept_version",
    "SERVER",
    "CLIENT",
    "Phase",
    "Every",
    "Rules",
    "RULES",
    "TRANSITIONS",
    "Lifecycle",
    "Envelope",
    "read_envelope",
    "request_meta",
    "complete_result",
]

#: This package's version (``mcp_ref.__version__``).
__version__ = "0.1.0"

#: The protocol revisions mcp_ref speaks with a handshake (``initialize``), newest first.
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_VERSION = SUPPORTED_VERSIONS[0]
#: The modern revisions (no ``initialize``: each request carries its version in ``_meta``), newest
#: first.  A server answers them beside SUPPORTED_VERSIONS (see :func:`read_envelope`).
MODERN_VERSIONS = ("2026-07-28",)

# The revision in which each feature first appeared (see spec_notes/revisions.md).
AUDIO_CONTENT = "2025-03-26"
TOOL_ANNOTATIONS = "2025-03-26"
COMPLETIONS_CAPABILITY = "2025-03-26"
PROGRESS_MESSAGE = "2025-03-26"
STRUCTURED_OUTPUT = "2025-06-18"  # Tool.outputSchema, CallToolResult.structuredContent
TITLES = "2025-06-18"  # BaseMetadata.title
COMPLETION_CONTEXT = "2025-06-18"  # CompleteRequest.params.context
ELICITATION = "2025-06-18"
RESOURCE_LINKS = "2025-06-18"
ICONS = "2025-11-25"
OPTIONAL_ERROR_ID = "2025-11-25"  # JSONRPCErrorResponse.id may be omitted (and must not be null)
INPUT_ERRORS_AS_TOOL_ERRORS = "2025-11-25"  # SEP-1303
ELICITATION_URL_MODE = "2025-11-25"
SAMPLING_TOOLS = "2025-11-25"

#: JSON-RPC batches: 2025-03-26 basic §Batching made them explicit ("MUST support receiving");
#: 2024-11-05 requires plain JSON-RPC 2.0, of which §6 batches are part; 2025-06-18 removed them.
BATCH_VERSIONS = ("2024-11-05", "2025-03-26")


def at_least(version: str | None, feature_revision: str) -> bool:
    """True when ``version`` is ``feature_revision`` or newer (None: not negotiated yet, assume newest)."""
    return version is None or version >= feature_revision


def batches_allowed(version: str | None) -> bool:
    """True when JSON-RPC batches are part of the negotiated revision."""
    return version in BATCH_VERSIONS


def server_choose_version(requested: object) -> str:
    """The server's half of version negotiation.

    2025-11-25 basic/lifecycle §Version Negotiation: "If the server supports the
    requested protocol version, it MUST respond with the same version.
    Otherwise, the server MUST respond with another protocol version it
    supports. This SHOULD be the latest version supported by the server."
    """
    if requested in SUPPORTED_VERSIONS:  # a tuple: anything but one of its strings is not in it
        return requested
    return LATEST_VERSION


def client_accept_version(chosen: object, pinned: str | None = None) -> str:
    """The client's half: "If the client does not support the version in the
    server's response, it SHOULD disconnect." — raise, and the caller closes.  A client
    ``pinned`` to one revision (``Client(protocol_version=)``) supports that one alone."""
    if chosen in SUPPORTED_VERSIONS and pinned in (None, chosen):
        return chosen
    speaks = (
        f"the client is pinned to {pinned} (protocol_version)"
        if pinned
        else f"mcp_ref supports {', '.join(SUPPORTED_VERSIONS)}"
    )
    raise UnsupportedProtocolVersionError(f"server chose protocol version {chosen!r}; {speaks}")


# -- the 2026-07-28 envelope: each modern request negotiates for itself -------------------------

PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

#: 2026-07-28 basic/index §ResultType.
COMPLETE = "complete"
INPUT_REQUIRED = "input_required"
#: basic/patterns/mrtr §Supported Requests: the requests a server MAY answer ``input_required``;
#: "Servers MUST NOT send InputRequiredResult responses on any other client requests."
MRTR_METHODS = ("tools/call", "prompts/get", "resources/read")

#: RFC 5424 severities, in increasing order (2025-11-25 server/utilities/logging §Log Levels): the
#: values of ``logging/setLevel`` in the handshake era and of ``_meta`` logLevel at 2026-07-28.
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


@dataclass(frozen=True)
class Envelope:
    """The per-request protocol fields of one modern request.

    ``version`` is the protocol version it speaks; ``client_capabilities`` what
    the client declared for this request (a server "MUST NOT infer capabilities
    from prior requests"); ``client_info`` its self-reported identity (may be
    empty); ``log_level`` the lowest level of ``notifications/message`` it wants
    for this request, None for none at all.
    """

    version: str
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    client_info: dict[str, Any] = field(default_factory=dict)
    log_level: str | None = None


def meta_of(params: object) -> dict[str, Any] | None:
    """The ``_meta`` object of a request's params, or None."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta if isinstance(meta, dict) else None


def is_modern(params: object) -> bool:
    """True when a request's ``_meta`` names a protocol version: it is served statelessly."""
    meta = meta_of(params)
    return meta is not None and PROTOCOL_VERSION in meta


def answered_at_once(method: str, params: object) -> bool:
    """True for a handshake-era ``ping``: the session answers it ``{}`` on its reader thread as it
    arrives, never queued behind busy handlers.  basic/utilities/ping: "The receiver MUST respond
    promptly with an empty response"; 2026-07-28 removed ping, so a modern one goes on to the role
    (-32601)."""
    return method == "ping" and not is_modern(params)


def supported_versions() -> list[str]:
    """Every version a dual-era server answers, newest first (the ``supported`` list of -32022)."""
    return [*MODERN_VERSIONS, *SUPPORTED_VERSIONS]


def read_envelope(params: object) -> Envelope | None:
    """The envelope of a request (None: a handshake-era request), or the error the spec requires.

    2026-07-28 basic/index §_meta: "A request missing any required field is
    malformed; the server MUST reject it with JSON-RPC error code -32602".
    basic/versioning §Protocol Version Negotiation: a version the server does
    not implement gets ``UnsupportedProtocolVersionError`` listing the versions
    it does (a handshake-era version named in ``_meta`` is one of those: the
    handshake era is reached with ``initialize``, not per request).
    """
    meta = meta_of(params)
    if meta is None or PROTOCOL_VERSION not in meta:
        return None
    version = meta[PROTOCOL_VERSION]
    if not isinstance(version, str) or not version:
        raise InvalidParams(f"Invalid params: _meta {PROTOCOL_VERSION} must be a non-empty string")
    if version not in MODERN_VERSIONS:
        raise UnsupportedProtocolVersionError.naming(version, supported_versions())
    capabilities = meta.get(CLIENT_CAPABILITIES)
    if not isinstance(capabilities, dict):
        missing = "is missing" if capabilities is None else "must be an object"
        raise InvalidParams(f"Invalid params: _meta {CLIENT_CAPABILITIES} {missing}")
    info = meta.get(CLIENT_INFO, {})
    if not isinstance(info, dict):
        raise InvalidParams(f"Invalid params: _meta {CLIENT_INFO} must be an object")
    level = meta.get(LOG_LEVEL)
    if level is not None and level not in LOG_LEVELS:
        raise InvalidParams(
            f"Invalid params: _meta {LOG_LEVEL} must be one of {', '.join(LOG_LEVELS)}"
        )
    return Envelope(version, capabilities, info, level)


def request_meta(
    version: str,
    capabilities: dict[str, Any],
    client_info: dict[str, Any] | None = None,
    log_level: str | None = None,
) -> dict[str, Any]:
    """The client's ``_meta`` for one modern request (required fields, then the optional ones)."""
    meta: dict[str, Any] = {PROTOCOL_VERSION: version, CLIENT_CAPABILITIES: capabilities}
    if client_info:
        meta[CLIENT_INFO] = client_info
    if log_level is not None:
        meta[LOG_LEVEL] = log_level
    return meta


def complete_result(
    result: dict[str, Any], server_info: dict[str, Any] | None, result_type: str = COMPLETE
) -> dict[str, Any]:
    """``result`` as a modern result: its ``resultType`` (basic/index: results "MUST include a
    resultType field") and, in ``_meta``, the server's identity (servers "SHOULD include"
    ``io.modelcontextprotocol/serverInfo`` "in every result's ``_meta``")."""
    result.setdefault("resultType", result_type)
    if server_info is not None:
        meta = result.get("_meta")
        if not isinstance(meta, dict):
            meta = result["_meta"] = {}
        meta.setdefault(SERVER_INFO, server_info)
    return result


# -- phases: what each role may do, and when ----------------------------------------------------

SERVER = "server"
CLIENT = "client"


class Phase(enum.Enum):
    """Where one connection stands in the handshake era's lifecycle (2025-11-25 basic/lifecycle)."""

    #: Nothing negotiated yet.  Server: no ``initialize`` answered.  Client: ``initialize`` not answered.
    AWAITING_INITIALIZE = "awaiting initialize"
    #: Server only: ``initialize`` answered, ``notifications/initialized`` not received yet.
    AWAITING_INITIALIZED = "awaiting initialized"
    #: Normal operation, with the negotiated version and capabilities.
    OPERATING = "operating"


class Every:
    """The set of every method name except those given: ``"tools/call" in Every("initialize")``."""

    __slots__ = ("excluded",)

    def __init__(self, *excluded: str):
        self.excluded = frozenset(excluded)

    def __contains__(self, method: object) -> bool:
        return method not in self.excluded

    def __repr__(self) -> str:
        return f"Every(except {sorted(self.excluded)})" if self.excluded else "Every()"


@dataclass(frozen=True)
class Rules:
    """What one role may do in one phase, and what happens otherwise.

    ``receive``: the requests it answers; any other gets ``refusal`` as an
    Invalid Request error (-32600).  ``send``: the requests it may send; any
    other raises :class:`~mcp_ref.errors.CapabilityError` with ``unsent`` and is
    not sent.  ``notify``: the notifications it may send; any other is dropped
    (logged at debug level).  ``spec``: the sentence this row enforces.
    Messages are ``str.format`` templates with ``{method}``.
    """

    receive: Container[str]
    send: Container[str]
    notify: Container[str]
    refusal: str
    unsent: str
    spec: str


_AFTER_INITIALIZE = "Invalid Request: initialize was already received on this connection"

#: (role, phase) -> Rules.  Ping is answered in every phase, by the session itself, on the reader
#: thread (basic/utilities/ping: "The receiver MUST respond promptly").
RULES: dict[tuple[str, Phase], Rules] = {
    (SERVER, Phase.AWAITING_INITIALIZE): Rules(
        receive={"initialize", "ping"},
        send={"ping"},
        notify={"notifications/message"},
        refusal="Invalid Request: {method} before initialize",
        unsent="{method}: the client has not initialized this connection yet",
        spec='2025-11-25 basic/lifecycle §Initialization: "The client SHOULD NOT send requests other than '
        'pings before the server has responded to the initialize request."',
    ),
    (SERVER, Phase.AWAITING_INITIALIZED): Rules(
        receive=Every("initialize"),
        send={"ping"},
        notify=Every(),
        refusal=_AFTER_INITIALIZE,
        unsent="{method}: the client has not sent notifications/initialized yet",
        spec='2025-11-25 basic/lifecycle §Initialization: "The server SHOULD NOT send requests other than '
        'pings and logging before receiving the initialized notification."',
    ),
    (SERVER, Phase.OPERATING): Rules(
        receive=Every("initialize"),
        send=Every(),
        notify=Every(),
        refusal=_AFTER_INITIALIZE,
        unsent="",
        spec='2025-11-25 basic/lifecycle §Operation: both parties "Respect the negotiated protocol version" '
        'and "Only use capabilities that were successfully negotiated" (checked per feature).',
    ),
    (CLIENT, Phase.AWAITING_INITIALIZE): Rules(
        receive=Every(),  # liberal in what it accepts: the duty above is the server's
        # server/discover: the 2026-07-28 era probe (basic/transports/stdio §Backward Compatibility:
        # a dual-era client "SHOULD probe with server/discover before sending any other request").
        send={"initialize", "ping", "server/discover"},
        notify={"notifications/cancelled"},
        refusal="",
        unsent="{method}: the server has not answered initialize yet",
        spec='2025-11-25 basic/lifecycle §Initialization: "The client SHOULD NOT send requests other than '
        'pings before the server has responded to the initialize request."',
    ),
    (CLIENT, Phase.OPERATING): Rules(
        receive=Every(),
        send=Every(),  # including initialize again: a new session (see TRANSITIONS)
        notify=Every(),
        refusal="",
        unsent="",
        spec='2025-11-25 basic/lifecycle §Initialization: "After successful initialization, the client MUST '
        'send an initialized notification to indicate it is ready to begin normal operations."',
    ),
}

# The events that move a phase.
# server: it answers initialize; client: it accepts the answer
INITIALIZE_ANSWERED = "initialize answered"
INITIALIZED_RECEIVED = "notifications/initialized received"
STATELESS = "stateless request"  # a request served with no handshake on its connection

#: (role, phase, event) -> the next phase.  An event with no row changes nothing.
TRANSITIONS: dict[tuple[str, Phase, str], Phase] = {
    # basic/lifecycle §Initialization: the server answers initialize with its version and capabilities.
    (SERVER, Phase.AWAITING_INITIALIZE, INITIALIZE_ANSWERED): Phase.AWAITING_INITIALIZED,
    # "After successful initialization, the client MUST send an initialized notification".
    (SERVER, Phase.AWAITING_INITIALIZED, INITIALIZED_RECEIVED): Phase.OPERATING,
    # Streamable HTTP in stateless mode: every request comes on a fresh connection, with no session; the
    # MCP-Protocol-Version header gives the version (2025-11-25 basic/transports §Protocol Version Header).
    (SERVER, Phase.AWAITING_INITIALIZE, STATELESS): Phase.OPERATING,
    # The client sends notifications/initialized as the first act of this phase.
    (CLIENT, Phase.AWAITING_INITIALIZE, INITIALIZE_ANSWERED): Phase.OPERATING,
    # 2026-07-28: server/discover answered as a modern server answers it; every request from now on
    # carries its own version and capabilities (basic/versioning §Protocol Version Negotiation).
    (CLIENT, Phase.AWAITING_INITIALIZE, STATELESS): Phase.OPERATING,
    # 2025-11-25 basic/transports §Session Management: on HTTP 404 for its session the client "MUST start a
    # new session by sending a new InitializeRequest"; it stays operating meanwhile (the transport holds
    # requests until the new session is ready).
    (CLIENT, Phase.OPERATING, INITIALIZE_ANSWERED): Phase.OPERATING,
}


class Lifecycle:
    """One connection's place in the lifecycle: its phase, moved only by :data:`TRANSITIONS`.

    Thread-safe: handlers run on a pool, so a transition is made under a lock.
    """

    __slots__ = ("role", "phase", "_lock", "rules")

    def __init__(self, role: str):
        self.role = role
        self.phase = Phase.AWAITING_INITIALIZE
        self._lock = threading.Lock()
        #: The :class:`Rules` row for this role in the current phase (moved with it, by :meth:`advance`).
        self.rules: Rules = RULES[(role, self.phase)]

    def check_receive(self, method: str) -> None:
        """Raise InvalidRequest (the row's refusal) if this role does not answer ``method`` now."""
        rules = self.rules
        if method not in rules.receive:
            raise InvalidRequest(rules.refusal.format(method=method))

    def check_send(self, method: str) -> None:
        """Raise CapabilityError (the request is not sent) if this role may not send ``method`` now."""
        rules = self.rules
        if method not in rules.send:
            raise CapabilityError(rules.unsent.format(method=method))

    def may_notify(self, method: str) -> bool:
        """True when this role may send the notification ``method`` now."""
        return method in self.rules.notify

    def advance(self, event: str, apply: Callable[[], None] | None = None) -> bool:
        """Take the transition for ``event``; False (and nothing changes) when the table has none.

        ``apply()`` runs under the lock just before the phase moves: it records
        what was negotiated, so no thread sees the new phase without it.
        """
        with self._lock:
            following = TRANSITIONS.get((self.role, self.phase, event))
            if following is None:
                return False
            if apply is not None:
                apply()
            self.phase, self.rules = following, RULES[(self.role, following)]
            return True
