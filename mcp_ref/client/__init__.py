"""The client role: a blocking, thread-safe MCP client.

::

    with Client.stdio(["python", "server.py"]) as client:
        for tool in client.list_tools():
            print(tool.name)
        print(client.call_tool("add", {"a": 1, "b": 2}).content[0].text)

Laid out like :mod:`mcp_ref.server`, by spec area:

================  ==========================================================
module            one idea
================  ==========================================================
``client``        :class:`Client`: the public API (what the caller sends)
``shorthand``     the keyword arguments and methods that build and use this package's
                  extensions (``approve=``, ``task=``, ``get_task`` ...; loaded when used)
``connection``    :class:`ClientConnection`: one connection's dispatcher —
                  the era, the handshake and lifecycle; a request of the caller's in
                  either era (``Call``, ``ModernCall``: the 2026-07-28 probe, envelope
                  and retries)
``fallback``      the era probe's answers other than a modern server's, and the handshake
                  instead (loaded then)
``answering``     what the server sends: its requests answered (extensions' methods,
                  else sampling, elicitation, roots; what a root may be), its
                  notifications routed to streams and callbacks (loaded with the first)
``mrtr``          a modern call past its first answer: input requests answered, retries,
                  cancelling (loaded when needed)
``listening``     listen streams and the change callbacks' stream
``cache``         2026-07-28 results kept by their ``ttlMs``
``tool_headers``  the listed tools' ``x-mcp-header`` schemas (HTTP)
``interfaces``    the Protocols lower modules are typed with (no import up)
``callbacks``     calling the user's handlers and callbacks
================  ==========================================================

Only ``client`` and ``connection`` load with a plain client; the rest load when used.
What a client adds beyond the protocol is an extension (:mod:`mcp_ref.extension`), given to
``Client(extensions=[...])``; this package's own (approval, the client's rate limit, the task
protocols, client-hosted tasks) live in :mod:`mcp_ref.extensions`.
"""

from __future__ import annotations

from ..errors import RequestRefused
from .client import Client, ToolCall
from .connection import ClientConnection

__all__ = ["Client", "ToolCall", "ClientConnection", "RequestRefused"]
