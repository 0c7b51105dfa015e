"""An mcp_ref stdio server that first writes lines to stdout that are not MCP messages.

``python stray_stdout_server.py [N]`` writes ``N`` (default 1) lines such as a stray ``print()``
at start would (``Starting server 1...``) straight to its stdout, then serves one tool, ``echo``.
2025-11-25 basic/transports §stdio: "The server MUST NOT write anything to its stdout that is
not a valid MCP message": ``mcp-ref check`` must say so.
"""

import sys

from mcp_ref import Server

server = Server("stray-stdout", version="1.0")


@server.tool()
def echo(text: str) -> str:
    """Return the text as it came."""
    return text


if __name__ == "__main__":
    lines = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    for number in range(1, lines + 1):
        sys.stdout.write(f"Starting server {number}...\n")
    sys.stdout.flush()
    server.run_stdio()
