"""The transport contract: everything the session asks of a connection, in five members.

A transport moves whole messages.  Three methods are the core, as in ``requests``' adapters
(``send`` / ``close``): :meth:`Transport.read`, :meth:`Transport.write` and
:meth:`Transport.close`.  Two hooks have defaults that do nothing, so a stream transport (stdio,
in-memory, a socket) overrides only the core:

=====================  ===========================  ==========================================
member                 called by                    overridden by
=====================  ===========================  ==========================================
``read``               the session's reader thread  every transport (HTTP server: never read,
                                                    fed through ``Session.dispatch``)
``write``              the session, from any thread every transport
``close``              the session                  every transport
``attach``             the session, once, at start  a transport that fails or delays our
                                                    requests itself (the HTTP client)
``request_finished``   the session                  a transport with a stream per request
                                                    (the HTTP server ends that stream)
=====================  ===========================  ==========================================

``write`` may be called from several threads at once: a transport whose messages share one byte
stream serialises them itself (stdio holds a lock), one that sends each on its own (HTTP) does not
need to.

**What only HTTP needs is not here.**  The HTTP adapters offer it through one optional attribute,
``http_hooks``, which the roles look up with ``getattr(transport, "http_hooks", None)`` (None on
every other transport):

* the HTTP client transport's (:class:`mcp_ref.http.bounded_reads.ClientHooks`): the client
  role tells it how to start a new session after a 404 (``set_reinitialize``), the negotiated
  version (``initialized``), and that there is no session any more (2026-07-28, ``stateless``);
  with them it also knows each request gets an HTTP status and mirrors its body in headers;
* the HTTP server transports' (:class:`mcp_ref.http.server.request.ServerHooks`):
  the server's ``Context`` asks for the HTTP request a request came in on (``http_request``) and
  closes a request's SSE stream for polling (``close_stream``).

Nothing else is looked up on a transport, and nothing is patched onto one.
"""

from __future__ import annotations

from typing import Any, Protocol

#: A str or an int (mcp_ref.jsonrpc.RequestId); kept loose to import nothing here.
RequestId = Any


class OutgoingRequests(Protocol):
    """What a transport may do to the requests its session sent and waits on (see :meth:`Transport.attach`).

    A transport that sends each request on its own (HTTP) learns some things about one itself:
    the server could not be reached, refused it, or the user is being asked to authorize it.
    """

    def request_deadline(self, request_id: RequestId) -> float | None:
        """The ``time.monotonic()`` at which the session stops waiting for ``request_id``'s answer
        (None: it waits forever, or the request is not in flight)."""
        ...

    def fail_request(self, request_id: RequestId, error: Exception) -> None:
        """Fail ``request_id`` here with ``error`` (what its caller gets); nothing once it is answered."""
        ...

    def hold_request(self, request_id: RequestId, seconds: float) -> None:
        """``request_id`` waits on this side for up to ``seconds`` (a person authorizing in a browser):
        its timeout is extended by that much, as the wait is not the peer's delay."""
        ...


class Transport:
    """The base class of every transport; see the module docstring for who calls what."""

    def read(self) -> bytes | None:
        """Block until one whole message arrives and return its bytes; None at end of input.

        May raise :class:`~mcp_ref.errors.MessageTooLarge` for a message over the
        transport's limit (already discarded); any other exception ends the connection.
        """
        raise NotImplementedError

    def write(self, data: bytes, message: Any = None, related: RequestId | None = None) -> None:
        """Send one message: ``data`` is its bytes, ``message`` the object they encode.

        ``related`` is the id of the incoming request this message belongs to (a
        response's own id, or the request whose handler sent it); None for
        messages that belong to no request.  Stream transports ignore both; HTTP
        uses them to choose the request or stream a message travels on.  Raise
        ``OSError`` (or ``ValueError``) when the connection is gone.  May be called
        from several threads at once.
        """
        raise NotImplementedError

    def close(self) -> None:
        """Close the connection (for a subprocess: end it).  Must be idempotent."""
        raise NotImplementedError

    # -- hooks: each has a default that does nothing -----------------------------------

    def attach(self, requests: OutgoingRequests) -> None:
        """Called once by the session before it reads: ``requests`` are the ones it sends.

        A transport that sends each request on its own bounds its reads by a request's deadline
        and fails or holds one it learnt about (the HTTP client).  Default: ignored."""

    def request_finished(self, request_id: RequestId) -> None:
        """The handler of incoming request ``request_id`` ended without an answer (it was cancelled).

        HTTP ends the stream that waited for that answer.  Default: nothing."""
