"""The exception tree, and the JSON-RPC / MCP error codes.

Two kinds of failure reach a caller:

* ``McpError`` — the peer answered with a JSON-RPC error object (or we answer
  one).  It carries ``code``, ``message`` and ``data`` exactly as on the wire,
  and there is one subclass per code so callers can catch what they care about.
* Local failures that never had an answer: the connection closed, the request
  timed out or was cancelled, the peer did not declare a capability.  These
  mix in the matching builtin (``ConnectionError``, ``TimeoutError``) the way
  ``requests`` does, so ``except TimeoutError`` works too.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# JSON-RPC 2.0 §5.1 "Error object": the pre-defined codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
# MCP (every revision, server/resources §Error Handling): "Resource not found: -32002".
RESOURCE_NOT_FOUND = -32002
# MCP 2025-11-25 client/sampling §Error Handling: "User rejected sampling request: -1".
REQUEST_REFUSED = -1
# MCP 2025-11-25 client/elicitation §URL Elicitation Required Error.
URL_ELICITATION_REQUIRED = -32042
# mcp_ref's own codes, in every era, lie outside the JSON-RPC reserved range.  MCP 2026-07-28
# basic/index §Error Codes: "-32000 to -32019 — legacy ... new implementations SHOULD NOT use codes
# from this sub-range at all", and "New error codes for purposes not defined by this specification
# SHOULD be allocated outside the JSON-RPC reserved range (-32768 to -32000)"; -32020 to -32099 are
# the specification's.  -31000 and up keep the last digits of the codes mcp_ref used before
# (-32000, -32005).  Received, those mean nothing in particular (a plain McpError): "Apart from
# -32002 (see below), receivers MUST NOT assume any specific meaning for these codes".
# mcp_ref's: the connection already holds as many requests as it takes (Session.max_incoming).
SERVER_BUSY = -31000
# mcp_ref's: a limit refused the request (a rate limit, or a cap such as subscriptions per caller);
# ``data.retryAfter`` says in how many seconds a rate-limited request may be sent again.
LIMIT_EXCEEDED = -31005
# MCP 2026-07-28 basic/index §Error Codes: -32020 to -32099 are reserved for the MCP specification.
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
# The most characters of an error message sent (``McpError.to_error``): a peer's string echoed in
# it (an unknown method's name, a URI) cannot make the answer grow with it.  JSON-RPC 2.0 §5.1:
# "The message SHOULD be limited to a concise single sentence."
MAX_MESSAGE = 1024


def concise(message: str) -> str:
    """``message`` as sent to the peer: whole, or its first :data:`MAX_MESSAGE` characters ending
    in "…", so the peer can tell that it was cut."""
    if len(message) <= MAX_MESSAGE:
        return message
    return message[: MAX_MESSAGE - 1] + "…"


class MCPRefError(Exception):
    """The root of every error mcp_ref raises: ``except mcp_ref.MCPRefError`` catches them all.

    Errors that are also a standard library kind keep it as a second parent: a lost connection
    is still a ``ConnectionError``, a timeout still a ``TimeoutError``.
    """


class McpError(MCPRefError):
    """A JSON-RPC error: ``code``, ``message`` and optional ``data``.

    Raise it (or a subclass) in a handler to answer the peer with that error;
    catch it around a client call to see what the peer answered.
    """

    code: int = INTERNAL_ERROR

    def __init__(self, message: str, code: int | None = None, data: Any = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.data = data

    def to_error(self) -> dict[str, Any]:
        """The JSON-RPC ``error`` object for this exception.  JSON-RPC 2.0 §5.1: its code "MUST
        be an integer", its message "SHOULD be limited to a concise single sentence": a code that
        is not an integer is sent as -32603, a message that is not a string as its ``str``
        (``McpError(-32001, "...")``, the arguments in another SDK's order, is still answered)."""
        code = self.code if type(self.code) is int else INTERNAL_ERROR
        error = {"code": code, "message": concise(str(self.message))}
        if self.data is not None:
            error["data"] = self.data
        return error

    @classmethod
    def from_error(cls, error: dict[str, Any]) -> McpError:
        """Build the most specific subclass for a received ``error`` object."""
        code = error.get("code", INTERNAL_ERROR)
        message = str(error.get("message", ""))
        subclass = _BY_CODE.get(code, McpError)
        return subclass(message, code=code, data=error.get("data"))

    def _data_item(self, key: str) -> Any:
        """``data[key]``; None when ``data`` is not an object or has no ``key`` (a peer's ``data``
        may be any JSON value, so a typed property reads through this)."""
        return self.data.get(key) if isinstance(self.data, dict) else None

    def __str__(self) -> str:
        return f"{self.message} (code {self.code})"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r})"


class ParseError(McpError):
    """-32700: the message was not valid JSON (or not valid UTF-8)."""

    code = PARSE_ERROR


class InvalidRequest(McpError):
    """-32600: the JSON was not a valid JSON-RPC message (or not one the receiver accepts now)."""

    code = INVALID_REQUEST
    #: The id of the offending message when it could be read (set by the parser), else None.
    request_id: Any = None
    #: True when the offending message is an answer (it has "result" or "error"): it is not
    #: answered back; the request it answers fails with this error instead.
    answer: bool = False


class MethodNotFound(McpError):
    """-32601: unknown method, or a feature the receiver did not declare."""

    code = METHOD_NOT_FOUND


class InvalidParams(McpError):
    """-32602: the params were wrong (unknown tool, missing argument, bad cursor...)."""

    code = INVALID_PARAMS


class InternalError(McpError):
    """-32603: the receiver failed while handling the request."""

    code = INTERNAL_ERROR


class ResourceNotFound(McpError):
    """-32002: ``resources/read`` (or subscribe) named a URI the server does not have."""

    code = RESOURCE_NOT_FOUND


class UrlElicitationRequired(McpError):
    """-32042 (2025-11-25): the request needs the user to complete URL-mode elicitations first.

    ``data`` is ``{"elicitations": [{"mode": "url", "message", "url", "elicitationId"}, ...]}``.
    """

    code = URL_ELICITATION_REQUIRED

    @property
    def elicitations(self) -> list[dict[str, Any]]:
        """The URL-mode elicitations the server asks for (the objects of ``data.elicitations``;
        empty when it did not say)."""
        value = self._data_item("elicitations")
        return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


class ServerBusy(McpError):
    """-31000 (mcp_ref's): the peer holds as many requests as it takes on this connection; retry
    later."""

    code = SERVER_BUSY


class LimitExceeded(McpError):
    """-31005 (mcp_ref's): a limit refused the request.

    ``data`` is ``{"limit": "100/60s", "retryAfter": 0.6}`` for a rate limit (retry after that many
    seconds; over HTTP the status is 429 with a ``Retry-After`` header), or ``{"limit": 50}`` for a cap
    that no waiting lifts (e.g. subscriptions per caller).  A rate limit's is made by
    :meth:`mcp_ref.extensions.ratelimit.RateLimit.refusal`.
    """

    code = LIMIT_EXCEEDED

    @property
    def retry_after(self) -> float | None:
        """Seconds until a retry may be admitted (``data.retryAfter``), or None."""
        value = self._data_item("retryAfter")
        return (
            float(value)
            if isinstance(value, (int, float)) and not isinstance(value, bool)
            else None
        )


class RequestRefused(McpError):
    """-1: the client (its user, or its ``approve`` hook) refused the server's request.

    Sent to the server for a refused ``sampling/createMessage`` or ``roots/list`` (2025-11-25
    client/sampling §Error Handling: "User rejected sampling request: ``-1``"); in the 2026-07-28
    era the caller's request fails with it, as no retry is sent.
    """

    code = REQUEST_REFUSED


class HeaderMismatchError(McpError):
    """-32020 (2026-07-28): an HTTP header (``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``,
    ``Mcp-Param-*``) is missing, malformed, or disagrees with the request body.  HTTP status 400."""

    code = HEADER_MISMATCH


class MissingRequiredClientCapabilityError(McpError):
    """-32021 (2026-07-28): the request needs a client capability its ``_meta`` did not declare.

    ``data`` is ``{"requiredCapabilities": {...}}`` (a ClientCapabilities object).  HTTP status 400.
    """

    code = MISSING_REQUIRED_CLIENT_CAPABILITY

    @classmethod
    def needing(
        cls, capabilities: dict[str, Any], why: str
    ) -> MissingRequiredClientCapabilityError:
        """The error for a request that needs ``capabilities`` (e.g. ``{"elicitation": {}}``)."""
        return cls(
            f"Missing required client capability: {why}",
            data={"requiredCapabilities": capabilities},
        )

    @property
    def required_capabilities(self) -> dict[str, Any]:
        """The capabilities the server said it needs (``data.requiredCapabilities``; empty when it
        did not say)."""
        value = self._data_item("requiredCapabilities")
        return dict(value) if isinstance(value, dict) else {}


class UnsupportedProtocolVersionError(McpError):
    """-32022: no protocol revision both sides speak.

    Raised for two things, one condition:

    * the wire error (2026-07-28 basic/index §Error Codes): the server does not implement the
      version a request named.  ``data`` is ``{"supported": [...], "requested": "..."}``; a client
      retries with one of ``supported``.  HTTP status 400.
    * the client's own conclusion, with no error on the wire: the server chose (``initialize``) or
      offers (``server/discover``) only revisions mcp_ref does not speak.  2025-11-25
      basic/lifecycle §Version Negotiation: "If the client does not support the version in the
      server's response, it SHOULD disconnect."  ``data`` is None.

    It is an ``McpError`` so that a received -32022 and a raised one are the same exception.
    """

    code = UNSUPPORTED_PROTOCOL_VERSION

    @classmethod
    def naming(cls, requested: object, supported: Iterable[str]) -> UnsupportedProtocolVersionError:
        """The error for a request that asked for ``requested``, listing ``supported``."""
        return cls(
            f"Unsupported protocol version: {requested!r}",
            data={"supported": list(supported), "requested": requested},
        )

    @property
    def supported(self) -> list[str]:
        """The versions the server supports (from ``data``; empty when it did not say)."""
        value = self._data_item("supported")
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


#: Each JSON-RPC error code's class: every subclass of McpError above, by its ``code``.  (The codes
#: mcp_ref sent before for ServerBusy and LimitExceeded, -32000 and -32005, are plain McpErrors when
#: received: see SERVER_BUSY.)
_BY_CODE = {cls.code: cls for cls in McpError.__subclasses__()}


class ConnectionClosed(MCPRefError, ConnectionError):
    """The connection ended before an answer arrived (or was already closed)."""


class ServerUnreachable(ConnectionClosed):
    """No MCP server was reached at the URL: nothing answered (refused, unknown host, TLS failure, no
    answer to connect), or what answered the first request was not MCP (HTTP 404 or 405, an HTML
    page, a body that is no JSON-RPC answer).

    A ``ConnectionError``, as ``except ConnectionError`` expects; the message names the URL, what
    was tried and what to do, e.g. ``cannot reach http://127.0.0.1:8000/mcp: connection refused.
    Is the server running ...`` or ``nothing answers MCP at http://127.0.0.1:8000 (HTTP 404 Not
    Found to ...). Nothing is served at /: MCP servers are usually at /mcp — try
    http://127.0.0.1:8000/mcp``.
    """

    #: The HTTP status of the answer that was not MCP's (404 ...); None when nothing answered.
    status: int | None = None


class ResponseStreamLost(MCPRefError, ConnectionError):
    """The HTTP response stream of one request broke before its answer arrived.

    2026-07-28 changelog (SEP-2575): "A broken response stream loses the in-flight request;
    clients MUST re-issue it as a new request with a new request ID."  The client does so
    (a bounded number of times) before raising this.
    """


class InvalidResult(MCPRefError, ValueError):
    """The peer's result does not have the shape of its type: a required key is missing, or a value
    that must be an object or an array is not one (an ``initialize`` result without
    ``serverInfo``, ``"tools": "abc"``, a tool without ``name``, ``"content": 5``).

    The message names the method and what is wrong in the wire's words (JSON keys, JSON Pointer
    paths): ``tools/list: the server's result is not a ListToolsResult: /tools/0: "name" is
    missing``.  Nothing else is lost: the connection and the session go on, and the raw result
    can still be had with ``Client.request(method, params)``.  A ``ValueError`` too, as a bad
    value is.  Only the shape the client needs to build its objects is checked (a result is not
    validated against the schema: ``trace=WireValidator()`` does that).
    """


class RequestTimeout(MCPRefError, TimeoutError):
    """No answer within the request's timeout; the peer was sent ``notifications/cancelled``."""


class RequestCancelled(MCPRefError):
    """The request was cancelled (by this side's caller, or the handler's request was cancelled by the peer)."""


class CapabilityError(MCPRefError):
    """The peer did not declare the capability this request needs, so it was not sent; or a
    2026-07-28 server left a resource out of its acknowledgment (``Client.subscribe``)."""


class MessageTooLarge(MCPRefError):
    """Raised by a transport's ``read()`` for a message over its size limit (already discarded).

    The session reads on: one oversized message never ends the connection.  It looks for the
    message's id in ``head``: a request is answered with an Invalid Request error carrying its id,
    the request an answer answers fails at once (:func:`mcp_ref.unparsed.refuse_too_large`).
    """

    #: The first bytes of the message (the limit and one more), as far as the transport read it.
    head = b""


class AuthorizationError(MCPRefError):
    """OAuth authorization for an HTTP server failed (``mcp_ref.oauth.OAuth``).

    The root of the OAuth errors of :mod:`mcp_ref.oauth.errors`, whose subclasses say at which step;
    it lives here because an HTTP transport catches it around the auth hook it was given.  Messages
    name URLs, OAuth error codes and what was expected; never a token, a code, a verifier or a
    secret.
    """
