"""The official MCP SDK's side of the stdio benchmark: an ``echo`` tool on stdio.

Started by ``benchmarks/bench.py`` through the SDK's own ``stdio_client``, as::

    python benchmarks/servers/sdk_stdio_echo.py

It needs only the SDK (``pip install mcp``), not mcp_ref.  The tool is
``async def``: the SDK runs plain ``def`` tools in a worker thread, so the
coroutine form is its fast path.  ``sdk_http_echo.py`` serves the same server
over Streamable HTTP.
"""

import sys


def build_server(**options):
    """The SDK server (``MCPServer`` in mcp >= 2, ``FastMCP`` in 1.x) with one ``echo`` tool."""
    try:  # mcp >= 2
        from mcp.server.mcpserver import MCPServer as SdkServer
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp import FastMCP as SdkServer

    server = SdkServer("bench-echo", **options)

    @server.tool()
    async def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    return server


def main():
    """Serve the echo server on stdio until stdin closes."""
    build_server().run()
    return 0


if __name__ == "__main__":
    import _watch

    _watch.watch_parent()
    sys.exit(main())
