"""The HTTP middleware: the checks every MCP request passes, as one declared, ordered chain.

``McpWsgiApp.middleware`` is a list of :class:`HttpMiddleware`, run in order at three stages of a
request; a middleware refuses by raising (an :class:`~.status.HttpError`, whose status comes from
the one table :data:`~.status.STATUS_OF`), or, at the first stage, answers the request itself:

1. :meth:`~HttpMiddleware.on_request` — before routing, on the HTTP request alone.
2. :meth:`~HttpMiddleware.on_messages` — the body parsed, before a session is looked up.
3. :meth:`~HttpMiddleware.on_admit` — the request bound to its connection, just before dispatch.

The default chain (``base.default_chain``) is the steps of the server's extensions, each
``Extension.http_middleware(app)`` in the order they were added, after the OAuth resource server's
when the application has ``auth=`` (``mcp_ref.http.server.protected``, loaded then and
only then: its metadata and a bearer token on every MCP request, then 403 ``insufficient_scope``).
A plain server's chain is empty.  :class:`Admission` is the step with which an extension counts a
request before dispatch (the rate limits: 429 with ``Retry-After``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ... import lifecycle
from ...errors import LimitExceeded
from ...jsonrpc import Request
from ...session import DEFAULT_MAX_INCOMING
from .host import Connection
from .status import refusal

if TYPE_CHECKING:
    from wsgiref.types import StartResponse


@dataclass
class HttpCall:
    """One HTTP request, as the middleware sees it."""

    #: The WSGI environ (a middleware may leave what it learnt in it: ``mcp_ref.oauth``).
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
    """Admit a POSTed request before dispatch: ``admit(principal, method, params)`` counts it
    (True; False when it has nothing to count), or raises :class:`~mcp_ref.errors.LimitExceeded`, refused here with 429 Too Many Requests and
    ``Retry-After`` (RFC 6585 §4), its body the JSON-RPC error (-31005, ``data.retryAfter``).  The
    connection notes one it counted (:func:`note_admitted`), so the extension's ``intercept_request``
    does not count it again.  A notification, an answer or a handshake-era ``ping`` (answered at
    once on the reader thread) is not counted."""

    def __init__(self, admit: Callable[[Any, str, Any], bool]):
        self.admit = admit

    def on_admit(self, environ: dict, connection: Connection, message: Any) -> None:
        """429 over a limit."""
        if not isinstance(message, Request):
            return
        if message.method == "ping" and not lifecycle.is_modern(message.params):
            return
        try:
            counted = self.admit(connection.principal, message.method, message.params)
        except LimitExceeded as exc:
            raise refusal(exc, message.id) from None
        if counted:  # noted only when counted: nothing takes the note of a request that was not
            note_admitted(connection, message.id)


#: Held while an id is noted in a connection's ``admitted`` (concurrent POSTs of one session); the
#: pops that take or withdraw one are atomic on their own.
_ADMITTED_LOCK = threading.Lock()


def note_admitted(connection: Connection, request_id: Any) -> None:
    """Note in ``connection.admitted`` that its request ``request_id`` was admitted (counted) before
    dispatch: the extension's ``intercept_request`` takes the note, once, and does not count it again.

    An id normally leaves the table at once, when its request reaches the dispatcher (or when the
    transport refuses it after all, withdrawing the note); one the session refused first (a
    duplicate id, a full connection) stays behind.  So the table keeps at most the ``max_incoming``
    ids of an HTTP connection's session (``DEFAULT_MAX_INCOMING``: the HTTP application sets no
    other), dropping the oldest past it (which would only be counted once more, should a request
    with that id ever reach the dispatcher).
    """
    with _ADMITTED_LOCK:
        admitted = connection.admitted
        if admitted is None:
            admitted = connection.admitted = {}
        admitted[request_id] = True
        while len(admitted) > DEFAULT_MAX_INCOMING:
            admitted.pop(next(iter(admitted)), None)
