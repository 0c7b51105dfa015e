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
``connection``    :class:`ClientConnection`: one connection's dispatcher —
                  the handshake and lifecycle, and what the server sends
``callbacks``     calling the user's handlers and callbacks
``sampling``      answering ``sampling/createMessage``
``elicitation``   answering ``elicitation/create``
``roots``         answering ``roots/list``; what a root may be
``approval``      ``approve=`` and ``server_request_limit=``: what passes
                  before any of those three is answered
================  ==========================================================
"""

from __future__ import annotations

from ..extras.approval import RequestRefused, ServerRequest
from .client import Client, ToolCall
from .connection import ClientConnection

__all__ = ["Client", "ToolCall", "ClientConnection", "ServerRequest", "RequestRefused"]
