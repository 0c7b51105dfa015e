"""The server's seams, through extensions (mcp_ref.extension): around dispatch, the item
gate, around a tools/call; and a plain server that loads none of the extras."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from mcp_ref import Client, Server
from mcp_ref.errors import InvalidRequest, McpError
from mcp_ref.extension import Extension
from mcp_ref.server.connection import OPEN

WAIT = 10.0


def _server() -> Server:
    server = Server("seams")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @server.tool()
    def secret() -> str:
        """Hidden from everyone but the gate's friends."""
        return "s"

    return server


def test_an_extensions_intercept_request_sees_every_request_and_can_refuse_one():
    server = _server()
    seen = []

    class Watch(Extension):
        def intercept_request(self, call, proceed):
            seen.append(call.method)
            if call.method == "tools/call" and call.params.get("name") == "secret":
                raise InvalidRequest("refused by the middleware")
            return proceed()

    server.add_extension(Watch())
    with Client.in_memory(server, timeout=WAIT) as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
        with pytest.raises(McpError) as refused:
            client.call_tool("secret", {})
        assert refused.value.code == -32600 and "middleware" in refused.value.message
    assert (
        seen[0] in ("initialize", "server/discover") and seen.count("tools/call") == 2
    )  # every request


def test_a_custom_gate_hides_an_item_from_listings_and_calls():
    server = _server()

    class NoSecrets(type(OPEN)):
        restricts = True

        def visible(self, principal, action, name, entry, request=None):
            return None if name == "secret" else entry

        def filter_listing(self, principal, kind, items):
            return [item for item in items if item.get("name") != "secret"]

    class Hide(Extension):
        gate = NoSecrets()

    server.add_extension(Hide())
    with Client.in_memory(server, timeout=WAIT) as client:
        assert [tool.name for tool in client.list_tools()] == ["add"]
        with pytest.raises(McpError) as missing:
            client.call_tool("secret", {})
        assert missing.value.code == -32602 and "Unknown tool" in missing.value.message
    assert server.visible_tool(server_principal(), "secret") is None
    assert server.visible_tool(server_principal(), "add") is server.get_tool("add")
    assert [type(extension) for extension in server.extensions] == [Hide]


def server_principal():
    from mcp_ref.server.principal import Principal

    return Principal("someone")


def test_an_extensions_intercept_tool_call_wraps_running_the_tool():
    server = _server()
    calls = []

    class Doubled(Extension):
        def intercept_tool_call(self, caller, tool, arguments, context, run):
            calls.append((tool.name, dict(arguments), caller.principal.id))
            result = run(context)
            if tool.name == "add":
                result["structuredContent"] = {"result": result["structuredContent"]["result"] * 2}
            return result

    server.add_extension(Doubled())
    with Client.in_memory(server, timeout=WAIT) as client:
        assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 10}
    assert calls and calls[0][:2] == ("add", {"a": 2, "b": 3})


PLAIN = textwrap.dedent("""
    import json, sys
    from mcp_ref import Client, Server
    server = Server("plain")

    @server.tool()
    def add(a: int, b: int) -> int:
        \"\"\"Add.\"\"\"
        return a + b

    with Client.in_memory(server, timeout=10) as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
    print(json.dumps(sorted(m for m in sys.modules if m.startswith("mcp_ref."))))
""")


@pytest.mark.slow
def test_a_plain_server_loads_none_of_the_extras():
    out = subprocess.run(
        [sys.executable, "-c", PLAIN], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert "mcp_ref.server.tools" in loaded  # the probe saw the server's modules
    for name in (
        "mcp_ref.extensions",
        "mcp_ref.server.subscriptions",
        "mcp_ref.server.prompts",
        "mcp_ref.server.resources",
        "mcp_ref.server.completion",
        "mcp_ref.uri_template",
        "mcp_ref.pagination",
    ):
        assert not any(m == name or m.startswith(name + ".") for m in loaded), name


def test_the_extras_plug_in_only_when_asked():
    server = Server("with-extras", rate_limit="100/minute")
    assert [type(extension).__name__ for extension in server.extensions] == ["Policy"]
    assert server.request_hooks == [server.policy.intercept_request]
    assert server.gate is OPEN  # rate limits alone hide nothing
    assert Server("open").extensions == [] and Server("open").request_hooks == []
    tasks = Server("tasks")

    @tasks.tool(task="optional")
    def slow() -> str:
        """Slow."""
        return "done"

    assert tasks.extension_method("tasks/get", "2026-07-28") is not None and tasks.tool_call_hooks
    assert tasks.capabilities("2026-07-28")["extensions"] == {"io.modelcontextprotocol/tasks": {}}
