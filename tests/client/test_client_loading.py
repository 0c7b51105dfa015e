"""What a client loads: a plain one reads no extra and no feature module it does not use; each
loads when the caller asks for it (issue 21).  Both eras' calls live beside the connection
(``mcp_ref.client.connection``); only what answers the server and the features load on demand.

Each case runs a real client in a fresh interpreter (real stdio server subprocess) and reads its
``sys.modules``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
from conftest import WAIT

SERVER = """
from mcp_ref import Server
server = Server("plain")

@server.tool()
def add(a: int, b: int) -> int:
    "Add two numbers."
    return a + b

server.run_stdio()
"""

#: Loaded only when used: listings, listen streams, the cache, the answering of requests, the extras, HTTP.
ON_DEMAND = (
    "mcp_ref.client.answering",
    "mcp_ref.client.completion",
    "mcp_ref.client.listings",
    "mcp_ref.client.prompts",
    "mcp_ref.client.resources",
    "mcp_ref.client.listening",
    "mcp_ref.client.cache",
    "mcp_ref.client.callbacks",
    "mcp_ref.client.tool_headers",
    "mcp_ref.client.interfaces",
    "mcp_ref.client.shorthand",
    "mcp_ref.pagination",
    "mcp_ref.stdio_stderr",
)
NEVER_PLAIN = (
    "mcp_ref.extensions",
    "mcp_ref.oauth",
    "mcp_ref.workbench",
    "mcp_ref.http.http",
    "mcp_ref.http.sse",
    "requests",
)


def loaded(tmp_path, body: str) -> set[str]:
    """The modules (of mcp_ref, and ``requests``) loaded by a script running ``body`` with ``SERVER``
    as the ``command`` at hand."""
    server = tmp_path / "server.py"
    server.write_text(SERVER)
    script = tmp_path / "client.py"
    script.write_text(
        textwrap.dedent("""
        import json, sys
        from mcp_ref import Client
        command = [sys.executable, sys.argv[1]]
    """)
        + textwrap.dedent(body)
        + textwrap.dedent("""
        names = sorted(m for m in sys.modules if m.startswith(("mcp_ref", "requests")))
        print(json.dumps(names))
    """)
    )
    done = subprocess.run(
        [sys.executable, str(script), str(server)], capture_output=True, text=True, timeout=6 * WAIT
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.slow
def test_a_plain_handshake_client_loads_nothing_it_does_not_use(tmp_path):
    modules = loaded(
        tmp_path,
        """
        with Client.stdio(command, era="handshake") as client:
            assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
    """,
    )
    assert "mcp_ref.client.connection" in modules  # the probe: the script really ran a client
    assert "mcp_ref.client.mrtr" not in modules
    assert sorted(m for m in modules if m.startswith(ON_DEMAND + NEVER_PLAIN)) == []


@pytest.mark.slow
def test_a_plain_modern_client_loads_nothing_it_does_not_use(tmp_path):
    modules = loaded(
        tmp_path,
        """
        with Client.stdio(command) as client:
            assert client.era == "modern"
            assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
    """,
    )
    assert "mcp_ref.client.connection" in modules
    assert "mcp_ref.client.mrtr" not in modules  # no input_required round
    assert sorted(m for m in modules if m.startswith(ON_DEMAND + NEVER_PLAIN)) == []


@pytest.mark.slow
@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_what_the_caller_asks_for_is_loaded_when_it_asks(tmp_path, era):
    modules = loaded(
        tmp_path,
        f"""
        with Client.stdio(command, era={era!r}, approve=lambda request: True, server_request_limit="5/minute",
                          roots=["file:///tmp"], on_list_changed=print) as client:
            assert [tool.name for tool in client.list_tools()] == ["add"]
            assert client.call_tool("add", {{"a": 1, "b": 2}}, task=True).structured_content == {{"result": 3}}
            with client.listen(tools=True):
                pass
    """,
    )
    wanted = {
        "mcp_ref.pagination",
        "mcp_ref.client.answering",
        "mcp_ref.client.listening",
        "mcp_ref.extensions.ratelimit",
        "mcp_ref.client.shorthand",
    }
    if era == "modern":
        wanted |= {"mcp_ref.client.cache", "mcp_ref.extensions.client_tasks"}
    assert wanted <= modules
    assert not any(
        m.startswith(("mcp_ref.http.http", "requests", "mcp_ref.oauth")) for m in modules
    )


def test_the_defaults_named_in_the_client_are_those_of_the_modules_it_does_not_load():
    from mcp_ref import pagination
    from mcp_ref.client import cache, client, connection

    assert client.DEFAULT_MAX_PAGES == pagination.DEFAULT_MAX_PAGES
    assert client.DEFAULT_CACHE_SIZE == cache.DEFAULT_MAX_ENTRIES
    assert connection.CACHED_METHODS == set(cache.CACHEABLE)


def test_the_shorthands_members_are_the_clients_own_and_no_other_name_is():
    """Issue 33 item 4: the client's shorthand (mcp_ref.client.shorthand) is loaded on first use,
    its members bound to the client (and the tool call) as if they were its own."""
    from mcp_ref import Client, Server

    server = Server("plain")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    with pytest.raises(TypeError, match="unexpected keyword argument.*bogus"):
        Client.in_memory(server, bogus=1)
    with Client.in_memory(server, server_request_limit="5/minute", era="handshake") as client:
        assert client.hosted_tasks is None
        assert client.server_request_limiter is not None
        assert client.get_task.__self__ is client and callable(client.cancel_task)
        call = client.start_tool_call("add", {"a": 1, "b": 2})
        assert call.result().structured_content == {"result": 3} and call.task_id is None
        for missing in ("nothing_here", "_tasks", "__getstate_x__"):
            with pytest.raises(AttributeError, match=missing):
                getattr(client, missing)
        with pytest.raises(AttributeError, match="nothing_here"):
            call.nothing_here  # noqa: B018
