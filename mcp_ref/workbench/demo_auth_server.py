"""A small OAuth 2.1 authorization server, as a WSGI application: for teaching and tests, never production.

It shows the whole dance an MCP client performs, on the wire, with nothing hidden:

- ``GET /.well-known/oauth-authorization-server`` (and the OpenID variant): RFC 8414 metadata;
- ``POST /register``: Dynamic Client Registration (RFC 7591);
- ``GET /authorize``: approves at once (no login page: the demo has one user, ``demo-user``) and
  redirects with ``code``, ``state`` and ``iss`` (RFC 9207);
- ``POST /token``: the authorization-code grant with PKCE S256 only (RFC 7636), and refresh tokens,
  rotated on every use;
- ``POST /introspect``: token introspection (RFC 7662), for a resource server that authenticates;
- Client ID Metadata Documents: a ``client_id`` that is an https URL is fetched (bounded: size,
  time, no redirects; https only, except http on loopback; only from a globally routable address,
  the one checked), and its ``client_id`` must be that URL exactly (2025-11-25
  basic/authorization §Client ID Metadata Documents).

Every route checks the request's ``Host`` (and ``Origin``) as the MCP endpoint does
(``allowed_hosts`` / ``allowed_origins``; by default loopback names only): a DNS-rebinding page
gets 403, and the issuer is never taken from a ``Host`` that is not allowed.  Any bad input gets
an RFC 6749 §5.2 error; nothing raises out of the application.

Codes are single use, live ``code_lifetime`` seconds, and are bound to the client, the redirect
URI, the PKCE challenge and the resource (RFC 8707).  Access tokens are opaque, bound to the
resource (their audience) and the scopes granted.  Redirect URIs match exactly, except that a
loopback ``http`` URI matches on any port (RFC 8252 §7.3).  A public client ``mcp-ref-demo`` is
pre-registered with ``http://127.0.0.1/callback`` and ``http://localhost/callback``.

Every table is bounded (``max_clients``, ``max_grants``): when full, the oldest entry goes.  The
tables (clients, codes, access and refresh tokens) are :class:`~mcp_ref.workbench.auth_tables.AuthTable`
s: this process's memory by default; with ``state=`` (a shared state, e.g. ``MCP_REF_STATE=redis://...``,
which :func:`protected_app` takes from its server) every worker sees every client, code and token.
Tokens are opaque (nothing is signed), so no key need be shared.
Errors are JSON ``{"error", "error_description"}`` (RFC 6749 §5.2) and never repeat a code,
token or secret.  An authorization request whose client or redirect URI is not known is
answered 400 here and never redirected (no open redirect).
"""

from __future__ import annotations

import base64
import dataclasses
import hmac
import ipaddress
import json
import logging
import math
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

import requests
from requests.adapters import HTTPAdapter

from ..http.origins import (
    LOCAL_HOSTS,
    close_redirect_unread,
    host_allowed,
    is_loopback,
    origin_allowed,
)
from ..oauth import pkce
from ..oauth.browser import redirect_uri_matches
from ..oauth.discovery import cache_lifetime
from .auth_tables import Grant, MemoryAuthTable, Records, RegisteredClient, auth_table

log = logging.getLogger(__name__)

#: The pre-registered public client.
DEMO_CLIENT_ID = "mcp-ref-demo"
DEMO_REDIRECT_URIS = ("http://127.0.0.1/callback", "http://localhost/callback")
#: A request body larger than this is refused before it is parsed (registration, token, introspection).
MAX_BODY = 64 * 1024
#: A client metadata document larger than this is refused (and not read further).
MAX_DOCUMENT = 16 * 1024
#: Seconds a client metadata document is kept (less if its Cache-Control max-age says so).
DOCUMENT_TTL = 300.0
#: Seconds to fetch one client metadata document, in all.
DOCUMENT_TIMEOUT = 5.0
#: The longest ``client_id`` URL fetched as a metadata document (and kept as a cache key).
MAX_CLIENT_ID_URL = 2048
#: The scopes the demo knows.
DEFAULT_SCOPES = ("mcp:tools", "mcp:admin")
AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post")
#: The challenge of a 401 to a client that authenticated with HTTP Basic (RFC 6749 §5.2).
_BASIC_CHALLENGE = [("WWW-Authenticate", 'Basic realm="demo"')]
#: The authorization server's endpoints: path -> the one HTTP method it answers.
ENDPOINTS = {
    "/.well-known/oauth-authorization-server": "GET",
    "/.well-known/openid-configuration": "GET",
    "/register": "POST",
    "/authorize": "GET",
    "/token": "POST",
    "/introspect": "POST",
}


class OAuthError(Exception):
    """An error answered as RFC 6749 §5.2 JSON with an HTTP status."""

    def __init__(
        self, error: str, description: str, status: str = "400 Bad Request", headers: Iterable = ()
    ):
        super().__init__(description)
        self.error = error
        self.description = description
        self.status = status
        self.headers = list(headers)


class DemoAuthorizationServer:
    """The WSGI application of the demo authorization server (see the module docstring).

    ``issuer`` is its URL (``http://127.0.0.1:8000``); None takes it from each request's
    ``Host`` once that is allowed, which suits a server bound to port 0.  ``scopes`` are the
    scopes it grants.  ``allowed_hosts`` / ``allowed_origins``: the DNS-rebinding guard of the
    MCP endpoint (:class:`~mcp_ref.http.server.McpWsgiApp`'s options, the same
    rules): None allows loopback names only, ``["*"]`` any.  ``state``: a shared
    :class:`~mcp_ref.state.stores.State` (or its URL) whose ``auth_table`` keeps the tables, else
    this process's memory.  ``clock`` (seconds) ages codes and tokens; by default monotonic, or the
    wall clock with shared tables (the workers of several hosts share no monotonic clock).
    """

    def __init__(
        self,
        issuer: str | None = None,
        *,
        scopes: Iterable[str] = DEFAULT_SCOPES,
        code_lifetime: float = 60.0,
        token_lifetime: float = 3600.0,
        max_clients: int = 1000,
        max_grants: int = 10_000,
        clock: Callable[[], float] | None = None,
        allowed_hosts: Iterable[str] | None = None,
        allowed_origins: Iterable[str] | None = None,
        state: Any = None,
    ):
        self.issuer = issuer.rstrip("/") if issuer else None
        self.allowed_hosts = None if allowed_hosts is None else list(allowed_hosts)
        self.allowed_origins = None if allowed_origins is None else list(allowed_origins)
        self.scopes = tuple(scopes)
        self.code_lifetime = code_lifetime
        self.token_lifetime = token_lifetime
        if isinstance(state, str):
            from ..server.shorthand import state_from

            state = state_from(state)
        shared = getattr(state, "auth_table", None) is not None
        self.clock = clock or (time.time if shared else time.monotonic)
        self.clients = Records(auth_table(state, "clients", max_clients, clock), RegisteredClient)
        self.codes, self.access_tokens, self.refresh_tokens = (
            Records(auth_table(state, name, max_grants, clock), Grant)
            for name in ("codes", "access_tokens", "refresh_tokens")
        )
        # Client metadata documents, URL -> client: a cache each process keeps (any worker can fetch one).
        self.documents = Records(MemoryAuthTable(max_clients, clock=self.clock), RegisteredClient)
        #: The address of the caller of the request this thread serves (see :meth:`client`).
        self._caller = threading.local()
        #: The pre-registered client: answered from here (no store needed: a worker starts, and the
        #: demo client works, while a shared store is unreachable or after it restarted empty).
        self.demo_client = RegisteredClient(
            DEMO_CLIENT_ID, DEMO_REDIRECT_URIS, client_name="mcp-ref demo"
        )
        try:  # counted in the bound, never evicted
            self.clients.put(DEMO_CLIENT_ID, self.demo_client, pinned=True)
        except ConnectionError:  # the shared table has warned; answering for it needs no table
            pass

    # -- WSGI -----------------------------------------------------------------------------------

    def __call__(self, environ: dict, start_response):
        self._caller.address = environ.get("REMOTE_ADDR") or ""
        try:
            return self._route(environ, start_response)
        except OAuthError as exc:
            error = exc
        except ConnectionError:  # a shared table's store is unreachable (the table has warned)
            error = OAuthError(
                "temporarily_unavailable",
                "the authorization server's store is unreachable; retry later",
                "503 Service Unavailable",
                [("Retry-After", "5")],
            )
        except Exception:  # a bug, not the client's doing: logged here, never sent
            log.exception(
                "the demo authorization server failed on %s %s",
                environ.get("REQUEST_METHOD"),
                (environ.get("PATH_INFO") or "/")[:200],
            )
            error = OAuthError(
                "server_error",
                "the authorization server failed; see its log",
                "500 Internal Server Error",
            )
        body = {"error": error.error, "error_description": error.description}
        return _json(start_response, error.status, body, headers=error.headers, no_store=True)

    def _route(self, environ: dict, start_response) -> list:
        self._check_host_and_origin(environ)
        issuer = (
            self.issuer
            or f"{environ.get('wsgi.url_scheme', 'http')}://{environ.get('HTTP_HOST', 'localhost')}"
        )
        method, path = environ.get("REQUEST_METHOD"), environ.get("PATH_INFO") or "/"
        if ENDPOINTS.get(path) != method:
            raise OAuthError("not_found", "no such endpoint", "404 Not Found")
        if path.startswith("/.well-known/"):
            return _json(start_response, "200 OK", self.metadata(issuer))
        if path == "/register":
            return _json(start_response, "201 Created", self.register(_json_body(environ)))
        if path == "/authorize":
            location = self.authorize(_query(environ), issuer)
            headers = [
                ("Location", location),
                ("Content-Length", "0"),
                ("Cache-Control", "no-store"),
            ]
            start_response("302 Found", headers)
            return [b""]
        form, authorization = _form_body(environ), environ.get("HTTP_AUTHORIZATION")
        if path == "/token":
            answer = self.token(form, authorization)
        else:
            answer = self.introspect(form, authorization, issuer)
        return _json(start_response, "200 OK", answer, no_store=True)

    def _check_host_and_origin(self, environ: dict) -> None:
        """The MCP endpoint's DNS-rebinding guard, on every route (2025-11-25 basic/transports
        §Security Warning: servers "MUST validate the Origin header on all incoming connections to
        prevent DNS rebinding attacks"): a page on ``evil.example`` that resolves to 127.0.0.1 must
        neither use this server nor make it name ``evil.example`` as its issuer."""
        if not host_allowed(environ.get("HTTP_HOST", ""), self.allowed_hosts):
            raise OAuthError("invalid_request", "this Host is not allowed", "403 Forbidden")
        origin = environ.get("HTTP_ORIGIN")
        if origin and not origin_allowed(origin, self.allowed_origins):
            raise OAuthError("invalid_request", "this Origin is not allowed", "403 Forbidden")

    # -- the endpoints --------------------------------------------------------------------------

    def metadata(self, issuer: str) -> dict:
        """RFC 8414 authorization server metadata."""
        return {
            "issuer": issuer,
            "authorization_endpoint": f"{issuer}/authorize",
            "token_endpoint": f"{issuer}/token",
            "registration_endpoint": f"{issuer}/register",
            "introspection_endpoint": f"{issuer}/introspect",
            "scopes_supported": list(self.scopes),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
            "introspection_endpoint_auth_methods_supported": [
                "client_secret_basic",
                "client_secret_post",
            ],
            "authorization_response_iss_parameter_supported": True,
            "client_id_metadata_document_supported": True,
        }

    def register(self, body: dict) -> dict:
        """RFC 7591 §3: register a client from its metadata; 400 ``invalid_redirect_uri`` / ``invalid_client_metadata``."""
        uris = body.get("redirect_uris")
        if (
            not isinstance(uris, list)
            or not 1 <= len(uris) <= 20
            or not all(isinstance(u, str) for u in uris)
        ):
            raise OAuthError("invalid_redirect_uri", "redirect_uris must be a list of 1 to 20 URIs")
        for uri in uris:
            _check_redirect_uri(uri)
        # RFC 7591 §2: client_secret_basic is the default
        method = body.get("token_endpoint_auth_method", "client_secret_basic")
        if method not in AUTH_METHODS:
            raise OAuthError(
                "invalid_client_metadata",
                f"token_endpoint_auth_method must be one of {', '.join(AUTH_METHODS)}",
            )
        grants = body.get("grant_types", ["authorization_code"])
        if not isinstance(grants, list) or not all(
            g in ("authorization_code", "refresh_token") for g in grants
        ):
            raise OAuthError(
                "invalid_client_metadata",
                "grant_types may list authorization_code and refresh_token only",
            )
        name = body.get("client_name")
        if name is not None and (not isinstance(name, str) or len(name) > 200):
            raise OAuthError(
                "invalid_client_metadata", "client_name must be a string of at most 200 characters"
            )
        client = RegisteredClient(
            client_id=secrets.token_urlsafe(16),
            redirect_uris=tuple(uris),
            token_endpoint_auth_method=method,
            client_secret=None if method == "none" else secrets.token_urlsafe(32),
            client_name=name,
            grant_types=tuple(grants),
        )
        self.clients.put(client.client_id, client)
        answer = {
            "client_id": client.client_id,
            "client_id_issued_at": client.issued_at,
            "redirect_uris": list(uris),
            "token_endpoint_auth_method": method,
            "grant_types": list(grants),
            "response_types": ["code"],
        }
        if name is not None:
            answer["client_name"] = name
        if client.client_secret is not None:
            answer.update(client_secret=client.client_secret, client_secret_expires_at=0)
        return answer

    def authorize(self, query: dict, issuer: str) -> str:
        """The redirect for an authorization request (approved at once); see the module docstring."""
        client = self.client(query.get("client_id", ""))
        if client is None:
            raise OAuthError("invalid_client", "unknown client_id")
        redirect_uri = query.get("redirect_uri")
        if redirect_uri is None and len(client.redirect_uris) == 1:
            redirect_uri = client.redirect_uris[0]
        if redirect_uri is None or not any(
            redirect_uri_matches(redirect_uri, known) for known in client.redirect_uris
        ):
            # Never redirect to a URI the client did not register: that would be an open redirect.
            raise OAuthError("invalid_request", "redirect_uri is not one this client registered")
        state = query.get("state")

        def refuse(error: str, description: str) -> str:
            return _with_query(
                redirect_uri, error=error, error_description=description, state=state, iss=issuer
            )

        if query.get("response_type") != "code":
            return refuse("unsupported_response_type", "only response_type=code is supported")
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return refuse("invalid_request", "PKCE with code_challenge_method=S256 is required")
        scope = query.get("scope", "")
        unknown = set(scope.split()) - set(self.scopes)
        if unknown:
            return refuse("invalid_scope", f"unknown scope(s): {' '.join(sorted(unknown))}")
        resource = query.get("resource")
        if resource is not None and not _absolute(resource):
            return refuse(
                "invalid_target", "resource must be an absolute URI without a fragment (RFC 8707)"
            )
        code = secrets.token_urlsafe(32)
        self.codes.put(
            code,
            Grant(
                client.client_id,
                scope,
                resource,
                self.clock() + self.code_lifetime,
                redirect_uri=query.get("redirect_uri"),  # None: not in the request
                challenge=query["code_challenge"],
            ),
            ttl=self.code_lifetime,
        )
        return _with_query(redirect_uri, code=code, state=state, iss=issuer)

    def token(self, form: dict, authorization: str | None) -> dict:
        """The token endpoint: ``authorization_code`` (with PKCE) and ``refresh_token`` (rotated)."""
        client = self._authenticate(form, authorization)
        grant_type = form.get("grant_type")
        if grant_type == "authorization_code":
            # Single use (OAuth 2.1 §4.1.3), taken in one atomic step: gone whatever happens next.
            grant = self.codes.take(form.get("code", ""))
            if grant is None or grant.client_id != client.client_id or grant.expires < self.clock():
                raise OAuthError(
                    "invalid_grant", "the code is unknown, used, expired or not this client's"
                )
            # OAuth 2.1 §4.1.3: redirect_uri is "REQUIRED, if the redirect_uri parameter was
            # included in the authorization request", and the values "MUST be identical".  (Left
            # out there, it is the client's one registered URI, and may be sent or not.)
            sent = form.get("redirect_uri")
            if sent != grant.redirect_uri and (
                grant.redirect_uri is not None or sent not in client.redirect_uris
            ):
                raise OAuthError("invalid_grant", "redirect_uri is not the authorization request's")
            # a code always has a challenge
            if not pkce.verifies(form.get("code_verifier"), grant.challenge or ""):
                raise OAuthError(
                    "invalid_grant", "the code_verifier does not match the code_challenge"
                )
        elif grant_type == "refresh_token":
            # rotation: each is used once
            grant = self.refresh_tokens.take(form.get("refresh_token", ""))
            if grant is None or grant.client_id != client.client_id:
                raise OAuthError(
                    "invalid_grant", "the refresh token is unknown, used or not this client's"
                )
            wanted = form.get("scope")
            if wanted is not None:
                if not set(wanted.split()) <= set(grant.scope.split()):
                    raise OAuthError(
                        "invalid_scope", "a refresh may narrow the scope, never widen it"
                    )
                grant = dataclasses.replace(grant, scope=wanted)
        else:
            raise OAuthError(
                "unsupported_grant_type", "grant_type must be authorization_code or refresh_token"
            )
        resource = form.get("resource")
        if resource is not None and grant.resource is not None and resource != grant.resource:
            raise OAuthError(
                "invalid_target", "resource differs from the one authorized (RFC 8707)"
            )
        return self._issue(client, grant.scope, grant.resource or resource, grant.subject)

    def introspect(self, form: dict, authorization: str | None, issuer: str) -> dict:
        """RFC 7662: what a token stands for, to a client that authenticates with a secret."""
        caller = self._authenticate(form, authorization)
        if caller.client_secret is None:
            raise OAuthError(
                "invalid_client", "introspection needs a confidential client", "401 Unauthorized"
            )
        info = self.verify(form.get("token", ""))
        if info is None:
            return {"active": False}
        answer = {
            "active": True,
            "client_id": info.client_id,
            "scope": info.scope,
            "sub": info.subject,
            "exp": int(time.time() + info.expires - self.clock()),
            "iss": issuer,
            "token_type": "Bearer",
        }
        if info.resource:
            answer["aud"] = info.resource
        return answer

    def client(self, client_id: str) -> RegisteredClient | None:
        """The client ``client_id`` names: registered, or described by its metadata document (an https URL)."""
        client = self.demo_client if client_id == DEMO_CLIENT_ID else self.clients.get(client_id)
        if client is not None or not client_id.startswith(("https://", "http://")):
            return client
        cached = self.documents.get(client_id)
        if cached is not None:
            return cached
        if len(client_id) > MAX_CLIENT_ID_URL:
            raise OAuthError(
                "invalid_client", f"a client_id URL is at most {MAX_CLIENT_ID_URL} characters"
            )
        # A document on this machine (http://localhost/...) only for a caller on this machine: a
        # remote one must not make this server a probe of its own loopback services (SSRF;
        # draft-ietf-oauth-client-id-metadata-document §6).
        local = is_loopback(getattr(self._caller, "address", ""))
        client, ttl = fetch_client_metadata(client_id, loopback_documents=local)
        if ttl > 0:
            self.documents.put(client_id, client, ttl=ttl)
        return client

    def verify(self, token: str) -> Grant | None:
        """What an access token stands for, in this process (no HTTP); None if unknown or expired."""
        grant = self.access_tokens.get(token)
        if grant is None or grant.expires < self.clock():
            return None
        return grant

    def token_verifier(self) -> LocalVerifier:
        """A ``TokenVerifier`` for a protected resource in this same process (no introspection round trip)."""
        return LocalVerifier(self)

    # -- helpers --------------------------------------------------------------------------------

    def _issue(
        self, client: RegisteredClient, scope: str, resource: str | None, subject: str
    ) -> dict:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        grant = Grant(
            client.client_id, scope, resource, self.clock() + self.token_lifetime, subject
        )
        self.access_tokens.put(access, grant, ttl=self.token_lifetime)
        answer = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": int(self.token_lifetime),
        }
        if "refresh_token" in client.grant_types:
            # a refresh token never expires (it is rotated on every use)
            self.refresh_tokens.put(refresh, dataclasses.replace(grant, expires=math.inf))
            answer["refresh_token"] = refresh
        if scope:
            answer["scope"] = scope
        return answer

    def _authenticate(self, form: dict, authorization: str | None) -> RegisteredClient:
        """RFC 6749 §2.3: HTTP Basic, or client_id (+ client_secret) in the body, as the client registered."""
        authorization = authorization or ""
        basic = authorization[:6].lower() == "basic "
        secret: str | None
        if basic:
            try:
                # RFC 6749 §2.3.1: the id and secret are form-urlencoded (UTF-8), then Base64 (RFC 7617).
                decoded = base64.b64decode(
                    authorization[6:].strip(" \t").encode("ascii"), validate=True
                ).decode("utf-8")
                client_id, _, secret = decoded.partition(":")
                client_id, secret = (
                    unquote(client_id, errors="strict"),
                    unquote(secret, errors="strict"),
                )
            except (ValueError, UnicodeError):  # non-ASCII, not Base64, not UTF-8
                raise OAuthError(
                    "invalid_client",
                    "malformed Basic credentials",
                    "401 Unauthorized",
                    _BASIC_CHALLENGE,
                ) from None
            method = "client_secret_basic"
        else:
            client_id, secret = str(form.get("client_id", "")), form.get("client_secret")
            method = "client_secret_post" if secret is not None else "none"
        client = self.client(client_id)
        if (
            client is None
            or client.token_endpoint_auth_method != method
            or (
                method != "none"
                and (client.client_secret is None or not _same_secret(secret, client.client_secret))
            )
        ):
            raise OAuthError(
                "invalid_client",
                "client authentication failed",
                "401 Unauthorized",
                _BASIC_CHALLENGE if basic else [],
            )
        return client


@dataclasses.dataclass
class LocalVerifier:
    """The demo authorization server's tokens, verified in process, as ``mcp_ref.oauth.resource.AccessInfo``."""

    server: DemoAuthorizationServer

    def verify(self, token: str):
        from ..oauth.resource import AccessInfo

        try:
            grant = self.server.verify(token)
        except ConnectionError:
            # a shared table is unreachable: not valid, as a failed introspection
            return None
        if grant is None:
            return None
        return AccessInfo(
            client_id=grant.client_id,
            subject=grant.subject,
            scopes=tuple(grant.scope.split()),
            expires_at=time.time() + grant.expires - self.server.clock(),
            audience=(grant.resource,) if grant.resource else (),
        )


def protected_app(
    server,
    *,
    scopes_supported: Iterable[str] = DEFAULT_SCOPES,
    resource: str | None = None,
    **wsgi_options,
) -> Callable:
    """``server`` as a protected resource and this demo authorization server, on one origin (one WSGI app).

    The authorization server's endpoints (its metadata, ``/authorize``, ``/token``, ``/register``,
    ``/introspect``) go to a :class:`DemoAuthorizationServer`; everything else to
    ``server.wsgi_app(auth=...)``, whose protected resource metadata names the same origin as its
    authorization server.  What ``mcp-ref serve-demo --http HOST:PORT --auth`` serves.  With the
    server's shared state (``server.shared_state``: ``MCP_REF_STATE`` or ``Server(state=)``) the
    authorization server's tables are shared too, so any worker answers for any client and token.
    ``resource``: the URL clients reach, the audience tokens must name (None: the request's host
    name with the port this worker listens on; see ``ProtectedResource``).
    """
    from ..oauth.resource import ProtectedResource

    authorization = DemoAuthorizationServer(
        scopes=scopes_supported,
        allowed_hosts=wsgi_options.get("allowed_hosts"),
        allowed_origins=wsgi_options.get("allowed_origins"),
        state=server.shared_state,
    )

    def same_origin(environ: dict) -> list[str]:
        # The issuer is the origin of the request: the port may be 0 until the server is bound.
        # Only asked once the MCP app has found the request's Host allowed (its rebinding guard).
        return [
            f"{environ.get('wsgi.url_scheme', 'http')}://{environ.get('HTTP_HOST', 'localhost')}"
        ]

    # Every request needs the first scope (mcp:tools): a 401 names only it, and a tool that needs
    # more (the protected demo's whoami, mcp:admin) is reached by a step-up.
    protected = ProtectedResource(
        authorization.token_verifier(),
        same_origin,
        resource=resource,
        scopes_supported=scopes_supported,
        required_scopes=tuple(scopes_supported)[:1],
    )
    mcp = server.wsgi_app(auth=protected, **wsgi_options)

    def app(environ, start_response):
        if environ.get("PATH_INFO") in ENDPOINTS:
            return authorization(environ, start_response)
        return mcp(environ, start_response)

    return app


# -- client metadata documents ---------------------------------------------------------------------


def fetch_client_metadata(
    url: str, *, loopback_documents: bool = True
) -> tuple[RegisteredClient, float]:
    """Fetch and check the Client ID Metadata Document at ``url``: (the client it describes, seconds to keep it).

    Bounded and careful (draft-ietf-oauth-client-id-metadata-document §6, "Server-Side Request
    Forgery"): https only, except http on a loopback address; the host is resolved once and every
    address it resolves to must be globally routable (``ip.is_global``: no private, shared
    (100.64.0.0/10), link-local, loopback, reserved or documentation range, nor an IPv6 address
    that embeds one), unless the URL names a loopback host (``localhost``, ``127.0.0.1``,
    ``[::1]``), whose every address must then be loopback; the request goes to the address
    checked (the certificate is still checked against the name), so a second DNS answer cannot
    point it elsewhere; no redirects; at most ``MAX_DOCUMENT`` bytes within ``DOCUMENT_TIMEOUT``
    seconds.  ``loopback_documents`` False: a URL naming loopback is refused like any other non-global
    address (the caller of the authorization server is not on this machine).  The document must be a JSON object whose ``client_id`` is ``url`` exactly, with
    ``client_name`` and ``redirect_uris``.  Raises OAuthError (``invalid_client``) for anything
    else; the reason names no internal detail.
    """
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise OAuthError("invalid_client", "the client_id URL is malformed") from None
    host = parts.hostname or ""
    loopback = loopback_documents and is_loopback(host)
    if parts.path in ("", "/") or (
        parts.scheme != "https" and not (parts.scheme == "http" and loopback)
    ):
        raise OAuthError(
            "invalid_client", "a client_id URL must be https (http only on loopback) with a path"
        )
    if parts.username is not None or parts.password is not None:
        raise OAuthError("invalid_client", "a client_id URL carries no user name or password")
    port = port or (443 if parts.scheme == "https" else 80)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    deadline = time.monotonic() + DOCUMENT_TIMEOUT
    # each address checked; the first that connects
    for address in _checked_addresses(host, port, loopback):
        fetched = _get_document(parts.scheme, host, address, port, parts.netloc, target, deadline)
        if fetched is not None:
            data, cache_control = fetched
            break
    else:
        raise OAuthError("invalid_client", "the client metadata document could not be fetched")
    try:
        document = json.loads(data)
    except (ValueError, RecursionError):
        raise OAuthError("invalid_client", "the client metadata document is not JSON") from None
    if not isinstance(document, dict) or document.get("client_id") != url:
        raise OAuthError(
            "invalid_client", "the client metadata document's client_id is not its URL"
        )
    uris = document.get("redirect_uris")
    if not isinstance(document.get("client_name"), str) or not isinstance(uris, list) or not uris:
        raise OAuthError(
            "invalid_client", "the client metadata document needs client_name and redirect_uris"
        )
    for uri in uris:
        if not isinstance(uri, str):
            raise OAuthError("invalid_client", "redirect_uris must be strings")
        _check_redirect_uri(uri)
    method = document.get("token_endpoint_auth_method", "none")
    if method != "none":
        raise OAuthError(
            "invalid_client",
            "the demo accepts metadata-document clients with token_endpoint_auth_method none",
        )
    client = RegisteredClient(url, tuple(uris), "none", None, document["client_name"])
    # its max-age (no-store: 0), at most DOCUMENT_TTL
    return client, min(cache_lifetime(cache_control, DOCUMENT_TTL), DOCUMENT_TTL)


class _AsHost(HTTPAdapter):
    """requests' adapter for a URL that names an address already checked: TLS names ``host``
    (SNI) and checks the certificate against ``host``, not the address; no retries."""

    def __init__(self, host: str):
        self.host = host  # before HTTPAdapter.__init__, which makes the pool manager
        super().__init__(max_retries=0)

    def init_poolmanager(self, connections, maxsize, block=False, **pool_kwargs):
        """The pool manager, its HTTPS connections naming ``host``."""
        pool_kwargs.update(server_hostname=self.host, assert_hostname=self.host)
        super().init_poolmanager(connections, maxsize, block, **pool_kwargs)


def _get_document(
    scheme: str, host: str, address: str, port: int, netloc: str, target: str, deadline: float
) -> tuple[bytes, str] | None:
    """GET ``target`` from ``address`` (already checked), as ``host``: (the body, its Cache-Control);
    None when the address does not take the connection (the caller tries the next).

    Through ``requests``, to the address itself (the URL names it; ``Host`` names ``host``); TLS
    names ``host`` (SNI) and checks the certificate against it (:class:`_AsHost`).  Bounded: no
    proxy, no retries, no redirects, all before ``deadline``, ``MAX_DOCUMENT`` bytes.
    """
    from urllib3.exceptions import HTTPError as BrokenBody  # what requests' raw stream raises

    left = deadline - time.monotonic()
    if left <= 0:
        raise OAuthError("invalid_client", "the client metadata document took too long")
    literal = f"[{address}]" if ":" in address else address
    with requests.Session() as session:
        session.trust_env = False  # no proxy, no .netrc: the checked address itself
        session.mount("http://", HTTPAdapter(max_retries=0))
        session.mount("https://", _AsHost(host))
        session.hooks["response"].append(close_redirect_unread)  # a redirect's body never read
        try:
            answer = session.get(
                f"{scheme}://{literal}:{port}{target}",
                headers={
                    "Host": netloc,
                    "Accept": "application/json",
                    "Accept-Encoding": "identity",
                },
                timeout=left,  # to connect, and for each read
                allow_redirects=False,
                stream=True,
            )
        except requests.exceptions.SSLError:
            raise OAuthError(
                "invalid_client", "the client metadata document could not be fetched"
            ) from None
        except requests.ConnectionError:  # refused, unreachable, or no connection in time
            return None
        except requests.RequestException:
            raise OAuthError(
                "invalid_client", "the client metadata document could not be fetched"
            ) from None
        with answer:
            if answer.status_code != 200:
                raise OAuthError(
                    "invalid_client",
                    f"the client metadata document answered HTTP {answer.status_code}",
                )
            data = b""
            try:  # the body as sent: a compressed one is not JSON
                for chunk in answer.raw.stream(4096, decode_content=False):
                    data += chunk
                    if len(data) > MAX_DOCUMENT:
                        raise OAuthError(
                            "invalid_client",
                            f"the client metadata document is over {MAX_DOCUMENT} bytes",
                        )
                    if time.monotonic() > deadline:
                        raise OAuthError(
                            "invalid_client", "the client metadata document took too long"
                        )
            except (OSError, BrokenBody):
                raise OAuthError(
                    "invalid_client", "the client metadata document could not be fetched"
                ) from None
            return data, answer.headers.get("Cache-Control", "")


def _checked_addresses(host: str, port: int, loopback: bool) -> list[str]:
    """The addresses to fetch a document from: ``host`` resolved once, every address checked.

    Each address must be globally routable (``is_global``), the IPv4 address an IPv6 one embeds
    (mapped, 6to4, NAT64, Teredo) too; for a host that names loopback, each must be loopback.
    One address that is not refuses the host: a name with one public and one private address
    could otherwise be pointed at either.
    """
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError):
        raise OAuthError("invalid_client", "the client_id URL's host cannot be resolved") from None
    # each address without its IPv6 scope (``fe80::1%eth0``)
    addresses = [
        str(info[4][0]).split("%")[0]
        for info in infos
        if info[0] in (socket.AF_INET, socket.AF_INET6)
    ]
    if not addresses:
        raise OAuthError("invalid_client", "the client_id URL's host cannot be resolved")
    for address in addresses:
        ip = ipaddress.ip_address(address)
        if not (ip.is_loopback if loopback else _routable(ip)):
            raise OAuthError("invalid_client", "the client_id URL points into a private network")
    return list(dict.fromkeys(addresses))


def _routable(ip) -> bool:
    """``ip.is_global``, and so is any IPv4 address it embeds (``::ffff:10.0.0.1``, ``2002:a00:1::``,
    ``64:ff9b::10.0.0.1``, Teredo's): those reach the address they embed."""
    if not ip.is_global:
        return False
    if ip.version == 6:
        embedded = [ip.ipv4_mapped, ip.sixtofour, ip.teredo[1] if ip.teredo else None]
        if ip in ipaddress.ip_network("64:ff9b::/96"):
            embedded.append(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
        return all(inner is None or inner.is_global for inner in embedded)
    return True


# -- small pieces ---------------------------------------------------------------------------------


def _same_secret(given: object, expected: str) -> bool:
    """Whether a presented client secret is the registered one, in constant time (as UTF-8 bytes:
    ``compare_digest`` refuses non-ASCII text, and a secret may be any string)."""
    if not isinstance(given, str):
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8"))


def _json(
    start_response, status: str, body: dict, *, headers: Iterable = (), no_store: bool = False
) -> list:
    data = json.dumps(body).encode()
    out = [("Content-Type", "application/json"), ("Content-Length", str(len(data)))]
    if no_store:  # RFC 6749 §5.1: token responses are never cached
        out += [("Cache-Control", "no-store"), ("Pragma", "no-cache")]
    start_response(status, out + list(headers))
    return [data]


def _read_body(environ: dict) -> bytes:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise OAuthError("invalid_request", "bad Content-Length") from None
    if length > MAX_BODY:
        raise OAuthError(
            "invalid_request", f"the body is over {MAX_BODY} bytes", "413 Payload Too Large"
        )
    return environ["wsgi.input"].read(length) if length > 0 else b""


def _json_body(environ: dict) -> dict:
    try:
        body = json.loads(_read_body(environ) or b"null")
    except (ValueError, RecursionError):  # not JSON, not UTF-8, too deep, a number too long
        raise OAuthError("invalid_client_metadata", "the body is not JSON") from None
    if not isinstance(body, dict):
        raise OAuthError("invalid_client_metadata", "the body must be a JSON object")
    return body


def _form_body(environ: dict) -> dict:
    if not (environ.get("CONTENT_TYPE") or "").startswith("application/x-www-form-urlencoded"):
        raise OAuthError("invalid_request", "the body must be application/x-www-form-urlencoded")
    return _single_values(
        parse_qs(_read_body(environ).decode("utf-8", "replace"), keep_blank_values=True)
    )


def _query(environ: dict) -> dict:
    return _single_values(parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True))


def _single_values(parsed: dict) -> dict:
    """RFC 6749 §3.1: "Request and response parameters MUST NOT be included more than once"."""
    repeated = [name for name, values in parsed.items() if len(values) > 1]
    if repeated:
        raise OAuthError("invalid_request", f"parameter repeated: {repeated[0]}")
    return {name: values[0] for name, values in parsed.items()}


def _absolute(uri: str) -> bool:
    try:
        parts = urlsplit(uri)
    except ValueError:  # e.g. an unclosed "[" in the host
        return False
    host = parts.netloc.rpartition("@")[2]
    if host.startswith("["):  # RFC 3986 §3.2.2 IP-literal: Python 3.10's urlsplit does not check it
        try:
            ipaddress.IPv6Address(host[1 : host.index("]")])
        except ValueError:
            return False
    return bool(parts.scheme and parts.netloc) and not parts.fragment


def _check_redirect_uri(uri: str) -> None:
    """OAuth 2.1 §2.3.1 and RFC 8252: https, or http on a loopback host; absolute, no fragment."""
    if not _absolute(uri):
        raise OAuthError(
            "invalid_redirect_uri", "a redirect URI must be absolute and carry no fragment"
        )
    parts = urlsplit(uri)
    if parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in LOCAL_HOSTS):
        return
    raise OAuthError(
        "invalid_redirect_uri", "a redirect URI must use https, or http on a loopback address"
    )


def _with_query(uri: str, **params) -> str:
    extra = urlencode({k: v for k, v in params.items() if v is not None})
    return f"{uri}{'&' if urlsplit(uri).query else '?'}{extra}"
