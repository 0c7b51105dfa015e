"""A server for tests/extensions/test_client_extensions.py: tools that show what a client's extensions added.

``confirm`` asks the client a question with a method of a third party's (``acme/confirm``) when
the client declared it (the handshake era: the server may send requests of its own), and reports
what it saw; ``roots`` asks for the client's roots (a request of the server's in the handshake era,
an ``inputRequests`` entry in 2026-07-28).

    python tests/servers/client_extensions_server.py        # over stdio
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_ref import Context, Server

#: The third party's method and the capability a client declares to say it answers it.
CONFIRM = "acme/confirm"


def build() -> Server:
    server = Server("client-extensions", version="1.0")

    @server.tool()
    def confirm(question: str, ctx: Context) -> str:
        """Ask the client ``question`` with ``acme/confirm`` if it declared that it answers it."""
        declared = CONFIRM in ctx.client_capabilities.get("experimental", {})
        answer = None
        if declared and ctx.era == "handshake":
            answer = ctx.connection.request(CONFIRM, {"question": question})
        return json.dumps({"era": ctx.era, "declared": declared, "answer": answer})

    @server.tool()
    def roots(ctx: Context) -> str:
        """The client's roots."""
        return json.dumps([root.uri for root in ctx.list_roots(key="roots")])

    return server


if __name__ == "__main__":
    build().run_stdio()
