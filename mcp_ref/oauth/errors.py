"""The errors of OAuth authorization for an HTTP server (:class:`mcp_ref.oauth.client.OAuth`).

:class:`AuthorizationError` is the root here (defined in :mod:`mcp_ref.errors`, where an HTTP
transport catches it), under the library's root :class:`~mcp_ref.errors.MCPRefError`
(``except mcp_ref.MCPRefError`` catches these too); each subclass names the step that failed.
"""

from __future__ import annotations

from ..errors import AuthorizationError

__all__ = [
    "AuthorizationError",
    "MetadataError",
    "PkceUnsupported",
    "RegistrationError",
    "CallbackError",
    "AuthorizationDenied",
    "AuthorizationTimeout",
    "TokenError",
    "InsufficientScope",
    "Unauthorized",
]


class MetadataError(AuthorizationError):
    """Discovery failed: no protected resource or authorization server metadata, metadata that is
    not a JSON object or lacks a required field, an ``issuer`` or ``resource`` that does not match."""


class PkceUnsupported(AuthorizationError):
    """The authorization server does not advertise PKCE with S256, so the client refuses it
    (2025-11-25 basic/authorization §Authorization Code Protection: "MCP clients MUST refuse to proceed")."""


class _EndpointError(AuthorizationError):
    """An authorization server endpoint refused or answered nonsense: ``error`` is the OAuth error
    code (``invalid_grant`` ...) or "" when the answer was not OAuth; ``status`` the HTTP status."""

    def __init__(self, message: str, error: str = "", status: int | None = None):
        super().__init__(message)
        self.error = error
        self.status = status


class RegistrationError(_EndpointError):
    """The client could not register: the registration endpoint refused, or there is no way to get a client id."""


class CallbackError(AuthorizationError):
    """The authorization response cannot be trusted or used: a wrong ``state``, a wrong or missing
    ``iss`` (RFC 9207), or no ``code``."""


class AuthorizationDenied(AuthorizationError):
    """The authorization server answered the authorization request with an error (e.g. ``access_denied``).

    ``error`` is the OAuth error code; ``description`` its ``error_description`` (if any).
    """

    def __init__(self, message: str, error: str = "", description: str | None = None):
        super().__init__(message)
        self.error = error
        self.description = description


class AuthorizationTimeout(AuthorizationError, TimeoutError):
    """The redirect back from the authorization server did not come in time."""


class TokenError(_EndpointError):
    """The token endpoint refused (an OAuth ``error``) or answered something that is not a token.

    ``error`` is the OAuth error code (``invalid_grant`` ...) or "" when the answer was not OAuth;
    ``status`` the HTTP status.
    """


class InsufficientScope(AuthorizationError):
    """The server still answers 403 ``insufficient_scope`` after the client re-authorized for the
    scopes it named (the step-up retry limit, 2025-11-25 §Step-Up Authorization Flow)."""


class Unauthorized(AuthorizationError):
    """The server refused the request (401) even with a freshly obtained token."""
