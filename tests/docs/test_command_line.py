"""docs/command-line.md: every fenced block, run as pasted.

``BLOCKS`` maps a marker (text found in exactly one block of the page) to the test that runs that
block.  The shell blocks run line by line in a folder holding the page's ``server.py``, with this
interpreter's ``python`` and ``mcp-ref`` first on PATH; ``127.0.0.1:8000`` is a server started for
the test (``mcp-ref run server.py --http 127.0.0.1:0``), ``[...]`` run both with and without what
the brackets hold, ``a|b|c`` once for each.  The ``console`` blocks' outputs are compared with
what the command prints.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import doc_blocks
import pytest
from conftest import WAIT
from doc_blocks import commands

from mcp_ref import Client

PAGE_FILE = Path(__file__).resolve().parents[2] / "docs" / "command-line.md"
PAGE = PAGE_FILE.read_text()

BLOCKS = {
    "# server.py: a small server to try the command on": "test_the_example_server_serves",
    "mcp-ref resources|templates|prompts python server.py": "test_client_commands_run",
    "save(note: {title: string": "test_tools_prints_what_the_page_shows",
    "mcp-ref run server.py -- --greeting Hi": "test_run_commands_serve",
    "$ mcp-ref run server.py --http 127.0.0.1:0": "test_run_announces_its_address",
    "mcp-ref serve-demo --http 127.0.0.1:8000 --auth": "test_serve_demo_commands_serve",
    "# one verb: its words, options and examples": "test_help_commands",
    "$ mcp-ref tols python server.py": "test_usage_errors_print_what_the_page_shows",
}


def blocks() -> list[str]:
    """Every fenced code block of the page, whatever its language."""
    return doc_blocks.blocks(PAGE_FILE)


def block(marker: str) -> str:
    assert marker in BLOCKS, f"{marker!r}: add it to BLOCKS"
    return doc_blocks.block(PAGE_FILE, marker)


def variants(line: str) -> list[str]:
    """``a|b|c`` as three lines; ``[x]`` as the line without it and with it."""
    verbs = re.match(r"mcp-ref (?:--\S+ \S+ )?(\S+)", line)
    if verbs and "|" in verbs.group(1):
        choices = verbs.group(1).split("|")
        return [v for c in choices for v in variants(line.replace(verbs.group(1), c, 1))]
    optional = re.search(r"\s*\[([^]]*)\]", line)
    if optional:
        without = line[: optional.start()] + line[optional.end() :]
        with_it = line[: optional.start()] + " " + optional.group(1) + line[optional.end() :]
        return variants(without) + variants(with_it)
    return [line]


def test_every_block_is_accounted_for():
    found = blocks()
    assert len(found) == PAGE.count("\n```") // 2
    for marker, how in BLOCKS.items():
        assert len([b for b in found if marker in b]) == 1, marker
        assert how.startswith("SKIP: ") or callable(globals().get(how)), how
    for each in found:
        assert len([m for m in BLOCKS if m in each]) == 1, each[:200]


@pytest.fixture
def folder(tmp_path):
    """A folder holding the page's server.py."""
    (tmp_path / "server.py").write_text(block("# server.py: a small server to try the command on"))
    return tmp_path


def env(folder: Path) -> dict:
    """This interpreter's bin first on PATH (``python``, ``mcp-ref``); a cache of the test's own."""
    return dict(
        os.environ,
        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
        XDG_CACHE_HOME=str(folder / "cache"),
    )


def shell(command: str, folder: Path, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=folder,
        env=env(folder),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=WAIT * 6,
    )


class Serving:
    """A serving command started in ``folder`` (its own process group); the first line on stderr
    that announces where it serves, and its URLs."""

    def __init__(self, command: str, folder: Path):
        from test_http_deploy import LineReader

        self.proc = subprocess.Popen(
            ["bash", "-c", f"exec {command}"],
            cwd=folder,
            env=env(folder),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.line = LineReader(self.proc.stderr).wait_for("^mcp-ref: serving ").string
        self.urls = re.findall(r"http://[\d.]+:\d+(?:/\S*)?", self.line)

    def stop(self) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
        try:
            return self.proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(WAIT)


@pytest.fixture
def serving(folder):
    started: list[Serving] = []

    def start(command: str) -> Serving:
        started.append(Serving(command, folder))
        return started[-1]

    yield start
    for each in started:
        each.stop()


@pytest.mark.slow
def test_the_example_server_serves(folder):
    """``python server.py``, as its main block runs it: every tool, the resource, the prompt."""
    with Client.stdio(
        [sys.executable, str(folder / "server.py")], stderr="capture", timeout=WAIT
    ) as client:
        assert client.instructions == "Notes, and a calculator."
        assert client.call_tool("add", {"a": 1, "b": 2}).content[0].text == "3"
        saved = client.call_tool("save", {"note": {"title": "groceries"}})
        assert saved.content[0].text == "saved 'groceries'"
        assert "small server" in client.read_resource("notes://readme").contents[0].text
        assert client.get_prompt("greet", {"name": "Ada"}).messages[0].content.text == "Hello, Ada!"


#: What some lines of the client block print (the rest must exit 0).
EXPECTED_OUTPUT = {
    "mcp-ref call python server.py add a=1 b=2": "3\n",
    "mcp-ref call python server.py echo text=123": "123\n",
    'mcp-ref call python server.py echo --args \'{"text": "hi"}\'': "hi\n",
    'mcp-ref call python server.py save --args \'{"note": {"title": "groceries"}}\'': (
        "saved 'groceries'\n"
    ),
    "mcp-ref call add a=1 b=2 -- python server.py --greeting Hi": "3\n",
    'mcp-ref call "python server.py" add a=1 b=2': "3\n",
    "mcp-ref read python server.py notes://readme": "A small server to try the mcp-ref command on.\n",
    "mcp-ref prompt python server.py greet name=Ada": "[user] Hello, Ada!\n",
}


@pytest.mark.slow
def test_client_commands_run(folder, serving):
    """The client block line by line against server.py (127.0.0.1:8000: server.py over HTTP)."""
    served = serving("mcp-ref run server.py --http 127.0.0.1:0")
    port = served.urls[0].split(":")[2].split("/")[0]
    ran = set()
    for line in commands(block("mcp-ref resources|templates|prompts python server.py")):
        for command in variants(line):
            done = shell(command.replace("127.0.0.1:8000", f"127.0.0.1:{port}"), folder)
            assert done.returncode == 0, (command, done.stdout, done.stderr)
            if command in EXPECTED_OUTPUT:
                assert done.stdout == EXPECTED_OUTPUT[command], command
            if command.startswith("mcp-ref --log-level info"):
                assert "mcp-ref: server log info: adding 1 and 2" in done.stderr
            if "--json" in command:
                assert '"content"' in done.stdout
            ran.add(re.match(r"mcp-ref (?:--\S+ (?:\S+ )?)*(\S+)", command).group(1))
    assert {"info", "tools", "resources", "templates", "prompts", "call", "read", "prompt"} <= ran
    assert {"check", "install", "logout"} <= ran
    assert set(EXPECTED_OUTPUT) <= {
        v
        for line in commands(block("mcp-ref resources|templates|prompts python server.py"))
        for v in variants(line)
    }


def console(marker: str) -> list[tuple[str, str]]:
    """A console block's commands (``$ ...``) and what each prints."""
    pairs: list[tuple[str, str]] = []
    for line in block(marker).splitlines(keepends=True):
        if line.startswith("$ "):
            pairs.append((line[2:].strip(), ""))
        else:
            pairs[-1] = (pairs[-1][0], pairs[-1][1] + line)
    return pairs


@pytest.mark.slow
def test_tools_prints_what_the_page_shows(folder):
    [(command, output)] = console("save(note: {title: string")
    done = shell(command, folder)
    assert (done.returncode, done.stdout) == (0, output), done.stderr


@pytest.mark.slow
def test_usage_errors_print_what_the_page_shows(folder):
    shown = console("$ mcp-ref tols python server.py")
    assert len(shown) == 3
    for command, output in shown:
        done = shell(command, folder)
        assert (done.returncode, done.stdout, done.stderr) == (2, "", output), command


@pytest.mark.slow
def test_help_commands(folder):
    for command in commands(block("# one verb: its words, options and examples")):
        done = shell(command, folder)
        assert done.returncode == 0 and done.stdout.startswith("usage: mcp-ref"), command
    assert "examples:" in done.stdout


@pytest.mark.slow
def test_run_announces_its_address(folder, serving):
    [(command, output)] = console("$ mcp-ref run server.py --http 127.0.0.1:0")
    served = serving(command)
    # the same line, but for the port
    assert re.sub(r":\d+/", ":PORT/", served.line) == re.sub(r":\d+/", ":PORT/", output)
    with Client.http(served.urls[0], timeout=WAIT) as client:
        assert client.call_tool("echo", {"text": "hi"}).content[0].text == "hi"


def greets(client: Client) -> str:
    return client.get_prompt("greet", {"name": "Ada"}).messages[0].content.text


@pytest.mark.slow
def test_run_commands_serve(folder, serving):
    """Each line of the run block: on stdio a Client launches it; over HTTP (port 0 for 8000) a
    Client reaches the address it announces, at the path it was given."""
    lines = commands(block("mcp-ref run server.py -- --greeting Hi"))
    assert len(lines) == 5
    for line in lines:
        if "--http" not in line:
            with Client.stdio(
                shlex.split(line), cwd=str(folder), env=env(folder), stderr="capture", timeout=WAIT
            ) as client:
                expected = "Hi, Ada!" if "--greeting Hi" in line else "Hello, Ada!"
                assert greets(client) == expected
            continue
        served = serving(line.replace("127.0.0.1:8000", "127.0.0.1:0"))
        url = served.urls[0]
        assert url.endswith("/api" if "--path /api" in line else "/mcp")
        assert ("(stateless Streamable HTTP)" in served.line) == ("--stateless" in line)
        assert (len(served.urls) == 1) == ("--no-sse" in line)
        with Client.http(url, timeout=WAIT) as client:
            assert greets(client) == "Hello, Ada!"


@pytest.mark.slow
def test_serve_demo_commands_serve(folder, serving):
    import requests

    for line in commands(block("mcp-ref serve-demo --http 127.0.0.1:8000 --auth")):
        for command in variants(line):
            if "--http" not in command:  # stdio: answers a ping, ends with its input
                done = shell(command, folder, stdin='{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
                assert done.returncode == 0 and '"id":1' in done.stdout.replace(" ", "")
                continue
            served = serving(command.replace("127.0.0.1:8000", "127.0.0.1:0"))
            base = served.urls[0].rsplit("/", 1)[0]
            if "--auth" in command:  # a protected resource: its metadata, and 401 without a token
                metadata = requests.get(
                    f"{base}/.well-known/oauth-protected-resource/mcp", timeout=WAIT
                )
                assert metadata.status_code == 200 and metadata.json()["authorization_servers"]
                assert requests.post(f"{base}/mcp", json={}, timeout=WAIT).status_code == 401
            else:
                with Client.http(f"{base}/mcp", timeout=WAIT) as client:
                    assert client.call_tool("echo", {"text": "hi"}).content[0].text == "hi"
