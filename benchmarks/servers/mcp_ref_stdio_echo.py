"""mcp_ref's side of the stdio benchmark: an ``echo`` tool served by ``Server.run_stdio``.

Started by ``benchmarks/bench.py`` (through ``Client.stdio``, from
``bench_side.py``) as::

    python benchmarks/servers/mcp_ref_stdio_echo.py

A plain server: one tool, no rate limits, policy or tasks, so that a round
trip measures the protocol machinery and nothing else.  Only mcp_ref's public
API is used (``Server``, ``tool()``, ``run_stdio()``), which every revision the
benchmark compares with ``--against`` has, so this one file serves both trees:
the ``mcp_ref`` it imports is the one first on ``PYTHONPATH``.
"""

import sys


def build_server():
    """An mcp_ref ``Server`` with one ``echo`` tool."""
    from mcp_ref import Server

    server = Server("bench-echo")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    return server


def main():
    """Serve the echo server on stdio until stdin closes."""
    build_server().run_stdio()
    return 0


if __name__ == "__main__":
    import _watch

    _watch.watch_parent()
    sys.exit(main())
