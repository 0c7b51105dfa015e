"""MCP over HTTP, server side: one WSGI application (PEP 3333), :class:`McpWsgiApp`.

It serves two transports at once:

* **Streamable HTTP** (2025-03-26 and later) at ``path`` (default ``/mcp``):
  POST carries one JSON-RPC message (or, where the revision allows, a batch);
  GET opens the standalone SSE stream for server-to-client messages; DELETE
  ends the session (:mod:`.streamable`).  A 2026-07-28 POST is one request on its
  own, with no session (:mod:`.modern`).
* **HTTP+SSE** (2024-11-05) at ``sse_path`` / ``messages_path`` (default
  ``/sse`` and ``/messages``): GET opens the stream, whose first event names
  the URL to POST messages to (:mod:`.legacy_sse`).

Each MCP session is a :class:`HttpSession` (:mod:`.http_session`): the transport of one server
connection.  Outgoing messages are routed by the request they relate to: answers, and what a
handler sends while serving a request, go to that request's POST stream; everything else to the
standalone GET stream.  A :class:`Stream` (:mod:`.streams`) lives apart from any HTTP connection,
so a client whose connection dropped can resume it with ``Last-Event-ID`` from the event store
(:mod:`.events`).  Which sessions exist, and when they expire, is the session table
(:mod:`.sessions`).  The checks every request passes (the OAuth resource server, scope
challenges, admission) are one middleware chain (:mod:`.middleware`); every refusal's status
comes from one table (:mod:`.status`).

The same application object runs on the standard library
(:func:`mcp_ref.server.Server.run_http`), under gunicorn, or mounted inside
Flask or Django.  ``stateless=True`` gives every request a fresh connection
and no session, so any worker process can answer any request.
"""

from __future__ import annotations

from .app import McpWsgiApp
from .base import ASSUMED_VERSION
from .events import EventStore, MemoryEventStore
from .http_session import HttpSession
from .middleware import Admission, Endpoints, HttpCall, HttpMiddleware, Middleware
from .oneshot import Exchange
from .sessions import MemorySessionTable, SessionRecord, SessionTable
from .status import STATUS_OF, STATUS_OF_CODE, HttpError, modern_status
from .streams import CLOSE, END, Stream

__all__ = [
    "ASSUMED_VERSION",
    "CLOSE",
    "END",
    "Admission",
    "Endpoints",
    "EventStore",
    "HttpCall",
    "HttpError",
    "HttpMiddleware",
    "HttpSession",
    "McpWsgiApp",
    "MemoryEventStore",
    "MemorySessionTable",
    "Middleware",
    "Exchange",
    "STATUS_OF",
    "STATUS_OF_CODE",
    "SessionRecord",
    "SessionTable",
    "Stream",
    "modern_status",
]
