"""The HTTP middleware: the checks every MCP request passes, as one declared, ordered chain.

``McpWsgiApp.middleware`` is a list of :class:`HttpMiddleware`, run in order at three stages of a
request; a middleware refuses by raising (an :class:`~.status.HttpError`, whose status comes from
the one table :data:`~.status.STATUS_OF`), or, at the first stage, answers the request itself:

1. :meth:`~HttpMiddleware.on_request` — before routing, on the HTTP request alone.
2. :meth:`~HttpMiddleware.on_messages` — the body parsed, before a session is looked up.
3. :meth:`~HttpMiddleware.on_admit` — the request bound to its connection, just before dispatch.

The default chain (``base.default_chain``), in order:

* with ``auth=`` only (``mcp_ref.transports.http_server.protected``, loaded then and only then):
  :class:`~.protected.ProtectedResourceCheck` (its metadata; a bearer token on every MCP request,
  else 401 with ``WWW-Authenticate``) and :class:`~.protected.ScopeChallenge` (403
  ``insufficient_scope`` for an item whose scopes the token lacks);
* :class:`Admission` (the caller's rate limits before dispatch: 429 with ``Retry-After``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ...core.errors import LimitExceeded
from .host import Connection
from .status import refusal

if TYPE_CHECKING:
    from wsgiref.types import StartResponse


@dataclass
class HttpCall:
    """One HTTP request, as the middleware sees it."""

    #: The WSGI environ (a middleware may leave what it learnt in it: ``mcp_ref.auth``).
    environ: dict[str, Any]
    #: ``PATH_INFO``
    path: str
    #: ``REQUEST_METHOD``
    method: str
    #: The WSGI ``start_response``, for a middleware that answers the request itself.
    start_response: StartResponse


@dataclass(frozen=True)
class Endpoints:
    """The paths an application serves (what a middleware needs to know of the routing)."""

    #: Streamable HTTP
    path: str
    #: The 2024-11-05 transport's event stream and message endpoint.
    sse_path: str
    messages_path: str


class HttpMiddleware(Protocol):
    """One step of the chain (see the module docstring); :class:`Middleware` gives no-op defaults."""

    def on_request(self, call: HttpCall) -> list[bytes] | None:
        """Before routing: a finished answer (the WSGI body), or None to go on; raise to refuse."""

    def on_messages(self, environ: dict, messages: list, resource_path: str) -> None:
        """The parsed body (its messages) of a request to the endpoint ``resource_path`` (``environ``:
        the request's, with what earlier stages left in it); raise to refuse."""

    def on_admit(self, environ: dict, connection: Connection, message: Any) -> None:
        """A message about to be dispatched on ``connection``; raise to refuse."""


class Middleware:
    """A middleware that lets everything through (subclass it and override one stage)."""

    def on_request(self, call: HttpCall) -> list[bytes] | None:
        """Go on."""
        return None

    def on_messages(self, environ: dict, messages: list, resource_path: str) -> None:
        """Go on."""

    def on_admit(self, environ: dict, connection: Connection, message: Any) -> None:
        """Go on."""


class Admission(Middleware):
    """Count a POSTed request against the caller's rate limits before dispatch (the policy extra,
    when the server has request limits): over a limit it is refused here with 429 Too Many
    Requests and ``Retry-After`` (RFC 6585 §4), its body the JSON-RPC error (-32005,
    ``data.retryAfter``).  The dispatcher does not count it again."""

    def on_admit(self, environ: dict, connection: Connection, message: Any) -> None:
        """429 over a limit (``ServerConnection.admit_early``)."""
        try:
            connection.admit_early(message)
        except LimitExceeded as exc:
            raise refusal(exc, getattr(message, "id", None)) from None
