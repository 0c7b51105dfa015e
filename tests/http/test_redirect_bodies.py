"""A redirect's body is never read, on every HTTP client path: a peer cannot make the client hold
an endless 3xx body.

``requests`` reads a redirect's whole body before it goes on (``Session.resolve_redirects``,
"consume socket so it can be released"): to follow it, and with ``allow_redirects=False`` to work
out ``response.next``, ``stream=True`` or not.  Each path closes a redirect's answer unread in a
response hook (:func:`mcp_ref.http.origins.close_redirect_unread`); its ``Location`` still works.

Measured on the peer's side, never by the client's memory: the peer (a WsgiServer on 127.0.0.1,
port 0) answers 3xx with a chunked body that goes on for :data:`ENDLESS` bytes (the tests' bound)
and records whether the client closed the connection before that (its write failed).  Before the
fix the client read all of it.
"""

from __future__ import annotations

import json
import threading

import pytest
import requests
from conftest import WAIT, outcome_within
from http_fixtures import serve  # noqa: F401 - a fixture
from test_http_client import tools_server

from mcp_ref import Client, OAuth
from mcp_ref.http.wsgi_server import WsgiServer
from mcp_ref.oauth.discovery import fetch_json
from mcp_ref.oauth.errors import MetadataError, TokenError

#: The bytes of an "endless" redirect body the peer sends at most: far more than any bound of the
#: client's (a client that reads it through is the bug).
ENDLESS = 64 * 1024 * 1024
CHUNK = b"<p>moved</p>" * 5000


class EndlessRedirect:
    """A WSGI app: every request is answered ``status`` to ``location`` with a chunked body of
    :data:`ENDLESS` bytes; ``cut_short`` is set once a client closed the connection before its
    end (the server's write failed, the body closed early), ``ended`` once one went out whole."""

    def __init__(self, location: str, status: int = 307):
        self.location, self.status = location, status
        self.answered = 0
        self.cut_short = threading.Event()
        self.ended = threading.Event()

    def __call__(self, environ, start_response):
        environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        self.answered += 1
        start_response(
            f"{self.status} Redirect",
            [("Location", self.location), ("Content-Type", "text/html")],  # no length: chunked
        )
        return self._body()

    def _body(self):
        sent = 0
        try:
            while sent < ENDLESS:
                yield CHUNK
                sent += len(CHUNK)
            self.ended.set()
        finally:
            if sent < ENDLESS:
                self.cut_short.set()

    def assert_unread(self) -> None:
        """Some answer of this app was closed by the client, unread; none was read whole."""
        assert self.answered, "the peer was never asked"
        assert self.cut_short.wait(WAIT), "the client did not close the redirect's connection"
        assert not self.ended.is_set(), "the client read a redirect's whole body"


@pytest.fixture
def serve_app():
    """Factory: ``serve_app(app)`` -> the base URL of a WsgiServer serving ``app``; stopped after."""
    running: list[tuple[WsgiServer, threading.Thread]] = []

    def factory(app) -> str:
        httpd = WsgiServer(("127.0.0.1", 0), app)
        thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        thread.start()
        running.append((httpd, thread))
        return httpd.url

    yield factory
    for httpd, thread in running:
        httpd.shutdown()
        httpd.server_close()
        thread.join(WAIT)


# -- the MCP HTTP client: same-origin redirects are followed, their bodies unread ---------------


@pytest.mark.parametrize("era", ["handshake", "modern", "2024-11-05"])
def test_a_same_origin_redirect_with_an_endless_body_is_followed_unread(serve, era):
    """Every request to ``/old`` is answered 307 to ``/mcp`` with an endless body: the client
    closes each unread and follows it (the handshake, the GET stream, the calls, the DELETE).
    The 2024-11-05 client's GET stream (read with no read timeout) is redirected to ``/sse``."""
    legacy = era == "2024-11-05"
    endless = EndlessRedirect("/sse" if legacy else "/mcp")
    options = {"transport": "sse"} if legacy else {"era": era}

    def front(app):
        def route(environ, start_response):
            if environ["PATH_INFO"] == "/old":
                return endless(environ, start_response)
            return app(environ, start_response)

        return route

    srv = serve(tools_server(), wrap=front)

    def call() -> str:
        with Client.http(srv.url + "/old", timeout=WAIT, **options) as client:
            return client.call_tool("echo", {"text": "moved"}).text

    assert outcome_within(call, WAIT) == "moved"
    endless.assert_unread()


# -- OAuth: metadata and the token endpoint ------------------------------------------------------


@pytest.mark.parametrize("own_session", [False, True], ids=["callers-session", "oauth-session"])
def test_fetch_json_closes_a_redirect_unread(serve_app, own_session):
    """A metadata URL answering 302 with an endless body: the redirect is refused (never followed)
    at once, its body unread, whether the session is the caller's or OAuth's own."""
    endless = EndlessRedirect("https://elsewhere.example/metadata", status=302)
    url = serve_app(endless) + "/.well-known/oauth-protected-resource"
    with OAuth()._session() if own_session else requests.Session() as http:
        outcome = outcome_within(lambda: fetch_json(http, url, timeout=WAIT), WAIT)
    assert isinstance(outcome, MetadataError), outcome
    assert "redirects are not followed" in str(outcome)
    endless.assert_unread()


def test_the_token_endpoint_closes_a_redirect_unread(serve_app):
    """The MCP server's 401 leads to an authorization server whose token endpoint answers 307 with
    an endless body: the grant fails at once (a redirect, not followed), its body unread."""
    endless = EndlessRedirect("/elsewhere")
    base: list[str] = []

    def app(environ, start_response):
        path = environ["PATH_INFO"]
        if path == "/token":
            return endless(environ, start_response)
        if path.startswith("/.well-known/"):
            if path.startswith("/.well-known/oauth-protected-resource"):
                document = {"resource": base[0] + "/mcp", "authorization_servers": [base[0]]}
            else:
                document = {
                    "issuer": base[0],
                    "token_endpoint": base[0] + "/token",
                    "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                }
            start_response("200 OK", [("Content-Type", "application/json")])
            return [json.dumps(document).encode()]
        start_response("401 Unauthorized", [("WWW-Authenticate", "Bearer")])
        return [b""]

    base.append(serve_app(app))
    auth = OAuth("id", "secret", grant="client_credentials", timeout=WAIT)
    outcome = outcome_within(lambda: Client.http(base[0] + "/mcp", auth=auth, timeout=WAIT), WAIT)
    assert isinstance(outcome, TokenError), outcome
    assert "a redirect, not followed" in str(outcome)
    endless.assert_unread()


# -- the other fetches of a peer's URL ---------------------------------------------------------------


def _introspect(url: str):
    from mcp_ref.oauth.resource import IntrospectionVerifier

    return IntrospectionVerifier(url, "rs", "rs-secret", timeout=WAIT).verify("a-token")


def _exchange_id_token(url: str):
    from mcp_ref.oauth.assertions import IdJagExchange

    class Server:
        issuer = "https://as.example"

    with requests.Session() as http:  # a caller's session: its hooks kept, the redirect unread
        return IdJagExchange(url, "an-id-token", client_id="c", timeout=WAIT, http=http)(
            Server(), "https://mcp.example/mcp"
        )


def _follow(url: str):
    from mcp_ref.oauth.browser import follow_redirect

    with requests.Session() as http:
        return follow_redirect(url, timeout=WAIT, http=http)


def _jwks(url: str):
    from mcp_ref.oauth.jwt_verifier import JwtVerifier

    verifier = JwtVerifier(
        url, issuer="https://issuer.example", audience="https://mcp.example/mcp", timeout=WAIT
    )
    # a token naming a key: the set is fetched for it (its signature is never reached)
    return verifier.verify(
        "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIiwidHlwIjoiYXQrand0In0.eyJhIjoxfQ.c2ln"
    )


@pytest.mark.parametrize(
    "fetch",
    [_introspect, _exchange_id_token, _follow, _jwks],
    ids=["introspection", "id-jag-exchange", "follow-redirect", "jwk-set"],
)
def test_every_other_fetch_closes_a_redirect_unread(serve_app, fetch):
    """Token introspection, the ID-JAG exchange, the played browser and a JWK Set download: each
    answered 307 with an endless body ends at once (a failure, or the Location), the body unread."""
    if fetch is _jwks:
        pytest.importorskip("jwt")
    endless = EndlessRedirect("/elsewhere")
    url = serve_app(endless) + "/endpoint"
    outcome = outcome_within(lambda: fetch(url), WAIT)
    if fetch is _follow:
        assert outcome == "/elsewhere"
    else:
        assert outcome is None or isinstance(outcome, TokenError), outcome
    endless.assert_unread()
