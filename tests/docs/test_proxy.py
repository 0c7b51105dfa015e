"""docs/proxy.md: every code block run as pasted (its port 8000 made a free one).

The server block is written to a temporary folder; the library block serves it over HTTP; the
client block runs against that, in both eras; the command block's two proxies are chained (a stdio
server on HTTP, then that URL on stdio) and a client of each era calls through both.
"""

from __future__ import annotations

import queue
import shlex
import subprocess
import sys
import threading

import pytest
from conftest import WAIT
from doc_blocks import ROOT, block, commands, environment
from http_fixtures import free_port

from mcp_ref import Client

PAGE = ROOT / "docs" / "proxy.md"

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run".
BLOCKS = {
    "# hello_server.py": "test_the_library_examples_run_as_pasted",
    "# proxy_http.py": "test_the_library_examples_run_as_pasted",
    "# hello_client.py": "test_the_library_examples_run_as_pasted",
    "# policy_proxy.py": "test_the_policy_example_runs_as_pasted",
    'mcp-ref proxy "python hello_server.py"': "test_the_commands_run_as_pasted",
}

pytestmark = pytest.mark.slow


def _block(marker: str) -> str:
    assert marker in BLOCKS, f"{marker!r}: add it to BLOCKS"
    return block(PAGE, marker)


def _start(command, cwd, announcing: str) -> subprocess.Popen:
    """``command`` in ``cwd``, once a line of its stderr holds ``announcing``."""
    proc = subprocess.Popen(
        command,
        cwd=cwd,
        env=environment(cwd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()
    seen = []
    while True:
        try:
            line = lines.get(timeout=3 * WAIT)
        except queue.Empty:
            proc.kill()
            raise AssertionError(f"{command!r} did not say {announcing!r}: {seen}") from None
        seen.append(line)
        if announcing in line:
            return proc


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(WAIT)


def _name(params):
    return {"action": "accept", "content": {"name": "Ada"}}


def test_the_library_examples_run_as_pasted(tmp_path):
    (tmp_path / "hello_server.py").write_text(_block("# hello_server.py"))
    port = free_port()
    (tmp_path / "proxy_http.py").write_text(
        _block("# proxy_http.py").replace('"127.0.0.1", 8000', f'"127.0.0.1", {port}')
    )
    (tmp_path / "hello_client.py").write_text(
        _block("# hello_client.py").replace(":8000/", f":{port}/")
    )
    proxy = _start([sys.executable, "proxy_http.py"], tmp_path, f":{port}/mcp")
    try:
        done = subprocess.run(
            [sys.executable, "hello_client.py"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=3 * WAIT,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == ["handshake Hello, Ada!", "modern Hello, Ada!"]
    finally:
        _stop(proxy)


def test_the_policy_example_runs_as_pasted(tmp_path):
    """The policy's proxy in front of the library example's proxy: a tool whose name the policy
    allows is listed and called through both, in each era."""
    (tmp_path / "hello_server.py").write_text(_block("# hello_server.py"))
    inner = free_port()
    outer = free_port()
    (tmp_path / "proxy_http.py").write_text(
        _block("# proxy_http.py").replace('"127.0.0.1", 8000', f'"127.0.0.1", {inner}')
    )
    (tmp_path / "policy_proxy.py").write_text(
        _block("# policy_proxy.py")
        .replace(":9000/", f":{inner}/")
        .replace('"127.0.0.1", 8000', f'"127.0.0.1", {outer}')
    )
    behind = _start([sys.executable, "proxy_http.py"], tmp_path, f":{inner}/mcp")
    try:
        gated = _start([sys.executable, "policy_proxy.py"], tmp_path, f":{outer}/mcp")
        try:
            for era in ("handshake", "modern"):
                with Client.http(
                    f"http://127.0.0.1:{outer}/mcp",
                    era=era,
                    timeout=WAIT,
                    elicitation_handler=_name,
                ) as client:
                    assert [tool.name for tool in client.list_tools()] == ["hello"]
                    assert client.call_tool("hello").text == "Hello, Ada!"
        finally:
            _stop(gated)
    finally:
        _stop(behind)


def test_the_commands_run_as_pasted(tmp_path):
    (tmp_path / "hello_server.py").write_text(_block("# hello_server.py"))
    port = free_port()
    lines = [
        line.replace(":8000", f":{port}")
        for line in commands(_block('mcp-ref proxy "python hello_server.py"'))
    ]
    assert len(lines) == 2
    over_http = _start(shlex.split(lines[0]), tmp_path, f"at http://127.0.0.1:{port}/mcp")
    try:
        on_stdio = shlex.split(lines[1])  # the second proxy: a client launches it
        for era in ("handshake", "modern"):
            with Client.stdio(
                on_stdio,
                env=environment(tmp_path),
                era=era,
                timeout=WAIT,
                elicitation_handler=_name,
            ) as client:
                assert client.call_tool("hello").text == "Hello, Ada!"
                assert client.server_info.name == "hello"
    finally:
        _stop(over_http)
