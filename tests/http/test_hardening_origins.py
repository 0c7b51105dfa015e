"""Issue 20, class 1: a token, the caller's headers and the messages never leave the origin the user named.

Server A (the one the client was given) sends the client elsewhere: a redirect (301 ... 308) to
server B, or a 2024-11-05 ``endpoint`` event naming B.  B is a real server on another port that
records every request it receives (and, as a proxy would, serves the same MCP app, so that a
client that followed would work and never notice).  The client must refuse with
:class:`~mcp_ref.http.origins.CrossOriginRefused`, a message naming both origins; B must
have received nothing at all; and the client (or a new one) must go on working against A once A
behaves.  Same-origin redirects keep working.

Everything runs over real sockets on 127.0.0.1 (port 0).
"""

from __future__ import annotations

import json
import threading

import pytest
import requests
from conftest import WAIT

from mcp_ref import Client, Context, OAuth, Server
from mcp_ref.http.origins import CrossOriginRefused, is_loopback, origin_text, same_origin
from mcp_ref.http.sse import sse_event
from mcp_ref.http.wsgi_server import WsgiServer
from mcp_ref.oauth.browser import follow_redirect
from mcp_ref.oauth.resource import ProtectedResource
from mcp_ref.workbench.demo_auth_server import DemoAuthorizationServer

SECRET_HEADERS = {"Authorization": "Bearer user-secret-token", "X-Api-Key": "user-secret-key"}


class Httpd:
    """A WsgiServer serving ``app`` in a thread: ``url`` (http://127.0.0.1:PORT)."""

    def __init__(self, app):
        self.httpd = WsgiServer(("127.0.0.1", 0), app)
        self.url = self.httpd.url
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(WAIT)


class Recorder:
    """Server B: records (method, path, headers, body) of every request, then passes it to ``app``
    (the MCP app of A: a proxy in the middle), or answers 401 with a Bearer challenge."""

    def __init__(self, app=None):
        self.app = app
        self.requests: list[tuple[str, str, dict, bytes]] = []
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        import io

        headers = {
            k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")
        }
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        with self.lock:
            self.requests.append(
                (environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), headers, body)
            )
        if self.app is not None:
            return self.app({**environ, "wsgi.input": io.BytesIO(body)}, start_response)
        start_response(
            "401 Unauthorized",
            [
                ("Content-Type", "application/json"),
                ("WWW-Authenticate", 'Bearer error="invalid_token"'),
            ],
        )
        return [b'{"error": "unauthorized"}']

    def seen(self) -> list:
        with self.lock:
            return list(self.requests)


class Redirector:
    """Server A's front: while ``to`` is set, every request (any method) is answered ``status`` with
    ``Location: to``; otherwise it goes to ``app``.  Counts the redirects it sent."""

    def __init__(self, app):
        self.app, self.to, self.status, self.sent = app, None, 307, 0

    def __call__(self, environ, start_response):
        if self.to is None:
            return self.app(environ, start_response)
        self.sent += 1
        start_response(
            f"{self.status} Redirect",
            [
                ("Location", self.to),
                ("Content-Length", "0"),
                ("Set-Cookie", "a-session=cookie-secret; Path=/"),
            ],
        )
        return [b""]


def plain_server() -> Server:
    server = Server("origin-a")

    @server.tool
    def hello() -> str:
        """Says hello."""
        return "hello"

    return server


@pytest.fixture
def stop_after():
    servers: list[Httpd] = []
    yield servers.append
    for server in servers:
        server.stop()


def serve(app, stop_after) -> Httpd:
    httpd = Httpd(app)
    stop_after(httpd)
    return httpd


def assert_refused(exc: BaseException, a: str, b: str) -> None:
    """A clear refusal: CrossOriginRefused, one line, naming both origins, holding no secret."""
    assert isinstance(exc, CrossOriginRefused), f"{type(exc).__name__}: {exc}"
    message = str(exc)
    assert origin_text(a) in message and origin_text(b) in message, message
    assert "\n" not in message and "secret" not in message, message


# -- redirects, with the caller's headers (Client.http(headers=...), the command's --header) -------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_is_refused_and_b_sees_nothing(stop_after, status):
    """A's answer redirects to B: the request fails with CrossOriginRefused naming both origins; B
    received nothing (not the headers, not the body, not A's cookie); once A stops redirecting, the
    same client works again."""
    app = plain_server().wsgi_app()
    b = Recorder(app)  # a proxy to the very same app: following the redirect would "work"
    b_httpd = serve(b, stop_after)
    a = Redirector(app)
    a_httpd = serve(a, stop_after)
    with Client.http(a_httpd.url + "/mcp", headers=SECRET_HEADERS, timeout=WAIT) as client:
        assert client.call_tool("hello").content[0].text == "hello"
        a.to, a.status = b_httpd.url + "/mcp", status
        with pytest.raises(ConnectionError) as caught:
            client.call_tool("hello")
        assert_refused(caught.value, a_httpd.url, b_httpd.url)
        assert a.sent >= 1
        a.to = None
        assert client.call_tool("hello").content[0].text == "hello"
    assert b.seen() == []


def redirecting_pair(stop_after):
    """Server A, redirecting every request to server B, which records what it receives: ``(a,
    a_httpd, b, b_httpd)``.  B proxies the very same app, so a client that followed would "work"."""
    app = plain_server().wsgi_app()
    b = Recorder(app)
    b_httpd = serve(b, stop_after)
    a = Redirector(app)
    a.to = b_httpd.url + "/mcp"
    return a, serve(a, stop_after), b, b_httpd


def test_a_redirect_of_the_first_request_fails_the_connection_clearly(stop_after):
    """The very first request (discovery or initialize) is redirected: Client.http raises
    CrossOriginRefused; B saw nothing; a new client connects once A behaves."""
    a, a_httpd, b, b_httpd = redirecting_pair(stop_after)
    with pytest.raises(ConnectionError) as caught:
        Client.http(a_httpd.url + "/mcp", headers=SECRET_HEADERS, timeout=WAIT).close()
    assert_refused(caught.value, a_httpd.url, b_httpd.url)
    assert b.seen() == []
    a.to = None
    with Client.http(a_httpd.url + "/mcp", headers=SECRET_HEADERS, timeout=WAIT) as client:
        assert client.call_tool("hello").content[0].text == "hello"
    assert b.seen() == []


def test_a_redirect_to_the_same_host_name_spelled_otherwise_is_another_origin(stop_after):
    """``localhost`` and ``127.0.0.1`` are different origins (RFC 6454 compares the host as written)."""
    app = plain_server().wsgi_app()
    a = Redirector(app)
    a_httpd = serve(a, stop_after)
    with Client.http(a_httpd.url + "/mcp", headers=SECRET_HEADERS, timeout=WAIT) as client:
        a.to = f"http://localhost:{a_httpd.httpd.port}/mcp"
        with pytest.raises(ConnectionError) as caught:
            client.call_tool("hello")
        assert_refused(caught.value, a_httpd.url, a.to)
        a.to = None
        assert client.call_tool("hello").content[0].text == "hello"


def test_a_same_origin_redirect_is_followed_with_the_headers(stop_after):
    """The documented choice: a redirect within A's origin (/old to /mcp) is followed, headers and all."""
    seen = Recorder(plain_server().wsgi_app())

    def moved(environ, start_response):
        if environ["PATH_INFO"] == "/old":
            start_response(
                "308 Permanent Redirect", [("Location", "/mcp"), ("Content-Length", "0")]
            )
            return [b""]
        return seen(environ, start_response)

    a_httpd = serve(moved, stop_after)
    with Client.http(a_httpd.url + "/old", headers=SECRET_HEADERS, timeout=WAIT) as client:
        assert client.call_tool("hello").content[0].text == "hello"
    posts = [headers for method, path, headers, _ in seen.seen() if method == "POST"]
    assert posts and all(h.get("x-api-key") == "user-secret-key" for h in posts)


# -- redirects, with an OAuth token ---------------------------------------------------------------------


@pytest.fixture
def protected(stop_after):
    """A protected MCP server behind a Redirector (A), the demo authorization server, and B (401 + record)."""
    authorization = DemoAuthorizationServer(token_lifetime=3600)
    as_httpd = serve(authorization, stop_after)
    server = Server("protected")

    @server.tool
    def whoami(ctx: Context) -> str:
        """Who is calling."""
        return ctx.auth.client_id

    resource = ProtectedResource(authorization.token_verifier(), [as_httpd.url])
    a = Redirector(server.wsgi_app(auth=resource))
    a_httpd = serve(a, stop_after)
    b = Recorder()
    b_httpd = serve(b, stop_after)
    return a, a_httpd, b, b_httpd


def test_a_token_never_follows_a_redirect_to_another_origin(protected):
    """The issue's case: A answers 307 to B, B answers 401.  Before the fix, OAuth's response hook
    rode along onto the redirected request and sent A's token to B.  Now nothing reaches B, the call
    fails with CrossOriginRefused, and the same client keeps working against A."""
    a, a_httpd, b, b_httpd = protected
    auth = OAuth(authorize=follow_redirect, timeout=WAIT)
    with Client.http(
        a_httpd.url + "/mcp", auth=auth, headers={"X-Api-Key": "user-secret-key"}, timeout=WAIT
    ) as client:
        assert client.call_tool("whoami").content[0].text
        token = auth._tokens["access_token"]
        a.to = b_httpd.url + "/mcp"
        with pytest.raises(Exception) as caught:  # its type is asserted below, after the leak check
            client.call_tool("whoami")
        assert not [headers for _, _, headers, _ in b.seen() if token in str(headers)], (
            "the token reached B"
        )
        assert b.seen() == []
        assert_refused(caught.value, a_httpd.url, b_httpd.url)
        assert token not in str(caught.value)
        a.to = None
        assert client.call_tool("whoami").content[0].text
    assert b.seen() == []


def test_the_oauth_hook_on_a_plain_requests_session_refuses_too(protected):
    """``session.auth = OAuth()`` on any requests.Session (no mcp_ref transport around it): a redirect
    from the MCP server to another origin raises CrossOriginRefused instead of being followed."""
    a, a_httpd, b, b_httpd = protected
    auth = OAuth(authorize=follow_redirect, timeout=WAIT)
    with Client.http(a_httpd.url + "/mcp", auth=auth, timeout=WAIT) as client:
        client.list_tools()
    session = requests.Session()
    session.auth = auth
    a.to = b_httpd.url + "/mcp"
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    with pytest.raises(CrossOriginRefused) as caught:
        session.post(
            a_httpd.url + "/mcp", json=ping, headers={"X-Api-Key": "user-secret-key"}, timeout=WAIT
        )
    assert_refused(caught.value, a_httpd.url, b_httpd.url)
    assert b.seen() == []
    a.to = None
    assert session.post(a_httpd.url + "/mcp", json=ping, timeout=WAIT).status_code in (
        200,
        400,
    )  # A answers again


def test_the_token_is_never_applied_off_its_resources_origin(protected):
    """Defense in depth below the hooks: ``_apply`` refuses to put the token on a request to another
    origin than the resource it was issued for (RFC 8707), whoever asks."""
    _, a_httpd, b, b_httpd = protected
    auth = OAuth(authorize=follow_redirect, timeout=WAIT)
    with Client.http(a_httpd.url + "/mcp", auth=auth, timeout=WAIT) as client:
        client.list_tools()
    request = requests.Request("POST", b_httpd.url + "/mcp").prepare()
    with pytest.raises(CrossOriginRefused):
        auth._apply(request, auth._tokens)
    assert "Authorization" not in request.headers
    assert (
        requests.post(b_httpd.url + "/mcp", auth=auth, timeout=WAIT).status_code == 401
    )  # sent bare
    assert not any("authorization" in headers for _, _, headers, _ in b.seen())


# -- the 2024-11-05 HTTP+SSE endpoint event ------------------------------------------------------------


class EndpointRewriter:
    """Server A's front for HTTP+SSE: while ``rewrite`` is set, the ``endpoint`` event's data (the
    server's own ``/messages?session_id=...``) is replaced by ``rewrite(data)``."""

    def __init__(self, app):
        self.app, self.rewrite = app, None

    def __call__(self, environ, start_response):
        body = self.app(environ, start_response)
        if self.rewrite is None or environ["PATH_INFO"] != "/sse":
            return body
        return self._rewritten(body, self.rewrite)

    @staticmethod
    def _rewritten(body, rewrite):
        try:
            for chunk in body:
                if chunk.startswith(b"event: endpoint"):
                    data = chunk.split(b"data: ", 1)[1].strip().decode()
                    chunk = sse_event(rewrite(data).encode(), event="endpoint")
                yield chunk
        finally:
            close = getattr(body, "close", None)
            if close is not None:
                close()


def legacy_pair(stop_after):
    app = plain_server().wsgi_app()
    b = Recorder(app)  # B forwards to the same app: the session exists there too
    b_httpd = serve(b, stop_after)
    a = EndpointRewriter(app)
    a_httpd = serve(a, stop_after)
    return a, a_httpd, b, b_httpd


@pytest.mark.parametrize(
    "form", ["absolute", "scheme-relative", "other-host-name", "https", "javascript"]
)
def test_an_endpoint_event_naming_another_origin_is_refused(stop_after, form):
    """The ``endpoint`` event names B (however spelled): refused before any POST, with the origins named;
    B saw nothing; a new client connects once A names its own endpoint."""
    a, a_httpd, b, b_httpd = legacy_pair(stop_after)
    port_a, port_b = a_httpd.httpd.port, b_httpd.httpd.port
    a.rewrite = {
        "absolute": lambda data: f"http://127.0.0.1:{port_b}{data}",
        "scheme-relative": lambda data: f"//127.0.0.1:{port_b}{data}",
        "other-host-name": lambda data: f"http://localhost:{port_a}{data}",
        "https": lambda data: f"https://127.0.0.1:{port_a}{data}",
        "javascript": lambda data: "javascript:alert(1)",
    }[form]
    with pytest.raises(ConnectionError) as caught:
        Client.http(
            a_httpd.url + "/sse", transport="sse", headers=SECRET_HEADERS, timeout=WAIT
        ).close()
    assert isinstance(caught.value, CrossOriginRefused), caught.value
    assert origin_text(a_httpd.url) in str(caught.value) and "endpoint" in str(caught.value)
    assert b.seen() == []
    a.rewrite = None
    with Client.http(
        a_httpd.url + "/sse", transport="sse", headers=SECRET_HEADERS, timeout=WAIT
    ) as client:
        assert client.call_tool("hello").content[0].text == "hello"
    assert b.seen() == []


@pytest.mark.parametrize("transport", ["sse", "auto"])
def test_an_endpoint_event_with_user_credentials_is_refused(stop_after, transport):
    """Same origin, but ``user:password@`` in the endpoint (requests would turn it into Basic auth):
    refused with HttpTransportError, as ``start_legacy`` says, through the fallback (``"auto"``)
    too: there it was a JSON-RPC error (McpError -32603) made of the refusal's text."""
    from mcp_ref import McpError
    from mcp_ref.http.client import HttpTransportError

    a, a_httpd, b, _ = legacy_pair(stop_after)
    a.rewrite = lambda data: f"http://mallory:pw@127.0.0.1:{a_httpd.httpd.port}{data}"
    with pytest.raises(ConnectionError, match="credentials") as caught:
        Client.http(a_httpd.url + "/sse", transport=transport, timeout=WAIT).close()
    assert type(caught.value) is HttpTransportError and not isinstance(caught.value, McpError)
    assert "mallory" not in str(caught.value) and "pw@" not in str(caught.value)
    a.rewrite = None
    with Client.http(a_httpd.url + "/sse", transport=transport, timeout=WAIT) as client:
        assert client.session.transport.mode == "sse"
        assert client.call_tool("hello").content[0].text == "hello"
    assert b.seen() == []


def test_the_fallback_to_http_sse_checks_the_endpoint_too(stop_after):
    """``transport="auto"``: a 4xx to the initialize POST falls back to HTTP+SSE at the same URL; its
    endpoint event naming B is refused the same way."""
    server = plain_server()
    legacy_only = server.wsgi_app(path="/unused")  # /sse answers; a POST to /sse does not
    b = Recorder(legacy_only)
    b_httpd = serve(b, stop_after)
    a = EndpointRewriter(legacy_only)
    a.rewrite = lambda data: f"http://127.0.0.1:{b_httpd.httpd.port}{data}"
    a_httpd = serve(a, stop_after)
    with pytest.raises(ConnectionError) as caught:
        Client.http(a_httpd.url + "/sse", headers=SECRET_HEADERS, timeout=WAIT).close()
    assert isinstance(caught.value, CrossOriginRefused), caught.value
    assert b.seen() == []


# -- the command: --header goes through the same client ------------------------------------------------


@pytest.mark.slow
def test_the_command_refuses_a_redirect_with_its_header(stop_after, tmp_path):
    """``mcp-ref tools URL --header 'Authorization: ...'``: the command uses Client.http, so its header
    never reaches B; it exits with an error naming both origins."""
    import os
    import subprocess
    import sys

    a, a_httpd, b, b_httpd = redirecting_pair(stop_after)
    environment = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), BROWSER="false")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mcp_ref",
            "--timeout",
            str(WAIT),
            "tools",
            a_httpd.url + "/mcp",
            "--header",
            "Authorization: Bearer cli-secret",
            "--header",
            "X-Api-Key: cli-secret-key",
        ],
        capture_output=True,
        text=True,
        timeout=WAIT * 3,
        env=environment,
        check=False,
    )
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert origin_text(a_httpd.url) in proc.stderr and origin_text(b_httpd.url) in proc.stderr, (
        proc.stderr
    )
    assert "cli-secret" not in proc.stderr
    assert b.seen() == []


# -- the helpers ------------------------------------------------------------------------------------------


def test_origins_compare_scheme_host_and_effective_port():
    assert same_origin("https://a.example/x", "https://A.example:443/y")
    assert same_origin("http://127.0.0.1:8000/mcp", "http://127.0.0.1:8000/messages?s=1")
    assert not same_origin("http://a.example/", "https://a.example/")
    assert not same_origin("http://127.0.0.1:1/", "http://127.0.0.1:2/")
    assert not same_origin("http://127.0.0.1:1/", "http://localhost:1/")
    assert not same_origin(
        "http://a.example:99999/", "http://a.example:99999/x"
    )  # an unreadable port matches nothing
    assert origin_text("http://user:pw@[::1]:8080/p?q#f") == "http://[::1]:8080"
    assert [is_loopback(h) for h in ("localhost", "127.0.0.1", "127.9.9.9", "::1", "[::1]")] == [
        True
    ] * 5
    assert not any(
        is_loopback(h) for h in ("example.com", "10.0.0.1", "127.0.0.1.nip.io", "", None)
    )


def test_a_refusal_is_a_connection_error_with_a_one_line_message():
    exc = CrossOriginRefused(
        "a redirect", "http://127.0.0.1:1/mcp?token=x", "http://evil.example/steal?token=y"
    )
    assert isinstance(exc, ConnectionError)
    assert str(exc).startswith(
        "refused a redirect from http://127.0.0.1:1 to another origin, http://evil.example"
    )
    assert "token=" not in str(exc) and json.dumps(str(exc))  # no path or query of either URL


def test_token_introspection_reads_a_bounded_answer(stop_after):
    """An introspection answer is read within 64 KiB (a longer one is a failed introspection, its
    connection closed unread), and an ``aud`` of the wrong type means no audience, not a crash."""
    from mcp_ref.oauth.resource import MAX_INTROSPECTION_BYTES, IntrospectionVerifier

    answers = {"pieces": 0, "aud": 7}
    written = []
    ended = threading.Event()

    def introspection(environ, start_response):
        body = json.dumps(
            {"active": True, "client_id": "c", "sub": "ada", "aud": answers["aud"]}
        ).encode()
        start_response("200 OK", [("Content-Type", "application/json")])
        try:
            yield body[:-1]
            for _ in range(answers["pieces"]):  # spaces inside the object: still valid JSON
                written.append(MAX_INTROSPECTION_BYTES)
                yield b" " * MAX_INTROSPECTION_BYTES
            yield b"}"
        finally:
            ended.set()

    httpd = serve(introspection, stop_after)
    verifier = IntrospectionVerifier(httpd.url + "/introspect", "rs", "rs-secret", timeout=WAIT)
    access = verifier.verify("the-token")
    assert access is not None and access.subject == "ada" and access.audience == ()
    answers["aud"] = ["https://mcp.example", 3]
    assert verifier.verify("the-token").audience == ("https://mcp.example",)
    ended.clear()
    answers["pieces"] = 1024  # 64 MiB of spaces: too long
    assert verifier.verify("the-token") is None
    assert ended.wait(WAIT)  # the server gave up writing: the verifier hung up, unread
    assert sum(written) < 512 * MAX_INTROSPECTION_BYTES


def test_token_introspection_follows_no_redirect(stop_after):
    """``IntrospectionVerifier`` (RFC 7662) posts the caller's token to the authorization server: an
    introspection endpoint that redirects (307 keeps the body) must not carry the token anywhere."""
    from mcp_ref.oauth.resource import IntrospectionVerifier

    def introspection(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/json")])
        return [
            json.dumps({"active": True, "client_id": "c", "sub": "ada", "scope": "read"}).encode()
        ]

    b = Recorder(introspection)
    b_httpd = serve(b, stop_after)
    a = Redirector(introspection)
    a_httpd = serve(a, stop_after)
    verifier = IntrospectionVerifier(a_httpd.url + "/introspect", "rs", "rs-secret", timeout=WAIT)
    assert verifier.verify("the-token").subject == "ada"  # A answers: the token is active
    for to in (
        b_httpd.url + "/introspect",
        a_httpd.url + "/elsewhere",
    ):  # another origin, or A's own
        a.to = to
        assert verifier.verify("the-token") is None  # a redirect is a failed introspection
    assert b.seen() == []
    a.to = None
    assert verifier.verify("the-token").subject == "ada"
