"""``mcp-ref run SERVER[:OBJ]``: the user's own file or module, served on stdio or over HTTP.

Every test runs the real command (``python -m mcp_ref run ...``) as a subprocess: over stdio a
mcp_ref Client launches it; over HTTP (``--http 127.0.0.1:0``) the test reads the address the
command announces on stderr and connects to it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap

import pytest
import requests
from conftest import WAIT

from mcp_ref import Client

pytestmark = pytest.mark.slow

RUN = [sys.executable, "-m", "mcp_ref", "run"]

#: A server file as a user writes it: its own main block (which must not fire under ``run``),
#: a print while it loads (which must not reach stdout, the protocol's), a helper module beside it.
SERVER_PY = """\
import sys

from helper import greeting
from mcp_ref import Server

print("loading server.py")  # at import: must not corrupt the stdio stream
server = Server(sys.argv[1] if len(sys.argv) > 1 else "notes")


@server.tool()
def greet(name: str) -> str:
    \"\"\"Greet someone.\"\"\"
    return greeting(name)


if __name__ == "__main__":
    raise SystemExit("the file's own main block ran")
"""


@pytest.fixture
def project(tmp_path):
    """A folder holding server.py and helper.py (imported from server.py as a sibling)."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "server.py").write_text(SERVER_PY)
    (folder / "helper.py").write_text("def greeting(name):\n    return f'hello {name}'\n")
    return folder


def write(folder, name: str, code: str):
    path = folder / name
    path.write_text(textwrap.dedent(code))
    return path


def greet(client: Client) -> str:
    return client.call_tool("greet", {"name": "Ada"}).content[0].text


def test_run_a_file_on_stdio(project, tmp_path):
    """Launched from another folder: the file's folder is on sys.path (helper imports), its main
    block does not fire, and its print at import went to stderr, not into the protocol."""
    lines: list[str] = []
    with Client.stdio(
        [*RUN, str(project / "server.py")], cwd=str(tmp_path), stderr=lines.append, timeout=WAIT
    ) as client:
        assert client.server_info.name == "notes"
        assert greet(client) == "hello Ada"
    assert "loading server.py" in lines


def test_a_file_named_like_a_loaded_module_does_not_replace_it(tmp_path):
    """json.py: served under a name of its own; the json the library uses is still the standard one."""
    path = write(
        tmp_path,
        "json.py",
        """
        from mcp_ref import Server
        server = Server("named-json")

        @server.tool()
        def greet(name: str) -> dict:
            return {"hello": name}
        """,
    )
    with Client.stdio([*RUN, str(path)], stderr="capture", timeout=WAIT) as client:
        assert client.server_info.name == "named-json"
        assert client.call_tool("greet", {"name": "Ada"}).structured_content == {"hello": "Ada"}


def test_the_words_after_two_dashes_are_the_servers_argv(project):
    with Client.stdio(
        [*RUN, str(project / "server.py"), "--", "from-argv"], stderr="capture", timeout=WAIT
    ) as client:
        assert client.server_info.name == "from-argv"


def test_run_a_module_path_with_an_object(tmp_path):
    """``pkg.module:obj`` from the working directory, as ``python -m`` finds it."""
    package = tmp_path / "myproject"
    package.mkdir()
    (package / "__init__.py").write_text("")
    write(
        package,
        "app.py",
        """
        from mcp_ref import Server

        other = Server("other")
        api = Server("api")

        @api.tool()
        def greet(name: str) -> str:
            return "hi " + name
        """,
    )
    with Client.stdio(
        [*RUN, "myproject.app:api"], cwd=str(tmp_path), stderr="capture", timeout=WAIT
    ) as client:
        assert (client.server_info.name, greet(client)) == ("api", "hi Ada")


def test_a_factory_named_after_the_colon_is_called(tmp_path):
    path = write(
        tmp_path,
        "factory.py",
        """
        from mcp_ref import Server

        def build_server():
            server = Server("built")

            @server.tool()
            def greet(name: str) -> str:
                return "built for " + name

            return server
        """,
    )
    with Client.stdio([*RUN, f"{path}:build_server"], stderr="capture", timeout=WAIT) as client:
        assert greet(client) == "built for Ada"


def test_the_only_server_is_found_whatever_its_name(tmp_path):
    path = write(
        tmp_path,
        "only.py",
        """
        from mcp_ref import Server
        bookmarks = Server("bookmarks")
        """,
    )
    with Client.stdio([*RUN, str(path)], stderr="capture", timeout=WAIT) as client:
        assert client.server_info.name == "bookmarks"


def run_fails(*args: str, cwd=None) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [*RUN, *args],
        capture_output=True,
        text=True,
        timeout=WAIT * 3,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode != 0 and proc.stdout == "", (proc.returncode, proc.stdout)
    return proc


def last_line(proc: subprocess.CompletedProcess) -> str:
    return proc.stderr.strip().splitlines()[-1]


def test_a_missing_object_is_named_with_what_the_file_holds(tmp_path):
    path = write(
        tmp_path,
        "two.py",
        """
        from mcp_ref import Server
        alpha = Server("alpha")
        beta = Server("beta")
        def helper():
            pass
        def broken():
            raise RuntimeError("no config")
        """,
    )
    missing = run_fails(f"{path}:nope")
    assert missing.returncode == 4 and len(missing.stderr.strip().splitlines()) == 1
    assert "has no 'nope'" in missing.stderr and "alpha (Server)" in missing.stderr
    assert "helper (function)" in missing.stderr
    several = run_fails(str(path))
    assert several.returncode == 4
    assert f"holds 2 Servers (alpha, beta): name one, e.g. {path}:alpha" in last_line(several)
    not_a_server = run_fails(f"{path}:helper")
    assert "helper() returned a NoneType, not a mcp_ref Server" in last_line(not_a_server)
    failing = run_fails(f"{path}:broken")
    assert failing.returncode == 4
    assert last_line(failing) == f"mcp-ref: {path}:broken() raised RuntimeError: no config"
    assert 'in broken\n    raise RuntimeError("no config")' in failing.stderr  # its traceback


@pytest.mark.parametrize(
    "text, path, module, attribute",
    [
        ("server.py", "server.py", None, None),
        ("dir/server.py:build", "dir/server.py", None, "build"),
        ("pkg.mod:app.server", None, "pkg.mod", "app.server"),
        ("pkg.mod", None, "pkg.mod", None),
        ("C:\\srv\\server.py", "C:\\srv\\server.py", None, None),  # a drive, not :OBJ
    ],
)
def test_server_specs(text, path, module, attribute):
    from pathlib import Path

    from mcp_ref.workbench.cli_run import parse_spec

    spec = parse_spec(text)
    assert (spec.path, spec.module, spec.attribute) == (
        Path(path) if path else None,
        module,
        attribute,
    )


@pytest.mark.parametrize("text", ["server.py:", "not a module", ":obj"])
def test_bad_server_specs_say_what_is_wrong(text):
    from mcp_ref.workbench.cli_run import LoadError, parse_spec

    with pytest.raises(LoadError):
        parse_spec(text)


def test_a_file_without_a_server_says_what_it_found(tmp_path):
    path = write(tmp_path, "empty.py", "VALUE = 3\n")
    proc = run_fails(str(path))
    assert proc.returncode == 4
    assert "holds no mcp_ref Server (it defines VALUE (int))" in last_line(proc)


def test_a_file_that_raises_on_import_shows_its_traceback_and_one_line(tmp_path):
    path = write(
        tmp_path,
        "broken.py",
        """
        from mcp_ref import Server
        server = Server("broken")
        RATE = 1 / 0
        """,
    )
    proc = run_fails(str(path))
    assert proc.returncode == 4
    # the user's own line, as python shows it; not the import machinery's frames
    assert f'File "{path}", line 4, in <module>' in proc.stderr
    assert "importlib" not in proc.stderr and "cli_run" not in proc.stderr
    assert last_line(proc) == (
        f"mcp-ref: {path} raised ZeroDivisionError: division by zero while loading"
    )


def test_a_syntax_error_and_a_missing_file_are_said_so(tmp_path):
    path = write(tmp_path, "typo.py", "def broken(:\n")
    proc = run_fails(str(path))
    assert proc.returncode == 4 and "SyntaxError" in last_line(proc)
    assert "line 1" in proc.stderr
    missing = run_fails(str(tmp_path / "absent.py"))
    assert missing.returncode == 4
    assert (
        last_line(missing)
        == f"mcp-ref: cannot load {tmp_path / 'absent.py'}: the file does not exist"
    )
    module = run_fails("no_such_module_for_mcp_ref", cwd=tmp_path)
    assert "cannot import no_such_module_for_mcp_ref: no module named" in last_line(module)


@pytest.mark.parametrize(
    "args, said",
    [
        ([], "name the server to run"),
        (["a.py", "b.py"], "run takes one SERVER"),
        (["server.py", "--stateless"], "--stateless goes with --http"),
        (["server.py", "--db", "x"], "the server's own arguments go last, after --"),
        (["server.py", "--http", "nowhere"], "--http takes HOST:PORT"),
    ],
)
def test_usage_errors_are_one_line_exit_2(project, args, said):
    proc = run_fails(*args, cwd=project)
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert said in line


class Served:
    """``mcp-ref run ... --http 127.0.0.1:0`` running: its announced URLs; stopped with Ctrl-C."""

    def __init__(self, *args: str, cwd=None):
        from test_http_deploy import LineReader

        self.proc = subprocess.Popen(
            [*RUN, *args, "--http", "127.0.0.1:0"],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.line = LineReader(self.proc.stderr).wait_for(r"^mcp-ref: serving .*").group(0)
        self.urls = re.findall(r"http://127\.0\.0\.1:\d+/\S+", self.line)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(WAIT)


@pytest.fixture
def served():
    running: list[Served] = []

    def start(*args: str, cwd=None) -> Served:
        running.append(Served(*args, cwd=cwd))
        return running[-1]

    yield start
    for each in running:
        each.stop()


def test_run_over_http_on_a_free_port(project, served):
    """``--http 127.0.0.1:0``: the bound address announced; Streamable HTTP and HTTP+SSE both serve;
    Ctrl-C stops it, exit 0."""
    server = served(str(project / "server.py"))
    streamable, sse = server.urls
    assert streamable.endswith("/mcp") and sse.endswith("/sse")
    assert "'notes' at" in server.line and "(Streamable HTTP)" in server.line
    with Client.http(streamable, timeout=WAIT) as client:
        assert greet(client) == "hello Ada"
    with Client.http(sse, transport="sse", timeout=WAIT) as client:
        assert greet(client) == "hello Ada"
    assert server.stop() == 0


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
HEADERS = {"Accept": "application/json, text/event-stream"}


def test_stateless_path_and_no_sse(project, served):
    """``--stateless``: no session id handed out; ``--path``: the endpoint moves; ``--no-sse``:
    no legacy endpoint."""
    server = served(str(project / "server.py"), "--stateless", "--path", "/api", "--no-sse")
    [url] = server.urls
    assert url.endswith("/api") and "(stateless Streamable HTTP)" in server.line
    answer = requests.post(url, json=INITIALIZE, headers=HEADERS, timeout=WAIT)
    assert answer.status_code == 200 and "mcp-session-id" not in answer.headers
    with Client.http(url, timeout=WAIT) as client:
        assert greet(client) == "hello Ada"
    base = url.rsplit("/", 1)[0]
    assert requests.get(f"{base}/sse", timeout=WAIT).status_code == 404


def test_without_stateless_a_session_is_handed_out(project, served):
    """The opposite of the test above, so that it can fail: sessions by default."""
    [url, _] = served(str(project / "server.py")).urls
    answer = requests.post(url, json=INITIALIZE, headers=HEADERS, timeout=WAIT)
    assert answer.status_code == 200 and answer.headers.get("mcp-session-id")


def test_an_allowed_host_is_added_to_the_local_names(project, served):
    server = served(str(project / "server.py"), "--allowed-host", "mcp.example")
    url = server.urls[0]
    body = {"json": INITIALIZE, "headers": HEADERS, "timeout": WAIT}
    port = url.split(":")[2].split("/")[0]
    assert requests.post(url, **body).status_code == 200  # 127.0.0.1 still
    named = requests.post(url, **{**body, "headers": {**HEADERS, "Host": f"mcp.example:{port}"}})
    assert named.status_code == 200
    other = requests.post(url, **{**body, "headers": {**HEADERS, "Host": f"evil.example:{port}"}})
    assert other.status_code == 403


def test_server_run_transport_names(tmp_path):
    """What docs/command-line.md says of ``server.run(transport=...)``: "stdio", "http" (or
    "streamable-http") and "sse" run; any other name is a ValueError naming them."""
    from test_http_deploy import LineReader

    path = write(
        tmp_path,
        "named.py",
        """
        import sys
        from mcp_ref import Server
        server = Server("named")
        server.run(transport=sys.argv[1], port=0)
        """,
    )
    for name, said in [
        ("streamable-http", "/mcp (Streamable HTTP)"),
        ("sse", "/sse (HTTP+SSE)"),
        ("http", "/mcp (Streamable HTTP)"),
    ]:
        proc = subprocess.Popen(
            [sys.executable, str(path), name],
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "MCP_REF_HOST": "127.0.0.1"},
        )
        try:
            line = LineReader(proc.stderr).wait_for("serving named at").string
            assert said in line, line
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(WAIT)
    with Client.stdio(
        [sys.executable, str(path), "stdio"], stderr="capture", timeout=WAIT
    ) as client:
        assert client.server_info.name == "named"
    bad = subprocess.run(
        [sys.executable, str(path), "websocket"], capture_output=True, text=True, timeout=WAIT * 3
    )
    assert "transport must be 'stdio', 'http' (or 'streamable-http') or 'sse'" in bad.stderr


def test_a_port_in_use_is_one_line_exit_4(project):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run_fails(str(project / "server.py"), "--http", f"127.0.0.1:{port}")
    assert proc.returncode == 4
    assert last_line(proc).startswith(f"mcp-ref: cannot listen on 127.0.0.1:{port}: ")


def test_bound_beyond_this_machine_a_note_names_allowed_host(project):
    """--http 0.0.0.0:0 without --allowed-host: the announcement, then a note naming the option."""
    from test_http_deploy import LineReader

    proc = subprocess.Popen(
        [*RUN, str(project / "server.py"), "--http", "0.0.0.0:0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        lines = LineReader(proc.stderr)
        port = lines.wait_for(r"^mcp-ref: serving 'notes' at http://0\.0\.0\.0:(\d+)/mcp").group(1)
        lines.wait_for("^mcp-ref: note: .*add --allowed-host NAME")
        with Client.http(f"http://127.0.0.1:{port}/mcp", timeout=WAIT) as client:  # it serves
            assert greet(client) == "hello Ada"
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(WAIT) == 0
