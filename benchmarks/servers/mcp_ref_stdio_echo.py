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

from mcp_ref_http_echo import (
    build_server,
)  # the same echo server (this file's folder is on sys.path)


def main():
    """Serve the echo server on stdio until stdin closes."""
    build_server().run_stdio()
    return 0


if __name__ == "__main__":
    import _watch

    _watch.watch_parent()
    sys.exit(main())
