"""The one interface through which everything beyond the protocol plugs into a server or a client.

An extension is an object given to ``Server(extensions=[...])`` or ``Client(extensions=[...])``
(or added later with ``server.add_extension(ext)`` / ``client.add_extension(ext)``).  It declares
what it adds by overriding the hooks of :class:`Extension`; every hook is optional, and a hook a
role does not use is never called by it.  The protocol modules know only this interface: policy
and rate limits, both task protocols, approval, file roots, the shared state on Redis and the
OAuth resource server are extensions built on it, exactly as a third party's would be.

What an extension may declare (the role that asks is named in brackets):

* ``name`` — who it is: its key in the 2026-07-28 ``extensions`` capability when it declares
  settings there (``"io.modelcontextprotocol/tasks"``), else a label for errors.
* ``setup(host)`` [both] — called once when the server or client takes it: where it keeps what it
  needs of its host (the host's shared state: ``host.shared_store(kind)`` on a server).
* ``capabilities(version, peer)`` [both] — what it adds to the capabilities its role declares at
  ``version``: ``{"tasks": {...}}`` merges into the capabilities (on a server an object one key at
  a time; a server refuses an extension declaring a key another of its extensions declares,
  ``mcp_ref.server.seams.check_declarations``); at 2026-07-28 a server's extension returns its
  settings (or None: not offered now) and they go under ``extensions[name]``.
* ``methods(version)`` [both] — request methods it answers at ``version``:
  ``{"tasks/get": handler}``; a server's handler is ``handler(caller, context, params) -> result``,
  a client's ``handler(connection, context, params) -> result``.
* ``intercept_request(call, proceed)`` [both] — around the routing of every incoming request:
  return ``proceed()``, or raise an ``McpError`` to refuse it (rate limits, approval, an audit log).
* ``intercept_tool_call(caller, tool, arguments, context, run)`` [server] — around running a tool:
  return ``run(context)``, or answer otherwise (the task protocols turn the call into a task).
* ``gate`` [server] — who may see and use which item (:class:`~mcp_ref.server.seams.Gate`);
  None: it does not restrict.  The first extension of a server with a gate decides.
* ``context_attributes()`` [server] — what it adds to a handler's ``Context``: name ->
  ``function(ctx)`` giving the attribute (``ctx.start_task`` is the tasks extension's).
* ``http_middleware(app)`` [server] — steps it adds to the HTTP middleware chain of ``app``, an
  application serving the server (``mcp_ref.http.server.middleware``: the OAuth
  resource server checks tokens there, the rate limits answer 429 there).
* ``connection_ended(connection)`` [server] — a connection of the server ended for good, and no
  request will come on it again: a stdio or in-memory connection (or one of ``server.connect()``)
  whose input ended or that was closed, told once its handlers have finished; or a handshake-era
  HTTP session that ended for good (its client deleted it, it expired, or the server ended it;
  with sessions shared by several workers, each worker that held it is told).  What the
  extension kept for that connection alone may go (the 2025-11-25 tasks cancel the tasks only
  that connection could reach).  A worker that merely lets a shared session go, which others go
  on serving, does not call it; nor does a stateless HTTP request's one-request connection.  One
  that raises is logged, and the others are told all the same.

A server asks its extensions in the order they were added: the first one's ``intercept_request``
and ``intercept_tool_call`` are outermost, the first one's methods win a name both answer.

The client's part (a server never calls it): ``capabilities(version, None)`` returns capabilities
to merge into the client's own (a key replaces the client's, the ``extensions`` and
``experimental`` maps are merged key by key); in the handshake era they are declared once, in
``initialize``, so an extension that declares some is given to ``Client(extensions=[...])``, while
in 2026-07-28 every request declares them anew.  ``methods(version)`` answers the server's requests
(an extension's method wins over the client's own sampling, elicitation and roots);
``intercept_request(call, proceed)`` runs around answering each of them (``call`` is a
:class:`~mcp_ref.client.answering.IncomingRequest`: ``method``, ``params`` and ``context`` may be
replaced before ``proceed()``, which may be called later on another thread), in both eras (in
2026-07-28 around each of the ``inputRequests`` a result carries).  And:

* ``start_request(connection, method, params, options, start)`` [client] — around starting each
  request the client sends: return ``start(method, params, options)`` (a call with ``result()``,
  ``cancel()`` and ``done()``), perhaps with its params or options changed (an option of its own
  taken out, as ``task`` of ``client.call_tool(..., task=True)``), or a call of its own that takes
  over how the answer is awaited (:class:`~mcp_ref.client.connection.Call` is the one to extend).
* ``connection_ended(connection)`` — also the client's: its connection ended for good (its input
  ended or it was closed), told once, before ``close()`` returns (the client-hosted tasks stop
  their tasks then).  One that raises is logged, and the others are told all the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


class Extension:
    """The base of every extension: override the hooks it needs (see the module docstring)."""

    #: Its key in the 2026-07-28 ``extensions`` capability, or a label.
    name: str = ""
    #: Who may see and use which item (a server's :class:`~mcp_ref.server.seams.Gate`), or None.
    gate: Any = None

    def setup(self, host: Any) -> None:
        """Called once when ``host`` (a ``Server`` or a ``Client``) takes this extension."""

    def capabilities(self, version: str | None, peer: Any = None) -> dict[str, Any] | None:
        """What it adds to the capabilities declared at ``version`` (None: nothing)."""
        return None

    def methods(self, version: str | None) -> dict[str, Callable[..., Any]]:
        """The request methods it answers at ``version``, by name."""
        return {}

    def intercept_request(self, call: Any, proceed: Callable[[], Any]) -> Any:
        """Around the routing of each incoming request; the default goes on."""
        return proceed()

    def intercept_tool_call(
        self, caller: Any, tool: Any, arguments: Any, context: Any, run: Callable[[Any], Any]
    ) -> Any:
        """Around running a tool (server); the default runs it."""
        return run(context)

    def context_attributes(self) -> dict[str, Callable[[Any], Any]]:
        """What it adds to a handler's ``Context`` (server): name -> ``function(ctx)``."""
        return {}

    def http_middleware(self, app: Any) -> list[Any]:
        """The steps it adds to the HTTP middleware chain of ``app`` (server); none by default."""
        return []

    def connection_ended(self, connection: Any) -> None:
        """A connection ended for good: its input ended, it was closed, or it was a handshake-era
        HTTP session that ended for good (server); the client's connection ended (client)."""

    # -- the client's part: a Client calls these, a Server never does ---------------------------

    def start_request(
        self,
        connection: Any,
        method: str,
        params: dict | None,
        options: dict[str, Any],
        start: Callable[[str, dict | None, dict[str, Any]], Any],
    ) -> Any:
        """Around starting each request the client sends (client); the default sends it."""
        return start(method, params, options)


def declare_for_client(extensions: Iterable[Extension], version: str, capabilities: dict) -> None:
    """Add to ``capabilities`` (``Client.capabilities``) what ``extensions`` declare at
    ``version``, in their order: a key replaces what was there, the ``extensions`` and
    ``experimental`` maps are merged key by key (see the module docstring)."""
    for extension in extensions:
        for key, value in (extension.capabilities(version, None) or {}).items():
            merged = key in ("extensions", "experimental") and isinstance(
                capabilities.get(key), dict
            )
            capabilities[key] = {**capabilities[key], **value} if merged else value
