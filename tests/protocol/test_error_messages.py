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
from http_fixtures import serve  # noqa: F401 - fixture

from mcp_ref import (
    Client,
    InternalError,
    McpError,
    PromptError,
    ResourceError,
    ResourceNotFound,
    Server,
    ToolError,
)
from mcp_ref.http.bounded_reads import HttpTransportError

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
    served = serve(small_server())
    exc = connect_error(served.url + path, era=era)
    assert isinstance(exc, McpError), repr(exc)
    assert "HTTP 404" in exc.message  # (the CLI keys its own advice on it)
    assert f"Nothing is served at {path or '/'}: {why}{served.url}{suggested}" in exc.message, (
        exc.message
    )
    if path.endswith("/mcp/"):
        assert "(without the trailing slash)" in exc.message
    if (
        era != "modern"
    ):  # (2026-07-28 only: "does not speak a modern revision", the HTTP error named in it)
        assert isinstance(exc, InternalError) and exc.data == {"httpStatus": 404}
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
    exc = connect_error(
        served.url, transport="streamable"
    )  # the server's own JSON-RPC error, the advice after it
    assert isinstance(exc, McpError) and exc.data["httpStatus"] == 404
    assert f"try {served.url}/mcp" in exc.message
    exc = connect_error(
        served.url, transport="sse"
    )  # the HTTP+SSE transport: its stream is at /sse
    assert isinstance(exc, HttpTransportError) and exc.status == 404
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
