"""docs/lifespan.md tells the truth: every fenced block runs as pasted, against real transports.

``BLOCKS`` accounts for every block of the page: a marker (text found in that block and no other)
and the test that runs it, or ``SKIP: <reason>``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import doc_blocks
import pytest
from conftest import ROOT, WAIT, run_threads

from mcp_ref import Client

PAGE_FILE = ROOT / "docs" / "lifespan.md"
PAGE = PAGE_FILE.read_text()

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run".
BLOCKS = {
    "# bookmarks.py": "test_the_bookmarks_example_runs_its_tests_and_its_client",
    "# test_bookmarks.py": "test_the_bookmarks_example_runs_its_tests_and_its_client",
    "# client.py": "test_the_bookmarks_example_runs_its_tests_and_its_client",
    "python -m pytest -q test_bookmarks.py": "test_the_bookmarks_example_runs_its_tests_and_its_client",
    "# notes.py": "test_the_notes_example_shares_one_connection_behind_a_lock",
}


def blocks() -> list[str]:
    """Every fenced code block of the page, whatever its language."""
    return doc_blocks.blocks(PAGE_FILE)


def block(marker: str) -> str:
    assert marker in BLOCKS, f"{marker!r}: add it to BLOCKS"
    return doc_blocks.block(PAGE_FILE, marker)


def test_every_block_is_run_or_skipped_with_a_reason():
    found = blocks()
    assert len(found) == PAGE.count("\n```") // 2  # every fence opened is closed, none missed
    for marker, how in BLOCKS.items():
        holders = [b for b in found if marker in b]
        assert len(holders) == 1, f"marker {marker!r} is in {len(holders)} blocks, not one"
        assert how.startswith("SKIP: ") and len(how) > 20 or callable(globals().get(how)), how
    for each in found:
        markers = [m for m in BLOCKS if m in each]
        assert len(markers) == 1, f"a block without exactly one entry in BLOCKS: {each[:200]!r}"


def environment() -> dict:
    """This tree's mcp_ref first (as the tests' own PYTHONPATH); nothing else: the example's files
    are found from their own directory, as a user's are."""
    paths = [str(ROOT), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


@pytest.mark.slow
def test_the_bookmarks_example_runs_its_tests_and_its_client(tmp_path):
    for marker, name in [
        ("# bookmarks.py", "bookmarks.py"),
        ("# test_bookmarks.py", "test_bookmarks.py"),
        ("# client.py", "client.py"),
    ]:
        (tmp_path / name).write_text(block(marker))
    for line in block("python -m pytest -q test_bookmarks.py").splitlines():
        command, _, expected = line.partition("#")
        run = subprocess.run(
            command.strip(),
            shell=True,
            cwd=tmp_path,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=6 * WAIT,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert expected.strip() and expected.strip() in run.stdout, (expected, run.stdout)
    # the client's run left its database where it ran: one bookmark, in the table the lifespan made
    import sqlite3

    stored = sqlite3.connect(tmp_path / "bookmarks.db")
    assert stored.execute("SELECT url, title FROM bookmarks").fetchall() == [
        ("https://example.com", "Example")
    ]
    stored.close()


@pytest.mark.slow
def test_the_notes_example_shares_one_connection_behind_a_lock(tmp_path):
    (tmp_path / "notes.py").write_text(block("# notes.py"))
    lines: list = []
    with Client.stdio(
        [sys.executable, "notes.py"],
        cwd=str(tmp_path),
        env=environment(),
        stderr=lines.append,
        timeout=WAIT,
    ) as client:
        seen: set = set()
        lock = threading.Lock()

        def add(n: int) -> None:
            for i in range(5):
                count = client.call_tool("add_note", {"text": f"{n}-{i}"}).structured_content
                with lock:
                    seen.add(count["result"])

        run_threads(add, 4)  # concurrent calls: several handler threads share the connection
        assert seen == set(range(1, 21))  # each call counted once, in turn
    assert not [line for line in lines if "Traceback" in line], lines
