"""docs/inspector.md: every command the page shows, run as a shell runs it (``mcp-ref`` from this
interpreter's bin), each reaching its server and serving the page; Ctrl-C ends each with exit 0.

The browser a command opens is a stand-in (``BROWSER``: a script that says on stderr what it was
asked to open), so the commands run as pasted, without ``--no-browser``.
"""

from __future__ import annotations

import re
import stat
import sys

import pytest
from conftest import WAIT
from doc_blocks import ROOT, block, commands, environment, start_shell, stop_shell
from http_fixtures import free_port
from inspector_harness import address_behind, demo_over_http, state_when

PAGE = ROOT / "docs" / "inspector.md"

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run".
BLOCKS = {
    '$ mcp-ref inspect "mcp-ref serve-demo"': "test_the_first_command_prints_the_address_and_opens_it",
    "mcp-ref dev server.py": "test_the_commands_run_as_pasted",
    "python tests/inspector/screenshot.py docs/inspector.png": "SKIP: run by "
    "tests/inspector/test_page_docs.py::test_the_page_commands_run_as_pasted",
}

pytestmark = pytest.mark.slow

ADDRESS = r"mcp-ref inspector: (http://127\.0\.0\.1:(\d+)/[A-Za-z0-9_-]{32}/)$"


def _block(marker: str) -> str:
    assert marker in BLOCKS, f"{marker!r}: add it to BLOCKS"
    return block(PAGE, marker)


def _env(tmp_path):
    """The shell's environment, with a browser that only says what it opens."""
    opener = tmp_path / "browser"
    opener.write_text(
        f"#!{sys.executable}\nimport sys\nprint('browser opened ' + sys.argv[1], file=sys.stderr, flush=True)\n"
    )
    opener.chmod(opener.stat().st_mode | stat.S_IXUSR)
    return environment(tmp_path, BROWSER=str(opener))


def _inspect(command: str, cwd, env, *, opens: bool = True) -> tuple[str, int]:
    """Run ``command``; its exit code once it served: the address printed (and opened), the
    server reached.  Returns (the state's server name, the exit code)."""
    from test_http_deploy import LineReader

    proc = start_shell(command, cwd, env)
    try:
        lines = LineReader(proc.stderr)
        found = lines.wait_for(ADDRESS, timeout=3 * WAIT)
        url = found.group(1)
        if opens:
            opened = lines.wait_for(r"browser opened (\S+)$").group(1)
            assert address_behind(opened) == url
        state = state_when(url, lambda s: s["connected"] or bool(s["error"]))
        assert state["connected"], state
    finally:
        stop_shell(proc, WAIT)
    return state, proc.returncode


def _readme_server(folder) -> None:
    from test_readme import _block as readme_block

    (folder / "server.py").write_text(readme_block("# server.py"))


def test_the_first_command_prints_the_address_and_opens_it(tmp_path):
    first, shown = _block('$ mcp-ref inspect "mcp-ref serve-demo"').splitlines()
    assert re.fullmatch(ADDRESS, shown), "the page shows the line the command prints"
    state, code = _inspect(first.removeprefix("$ "), tmp_path, _env(tmp_path))
    assert state["server_info"]["name"] == "mcp-ref-demo"
    assert code == 0


def test_the_commands_run_as_pasted(tmp_path):
    _readme_server(tmp_path)
    env = _env(tmp_path)
    lines = commands(_block("mcp-ref dev server.py"))
    assert len(lines) == 4
    dev, by_command, by_url, on_a_port = lines
    for line in (dev, by_command):
        state, code = _inspect(line, tmp_path, env)
        assert state["server_info"]["name"] == "notes" and state["transport"] == "stdio"
        assert code == 0
    with demo_over_http() as url:
        state, code = _inspect(by_url.replace("http://127.0.0.1:8000/mcp", url), tmp_path, env)
    assert state["era"] == "handshake" and state["transport"] == "streamable"
    assert code == 0
    port = free_port()
    state, code = _inspect(on_a_port.replace("6274", str(port)), tmp_path, env, opens=False)
    assert state["server_info"]["name"] == "notes" and code == 0
