"""Other programs' clients in front of ``mcp-ref proxy``: the official Python SDK's
``ClientSession``
and the official TypeScript SDK's ``Client``, on stdio and over Streamable HTTP, each in front of a
2026-only target and a handshake-only one (tests/servers/proxy_target.py, on stdio).

The SDKs' ``ClientSession`` / ``Client`` of the handshake era, in front of the 2026-only target,
are 2025-era clients using a 2026-only server through the proxy, with the target's elicitation,
sampling and roots asked of them as requests; the Python SDK's 2026-07-28 ``Client`` in front of
the handshake-only target is a 2026 client using a handshake-only server, the target's questions
coming back to it as ``input_required``.  And an official SDK server behind the proxy.  Skipped,
saying why, when the SDK (or node, or the TypeScript SDK in the npx cache) is missing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from conftest import SERVERS, WAIT, command_label, watch_stderr
from proxy_peers import as_target, proxy_command, start_proxy_http, target_command

try:
    import mcp  # noqa: F401

    HAVE_SDK = True
except ImportError:
    HAVE_SDK = False

pytestmark = pytest.mark.slow
needs_sdk = pytest.mark.skipif(
    not HAVE_SDK, reason="the official MCP Python SDK (`pip install mcp`) is not installed"
)
TS_CLIENT = SERVERS / "ts_proxy_client.mjs"
TS_RUN_TIMEOUT = 60.0


@pytest.fixture(params=["stdio", "http"])
def front(request):
    """How the client reaches the proxy: ``(transport, a factory of its address by target era)``."""
    started = []

    def address(back_era: str):
        target = as_target(target_command(back_era))
        if request.param == "stdio":
            return proxy_command(target, "--stdio")
        started.append(start_proxy_http(target))
        return started[-1].url

    yield request.param, address
    for process in started:
        process.stop()


def run_python_sdk(transport: str, address, scenario) -> None:
    """``await scenario(session)`` in the SDK's ClientSession over ``transport``, bounded."""
    import anyio
    from mcp import ClientSession

    try:  # mcp 2.x: its types, and HTTP through httpx2
        import httpx2 as httpx
        import mcp_types as types
    except ImportError:  # mcp 1.x
        import httpx
        from mcp import types

    async def sampling(context, params):
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text="sdk model"),
            model="sdk",
        )

    async def elicitation(context, params):
        return types.ElicitResult(action="accept", content={"name": "Sdk"})

    async def roots(context):
        return types.ListRootsResult(roots=[types.Root(uri="file:///sdk")])

    async def main():
        with anyio.fail_after(3 * WAIT):
            async with AsyncExitStack() as stack:
                if transport == "stdio":
                    from mcp.client.stdio import StdioServerParameters, stdio_client

                    params = StdioServerParameters(command=address[0], args=address[1:])
                    streams = await stack.enter_async_context(stdio_client(params))
                else:
                    try:  # mcp 2.x: the caller hands over (and owns) the HTTP client
                        from mcp.client.streamable_http import streamable_http_client
                    except ImportError:  # mcp 1.x
                        from mcp.client.streamable_http import streamablehttp_client

                        streams = await stack.enter_async_context(streamablehttp_client(address))
                    else:
                        http = await stack.enter_async_context(httpx.AsyncClient(timeout=WAIT))
                        streams = await stack.enter_async_context(
                            streamable_http_client(address, http_client=http)
                        )
                session = await stack.enter_async_context(
                    ClientSession(
                        streams[0],
                        streams[1],
                        sampling_callback=sampling,
                        elicitation_callback=elicitation,
                        list_roots_callback=roots,
                    )
                )
                await scenario(session, types)

    anyio.run(main)


@needs_sdk
@pytest.mark.parametrize("back_era", ["modern", "handshake"])
def test_the_python_sdk_client_in_front_of_the_proxy(front, back_era):
    transport, address = front
    seen: dict = {}

    async def scenario(session, types):
        init = await session.initialize()
        seen["version"] = init.protocol_version
        seen["server"] = init.server_info.name
        seen["tools"] = [tool.name for tool in (await session.list_tools()).tools]
        seen["echo"] = (await session.call_tool("echo", {"text": "sdk"})).content[0].text
        seen["sum"] = (await session.call_tool("add", {"a": 1, "b": 2})).structured_content
        progress = []

        async def on_progress(value, total, message):
            progress.append(value)

        work = await session.call_tool("work", {"steps": 2}, progress_callback=on_progress)
        seen["work"], seen["progress"] = work.content[0].text, progress
        seen["note"] = (await session.read_resource("note://1")).contents[0].text
        prompt = await session.get_prompt("greet", {"name": "Bob"})
        seen["prompt"] = prompt.messages[0].content.text
        done = await session.complete(
            types.PromptReference(type="ref/prompt", name="greet"), {"name": "name", "value": "A"}
        )
        seen["completion"] = done.completion.values

    run_python_sdk(transport, address(back_era), scenario)
    assert seen["version"] == "2025-11-25" and seen["server"] == f"target-{back_era}"
    assert {"echo", "add", "work"} <= set(seen["tools"])
    assert seen["echo"] == "sdk" and seen["sum"] == {"sum": 3}
    assert seen["work"] == "Sdk|sdk model|1 roots|file:///sdk"
    assert seen["progress"] and seen["progress"][-1] == 2
    assert seen["note"] == "note one" and seen["prompt"] == "Hello, Bob!"
    assert seen["completion"] == ["Ada", "Alan"]


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


@pytest.fixture(scope="module")
def ts_sdk() -> Path:
    """The newest TypeScript SDK package in the npx cache(s); or a skip saying why."""
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH, so the TypeScript SDK's client cannot be run")
    caches = {Path(os.environ["npm_config_cache"])} if os.environ.get("npm_config_cache") else set()
    caches.add(Path.home() / ".npm")
    found = []
    for cache in caches:
        for manifest in cache.glob("_npx/*/node_modules/@modelcontextprotocol/sdk/package.json"):
            try:
                found.append((_version(json.loads(manifest.read_text())["version"]), manifest))
            except (OSError, ValueError, KeyError):
                continue
    if not found:
        pytest.skip("no @modelcontextprotocol/sdk in the npx cache (~/.npm/_npx/*/node_modules)")
    return max(found)[1].parent


@pytest.mark.parametrize("back_era", ["modern", "handshake"])
def test_the_typescript_sdk_client_in_front_of_the_proxy(ts_sdk, front, back_era):
    transport, address = front
    where = address(back_era)
    command = ["node", str(TS_CLIENT), *([where] if transport == "http" else where)]
    env = {**os.environ, "MCP_TS_SDK": str(ts_sdk), "MCP_TS_DEADLINE_MS": str(int(WAIT * 3000))}
    errors: list[str] = []
    watch_stderr(command_label(command), lambda: errors)
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=TS_RUN_TIMEOUT, env=env
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the TypeScript client did not end within {TS_RUN_TIMEOUT:g} s")
    errors.append(done.stderr)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 0 and seen.get("done"), seen
    assert seen["server"]["name"] == f"target-{back_era}"
    assert {"echo", "add", "work"} <= set(seen["tools"])
    assert seen["echo"] == "ts" and seen["sum"] == {"sum": 9}
    assert seen["work"] == "Ts|ts model|1 roots|file:///ts"
    assert seen["progress"] and seen["progress"][-1] == 2
    assert seen["note"] == "note one" and seen["prompt"] == "Hello, Bob!"
    assert seen["completion"] == ["Ada", "Alan"]


@needs_sdk
@pytest.mark.parametrize("back_era", ["auto", "handshake"])
@pytest.mark.parametrize("front_era", ["handshake", "modern"])
def test_an_official_sdk_server_behind_the_proxy(front_era, back_era):
    # Any server: the target is the official SDK's (tests/servers/interop_sdk_server.py, on stdio),
    # served over HTTP to mcp_ref clients of each era, spoken to in the era it prefers (2026-07-28)
    # or in the handshake era.
    from conftest import Collector

    from mcp_ref import Client, proxy_server

    target = [sys.executable, str(SERVERS / "interop_sdk_server.py")]
    options = {"timeout": WAIT, "stderr": "capture", "era": back_era}
    proxy = proxy_server(target, client_options=options)
    httpd = proxy.http_server("127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    logs, progress = Collector(), Collector()
    try:
        with Client.http(f"{httpd.url}/mcp", era=front_era, timeout=WAIT, on_log=logs) as client:
            assert client.server_info.name == "interop-sdk-server"
            assert {"echo", "add", "count"} <= {tool.name for tool in client.list_tools()}
            assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {
                "a": 2,
                "b": 3,
                "total": 5,
            }
            counted = client.call_tool("count", {"steps": 2}, on_progress=progress)
            assert counted.text == "counted to 2" and progress[-1][0] == 2
            # The SDK server declares no logging capability, yet logs in the handshake era: a
            # handshake-era client gets those messages as the target sends them; a 2026 client
            # asks for none from a server without logging, so none is sent (basic/index §_meta).
            assert "logging" not in client.server_capabilities
            if (front_era, back_era) == ("handshake", "handshake"):
                logs.wait_until(lambda items: any("step 2 of 2" in str(m.data) for m in items))
            assert client.read_resource("sdk://square/7").contents[0].text == "49"
            assert client.get_prompt("greet", {"name": "Bo"}).messages[0].content.text == (
                "Hello, Bo!"
            )
    finally:
        httpd.shutdown()
        thread.join(WAIT)
        proxy.close()


def _sdk_speaks_2026() -> bool:
    try:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS
    except ImportError:
        return False
    return "2026-07-28" in MODERN_PROTOCOL_VERSIONS


@pytest.mark.skipif(
    not HAVE_SDK or not _sdk_speaks_2026(), reason="this mcp does not speak the 2026-07-28 revision"
)
@pytest.mark.parametrize("back_era", ["handshake", "modern"])
def test_the_python_sdk_client_in_2026_in_front_of_the_proxy(front, back_era):
    # The SDK's high-level Client settles on 2026-07-28 (server/discover) with the proxy, in front
    # of a handshake-only target too: the target's questions come back to it as input_required.
    import anyio
    import mcp_types as types
    from mcp import Client

    transport, address = front
    where = address(back_era)
    seen: dict = {}

    async def sampling(context, params):
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="sdk model"), model="sdk"
        )

    async def elicitation(context, params):
        return types.ElicitResult(action="accept", content={"name": "Sdk"})

    async def roots(context):
        return types.ListRootsResult(roots=[types.Root(uri="file:///sdk")])

    async def main():
        with anyio.fail_after(3 * WAIT):
            async with AsyncExitStack() as stack:
                if transport == "stdio":
                    from mcp.client.stdio import StdioServerParameters, stdio_client

                    server = stdio_client(StdioServerParameters(command=where[0], args=where[1:]))
                else:
                    import httpx2
                    from mcp.client.streamable_http import streamable_http_client

                    http = await stack.enter_async_context(httpx2.AsyncClient(timeout=WAIT))
                    server = streamable_http_client(where, http_client=http)
                client = Client(
                    server,
                    read_timeout_seconds=WAIT,
                    sampling_callback=sampling,
                    elicitation_callback=elicitation,
                    list_roots_callback=roots,
                )
                await stack.enter_async_context(client)
                seen["version"] = client.protocol_version
                seen["server"] = client.server_info.name
                seen["echo"] = (await client.call_tool("echo", {"text": "sdk"})).content[0].text
                work = await client.call_tool("work", {"steps": 1})
                seen["work"] = work.content[0].text
                seen["note"] = (await client.read_resource("note://1")).contents[0].text

    anyio.run(main)
    assert seen["version"] == "2026-07-28" and seen["server"] == f"target-{back_era}"
    assert seen["echo"] == "sdk" and seen["note"] == "note one"
    assert seen["work"] == "Sdk|sdk model|1 roots|file:///sdk"
