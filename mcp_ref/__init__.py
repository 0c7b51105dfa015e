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
import sys
from types import ModuleType
from typing import TYPE_CHECKING

__version__ = "0.1.0"

#: The protocol revisions mcp_ref speaks, newest first (also ``mcp_ref.core.lifecycle.SUPPORTED_VERSIONS``).
SUPPORTED_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_VERSION = SUPPORTED_VERSIONS[0]
#: The modern revisions (no ``initialize``: each request carries its version in ``_meta``), newest
#: first.  A server answers them beside SUPPORTED_VERSIONS (see ``mcp_ref.core.envelope``).
MODERN_VERSIONS = ("2026-07-28",)

if TYPE_CHECKING:  # what a type checker sees: every exported name, typed (loaded lazily at run time)
    from .auth.oauth import OAuth
    from .client import Client, ToolCall
    from .core.errors import (
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
    from .core.session import PendingRequest, RequestContext, Session
    from .core.types import (
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
    from .extras.approval import ServerRequest
    from .extras.policy import Principal
    from .extras.ratelimit import RateLimit
    from .server import Context, Elicit, ElicitUrl, ListRoots, Sample, Server, ToolError
    from .workbench.connection_limits import ConnectionLimits

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
    "ConnectionLimits": "workbench.connection_limits",
    "OAuth": "auth.oauth",
    "AuthorizationError": "core.errors",
    "Session": "core.session",
    "RequestContext": "core.session",
    "PendingRequest": "core.session",
    "MCPRefError": "core.errors",
    "McpError": "core.errors",
    "ParseError": "core.errors",
    "InvalidRequest": "core.errors",
    "MethodNotFound": "core.errors",
    "InvalidParams": "core.errors",
    "InternalError": "core.errors",
    "ResourceNotFound": "core.errors",
    "UrlElicitationRequired": "core.errors",
    "HeaderMismatchError": "core.errors",
    "MissingRequiredClientCapabilityError": "core.errors",
    "UnsupportedProtocolVersionError": "core.errors",
    "ConnectionClosed": "core.errors",
    "ServerUnreachable": "core.errors",
    "RequestTimeout": "core.errors",
    "RequestCancelled": "core.errors",
    "CapabilityError": "core.errors",
    "UnsupportedProtocolVersion": "core.errors",
    "ServerBusy": "core.errors",
    "LimitExceeded": "core.errors",
    "RequestRefused": "core.errors",
    "RateLimit": "extras.ratelimit",
    "Principal": "extras.policy",
    "ServerRequest": "extras.approval",
    "TextContent": "core.types",
    "ImageContent": "core.types",
    "AudioContent": "core.types",
    "Image": "core.types",
    "Audio": "core.types",
    "ResourceLink": "core.types",
    "EmbeddedResource": "core.types",
    "TextResourceContents": "core.types",
    "BlobResourceContents": "core.types",
    "CallToolResult": "core.types",
    "CreateMessageParams": "core.types",
    "CreateMessageResult": "core.types",
    "ElicitParams": "core.types",
    "ElicitResult": "core.types",
    "GetPromptResult": "core.types",
    "PromptMessage": "core.types",
    "Root": "core.types",
    "Tool": "core.types",
    "Resource": "core.types",
    "ResourceTemplate": "core.types",
    "Prompt": "core.types",
    "LogMessage": "core.types",
}

#: Modules that moved when the package was laid out in layers (core, server, client, transports,
#: extras, workbench): the old dotted name still imports, with a DeprecationWarning, until 1.0.
MOVED = {
    "mcp_ref.jsonrpc": "mcp_ref.core.jsonrpc",
    "mcp_ref.errors": "mcp_ref.core.errors",
    "mcp_ref.lifecycle": "mcp_ref.core.lifecycle",
    "mcp_ref.session": "mcp_ref.core.session",
    "mcp_ref.types": "mcp_ref.core.types",
    "mcp_ref.envelope": "mcp_ref.core.envelope",
    "mcp_ref.validation": "mcp_ref.core.validation",
    "mcp_ref.signing": "mcp_ref.core.signing",
    "mcp_ref.pagination": "mcp_ref.core.pagination",
    "mcp_ref.uri_template": "mcp_ref.core.uri_template",
    "mcp_ref.transports.base": "mcp_ref.core.transport",
    "mcp_ref.signatures": "mcp_ref.server.signatures",
    "mcp_ref.server.policy": "mcp_ref.extras.policy",
    "mcp_ref.ratelimit": "mcp_ref.extras.ratelimit",
    "mcp_ref.server.tasks": "mcp_ref.extras.tasks",
    "mcp_ref.client.tasks": "mcp_ref.extras.client_tasks",
    "mcp_ref.files": "mcp_ref.extras.files",
    "mcp_ref.client.approval": "mcp_ref.extras.approval",
    "mcp_ref.cli": "mcp_ref.workbench.cli",
    "mcp_ref.demo": "mcp_ref.workbench.demo",
    "mcp_ref.walkthrough": "mcp_ref.workbench.walkthrough",
    "mcp_ref.check": "mcp_ref.workbench.check",
    "mcp_ref.diagram": "mcp_ref.workbench.diagram",
    "mcp_ref.terminal": "mcp_ref.workbench.terminal",
    "mcp_ref.wire_check": "mcp_ref.workbench.wire_check",
    "mcp_ref.transports.wsgi_server": "mcp_ref.workbench.wsgi_server",
    "mcp_ref.transports.connection_limits": "mcp_ref.workbench.connection_limits",
    "mcp_ref.auth.demo_server": "mcp_ref.workbench.demo_auth_server",
    "mcp_ref.auth.login": "mcp_ref.workbench.login",
}


class _MovedModules:
    """A meta path finder: ``import mcp_ref.errors`` gives ``mcp_ref.core.errors`` (see MOVED)."""

    @staticmethod
    def find_spec(name: str, path=None, target=None):
        new = MOVED.get(name)
        if new is None:
            return None
        import importlib.util
        import warnings

        warnings.warn(f"{name} moved to {new}; the old name goes away in 1.0", DeprecationWarning, stacklevel=2)
        spec = importlib.util.find_spec(new)
        return None if spec is None else importlib.util.spec_from_loader(name, _AliasLoader(new))


class _AliasLoader:
    def __init__(self, new: str):
        self.new = new

    def create_module(self, spec) -> ModuleType:
        return importlib.import_module(self.new)

    def exec_module(self, module: ModuleType) -> None:
        pass

    def load_module(self, fullname: str) -> ModuleType:
        return importlib.import_module(self.new)


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModules())

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
