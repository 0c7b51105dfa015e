"""Settings ``Server.run()`` reads from the environment (spec_notes/settings.md has the whole table).

``MCP_REF_HOST`` and ``MCP_REF_PORT``: where ``run(transport="http")`` listens when ``host=`` /
``port=`` are not given (default ``127.0.0.1`` and ``8000``).  ``MCP_REF_LOG_LEVEL``: when set,
``run()`` sends mcp_ref's own log records (the ``mcp_ref`` logger and its children) at that level
and above to stderr, as ``mcp-ref serve-demo --log-level`` does.  An explicit argument wins over
the environment; a value that cannot be used raises ValueError naming the variable.  Loaded only
when ``run()`` needs it (:mod:`mcp_ref.server.running`: an HTTP run, options, or ``MCP_REF_LOG_LEVEL`` set).
"""

from __future__ import annotations

import logging
import os
import sys

#: Where ``run(transport="http")`` listens without ``host=``.
HOST_ENV = "MCP_REF_HOST"
#: Which port ``run(transport="http")`` listens on without ``port=``.
PORT_ENV = "MCP_REF_PORT"
#: The level of mcp_ref's own log records ``run()`` writes to stderr (unset: as the application's
#: logging is configured; Python's default shows warnings and above).
LOG_LEVEL_ENV = "MCP_REF_LOG_LEVEL"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000

#: The MCP log levels as Python's (``MCP_REF_LOG_LEVEL`` takes either spelling, any case).
PYTHON_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


def address(host: str | None, port: int | None) -> tuple[str, int]:
    """``(host, port)``: the arguments, else ``MCP_REF_HOST`` / ``MCP_REF_PORT``, else 127.0.0.1:8000."""
    host = host or os.environ.get(HOST_ENV, "").strip() or DEFAULT_HOST
    if port is None:
        text = os.environ.get(PORT_ENV, "").strip()
        try:
            port = int(text) if text else DEFAULT_PORT
        except ValueError:
            raise ValueError(f"{PORT_ENV} must be a port number, not {text!r}") from None
        if not 0 <= port <= 65535:
            raise ValueError(f"{PORT_ENV} must be a port number (0-65535), not {port}")
    return host, port


def log_level_from_environment() -> int | None:
    """The Python level ``MCP_REF_LOG_LEVEL`` names, or None when it is unset or empty."""
    text = os.environ.get(LOG_LEVEL_ENV, "").strip().lower()
    if not text:
        return None
    if text not in PYTHON_LEVELS:
        raise ValueError(f"{LOG_LEVEL_ENV} must be one of {', '.join(PYTHON_LEVELS)}, not {text!r}")
    return PYTHON_LEVELS[text]


def log_to_stderr(level: int) -> None:
    """Write the ``mcp_ref`` logger's records at ``level`` and above to stderr (once: a second call
    only changes the level).  stderr, never stdout: over stdio, stdout carries the protocol."""
    logger = logging.getLogger("mcp_ref")
    logger.setLevel(level)
    if not any(handler.get_name() == "mcp_ref-stderr" for handler in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.set_name("mcp_ref-stderr")
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
