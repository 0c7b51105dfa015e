"""The README tells the truth: its set-up commands, and its code examples run as written.

Every fenced block of the README is accounted for in ``BLOCKS``: a marker (text found in that block
and no other) and the test that runs it, or ``SKIP: <reason>``; tests/docs/test_docs_blocks.py
fails for a block added without an entry.
"""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, WAIT
from doc_blocks import blocks, commands, environment, run_python, start_shell, stop_shell

README = (ROOT / "README.md").read_text()

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run".
BLOCKS = {
    'pip install -e ".[test]" && mcp-ref demo': "test_readme_opens_with_the_two_setup_commands",
    "# server.py": "test_the_first_server_and_client_run_as_pasted",
    "# client.py": "test_the_first_server_and_client_run_as_pasted",
    "git+https://git.example.com/you/mcp_ref.git": "test_install_commands_work_in_a_fresh_venv",
    "mcp-ref dev server.py": "test_dev_opens_the_inspector_on_the_first_server",
}


def _blocks() -> list[str]:
    """Every fenced code block of the README, whatever its language."""
    return blocks(ROOT / "README.md")


def _block(marker: str) -> str:
    assert marker in BLOCKS, f"{marker!r}: add it to BLOCKS"
    return next(b for b in _blocks() if marker in b)


# The names other test modules used when these helpers lived here.
_commands = commands
_start = start_shell


def _env(tmp_path) -> dict:
    """This interpreter's bin first on PATH (``python``, ``mcp-ref``), and a cache of the test's own."""
    return environment(tmp_path)


def _stop(proc: subprocess.Popen) -> None:
    stop_shell(proc, WAIT)


def test_the_readme_is_short_and_points_to_the_guide():
    """Issue 34, item 9: what it is, the two commands, a first server and client, where to go next;
    and (issue 35) the inspector, with its screenshot."""
    assert len(README.splitlines()) < 150
    headings = re.findall(r"^## (.+)$", README, re.M)
    assert headings == [
        "A first server",
        "A first client",
        "See the protocol",
        "Using mcp_ref in your own project",
        "Where to go next",
    ]
    for page in (
        "docs/README.md",
        "docs/first-server.md",
        "docs/first-client.md",
        "docs/testing.md",
        "docs/deploying.md",
        "docs/command-line.md",
        "docs/performance.md",
        "docs/inspector.md",
        "docs/inspector.png",
    ):
        assert f"]({page}" in README, page
    assert (ROOT / "docs" / "inspector.png").read_bytes().startswith(b"\x89PNG")


def test_readme_opens_with_the_two_setup_commands():
    first_block = _blocks()[0].strip().splitlines()
    assert first_block == ['pip install -e ".[test]" && mcp-ref demo', "python -m pytest"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert (
        "\npython -m pytest\n" in ci
        and 'pip install --quiet --disable-pip-version-check -e ".[test]"' in ci
    )


@pytest.mark.slow
def test_the_first_server_and_client_run_as_pasted(tmp_path):
    """server.py and client.py side by side: the client starts the server over stdio."""
    (tmp_path / "server.py").write_text(_block("# server.py"))
    done = run_python(_block("# client.py"), tmp_path, "client.py", timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['add_note']", "saved tea", "buy more"]


@pytest.mark.slow
def test_dev_opens_the_inspector_on_the_first_server(tmp_path):
    """``mcp-ref dev server.py`` as pasted, beside the first server: it opens the browser on the
    page's address (``$BROWSER``, which :mod:`webbrowser` runs: here a script that writes down the
    address it was given), and the page is connected to the server."""
    from urllib.parse import unquote, urlsplit

    from inspector_harness import address_behind, state_when
    from test_http_deploy import LineReader

    (tmp_path / "server.py").write_text(_block("# server.py"))
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.py"
    browser.write_text(
        f"#!{sys.executable}\nimport sys\nopen({str(opened)!r}, 'w').write(sys.argv[1])\n"
    )
    browser.chmod(0o755)
    [command] = commands(_block("mcp-ref dev server.py"))
    proc = start_shell(command, tmp_path, environment(tmp_path, BROWSER=str(browser)))
    try:
        address = LineReader(proc.stderr).wait_for(r"^mcp-ref inspector: (http://\S+/)$").group(1)
        state = state_when(address, lambda s: s["connected"] or s["error"])
        assert state["connected"] and state["server_info"]["name"] == "notes", state
        # webbrowser waits for a $BROWSER command to end, and the verb connects after it: done
        assert address_behind(opened.read_text()) == address
    finally:
        stop_shell(proc, WAIT)
    assert proc.returncode == 0
    assert not Path(unquote(urlsplit(opened.read_text()).path)).exists()  # removed at the end


@pytest.mark.slow
def test_the_first_server_refuses_a_missing_note_with_its_message(tmp_path, connect):
    """The ResourceError of the README's server reaches the client as its message, over stdio."""
    from mcp_ref import McpError

    (tmp_path / "server.py").write_text(_block("# server.py"))
    client = connect([sys.executable, str(tmp_path / "server.py")])
    with pytest.raises(McpError, match="no note called nothing"):
        client.read_resource("notes://nothing")


@pytest.mark.slow
@pytest.mark.timeout(300)  # five pip installs and a venv: ~20 s alone, more on a busy machine
def test_install_commands_work_in_a_fresh_venv(tmp_path):
    """ "Using mcp_ref in your own project": each pip line, in a new virtual environment.

    The checkout is a copy of this tree (building leaves nothing behind in it), the git URL this
    repository's (``git+file://``).  The venv sees the packages of the interpreter running the suite
    (a ``.pth`` file naming its site directories), so the runtime dependencies, the extras' and the
    build's (``setuptools``, ``wheel``) are already there: ``--no-index --no-build-isolation`` keeps
    pip off the network, and a missing extra's dependency fails the install.  Not
    ``--system-site-packages``: from inside a venv that shows the *base* interpreter's packages, which
    in a venv made from a bare interpreter lack ``wheel`` (pip: "invalid command 'bdist_wheel'").
    """
    import shutil
    import site
    import sysconfig

    checkout = tmp_path / "mcp_ref"
    checkout.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, checkout / name)
    shutil.copytree(
        ROOT / "mcp_ref", checkout / "mcp_ref", ignore=shutil.ignore_patterns("__pycache__")
    )
    venv = tmp_path / "venv"
    # making a venv runs ensurepip: as slow as a pip install on a loaded machine
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=WAIT * 12)
    # the venv's own package, not a tree PYTHONPATH names (a worktree under test)
    clean_env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    python = str(venv / "bin" / "python")
    venv_purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=True,
        env=clean_env,
    ).stdout.strip()
    ours = [
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
        *site.getsitepackages(),
    ]
    (Path(venv_purelib) / "running_interpreter.pth").write_text(
        "\n".join(dict.fromkeys(ours)) + "\n"
    )
    commands = _commands(_block("git+https://git.example.com/you/mcp_ref.git"))
    assert [c.split()[:2] for c in commands] == [["pip", "install"]] * 4
    assert "No matching distribution" in README and '"mcp-ref @ file:///path/to/mcp_ref"' in README
    commands.append(
        'pip install "mcp-ref @ file:///path/to/mcp_ref"'
    )  # the requirements line the prose gives
    for command in commands:
        if "git+" in command and not (ROOT / ".git").exists():
            continue  # not a git checkout (an sdist): no URL to install from
        command = command.replace(
            "git+https://git.example.com/you/mcp_ref.git@main", f"git+file://localhost{ROOT}"
        ).replace("/path/to/mcp_ref", str(checkout))
        args = shlex.split(command)[2:]
        done = subprocess.run(
            [python, "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation", *args],
            capture_output=True,
            text=True,
            timeout=WAIT * 12,
            cwd=tmp_path,
            env=clean_env,
        )
        assert done.returncode == 0, (command, done.stderr)
        where = subprocess.run(
            [python, "-c", "import mcp_ref, mcp_ref.server; print(mcp_ref.server.__file__)"],
            capture_output=True,
            text=True,
            timeout=WAIT,
            cwd=tmp_path,
            env=clean_env,
        )
        assert where.returncode == 0 and where.stdout.startswith(str(tmp_path)), (
            command,
            where.stdout,
            where.stderr,
        )
        if "[auth" in command:
            from_venv = subprocess.run(
                [python, "-c", "import jwt, cryptography"], capture_output=True, timeout=WAIT
            )
            assert from_venv.returncode == 0, command
    command = subprocess.run(
        [str(venv / "bin" / "mcp-ref"), "--help"], capture_output=True, text=True, timeout=WAIT
    )
    assert command.returncode == 0 and "usage" in command.stdout.lower()
