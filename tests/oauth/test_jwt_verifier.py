"""Issue 9: JWT access tokens verified against a JWK Set (the ``auth`` extra), over real HTTP.

Keys are made here with ``cryptography``; the JWK Set is served by a WsgiServer on 127.0.0.1
(port 0) that counts its requests; time for the key cache is a clock the test moves (no sleeps).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import subprocess
import sys
import threading
import time

import jwt
import pytest
import requests
from conftest import ROOT, WAIT, run_threads
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from http_fixtures import start

from mcp_ref import Client, Context, Server
from mcp_ref.oauth.jwt_verifier import JwtVerifier
from mcp_ref.oauth.resource import ProtectedResource

ISSUER = "https://issuer.example"
RESOURCE = "https://mcp.example.com/mcp"
LOGGER = "mcp_ref.oauth.jwt_verifier"


# -- keys, JWKs and tokens ---------------------------------------------------------------------------


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def uint(number: int) -> str:
    return b64url(number.to_bytes((number.bit_length() + 7) // 8, "big"))


def rsa_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_jwk(private, kid: str, **extra) -> dict:
    """The public JWK (RFC 7517 / RFC 7518 §6) of a cryptography private key."""
    numbers = private.public_key().public_numbers()
    if isinstance(private, rsa.RSAPrivateKey):
        return {
            "kty": "RSA",
            "kid": kid,
            "use": "sig",
            "n": uint(numbers.n),
            "e": uint(numbers.e),
            **extra,
        }
    size = (private.curve.key_size + 7) // 8
    return {
        "kty": "EC",
        "kid": kid,
        "use": "sig",
        "crv": {256: "P-256", 384: "P-384"}[private.curve.key_size],
        "x": b64url(numbers.x.to_bytes(size, "big")),
        "y": b64url(numbers.y.to_bytes(size, "big")),
        **extra,
    }


RSA1, RSA2, STRANGER = rsa_key(), rsa_key(), rsa_key()
EC1 = ec.generate_private_key(ec.SECP256R1())
DROP = object()  # a claim or header to leave out


def claims(**changes) -> dict:
    now = int(time.time())
    body = {
        "iss": ISSUER,
        "aud": RESOURCE,
        "sub": "user-1",
        "client_id": "client-1",
        "scope": "mcp:tools mcp:read",
        "iat": now,
        "exp": now + 300,
        "jti": "id-1",
    }
    body.update(changes)
    return {name: value for name, value in body.items() if value is not DROP}


def token(key=RSA1, *, kid="k1", alg="RS256", typ="at+jwt", header=None, **changes) -> str:
    headers = {"kid": kid, "typ": typ, **(header or {})}
    return jwt.encode(
        claims(**changes),
        key,
        algorithm=alg,
        headers={k: v for k, v in headers.items() if v is not DROP},
    )


def unsigned(header: dict, body: dict, signature: bytes = b"") -> str:
    """A compact JWS written by hand: how an attacker would write one."""
    return ".".join(
        [b64url(json.dumps(header).encode()), b64url(json.dumps(body).encode()), b64url(signature)]
    )


def rs256(header: dict, body: dict, key=RSA1) -> str:
    """A compact JWS signed RS256 by hand, whatever its header says."""
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(body).encode())}"
    return f"{signing_input}.{b64url(key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256()))}"


def public_pem(private) -> bytes:
    return private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def hs256_with_public_key() -> str:
    """The algorithm-confusion forgery: HS256 keyed with the RSA public key (RFC 8725 §2.1)."""
    head = b64url(json.dumps({"alg": "HS256", "typ": "at+jwt", "kid": "k1"}).encode())
    body = b64url(json.dumps(claims()).encode())
    signature = hmac.new(public_pem(RSA1), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64url(signature)}"


def tampered() -> str:
    head, _, signature = token().split(".")
    body = b64url(json.dumps(claims(scope="mcp:tools mcp:admin")).encode())
    return f"{head}.{body}.{signature}"


# -- a JWK Set over HTTP -------------------------------------------------------------------------


class JwksApp:
    """A WSGI app serving a JWK Set and counting its requests; the test changes what it serves."""

    def __init__(self, *jwks: dict):
        self.document = {"keys": list(jwks)}
        self.cache_control: str | None = None
        self.body: bytes | None = None  # served instead of the document
        self.chunked = False  # no Content-Length: the body streams in chunks
        self.status = "200 OK"
        self.requests = 0
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        with self.lock:
            self.requests += 1
        data = self.body if self.body is not None else json.dumps(self.document).encode()
        headers = [("Content-Type", "application/jwk-set+json")]
        if self.cache_control:
            headers.append(("Cache-Control", self.cache_control))
        if self.chunked:
            start_response(self.status, headers)
            return (data[i : i + 4096] for i in range(0, len(data), 4096))
        start_response(self.status, headers + [("Content-Length", str(len(data)))])
        return [data]


class Clock:
    """A monotonic clock the test moves by hand."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def jwks():
    """(the JwksApp serving RSA1 as k1 and EC1 as e1, its URL)."""
    app = JwksApp(public_jwk(RSA1, "k1"), public_jwk(EC1, "e1"))
    served = start(app=app)
    yield app, served.url + "/jwks.json"
    served.stop()


@pytest.fixture
def clock():
    return Clock()


def verifier(source, clock=None, **options) -> JwtVerifier:
    options.setdefault("timeout", WAIT)
    return JwtVerifier(
        source, issuer=ISSUER, audience=RESOURCE, clock=clock or time.monotonic, **options
    )


# -- valid tokens -----------------------------------------------------------------------------------


def test_a_valid_token_gives_who_calls(jwks, clock):
    app, url = jwks
    check = verifier(url, clock)
    expires = int(time.time()) + 300
    info = check.verify(token(exp=expires))
    assert info is not None
    assert (info.client_id, info.subject, info.scopes) == (
        "client-1",
        "user-1",
        ("mcp:tools", "mcp:read"),
    )
    assert (
        info.expires_at == expires
        and info.audience == (RESOURCE,)
        and info.principal == ("client-1", "user-1")
    )
    assert check.verify(token(EC1, kid="e1", alg="ES256")) is not None  # ES256 too
    assert check.verify(rs256({"alg": "RS256", "kid": "k1", "typ": "at+jwt"}, claims())) is not None
    assert app.requests == 1  # fetched once, then cached


def test_scp_azp_a_list_audience_and_the_generic_jwt_type(jwks):
    _, url = jwks
    check = verifier(url)
    info = check.verify(
        token(
            typ="JWT",
            scope=DROP,
            client_id=DROP,
            scp=["mcp:tools", "files:read"],
            azp="client-2",
            aud=["https://other.example", RESOURCE + "/"],
        )
    )
    assert (
        info is not None
        and info.client_id == "client-2"
        and info.scopes == ("mcp:tools", "files:read")
    )
    assert info.audience == ("https://other.example", RESOURCE + "/")
    assert check.verify(token(typ=DROP)) is not None  # no typ at all: still a JWT
    assert (
        check.verify(token(typ="application/at+jwt")) is not None
    )  # RFC 7515 §4.1.9: the prefix may be there


def test_require_at_jwt_refuses_other_types(jwks):
    _, url = jwks
    strict = verifier(url, require_at_jwt=True)
    assert strict.verify(token(typ="at+jwt")) is not None
    assert strict.verify(token(typ="JWT")) is None
    assert strict.verify(token(typ=DROP)) is None


def test_a_static_jwk_set_is_never_fetched():
    check = verifier({"keys": [public_jwk(RSA1, "k1")]})
    assert check.jwks_url is None
    assert check.verify(token()) is not None
    assert check.verify(token(kid="unknown")) is None


# -- refused tokens -----------------------------------------------------------------------------------


REFUSED = {
    "wrong issuer": lambda: token(iss="https://evil.example"),
    "wrong audience": lambda: token(aud="https://other.example/mcp"),
    "expired": lambda: token(exp=int(time.time()) - 120),
    "not yet valid": lambda: token(nbf=int(time.time()) + 120),
    "issued in the future": lambda: token(iat=int(time.time()) + 120),
    "no exp": lambda: token(exp=DROP),
    "no aud": lambda: token(aud=DROP),
    "no client id": lambda: token(client_id=DROP),
    "wrong key": lambda: token(STRANGER),
    "another key's kid": lambda: token(RSA2, kid="k1"),
    "alg none": lambda: unsigned({"alg": "none", "typ": "at+jwt", "kid": "k1"}, claims()),
    "HS256 keyed with the public key": hs256_with_public_key,
    "tampered payload": tampered,
    "an ES256 kid with an RSA alg": lambda: token(RSA1, kid="e1", alg="RS256"),
    "an ID token's type": lambda: token(typ="id_token+jwt"),
    "a crit header": lambda: rs256(
        {"alg": "RS256", "kid": "k1", "typ": "at+jwt", "crit": ["b64"], "b64": True}, claims()
    ),
    "a bad scope claim": lambda: token(scope=42),
    "not a JWT": lambda: "not-a-jwt",
    "garbage segments": lambda: "a.b.c",
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_bad_token_is_refused_and_logged_without_the_token(jwks, case, caplog):
    _, url = jwks
    check = verifier(url)
    bad = REFUSED[case]()
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        assert check.verify(bad) is None
    assert "refused" in caplog.text
    for part in bad.split("."):
        if len(part) > 8:
            assert part not in caplog.text


def test_none_and_hmac_algorithms_cannot_be_configured(jwks):
    _, url = jwks
    for algorithms in (["none"], ["HS256"], ["RS256", "HS512"], []):
        with pytest.raises(ValueError):
            verifier(url, algorithms=algorithms)


def test_a_jwks_url_must_be_https_except_on_loopback():
    with pytest.raises(ValueError):
        verifier("http://as.example.com/jwks.json")
    verifier("https://as.example.com/jwks.json")  # not fetched until a token comes
    verifier("http://localhost:1/jwks.json")


def test_unusable_keys_are_skipped(jwks):
    app, url = jwks
    weak = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    app.document["keys"] = [
        {"kty": "oct", "kid": "k1", "k": b64url(public_pem(RSA1))},  # a symmetric key: never
        public_jwk(RSA1, "enc", use="enc"),
        public_jwk(RSA1, "ps", alg="PS256"),  # one key, one algorithm
        public_jwk(weak, "weak"),  # RFC 7518 §3.3: under 2048 bits
        {**public_jwk(RSA1, "k2"), "d": "AAAA"},  # private material
    ]
    check = verifier(url)
    for kid in ("k1", "enc", "ps", "weak", "k2"):
        assert check.verify(token(kid=kid)) is None, kid
    assert check.verify(token(kid="ps", alg="PS256")) is not None
    with pytest.raises(ValueError):
        verifier({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]})  # a static set with no usable key


# -- the JWK Set cache --------------------------------------------------------------------------------


def test_an_unknown_kid_triggers_one_refetch_for_a_rotation(jwks, clock):
    app, url = jwks
    check = verifier(url, clock, refetch_interval=30)
    assert check.verify(token()) is not None and app.requests == 1
    app.document["keys"].append(public_jwk(RSA2, "k2"))  # the authorization server rotates
    assert check.verify(token(RSA2, kid="k2")) is None  # fetched a moment ago: not again yet
    assert app.requests == 1
    clock.advance(31)
    assert check.verify(token(RSA2, kid="k2")) is not None  # one refetch finds it
    assert app.requests == 2
    assert check.verify(token(RSA2, kid="k2")) is not None and check.verify(token()) is not None
    assert app.requests == 2


def test_a_flood_of_unknown_kids_fetches_at_most_once_per_interval(jwks, clock):
    app, url = jwks
    check = verifier(url, clock, refetch_interval=30)
    assert check.verify(token()) is not None and app.requests == 1
    clock.advance(31)
    forged = [token(STRANGER, kid=f"flood-{i}") for i in range(40)]

    def flood(i: int) -> list:
        return [check.verify(forged[(i + j) % len(forged)]) for j in range(len(forged))]

    results = run_threads(flood, 8)
    assert all(info is None for batch in results for info in batch)
    assert app.requests == 2  # one refetch for the whole flood
    assert check.verify(token()) is not None and app.requests == 2


def test_cache_control_max_age_is_honoured_within_bounds(jwks, clock):
    app, url = jwks
    app.cache_control = "public, max-age=120"
    check = verifier(url, clock, min_ttl=60, max_ttl=600)
    assert check.verify(token()) is not None and app.requests == 1
    clock.advance(119)
    assert check.verify(token()) is not None and app.requests == 1
    clock.advance(2)
    app.cache_control = "max-age=999999"  # held to max_ttl
    assert check.verify(token()) is not None and app.requests == 2
    clock.advance(599)
    assert check.verify(token()) is not None and app.requests == 2
    clock.advance(2)
    app.cache_control = "no-store"  # held to min_ttl
    assert check.verify(token()) is not None and app.requests == 3
    clock.advance(61)
    app.cache_control = "max-age=300, no-cache"  # no-cache wins wherever it stands: min_ttl
    assert check.verify(token()) is not None and app.requests == 4
    clock.advance(61)
    assert check.verify(token()) is not None and app.requests == 5


def test_a_failed_refetch_keeps_the_last_good_set_for_a_bounded_time(jwks, clock):
    app, url = jwks
    check = verifier(url, clock, min_ttl=60, max_ttl=600, refetch_interval=30)
    app.cache_control = "max-age=60"
    assert check.verify(token()) is not None
    app.status = "500 Internal Server Error"
    clock.advance(61)
    assert check.verify(token()) is not None  # stale but within the grace
    assert app.requests == 2
    clock.advance(600)
    assert check.verify(token()) is None  # the grace is over: dropped
    app.status = "200 OK"
    clock.advance(31)
    assert check.verify(token()) is not None


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_oversized_jwk_set_is_refused(jwks, chunked):
    app, url = jwks
    app.chunked = chunked
    app.document["padding"] = "x" * 70_000
    check = verifier(url, max_bytes=64 * 1024)
    assert check.verify(token()) is None
    del app.document["padding"]
    app.document["keys"] = [public_jwk(RSA1, f"k{i}") for i in range(1, 10)]
    assert verifier(url, max_keys=8).verify(token()) is None  # too many keys
    assert verifier(url).verify(token()) is not None


def test_a_jwk_set_that_is_not_one_is_refused(jwks):
    app, url = jwks
    for body in (b"not json", b"[]", b'{"keys": {}}'):
        app.body = body
        assert verifier(url).verify(token()) is None


def test_the_jwk_set_url_is_logged_without_its_credentials(jwks, caplog):
    """A JWK Set URL may carry a credential (userinfo, an API key in the query): a failed fetch
    logs the URL without them (as every mcp_ref message shows a URL: ``shown``)."""
    app, url = jwks
    app.status = "500 Internal Server Error"
    secret_url = url.replace("http://", "http://svc:PASSWORD-XYZ@") + "?api_key=SECRET-KEY-XYZ"
    caplog.set_level(logging.WARNING, logger="mcp_ref.oauth.jwt_verifier")
    assert verifier(secret_url).verify(token()) is None
    assert "JWK Set http://***@127.0.0.1" in caplog.text and "/jwks.json?..." in caplog.text
    assert "PASSWORD-XYZ" not in caplog.text and "SECRET-KEY-XYZ" not in caplog.text


# -- an MCP server that trusts the JWTs -------------------------------------------------------------


def test_an_mcp_server_accepts_a_jwt_and_its_handlers_see_who_calls(jwks):
    _, jwks_url = jwks
    server = Server("jwt-protected")

    @server.tool
    def whoami(ctx: Context) -> str:
        """Who is calling, as the token says."""
        return f"{ctx.auth.client_id} {ctx.auth.subject} {' '.join(ctx.auth.scopes)}"

    holder = {}
    served = start(app=lambda environ, start_response: holder["app"](environ, start_response))
    url = served.url + "/mcp"
    try:
        check = JwtVerifier(jwks_url, issuer=ISSUER, audience=url, timeout=WAIT)
        holder["app"] = server.wsgi_app(auth=ProtectedResource(check, [ISSUER], resource=url))
        good = token(aud=url)
        with Client.http(url, headers={"Authorization": "Bearer " + good}, timeout=WAIT) as client:
            assert (
                client.call_tool("whoami").content[0].text == "client-1 user-1 mcp:tools mcp:read"
            )
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
        accept = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        for forged in (token(STRANGER, aud=url), token(aud=RESOURCE), hs256_with_public_key()):
            answer = requests.post(
                url,
                json=init,
                headers={**accept, "Authorization": "Bearer " + forged},
                timeout=WAIT,
            )
            assert (
                answer.status_code == 401
                and 'error="invalid_token"' in answer.headers["WWW-Authenticate"]
            )
            assert forged not in answer.text and forged not in answer.headers["WWW-Authenticate"]
    finally:
        served.stop()
        if "app" in holder:
            holder["app"].close()


def test_importing_mcp_ref_does_not_import_pyjwt():
    code = "import mcp_ref, mcp_ref.oauth, mcp_ref.oauth.resource, sys; assert 'jwt' not in sys.modules, 'jwt imported'"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=WAIT * 3, cwd=ROOT)
