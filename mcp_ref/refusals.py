"""The requests a session refuses as they come, before any handler sees them: one whose id is in
use on the connection, one past its ``max_incoming``, one that comes once its handler pool is shut
down.  Each is answered at once with an error, never queued and never left unanswered.  Loaded with
the first such request.
"""

from __future__ import annotations

import logging
from typing import Any

from .errors import INVALID_REQUEST, SERVER_BUSY
from .jsonrpc import ErrorResponse, Request

log = logging.getLogger("mcp_ref.session")  # its messages are the session's


def id_in_use(request: Request) -> ErrorResponse:
    """-32600 for a request whose id a request in progress on the connection holds.

    MCP basic §Requests: "The request ID MUST NOT have been previously used by the requestor within
    the same session."
    """
    return ErrorResponse(
        request.id,
        {"code": INVALID_REQUEST, "message": "Invalid Request: this request id is already in use"},
    )


def too_many(request: Request, session: Any) -> ErrorResponse:
    """-31000 (:class:`~mcp_ref.errors.ServerBusy`) for a request past the ``max_incoming`` requests
    ``session`` (a :class:`~mcp_ref.session.Session`) holds at once (running, or waiting for a
    handler thread); logged."""
    max_incoming = session.max_incoming
    log.warning(
        "%s: %d requests in progress; refused %s", session.name, max_incoming, request.method
    )
    return ErrorResponse(
        request.id,
        {
            "code": SERVER_BUSY,
            "message": f"Server busy: {max_incoming} requests are already in progress "
            "on this connection; retry when some have finished",
            "data": {"maxIncoming": max_incoming},
        },
    )


def shutting_down(request: Request) -> ErrorResponse:
    """-31000 for a request whose handler pool is shut down (the server is closing the connection).

    JSON-RPC 2.0 §5: "When a rpc call is made, the Server MUST reply with a Response": so its
    transport's waiter (an HTTP POST) is not left waiting for ever.
    """
    return ErrorResponse(
        request.id, {"code": SERVER_BUSY, "message": "Server busy: the server is shutting down"}
    )
