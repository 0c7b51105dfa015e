"""The documentation's fenced code blocks, found and run as pasted.

A page is README.md or a file docs/NAME.md.  Its blocks are accounted for by one test module in
this folder (:func:`module_for`), whose ``BLOCKS`` dict maps a *marker* (text found in exactly one
block of the page) to the name of a test in that module that runs the block, or to
``"SKIP: <reason>"``.  tests/docs/test_docs_blocks.py checks every page against its module.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

#: The repository's root.
ROOT = Path(__file__).resolve().parents[2]

#: A fenced block: an opening fence of backticks at the start of a line (a language name may
#: follow), its text, and the closing fence.
FENCED_BLOCK = re.compile(r"^```[^\n`]*\n(.*?)^```[ \t]*$", re.S | re.M)

#: Any line that opens or closes a fence, indented or not (the checker refuses indented ones,
#: which FENCED_BLOCK would not see).
FENCE_LINE = re.compile(r"^[ \t]*```", re.M)


def pages() -> list[Path]:
    """Every page of the documentation: README.md, then docs/*.md by name."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def module_for(page: Path) -> Path:
    """The test module that accounts for ``page``'s blocks.

    README.md -> test_readme.py; docs/NAME.md -> test_NAME.py, dashes made underscores; the
    guide's index, docs/README.md, -> test_docs_index.py (so that it does not share the README's).
    """
    relative = page.resolve().relative_to(ROOT).as_posix()
    if relative == "README.md":
        name = "readme"
    elif relative == "docs/README.md":
        name = "docs_index"
    else:
        name = page.stem.replace("-", "_")
    return Path(__file__).resolve().parent / f"test_{name}.py"


def blocks(page: Path) -> list[str]:
    """The text of every fenced block of ``page``, in order, whatever its language."""
    return FENCED_BLOCK.findall(page.read_text())


def block(page: Path, marker: str) -> str:
    """The one block of ``page`` that holds ``marker`` (an AssertionError if not exactly one)."""
    holders = [text for text in blocks(page) if marker in text]
    assert len(holders) == 1, f"{marker!r} is in {len(holders)} blocks of {page.name}, not one"
    return holders[0]


def commands(shell_block: str) -> list[str]:
    """A shell block's command lines, each without its trailing ``# comment``."""
    lines = shell_block.splitlines()
    return [re.sub(r"\s+#\s.*$", "", line).strip() for line in lines if line.strip()]


def environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This interpreter's bin first on PATH (``python``, ``mcp-ref``), and a cache of the test's own."""
    return dict(
        os.environ,
        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        **extra,
    )


def run_python(
    source: str, tmp_path: Path, name: str, *, timeout: float, args: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    """Write ``source`` to ``tmp_path/name`` and run it there with this interpreter, as a user would."""
    script = tmp_path / name
    script.write_text(source)
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=tmp_path,
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_shell(command: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Start a shell command line as a page shows it, in a process group of its own (stderr piped)."""
    return subprocess.Popen(
        ["bash", "-c", command],
        cwd=cwd,
        env=env or environment(cwd),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def stop_shell(proc: subprocess.Popen, timeout: float) -> None:
    """SIGINT to the command's process group (bash and what it started), then wait; SIGKILL if stuck."""
    import signal

    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout)
