"""Serving a :class:`~mcp_ref.server.Server` over HTTP on the standard library.

``server.wsgi_app()``, ``server.http_server()``, ``server.run_http()`` and
``server.run(transport="http")`` hand over to the functions here, loaded only then: a server
served on stdio never loads HTTP.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, cast

from ...server.settings import address
from ..wsgi_server import ConnectionLimits, WsgiServer
from .app import McpWsgiApp


def wsgi_app(server: Any, **options: Any) -> McpWsgiApp:
    """``server`` as a WSGI application (``Server.wsgi_app``; options are :class:`McpWsgiApp`'s)."""
    defaults = getattr(
        server, "http_defaults", {}
    )  # Server(stateless_http=True ...): FastMCP's names
    app_defaults = {name: value for name, value in defaults.items() if name not in ("host", "port")}
    return McpWsgiApp(server, **{**app_defaults, **options})


def http_server(
    server: Any,
    host: str,
    port: int,
    *,
    connection_limits: ConnectionLimits | None = None,
    **options: Any,
) -> WsgiServer:
    """A standard-library HTTP server for :func:`wsgi_app`, bound but not serving yet
    (``Server.http_server``)."""
    # server.wsgi_app, not wsgi_app(server): a server (or a tool wrapping it) may wrap its own app
    return WsgiServer((host, port), server.wsgi_app(**options), limits=connection_limits)


def run_http(
    server: Any, host: str, port: int, *, on_ready: Callable | None = None, **options: Any
) -> None:
    """Serve ``server`` over HTTP until interrupted (``Server.run_http``): the lifespan entered,
    :func:`http_server` bound, ``on_ready(httpd)`` called (default: a line on stderr saying
    ``httpd.url``), then served."""
    server.enter_lifespan()
    try:
        # server.http_server (as http_server above asks server.wsgi_app): a subclass may own one
        httpd = server.http_server(host, port, **options)
        if on_ready is None:
            print(
                f"serving {server.name} at {httpd.url}{options.get('path', '/mcp')}",
                file=sys.stderr,
                flush=True,
            )
        else:
            on_ready(httpd)
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            httpd.server_close()
            cast(McpWsgiApp, httpd.app).close()  # exits the lifespan too
    finally:
        server.exit_lifespan()


def run_named(
    server: Any, transport: str, host: str | None, port: int | None, **options: Any
) -> None:
    """``Server.run(transport="http" | "streamable-http" | "sse")``: :func:`run_http` on
    ``MCP_REF_HOST`` / ``MCP_REF_PORT`` unless given, announcing the address ``transport`` names
    (Streamable HTTP at ``path``, default ``/mcp``; HTTP+SSE at ``sse_path``, default ``/sse``).
    ValueError for a name that is none of them."""
    if transport not in ("http", "streamable-http", "sse"):
        raise ValueError(
            f"transport must be 'stdio', 'http' (or 'streamable-http') or 'sse', not {transport!r}"
        )
    defaults = getattr(server, "http_defaults", {})  # Server(host=, port= ...): FastMCP's names
    given = {**defaults, **options}
    path = given.get("sse_path", "/sse") if transport == "sse" else given.get("path", "/mcp")
    kind = "HTTP+SSE" if transport == "sse" else "Streamable HTTP"
    if "on_ready" not in options:
        options["on_ready"] = lambda httpd: print(
            f"serving {server.name} at {httpd.url}{path} ({kind})", file=sys.stderr, flush=True
        )
    host = host or defaults.get("host")
    port = defaults.get("port") if port is None else port
    server.run_http(*address(host, port), **options)
