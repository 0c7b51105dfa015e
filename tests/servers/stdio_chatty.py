"""An mcp_ref stdio server that writes to stderr and calls print() in a tool.

At start it writes ``chatty: starting`` to stderr.  The tool ``shout(text)``
calls ``print(text)`` (which a stdio server must route to stderr, never to
stdout) and writes ``chatty: shout <text>`` to stderr, then returns ``text``
upper-cased.
"""

import sys

from mcp_ref import Server

server = Server("chatty", version="1.0")


@server.tool()
def shout(text: str) -> str:
    """print() the text, note it on stderr, and return it in capitals."""
    print(text)
    sys.stderr.write(f"chatty: shout {text}\n")
    sys.stderr.flush()
    return text.upper()


if __name__ == "__main__":
    sys.stderr.write("chatty: starting\n")
    sys.stderr.flush()
    server.run_stdio()
