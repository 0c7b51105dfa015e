"""The official Python SDK's client settles on 2026-07-28 with ``mcp-ref serve-demo``.

test_interop.py and test_interop_http.py drive our demo with the SDK's ``ClientSession`` and
its ``initialize()``, so they stay in the handshake era (2025-11-25).  Here the SDK's high-level
``mcp.Client`` does the choosing, the two ways it can reach 2026-07-28:

* ``mode="auto"`` (its default): it sends ``server/discover`` at its newest modern revision and,
  when the answer lists a modern version, adopts it (else it falls back to ``initialize``);
* ``mode="2026-07-28"``: it adopts that revision at once, without asking anything.

Either way every request carries the 2026 ``_meta`` envelope (protocolVersion, clientInfo,
clientCapabilities) and no ``initialize`` is ever sent.  The demo runs as a real subprocess: on
stdio behind tests/servers/stdio_proxy.py, which logs the traffic, and with
``--http 127.0.0.1:0`` (with and without ``--stateless``), found through the line it prints
when it listens, the SDK's HTTP client tapped to see every message body and header.  All the
traffic is checked against the official 2026-07-28 schema.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from contextlib import AsyncExitStack

import pytest
from conftest import DEMO, SERVERS, WAIT, WireChecker, command_label, watch_stderr
from test_http_deploy import LineReader, stop
from test_interop import checked_log
from test_interop_http import tapped_http_client

pytest.importorskip(
    "mcp", reason="the official MCP Python SDK (`pip install mcp`) is not installed"
)
#: The official SDK's client, against our server started for real: slow (`pytest -m "not slow"` leaves it out).
pytestmark = pytest.mark.slow
sdk_versions = pytest.importorskip(
    "mcp_types.version", reason="this mcp predates the 2026-07-28 revision"
)
if "2026-07-28" not in sdk_versions.MODERN_PROTOCOL_VERSIONS:
    pytest.skip("this mcp does not speak the 2026-07-28 revision", allow_module_level=True)

import mcp_types as types  # noqa: E402 - only once the SDK is known to be there

MODERN = "2026-07-28"
PROXY = [sys.executable, str(SERVERS / "stdio_proxy.py")]
CLIENT_INFO = {"name": "sdk-interop", "version": "1.0.0"}
#: The SDK client's ``mode``: discover first, or adopt the revision without a probe.
MODES = [pytest.param("auto", id="discover"), pytest.param(MODERN, id="pinned")]


# -- the conversation ------------------------------------------------------------------------------


class Answers:
    """The SDK client's callbacks (sampling, elicitation, progress), recording what they were given."""

    def __init__(self):
        self.sampled: list = []
        self.elicited: list = []
        self.progress: list = []

    async def sampling(self, context, params):
        self.sampled.append(params)
        question = params.messages[-1].content.text
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=question[::-1]),
            model="sdk-model",
            stop_reason="endTurn",
        )

    async def elicitation(self, context, params):
        self.elicited.append(params)
        return types.ElicitResult(action="accept", content={"name": "Ada", "colour": "green"})

    async def on_progress(self, value, total, message):
        self.progress.append((value, total, message))


async def exercise(client, mode: str, answers: Answers) -> int:
    """Everything the demo offers that the 2026-07-28 era keeps; returns the number of tools/list pages."""
    from mcp import MCPError

    assert client.protocol_version == MODERN
    if mode == "auto":  # what server/discover said
        discovered = client.session.discover_result
        assert (
            discovered.supported_versions[0] == MODERN
            and "2025-11-25" in discovered.supported_versions
        )
        assert client.server_info.name == "mcp-ref-demo" and client.server_info.version == "1.0.0"
        assert client.instructions.startswith("A demo of every MCP feature")
        assert (
            client.server_capabilities.tools is not None
            and client.server_capabilities.prompts is not None
        )
    assert client.session.initialize_result is None

    names, cursor, pages = [], None, 0
    while True:
        page = await client.list_tools(cursor=cursor)
        pages += 1
        names += [tool.name for tool in page.tools]
        cursor = page.next_cursor
        if not cursor:
            break
    assert pages > 1  # the demo's pages hold 5 tools
    assert names[:2] == ["echo", "add"] and {"count_slowly", "ask_llm", "ask_user"} <= set(names)

    result = await client.call_tool("echo", {"text": "hello at 2026-07-28"})
    assert result.is_error is False and result.content[0].text == "hello at 2026-07-28"

    result = await client.call_tool(
        "weather", {"city": "Oslo"}
    )  # the SDK checks it against the outputSchema
    assert result.structured_content == {
        "city": "Oslo",
        "temperature": 21.5,
        "unit": "celsius",
        "conditions": "sunny",
    }

    result = await client.call_tool("divide", {"a": 1, "b": 0})
    assert result.is_error is True and result.content[0].text == "Cannot divide by zero"

    result = await client.call_tool(
        "count_slowly", {"steps": 3, "delay": 0.01}, progress_callback=answers.on_progress
    )
    assert result.content[0].text == "counted to 3"

    with pytest.raises(MCPError) as caught:
        await client.call_tool("no_such_tool", {})
    assert caught.value.error.code == -32602

    read = await client.read_resource("demo://readme")
    assert (
        read.contents[0].text.startswith("# mcp_ref demo")
        and read.contents[0].mime_type == "text/markdown"
    )
    read = await client.read_resource("demo://greeting/Ada")  # from a template
    assert read.contents[0].text == "Hello, Ada!"

    prompt = await client.get_prompt("greet", {"name": "Ada"})
    assert prompt.messages[0].role == "user" and prompt.messages[0].content.text == "Hey Ada!"

    # input_required: the tool's elicitation and sampling come back in the result; the SDK answers
    # them through its callbacks and calls again with inputResponses and the requestState.
    result = await client.call_tool("ask_user", {})
    assert result.is_error is False and result.content[0].text == "hello Ada, who likes green"
    result = await client.call_tool("ask_llm", {"question": "what is mcp?"})
    assert result.is_error is False and result.content[0].text == "sdk-model says: ?pcm si tahw"
    return pages


def run_sdk_client(transport, mode: str) -> tuple[Answers, int]:
    """Connect an SDK ``Client`` (``mode``) through ``transport(stack)`` -> Transport and run
    :func:`exercise`, all of it bounded by 3 * WAIT; returns its callbacks' records and the page count."""
    import anyio
    from mcp import Client

    answers, pages = Answers(), []

    async def main():
        with anyio.fail_after(3 * WAIT):
            async with AsyncExitStack() as stack:
                client = Client(
                    await transport(stack),
                    mode=mode,
                    read_timeout_seconds=WAIT,
                    client_info=types.Implementation(**CLIENT_INFO),
                    sampling_callback=answers.sampling,
                    elicitation_callback=answers.elicitation,
                )
                await stack.enter_async_context(client)
                pages.append(await exercise(client, mode, answers))

    anyio.run(main)
    assert answers.progress == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]
    [elicited] = answers.elicited
    assert elicited.message == "Who are you?" and elicited.requested_schema["required"] == ["name"]
    [sampled] = answers.sampled
    assert sampled.max_tokens == 100 and sampled.system_prompt == "Answer briefly."
    return answers, pages[0]


def check_modern_traffic(checker: WireChecker, mode: str, pages: int) -> None:
    """What the wire shows: no handshake, the 2026 envelope on every request, input_required rounds."""
    assert checker.version is None  # no initialize result was ever seen
    assert checker.modern_version == MODERN
    sent = checker.sent()
    assert checker.sent("initialize") == [] and checker.sent("notifications/initialized") == []
    assert [
        m for m in sent if "method" in m and "id" not in m
    ] == []  # 2026-07-28: no client notifications
    requests = [m for m in sent if "method" in m]
    for request in requests:
        meta = request["params"]["_meta"]
        assert meta["io.modelcontextprotocol/protocolVersion"] == MODERN, request
        assert meta["io.modelcontextprotocol/clientInfo"] == CLIENT_INFO, request
        assert "io.modelcontextprotocol/clientCapabilities" in meta, request
    capabilities = requests[-1]["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert "sampling" in capabilities and "elicitation" in capabilities

    methods = [m["method"] for m in requests]
    calls = [m["params"]["name"] for m in requests if m["method"] == "tools/call"]
    expected = (
        ["tools/list"] * pages
        + ["tools/call"] * 5
        + ["resources/read"] * 2
        + ["prompts/get"]
        + ["tools/call"] * 4
    )
    assert methods == (["server/discover"] if mode == "auto" else []) + expected
    assert calls == [
        "echo",
        "weather",
        "divide",
        "count_slowly",
        "no_such_tool",
        "ask_user",
        "ask_user",
        "ask_llm",
        "ask_llm",
    ]

    results = {m["id"]: m["result"] for m in checker.received() if "result" in m}
    assert all(
        result["resultType"] in ("complete", "input_required") for result in results.values()
    )
    assert all(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-ref-demo"
        for result in results.values()
    )
    for tool, kind in (("ask_user", "elicitation/create"), ("ask_llm", "sampling/createMessage")):
        first, retry = [
            m for m in requests if m["method"] == "tools/call" and m["params"]["name"] == tool
        ]
        asked = results[first["id"]]
        assert asked["resultType"] == "input_required" and "inputResponses" not in first["params"]
        [(key, ask)] = asked["inputRequests"].items()
        assert ask["method"] == kind
        assert retry["params"]["requestState"] == asked["requestState"]
        assert list(retry["params"]["inputResponses"]) == [key]
        assert results[retry["id"]]["resultType"] == "complete"
    assert len(checker.received("notifications/progress")) == 3
    checker.assert_valid()  # both ways, at 2026-07-28


# -- stdio ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_sdk_client_settles_on_2026_over_stdio(tmp_path, mode):
    """``mcp.Client`` over ``stdio_client`` with the demo as its subprocess (behind the logging proxy)."""
    from mcp.client.stdio import StdioServerParameters, stdio_client

    log, errors = tmp_path / "traffic.log", tmp_path / "stderr"
    watch_stderr(
        command_label([*PROXY, "--", *DEMO]),
        lambda: errors.read_bytes() if errors.exists() else b"",
    )

    params = StdioServerParameters(
        command=PROXY[0], args=[*PROXY[1:], "--log", str(log), "--", *DEMO]
    )
    with open(errors, "w") as errlog:

        async def transport(stack):
            return stdio_client(params, errlog=errlog)

        _, pages = run_sdk_client(transport, mode)
    check_modern_traffic(checked_log(log), mode, pages)
    assert "Traceback" not in errors.read_text()


# -- Streamable HTTP -----------------------------------------------------------------------------------


class DemoOverHttp:
    """``mcp-ref serve-demo --http 127.0.0.1:0 [--stateless]`` in a subprocess; ``url`` is its /mcp."""

    def __init__(self, stateless: bool):
        self.command = [*DEMO, "--http", "127.0.0.1:0"] + (["--stateless"] if stateless else [])
        self.proc = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.errors = LineReader(self.proc.stderr)
        self.unwatch = watch_stderr(
            command_label(self.command), lambda: list(self.errors.all), keep=True
        )
        try:  # the port it got: from the line it prints once it listens
            self.url = self.errors.wait_for(
                r"serving the demo at (http://127\.0\.0\.1:\d+/mcp) "
            ).group(1)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> int:
        code = stop(self.proc, signal.SIGINT)
        self.unwatch()
        return code


@pytest.fixture(scope="module", params=[False, True], ids=["sessions", "stateless"])
def demo_http(request):
    server = DemoOverHttp(request.param)
    yield server
    assert server.stop() == 0, "".join(server.errors.all)


@pytest.mark.parametrize("mode", MODES)
def test_sdk_client_settles_on_2026_over_streamable_http(demo_http, mode):
    """``mcp.Client`` over ``streamable_http_client``: no session, the 2026 headers on every POST."""
    from mcp.client.streamable_http import streamable_http_client

    checker, exchanges, posts, replies = WireChecker(), [], [], []

    async def on_request(request):
        posts.append((request.method, dict(request.headers)))

    async def on_response(response):
        replies.append(dict(response.headers))

    async def transport(stack):
        http = await stack.enter_async_context(
            tapped_http_client(
                checker, exchanges, event_hooks={"request": [on_request], "response": [on_response]}
            )
        )
        return streamable_http_client(demo_http.url, http_client=http)

    _, pages = run_sdk_client(transport, mode)
    check_modern_traffic(checker, mode, pages)

    # Only POSTs to /mcp: no GET stream, no DELETE (there is no session to end).
    assert set(exchanges) == {("POST", "/mcp", 200)}
    assert all("mcp-session-id" not in headers for headers in replies)
    bodies = [m for m in checker.sent() if "method" in m]
    assert len(posts) == len(bodies)
    for (method, headers), body in zip(posts, bodies, strict=True):
        assert method == "POST" and "mcp-session-id" not in headers
        assert headers["mcp-protocol-version"] == MODERN and headers["mcp-method"] == body["method"]
    assert "Traceback" not in "".join(demo_http.errors.all)
