"""Issue 23 items 3 and 6: errors keep their message, and the client's errors say what to do.

Item 3 — a handler's own words reach the client: ``ResourceError`` (or ``ToolError``) raised in a
resource, ``PromptError`` (or ``ToolError``) in a prompt, is a JSON-RPC error -32603 with that
message (2025-11-25 server/resources and server/prompts §Error Handling: "Internal errors:
-32603"), in both eras; any other exception is a bare "Internal error", its traceback on the
server's stderr only (checked over real stdio, the wire read as the client received it).

Item 6 — ``Client.http`` at the wrong URL (no ``/mcp``, a trailing slash, another path) or at a
protected server without ``auth=`` raises an error that says what to do, in every era, against a
real server on 127.0.0.1 (port 0).
"""

from __future__ import annotations

import logging
import re
import sys
import textwrap
import threading

import pytest
import requests
from conftest import WAIT
from http_fixtures import InThread, serve  # noqa: F401 - fixture

from mcp_ref import (
    Client,
    InternalError,
    McpError,
    PromptError,
    ResourceError,
    ResourceNotFound,
    Server,
    ServerUnreachable,
    ToolError,
)

ERAS = ["handshake", "modern"]


def exactly(message: str, code: int = -32603) -> str:
    """A ``pytest.raises(match=)`` pattern for an McpError whose message is ``message`` and nothing more."""
    return f"^{re.escape(message)} \\(code {code}\\)$"


SECRET = "secret-detail-5c1e"


def feature_server() -> Server:
    """Resources and prompts that fail in each way a handler can."""
    server = Server("errors")

    @server.resource("note://refused")
    def refused() -> str:
        raise ResourceError("the archive is offline until 6 pm")

    @server.resource("note://tool-error")
    def tool_error() -> str:
        raise ToolError("a ToolError in a resource keeps its message")

    @server.resource("note://{name}")
    def note(name: str) -> str:
        if name == "gone":
            raise ResourceNotFound(
                f"Resource not found: note://{name}", data={"uri": f"note://{name}"}
            )
        raise ResourceError(f"no note may be called {name}")

    @server.resource("note://crash")
    def crash() -> str:
        raise RuntimeError(f"{SECRET} at /srv/private/db")

    @server.prompt
    def greet(who: str) -> str:
        """Greet someone (not the boss)."""
        if who == "boss":
            raise PromptError("this prompt cannot greet the boss")
        if who == "tool":
            raise ToolError("a ToolError in a prompt keeps its message")
        if who == "crash":
            raise KeyError(SECRET)
        return f"Hello {who}"

    @server.tool
    def lookup(key: str) -> str:
        """A tool that raises ResourceError: a ToolError like any other (an isError result)."""
        raise ResourceError(f"no record {key}")

    return server


@pytest.fixture(params=ERAS)
def client(request):
    with Client.in_memory(feature_server(), era=request.param) as client:
        assert client.era == request.param
        yield client


def test_resource_error_reaches_the_client_with_its_message(client):
    with pytest.raises(InternalError) as caught:
        client.read_resource("note://refused")
    assert caught.value.code == -32603
    assert caught.value.message == "the archive is offline until 6 pm"
    assert caught.value.data == {"uri": "note://refused"}
    with pytest.raises(InternalError, match=exactly("a ToolError in a resource keeps its message")):
        client.read_resource("note://tool-error")
    with pytest.raises(
        InternalError, match=exactly("no note may be called x")
    ):  # a template's handler too
        client.read_resource("note://x")


def test_resource_not_found_raised_by_a_handler_keeps_the_eras_code(client):
    with pytest.raises(McpError) as caught:
        client.read_resource("note://gone")
    # -32002 in the handshake era; 2026-07-28 changelog: "from -32002 to -32602".
    assert caught.value.code == (-32002 if client.era == "handshake" else -32602)
    assert caught.value.message == "Resource not found: note://gone"


def test_prompt_error_reaches_the_client_with_its_message(client):
    assert client.get_prompt("greet", {"who": "Ada"}).messages[0].content.text == "Hello Ada"
    with pytest.raises(InternalError) as caught:
        client.get_prompt("greet", {"who": "boss"})
    assert (caught.value.code, caught.value.message) == (
        -32603,
        "this prompt cannot greet the boss",
    )
    with pytest.raises(InternalError, match=exactly("a ToolError in a prompt keeps its message")):
        client.get_prompt("greet", {"who": "tool"})


def test_other_exceptions_stay_a_bare_internal_error(client, caplog):
    caplog.set_level(logging.ERROR)
    for call in (
        lambda: client.read_resource("note://crash"),
        lambda: client.get_prompt("greet", {"who": "crash"}),
    ):
        with pytest.raises(InternalError) as caught:
            call()
        assert caught.value.message == "Internal error" and caught.value.data is None
    logged = "\n".join(
        record.getMessage() + "\n" + (record.exc_text or "") for record in caplog.records
    )
    assert SECRET in logged and "Traceback" in logged  # the details are in the server's log


def test_a_resource_error_in_a_tool_is_an_is_error_result(client):
    result = client.call_tool("lookup", {"key": "k1"})
    assert result.is_error is True and result.text == "no record k1"


def test_the_errors_are_exported_where_tool_error_is():
    import mcp_ref.server as server_package

    assert (
        server_package.ResourceError is ResourceError and server_package.PromptError is PromptError
    )
    assert issubclass(ResourceError, ToolError) and issubclass(PromptError, ToolError)


STDIO_SERVER = """
from mcp_ref import ResourceError, Server

server = Server("stdio-errors")

@server.resource("note://refused")
def refused() -> str:
    raise ResourceError("the archive is offline until 6 pm")

@server.resource("note://crash")
def crash() -> str:
    raise RuntimeError("SECRET at /srv/private/db")

server.run()
"""


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
def test_over_stdio_the_message_travels_and_the_traceback_stays_on_stderr(tmp_path, era):
    script = tmp_path / "server.py"
    script.write_text(textwrap.dedent(STDIO_SERVER).replace("SECRET", SECRET))
    received: list = []
    stderr_lines: list[str] = []
    crashed = threading.Event()

    def on_stderr(line: str) -> None:
        stderr_lines.append(line)
        if SECRET in line:
            crashed.set()

    with Client.stdio(
        [sys.executable, str(script)],
        era=era,
        stderr=on_stderr,
        trace=lambda direction, data: (
            received.append(data.decode()) if direction == "<--" else None
        ),
    ) as client:
        with pytest.raises(InternalError, match=exactly("the archive is offline until 6 pm")):
            client.read_resource("note://refused")
        with pytest.raises(InternalError) as caught:
            client.read_resource("note://crash")
        assert caught.value.message == "Internal error"
        assert crashed.wait(WAIT), stderr_lines
    wire = "\n".join(received)
    assert "the archive is offline until 6 pm" in wire
    for leak in (SECRET, "/srv/private", "Traceback", "RuntimeError"):
        assert leak not in wire
    assert any("Traceback" in line for line in stderr_lines), stderr_lines


# -- item 6: Client.http at the wrong URL, or at a protected server without auth= --------------------

HTTP_ERAS = ["auto", "handshake", "modern"]


def small_server() -> Server:
    server = Server("small")

    @server.tool
    def echo(text: str) -> str:
        """Say it back."""
        return text

    return server


def connect_error(url: str, **options) -> Exception:
    """What ``Client.http(url, **options)`` raised (it must raise)."""
    with pytest.raises(Exception) as caught:
        Client.http(url, connect_timeout=WAIT, **options).close()
    return caught.value


def works(url: str, **options) -> None:
    """The URL a hint named is the server's: a client connects there and calls a tool."""
    with Client.http(url, connect_timeout=WAIT, **options) as client:
        assert client.call_tool("echo", {"text": "here"}).text == "here"


@pytest.mark.parametrize("era", HTTP_ERAS)
@pytest.mark.parametrize(
    "path, suggested, why",
    [
        ("", "/mcp", "MCP servers are usually at /mcp — try "),
        ("/", "/mcp", "MCP servers are usually at /mcp — try "),
        ("/mcp/", "/mcp", "try "),
    ],
    ids=["bare", "slash", "mcp-slash"],
)
def test_a_url_without_mcp_or_with_a_trailing_slash_says_which_url_to_try(
    serve, era, path, suggested, why
):
    """Issue 34 item 8: no MCP server at the URL is ServerUnreachable (a ConnectionError), not an
    McpError -32603 (an internal error of the protocol), in every era; its ``status`` is the 404."""
    served = serve(small_server())
    exc = connect_error(served.url + path, era=era)
    assert isinstance(exc, ServerUnreachable) and isinstance(exc, ConnectionError), repr(exc)
    assert not isinstance(exc, McpError)
    assert exc.status == 404
    message = str(exc)
    assert message.startswith(f"nothing answers MCP at {served.url + path} (HTTP 404 Not Found to ")
    assert f"Nothing is served at {path or '/'}: {why}{served.url}{suggested}" in message, message
    if path.endswith("/mcp/"):
        assert "(without the trailing slash)" in message
    works(served.url + suggested, era=era)


def test_another_path_suggests_mcp_under_it(serve):
    served = serve(small_server())
    exc = connect_error(served.url + "/api")
    assert (
        f"Nothing is served at /api: MCP servers are usually at /mcp — try {served.url}/api/mcp"
        in str(exc)
    )


def test_each_transport_names_its_usual_path(serve):
    served = serve(small_server())
    exc = connect_error(served.url, transport="streamable")
    assert isinstance(exc, ServerUnreachable) and exc.status == 404
    assert "(HTTP 404 Not Found to a server/discover POST)" not in str(exc)  # it fell back
    assert "(HTTP 404 Not Found to an initialize POST). Nothing is served at /" in str(exc)
    assert f"try {served.url}/mcp" in str(exc)
    exc = connect_error(
        served.url, transport="sse"
    )  # the HTTP+SSE transport: its stream is at /sse
    assert isinstance(exc, ServerUnreachable) and exc.status == 404
    assert "(HTTP 404 Not Found to an HTTP+SSE GET)" in str(exc)
    assert f"HTTP+SSE servers are usually at /sse — try {served.sse}" in str(exc)
    exc = connect_error(served.sse + "/", transport="sse")
    assert f"try {served.sse} (without the trailing slash)" in str(exc)
    works(served.sse, transport="sse")


@pytest.fixture
def protected(serve):
    """A protected MCP server (a ProtectedResource trusting the demo authorization server): its URL."""
    from mcp_ref.oauth.resource import ProtectedResource
    from mcp_ref.workbench.demo_auth_server import DemoAuthorizationServer

    authorization = DemoAuthorizationServer()
    issuer = serve(app=authorization)
    return serve(
        small_server(), auth=ProtectedResource(authorization.token_verifier(), [issuer.url])
    )


@pytest.mark.parametrize("era", HTTP_ERAS)
def test_a_protected_server_without_auth_says_to_pass_auth(protected, era):
    exc = connect_error(protected.mcp, era=era)
    assert isinstance(exc, McpError), repr(exc)
    assert "HTTP 401" in exc.message
    assert "This server needs authorization: pass auth=OAuth() to Client.http" in exc.message, (
        exc.message
    )
    found = re.search(r"its resource metadata: (\S+)\)", exc.message)
    assert found, exc.message
    # the URL named is the server's RFC 9728 metadata, naming this endpoint
    metadata = requests.get(found.group(1), timeout=(WAIT, WAIT))
    assert metadata.status_code == 200 and metadata.json()["resource"] == protected.mcp
    if era != "modern":
        assert exc.data["httpStatus"] == 401


def test_credentials_the_server_refuses_are_named_as_refused(protected):
    exc = connect_error(protected.mcp, headers={"Authorization": "Bearer not-a-token"})
    assert isinstance(exc, McpError) and "HTTP 401" in exc.message
    assert (
        "The server refused the credentials sent" in exc.message
        and "auth=OAuth()" not in exc.message
    )


# -- issue 34 item 8: no MCP server at the URL is ServerUnreachable, in every era and transport -------

#: Every way of connecting: (era, transport).  The 2024-11-05 transport carries the handshake only.
CONNECTIONS = [
    ("auto", "auto"),
    ("modern", "auto"),
    ("handshake", "auto"),
    ("handshake", "streamable"),
    ("handshake", "sse"),
]


class NotMcp:
    """A real web server on 127.0.0.1 (port 0) that is no MCP server: each path answers one way
    to every method (``/404`` an HTML 404, ``/405``, ``/html`` a 200 page, ``/json`` a JSON body
    that is no JSON-RPC, ``/502`` a proxy's HTML error, ``/silent-sse`` an SSE stream that never
    names its endpoint, ``/jsonrpc-400`` a 400 holding a JSON-RPC error).  Every request is kept."""

    def __init__(self):
        import http.server

        self.seen: list[tuple[str, str]] = []
        self.released = threading.Event()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def answer(self):
                owner.seen.append((self.command, self.path))
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                path = self.path.split("?")[0].rstrip("/")
                if path.endswith("/silent-sse"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    self.wfile.write(b": nothing to say\n\n")
                    self.wfile.flush()
                    owner.released.wait(WAIT)  # held open until the test ends
                    return
                status, kind, body = {
                    "/405": (405, "text/html", b"<h1>Method Not Allowed</h1>"),
                    "/html": (200, "text/html", b"<html><body>A web site</body></html>"),
                    "/json": (200, "application/json", b'{"hello": "world"}'),
                    "/502": (502, "text/html", b"<h1>502 Bad Gateway</h1>"),
                    "/jsonrpc-400": (
                        400,
                        "application/json",
                        b'{"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, '
                        b'"message": "Unsupported protocol version"}}',
                    ),
                }.get(path, (404, "text/html", b"<h1>Not Found</h1>"))
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = answer

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        self.serving = InThread(self.httpd)

    def stop(self):
        self.released.set()
        self.serving.stop()


@pytest.fixture
def not_mcp():
    web = NotMcp()
    yield web
    web.stop()


def unreachable(url: str, era: str, transport: str, **options) -> ServerUnreachable:
    """What ``Client.http(url)`` raised: it must be ServerUnreachable, a ConnectionError, no McpError."""
    exc = connect_error(url, era=era, transport=transport, **options)
    assert isinstance(exc, ServerUnreachable) and isinstance(exc, ConnectionError), repr(exc)
    assert not isinstance(exc, McpError), repr(exc)
    return exc


@pytest.mark.parametrize("era, transport", CONNECTIONS)
@pytest.mark.parametrize(
    "path, status, answer",
    [
        ("/404", 404, "HTTP 404 Not Found"),
        ("/405", 405, "HTTP 405 Method Not Allowed"),
        ("/html", 200, "a text/html page"),
        ("/502", 502, "HTTP 502 Bad Gateway"),
    ],
)
def test_a_web_server_that_is_no_mcp_server_is_unreachable_saying_what_answered(
    not_mcp, era, transport, path, status, answer
):
    exc = unreachable(not_mcp.url + path, era, transport)
    message = str(exc)
    assert exc.status == status
    assert message.startswith(f"nothing answers MCP at {not_mcp.url}{path} ({answer} to "), message
    tried = {
        "sse": "an HTTP+SSE GET",
        "streamable": "an initialize POST",
    }.get(transport, "a server/discover POST" if era == "modern" else "")
    if status in (404, 405) and transport == "auto" and era != "modern":
        tried = "a Streamable HTTP POST and an HTTP+SSE GET"  # it fell back to HTTP+SSE
    elif transport == "auto" and era != "modern":
        tried = "an initialize POST"
    assert f"{answer} to {tried})" in message, message
    if status == 502:
        assert (
            "The server (or a proxy in front of it) failed: check that the MCP server runs"
            in message
        )
    else:
        usual = "/sse" if transport == "sse" else "/mcp"
        assert f"try {not_mcp.url}{path}{usual}" in message, message
    assert "code -32603" not in message and "Internal error" not in message


@pytest.mark.parametrize("era, transport", [c for c in CONNECTIONS if c[1] != "sse"])
def test_a_json_answer_that_is_no_json_rpc_is_unreachable(not_mcp, era, transport):
    exc = unreachable(not_mcp.url + "/json", era, transport)
    assert exc.status == 200
    assert f"nothing answers MCP at {not_mcp.url}/json (a JSON body that is no JSON-RPC answer" in (
        str(exc)
    )


def test_an_sse_stream_that_names_no_endpoint_is_unreachable_after_connect_timeout(not_mcp):
    """The 2024-11-05 transport waits ``connect_timeout`` (not a fixed 10 s) for the endpoint event."""
    with pytest.raises(ServerUnreachable) as caught:
        Client.http(not_mcp.url + "/silent-sse", transport="sse", connect_timeout=0.5).close()
    assert caught.value.status == 200
    assert "an SSE stream that named no endpoint within 0.5 s to an HTTP+SSE GET" in str(
        caught.value
    )
    exc = unreachable(not_mcp.url + "/json", "handshake", "sse")
    assert "(an answer of type application/json to an HTTP+SSE GET)" in str(exc)


def test_a_json_rpc_error_the_server_answers_stays_an_mcp_error(not_mcp):
    """A 400 holding a JSON-RPC error is MCP's own refusal: McpError with the server's message."""
    exc = connect_error(not_mcp.url + "/jsonrpc-400", era="handshake", transport="streamable")
    assert isinstance(exc, McpError) and not isinstance(exc, ServerUnreachable), repr(exc)
    assert exc.code == -32602 and "Unsupported protocol version" in exc.message
    assert exc.data == {"httpStatus": 400}


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound, then closed)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("era, transport", CONNECTIONS)
def test_a_refused_connection_says_so_and_what_to_check(era, transport):
    url = f"http://127.0.0.1:{closed_port()}/mcp"
    exc = unreachable(url, era, transport)
    assert exc.status is None
    assert str(exc) == (
        f"cannot reach {url}: connection refused. "
        "Is the server running, and listening on that host and port?"
    )


@pytest.mark.parametrize("era, transport", CONNECTIONS)
def test_an_unknown_host_says_to_check_the_host_name(era, transport):
    url = "http://mcp-ref-test.invalid/mcp"  # RFC 6761: .invalid never resolves
    exc = unreachable(url, era, transport)
    assert exc.status is None
    assert str(exc).startswith(f"cannot reach {url}: unknown host"), str(exc)
    assert str(exc).endswith("Check the host name in the URL")


@pytest.fixture
def full_backlog():
    """A port on 127.0.0.1 whose listen queue is full: a new connection is never accepted (its
    SYN is dropped), so connecting times out."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    queued = []
    for _ in range(8):  # until one connection is left waiting
        sock = socket.socket()
        sock.settimeout(0.5)
        try:
            sock.connect(("127.0.0.1", port))
        except OSError:
            sock.close()
            break
        queued.append(sock)
    else:
        pytest.skip("this system accepts every connection into the listen queue")
    yield port
    for sock in queued:
        sock.close()
    listener.close()


@pytest.mark.parametrize("era, transport", CONNECTIONS)
def test_a_connection_that_times_out_says_how_long_it_waited(full_backlog, era, transport):
    url = f"http://127.0.0.1:{full_backlog}/mcp"
    with pytest.raises(ServerUnreachable) as caught:
        Client.http(url, era=era, transport=transport, connect_timeout=0.5).close()
    assert caught.value.status is None
    assert str(caught.value) == (
        f"cannot reach {url}: no answer to connect within 0.5 s. Check the host and port, and any "
        "firewall between; connect_timeout= waits longer"
    )


def test_https_to_a_plain_http_server_says_to_try_http(serve):
    served = serve(small_server())
    url = served.mcp.replace("http://", "https://")
    exc = unreachable(url, "auto", "auto")
    assert "TLS failed: [WRONG_VERSION_NUMBER]" in str(exc), str(exc)
    assert str(exc).endswith("The server may not speak TLS: try the URL with http://")


class Vanishing:
    """WSGI middleware: passes every request on until ``gone`` is set, then answers 404 to all
    (the MCP server was taken down, and the host now serves nothing at the URL)."""

    def __init__(self, app):
        self.app = app
        self.gone = threading.Event()

    def __call__(self, environ, start_response):
        if self.gone.is_set():
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found"]
        return self.app(environ, start_response)


def test_a_404_after_the_session_starts_a_new_one_and_no_server_then_is_unreachable(serve):
    """A 404 once the session is established means it expired: the client starts a new one
    (2025-11-25 basic/transports §Session Management: it "MUST start a new session"), kept; when
    that initialize finds no MCP server either, the request fails with ServerUnreachable."""
    wrapped = []
    served = serve(small_server(), wrap=lambda app: wrapped.append(Vanishing(app)) or wrapped[0])
    with Client.http(served.mcp, era="handshake", connect_timeout=WAIT, timeout=WAIT) as client:
        first = client.session.transport.session_id
        assert first and client.call_tool("echo", {"text": "one"}).text == "one"
        wrapped[0].gone.set()
        with pytest.raises(ServerUnreachable) as caught:
            client.call_tool("echo", {"text": "two"})
        assert caught.value.status == 404
        assert (
            f"nothing answers MCP at {served.mcp} (HTTP 404 Not Found to an initialize POST)"
            in (str(caught.value))
        )
        assert client.session.transport.session_id is None  # none now: the next request asks
        wrapped[0].gone.clear()
        assert client.call_tool("echo", {"text": "three"}).text == "three"
        assert client.session.transport.session_id not in (None, first)  # a new session


@pytest.mark.parametrize(
    "url, hint",
    [
        ("localhost:8000/mcp", ": try http://localhost:8000/mcp"),
        ("127.0.0.1:8000", ": try http://127.0.0.1:8000"),
        ("ftp://example.com/mcp", ""),
        ("http://", ""),
        ("http://example.com:99999/mcp", ""),
        ("http://[::1/mcp", ""),
    ],
)
def test_a_url_that_names_no_http_server_is_refused_before_anything_is_sent(url, hint):
    """Before, these reached requests and came back as McpError -32603 ("No connection adapters
    were found"); a URL is the caller's to fix, so it is a ValueError that says how."""
    with pytest.raises(ValueError) as caught:
        Client.http(url, connect_timeout=WAIT)
    assert not isinstance(caught.value, McpError)
    assert str(caught.value) == (
        "the server URL must be http:// or https://, with a host (and a port from 1 to 65535), "
        f"not {url!r}{hint}"
    )


def test_the_command_line_says_the_same_in_one_line(not_mcp):
    """The CLI keeps its handling: ServerUnreachable is exit status 4 with its message on one
    line, a URL that names no server a usage error (2); never a traceback (run_cli checks)."""
    from conftest import run_cli

    from mcp_ref.workbench.cli_verbs import EXIT_UNREACHABLE, EXIT_USAGE

    refused = f"http://127.0.0.1:{closed_port()}/mcp"
    cases = [
        (
            refused,
            EXIT_UNREACHABLE,
            f"mcp-ref: cannot reach {refused}: connection refused. Is the server running",
        ),
        (
            not_mcp.url + "/html",
            EXIT_UNREACHABLE,
            f"mcp-ref: nothing answers MCP at {not_mcp.url}/html (a text",
        ),
        (
            not_mcp.url,
            EXIT_UNREACHABLE,
            f"Nothing is served at /: MCP servers are usually at /mcp — try {not_mcp.url}/mcp",
        ),
        ("http://", EXIT_USAGE, "mcp-ref: the server URL must be http:// or https://, with a host"),
    ]
    for url, status, words in cases:
        proc = run_cli("--connect-timeout", str(WAIT), "tools", url)
        assert proc.returncode == status, proc.stderr
        assert words in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_a_credential_in_the_url_never_reaches_the_message(not_mcp):
    """A message may reach a log: the URL it names has no userinfo (``***@``) and no query
    contents (``?...``), either of which may hold a credential."""
    secrets = ("ada", "s3cret", "k3y")
    port = closed_port()
    exc = unreachable(f"http://ada:s3cret@127.0.0.1:{port}/mcp?key=k3y", "auto", "auto")
    assert str(exc).startswith(
        f"cannot reach http://***@127.0.0.1:{port}/mcp?...: connection refused"
    )
    web = not_mcp.url.replace("http://", "http://ada:s3cret@")
    exc = unreachable(f"{web}/404?key=k3y", "handshake", "streamable")
    assert str(exc).startswith(
        f"nothing answers MCP at http://***@127.0.0.1:{not_mcp.httpd.server_port}/404?... (HTTP 404"
    ), str(exc)
    assert f"try http://***@127.0.0.1:{not_mcp.httpd.server_port}/404/mcp?..." in str(exc)
    with pytest.raises(ValueError) as bad:
        Client.http("ada:s3cret@example.com:8000/mcp?key=k3y")
    assert "try http://***@example.com:8000/mcp?..." in str(bad.value)
    for message in (str(exc), str(bad.value)):
        assert not any(secret in message for secret in secrets), message
