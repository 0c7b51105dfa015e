"""mcp_ref's side of the HTTP benchmark: an ``echo`` tool served by ``Server.run_http``.

Started by ``benchmarks/bench.py`` in its own process (its own GIL), as::

    python benchmarks/servers/mcp_ref_http_echo.py PORT STATELESS

``PORT`` on 127.0.0.1; ``STATELESS`` is ``1`` (no sessions) or ``0``.
Replies are JSON (``json_response=True``) at ``/mcp``, on mcp_ref's standard
library HTTP server.  Only mcp_ref's public API is used.  (Over stdio the
benchmark runs ``mcp_ref_stdio_echo.py``, the same server on stdio.)
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


def main(argv):
    """Serve the echo server over Streamable HTTP until terminated; ``argv`` is ``[PORT, STATELESS]``."""
    port, stateless = int(argv[0]), argv[1] == "1"
    build_server().run_http("127.0.0.1", port, stateless=stateless, json_response=True)
    return 0


if __name__ == "__main__":
    import _watch

    _watch.watch_parent()
    sys.exit(main(sys.argv[1:]))
