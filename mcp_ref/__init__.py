"""mcp_ref: a synchronous, thread-based reference implementation of the Model Context Protocol.

Start here::

    from mcp_ref import Client, Server

A map of the package:

    Client            Client.stdio(command), Client.http(url), Client.in_memory(server); then
                      call_tool, list_tools, read_resource, get_prompt, complete, ping ...
    Server            Server(name); @server.tool, @server.resource(uri), @server.prompt;
                      server.run() (stdio), server.run(transport="http"), server.wsgi_app()
    Context           a tool's view of its request: progress, logs, sampling, elicitation
    content           TextContent, ImageContent, Image(path=...), Audio(...), EmbeddedResource ...
    errors            McpError (with its JSON-RPC code), ToolError, ConnectionClosed,
                      ServerUnreachable, RequestTimeout, CapabilityError
    Principal         ctx.principal: who calls (id, scopes, claims); Server(authorize=..., rate_limit=...)
    ServerRequest     what Client(approve=hook) is shown before it answers a server's request
    ConnectionLimits  the bounds of the standard-library HTTP server
    OAuth             Client.http(url, auth=OAuth()): OAuth 2.1 authorization (mcp_ref.auth)
    modules           client/ and server/ (the two roles, a module per spec area), session
                      (JSON-RPC over any transport), transports/ (stdio, HTTP, in-memory),
                      lifecycle, types, schemas (the official JSON Schemas)
    command           mcp-ref --help; ``mcp-ref demo`` walks through every feature

Public names are loaded on first use, so ``import mcp_ref`` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

#: The protocol revisions mcp_ref speaks, newest first (also ``mcp_ref.lifecycle.SUPPORTED_VERSIONS``).
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_VERSION = SUPPORTED_VERSIONS[0]
#: The modern revisions (no ``initialize``: each request carries its version in ``_meta``), newest
#: first.  A server answers them beside SUPPORTED_VERSIONS (see ``mcp_ref.envelope``).
MODERN_VERSIONS = ("2026-07-28",)

if TYPE_CHECKING:  # what a type checker sees: every exported name, typed (loaded lazily at run time)
    from .auth.oauth import OAuth
    from .client import Client, ToolCall
    from .client.approval import ServerRequest
    from .errors import (
        AuthorizationError,
        CapabilityError,
        ConnectionClosed,
        HeaderMismatchError,
        InternalError,
        InvalidParams,
        InvalidRequest,
        LimitExceeded,
        McpError,
        MCPRefError,
        MethodNotFound,
        MissingRequiredClientCapabilityError,
        ParseError,
        RequestCancelled,
        RequestRefused,
        RequestTimeout,
        ResourceNotFound,
        ServerBusy,
        ServerUnreachable,
        UnsupportedProtocolVersion,
        UnsupportedProtocolVersionError,
        UrlElicitationRequired,
    )
    from .ratelimit import RateLimit
    from .server import Context, Elicit, ElicitUrl, ListRoots, Sample, Server, ToolError
    from .server.policy import Principal
    from .session import PendingRequest, RequestContext, Session
    from .transports.connection_limits import ConnectionLimits
    from .types import (
        Audio,
        AudioContent,
        BlobResourceContents,
        CallToolResult,
        CreateMessageParams,
        CreateMessageResult,
        ElicitParams,
        ElicitResult,
        EmbeddedResource,
        GetPromptResult,
        Image,
        ImageContent,
        LogMessage,
        Prompt,
        PromptMessage,
        Resource,
        ResourceLink,
        ResourceTemplate,
        Root,
        TextContent,
        TextResourceContents,
        Tool,
    )

_EXPORTS = {
    "Client": "client",
    "ToolCall": "client",
    "Server": "server",
    "Context": "server",
    "ToolError": "server",
    "Elicit": "server",
    "ElicitUrl": "server",
    "Sample": "server",
    "ListRoots": "server",
    "ConnectionLimits": "transports.connection_limits",
    "OAuth": "auth.oauth",
    "AuthorizationError": "errors",
    "Session": "session",
    "RequestContext": "session",
    "PendingRequest": "session",
    "MCPRefError": "errors",
    "McpError": "errors",
    "ParseError": "errors",
    "InvalidRequest": "errors",
    "MethodNotFound": "errors",
    "InvalidParams": "errors",
    "InternalError": "errors",
    "ResourceNotFound": "errors",
    "UrlElicitationRequired": "errors",
    "HeaderMismatchError": "errors",
    "MissingRequiredClientCapabilityError": "errors",
    "UnsupportedProtocolVersionError": "errors",
    "ConnectionClosed": "errors",
    "ServerUnreachable": "errors",
    "RequestTimeout": "errors",
    "RequestCancelled": "errors",
    "CapabilityError": "errors",
    "UnsupportedProtocolVersion": "errors",
    "ServerBusy": "errors",
    "LimitExceeded": "errors",
    "RequestRefused": "errors",
    "RateLimit": "ratelimit",
    "Principal": "server.policy",
    "ServerRequest": "client.approval",
    "TextContent": "types",
    "ImageContent": "types",
    "AudioContent": "types",
    "Image": "types",
    "Audio": "types",
    "ResourceLink": "types",
    "EmbeddedResource": "types",
    "TextResourceContents": "types",
    "BlobResourceContents": "types",
    "CallToolResult": "types",
    "CreateMessageParams": "types",
    "CreateMessageResult": "types",
    "ElicitParams": "types",
    "ElicitResult": "types",
    "GetPromptResult": "types",
    "PromptMessage": "types",
    "Root": "types",
    "Tool": "types",
    "Resource": "types",
    "ResourceTemplate": "types",
    "Prompt": "types",
    "LogMessage": "types",
}

__all__ = ["__version__", "SUPPORTED_VERSIONS", "LATEST_VERSION", "MODERN_VERSIONS", *_EXPORTS]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_ref' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
