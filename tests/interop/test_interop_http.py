"""mcp_ref against the official Python SDK over HTTP (the stdio counterpart is test_interop.py).

(a) the SDK's client (``streamable_http_client`` / ``sse_client`` + ``ClientSession``) against
    ``mcp-ref serve-demo --http 127.0.0.1:PORT``: Streamable HTTP at /mcp, HTTP+SSE at /sse;
(b) mcp_ref's ``Client.http`` and the ``mcp-ref`` CLI against the SDK's own server
    (tests/servers/interop_sdk_server.py, served by uvicorn through
    tests/servers/interop_http_sdk_server.py): its Streamable HTTP app (with sessions, and
    stateless with JSON replies) and its legacy HTTP+SSE app, with and without the fallback.

Every server runs in a subprocess on a free port of 127.0.0.1 and is terminated at teardown; the
SDK's (conftest's sdk_streamable, sdk_stateless, sdk_sse) once per test run, shared with test_interop.py.
Traffic is checked against the official schema of the negotiated revision: our client's
trace (WireChecker), and, when the SDK's client drives our server, a tap in its HTTP client
that sees every message body both ways (request bodies, JSON replies and SSE events).
"""

from __future__ import annotations

import json
from contextlib import AsyncExitStack

import pytest
import requests
from conftest import DEMO, WAIT, ServerProcess, WireChecker, check_trace, run_cli
from http_fixtures import free_port, http_client  # noqa: F401  (http_client is a fixture)

try:
    import mcp  # noqa: F401

    HAVE_SDK = True
except ImportError:
    HAVE_SDK = False

try:
    import uvicorn  # noqa: F401

    HAVE_UVICORN = True
except ImportError:
    HAVE_UVICORN = False

needs_sdk = pytest.mark.skipif(
    not HAVE_SDK, reason="the official MCP Python SDK (`pip install mcp`) is not installed"
)
#: Other programs' servers and clients, each started for real: slow (`pytest -m "not slow"` leaves them out).
pytestmark = pytest.mark.slow
needs_sdk_server = pytest.mark.skipif(
    not (HAVE_SDK and HAVE_UVICORN),
    reason="serving the official SDK's HTTP apps needs both `mcp` and `uvicorn` (pip install mcp uvicorn)",
)


# -- server subprocesses: the SDK's (sdk_streamable, sdk_stateless, sdk_sse) are conftest's, one per test run


@pytest.fixture(scope="module")
def demo_http(tmp_path_factory):
    """``mcp-ref serve-demo --http 127.0.0.1:PORT`` in a subprocess."""
    port = free_port()
    server = ServerProcess(
        [*DEMO, "--http", f"127.0.0.1:{port}"], port, tmp_path_factory.mktemp("demo") / "stderr"
    )
    yield server
    server.stop()


# -- (a) the SDK's client, our server -----------------------------------------------------------------


def _sdk_types():
    try:  # mcp 2.x
        import mcp_types as types
        from mcp import MCPError
    except ImportError:  # mcp 1.x
        from mcp import types
        from mcp.shared.exceptions import McpError as MCPError
    return types, MCPError


def _httpx():
    try:  # mcp 2.x talks HTTP through httpx2
        import httpx2 as httpx
    except ImportError:  # mcp 1.x: httpx
        import httpx
    return httpx


def tapped_http_client(checker: WireChecker, exchanges: list, **options):
    """An (httpx2|httpx).AsyncClient for the SDK whose transport feeds ``checker`` every JSON-RPC
    message: POST bodies as sent (-->), JSON replies and SSE ``message`` events as received (<--).
    ``exchanges`` gets (method, path, status) of every HTTP exchange."""
    httpx = _httpx()

    class Tee(httpx.AsyncByteStream):
        def __init__(self, inner, kind: str):
            self.inner, self.kind = inner, kind

        async def __aiter__(self):
            buffer = b""
            async for chunk in self.inner:
                buffer += chunk
                if self.kind == "text/event-stream":
                    buffer = buffer.replace(b"\r\n", b"\n")
                    while b"\n\n" in buffer:
                        block, buffer = buffer.split(b"\n\n", 1)
                        self._event(block)
                yield chunk  # after the check: the checker sees a message before the SDK acts on it
            if self.kind == "application/json" and buffer.strip():
                checker("<--", buffer)

        def _event(self, block: bytes) -> None:
            event, data = None, []
            for line in block.decode().split("\n"):
                name, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if name == "event":
                    event = value
                elif name == "data":
                    data.append(value)
            text = "\n".join(data)
            if (
                event in (None, "", "message") and text.strip()
            ):  # not "endpoint", nor priming events
                checker("<--", text.encode())

        async def aclose(self):
            await self.inner.aclose()

    class Tap(httpx.AsyncBaseTransport):
        def __init__(self):
            self.inner = httpx.AsyncHTTPTransport()

        async def handle_async_request(self, request):
            if request.method == "POST":
                body = await request.aread()
                if body:
                    checker("-->", body)
            response = await self.inner.handle_async_request(request)
            exchanges.append((request.method, request.url.path, response.status_code))
            kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
            if response.status_code == 200 and kind in ("application/json", "text/event-stream"):
                response.stream = Tee(response.stream, kind)
            return response

        async def aclose(self):
            await self.inner.aclose()

    options.setdefault("timeout", httpx.Timeout(WAIT, read=3 * WAIT))
    return httpx.AsyncClient(transport=Tap(), **options)


def run_sdk_client(
    url: str, transport: str, scenario, *, sampling_callback=None
) -> tuple[WireChecker, list]:
    """Run ``await scenario(session)`` in an SDK ClientSession over ``transport`` ("streamable" or
    "sse") to ``url``, bounded by 3 * WAIT; returns the tapped traffic and the HTTP exchanges."""
    import anyio
    from mcp import ClientSession

    checker, exchanges = WireChecker(), []

    def factory(headers=None, timeout=None, auth=None):  # the SDK's McpHttpClientFactory signature
        options = {"headers": headers, "timeout": timeout, "auth": auth}
        return tapped_http_client(
            checker, exchanges, **{k: v for k, v in options.items() if v is not None}
        )

    async def main():
        with anyio.fail_after(3 * WAIT):
            async with AsyncExitStack() as stack:
                if transport == "sse":
                    from mcp.client.sse import sse_client

                    streams = await stack.enter_async_context(
                        sse_client(url, httpx_client_factory=factory)
                    )
                else:
                    try:  # mcp 2.x: the caller hands over (and owns) the HTTP client
                        from mcp.client.streamable_http import streamable_http_client
                    except ImportError:  # mcp 1.x: a factory, like sse_client's
                        from mcp.client.streamable_http import streamablehttp_client

                        streams = await stack.enter_async_context(
                            streamablehttp_client(url, httpx_client_factory=factory)
                        )
                    else:
                        http = await stack.enter_async_context(factory())
                        streams = await stack.enter_async_context(
                            streamable_http_client(url, http_client=http)
                        )
                session = await stack.enter_async_context(
                    ClientSession(streams[0], streams[1], sampling_callback=sampling_callback)
                )
                await scenario(session)

    anyio.run(main)
    return checker, exchanges


@needs_sdk
def test_sdk_client_streamable_http_against_demo(demo_http):
    types, MCPError = _sdk_types()
    sampled: list = []
    progress: list = []

    async def sampling_callback(context, params):
        sampled.append(params)
        question = params.messages[-1].content.text
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=question[::-1]),
            model="sdk-model",
            stop_reason="endTurn",
        )

    async def on_progress(value, total, message):
        progress.append((value, total, message))

    async def scenario(session):
        init = await session.initialize()
        assert init.protocol_version == "2025-11-25"
        assert init.server_info.name == "mcp-ref-demo" and init.server_info.version == "1.0.0"
        assert init.capabilities.tools is not None and init.capabilities.resources.subscribe is True

        names, cursor = [], None
        while True:
            page = await session.list_tools(
                params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
            )
            names += [tool.name for tool in page.tools]
            cursor = page.next_cursor
            if not cursor:
                break
        assert names[:2] == ["echo", "add"] and {"count_slowly", "ask_llm"} <= set(names)

        result = await session.call_tool("echo", {"text": "hello over Streamable HTTP"})
        assert result.is_error is False and result.content[0].text == "hello over Streamable HTTP"

        result = await session.call_tool(
            "count_slowly", {"steps": 3, "delay": 0.01}, progress_callback=on_progress
        )
        assert result.content[0].text == "counted to 3"

        with pytest.raises(MCPError) as caught:
            await session.call_tool("no_such_tool", {})
        assert caught.value.error.code == -32602

        read = await session.read_resource("demo://readme")
        assert read.contents[0].text.startswith("# mcp_ref demo")
        assert read.contents[0].mime_type == "text/markdown"

        prompt = await session.get_prompt("greet", {"name": "Ada"})
        assert prompt.messages[0].role == "user" and prompt.messages[0].content.text == "Hey Ada!"

        # sampling: our server's tool asks the SDK client's "model", on the tools/call's SSE stream.
        result = await session.call_tool("ask_llm", {"question": "what is mcp?"})
        assert result.is_error is False
        assert result.content[0].text == "sdk-model says: ?pcm si tahw"

    checker, exchanges = run_sdk_client(
        demo_http.url + "/mcp", "streamable", scenario, sampling_callback=sampling_callback
    )
    assert progress == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]
    assert (
        len(sampled) == 1
        and sampled[0].max_tokens == 100
        and sampled[0].system_prompt == "Answer briefly."
    )

    assert checker.version == "2025-11-25"
    assert len(checker.received("notifications/progress")) == 3
    assert (
        len(checker.received("sampling/createMessage")) == 1
        and checker.sent("sampling/createMessage") == []
    )
    [answer] = [
        m
        for m in checker.sent()
        if m.get("id") == checker.received("sampling/createMessage")[0]["id"] and "result" in m
    ]
    assert answer["result"]["model"] == "sdk-model"
    checker.assert_valid()  # the SDK's messages and our server's, both ways
    assert {path for _, path, _ in exchanges} == {"/mcp"}
    assert any(
        method == "DELETE" and 200 <= status < 300 for method, _, status in exchanges
    )  # session ended
    assert f"mcp-ref: serving the demo at {demo_http.url}/mcp" in demo_http.stderr()


@needs_sdk
def test_sdk_client_legacy_sse_against_demo(demo_http):
    async def scenario(session):
        init = await session.initialize()
        assert init.protocol_version == "2025-11-25"
        assert init.server_info.name == "mcp-ref-demo"
        tools = await session.list_tools()
        assert [tool.name for tool in tools.tools][:2] == ["echo", "add"]
        result = await session.call_tool("echo", {"text": "hello over HTTP+SSE"})
        assert result.is_error is False and result.content[0].text == "hello over HTTP+SSE"
        read = await session.read_resource("demo://readme")
        assert read.contents[0].text.startswith("# mcp_ref demo")

    checker, exchanges = run_sdk_client(demo_http.url + "/sse", "sse", scenario)
    assert checker.version == "2025-11-25"
    assert [m["method"] for m in checker.sent() if "method" in m] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
        "resources/read",
    ]
    assert len([m for m in checker.received() if "result" in m]) == 4
    checker.assert_valid()
    assert exchanges[0][:2] == ("GET", "/sse") and exchanges[0][2] == 200
    posts = {(path, status) for method, path, status in exchanges if method == "POST"}
    assert len(posts) == 1 and next(iter(posts))[1] in (
        200,
        202,
    )  # every POST to the endpoint event's URL


# -- (b) our client and CLI, the SDK's server ---------------------------------------------------------


def _exercise_sdk_server(
    client, *, progress_expected: bool = True, version: str = "2025-11-25"
) -> None:
    """What the SDK server offers, through mcp_ref's Client (any transport)."""
    assert client.server_info.name == "interop-sdk-server"
    assert client.protocol_version == version
    assert client.instructions == "An official-SDK server for interop tests."
    client.ping()

    tools = {tool.name: tool for tool in client.list_tools()}
    assert set(tools) == {"echo", "add", "count", "fail"}
    assert tools["add"].output_schema["properties"]["total"] == {
        "title": "Total",
        "type": "integer",
    }

    assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    result = client.call_tool("add", {"a": 2, "b": 40})
    assert result.structured_content == {"a": 2, "b": 40, "total": 42} and not result.is_error

    seen: list = []
    result = client.call_tool(
        "count",
        {"steps": 3},
        on_progress=lambda p, total, message: seen.append((p, total, message)),
    )
    assert result.text == "counted to 3"
    expected = [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    if progress_expected:
        assert seen == expected
    else:
        # A JSON reply carries only the answer: the SDK then drops the progress notifications.
        assert seen in ([], expected)

    result = client.call_tool("fail", {"message": "boom"})
    assert result.is_error and result.text.endswith("boom")

    assert client.read_resource("sdk://hello").contents[0].text == "hello from the SDK"
    assert client.read_resource("sdk://square/7").contents[0].text == "49"
    assert client.get_prompt("greet", {"name": "Ada"}).messages[0].content.text == "Hello, Ada!"


@needs_sdk_server
def test_client_http_settles_on_2026_with_the_sdk_streamable_server(sdk_streamable, http_client):
    client = http_client(sdk_streamable.url + "/mcp")
    transport = client.session.transport
    assert client.era == "modern" and transport.session_id is None  # no session in 2026-07-28
    _exercise_sdk_server(client, version="2026-07-28")
    assert client.wire.modern_version == "2026-07-28"
    client.wire.assert_valid()


@needs_sdk_server
def test_client_http_against_sdk_streamable_server(sdk_streamable, http_client):
    client = http_client(sdk_streamable.url + "/mcp", era="handshake")
    transport = client.session.transport
    assert transport.mode == "streamable" and transport.session_id  # the SDK's Mcp-Session-Id
    _exercise_sdk_server(client)
    wire = client.wire
    assert wire.version == "2025-11-25"
    [call] = [m for m in wire.sent("tools/call") if m["params"]["name"] == "count"]
    token = call["params"]["_meta"]["progressToken"]
    assert [n["params"]["progressToken"] for n in wire.received("notifications/progress")] == [
        token
    ] * 3
    wire.assert_valid()  # the http_client fixture checks again after closing


@needs_sdk_server
def test_client_http_against_sdk_stateless_json_server(sdk_stateless, http_client):
    client = http_client(sdk_stateless.url + "/mcp", era="handshake")
    assert client.session.transport.mode == "streamable"
    assert client.session.transport.session_id is None  # stateless: the SDK sends no Mcp-Session-Id
    _exercise_sdk_server(client, progress_expected=False)
    client.wire.assert_valid()


@needs_sdk_server
def test_cli_against_sdk_streamable_server(sdk_streamable):
    url = sdk_streamable.url + "/mcp"
    proc = run_cli("info", "--era", "handshake", url, timeout=3 * WAIT)
    assert proc.returncode == 0, proc.stderr
    assert "server:       interop-sdk-server" in proc.stdout
    assert "protocol:     2025-11-25" in proc.stdout
    assert "instructions: An official-SDK server for interop tests." in proc.stdout

    proc = run_cli("tools", url, timeout=3 * WAIT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[:2] == [
        "echo(text: string)  Echo the text back.",
        "add(a: integer, b: integer)  Add two integers, as structured output.",
    ]

    proc = run_cli("call", url, "echo", "text=hello", timeout=3 * WAIT)
    assert (proc.returncode, proc.stdout) == (0, "hello\n"), proc.stderr

    proc = run_cli(
        "--json", "--trace", "--era", "handshake", "call", url, "count", "steps=2", timeout=3 * WAIT
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["content"][0]["text"] == "counted to 2"
    checker = check_trace(proc.stderr)
    assert checker.version == "2025-11-25"
    assert len(checker.received("notifications/message")) == 2
    checker.assert_valid()


@needs_sdk_server
def test_client_sse_against_sdk_sse_server(sdk_sse, http_client):
    client = http_client(sdk_sse.url + "/sse", transport="sse")
    transport = client.session.transport
    assert transport.mode == "sse"
    assert transport.legacy_endpoint.startswith(sdk_sse.url + "/messages/?session_id=")
    _exercise_sdk_server(client)
    assert len(client.wire.received("notifications/progress")) == 3
    client.wire.assert_valid()


@needs_sdk_server
def test_client_http_falls_back_to_sdk_sse_server(sdk_sse, http_client):
    # The premise of the fallback: the SDK's SSE app refuses an initialize POSTed to /sse.
    answer = requests.post(
        sdk_sse.url + "/sse",
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize"},
        headers={"Accept": "application/json, text/event-stream"},
        timeout=(WAIT, WAIT),
    )
    assert answer.status_code in (400, 404, 405), answer.status_code

    client = http_client(sdk_sse.url + "/sse")  # transport="auto"
    transport = client.session.transport
    assert transport.mode == "sse"
    assert transport.legacy_endpoint.startswith(sdk_sse.url + "/messages/?session_id=")
    _exercise_sdk_server(client)
    # The initialize was sent once on the wire as far as the session knows (re-POSTed to the endpoint).
    assert len(client.wire.sent("initialize")) == 1
    client.wire.assert_valid()


@needs_sdk_server
def test_cli_sse_against_sdk_sse_server(sdk_sse):
    url = sdk_sse.url + "/sse"
    proc = run_cli("--transport", "sse", "call", url, "echo", "text=hi", timeout=3 * WAIT)
    assert (proc.returncode, proc.stdout) == (0, "hi\n"), proc.stderr

    # Without --transport: the automatic fallback, traced and checked.
    proc = run_cli("--json", "--trace", "call", url, "add", "a=1", "b=2", timeout=3 * WAIT)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["structuredContent"] == {"a": 1, "b": 2, "total": 3}
    checker = check_trace(proc.stderr)
    # a=1 could be a number or a string: the CLI reads the tool's inputSchema first (tools/list).
    # First the 2026-07-28 probe (refused: a handshake-era server), then initialize, through the fallback.
    assert [m["method"] for m in checker.sent() if "method" in m] == [
        "server/discover",
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call",
    ]
    checker.assert_valid()
