"""The OAuth protected resource as an extension's HTTP middleware (``McpWsgiApp(auth=...)``, or
``server.add_extension(ResourceServer(auth))``; loaded only then).

* :class:`ResourceServer`: the extension, whose ``http_middleware(app)`` are the two steps below.

* :class:`ProtectedResourceCheck`: RFC 9728 metadata, and the bearer token of every MCP request
  (401 with ``WWW-Authenticate`` without a valid one).  See ``spec_notes/authorization.md``.
* :class:`ScopeChallenge`: 2025-11-25 §Scope Challenge Handling, 403 ``insufficient_scope``.
"""

from __future__ import annotations

import json
from typing import Any

from ...extension import Extension
from ...jsonrpc import Request
from ...server.principal import Principal
from .host import Host
from .middleware import Endpoints, HttpCall, Middleware
from .replies import json_body


class ProtectedResourceCheck(Middleware):
    """The OAuth protected resource (``auth``, a ``mcp_ref.oauth.resource.ProtectedResource``): its
    metadata, and the bearer token of every MCP request, the caller's ``AccessInfo`` left in
    ``environ["mcp_ref.oauth"]``."""

    def __init__(self, auth: Any, endpoints: Endpoints):
        self.auth = auth
        self.endpoints = endpoints

    def on_request(self, call: HttpCall) -> list[bytes] | None:
        """The metadata (a finished answer), or None to go on with the caller known; 401 / 403."""
        from ...oauth.resource import ENDPOINT_PATH, METADATA_PREFIX

        paths = self.endpoints
        path = call.path
        # the endpoint resource= names: the HTTP+SSE one is a resource of its own (its own
        # identifier, its own tokens: ProtectedResource)
        call.environ[ENDPOINT_PATH] = paths.path
        if call.method == "GET" and path in (
            METADATA_PREFIX,
            METADATA_PREFIX + paths.path,
            METADATA_PREFIX + paths.sse_path,
        ):
            # RFC 9728 §3.1: the metadata of the resource at PATH is at the well-known prefix + PATH.
            resource_path = path[len(METADATA_PREFIX) :] or paths.path
            body = json.dumps(self.auth.metadata(call.environ, resource_path)).encode()
            return json_body(call.start_response, "200 OK", body)
        if path not in (paths.path, paths.sse_path, paths.messages_path):
            return None
        resource_path = paths.sse_path if path == paths.messages_path else path
        # a 401 or 403 (Unauthorized, InsufficientScope) without a valid token
        call.environ["mcp_ref.oauth"] = self.auth.authenticate(call.environ, resource_path)
        return None


class ScopeChallenge(Middleware):
    """2025-11-25 §Scope Challenge Handling: a request for a tool, resource or prompt that needs
    scopes the token lacks gets 403 ``insufficient_scope`` naming them, before it runs, so the
    client can step up (``Server.tool(scopes=...)``)."""

    def __init__(self, auth: Any, server: Host):
        self.auth = auth
        self.server = server

    def on_messages(self, environ: dict, messages: list, resource_path: str) -> None:
        """403 naming the scopes the requests need and the token lacks."""
        caller = environ.get("mcp_ref.oauth")
        if caller is None:
            return
        # an item hidden from it needs no scope (the server's gate)
        principal = Principal.of(caller, "")
        missing: set[str] = set()
        for item in messages:
            if isinstance(item, Request):
                missing.update(self.server.required_scopes(item.method, item.params, principal))
        if missing:
            raise self.auth.insufficient_scope(environ, resource_path, missing)


class ResourceServer(Extension):
    """The server as an OAuth protected resource (``auth``, a
    ``mcp_ref.oauth.resource.ProtectedResource``): on every HTTP application serving it, its
    metadata, a bearer token on every MCP request (401) and the scope challenges (403)."""

    name = "oauth-resource-server"

    def __init__(self, auth: Any):
        self.auth = auth

    def http_middleware(self, app: Any) -> list[Any]:
        """:class:`ProtectedResourceCheck`, then :class:`ScopeChallenge`, for ``app``'s paths."""
        return [
            ProtectedResourceCheck(self.auth, app.endpoints),
            ScopeChallenge(self.auth, app.server),
        ]
