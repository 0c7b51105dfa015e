"""Issue 9 §2: an mcp_ref server as an OAuth protected resource, over real HTTP, with real tokens from the
demo authorization server and forged ones."""

from __future__ import annotations

import threading
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from conftest import WAIT

from mcp_ref import Client, Context, OAuth, Server
from mcp_ref.http.wsgi_server import WsgiServer
from mcp_ref.oauth import pkce
from mcp_ref.oauth.browser import follow_redirect
from mcp_ref.oauth.resource import ENDPOINT_PATH, ProtectedResource
from mcp_ref.workbench.demo_auth_server import DEMO_CLIENT_ID, DemoAuthorizationServer

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


def serve(app):
    httpd = WsgiServer(("127.0.0.1", 0), app)
    threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    return httpd


@pytest.fixture
def deployment():
    """An authorization server, and a protected MCP server that trusts it: (as_url, mcp_url, authorization server)."""
    authorization = DemoAuthorizationServer()
    as_httpd = serve(authorization)
    server = Server("protected")

    @server.tool
    def whoami(ctx: Context) -> str:
        """Who is calling, as the token says."""
        return f"{ctx.auth.client_id} {ctx.auth.subject} {' '.join(ctx.auth.scopes)}"

    resource = ProtectedResource(
        authorization.token_verifier(), [as_httpd.url], scopes_supported=["mcp:tools", "mcp:admin"]
    )
    mcp_httpd = serve(server.wsgi_app(auth=resource))
    yield as_httpd.url, mcp_httpd.url + "/mcp", authorization, resource
    for httpd in (as_httpd, mcp_httpd):
        httpd.shutdown()
        httpd.server_close()


def get_token(
    as_url: str, resource: str, *, client_id: str = DEMO_CLIENT_ID, scope: str = "mcp:tools"
) -> str:
    """The authorization-code flow with PKCE, as a client would run it: an access token for ``resource``."""
    verifier = pkce.new_verifier()
    redirect = "http://127.0.0.1:5555/callback"
    answer = requests.get(
        as_url + "/authorize",
        allow_redirects=False,
        timeout=WAIT,
        params={
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect,
            "code_challenge": pkce.challenge(verifier),
            "code_challenge_method": "S256",
            "resource": resource,
            "scope": scope,
            "state": "x",
        },
    )
    code = parse_qs(urlsplit(answer.headers["Location"]).query)["code"][0]
    tokens = requests.post(
        as_url + "/token",
        timeout=WAIT,
        data={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": client_id,
            "redirect_uri": redirect,
            "code_verifier": verifier,
            "resource": resource,
        },
    ).json()
    return tokens["access_token"]


def bearer(token: str):
    def add(request):
        request.headers["Authorization"] = f"Bearer {token}"
        return request

    return add


def test_the_protected_resource_metadata_names_the_authorization_server(deployment):
    as_url, mcp_url, _, _ = deployment
    origin = mcp_url.rsplit("/", 1)[0]
    for path in (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ):
        meta = requests.get(origin + path, timeout=WAIT).json()
        assert meta["resource"] == mcp_url and meta["authorization_servers"] == [as_url]


def test_no_token_is_401_with_where_to_look(deployment):
    _, mcp_url, _, _ = deployment
    answer = requests.post(mcp_url, json=INIT, headers=ACCEPT, timeout=WAIT)
    assert answer.status_code == 401
    challenge = answer.headers["WWW-Authenticate"]
    origin = mcp_url.rsplit("/", 1)[0]
    assert (
        challenge.startswith("Bearer ")
        and f'resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp"' in challenge
    )
    assert (
        requests.get(origin + "/sse", timeout=WAIT, stream=True).status_code == 401
    )  # both transports


@pytest.mark.parametrize("kind", ["forged", "another resource"])
def test_a_forged_token_or_one_for_another_resource_is_invalid(deployment, kind):
    as_url, mcp_url, _, _ = deployment
    token = (
        "forged-token" if kind == "forged" else get_token(as_url, "http://127.0.0.1:1/other/mcp")
    )
    answer = requests.post(
        mcp_url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {token}"}, timeout=WAIT
    )
    assert (
        answer.status_code == 401 and 'error="invalid_token"' in answer.headers["WWW-Authenticate"]
    )
    assert token not in answer.text and token not in answer.headers["WWW-Authenticate"]


@pytest.mark.parametrize("host_name", ["127.0.0.1", "localhost"])
def test_a_token_for_a_neighbour_on_another_port_is_refused_whatever_the_host_header_says(
    deployment, host_name
):
    """Two protected servers on one machine (ports A and B) trust one authorization server, neither
    configured with ``resource=``.  B's token, replayed to A with ``Host`` naming B's port, is
    still B's: 2025-11-25 basic/authorization §Token Handling (the audience is checked against the
    port A listens on, never the one a Host header names)."""
    as_url, mcp_url, authorization, _ = deployment
    neighbour = Server("neighbour")
    neighbour_httpd = serve(
        neighbour.wsgi_app(auth=ProtectedResource(authorization.token_verifier(), [as_url]))
    )
    try:
        neighbour_port = neighbour_httpd.server_address[1]
        token = get_token(as_url, f"http://{host_name}:{neighbour_port}/mcp")
        replayed = requests.post(
            mcp_url,
            json=INIT,
            headers={
                **ACCEPT,
                "Authorization": f"Bearer {token}",
                "Host": f"{host_name}:{neighbour_port}",
            },
            timeout=WAIT,
        )
        assert replayed.status_code == 401
        assert 'error="invalid_token"' in replayed.headers["WWW-Authenticate"]
        # the metadata, asked the same way, names the server's own port: a client told another
        # port on the way (a proxy, a port mapping) learns which URL this server answers for
        origin = mcp_url.rsplit("/", 1)[0]
        metadata = requests.get(
            origin + "/.well-known/oauth-protected-resource/mcp",
            headers={"Host": f"{host_name}:{neighbour_port}"},
            timeout=WAIT,
        ).json()
        own_port = urlsplit(mcp_url).port
        assert metadata["resource"] == f"http://{host_name}:{own_port}/mcp"
        # and the neighbour's token still opens the neighbour
        with Client.http(
            f"http://{host_name}:{neighbour_port}/mcp", auth=bearer(token), timeout=WAIT
        ) as client:
            client.ping()  # raises if refused
    finally:
        neighbour_httpd.shutdown()
        neighbour_httpd.server_close()


def test_a_real_token_opens_the_server_and_handlers_see_who_calls(deployment):
    as_url, mcp_url, _, _ = deployment
    token = get_token(as_url, mcp_url)
    with Client.http(mcp_url, auth=bearer(token), timeout=WAIT) as client:
        assert client.call_tool("whoami").content[0].text == f"{DEMO_CLIENT_ID} demo-user mcp:tools"


def test_a_required_scope_missing_is_403_insufficient_scope(deployment):
    as_url, mcp_url, _, resource = deployment
    resource.required_scopes = ("mcp:admin",)
    token = get_token(as_url, mcp_url, scope="mcp:tools")
    answer = requests.post(
        mcp_url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {token}"}, timeout=WAIT
    )
    assert answer.status_code == 403
    challenge = answer.headers["WWW-Authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="mcp:admin"' in challenge


def test_a_session_belongs_to_the_principal_that_created_it(deployment):
    as_url, mcp_url, authorization, _ = deployment
    mine = get_token(as_url, mcp_url)
    other_client = authorization.register(
        {"redirect_uris": ["http://127.0.0.1/callback"], "token_endpoint_auth_method": "none"}
    )
    theirs = get_token(as_url, mcp_url, client_id=other_client["client_id"])
    created = requests.post(
        mcp_url, json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {mine}"}, timeout=WAIT
    )
    session = created.headers["Mcp-Session-Id"]
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    headers = {**ACCEPT, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    stolen = requests.post(
        mcp_url, json=ping, headers={**headers, "Authorization": f"Bearer {theirs}"}, timeout=WAIT
    )
    assert stolen.status_code == 404  # as if it did not exist
    again = requests.post(
        mcp_url, json=ping, headers={**headers, "Authorization": f"Bearer {mine}"}, timeout=WAIT
    )
    assert again.status_code == 200


def test_scoped_tools_resources_and_prompts_ask_for_a_step_up(deployment):
    as_url, mcp_url, authorization, resource = deployment
    server = Server("scoped")

    @server.tool(scopes=["mcp:admin"])
    def reset() -> str:
        """Needs admin."""
        return "reset"

    @server.tool
    def hello() -> str:
        """Anyone."""
        return "hello"

    @server.resource("secret://plan", scopes=["mcp:admin"])
    def plan() -> str:
        return "the plan"

    @server.prompt(scopes=["mcp:admin"])
    def confess() -> str:
        return "tell all"

    scoped = serve(
        server.wsgi_app(auth=ProtectedResource(authorization.token_verifier(), [as_url]))
    )
    url = scoped.url + "/mcp"
    try:
        basic = get_token(as_url, url, scope="mcp:tools")
        with Client.http(url, auth=bearer(basic), timeout=WAIT) as client:
            assert client.call_tool("hello").content[0].text == "hello"  # no scope needed
            for attempt in (
                lambda: client.call_tool("reset"),
                lambda: client.read_resource("secret://plan"),
                lambda: client.get_prompt("confess"),
            ):
                with pytest.raises(Exception) as refused:
                    attempt()
                assert "403" in str(refused.value) and "mcp:admin" in str(refused.value)
        headers = {**ACCEPT, "Authorization": f"Bearer {basic}"}
        session = requests.post(url, json=INIT, headers=headers, timeout=WAIT).headers[
            "Mcp-Session-Id"
        ]
        raw = requests.post(
            url,
            timeout=WAIT,
            json={"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "reset"}},
            headers={**headers, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"},
        )
        assert (
            raw.status_code == 403
        )  # refused before the tool runs: the client can step up and retry
        challenge = raw.headers["WWW-Authenticate"]
        assert 'error="insufficient_scope"' in challenge and 'scope="mcp:admin"' in challenge
        admin = get_token(as_url, url, scope="mcp:tools mcp:admin")
        with Client.http(url, auth=bearer(admin), timeout=WAIT) as client:
            assert client.call_tool("reset").content[0].text == "reset"
            assert client.read_resource("secret://plan").contents[0].text == "the plan"
    finally:
        scoped.shutdown()
        scoped.server_close()


@pytest.mark.slow
def test_serve_demo_auth_serves_a_protected_demo_and_its_authorization_server_on_one_port():
    import queue
    import subprocess
    import sys

    from http_fixtures import free_port

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_ref", "serve-demo", "--http", f"127.0.0.1:{port}", "--auth"],
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()
    try:
        assert "as an OAuth protected resource" in lines.get(timeout=WAIT)
        origin = f"http://127.0.0.1:{port}"
        meta = requests.get(
            origin + "/.well-known/oauth-protected-resource/mcp", timeout=WAIT
        ).json()
        assert meta["authorization_servers"] == [origin] and meta["resource"] == origin + "/mcp"
        assert (
            requests.get(origin + "/.well-known/oauth-authorization-server", timeout=WAIT).json()[
                "issuer"
            ]
            == origin
        )
        assert (
            requests.post(origin + "/mcp", json=INIT, headers=ACCEPT, timeout=WAIT).status_code
            == 401
        )
        token = get_token(origin, origin + "/mcp")
        with Client.http(origin + "/mcp", auth=bearer(token), timeout=WAIT) as client:
            assert client.call_tool("echo", {"text": "authorized"}).content[0].text == "authorized"
    finally:
        proc.terminate()
        proc.wait(WAIT)


@pytest.mark.slow
def test_serve_demo_auth_names_the_resource_mcp_ref_resource_gives():
    """Behind a proxy or a port mapping the URL clients reach is not the server's own:
    ``MCP_REF_RESOURCE`` names it, as for the demo's ``protected_wsgi_app``; the metadata says it."""
    import os
    import queue
    import subprocess
    import sys

    from http_fixtures import free_port

    port = free_port()
    reached = "http://127.0.0.1:9/mcp"  # the mapped URL (nothing needs to listen there)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_ref", "serve-demo", "--http", f"127.0.0.1:{port}", "--auth"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "MCP_REF_RESOURCE": reached},
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()
    try:
        assert "as an OAuth protected resource" in lines.get(timeout=WAIT)
        origin = f"http://127.0.0.1:{port}"
        meta = requests.get(origin + "/.well-known/oauth-protected-resource/mcp", timeout=WAIT)
        assert meta.json()["resource"] == reached
    finally:
        proc.terminate()
        proc.wait(WAIT)


@pytest.fixture
def configured():
    """A protected server given ``resource=`` (the URL clients reach, as deploying says), serving
    both transports: (as_url, its origin, authorization server)."""
    authorization = DemoAuthorizationServer()
    as_httpd = serve(authorization)
    server = Server("protected")

    @server.tool
    def hello() -> str:
        """Says hi."""
        return "hi"

    apps = []
    mcp_httpd = serve(lambda environ, start_response: apps[0](environ, start_response))
    resource = ProtectedResource(
        authorization.token_verifier(), [as_httpd.url], resource=mcp_httpd.url + "/mcp"
    )
    apps.append(server.wsgi_app(auth=resource))
    yield as_httpd.url, mcp_httpd.url, authorization
    for httpd in (as_httpd, mcp_httpd):
        httpd.shutdown()
        httpd.server_close()


def test_with_resource_configured_the_sse_endpoint_is_a_resource_of_its_own(configured):
    """RFC 9728 §3.3: the metadata at ``/.well-known/oauth-protected-resource/sse`` names the
    resource the client asked about, ``.../sse`` (it named ``.../mcp``, which a client "MUST NOT"
    use, whenever ``resource=`` was given), and the 401 at ``/sse`` points there."""
    as_url, origin, _ = configured
    for path, resource in (("/sse", "/sse"), ("/mcp", "/mcp"), ("", "/mcp")):
        meta = requests.get(
            f"{origin}/.well-known/oauth-protected-resource{path}", timeout=WAIT
        ).json()
        assert meta["resource"] == origin + resource and meta["authorization_servers"] == [as_url]
    refused = requests.get(origin + "/sse", timeout=WAIT, stream=True)
    refused.close()
    assert refused.status_code == 401
    expected = f'resource_metadata="{origin}/.well-known/oauth-protected-resource/sse"'
    assert expected in refused.headers["WWW-Authenticate"]


def test_with_resource_configured_an_sse_client_logs_in(configured):
    """The client of the 2024-11-05 transport finds metadata for its URL and logs in."""
    _, origin, _ = configured
    with Client.http(
        origin + "/sse", transport="sse", auth=OAuth(authorize=follow_redirect), timeout=WAIT
    ) as client:
        assert client.call_tool("hello", {}).content[0].text == "hi"


def test_a_token_for_one_endpoint_is_refused_at_the_other(configured):
    """2025-11-25 §Token Handling: servers "MUST validate that access tokens were issued
    specifically for them": a token for ``.../mcp`` is refused at ``.../sse``, and one for
    ``.../sse`` at ``.../mcp``; each is taken where it was issued for."""
    as_url, origin, _ = configured
    for_mcp, for_sse = get_token(as_url, origin + "/mcp"), get_token(as_url, origin + "/sse")

    def sse_status(token: str) -> int:
        answer = requests.get(
            origin + "/sse", headers={"Authorization": f"Bearer {token}"}, timeout=WAIT, stream=True
        )
        answer.close()
        return answer.status_code

    def mcp_status(token: str) -> int:
        return requests.post(
            origin + "/mcp",
            json=INIT,
            headers={**ACCEPT, "Authorization": f"Bearer {token}"},
            timeout=WAIT,
        ).status_code

    assert sse_status(for_mcp) == 401 and mcp_status(for_sse) == 401
    assert sse_status(for_sse) == 200 and mcp_status(for_mcp) == 200


def test_the_sse_resource_keeps_the_prefix_a_reverse_proxy_adds():
    """Behind a proxy that serves the application under a prefix, ``resource=`` names the
    Streamable HTTP endpoint with it: the HTTP+SSE endpoint keeps the origin and the prefix."""
    resource = ProtectedResource(
        lambda token: None, ["https://auth.example.com"], resource="https://x.example/tools/mcp"
    )
    environ = {
        "wsgi.url_scheme": "http",
        "HTTP_HOST": "127.0.0.1:8000",
        "SERVER_PORT": "8000",
        ENDPOINT_PATH: "/mcp",  # what the application puts there
    }
    assert resource.metadata(environ, "/sse")["resource"] == "https://x.example/tools/sse"
    assert resource.metadata(environ, "/mcp")["resource"] == "https://x.example/tools/mcp"
    assert (
        resource.metadata_url(environ, "/sse")
        == "https://x.example/.well-known/oauth-protected-resource/tools/sse"
    )
