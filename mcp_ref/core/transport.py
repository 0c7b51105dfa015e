"""The transport contract: everything a session or a role may ask of a connection.

A transport moves whole messages.  Three methods are the core, as in
``requests``' adapters (``send`` / ``close``): :meth:`Transport.read`,
:meth:`Transport.write` and :meth:`Transport.close`.  The other members are
hooks with defaults that do nothing, so a stream transport (stdio, in-memory)
overrides only the core, and a transport that has more structure (HTTP: one
stream per request, a session the server may forget) overrides the hooks it
needs.  Nothing else is ever looked up on a transport: no ``getattr`` probing,
no attributes patched in from outside.

=====================  ===========================  ====================================
member                 called by                    overridden by
=====================  ===========================  ====================================
``read``               the session's reader thread  every transport (HTTP server: never
                                                    read, fed through ``Session.dispatch``)
``write``              the session                  every transport
``close``              the session                  every transport
``concurrent_writes``  the session (at start)       HTTP (each POST writes on its own)
``request_finished``   the session                  HTTP server (ends a request's stream)
``close_stream``       the server's ``Context``     HTTP server (SSE polling)
``initialized``        the client role              HTTP client (version header, GET stream)
``set_reinitialize``   the client role              HTTP client (a new session after 404)
``stateless``          the client role              HTTP client (2026-07-28: no session)
``mirrors_headers``    the client role              HTTP (2026-07-28 ``Mcp-Param-*`` headers)
=====================  ===========================  ====================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

RequestId = Any  # a str or an int (mcp_ref.core.jsonrpc.RequestId); kept loose to import nothing here


class RequestFailed:
    """What a transport's :meth:`Transport.read` may return instead of bytes: one request failed here.

    A transport that sends each request on its own (HTTP) learns of some failures itself:
    the server could not be reached, or refused the request at the HTTP level.  ``error``
    is the exception the request's caller gets (e.g. :class:`~mcp_ref.core.errors.ServerUnreachable`,
    a ``ConnectionError``); nothing was received, so nothing is traced as received.
    """

    __slots__ = ("request_id", "error")

    def __init__(self, request_id: RequestId, error: Exception):
        self.request_id = request_id
        self.error = error


class RequestHeld:
    """What a transport's :meth:`Transport.read` may return: one request is held up on this side
    for up to ``seconds`` (the HTTP client waits for the user to authorize in a browser).  The
    request's timeout is extended by that much: the wait for a person is not the server's delay.
    """

    __slots__ = ("request_id", "seconds")

    def __init__(self, request_id: RequestId, seconds: float):
        self.request_id = request_id
        self.seconds = seconds


class Transport:
    """The base class of every transport; see the module docstring for who calls what."""

    #: True when :meth:`write` may be called from several threads at once.  False (the
    #: default): the session serialises writes with a lock, as a byte stream needs.
    concurrent_writes: bool = False
    #: True when each request travels with HTTP headers mirrored from its body (2026-07-28
    #: Streamable HTTP: ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``).  The client role then
    #: leaves out tools whose ``x-mcp-header`` declarations are invalid; and, as every request
    #: gets an HTTP status, its era probe needs no timeout of its own.
    mirrors_headers: bool = False
    pending: Callable[[RequestId], Any] | None = None  #: the session's requests in flight, by id

    def read(self) -> bytes | RequestFailed | None:
        """Block until one whole message arrives and return its bytes; None at end of input.

        A :class:`RequestFailed` instead fails one request of ours locally.
        May raise :class:`~mcp_ref.core.errors.MessageTooLarge` for a message over the
        transport's limit (already discarded); any other exception ends the connection.
        """
        raise NotImplementedError

    def write(self, data: bytes, message: Any = None, related: RequestId | None = None) -> None:
        """Send one message: ``data`` is its bytes, ``message`` the object they encode.

        ``related`` is the id of the incoming request this message belongs to (a
        response's own id, or the request whose handler sent it); None for
        messages that belong to no request.  Stream transports ignore both; HTTP
        uses them to choose the request or stream a message travels on.  Raise
        ``OSError`` (or ``ValueError``) when the connection is gone.
        """
        raise NotImplementedError

    def close(self) -> None:
        """Close the connection (for a subprocess: end it).  Must be idempotent."""
        raise NotImplementedError

    # -- hooks: each has a default that does nothing -----------------------------------

    def request_finished(self, request_id: RequestId) -> None:
        """The handler of incoming request ``request_id`` ended without an answer (it was cancelled).

        HTTP ends the stream that waited for that answer.  Default: nothing."""

    def close_stream(self, request_id: RequestId) -> bool:
        """Close the connection carrying ``request_id``'s stream but keep the stream (SSE polling).

        Returns False when there is no such stream (the default: stdio, JSON replies, the legacy transport)."""
        return False

    def http_request(self, request_id: RequestId) -> Any:
        """The HTTP request ``request_id`` came in on (``Context.http``); None (the default) off HTTP."""

    def initialized(self, protocol_version: str) -> None:
        """Called by the client role once the handshake has completed at ``protocol_version``.

        HTTP sends the version header from then on and opens the standalone GET
        stream.  Default: nothing.
        """

    def set_reinitialize(self, reinitialize: Callable[[], None]) -> None:
        """Called by the client role once, before the handshake: ``reinitialize()`` runs it again.

        A transport that can lose its session (Streamable HTTP answering 404 for
        it) calls ``reinitialize()`` to start a new one.  Default: ignored.
        """

    def stateless(self, input_schema: Callable[[str], dict[str, Any] | None]) -> None:
        """Called by the client role once it speaks a modern (2026-07-28) revision.

        There is no session to keep from then on.  ``input_schema(tool)`` gives a
        listed tool's ``inputSchema``, from which HTTP takes the ``Mcp-Param-*``
        headers of a ``tools/call``.  Default: nothing.
        """
