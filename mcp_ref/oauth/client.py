"""The OAuth 2.1 client for MCP over HTTP: :class:`OAuth`, a ``requests`` auth hook.

``Client.http(url, auth=OAuth())`` (or ``session.auth = OAuth()`` on any ``requests.Session``)
sends the access token on every request to the server, and when the server answers 401 (or
403 ``insufficient_scope``) it gets a token and sends the request again, once:

1. discovery (:mod:`mcp_ref.oauth.discovery`): the challenge, the protected resource metadata,
   the authorization server metadata (or the 2025-03-26 defaults);
2. a client id for that authorization server: pre-registered, a Client ID Metadata Document
   URL, or Dynamic Client Registration (RFC 7591), in the spec's order;
3. a grant: the authorization code with PKCE (the user, through an
   :class:`~mcp_ref.oauth.browser.AuthorizationHandler`), client credentials, or a JWT
   assertion (enterprise-managed authorization, workload identity);
4. tokens kept in a :class:`~mcp_ref.oauth.store.TokenStore`, refreshed before they expire.

Spec references are 2025-11-25 basic/authorization unless said otherwise.  Tokens, codes,
verifiers and secrets never reach a log line or an exception message.  A token goes only to the
origin of the MCP server it was obtained for (§Token Handling, RFC 8707): a redirect from that
server to another origin raises :class:`~mcp_ref.http.origins.CrossOriginRefused`, and a
response from another origin is never answered with a token.  Every URL taken from metadata is
checked before use (:func:`~mcp_ref.oauth.discovery.check_url`).
"""

from __future__ import annotations

import base64
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, cast
from urllib.parse import quote, urlencode, urljoin, urlsplit

import requests
from requests.auth import AuthBase

from ..http.bounded_reads import discard_body, exchange_within, sending_own_notice
from ..http.not_reached import shown
from ..http.origins import (
    LOCAL_HOSTS,
    CrossOriginRefused,
    close_redirect_unread,
    origin_text,
    redirects_unread,
    same_origin,
)
from . import pkce
from .browser import (
    AuthorizationHandler,
    CallbackHandler,
    LoopbackBrowser,
    authorization_response,
    redirect_uri_matches,
)
from .discovery import (
    MAX_TOKEN_RESPONSE_BYTES,
    Challenge,
    ServerMetadata,
    bearer_challenge,
    bounded_json,
    check_url,
    discover_authorization_server,
    discover_resource,
    legacy_authorization_server,
)
from .errors import (
    AuthorizationDenied,
    AuthorizationError,
    CallbackError,
    InsufficientScope,
    MetadataError,
    RegistrationError,
    TokenError,
    Unauthorized,
)
from .resource import canonical
from .store import (
    MemoryStore,
    TokenStore,
    client_key,
    delete_if_unchanged,
    same_record,
    tokens_key,
)

log = logging.getLogger(__name__)

#: Tokens are refreshed this many seconds before they expire.
REFRESH_MARGIN = 30.0
#: The longest ``expires_in`` taken (ten years, in seconds); a longer one, or one that is no
#: finite number, is taken as absent (:func:`_lifetime`).
MAX_EXPIRES_IN = 10 * 365 * 24 * 3600

GRANT_AUTHORIZATION_CODE = "authorization_code"
GRANT_CLIENT_CREDENTIALS = "client_credentials"
GRANT_JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_RETRIED = "_mcp_ref_oauth_retry"


class OAuth(AuthBase):
    """OAuth 2.1 authorization for one MCP server (see the module docstring).

    Client identity (2025-11-25 §Client Registration Approaches, in its priority order):

    - ``client_id`` (and ``client_secret``): pre-registered credentials; ``issuer`` binds them to
      one authorization server (without it, the first one they are used with), and another one is
      then refused (2026-07-28 client-registration §Authorization Server Binding);
    - ``client_metadata_url``: an https URL serving this client's Client ID Metadata Document,
      used when the authorization server advertises ``client_id_metadata_document_supported``;
    - else Dynamic Client Registration as ``client_name``, with ``application_type``.

    The grant: ``"authorization_code"`` (the default; the user approves through ``handler``,
    a :class:`~mcp_ref.oauth.browser.LoopbackBrowser` unless ``authorize=`` and ``redirect_uri=``
    give a function of your own), ``"client_credentials"`` (``client_secret``, or
    ``private_key`` for ``private_key_jwt``), or ``assertion=``: a JWT, or a function of the
    authorization server's metadata and the resource returning one, sent with the jwt-bearer grant
    (RFC 7523): a workload identity token, or an ID-JAG (:class:`~mcp_ref.oauth.assertions.IdJagExchange`).

    ``scopes``: the scopes to ask for besides those a 401's challenge names (2025-11-25
    §Scope Selection Strategy: the challenge's ``scope`` first), and instead of the resource's
    ``scopes_supported`` when the challenge names none.  ``store`` keeps registrations and tokens
    (:class:`~mcp_ref.oauth.store.MemoryStore` by default).  ``dpop=True`` binds tokens to a key
    (RFC 9449; needs the ``auth`` extra).  ``timeout`` bounds each request to the authorization
    server and for metadata in all (connecting, the answer's status line, headers and body,
    however slowly a peer trickles them), ``login_timeout`` the wait for the user.  A session of
    your own given as ``http`` keeps that bound over the headers only with mcp_ref's adapter
    mounted (:func:`~mcp_ref.http.framing.framing_adapter`); else each read and the body in all.
    """

    def __init__(
        self,
        client_id: str | None = None,
        client_secret: str | None = None,
        *,
        issuer: str | None = None,
        client_metadata_url: str | None = None,
        client_name: str = "mcp-ref",
        application_type: str | None = None,
        scopes: Iterable[str] | None = None,
        grant: str = GRANT_AUTHORIZATION_CODE,
        token_endpoint_auth_method: str | None = None,
        private_key: Any = None,
        signing_algorithm: str = "RS256",
        assertion: str | Callable[[ServerMetadata, str], str] | None = None,
        handler: AuthorizationHandler | None = None,
        authorize: Callable[[str], str] | None = None,
        redirect_uri: str | None = None,
        store: TokenStore | None = None,
        dpop: bool = False,
        max_step_ups: int = 2,
        timeout: float = 30.0,
        login_timeout: float = 300.0,
        http=None,
    ):
        if authorize is not None and handler is not None:
            raise ValueError("give handler= or authorize= (with redirect_uri=), not both")
        if authorize is not None:
            handler = CallbackHandler(redirect_uri or "http://127.0.0.1/callback", authorize)
        if grant not in (GRANT_AUTHORIZATION_CODE, GRANT_CLIENT_CREDENTIALS, GRANT_JWT_BEARER):
            raise ValueError(f"unknown grant {grant!r}")
        if assertion is not None:
            grant = GRANT_JWT_BEARER
        if grant == GRANT_CLIENT_CREDENTIALS and not client_id:
            raise ValueError("the client_credentials grant needs a pre-registered client_id")
        if grant == GRANT_JWT_BEARER and assertion is None:
            raise ValueError("the jwt-bearer grant needs an assertion=")
        self.client_id = client_id
        self.client_secret = client_secret
        self.issuer = issuer
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.application_type = application_type
        self.scopes = list(scopes) if scopes is not None else None
        self.grant = grant
        self.token_endpoint_auth_method = token_endpoint_auth_method
        self.private_key = private_key
        self.signing_algorithm = signing_algorithm
        self.assertion = assertion
        self.handler = handler
        self.store: TokenStore = store if store is not None else MemoryStore()
        self.max_step_ups = max_step_ups
        self.timeout = timeout
        self.login_timeout = login_timeout
        self.dpop = None
        if dpop:
            from .dpop import DPoPKey

            self.dpop = DPoPKey()
        self._http = http
        self._lock = threading.RLock()
        # the MCP endpoint this object authorizes for (the first one it sees; "" until then)
        self._server_url = ""
        self._tokens: dict | None = None
        self._loaded = False

    # -- the requests hook --------------------------------------------------------------------

    def __call__(self, request):
        if not self._for_this_server(request.url):
            return request  # never send a token to anyone else (§Token Handling)
        if sending_own_notice():
            # A cancellation, or the session's DELETE at close: sent with the tokens at hand, never
            # waiting for the lock, which a login on another thread (a step-up, the user in the
            # browser) holds up to login_timeout; a close ends within its bounds all the same.
            tokens = self._tokens
        else:
            tokens = self._usable_tokens()
        if tokens is not None:
            self._apply(request, tokens)
        request.register_hook("response", self._on_response)
        return request

    def _on_response(self, response, **kwargs):
        # requests copies this hook onto a redirected request: a response from another origin is
        # never authorized (no token goes there), and a redirect to another origin is refused.
        if not self._for_this_server(response.request.url):
            return response
        self._refuse_redirect_elsewhere(response)
        if response.status_code not in (401, 403) or getattr(response.request, _RETRIED, False):
            return response
        if sending_own_notice():
            # a cancellation, or the session's DELETE at close: a refusal there ends it; never a
            # login (the user waiting in a browser) to cancel a request or end a session
            return response
        challenge = bearer_challenge(response.headers.get("WWW-Authenticate"))
        if response.status_code == 403 and challenge.error != "insufficient_scope":
            return response  # forbidden for another reason: not ours to fix
        log.info(
            "%s answered %s (WWW-Authenticate: %s): authorizing",
            origin_text(response.url),
            response.status_code,
            response.headers.get("WWW-Authenticate", "none"),
        )
        if response.status_code == 403 and self.max_step_ups < 1:
            _discard(response)
            raise InsufficientScope(
                f"{origin_text(response.url)} requires scope {challenge.params.get('scope', '')!r}; "
                "step-ups are off (max_step_ups=0)"
            )
        sent = response.request.headers.get("Authorization")
        step_ups = nonce_retries = 0
        while True:
            with self._lock:
                tokens = self._tokens_after(response, challenge, sent)
            _discard(response)
            retry = response.request.copy()
            self._apply(retry, tokens)
            setattr(retry, _RETRIED, True)
            previous, response = response, response.connection.send(retry, **kwargs)
            response.history.append(previous)
            response.request = retry
            sent = retry.headers.get("Authorization")
            challenge = bearer_challenge(response.headers.get("WWW-Authenticate"))
            if response.status_code == 401:
                if (
                    self.dpop is not None
                    and challenge.error == "use_dpop_nonce"
                    and nonce_retries < 1
                ):
                    nonce_retries += 1  # RFC 9449 §9: once more, with the resource server's nonce
                    continue
                _discard(response)
                raise Unauthorized(
                    f"{origin_text(retry.url)} refused the request with a newly obtained token (HTTP 401)"
                )
            if response.status_code != 403 or challenge.error != "insufficient_scope":
                self._refuse_redirect_elsewhere(response)
                return response
            # §Step-Up Authorization Flow: "Retry the original request with the new authorization no
            # more than a few times and treat this as a permanent authorization failure".
            step_ups += 1
            if step_ups >= self.max_step_ups:
                _discard(response)
                raise InsufficientScope(
                    f"{origin_text(retry.url)} still requires scope {challenge.params.get('scope', '')!r} "
                    f"after {step_ups} authorization(s); giving up"
                )

    def _tokens_after(self, response, challenge: Challenge, sent: str | None) -> dict:
        """The tokens to retry with, after ``response`` (401 or 403) refused ``sent`` (under the lock)."""
        tokens = self._usable_tokens()
        if response.status_code == 401:
            nonce = response.headers.get("DPoP-Nonce")
            if (
                self.dpop is not None
                and challenge.error == "use_dpop_nonce"
                and nonce
                and tokens is not None
            ):
                self.dpop.nonces[_origin(response.request.url)] = nonce
                return tokens  # RFC 9449 §9: the same token, a proof with the server's nonce
            if tokens is not None and self._authorization_value(tokens) != sent:
                return tokens  # another thread got new tokens while this request was out
            if tokens is not None and tokens.get("refresh_token"):
                refreshed = self._refresh(tokens)
                if refreshed is not None:
                    return refreshed
            return self._obtain(challenge)
        granted = set((tokens or {}).get("scope", "").split())
        if (
            tokens is not None
            and self._authorization_value(tokens) != sent
            and granted >= set(challenge.scope or [])
        ):
            # another thread stepped up while this request was out: §Step-Up Authorization Flow,
            # "Retry the original request with the new authorization"
            return tokens
        wanted = list(dict.fromkeys((challenge.scope or []) + sorted(granted)))
        if not set(wanted) - granted:
            # The refused token is the current one and has every scope named: authorizing again
            # cannot help.
            raise InsufficientScope(
                f"{origin_text(response.request.url)} requires scope {' '.join(challenge.scope or [])!r}, "
                "which the token already has; giving up"
            )
        log.info(
            "the server needs more scope (%s): authorizing again", " ".join(challenge.scope or [])
        )
        return self._obtain(challenge, scopes=wanted)

    def _refuse_redirect_elsewhere(self, response) -> None:
        """Raise :class:`~mcp_ref.http.origins.CrossOriginRefused` for a redirect from the MCP
        server to another origin: requests would follow it with the request's headers (the DPoP
        proof, the caller's own) and body, and this hook rides along.  Same-origin redirects go on."""
        if not response.is_redirect:
            return
        target = urljoin(response.url, response.headers.get("Location", ""))
        if not same_origin(target, response.url):
            _discard(response)
            raise CrossOriginRefused("a redirect", response.url, target)

    # -- tokens --------------------------------------------------------------------------------

    def _for_this_server(self, url: str) -> bool:
        """True when ``url`` is on the origin of the MCP server this object authorizes for (the first
        URL it saw): 2025-11-25 §Token Handling, a token goes to the server it was issued for only.

        The lock only for the first URL: once set, ``_server_url`` never changes, and a notice
        (:meth:`__call__`) must not wait for a login that holds the lock."""
        if not self._server_url:
            with self._lock:
                if not self._server_url:
                    self._server_url = canonical(url.split("?", 1)[0])
        return same_origin(url, self._server_url)

    def _usable_tokens(self) -> dict | None:
        """The current tokens (refreshed first when about to expire), or None."""
        with self._lock:
            if not self._loaded:
                # _for_this_server(), which every request passes first, set _server_url
                self._tokens = self.store.load(tokens_key(self._server_url))
                self._loaded = True
            tokens = self._tokens
            if tokens is None:
                return None
            if _expiring(tokens):
                if tokens.get("refresh_token"):
                    return self._refresh(tokens)
                return None
            return tokens

    def _keep(self, tokens: dict | None) -> dict | None:
        self._tokens = tokens
        # _server_url set by _for_this_server(), as in _usable_tokens()
        key = tokens_key(self._server_url)
        if tokens is None:
            self.store.delete(key)
        else:
            self.store.save(key, tokens)
        return tokens

    def _authorization_value(self, tokens: dict) -> str:
        scheme = "DPoP" if tokens.get("token_type", "").lower() == "dpop" else "Bearer"
        return f"{scheme} {tokens['access_token']}"

    def _apply(self, request, tokens: dict) -> None:
        """2025-11-25 §Token Requirements: "MUST use the Authorization request header field ...
        authorization MUST be included in every HTTP request from client to server".

        Never to a URL off the origin of the resource the tokens were issued for (RFC 8707 §2: the
        ``resource`` of the token request), whatever asked for them."""
        resource = tokens.get("resource") or self._server_url
        if not same_origin(request.url, resource):
            raise CrossOriginRefused("to send a token", resource, request.url)
        request.headers["Authorization"] = self._authorization_value(tokens)
        if self.dpop is not None and tokens.get("token_type", "").lower() == "dpop":
            request.headers["DPoP"] = self.dpop.proof(
                request.method, request.url, access_token=tokens["access_token"]
            )

    def logout(self) -> None:
        """Forget the tokens for the server (the registration with its authorization server stays)."""
        with self._lock:
            if self._server_url:
                self._keep(None)

    # -- getting tokens ------------------------------------------------------------------------

    def _session(self):
        """The session talking to the authorization servers (the one given as ``http``, else one
        of its own, never this object as its auth: no token goes to an AS).  Its own reads answers
        as the MCP transport does (:func:`~mcp_ref.http.framing.framing_adapter`: interim 1xx
        answers skipped; each exchange within ``timeout`` in all, status line and headers too),
        and closes a redirect's answer with its body unread."""
        if self._http is None:
            from ..http.framing import framing_session

            http = framing_session()
            http.hooks["response"].append(close_redirect_unread)
            self._http = http
        return self._http

    def _obtain(self, challenge: Challenge, scopes: list[str] | None = None) -> dict:
        """Run discovery, registration and the grant; keep and return the new tokens."""
        server_url = self._server_url  # set by _for_this_server(), as in _keep()
        http = self._session()
        resource_meta = discover_resource(http, server_url, challenge, timeout=self.timeout)
        if resource_meta is None:
            log.info(
                "no protected resource metadata for %s: the 2025-03-26 discovery", shown(server_url)
            )
            server = legacy_authorization_server(http, server_url, timeout=self.timeout)
        else:
            # RFC 9728 §7.6: the client's choice; the first one
            issuer = resource_meta.authorization_servers[0]
            server = discover_authorization_server(http, issuer, timeout=self.timeout)
        # §Resource Parameter Implementation: the MCP server's URI exactly as its metadata names it
        # (the audience it will check), else its canonical URI.
        resource = resource_meta.resource if resource_meta else server_url
        if scopes is None:
            # §Scope Selection Strategy: clients SHOULD "use scope parameter from the initial
            # WWW-Authenticate header", else "all scopes defined in scopes_supported".  The user's
            # scopes= are added to the challenge's (what the server needs for this request), and
            # stand in for scopes_supported (the user knows what the client needs).
            if challenge.scope:
                scopes = list(dict.fromkeys(challenge.scope + (self.scopes or [])))
            else:
                supported = resource_meta.scopes_supported if resource_meta else None
                scopes = list(self.scopes or supported or [])
        if self.grant == GRANT_AUTHORIZATION_CODE:
            answer, client = self._authorization_code(server, resource, scopes)
        else:
            # (the client_credentials grant always has a client_id: __init__ checks it)
            client = (
                self._preregistered(server)
                if self.client_id
                else _client_record(None, None, "none")
            )
            grant = {"grant_type": self.grant}
            if self.grant == GRANT_JWT_BEARER:
                # a fixed JWT is a credential too (a callable mints one per server)
                if isinstance(self.assertion, str):
                    self._bind(server)
                # __init__ refuses None here
                source = cast("str | Callable[[ServerMetadata, str], str]", self.assertion)
                grant["assertion"] = source if isinstance(source, str) else source(server, resource)
            answer = self._token_request(
                server, client, {**grant, **_scope_param(scopes), "resource": resource}
            )
        tokens = self._tokens_from(answer, server, resource, scopes, client)
        self._keep(tokens)
        return tokens

    def _tokens_from(
        self, answer: dict, server: ServerMetadata, resource: str, scopes: list[str], client: dict
    ) -> dict:
        """The tokens to keep from a token ``answer``, with what refreshing them needs: the issuer,
        its token endpoint, and how ``client`` authenticated there (:meth:`_refresh` does the same)."""
        lifetime = _lifetime(answer.get("expires_in"))
        tokens = {
            "issuer": server.issuer,
            "resource": resource,
            "access_token": answer["access_token"],
            "token_type": answer.get("token_type", "Bearer"),
            "scope": answer["scope"] if isinstance(answer.get("scope"), str) else " ".join(scopes),
            "expires_at": time.time() + lifetime if lifetime is not None else None,
            "token_endpoint": server.token_endpoint,
            "client_auth_method": client.get("method") or "none",
        }
        if isinstance(answer.get("refresh_token"), str):
            tokens["refresh_token"] = answer["refresh_token"]
        return tokens

    def _replaced_in_store(self, tokens: dict) -> dict | None:
        """The store's tokens when another process sharing it (a :class:`FileStore`) replaced
        ``tokens`` there (it refreshed them, or logged in again), now this object's; else None."""
        stored = self.store.load(tokens_key(self._server_url))
        if stored is None or same_record(stored, tokens) or not stored.get("access_token"):
            return None
        self._tokens = stored
        return stored

    def _forget(self, tokens: dict) -> dict | None:
        """Forget ``tokens``, which cannot be refreshed: deleted from the store only if it still
        holds them, in one step (:func:`~mcp_ref.oauth.store.delete_if_unchanged`), so a login or
        a refresh another process saved meanwhile stays; those newer tokens, else None."""
        self._tokens = None
        if delete_if_unchanged(self.store, tokens_key(self._server_url), tokens):
            return None
        return self._replaced_in_store(tokens)

    def _refresh(self, tokens: dict) -> dict | None:
        """OAuth 2.1 §4.3: new tokens from the refresh token, from the issuer that minted it; None if refused.

        The store is read first, and again when the refresh is refused: another process sharing
        it may have refreshed first, and with rotation (OAuth 2.1 §4.3.1) the refresh token held
        here is then spent, while the store holds good ones.  The refused tokens are deleted only
        if the store still holds them, compared and deleted in one step (:meth:`_forget`): a
        fresh login saved by another process just before is never deleted."""
        newer = self._replaced_in_store(tokens)
        if newer is not None and (not _expiring(newer) or not newer.get("refresh_token")):
            return newer
        tokens = newer or tokens
        issuer = tokens.get("issuer")
        if not issuer or not tokens.get("token_endpoint"):
            return self._forget(tokens)
        server = ServerMetadata(issuer, None, tokens["token_endpoint"], raw={"issuer": issuer})
        if self.client_id and self.issuer in (None, issuer):
            # The pre-registered credentials (§Authorization Server Binding: they stay with this
            # issuer), authenticated as the token request that got the tokens was (OAuth 2.1 §4.3,
            # RFC 6749 §6: "If the client type is confidential or the client was issued client
            # credentials ..., the client MUST authenticate with the authorization server").
            method = tokens.get("client_auth_method")
            known = server if method else self._metadata_for_secret(server)
            client: dict | None = self._preregistered(known, method)
        else:
            client = self.store.load(client_key(issuer))
        if client is None:
            return self._forget(tokens)
        params = {
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "resource": tokens["resource"],
        }
        try:
            answer = self._token_request(server, client, params)
        except AuthorizationError as exc:
            # the store's newer tokens, else the refused ones go (only while the store holds them)
            newer = self._replaced_in_store(tokens) or self._forget(tokens)
            if newer is not None:
                log.info("refreshing the token failed (%s): using the store's newer one", exc)
                return newer
            log.info("refreshing the token failed (%s): authorizing again", exc)
            return None
        kept = self._tokens_from(
            answer, server, tokens["resource"], tokens.get("scope", "").split(), client
        )
        # OAuth 2.1 §4.3.3: the old refresh token stays valid
        kept.setdefault("refresh_token", tokens["refresh_token"])
        return self._keep(kept)

    # -- client identity -----------------------------------------------------------------------

    def _bind(self, server: ServerMetadata) -> None:
        """Raise :class:`RegistrationError` when ``server`` is another authorization server than the one
        the user's own credentials (pre-registered ones, a static ``assertion``) are bound to:
        ``issuer``, or without it the first one they were used with."""
        with self._lock:
            if self.issuer is None:
                # 2026-07-28 client-registration §Authorization Server Binding: clients "MUST associate
                # those credentials with the specific authorization server that issued them" and, when it
                # changes, "MUST NOT reuse client credentials from a different authorization server": a
                # server whose metadata later names another one never gets the secret there.
                self.issuer = server.issuer
        if self.issuer != server.issuer:
            raise RegistrationError(
                f"the client's credentials are for {shown(self.issuer)}, but the server now names "
                f"{server.issuer}; refusing to use them there"
            )

    def _preregistered(self, server: ServerMetadata, method: str | None = None) -> dict:
        """The pre-registered credentials, refused with another authorization server (:meth:`_bind`);
        authenticated as ``method`` says, else as ``token_endpoint_auth_method``, else as
        ``server``'s metadata allows."""
        self._bind(server)
        method = method or self.token_endpoint_auth_method
        if method is None:
            method = (
                "private_key_jwt"
                if self.private_key is not None
                else _secret_method(server)
                if self.client_secret
                else "none"
            )
        return _client_record(self.client_id, self.client_secret, method)

    def _metadata_for_secret(self, server: ServerMetadata) -> ServerMetadata:
        """Tokens kept by an earlier release say not how the client authenticated: a secret's
        method is chosen as a login chooses it, from ``server``'s issuer's real metadata (RFC 8414
        §2, ``token_endpoint_auth_methods_supported``); ``server`` itself when the method comes
        from elsewhere, or no metadata is found (its default then: client_secret_basic)."""
        if not self.client_secret or self.token_endpoint_auth_method or self.private_key:
            return server
        try:
            return discover_authorization_server(
                self._session(), server.issuer, timeout=self.timeout
            )
        except MetadataError as exc:
            log.info("no metadata to choose how to authenticate a refresh (%s)", exc)
            return server

    def _client_for(
        self, server: ServerMetadata, handler: AuthorizationHandler
    ) -> tuple[dict, str]:
        """The client identity to use with ``server`` and the redirect URI, in the spec's order."""
        if self.client_id:
            client = self._preregistered(server)
            return client, handler.redirect_uri(client.get("redirect_uris", ()))
        stored = self.store.load(client_key(server.issuer))
        if stored is not None and stored.get("client_id"):
            registered = stored.get("redirect_uris", ())
            redirect = handler.redirect_uri(registered)
            if any(redirect_uri_matches(redirect, uri) for uri in registered):
                return stored, redirect
        if (
            self.client_metadata_url
            and server.raw.get("client_id_metadata_document_supported") is True
        ):
            # kept like a registration, by issuer: _refresh authenticates as the client the
            # tokens were issued to (OAuth 2.1 §4.3), this one too
            client = _client_record(self.client_metadata_url, None, "none")
            self.store.save(client_key(server.issuer), client)
            return client, handler.redirect_uri()
        if server.registration_endpoint:
            redirect = handler.redirect_uri()
            client = self._register(server, redirect)
            self.store.save(client_key(server.issuer), client)
            return client, redirect
        raise RegistrationError(
            f"no client id for {server.issuer}: nothing pre-registered, no Client ID Metadata "
            "Document support, no registration endpoint"
        )

    def _register(self, server: ServerMetadata, redirect_uri: str) -> dict:
        """RFC 7591 Dynamic Client Registration, with ``application_type`` (2026-07-28
        client-registration §Application Type: clients "MUST specify an appropriate application_type")."""
        method = self.token_endpoint_auth_method or (
            "none"
            if server.supports("token_endpoint_auth_methods_supported", "none")
            else _secret_method(server)
        )
        loopback = urlsplit(redirect_uri).hostname in LOCAL_HOSTS
        body = {
            "client_name": self.client_name,
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": method,
            "application_type": self.application_type or ("native" if loopback else "web"),
        }
        if self.scopes:
            body["scope"] = " ".join(self.scopes)
        # _client_for() registers only with a registration_endpoint
        endpoint = cast(str, server.registration_endpoint)
        answer = self._post(
            endpoint,
            json_body=body,
            what="registration",
            error=RegistrationError,
        )
        if not isinstance(answer.get("client_id"), str) or not answer["client_id"]:
            raise RegistrationError(
                f"the registration endpoint {shown(endpoint)} answered no client_id"
            )
        uris = answer.get("redirect_uris")
        return _client_record(
            answer["client_id"],
            answer.get("client_secret") if isinstance(answer.get("client_secret"), str) else None,
            answer.get("token_endpoint_auth_method") or method,
            redirect_uris=uris if isinstance(uris, list) else [redirect_uri],
        )

    # -- the authorization code grant ----------------------------------------------------------

    def _authorization_code(
        self, server: ServerMetadata, resource: str, scopes: list[str]
    ) -> tuple[dict, dict]:
        """The token answer of the authorization code grant, and the client identity it used."""
        server.require_pkce()
        if not server.authorization_endpoint:
            raise MetadataError(
                f"the authorization server {server.issuer} has no authorization_endpoint"
            )
        # Checked again here, whoever built ``server``: this URL goes to the user's browser.
        check_url(
            server.authorization_endpoint,
            f"the authorization_endpoint of {server.issuer}",
            referrer=server.issuer,
        )
        handler = self.handler or LoopbackBrowser()
        try:
            client, redirect_uri = self._client_for(server, handler)
            verifier, state = pkce.new_verifier(), secrets.token_urlsafe(24)
            params = {
                "response_type": "code",
                "client_id": client["client_id"],
                "redirect_uri": redirect_uri,
                "code_challenge": pkce.challenge(verifier),
                "code_challenge_method": "S256",
                "state": state,
                **_scope_param(scopes),
                "resource": resource,
            }
            endpoint = server.authorization_endpoint
            url = endpoint + ("&" if "?" in endpoint else "?") + urlencode(params, quote_via=quote)
            # Tell the HTTP transport (if this runs on one of its threads) that the request waits
            # for the user.
            from ..http.client import hold_current_request

            hold_current_request(self.login_timeout + self.timeout)
            if isinstance(handler, LoopbackBrowser):
                # the listener discards a redirect for another request and waits on
                check = partial(
                    authorization_response,
                    state=state,
                    issuer=server.issuer,
                    iss_promised=_iss_promised(server),
                )
                callback = handler.authorize(url, self.login_timeout, check=check)
            else:
                callback = handler.authorize(url, self.login_timeout)
        finally:
            handler.close()  # the listener stops with the flow (redirect_uri() starts it again next time)
        code = _check_callback(callback, state, server)
        answer = self._token_request(
            server,
            client,
            {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": redirect_uri,
                "code_verifier": verifier,
                "resource": resource,
            },
        )
        return answer, client

    # -- the token endpoint --------------------------------------------------------------------

    def _token_request(self, server: ServerMetadata, client: dict, params: dict) -> dict:
        """POST to the token endpoint, authenticated as ``client["method"]`` says; the token answer."""
        params = {k: v for k, v in params.items() if v is not None}
        headers = {}
        method = client.get("method") or "none"
        if client.get("client_id") and method in ("none", "client_secret_post", "private_key_jwt"):
            params["client_id"] = client["client_id"]
        if method == "client_secret_basic":
            # RFC 6749 §2.3.1: the id and the secret are form-encoded, then Basic.
            pair = f"{quote(client['client_id'], safe='')}:{quote(client.get('client_secret') or '', safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        elif method == "client_secret_post":
            params["client_secret"] = client.get("client_secret") or ""
        elif method == "private_key_jwt":
            from .assertions import client_assertion

            params["client_assertion_type"] = (
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
            )
            params["client_assertion"] = client_assertion(
                self.private_key, client["client_id"], server, algorithm=self.signing_algorithm
            )
        answer = self._post(
            server.token_endpoint,
            form=params,
            headers=headers,
            what="token",
            error=TokenError,
        )
        if not isinstance(answer.get("access_token"), str) or not answer["access_token"]:
            raise TokenError(
                f"the token endpoint {shown(server.token_endpoint)} answered no access_token"
            )
        if not _SENDABLE_TOKEN.fullmatch(answer["access_token"]):
            # a token goes in a header field: a space, a line break (a header of its own), a
            # control or non-ASCII character cannot be sent there as the token
            raise TokenError(
                f"the token endpoint {shown(server.token_endpoint)} answered an access_token that cannot "
                "be sent in a header (only visible ASCII characters can); refused, not shown"
            )
        token_type = answer.get("token_type")
        if not isinstance(token_type, str) or token_type.lower() not in ("bearer", "dpop"):
            raise TokenError(
                f"the token endpoint {shown(server.token_endpoint)} answered token_type {token_type!r}, "
                "not Bearer or DPoP"
            )
        return answer

    def _post(
        self,
        url: str,
        *,
        what: str,
        error: type,
        form: dict | None = None,
        json_body: dict | None = None,
        headers: dict | None = None,
    ) -> dict:
        """POST to an authorization server endpoint: the JSON object it answered, or raise ``error``."""
        check_url(url, f"the {what} endpoint")  # a stored token_endpoint too (refresh)
        headers = {"Accept": "application/json", **(headers or {})}
        for attempt in (1, 2):
            if self.dpop is not None and what == "token":
                headers["DPoP"] = self.dpop.proof("POST", url)
            try:
                http = self._session()
                # the whole exchange within timeout, status line and headers too (exchange_within)
                with exchange_within(self.timeout):
                    response = http.post(
                        url,
                        data=form,
                        json=json_body,
                        headers=headers,
                        timeout=self.timeout,
                        allow_redirects=False,
                        stream=True,
                        hooks=redirects_unread(
                            http
                        ),  # a redirect's body unread (a caller's session)
                    )
                    # the answer within the bounds of a token answer
                    answer = bounded_json(response, MAX_TOKEN_RESPONSE_BYTES, self.timeout)
            except requests.RequestException as exc:
                raise error(
                    f"cannot reach the {what} endpoint {shown(url)}: {type(exc).__name__}"
                ) from None
            if answer is None:
                kind = response.headers.get("Content-Type", "no Content-Type").split(";")[0]
                # never followed: the form holds the code, the verifier, the secret
                if response.is_redirect:
                    kind += " (a redirect, not followed)"
                raise error(
                    f"the {what} endpoint {shown(url)} answered HTTP {response.status_code} with {kind}, not a JSON object",
                    status=response.status_code,
                )
            nonce = response.headers.get("DPoP-Nonce")
            if self.dpop is not None and nonce:
                self.dpop.nonces[_origin(url)] = nonce
            if response.ok:
                return answer
            raw_code = answer.get("error")
            code = raw_code if isinstance(raw_code, str) else ""
            if code == "use_dpop_nonce" and nonce and attempt == 1 and self.dpop is not None:
                continue  # RFC 9449 §8: the authorization server wants its nonce in the proof
            description = answer.get("error_description")
            detail = f" ({description})" if isinstance(description, str) and description else ""
            message = f"the {what} endpoint {shown(url)} answered HTTP {response.status_code}: {code or 'no error code'}{detail}"
            raise error(message, code, response.status_code)
        raise error(
            f"the {what} endpoint {shown(url)} kept asking for a new DPoP nonce"
        )  # pragma: no cover


def _check_callback(callback: str, state: str, server: ServerMetadata) -> str:
    """The ``code`` of the authorization response ``callback``, once it is the response to this
    request (:func:`~mcp_ref.oauth.browser.authorization_response`: ``state``, RFC 9207 ``iss``)."""
    params = authorization_response(callback, state, server.issuer, _iss_promised(server))
    if "error" in params:
        description = params.get("error_description")
        raise AuthorizationDenied(
            f"the authorization server refused: {params['error']}"
            + (f" ({description})" if description else ""),
            params["error"],
            description,
        )
    if not params.get("code"):
        raise CallbackError("the authorization response has no code")
    return params["code"]


def _iss_promised(server: ServerMetadata) -> bool:
    """Whether ``server`` advertises RFC 9207's ``iss`` in its authorization responses."""
    return server.raw.get("authorization_response_iss_parameter_supported") is True


def _lifetime(expires_in: object) -> float | None:
    """The seconds an access token lives, from the token response's ``expires_in``; None when it
    gives none that can be used: absent, not a number, not positive, not finite (``1e999`` is
    valid JSON, read as infinity) or past :data:`MAX_EXPIRES_IN`.

    RFC 6749 §5.1: ``expires_in`` is "The lifetime in seconds of the access token", RECOMMENDED,
    so a response without one is still a token response.  One that is no usable lifetime is taken
    as absent rather than refusing the tokens (the code, or the refresh token under rotation, is
    spent already): the token is used until the server refuses it, then refreshed, as one without
    ``expires_in`` is.  Never kept as infinity, which no JSON can hold (RFC 8259 §6)."""
    if isinstance(expires_in, bool) or not isinstance(expires_in, (int, float)):
        return None
    if not 0 < expires_in <= MAX_EXPIRES_IN:  # NaN and infinity fail too
        return None
    return float(expires_in)


def _expiring(tokens: dict) -> bool:
    """Whether ``tokens`` expire within :data:`REFRESH_MARGIN` (or did)."""
    expires_at = tokens.get("expires_at")
    return isinstance(expires_at, (int, float)) and expires_at - REFRESH_MARGIN <= time.time()


def _client_record(
    client_id: str | None, secret: str | None, method: str | None = None, **extra
) -> dict:
    """A client identity as the token requests use it: its id, secret and authentication method."""
    return {"client_id": client_id, "client_secret": secret, "method": method, **extra}


def _scope_param(scopes: list[str] | None) -> dict:
    """The ``scope`` parameter, omitted when there is no scope (§Scope Selection Strategy)."""
    return {"scope": " ".join(scopes)} if scopes else {}


def _secret_method(server: ServerMetadata) -> str:
    """RFC 8414 §2: without ``token_endpoint_auth_methods_supported`` the default is client_secret_basic."""
    methods = "token_endpoint_auth_methods_supported"
    if server.supports(methods, "client_secret_post") and not server.supports(
        methods, "client_secret_basic"
    ):
        return "client_secret_post"
    return "client_secret_basic"


#: An access token that can go in an ``Authorization`` header: visible ASCII (RFC 9110 §5.5
#: ``field-vchar``, without spaces).  RFC 6750 §2.1's ``b64token`` is narrower, but real providers
#: issue tokens outside it (``!`` in Salesforce's, ``|`` in Amazon's, ``%`` in Twitter's), and the
#: header carries them all.
_SENDABLE_TOKEN = re.compile(r"[\x21-\x7e]+")


def _origin(url: str) -> str:
    """The key of ``url``'s origin in the DPoP nonces (as ``DPoPKey.proof`` spells it); messages
    and logs name an origin with ``origin_text``, which never shows userinfo."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def _discard(response) -> None:
    """Release a response the caller will not see: its body read within ``MAX_ERROR_BODY`` (the
    connection goes back to the pool), or its connection closed unread when it is longer."""
    try:
        discard_body(response)
    except Exception:  # a broken body: read_body closed the response; nothing else changes
        pass
