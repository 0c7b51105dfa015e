"""A proxy: serve any MCP server to any MCP client, across transports and across eras.

``proxy_server(target)`` returns a :class:`ProxyServer`, a :class:`~mcp_ref.server.Server` that
serves what ``target`` serves: run it on stdio or HTTP like any server
(``mcp-ref proxy TARGET --http HOST:PORT`` does).  The front speaks every revision (the handshake
era, 2025-03-26 to 2025-11-25, and stateless 2026-07-28) whatever the target speaks, so a
2025-era client can use a 2026-only server and a 2026 client a handshake-only one.

What is carried across: the target's capabilities, its tools (schemas as they are: the proxy
validates nothing a second time), resources, templates, prompts and completion, with pagination;
list-changed and resource-updated notifications; the target's log messages and the progress of a
forwarded request, to the client that made it; cancellation of a forwarded request; and
sampling, elicitation and roots asked by the target, to the front client whose request caused
them.  Era translation:

* a front request of the handshake era asks its client with a request (``sampling/createMessage``
  ...), whatever the target's era (a 2026 target's ``input_required`` rounds are answered by the
  back connection, which asks the front client);
* a 2026-07-28 front request gets an ``input_required`` result for each question the target asks,
  and its retry carries the answer back (basic/patterns/mrtr).  The target's request is kept
  open meanwhile (the proxy *parks* it, keyed by the ``requestState`` it sends): so a retry must
  reach the same proxy process, within ``ask_timeout``.

Back connections: one per front session of the handshake era (opened at its first forwarded
request: server-to-client requests, subscriptions and the log level of one client never reach
another), and one shared *watcher* (the target's capabilities, every 2026 front request, the
2026 listen streams).  A 2026 request that may ask (``tools/call``, ``prompts/get``,
``resources/read``) must be told the target's questions for it alone: an HTTP target gets a
connection leased from a pool for the request's life; a command target is one process per
connection (its state is the process's), so those requests go to the watcher, side by side when
the target speaks 2026 (its questions come in the answers of their own request), taking turns
when it speaks the handshake era (its requests name no request of the client's).  At most
``max_back_connections`` in all (an idle pool connection is closed to make room, and after
``POOL_IDLE_TIMEOUT`` idle) and ``max_forwarded`` forwarded requests in flight (parked ones
included), and of those one client's share (``max_back_connections_per_client``,
``max_forwarded_per_client``: half and a quarter by default, so that no client starves the
others), and on a handshake-era session's own connection ``back.MAX_UNANSWERED`` listings and
completions its target has not answered, cancelled ones included: past any, the request is
refused with -31000 ("server busy").

Extensions added to the proxy hold for what it forwards (``proxy.add_extension(Policy(...))``:
access control and rate limits in front of a server): the front door that forwards is the last
step of each request's chain of ``intercept_request`` hooks, after every other extension's, in
the order added; the gate (``authorize``) hides what it denies from each forwarded listing page
and refuses it by name as a missing item, before anything reaches the target; an
``intercept_tool_call``, which a proxy could never call (its target runs the tools), is refused
when added.  See :mod:`~mcp_ref.proxy.front_door`.

The parts: :mod:`~mcp_ref.proxy.server` (the front, :class:`ProxyServer`),
:mod:`~mcp_ref.proxy.front_door` (the last step of the request chain, and the gate on what it
forwards),
:mod:`~mcp_ref.proxy.forward` (one forwarded request and the target's questions),
:mod:`~mcp_ref.proxy.back` (a connection to the target), :mod:`~mcp_ref.proxy.translate`
(results and errors across eras).
"""

from __future__ import annotations

from .back import connector
from .server import ProxyServer, proxy_server

__all__ = ["ProxyServer", "proxy_server", "connector"]
