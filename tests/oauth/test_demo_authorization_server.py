"""Issue 9 §3: the demo authorization server (mcp_ref.workbench.demo_auth_server), over real HTTP on 127.0.0.1."""

from __future__ import annotations

import base64
import threading
from contextlib import contextmanager
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from conftest import WAIT

from mcp_ref.oauth import pkce
from mcp_ref.workbench.demo_auth_server import DEMO_CLIENT_ID, DemoAuthorizationServer

RESOURCE = "http://127.0.0.1:9999/mcp"


@contextmanager
def served(app: DemoAuthorizationServer):
    """``app`` served on 127.0.0.1 (port 0) while the block runs: the server (its URL in ``.url``)."""
    from mcp_ref.http.wsgi_server import WsgiServer

    httpd = WsgiServer(("127.0.0.1", 0), app)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(WAIT)


@pytest.fixture
def auth_server():
    """A DemoAuthorizationServer with its defaults, served on 127.0.0.1 (other modules import this fixture)."""
    with served(DemoAuthorizationServer()) as httpd:
        yield httpd


def authorize(
    url: str,
    *,
    client_id=DEMO_CLIENT_ID,
    redirect_uri="http://127.0.0.1:53682/callback",
    verifier=None,
    **extra,
) -> dict:
    """One authorization request; the query of the redirect it answers with."""
    verifier = verifier or pkce.new_verifier()
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "state": "s-1",
        "code_challenge": pkce.challenge(verifier),
        "code_challenge_method": "S256",
        "resource": RESOURCE,
        "scope": "mcp:tools",
        **extra,
    }
    answer = requests.get(
        url + "/authorize",
        params={k: v for k, v in params.items() if v is not None},
        allow_redirects=False,
        timeout=WAIT,
    )
    assert answer.status_code == 302, answer.text
    location = answer.headers["Location"]
    assert redirect_uri is None or location.startswith(redirect_uri + "?")  # None: left out
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def token(url: str, **form) -> requests.Response:
    return requests.post(url + "/token", data=form, timeout=WAIT)


def code_flow(url: str, verifier: str | None = None) -> dict:
    verifier = verifier or pkce.new_verifier()
    query = authorize(url, verifier=verifier)
    answer = token(
        url,
        grant_type="authorization_code",
        code=query["code"],
        client_id=DEMO_CLIENT_ID,
        redirect_uri="http://127.0.0.1:53682/callback",
        code_verifier=verifier,
        resource=RESOURCE,
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_metadata_is_rfc_8414(auth_server):
    meta = requests.get(
        auth_server.url + "/.well-known/oauth-authorization-server", timeout=WAIT
    ).json()
    assert meta["issuer"] == auth_server.url
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["authorization_response_iss_parameter_supported"] is True
    for endpoint in (
        "authorization_endpoint",
        "token_endpoint",
        "registration_endpoint",
        "introspection_endpoint",
    ):
        assert meta[endpoint].startswith(auth_server.url + "/")


def test_the_code_flow_with_pkce_state_iss_and_a_resource_bound_token(auth_server):
    url = auth_server.url
    query = authorize(url, verifier="v" * 43)
    assert query["state"] == "s-1" and query["iss"] == url  # RFC 9207
    answer = token(
        url,
        grant_type="authorization_code",
        code=query["code"],
        client_id=DEMO_CLIENT_ID,
        redirect_uri="http://127.0.0.1:53682/callback",
        code_verifier="v" * 43,
        resource=RESOURCE,
    )
    tokens = answer.json()
    assert answer.headers["Cache-Control"] == "no-store"
    assert (
        tokens["token_type"] == "Bearer"
        and tokens["scope"] == "mcp:tools"
        and tokens["refresh_token"]
    )
    grant = auth_server.app.verify(tokens["access_token"])
    assert (
        grant.resource == RESOURCE and grant.scope == "mcp:tools"
    )  # its audience, and what it may do


def test_a_code_is_single_use_and_bound_to_its_verifier(auth_server):
    url = auth_server.url
    verifier = pkce.new_verifier()
    query = authorize(url, verifier=verifier)
    wrong = token(
        url,
        grant_type="authorization_code",
        code=query["code"],
        client_id=DEMO_CLIENT_ID,
        redirect_uri="http://127.0.0.1:53682/callback",
        code_verifier=pkce.new_verifier(),
    )
    assert wrong.status_code == 400 and wrong.json()["error"] == "invalid_grant"
    again = token(
        url,
        grant_type="authorization_code",
        code=query["code"],
        client_id=DEMO_CLIENT_ID,
        redirect_uri="http://127.0.0.1:53682/callback",
        code_verifier=verifier,
    )
    assert (
        again.status_code == 400 and again.json()["error"] == "invalid_grant"
    )  # a failed try used it up
    assert query["code"] not in again.text  # never repeated back


def test_an_unregistered_redirect_is_refused_without_redirecting(auth_server):
    answer = requests.get(
        auth_server.url + "/authorize",
        allow_redirects=False,
        timeout=WAIT,
        params={
            "response_type": "code",
            "client_id": DEMO_CLIENT_ID,
            "redirect_uri": "https://evil.example/callback",
            "code_challenge": pkce.challenge(pkce.new_verifier()),
            "code_challenge_method": "S256",
        },
    )
    assert answer.status_code == 400 and "Location" not in answer.headers


def test_loopback_redirects_match_on_any_port_and_pkce_s256_is_required(auth_server):
    assert "code" in authorize(auth_server.url, redirect_uri="http://localhost:1234/callback")
    refused = authorize(auth_server.url, code_challenge_method="plain")
    assert refused["error"] == "invalid_request" and "S256" in refused["error_description"]
    assert authorize(auth_server.url, scope="root")["error"] == "invalid_scope"


def test_dynamic_registration_then_a_confidential_client_with_basic_auth(auth_server):
    url = auth_server.url
    registered = requests.post(
        url + "/register",
        json={
            "redirect_uris": ["http://127.0.0.1/cb"],
            "client_name": "t",
            "grant_types": ["authorization_code", "refresh_token"],
        },
        timeout=WAIT,
    )
    assert registered.status_code == 201
    client = registered.json()
    assert client["token_endpoint_auth_method"] == "client_secret_basic" and client["client_secret"]
    verifier = pkce.new_verifier()
    query = authorize(
        url,
        client_id=client["client_id"],
        redirect_uri="http://127.0.0.1:4000/cb",
        verifier=verifier,
    )
    basic = base64.b64encode(f"{client['client_id']}:{client['client_secret']}".encode()).decode()
    answer = requests.post(
        url + "/token",
        headers={"Authorization": f"Basic {basic}"},
        timeout=WAIT,
        data={
            "grant_type": "authorization_code",
            "code": query["code"],
            "redirect_uri": "http://127.0.0.1:4000/cb",
            "code_verifier": verifier,
        },
    )
    assert answer.status_code == 200, answer.text
    forged = base64.b64encode(f"{client['client_id']}:wrong".encode()).decode()
    refused = requests.post(
        url + "/token",
        headers={"Authorization": f"Basic {forged}"},
        timeout=WAIT,
        data={"grant_type": "refresh_token", "refresh_token": answer.json()["refresh_token"]},
    )
    assert refused.status_code == 401 and refused.json()["error"] == "invalid_client"
    # Introspection, for a confidential client: what the token stands for.
    info = requests.post(
        url + "/introspect",
        headers={"Authorization": f"Basic {basic}"},
        timeout=WAIT,
        data={"token": answer.json()["access_token"]},
    ).json()
    assert info["active"] and info["aud"] == RESOURCE and info["client_id"] == client["client_id"]
    gone = requests.post(
        url + "/introspect",
        headers={"Authorization": f"Basic {basic}"},
        timeout=WAIT,
        data={"token": "not-a-token"},
    ).json()
    assert gone == {"active": False}


@pytest.mark.parametrize(
    "body, error",
    [
        (
            {"redirect_uris": ["http://evil.example/cb"]},
            "invalid_redirect_uri",
        ),  # http, not loopback
        ({"redirect_uris": ["https://ok.example/cb#frag"]}, "invalid_redirect_uri"),
        ({"redirect_uris": []}, "invalid_redirect_uri"),
        (
            {
                "redirect_uris": ["https://ok.example/cb"],
                "token_endpoint_auth_method": "private_key_jwt",
            },
            "invalid_client_metadata",
        ),
        (
            {"redirect_uris": ["https://ok.example/cb"], "grant_types": ["password"]},
            "invalid_client_metadata",
        ),
    ],
)
def test_bad_registrations_are_refused_with_rfc_7591_errors(auth_server, body, error):
    answer = requests.post(auth_server.url + "/register", json=body, timeout=WAIT)
    assert answer.status_code == 400 and answer.json()["error"] == error


def test_an_oversized_body_is_refused_unread(auth_server):
    answer = requests.post(
        auth_server.url + "/register",
        data=b"{" + b" " * 70_000 + b"}",
        headers={"Content-Type": "application/json"},
        timeout=WAIT,
    )
    assert answer.status_code == 413


def test_refresh_tokens_rotate_and_never_widen_the_scope(auth_server):
    url = auth_server.url
    first = code_flow(url)
    second = token(
        url,
        grant_type="refresh_token",
        refresh_token=first["refresh_token"],
        client_id=DEMO_CLIENT_ID,
    )
    assert second.status_code == 200 and second.json()["refresh_token"] != first["refresh_token"]
    reused = token(
        url,
        grant_type="refresh_token",
        refresh_token=first["refresh_token"],
        client_id=DEMO_CLIENT_ID,
    )
    assert (
        reused.status_code == 400 and reused.json()["error"] == "invalid_grant"
    )  # rotated: the old one is gone
    wider = token(
        url,
        grant_type="refresh_token",
        refresh_token=second.json()["refresh_token"],
        client_id=DEMO_CLIENT_ID,
        scope="mcp:tools mcp:admin",
    )
    assert wider.status_code == 400 and wider.json()["error"] == "invalid_scope"


def test_codes_and_access_tokens_expire_by_the_clock():
    """``code_lifetime`` and ``token_lifetime`` measured on the server's clock (injected: no waiting)."""
    now = [1000.0]
    app = DemoAuthorizationServer(code_lifetime=60.0, token_lifetime=3600.0, clock=lambda: now[0])
    with served(app) as httpd:
        url = httpd.url
        verifier = pkce.new_verifier()
        query = authorize(url, verifier=verifier)
        now[0] += 61.0  # past the code's lifetime
        late = token(
            url,
            grant_type="authorization_code",
            code=query["code"],
            client_id=DEMO_CLIENT_ID,
            redirect_uri="http://127.0.0.1:53682/callback",
            code_verifier=verifier,
            resource=RESOURCE,
        )
        assert late.status_code == 400 and late.json()["error"] == "invalid_grant"

        tokens = code_flow(url)  # a code used at once is good
        assert tokens["expires_in"] == 3600
        assert app.verify(tokens["access_token"]) is not None
        assert app.token_verifier().verify(tokens["access_token"]).expires_at is not None
        now[0] += 3599.0
        assert app.verify(tokens["access_token"]) is not None  # one second left
        now[0] += 2.0
        assert app.verify(tokens["access_token"]) is None  # expired
        assert app.token_verifier().verify(tokens["access_token"]) is None
        renewed = token(
            url,
            grant_type="refresh_token",
            refresh_token=tokens["refresh_token"],
            client_id=DEMO_CLIENT_ID,
        )
        assert (
            renewed.status_code == 200 and app.verify(renewed.json()["access_token"]) is not None
        )  # the refresh token lives on


def test_a_token_request_for_another_resource_is_refused(auth_server):
    verifier = pkce.new_verifier()
    query = authorize(auth_server.url, verifier=verifier)
    answer = token(
        auth_server.url,
        grant_type="authorization_code",
        code=query["code"],
        client_id=DEMO_CLIENT_ID,
        redirect_uri="http://127.0.0.1:53682/callback",
        code_verifier=verifier,
        resource="http://other/mcp",
    )
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_target"


def test_the_tables_are_bounded():
    app = DemoAuthorizationServer(max_clients=5)
    for _ in range(50):
        app.register(
            {"redirect_uris": ["https://c.example/cb"], "token_endpoint_auth_method": "none"}
        )
    assert (
        len(app.clients) == 5 and app.clients.get(DEMO_CLIENT_ID) is not None
    )  # the pre-registered one stays


# -- Client ID Metadata Documents ---------------------------------------------------------------------


@pytest.fixture
def documents():
    """A loopback web server for client metadata documents: ``documents.serve(path, body, headers)``; its URL base."""
    from mcp_ref.http.wsgi_server import WsgiServer

    served: dict[str, tuple[bytes, list]] = {}

    def app(environ, start_response):
        body, headers = served.get(environ["PATH_INFO"], (b"", []))
        start_response(
            "200 OK" if body else "404 Not Found", [("Content-Length", str(len(body)))] + headers
        )
        return [body]

    httpd = WsgiServer(("127.0.0.1", 0), app)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    httpd.serve = lambda path, body, headers=(): served.__setitem__(path, (body, list(headers)))
    yield httpd
    httpd.shutdown()
    httpd.server_close()
    thread.join(WAIT)


def document(client_id: str, **fields) -> bytes:
    import json

    return json.dumps(
        {
            "client_id": client_id,
            "client_name": "doc client",
            "redirect_uris": ["http://127.0.0.1/callback"],
            **fields,
        }
    ).encode()


def test_a_client_metadata_document_is_a_client(auth_server, documents):
    client_id = documents.url + "/oauth/client.json"
    documents.serve("/oauth/client.json", document(client_id))
    assert (
        requests.get(
            auth_server.url + "/.well-known/oauth-authorization-server", timeout=WAIT
        ).json()["client_id_metadata_document_supported"]
        is True
    )
    verifier = pkce.new_verifier()
    query = authorize(
        auth_server.url,
        client_id=client_id,
        redirect_uri="http://127.0.0.1:7777/callback",
        verifier=verifier,
    )
    answer = token(
        auth_server.url,
        grant_type="authorization_code",
        code=query["code"],
        client_id=client_id,
        redirect_uri="http://127.0.0.1:7777/callback",
        code_verifier=verifier,
    )
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize(
    "problem", ["wrong client_id", "no redirect_uris", "too big", "not json", "missing"]
)
def test_a_bad_client_metadata_document_is_refused_without_a_redirect(
    auth_server, documents, problem
):
    client_id = documents.url + "/client.json"
    body = {
        "wrong client_id": document(client_id + "x"),
        "no redirect_uris": document(client_id, redirect_uris=[]),
        "too big": document(client_id, padding="x" * 20_000),
        "not json": b"<html>",
        "missing": b"",
    }[problem]
    documents.serve("/client.json", body)
    answer = requests.get(
        auth_server.url + "/authorize",
        allow_redirects=False,
        timeout=WAIT,
        params={
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": "http://127.0.0.1/callback",
            "code_challenge": pkce.challenge(pkce.new_verifier()),
            "code_challenge_method": "S256",
        },
    )
    assert answer.status_code == 400 and "Location" not in answer.headers
    assert answer.json()["error"] == "invalid_client"


@pytest.mark.parametrize(
    "client_id",
    [
        "https://10.0.0.1/client.json",
        "https://169.254.169.254/latest/meta-data",
        "http://example.com/client.json",
        "https://[fd00::1]/c.json",
    ],
)
def test_private_network_and_plain_http_documents_are_never_fetched(client_id):
    from mcp_ref.workbench.demo_auth_server import OAuthError, fetch_client_metadata

    with pytest.raises(OAuthError) as refused:
        fetch_client_metadata(client_id)
    assert refused.value.error == "invalid_client"


def test_an_https_document_is_fetched_from_the_checked_address_naming_its_host(tmp_path):
    """An https document is fetched from the address checked (here 127.0.0.1, as ``localhost``
    resolves), naming the URL's host in TLS (SNI), its certificate checked: one signed by a CA
    the fetch does not trust is refused, with nothing fetched."""
    from tls_fixtures import Pki, start_tls

    from mcp_ref.workbench.demo_auth_server import OAuthError, fetch_client_metadata

    served_paths = []

    def documents(environ, start_response):
        served_paths.append(environ["PATH_INFO"])
        start_response("404 Not Found", [("Content-Length", "0")])
        return [b""]

    class Documents:
        def wsgi_app(self):
            return documents

    pki = Pki(tmp_path)
    served = start_tls(Documents(), pki.cert("localhost"))
    named = []
    served.context.sni_callback = lambda sock, name, context: named.append(name)
    try:
        with pytest.raises(OAuthError) as refused:
            fetch_client_metadata(f"https://localhost:{served.httpd.port}/client.json")
        assert refused.value.error == "invalid_client"
        assert refused.value.description == "the client metadata document could not be fetched"
        assert named == ["localhost"] and served_paths == []
    finally:
        served.stop()


@pytest.mark.parametrize(
    "sent", [None, "http://127.0.0.1:53683/callback"], ids=["left-out", "another"]
)
def test_the_token_request_must_repeat_the_authorization_requests_redirect_uri(auth_server, sent):
    """OAuth 2.1 (draft-ietf-oauth-v2-1) §4.1.3: redirect_uri is "REQUIRED, if the redirect_uri
    parameter was included in the authorization request", and the two "MUST be identical": a
    token request without it (or with another) gets 400 invalid_grant, no token, the code used up."""
    verifier = pkce.new_verifier()
    query = authorize(auth_server.url, verifier=verifier)
    form = {
        "grant_type": "authorization_code",
        "code": query["code"],
        "client_id": DEMO_CLIENT_ID,
        "code_verifier": verifier,
    }
    if sent is not None:
        form["redirect_uri"] = sent
    refused = token(auth_server.url, **form)
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
    assert "access_token" not in refused.json()
    assert "redirect_uri" in refused.json()["error_description"]


def test_a_redirect_uri_left_out_of_both_requests_is_the_registered_one(auth_server):
    """Left out of the authorization request, redirect_uri is the client's one registered URI;
    the token request may then leave it out too, or send that URI."""
    url = auth_server.url
    registered = requests.post(
        url + "/register",
        json={"redirect_uris": ["http://127.0.0.1:4000/cb"], "token_endpoint_auth_method": "none"},
        timeout=WAIT,
    ).json()
    for sent in (None, "http://127.0.0.1:4000/cb"):
        verifier = pkce.new_verifier()
        query = authorize(
            url,
            client_id=registered["client_id"],
            redirect_uri=None,
            verifier=verifier,
        )
        form = {
            "grant_type": "authorization_code",
            "code": query["code"],
            "client_id": registered["client_id"],
            "code_verifier": verifier,
        }
        if sent is not None:
            form["redirect_uri"] = sent
        answer = token(url, **form)
        assert answer.status_code == 200, answer.text
