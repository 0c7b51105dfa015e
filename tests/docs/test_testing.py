"""docs/testing.md: its pytest file passes under pytest, beside the README's server.py."""

import subprocess

import pytest
from conftest import ROOT, WAIT
from doc_blocks import block, commands, environment

PAGE = ROOT / "docs" / "testing.md"

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run".
BLOCKS = {
    "# test_notes.py": "test_the_page_tests_pass_under_pytest",
    "python -m pytest test_notes.py": "test_the_page_tests_pass_under_pytest",
}


@pytest.mark.slow
def test_the_page_tests_pass_under_pytest(tmp_path):
    """The command of the page, in a folder holding the README's server.py and the page's tests."""
    (tmp_path / "server.py").write_text(block(ROOT / "README.md", "# server.py"))
    (tmp_path / "test_notes.py").write_text(block(PAGE, "# test_notes.py"))
    (command,) = commands(block(PAGE, "python -m pytest test_notes.py"))
    # a user's own run: not a worker of this suite's, and no plugin options of ours
    env = {
        name: value
        for name, value in environment(tmp_path).items()
        if not name.startswith(("PYTEST_", "COV_"))
    }
    done = subprocess.run(
        ["bash", "-c", f"{command} -p no:cacheprovider"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT * 6,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 passed" in done.stdout, done.stdout


def test_the_page_says_what_an_in_memory_client_does_with_the_lifespan():
    text = " ".join(PAGE.read_text().split())
    assert (
        "An in-memory client enters the server's lifespan if it is not entered and leaves it "
        "when it closes; see [the lifespan page](lifespan.md)." in text
    )
