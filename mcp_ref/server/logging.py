"""Logging (2025-11-25 server/utilities/logging): ``logging/setLevel``, and which log messages
reach the client.

(This module is ``mcp_ref.server.logging``; ``import logging`` elsewhere is still the standard
library's, imports being absolute.)
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..errors import InvalidParams, InvalidRequest
from ..lifecycle import LOG_LEVELS  # one list for both eras: logging/setLevel and _meta logLevel

if TYPE_CHECKING:
    from ..lifecycle import Envelope
    from ..request import RequestContext
    from .seams import Caller

log = logging.getLogger(__name__)

_RANK = {name: rank for rank, name in enumerate(LOG_LEVELS)}


#: Why ``logging/setLevel`` is refused over stateless HTTP (the answer's message).
STATELESS_REFUSAL = (
    "logging/setLevel cannot apply over stateless HTTP: each request is served on its own, so a level "
    "set by one would not reach the next; use the 2026-07-28 revision (each request carries its "
    "io.modelcontextprotocol/logLevel) or a stateful session"
)


def set_level(connection: Caller, context: RequestContext, params: dict) -> dict:
    """``logging/setLevel``: from now on, send this connection messages at ``level`` and above.

    Over stateless HTTP (``wsgi_app(stateless=True)``, handshake era) the connection lives for this
    one request: the level would change nothing, so the request is refused (-32600, saying why)
    rather than answered with a success that does nothing.
    """
    level = params.get("level")
    if not isinstance(level, str) or level not in _RANK:
        raise InvalidParams(f"Invalid params: unknown log level {level!r}")
    if connection.stateless:
        raise InvalidRequest(STATELESS_REFUSAL)
    connection.log_level = level
    return {}


def log_message(level: str, data: Any, logger: str | None, threshold: str | None) -> dict | None:
    """The ``notifications/message`` params for one message, or None when ``level`` is below ``threshold``.

    server/utilities/logging §Setting Log Level: ``logging/setLevel`` configures
    "the minimum log level"; before any (``threshold`` None), every level is sent.
    """
    rank = _RANK.get(level)
    if rank is None:
        raise ValueError(f"unknown log level {level!r}; one of {', '.join(LOG_LEVELS)}")
    if threshold is not None and rank < _RANK[threshold]:
        return None
    params: dict[str, Any] = {"level": level, "data": data}
    if logger is not None:
        params["logger"] = logger
    return params


def send_log(
    connection: Caller,
    level: str,
    data: Any,
    logger: str | None,
    related_request_id: Any,
    envelope: Envelope | None,
) -> bool:
    """Send ``notifications/message`` if ``level`` is at or above the chosen level: the connection's
    (``logging/setLevel``), or for a 2026-07-28 request (``envelope``) the request's own: "If
    absent, the server MUST NOT send any notifications/message notifications for this request".
    True when it was sent (:meth:`ServerConnection.log <mcp_ref.server.connection.ServerConnection.log>`).
    """
    chosen = connection.log_level if envelope is None else envelope.log_level
    if envelope is not None and chosen is None:
        return False
    params = log_message(level, data, logger, chosen)
    if params is None:
        return False
    if envelope is None:
        connection.notify("notifications/message", params, related_request_id=related_request_id)
        return True
    try:  # no lifecycle to consult: the request itself opted in
        connection.session.notify(
            "notifications/message", params, related_request_id=related_request_id
        )
    except ConnectionError:
        log.debug("notifications/message dropped: connection closed")
    return True
