"""An MCP server as an OAuth 2.1 protected resource (2025-11-25 basic/authorization, RFC 9728, RFC 6750).

:class:`ProtectedResource` is what ``server.wsgi_app(auth=...)`` takes.  It holds a
:class:`TokenVerifier` (a token in, an :class:`AccessInfo` or None out), the authorization
servers to name, and the scopes.  For every request to the MCP endpoints the app asks it to
:meth:`~ProtectedResource.authenticate` the ``Authorization`` header:

- no token: 401 with ``WWW-Authenticate: Bearer resource_metadata="...", scope="..."``
  (§Protected Resource Metadata Discovery Requirements: servers "MUST use the HTTP header
  WWW-Authenticate when returning a 401 Unauthorized");
- a token the verifier does not know, an expired one, or one issued for another resource:
  401 with ``error="invalid_token"`` (§Token Handling: servers "MUST validate that access tokens
  were issued specifically for them as the intended audience");
- a token without the scopes the server requires of every request: 403 ``insufficient_scope``.

It also serves the protected resource metadata (RFC 9728) at
``/.well-known/oauth-protected-resource`` + the endpoint's path, and at the root.
The client's token is never forwarded anywhere (the verifier sees it, nothing else), and it never
appears in logs or errors.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol, cast
from urllib.parse import urlsplit

from ..http.bounded_reads import read_body
from ..http.origins import redirects_unread
from ..server.principal import AccessInfo

#: The most of an introspection answer read (RFC 7662 §2.2): a longer one is a failed
#: introspection, its connection closed unread.
MAX_INTROSPECTION_BYTES = 64 * 1024

METADATA_PREFIX = "/.well-known/oauth-protected-resource"
#: The environ key under which the application gives the path of its Streamable HTTP endpoint, the
#: one ``resource=`` names (:meth:`ProtectedResource.resource_url`).
ENDPOINT_PATH = "mcp_ref.oauth.endpoint_path"


class TokenVerifier(Protocol):
    """Turns a bearer token into :class:`AccessInfo`, or None when the token is not valid."""

    def verify(self, token: str) -> AccessInfo | None: ...


class IntrospectionVerifier:
    """A :class:`TokenVerifier` that asks the authorization server (RFC 7662 token introspection).

    ``client_id`` / ``client_secret`` authenticate this resource server to the introspection
    endpoint (HTTP Basic).  Each verification is one request, bounded by ``timeout``.
    """

    def __init__(
        self,
        introspection_endpoint: str,
        client_id: str,
        client_secret: str,
        *,
        timeout: float = 10.0,
    ):
        self.endpoint = introspection_endpoint
        self.credentials = (client_id, client_secret)
        self.timeout = timeout

    def verify(self, token: str) -> AccessInfo | None:
        import requests

        try:
            # No redirect is followed: a 307/308 would carry the token (in the body) and, to the same
            # host, the credentials to wherever it points.  A redirect is a failed introspection.
            answer = requests.post(
                self.endpoint,
                data={"token": token},
                auth=self.credentials,
                timeout=self.timeout,
                allow_redirects=False,
                stream=True,
                hooks=redirects_unread(None),  # a redirect's body is never read
            )
            if answer.status_code != 200:
                answer.close()
                return None
            # Read within MAX_INTROSPECTION_BYTES (read_body closes the answer): a longer answer
            # is a failed introspection.
            text = read_body(answer, MAX_INTROSPECTION_BYTES)
            body = json.loads(text) if text else None
        except (requests.RequestException, ValueError):
            return None
        if (
            not isinstance(body, dict)
            or body.get("active") is not True
            or not isinstance(body.get("client_id"), str)
        ):
            return None
        audience = body.get("aud")
        if not isinstance(audience, (str, list)):  # RFC 7662 §2.2: a string or an array of them
            audience = ()
        return AccessInfo(
            client_id=body["client_id"],
            subject=body.get("sub"),
            scopes=tuple(str(body.get("scope", "")).split()),
            expires_at=body.get("exp") if isinstance(body.get("exp"), (int, float)) else None,
            audience=(audience,)
            if isinstance(audience, str)
            else tuple(a for a in audience if isinstance(a, str)),
            claims=body,
        )


class ProtectedResource:
    """The protected-resource side of an MCP server over HTTP (see the module docstring).

    ``authorization_servers`` are the issuers clients may use.  ``resource`` is the canonical
    URL of the MCP endpoint (``https://mcp.example.com/mcp``), the audience every token must name.
    None suits a local server bound to port 0: the URL is the request's scheme, the name in its
    ``Host`` (which the DNS-rebinding guard has already checked: a local name, or one of
    ``allowed_hosts``), the port the server listens on (the WSGI server's ``SERVER_PORT``, never
    the port a ``Host`` header names) and the endpoint's path.  Behind anything that changes the
    scheme or the port (a reverse proxy, a container's port mapping, a tunnel), pass ``resource=``.
    ``required_scopes`` are needed for every request; ``scopes_supported`` are advertised.

    The 2024-11-05 HTTP+SSE endpoint (``/sse``, its messages posted to ``/messages``) is a
    resource of its own, with its own identifier: the same origin, its own path (``resource=``'s
    path with the Streamable HTTP endpoint's path at its end replaced by the SSE one's:
    ``https://mcp.example.com/sse``).  Its metadata, its challenges and the audience its tokens
    must name are that identifier's: RFC 9728 §3.3, the ``resource`` of the metadata at
    ``/.well-known/oauth-protected-resource/sse`` is the one the client asked about, else it
    "MUST NOT" use it; and a token issued for ``.../mcp`` is refused at ``.../sse`` (2025-11-25
    §Token Handling: servers "MUST validate that access tokens were issued specifically for them
    as the intended audience"; RFC 8707 §2: a token is for the resource its request named).
    """

    def __init__(
        self,
        verifier: TokenVerifier,
        authorization_servers: Iterable[str] | Callable[[dict[str, Any]], list[str]],
        *,
        resource: str | None = None,
        scopes_supported: Iterable[str] = (),
        required_scopes: Iterable[str] = (),
    ):
        self.verifier = verifier
        #: The issuers to name; or a function of the request's environ that returns them.
        self.authorization_servers = (
            authorization_servers
            if callable(authorization_servers)
            else list(authorization_servers)
        )
        self.resource = canonical(resource) if resource else None
        self.scopes_supported = list(scopes_supported)
        self.required_scopes = tuple(required_scopes)

    def resource_url(self, environ: dict[str, Any], path: str) -> str:
        """The canonical URL of this resource (RFC 8707 §2), the audience tokens must name:
        configured, or the request's scheme and host name with the port this server listens on.

        Never the port of the ``Host`` header: 2025-11-25 basic/authorization §Token Handling,
        servers "MUST validate that access tokens were issued specifically for them as the
        intended audience", and a ``Host`` is the caller's to choose.  Two servers on one machine
        (ports A and B, one authorization server) would otherwise each accept the other's tokens
        sent with ``Host: 127.0.0.1:B``: the DNS-rebinding guard checks the name, not the port.
        """
        if self.resource:
            return self._configured(environ, path)
        scheme = environ.get("wsgi.url_scheme", "http")
        name = host_name(environ.get("HTTP_HOST") or "localhost")
        port = str(environ.get("SERVER_PORT") or "")
        shown = "" if port in ("", {"http": "80", "https": "443"}.get(scheme)) else f":{port}"
        return canonical(f"{scheme}://{name}{shown}{path}")

    def metadata_url(self, environ: dict[str, Any], path: str) -> str:
        """Where this resource's metadata is served (RFC 9728 §3.1: the well-known prefix, then the
        path): under the configured resource, else on the origin the request reached (the
        metadata's ``resource`` then tells a client whose port was changed on the way which URL
        this server answers for)."""
        if self.resource:
            parts = urlsplit(self._configured(environ, path))
            return f"{parts.scheme}://{parts.netloc}{METADATA_PREFIX}{parts.path}"
        scheme = environ.get("wsgi.url_scheme", "http")
        host = (environ.get("HTTP_HOST") or "localhost").lower()
        return f"{scheme}://{host}{METADATA_PREFIX}{path.rstrip('/')}"

    def _configured(self, environ: dict[str, Any], path: str) -> str:
        """The identifier of the endpoint at application path ``path``, from ``resource=``: that
        one for the Streamable HTTP endpoint (whose path the application gives in ``environ``,
        under :data:`ENDPOINT_PATH`); for another (HTTP+SSE), the same origin and prefix (what a
        reverse proxy puts before the application's paths), then ``path``."""
        resource = cast(str, self.resource)
        main = environ.get(ENDPOINT_PATH)
        if not isinstance(main, str) or path.rstrip("/") == main.rstrip("/"):
            return resource
        parts = urlsplit(resource)
        main = main.rstrip("/")
        prefix = parts.path[: -len(main)] if main and parts.path.endswith(main) else ""
        return canonical(f"{parts.scheme}://{parts.netloc}{prefix}{path}")

    def metadata(self, environ: dict[str, Any], path: str) -> dict[str, Any]:
        """RFC 9728 protected resource metadata."""
        servers = self.authorization_servers
        body = {
            "resource": self.resource_url(environ, path),
            "authorization_servers": servers(environ) if callable(servers) else servers,
            "bearer_methods_supported": ["header"],
        }
        if self.scopes_supported:
            body["scopes_supported"] = self.scopes_supported
        return body

    def authenticate(self, environ: dict[str, Any], path: str) -> AccessInfo:
        """The caller's :class:`AccessInfo`, or raise the HTTP layer's 401
        (:class:`~mcp_ref.http.server.status.Unauthorized`) or 403 ``insufficient_scope``."""
        header = environ.get("HTTP_AUTHORIZATION") or ""
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise self._refusal(environ, path, "Unauthorized: a bearer token is required")
        info = self.verifier.verify(token)
        resource = self.resource_url(environ, path)
        if info is None or (info.expires_at is not None and info.expires_at < time.time()):
            raise self._refusal(
                environ,
                path,
                "Unauthorized: the token is not valid or has expired",
                error="invalid_token",
            )
        if resource not in {canonical(a) for a in info.audience}:
            # The token was issued for another resource: accepting it would let one server replay
            # its clients' tokens to another (§Token Audience Binding and Validation).
            raise self._refusal(
                environ,
                path,
                "Unauthorized: the token was not issued for this resource",
                error="invalid_token",
            )
        missing = [scope for scope in self.required_scopes if scope not in info.scopes]
        if missing:
            raise self.insufficient_scope(environ, path, missing)
        return info

    def insufficient_scope(
        self, environ: dict[str, Any], path: str, scopes: Iterable[str]
    ) -> Exception:
        """A 403 naming the scopes needed (2025-11-25 §Scope Challenge Handling; RFC 6750 §3.1):
        the HTTP layer's :class:`~mcp_ref.http.server.status.InsufficientScope`, to raise."""
        needed = " ".join(sorted(set(self.required_scopes) | set(scopes)))
        return self._refusal(
            environ,
            path,
            f"Forbidden: this needs the scope(s) {needed}",
            error="insufficient_scope",
            scope=needed,
        )

    def _refusal(
        self,
        environ: dict[str, Any],
        path: str,
        message: str,
        *,
        error: str | None = None,
        scope: str | None = None,
    ) -> Exception:
        """The HTTP layer's refusal with this resource's ``WWW-Authenticate`` challenge: 403 for
        ``insufficient_scope``, else 401 (the status comes from the HTTP layer's table)."""
        from ..http.server.status import InsufficientScope, Unauthorized

        parts = [f'resource_metadata="{self.metadata_url(environ, path)}"']
        scope = (
            scope if scope is not None else " ".join(self.required_scopes or self.scopes_supported)
        )
        if scope:
            parts.append(f'scope="{scope}"')
        if error:
            parts.append(f'error="{error}"')
        kind = InsufficientScope if error == "insufficient_scope" else Unauthorized
        return kind(message, headers=[("WWW-Authenticate", "Bearer " + ", ".join(parts))])


def host_name(host: str) -> str:
    """The name or address of a ``Host`` value, without its port (``[::1]:8000`` -> ``[::1]``)."""
    if host.startswith("["):
        return host[: host.index("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def canonical(uri: str) -> str:
    """RFC 8707 / 2025-11-25 §Canonical Server URI: lowercase scheme and host, no fragment, no trailing slash."""
    parts = urlsplit(uri.strip())
    netloc = parts.netloc.lower()
    path = parts.path.rstrip("/") if parts.path not in ("", "/") else ""
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme.lower()}://{netloc}{path}{query}"
