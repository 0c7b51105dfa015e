"""The server's log messages, client side: the level asked for (``client.set_logging_level()``), and
what ``Client(on_log=...)`` asks for when it connects.

A client that passes ``on_log`` wants the server's log messages, so it asks for them at once,
at ``Client(log_level=...)`` (default ``"info"``, as a logging library's handlers usually start:
debug chatter stays on the server unless asked for).  Without asking, a
2026-07-28 server sends none (basic/index §_meta: a request without
``io.modelcontextprotocol/logLevel`` gets no ``notifications/message``), while a handshake-era one
sends whatever it likes (mcp_ref: every level).  The same level in both eras, asked the era's way:

* 2026-07-28: every request carries ``_meta["io.modelcontextprotocol/logLevel"]``;
* handshake era: ``logging/setLevel`` right after the handshake.

Only of a server that declares the ``logging`` capability (2025-11-25 basic/lifecycle §Operation:
"Only use capabilities that were successfully negotiated").  ``client.set_logging_level()``
changes it afterwards (:func:`set_level`); ``log_level=None`` asks nothing.  Loaded only by a
client with ``on_log``, or that sets a level.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..errors import McpError
from ..lifecycle import LOG_LEVELS

if TYPE_CHECKING:
    from .interfaces import Connection

log = logging.getLogger(__name__)


def set_level(connection: Connection, level: str | None) -> None:
    """Ask for the server's log messages at ``level`` and above: ``logging/setLevel`` in the
    handshake era; at 2026-07-28 the level every request carries from now on (None: none)."""
    connection.require_capability("logging", "logging/setLevel")
    if connection.modern and level is not None and level not in LOG_LEVELS:
        raise ValueError(f"level must be one of {', '.join(LOG_LEVELS)}, not {level!r}")
    if not connection.modern:
        connection.request("logging/setLevel", {"level": level})
    connection.log_level = level


def ask_for_logs(client: Any, level: str) -> bool:
    """Ask the server for its log messages at ``level`` and above, if it declares logging; True if asked.

    A server that refuses (a handshake-era server behind stateless HTTP, where ``logging/setLevel``
    cannot last) is logged, not raised: the client is connected, and ``on_log`` gets what it sends.
    """
    if level not in LOG_LEVELS:
        raise ValueError(f"log_level must be one of {', '.join(LOG_LEVELS)} or None, not {level!r}")
    if "logging" not in client.server_capabilities:
        return False
    try:
        client.set_logging_level(level)
    except McpError as exc:
        log.warning(
            "the server refused log level %r (%s): on_log gets only what it sends unasked",
            level,
            exc,
        )
        return False
    return True
