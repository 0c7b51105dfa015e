"""``Server.run()`` beyond a plain stdio run: the environment's log level, options, HTTP.

``server.run()`` with no options on stdio serves at once; anything more comes here, loaded only
then: ``MCP_REF_LOG_LEVEL`` (:mod:`mcp_ref.server.settings`), FastMCP's names for the options
(``log_level=``, ``stateless_http=`` ...: :mod:`mcp_ref.server.fastmcp_names`), and serving over
HTTP (:mod:`mcp_ref.http.server.serving`).
"""

from __future__ import annotations

import os
from typing import Any

from .settings import LOG_LEVEL_ENV, log_level_from_environment, log_to_stderr

#: What ``run(transport="stdio", ...)`` takes besides the transport: :meth:`Server.run_stdio`'s.
STDIO_OPTIONS = ("max_message_size",)


def run_configured(
    server: Any, transport: str, host: str | None, port: int | None, options: dict[str, Any]
) -> None:
    """``Server.run()`` beyond a plain stdio run: ``MCP_REF_LOG_LEVEL`` applied, FastMCP's names
    among ``options`` taken (``log_level=``, ``stateless_http=`` ...) or refused naming mcp_ref's
    (:func:`mcp_ref.server.fastmcp_names.take_run_options`), then served on stdio or over HTTP."""
    if os.environ.get(LOG_LEVEL_ENV):
        log_to_stderr(log_level_from_environment() or 0)
    if options:
        from .fastmcp_names import take_run_options

        options = take_run_options(options)
    if transport == "stdio":
        unknown = sorted(options.keys() - set(STDIO_OPTIONS))
        if unknown:
            raise TypeError(
                f"run(transport='stdio') takes {', '.join(STDIO_OPTIONS)}, not {', '.join(unknown)} "
                "(the others are options of serving over HTTP: run(transport='http', ...))"
            )
        server.run_stdio(**options)
    else:  # over HTTP, loaded only then (a name that is not a transport: ValueError there)
        from ..http.server.serving import run_named

        run_named(server, transport, host, port, **options)
