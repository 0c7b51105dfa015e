"""JWT assertions a client presents to an authorization server (the ``auth`` extra: PyJWT).

- :func:`client_assertion`: ``private_key_jwt`` client authentication (RFC 7523 §2.2, §3;
  the OAuth client credentials extension), a short-lived JWT signed with the client's key.
- :class:`IdJagExchange`: enterprise-managed authorization (the extension
  ``io.modelcontextprotocol/enterprise-managed-authorization``): the user's ID token from the
  enterprise identity provider is exchanged there (RFC 8693 token exchange) for an Identity
  Assertion JWT Authorization Grant (ID-JAG) aimed at the MCP server's authorization server,
  which then takes it with the jwt-bearer grant.  Pass it as ``OAuth(assertion=IdJagExchange(...))``.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from dataclasses import KW_ONLY, dataclass
from typing import Any

from ..http.not_reached import shown
from ..http.origins import redirects_unread
from .errors import TokenError

#: How long a client assertion is valid (RFC 7523 §3: "the JWT MUST contain an exp claim").
ASSERTION_LIFETIME = 300
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token"


def _jwt():
    try:
        import jwt
    except ImportError:
        raise ImportError(
            'signing JWTs needs the auth extra, PyJWT with cryptography: pip install "PyJWT[crypto]"'
        ) from None
    return jwt


def client_assertion(private_key, client_id: str, server, *, algorithm: str = "RS256") -> str:
    """A ``private_key_jwt`` assertion for ``server`` (its metadata): ``iss`` = ``sub`` = the client id,
    ``aud`` = the authorization server's issuer (RFC 7523 §3: "a value that identifies the
    authorization server as an intended audience"), ``exp``, ``iat`` and a unique ``jti``.

    ``private_key`` is a PEM string or bytes, or a key object of ``cryptography``.
    """
    jwt = _jwt()
    now = int(time.time())
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": server.issuer,
        "iat": now,
        "exp": now + ASSERTION_LIFETIME,
        "jti": secrets.token_urlsafe(16),
    }
    if isinstance(private_key, str):
        private_key = private_key.encode()
    return jwt.encode(claims, private_key, algorithm=algorithm)


@dataclass(repr=False)  # no repr: it would show the ID token and the secret
class IdJagExchange:
    """An ``assertion=`` for :class:`~mcp_ref.oauth.client.OAuth`: exchange ``id_token`` at the identity
    provider's ``token_endpoint`` for an ID-JAG naming the MCP server's authorization server
    (``audience``) and the MCP server (``resource``).

    ``client_id`` / ``client_secret`` authenticate this client to the identity provider (the
    secret with HTTP Basic; without one the id goes in the form).  Each call is one request,
    bounded by ``timeout`` in all (status line and headers too, with a session of mcp_ref's
    :func:`~mcp_ref.http.framing.framing_adapter`), sent with ``http`` (a ``requests.Session``;
    None: one of mcp_ref's).
    Needs no JWT library: the ID-JAG is passed on as it comes.
    """

    token_endpoint: str
    id_token: str
    _: KW_ONLY
    client_id: str | None = None
    client_secret: str | None = None
    scopes: Any = None
    timeout: float = 30.0
    http: Any = None

    def __call__(self, server, resource: str) -> str:
        import requests

        from ..http.bounded_reads import exchange_within
        from ..http.framing import framing_session
        from .discovery import MAX_TOKEN_RESPONSE_BYTES, bounded_json

        form = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG,
            "subject_token": self.id_token,
            "subject_token_type": ID_TOKEN,
            "audience": server.issuer,
            "resource": resource,
        }
        if self.scopes:
            form["scope"] = " ".join(self.scopes)
        auth = None
        if self.client_id and self.client_secret:
            auth = (self.client_id, self.client_secret)
        elif self.client_id:
            form["client_id"] = self.client_id
        # the whole exchange within timeout, status line and headers too (exchange_within)
        try:
            with exchange_within(self.timeout), contextlib.ExitStack() as own:
                http = self.http or own.enter_context(framing_session())
                response = http.post(
                    self.token_endpoint,
                    data=form,
                    auth=auth,
                    timeout=self.timeout,
                    headers={"Accept": "application/json"},
                    allow_redirects=False,
                    stream=True,
                    hooks=redirects_unread(self.http),  # a redirect's body is never read
                )
                # read within the bound a token endpoint's answer has (never read whole)
                answer = bounded_json(response, MAX_TOKEN_RESPONSE_BYTES, self.timeout)
        except requests.RequestException as exc:
            raise TokenError(
                f"cannot reach the identity provider {shown(self.token_endpoint)}: {type(exc).__name__}"
            ) from None
        if answer is None:
            raise TokenError(
                f"the identity provider {shown(self.token_endpoint)} answered HTTP {response.status_code} "
                "without a JSON object",
                status=response.status_code,
            )
        if not response.ok:
            raw_code = answer.get("error")
            code = raw_code if isinstance(raw_code, str) else ""
            raise TokenError(
                f"the identity provider {shown(self.token_endpoint)} refused the token exchange: "
                f"{code or 'no error code'}",
                code,
                response.status_code,
            )
        if answer.get("issued_token_type") != ID_JAG or not isinstance(
            answer.get("access_token"), str
        ):
            raise TokenError(
                f"the identity provider {shown(self.token_endpoint)} did not issue an ID-JAG "
                f"(issued_token_type {answer.get('issued_token_type')!r})"
            )
        return answer["access_token"]
