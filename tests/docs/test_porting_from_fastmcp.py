"""docs/porting-from-fastmcp.md: every fenced block runs as pasted.

The worked port is the page's FastMCP 2.x server with its import line replaced by the page's one
line (asserted to be the only difference), served over stdio to the page's client (whose output
must be the page's), to the page's ``mcp-ref`` commands, and over HTTP with the page's last lines.
"""

from __future__ import annotations

import queue
import subprocess
import sys
import threading

import pytest
from conftest import WAIT
from doc_blocks import ROOT, block as page_block, commands, environment, run_python

from mcp_ref import Client

PAGE = ROOT / "docs" / "porting-from-fastmcp.md"

#: Each fenced block of the page, by a text found in it alone: the test that runs it.
BLOCKS = {
    "# was: from fastmcp.exceptions import ToolError": "test_the_import_lines_run",
    "# server.py, written for FastMCP 2.x": "test_the_worked_port_answers_the_pages_client",
    "Context  # was: from fastmcp import": "test_the_worked_port_answers_the_pages_client",
    "# client.py": "test_the_worked_port_answers_the_pages_client",
    "{'result': 2}": "test_the_worked_port_answers_the_pages_client",
    'mcp-ref call "python server.py" add_note': "test_the_pages_commands_use_the_port",
    "mcp-ref run server.py    #": "test_mcp_ref_run_serves_the_port",
    "def delete_note": "test_a_tool_error_reaches_the_client",
    'mcp.run(transport="streamable-http", stateless_http=True)': "test_the_port_serves_over_http",
    'FastMCP("Notes", mask_error_details=False)': "test_a_refusal_reads_as_the_page_shows",
    "Server() does not take FastMCP's mask_error_details=False": (
        "test_a_refusal_reads_as_the_page_shows"
    ),
}

#: The FastMCP 2.x import line the worked port replaces.
FASTMCP_IMPORT = "from fastmcp import FastMCP, Context\n"


def block(marker: str) -> str:
    """The one block of the page holding ``marker`` (tests/docs/test_docs_blocks.py checks that
    every block is accounted for)."""
    return page_block(PAGE, marker)


def ported_server() -> str:
    """The page's FastMCP 2.x server with its import line replaced by the page's one line."""
    original = block("# server.py, written for FastMCP 2.x")
    one_line = block("Context  # was: from fastmcp import")
    assert original.count(FASTMCP_IMPORT) == 1 and one_line.count("\n") == 1
    ported = original.replace(FASTMCP_IMPORT, one_line)
    before, after = original.splitlines(), ported.splitlines()
    assert [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b] == [
        before.index(FASTMCP_IMPORT.strip())
    ]
    return ported


@pytest.mark.slow
def test_the_import_lines_run(tmp_path):
    source = block("# was: from fastmcp.exceptions import")
    done = run_python(source, tmp_path, "imports.py", timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_the_worked_port_answers_the_pages_client(tmp_path):
    (tmp_path / "server.py").write_text(ported_server())
    done = run_python(block("# client.py"), tmp_path, "client.py", timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
    assert done.stdout == block("{'result': 2}")


@pytest.mark.slow
def test_the_pages_commands_use_the_port(tmp_path):
    (tmp_path / "server.py").write_text(ported_server())
    outputs = []
    for command in commands(block('mcp-ref call "python server.py"')):
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=environment(tmp_path),  # `python` and `mcp-ref`: this interpreter's
            capture_output=True,
            text=True,
            timeout=WAIT * 3,
        )
        assert done.returncode == 0, (command, done.stderr)
        outputs.append(done.stdout)
    assert "add_note" in outputs[0] and "add_many" in outputs[0]
    assert "buy milk" in outputs[1]


@pytest.mark.slow
def test_mcp_ref_run_serves_the_port(tmp_path):
    server = ported_server()
    stdio_run = 'if __name__ == "__main__":\n    mcp.run()\n'
    # its last lines serve over HTTP: mcp-ref run does not run them, and serves on stdio
    assert server.endswith(stdio_run)
    server = server.replace(stdio_run, block('mcp.run(transport="streamable-http"'))
    (tmp_path / "server.py").write_text(server)
    [command] = commands(block("mcp-ref run server.py    #"))
    with Client.stdio(
        ["bash", "-c", command], cwd=str(tmp_path), env=environment(tmp_path), timeout=WAIT
    ) as client:
        assert client.server_info.name == "Notes"
        note = client.call_tool("add_note", {"text": "from mcp-ref run"}).structured_content
        assert note["text"] == "from mcp-ref run"


@pytest.mark.slow
def test_a_tool_error_reaches_the_client(tmp_path):
    server = ported_server()
    main = '\nif __name__ == "__main__":\n'
    assert server.count(main) == 1
    server = server.replace(main, "\n" + block("def delete_note") + main)
    (tmp_path / "server.py").write_text(server)
    with Client.stdio([sys.executable, str(tmp_path / "server.py")], timeout=WAIT) as client:
        missing = client.call_tool("delete_note", {"note_id": 7})
        assert missing.is_error and missing.content[0].text == "There is no note 7"
        client.call_tool("add_note", {"text": "buy milk"})
        assert client.call_tool("delete_note", {"note_id": 1}).content[0].text == "buy milk"


@pytest.mark.slow
def test_the_port_serves_over_http(tmp_path):
    server = ported_server()
    stdio_run = 'if __name__ == "__main__":\n    mcp.run()\n'
    assert server.endswith(stdio_run)
    server = server[: -len(stdio_run)] + block('mcp.run(transport="streamable-http"')
    (tmp_path / "server.py").write_text(server)
    process = subprocess.Popen(
        [sys.executable, "server.py"],
        cwd=tmp_path,
        env=environment(tmp_path, MCP_REF_PORT="0"),  # a free port: the page's default is 8000
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue = queue.Queue()

    def pump():
        for line in process.stderr:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    try:
        line = lines.get(timeout=WAIT)
        while not line.startswith("serving "):
            line = lines.get(timeout=WAIT)
        assert line.startswith("serving Notes at http://127.0.0.1:"), line
        url = line.split()[3]
        assert url.endswith("/mcp"), url
        with Client.http(url, timeout=WAIT) as client:
            note = client.call_tool("add_note", {"text": "over HTTP"}).structured_content
            assert (note["id"], note["text"]) == (1, "over HTTP")
        sse = url[: -len("/mcp")] + "/sse"  # the older transport, from the same server
        with Client.http(sse, transport="sse", timeout=WAIT) as client:
            assert client.read_resource("notes://1").contents[0].text == "over HTTP"
    finally:
        process.terminate()
        process.wait(WAIT)


@pytest.mark.slow
def test_a_refusal_reads_as_the_page_shows(tmp_path):
    source = block('FastMCP("Notes", mask_error_details=False)')
    done = run_python(source, tmp_path, "refusal.py", timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
    assert done.stdout == block("Server() does not take FastMCP's mask_error_details=False")
