"""mcp_ref: a synchronous, thread-based reference implementation of the Model Context Protocol.

Start here::

    from mcp_ref import Client, Server

A map of the package:

    Client            Client.stdio(command), Client.http(url), Client.in_memory(server); then
                      call_tool, list_tools, read_resource, get_prompt, complete, ping ...
    Server            Server(name); @server.tool, @server.resource(uri), @server.prompt;
                      server.run() (stdio), server.run(transport="http"), server.wsgi_app()
    Context           a tool's view of its request: progress, logs, sampling, elicitation
    PerThread         one object per handler thread, held by the lifespan (a sqlite3 connection)
    content           TextContent, ImageContent, Image(path=...), Audio(...), EmbeddedResource ...
    errors            McpError (with its JSON-RPC code), ToolError, ResourceError, PromptError,
                      ConnectionClosed, ServerUnreachable, RequestTimeout, CapabilityError,
                      InvalidResult
    Principal         ctx.principal: who calls (id, scopes, claims); Server(authorize=..., rate_limit=...)
    Extension         what plugs into a server or client: Server(extensions=[...]) (docs/extensions.md)
    ServerRequest     what Client(approve=hook) is shown before it answers a server's request
    ConnectionLimits  the bounds of the standard-library HTTP server
    OAuth             Client.http(url, auth=OAuth()): OAuth 2.1 authorization (mcp_ref.oauth)
    proxy_server      proxy_server(target): any server to any client, across transports and eras
                      (mcp_ref.proxy; docs/proxy.md)
    modules           the protocol at the top: jsonrpc, errors, lifecycle, types, session,
                      transport, stdio, extension; the roles: server/ and client/ (a module
                      per spec area); then http/, extensions/, state/, oauth/, workbench/
                      (the tools for people) and schemas/ (the official JSON Schemas)
    command           mcp-ref --help; ``mcp-ref demo`` walks through every feature

Public names are loaded on first use, so ``import mcp_ref`` stays cheap.
"""

from __future__ import annotations

import importlib

#: Where each exported name lives; it is imported on first use, so ``import mcp_ref`` stays cheap.
#: (``lifecycle``: the package's version and the protocol revisions it speaks; MODERN_VERSIONS is
#: 2026-07-28, the era with no handshake.)
_HOMES = {
    "lifecycle": "__version__ SUPPORTED_VERSIONS LATEST_VERSION MODERN_VERSIONS",
    "client": "Client ToolCall",
    "server": "Server Context ToolError ResourceError PromptError Elicit ElicitUrl Sample ListRoots",
    "http.connection_limits": "ConnectionLimits",
    "session": "Session RequestContext PendingRequest",
    "request": "DEFAULT Default",
    "errors": "MCPRefError McpError ParseError InvalidRequest MethodNotFound InvalidParams "
    "InternalError ResourceNotFound UrlElicitationRequired HeaderMismatchError "
    "MissingRequiredClientCapabilityError UnsupportedProtocolVersionError ConnectionClosed "
    "ServerUnreachable RequestTimeout RequestCancelled CapabilityError InvalidResult "
    "ServerBusy LimitExceeded RequestRefused",
    "server.principal": "Principal",
    "extension": "Extension",
    "types": "TextContent ImageContent AudioContent ResourceLink EmbeddedResource "
    "TextResourceContents BlobResourceContents CallToolResult Tool",
    "media": "Image Audio",
    "per_thread": "PerThread",
    "sampling_and_elicitation": "CreateMessageParams CreateMessageResult ElicitParams ElicitResult",
    "feature_types": "GetPromptResult PromptMessage Root Resource ResourceTemplate Prompt LogMessage",
}
_EXPORTS = {name: module for module, names in _HOMES.items() for name in names.split()}
#: The names exported from the extras (OAuth, the extensions, the proxy): their modules are in the extras' own
#: table (:data:`mcp_ref.extensions.EXPORTS`), read when one of them is first asked for.
_FROM_EXTRAS = "OAuth AuthorizationError RateLimit ServerRequest ProxyServer proxy_server".split()

__all__ = [*_EXPORTS, *_FROM_EXTRAS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None and name in _FROM_EXTRAS:
        from .extensions import EXPORTS

        module = EXPORTS[name]
    if module is None:
        raise AttributeError(f"module 'mcp_ref' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
