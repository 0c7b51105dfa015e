"""A third party's extension, built from the public interface alone (``mcp_ref.Extension``).

The example of docs/extensions.md (an audit log recording every request's method and caller, and a
custom method ``acme/echo`` with its capability) runs as it is written there: over a real stdio
subprocess and over HTTP on 127.0.0.1, in both eras, with a real Client.  Then: an extension's
``intercept_tool_call`` can answer instead of the tool.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from http_fixtures import serve  # noqa: F401 - fixture

from mcp_ref import MODERN_VERSIONS, Client, Extension, McpError, Server

WAIT = 30.0
ERAS = ("handshake", "modern")
DOC = Path(__file__).resolve().parents[1].parent / "docs" / "extensions.md"


def example_source() -> str:
    """The example of docs/extensions.md: its one block that defines ``build_server``."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    return next(block for block in blocks if "def build_server" in block)


@pytest.fixture(scope="module")
def example(tmp_path_factory) -> Path:
    """The example written to a file, as a reader would save it."""
    path = tmp_path_factory.mktemp("acme") / "acme_server.py"
    path.write_text(example_source())
    return path


def exercise(client: Client, era: str, caller: str) -> None:
    """What the example promises, asked of ``client`` (a fresh connection in ``era``)."""
    capabilities = client.server_capabilities
    if era == "modern":
        assert capabilities["extensions"]["acme/echo"] == {"version": 1}
    else:
        assert capabilities["experimental"]["acme/echo"] == {"version": 1}
    assert client.request("acme/echo", {"text": "hi"})["text"] == "hi"
    with pytest.raises(McpError) as refused:  # the audit log refuses prompts/list: a JSON-RPC error
        client.request("prompts/list", {})
    assert refused.value.code == -32600 and "refused by the audit log" in refused.value.message
    entries = client.call_tool("audited", {}).structured_content["result"]  # the session goes on
    first = "initialize" if era == "handshake" else "server/discover"
    methods = [entry.split(" ")[0] for entry in entries]
    assert {"acme/echo", "prompts/list", "tools/call"} <= set(methods) and first in methods
    assert all(re.fullmatch(caller, entry.split(" ", 1)[1]) for entry in entries), entries


@pytest.mark.parametrize("era", ERAS)
def test_an_audit_log_and_a_custom_method_over_stdio(example, era):
    with Client.stdio([sys.executable, str(example)], era=era, timeout=WAIT) as client:
        exercise(client, era, "stdio")


@pytest.mark.parametrize("era", ERAS)
def test_an_audit_log_and_a_custom_method_over_http(example, serve, era):
    scope: dict = {"__name__": "acme_server"}
    exec(compile(example_source(), str(example), "exec"), scope)
    served = serve(scope["build_server"]())
    with Client.http(served.mcp, era=era, timeout=WAIT) as client:
        exercise(client, era, r"http-(session|client):.+")


class Cached(Extension):
    """Answers ``slow`` from its cache instead of running the tool, once it has the answer."""

    def __init__(self) -> None:
        self.answers: dict[str, dict] = {}

    def intercept_tool_call(self, caller, tool, arguments, context, run):
        if tool.name in self.answers:
            return self.answers[tool.name]
        result = run(context)
        self.answers[tool.name] = result
        return result


@pytest.mark.parametrize("era", ERAS)
def test_an_extension_can_answer_a_tool_call_instead_of_the_tool(era):
    runs = []
    server = Server("cached", extensions=[Cached()])

    @server.tool()
    def slow() -> str:
        """Counted each time it runs."""
        runs.append(1)
        return f"run {len(runs)}"

    with Client.in_memory(server, era=era, timeout=WAIT) as client:
        assert client.call_tool("slow", {}).content[0].text == "run 1"
        assert client.call_tool("slow", {}).content[0].text == "run 1"  # the extension's answer
    assert runs == [1]


def test_extensions_are_asked_in_the_order_they_were_added():
    order = []

    class Mark(Extension):
        def __init__(self, label: str) -> None:
            self.label = label

        def intercept_request(self, call, proceed):
            order.append(self.label)
            return proceed()

    first = Mark("first")
    server = Server("ordered", extensions=[first, Mark("second")])
    assert server.add_extension(first) is first and len(server.extensions) == 2  # taken once
    with Client.in_memory(server, timeout=WAIT) as client:
        client.ping()
    assert order[-2:] == ["first", "second"]


def test_every_extension_is_told_a_connection_ended_even_after_one_that_fails(caplog):
    """``connection_ended`` was an HTTP session's alone (``http_session_ended``): an in-memory or
    stdio connection's end told no extension.  Now each is told once the connection has ended, in
    the order added; one that raises is logged, the next is told, and the connection ends."""
    told = []

    class Broken(Extension):
        name = "broken"

        def connection_ended(self, connection):
            raise RuntimeError("cannot clean up")

    class Tidy(Extension):
        def connection_ended(self, connection):
            told.append(connection)

    server = Server("tidy", extensions=[Broken(), Tidy()])
    with Client.in_memory(server, timeout=WAIT) as client:
        client.ping()
        [connection] = server.connections()
    assert connection.session.wait_closed(WAIT) and told == [connection]
    assert "extension broken failed at the end of a connection" in caplog.text


#: A server with two third-party extensions, each declaring its own ``experimental`` key in the
#: handshake era (as docs/extensions.md's Echo does) and its settings at 2026-07-28.
TWO_EXPERIMENTAL = """
from mcp_ref import MODERN_VERSIONS, Extension, Server


def announcing(label):
    class Announced(Extension):
        name = label

        def capabilities(self, version, peer=None):
            settings = {"version": 1}
            return settings if version in MODERN_VERSIONS else {"experimental": {label: settings}}

        def methods(self, version):
            return {label: lambda caller, context, params: {"from": label}}

    return Announced()


server = Server("two", extensions=[announcing("acme/echo"), announcing("acme/audit")])
server.run()
"""


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
def test_two_extensions_declaring_experimental_keys_are_both_declared(tmp_path, era):
    # Each keeps its own key: the second's {"experimental": {...}} erased the first's before.
    script = tmp_path / "two_server.py"
    script.write_text(TWO_EXPERIMENTAL)
    with Client.stdio([sys.executable, str(script)], era=era, timeout=WAIT) as client:
        capabilities = client.server_capabilities
        declared = capabilities["extensions" if era == "modern" else "experimental"]
        assert declared == {"acme/echo": {"version": 1}, "acme/audit": {"version": 1}}
        assert client.request("acme/echo", {})["from"] == "acme/echo"
        assert client.request("acme/audit", {})["from"] == "acme/audit"


def test_an_extension_declaring_a_key_another_declares_is_refused_when_added():
    class Declaring(Extension):
        def __init__(self, name, declared):
            self.name, self.declared = name, declared

        def capabilities(self, version, peer=None):
            return None if version in MODERN_VERSIONS else self.declared

    first = Declaring("acme/first", {"experimental": {"acme/shared": {}}, "acme": {"on": True}})
    server = Server("clash", extensions=[first])
    others = [
        Declaring("acme/second", {"experimental": {"acme/shared": {"v": 2}}}),
        Declaring("acme/third", {"acme": {"on": False}}),  # the same key, another value
        Declaring("acme/fourth", {"experimental": True}),  # a key holding one of the first's
    ]
    for other in others:
        with pytest.raises(ValueError) as refused:
            server.add_extension(other)
        assert repr(other.name) in str(refused.value) and "'acme/first'" in str(refused.value)
    assert "experimental.acme/shared" in str(
        pytest.raises(ValueError, server.add_extension, others[0]).value
    )
    assert server.extensions == [first]  # none of them was taken; the server goes on
    # a key of its own is merged beside the first's
    server.add_extension(Declaring("acme/fifth", {"experimental": {"acme/fifth": {}}}))
    assert server.capabilities("2025-11-25")["experimental"] == {
        "acme/shared": {},
        "acme/fifth": {},
    }


#: What only the shorthand (server/shorthand.py) may import of the server's modules: the project's own
#: extensions, OAuth, the workbench, the HTTP server.
EXTENSION_PACKAGES = (
    "mcp_ref.extensions",
    "mcp_ref.oauth",
    "mcp_ref.workbench",
    "mcp_ref.http.server",
)


def imported_modules(path: Path) -> list[str]:
    """Every module ``path`` imports, at the top or inside a function, as an absolute name."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "mcp_ref.server".split(".")[: max(0, 2 - node.level + 1)] if node.level else []
            found.append(".".join([*base, node.module] if node.module else base))
    return found


#: What a server module may import of those packages beyond the shorthand: serving over HTTP
#: (``Server.run_http``, ``wsgi_app``, ``http_server``; ``run(transport="http")`` through
#: running.py), a transport, loaded when asked for.
HTTP_SERVING = {
    "server.py": {"mcp_ref.http.server.serving"},
    "running.py": {"mcp_ref.http.server.serving"},
}


def test_the_servers_modules_import_no_extension_but_in_the_shorthand():
    server_dir = Path(__file__).resolve().parents[1].parent / "mcp_ref" / "server"
    offending = {
        path.name: [
            name
            for name in imported_modules(path)
            if name.startswith(EXTENSION_PACKAGES) and name not in HTTP_SERVING.get(path.name, ())
        ]
        for path in sorted(server_dir.glob("*.py"))
        if path.name != "shorthand.py"
    }
    assert {name: found for name, found in offending.items() if found} == {}
    assert any(
        name.startswith(EXTENSION_PACKAGES)
        for name in imported_modules(server_dir / "shorthand.py")
    )
