"""docs/inspector.md, "Tested in a real browser": its two commands run as pasted (the picture's path
made a temporary one), from the checkout, with a real headless Chromium."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest
from browser import ROOT, missing_browser, new_driver
from conftest import WAIT
from doc_blocks import block, commands, environment

PAGE = ROOT / "docs" / "inspector.md"
MARKER = "python tests/inspector/screenshot.py docs/inspector.png"

pytestmark = pytest.mark.slow


def _run(line: str, tmp_path) -> str:
    argv = shlex.split(line)
    assert argv[0] == "python"
    proc = subprocess.run(
        [sys.executable, *argv[1:]],
        cwd=ROOT,
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=60 * WAIT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


@pytest.mark.timeout(900)
def test_the_page_commands_run_as_pasted(tmp_path):
    if missing_browser():
        new_driver()  # skips with the reason (fails under CI)
    screenshot, benchmark = commands(block(PAGE, MARKER))
    picture = tmp_path / "inspector.png"
    out = _run(screenshot.replace("docs/inspector.png", str(picture)), tmp_path)
    assert f"saved {picture}" in out
    assert picture.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    out = _run(benchmark, tmp_path)
    for figure in ("replay: loaded", "jump to the end", "scroll a screenful", "open the last"):
        assert figure in out, out
    assert "live: 10000 progress notifications" in out, out
