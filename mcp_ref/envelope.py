"""The 2026-07-28 per-request envelope: what every modern request carries in ``_meta``.

The modern era (2026-07-28 and later) has no ``initialize``: every request
names its protocol version and the client's capabilities itself, and every
result names the server (2026-07-28 basic/index §_meta, "Per-request protocol
fields").  This module reads that envelope on the way in and writes it on the
way out, for both roles:

* :func:`read_envelope` — the server's view of a request: None for a
  handshake-era request, an :class:`Envelope` for a modern one, or the error
  the spec requires (-32602 for a missing field, -32022 for an unknown version).
* :func:`request_meta` — the client's ``_meta`` for a modern request.
* :func:`complete` — a modern result: ``resultType`` and the server's identity.

A request is modern when its ``_meta`` carries ``io.modelcontextprotocol/protocolVersion``
(2026-07-28 basic/versioning §Backward Compatibility: "A request carrying
modern per-request ``_meta`` is served statelessly according to this revision").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import InvalidParams, UnsupportedProtocolVersionError
from .lifecycle import MODERN_VERSIONS, SUPPORTED_VERSIONS

PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
SERVER_INFO = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

#: 2026-07-28 basic/index §ResultType.
COMPLETE = "complete"
INPUT_REQUIRED = "input_required"

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


def complete(
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
