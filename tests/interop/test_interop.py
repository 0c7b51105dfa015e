"""mcp_ref against peers this project did not write.

(a) the official Python SDK's client (``mcp.ClientSession`` over
    ``mcp.client.stdio.stdio_client``) against ``python -m mcp_ref serve-demo``;
(b) mcp_ref's Client and the mcp-ref CLI against a server written with the
    official SDK (tests/servers/interop_sdk_server.py);
(c) the reference "everything" server (``npx -y @modelcontextprotocol/server-everything``).

Traffic is validated against the official schema of the negotiated revision
wherever we can see it: our own client's trace, or a logging proxy
(tests/servers/stdio_proxy.py) in front of our server when the SDK's client
drives it.
"""

from __future__ import annotations

import json
import os
import sys

import pytest
from conftest import (
    DEMO,
    SERVERS,
    WAIT,
    WireChecker,
    check_trace,
    command_label,
    live_group_members,
    run_cli,
    wait_gone,
    watch_stderr,
)
from everything_server import EVERYTHING, EVERYTHING_START, everything_client

from mcp_ref import CapabilityError, Client, McpError

PROXY = [sys.executable, str(SERVERS / "stdio_proxy.py")]
SDK_SERVER = [sys.executable, str(SERVERS / "interop_sdk_server.py")]
SDK_TARGET = f'"{sys.executable}" "{SERVERS / "interop_sdk_server.py"}"'

try:
    import mcp  # noqa: F401

    HAVE_SDK = True
except ImportError:
    HAVE_SDK = False

needs_sdk = pytest.mark.skipif(
    not HAVE_SDK, reason="the official MCP Python SDK (`pip install mcp`) is not installed"
)
#: Other programs' servers and clients, each started for real: slow (`pytest -m "not slow"` leaves them out).
pytestmark = pytest.mark.slow


def checked_log(path) -> WireChecker:
    """A WireChecker fed with a stdio_proxy.py log (``--> {json}`` / ``<-- {json}`` lines)."""
    checker = WireChecker()
    for line in path.read_bytes().splitlines():
        if line[:4] in (b"--> ", b"<-- "):
            checker(line[:3].decode(), line[4:])
    return checker


# -- (a) the SDK's client, our server ----------------------------------------------------------------


@needs_sdk
def test_sdk_client_against_mcp_ref_demo_server(tmp_path):
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    try:  # mcp 2.x
        import mcp_types as types
        from mcp import MCPError
    except ImportError:  # mcp 1.x
        from mcp import types
        from mcp.shared.exceptions import McpError as MCPError

    log = tmp_path / "traffic.log"
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

    errors = tmp_path / "stderr"
    watch_stderr(
        command_label([*PROXY, "--", *DEMO]),
        lambda: errors.read_bytes() if errors.exists() else b"",
    )

    async def scenario():
        params = StdioServerParameters(
            command=PROXY[0], args=[*PROXY[1:], "--log", str(log), "--", *DEMO]
        )
        with open(errors, "w") as errlog:
            with anyio.fail_after(60):
                async with stdio_client(params, errlog=errlog) as (read, write):
                    async with ClientSession(
                        read, write, sampling_callback=sampling_callback
                    ) as session:
                        init = await session.initialize()
                        assert init.protocol_version == "2025-11-25"
                        assert init.server_info.name == "mcp-ref-demo"
                        assert init.server_info.version == "1.0.0"
                        assert init.instructions.startswith("A demo of every MCP feature")
                        assert (
                            init.capabilities.tools is not None
                            and init.capabilities.prompts is not None
                        )
                        assert init.capabilities.resources.subscribe is True

                        names, cursor = [], None
                        while True:
                            page = await session.list_tools(
                                params=types.PaginatedRequestParams(cursor=cursor)
                                if cursor
                                else None
                            )
                            names += [tool.name for tool in page.tools]
                            cursor = page.next_cursor
                            if not cursor:
                                break
                        assert (
                            names[:2] == ["echo", "add"] and "ask_llm" in names and len(names) > 5
                        )

                        result = await session.call_tool("echo", {"text": "hello from the SDK"})
                        assert result.is_error is False
                        assert result.content[0].text == "hello from the SDK"

                        result = await session.call_tool("weather", {"city": "Oslo"})
                        assert result.structured_content == {
                            "city": "Oslo",
                            "temperature": 21.5,
                            "unit": "celsius",
                            "conditions": "sunny",
                        }

                        result = await session.call_tool("divide", {"a": 1, "b": 0})
                        assert (
                            result.is_error is True
                            and result.content[0].text == "Cannot divide by zero"
                        )

                        result = await session.call_tool(
                            "count_slowly",
                            {"steps": 3, "delay": 0.01},
                            progress_callback=on_progress,
                        )
                        assert result.content[0].text == "counted to 3"

                        with pytest.raises(MCPError) as caught:
                            await session.call_tool("no_such_tool", {})
                        assert caught.value.error.code == -32602

                        read = await session.read_resource("demo://readme")
                        assert read.contents[0].text.startswith("# mcp_ref demo")
                        assert read.contents[0].mime_type == "text/markdown"

                        prompt = await session.get_prompt("greet", {"name": "Ada"})
                        assert prompt.messages[0].role == "user"
                        assert prompt.messages[0].content.text == "Hey Ada!"

                        # sampling: our server's tool asks the SDK client's "model".
                        result = await session.call_tool("ask_llm", {"question": "what is mcp?"})
                        assert result.is_error is False
                        assert result.content[0].text == "sdk-model says: ?pcm si tahw"

    anyio.run(scenario)
    assert progress == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]
    assert len(sampled) == 1
    assert sampled[0].max_tokens == 100 and sampled[0].system_prompt == "Answer briefly."
    checker = checked_log(log)
    assert checker.version == "2025-11-25"
    assert checker.sent("sampling/createMessage") == [] and checker.received(
        "sampling/createMessage"
    )
    checker.assert_valid()  # both the SDK's messages and our server's


# -- (b) our client and CLI, the SDK's server ----------------------------------------------------------


@needs_sdk
@pytest.mark.parametrize("era, version", [("auto", "2026-07-28"), ("handshake", "2025-11-25")])
def test_mcp_ref_client_against_sdk_server(connect, wire, era, version):
    """The SDK speaks both eras: mcp_ref settles on 2026-07-28 by itself, and on 2025-11-25 when asked."""
    logs: list = []
    # The SDK's server is a Python process that starts its event loop's shutdown when stdin closes:
    # on a loaded machine that takes longer than the default 2 s grace before SIGTERM.
    client = connect(SDK_SERVER, on_log=logs.append, era=era, shutdown_timeout=WAIT)
    assert client.server_info.name == "interop-sdk-server"
    assert client.protocol_version == version
    assert client.instructions == "An official-SDK server for interop tests."
    client.ping()

    tools = {tool.name: tool for tool in client.list_tools()}
    assert set(tools) == {"echo", "add", "count", "fail"}
    assert tools["add"].input_schema["required"] == ["a", "b"]
    assert tools["add"].output_schema["properties"]["total"] == {
        "title": "Total",
        "type": "integer",
    }

    assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    result = client.call_tool("add", {"a": 2, "b": 40})
    assert result.structured_content == {"a": 2, "b": 40, "total": 42}
    assert not result.is_error

    seen: list = []
    result = client.call_tool(
        "count",
        {"steps": 3},
        on_progress=lambda p, total, message: seen.append((p, total, message)),
    )
    assert result.text == "counted to 3"
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]

    result = client.call_tool("fail", {"message": "boom"})
    assert result.is_error and result.text.endswith(
        "boom"
    )  # the SDK prefixes "Error executing tool fail: "
    # The 2025-11-25 spec makes an unknown tool a protocol error (-32602); mcp 2.x's MCPServer
    # answers with an isError result instead.  Our client must handle either.
    try:
        result = client.call_tool("no_such_tool", {})
    except McpError as exc:
        assert exc.code == -32602
    else:
        assert result.is_error and "no_such_tool" in result.text

    assert client.read_resource("sdk://hello").contents[0].text == "hello from the SDK"
    assert [t.uri_template for t in client.list_resource_templates()] == ["sdk://square/{n}"]
    assert client.read_resource("sdk://square/7").contents[0].text == "49"

    [prompt] = client.list_prompts()
    assert (
        prompt.name == "greet"
        and prompt.arguments[0].name == "name"
        and prompt.arguments[0].required
    )
    assert client.get_prompt("greet", {"name": "Ada"}).messages[0].content.text == "Hello, Ada!"

    # The SDK's ctx.info() sends notifications/message; they reach on_log (on the callback thread,
    # after the result, so close the client to drain them).  Note: mcp 2.x's MCPServer sends log
    # messages without declaring the logging capability, so our client must not call
    # logging/setLevel on it ("Only use capabilities that were successfully negotiated").
    if "logging" not in client.server_capabilities:
        with pytest.raises(CapabilityError):
            client.set_logging_level("debug")
    client.close()
    if era == "handshake":
        assert [(m.level, m.data) for m in logs] == [("info", f"step {n} of 3") for n in (1, 2, 3)]
    else:  # 2026-07-28 basic/index: without a logLevel in _meta the server "MUST NOT send" log messages
        assert logs == []
    assert client.session.transport.returncode == 0


@needs_sdk
def test_cli_against_sdk_server():
    """The command launches the SDK's server itself (stdio), in either era."""
    proc = run_cli("info", SDK_TARGET)
    assert proc.returncode == 0
    assert "server:       interop-sdk-server" in proc.stdout
    assert "protocol:     2026-07-28" in proc.stdout and "era:          modern" in proc.stdout
    assert "instructions: An official-SDK server for interop tests." in proc.stdout

    # The handshake era: the SDK sends its log messages unasked (2026-07-28: only with a logLevel).
    proc = run_cli("--trace", "--era", "handshake", "call", SDK_TARGET, "count", "steps=2")
    assert (proc.returncode, proc.stdout) == (0, "counted to 2\n")
    checker = check_trace(proc.stderr)
    assert len(checker.received("notifications/message")) == 2
    checker.assert_valid()


def test_cli_verbs_against_sdk_server(sdk_streamable):
    """Every verb against the SDK's server: the same server (tests/servers/interop_sdk_server.py) that
    the test above launches, here over Streamable HTTP, one process for the whole run (conftest)."""
    target = sdk_streamable.url + "/mcp"
    proc = run_cli("tools", target)
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[:2] == [
        "echo(text: string)  Echo the text back.",
        "add(a: integer, b: integer)  Add two integers, as structured output.",
    ]

    proc = run_cli("call", target, "echo", "text=hello")
    assert (proc.returncode, proc.stdout) == (0, "hello\n")
    proc = run_cli("--json", "call", target, "add", "a=1", "b=2")
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["structuredContent"] == {"a": 1, "b": 2, "total": 3}
    proc = run_cli("call", target, "fail", "message=boom")
    assert proc.returncode == 5 and proc.stdout.endswith("boom\n")
    proc = run_cli("call", target, "nope")
    assert proc.returncode == 5

    proc = run_cli("read", target, "sdk://hello")
    assert (proc.returncode, proc.stdout) == (0, "hello from the SDK\n")
    proc = run_cli("templates", target)
    assert (proc.returncode, proc.stdout) == (0, "sdk://square/{n}  square\n")

    proc = run_cli("prompt", target, "greet", "name=Ada")
    assert (proc.returncode, proc.stdout) == (0, "[user] Hello, Ada!\n")


def test_cli_against_a_server_from_pypi():
    # mcp-server-time: a published server this project did not write (installed by the test extra).
    pytest.importorskip("mcp_server_time", reason="mcp-server-time is not installed")
    target = f'"{sys.executable}" -m mcp_server_time --local-timezone UTC'

    cli = run_cli
    proc = cli("tools", target)
    assert proc.returncode == 0
    assert [line.split("(")[0] for line in proc.stdout.splitlines()] == [
        "get_current_time",
        "convert_time",
    ]
    proc = cli("--json", "--trace", "call", target, "get_current_time", "timezone=UTC")
    assert proc.returncode == 0
    assert json.loads(json.loads(proc.stdout)["content"][0]["text"])["timezone"] == "UTC"
    checker = check_trace(proc.stderr)
    checker.assert_valid()
    proc = cli("call", target, "get_current_time", "timezone=Nowhere/Bad")
    assert proc.returncode == 5  # the tool's isError result


# -- (c) the reference "everything" server -------------------------------------------------------------


@pytest.fixture(scope="module")
def everything():
    """A Client on the everything server, or a skip when it cannot be fetched and started in time."""
    wire = WireChecker()
    with everything_client(trace=wire) as client:
        yield client, wire


@pytest.mark.timeout(300)
def test_everything_server(everything):
    client, wire = everything
    assert client.protocol_version == "2025-11-25"
    assert client.server_info.name == "mcp-servers/everything"

    tools = {tool.name for tool in client.list_tools()}
    assert "echo" in tools
    result = client.call_tool("echo", {"message": "hello, everything"})
    assert not result.is_error and result.text == "Echo: hello, everything"

    resources = client.list_resources()
    assert resources
    read = client.read_resource(resources[0].uri)
    assert read.contents and read.contents[0].uri == resources[0].uri

    prompts = [prompt.name for prompt in client.list_prompts()]
    assert prompts
    simple = "simple-prompt" if "simple-prompt" in prompts else None
    if simple:
        assert client.get_prompt(simple).messages

    client.ping()
    # Every message both ways is checked against the official 2025-11-25 schema.  (If a future
    # everything server broke the schema itself, the right response is to report it and check
    # only wire.sent() here -- not to loosen the checker.)
    wire.assert_valid()
    assert len(wire.sent()) >= 8 and len(wire.received()) >= 7


@pytest.mark.timeout(300)
def test_everything_server_shuts_down_without_orphans(everything):
    """npx -> sh -> node: closing must leave nothing of the group running."""
    # A client of its own (the fixture's is still in use); the fixture proved npx can start it.
    client = Client.stdio(
        EVERYTHING, stderr="capture", timeout=EVERYTHING_START, shutdown_timeout=2.0
    )
    leader = client.session.transport.process
    assert os.getpgid(leader.pid) == leader.pid != os.getpgid(0)
    client.close()
    assert leader.returncode is not None
    # Not our children, so nothing to wait() on: each member's end, told by its pidfd.
    for member in live_group_members(leader.pid):
        assert wait_gone(member), f"pid {member} of the group outlived close()"
    assert live_group_members(leader.pid) == []
