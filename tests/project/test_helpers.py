"""The shared test helpers of conftest.py: Collector, run_threads / Workers, client_pool, and the
server stderr shown in the report of a failing test (proved on generated tests run by a child pytest).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import ROOT, SERVERS, WAIT, Collector, Workers, command_label, run_threads

TESTS = Path(__file__).resolve().parents[1]


# -- Collector ------------------------------------------------------------------------------------


def test_a_collector_records_each_call_as_an_item():
    got = Collector()
    got("one")
    got(2, 3, "three")
    assert got.items == ["one", (2, 3, "three")]
    assert len(got) == 2 and got[0] == "one" and "one" in got and list(got) == got.items
    mark = got.mark()
    got("later")
    assert got.since(mark) == ["later"]


def test_a_collector_waits_for_calls_from_other_threads():
    got = Collector()
    go = threading.Event()

    def call(i: int) -> None:
        assert go.wait(WAIT)
        got(i)

    workers = Workers(call, 5).start()
    go.set()
    assert sorted(got.wait_for(5)) == [0, 1, 2, 3, 4]
    assert got.wait_until(lambda items: 4 in items, since=0)
    workers.join()


def test_a_collector_fails_a_wait_that_is_not_met():
    got = Collector()
    got("only")
    with pytest.raises(
        AssertionError, match=r"condition not met within 0.05 s; received \['only'\]"
    ):
        got.wait_for(2, timeout=0.05)
    with pytest.raises(AssertionError):
        got.wait_until(lambda items: "other" in items, timeout=0.05)
    mark = got.mark()
    with pytest.raises(AssertionError, match=r"received \[\]"):
        got.wait_for(1, since=mark, timeout=0.05)


# -- run_threads ----------------------------------------------------------------------------------


def test_run_threads_returns_the_results_in_order():
    assert run_threads(lambda i: i * i, 6) == [0, 1, 4, 9, 16, 25]


def test_run_threads_lists_every_failure():
    def work(i: int) -> int:
        assert i % 3, f"thread {i} is a multiple of 3"
        if i == 4:
            raise ValueError("four")
        return i

    with pytest.raises(AssertionError) as failed:
        run_threads(work, 7)
    message = str(failed.value)
    assert message.startswith("4 of 7 threads failed, 0 did not finish:")
    for i in (0, 3, 6):
        assert re.search(
            rf"thread {i} failed at test_helpers\.py:\d+: AssertionError: thread {i} is a multiple of 3",
            message,
        )
    assert re.search(r"thread 4 failed at test_helpers\.py:\d+: ValueError: four", message)
    assert isinstance(
        failed.value.__cause__, AssertionError
    )  # the first failure, with its traceback


def test_run_threads_fails_on_a_thread_still_running():
    release = threading.Event()
    try:
        with pytest.raises(
            AssertionError,
            match=r"0 of 3 threads failed, 1 did not finish:\nthread 1 still running after 0.2 s",
        ):
            run_threads(lambda i: i == 1 and release.wait(WAIT), 3, timeout=0.2)
    finally:
        release.set()


def test_command_labels_are_short():
    assert (
        command_label([sys.executable, str(SERVERS / "x.py"), "arg"])
        == "python tests/servers/x.py arg"
    )
    assert command_label(["npx", "-y", "pkg"]) == "npx -y pkg"
    assert (
        command_label([sys.executable, "-m", "mcp_ref", "serve-demo"])
        == "python -m mcp_ref serve-demo"
    )


# -- a failing test shows its servers' stderr -----------------------------------------------------


GENERATED = """
import sys

from conftest import SERVERS, client_pool

CHATTY = [sys.executable, str(SERVERS / "stdio_chatty.py")]
pool = client_pool(CHATTY)


def test_connect_fails(connect):
    client = connect(CHATTY)
    client.call_tool("shout", {"text": "connect-7c1e"})
    client.close()  # the server has exited and every line of its stderr has been read
    assert False, "deliberate"


def test_raw_peer_fails(raw_peer):
    peer = raw_peer([sys.executable, "-c", "import sys; sys.stderr.write('raw-peer-b52\\\\n')"])
    assert peer.stderr_done.wait(10)  # it has exited, and all it wrote has been read
    assert False, "deliberate"


def test_dies(connect):
    connect([sys.executable, "-c", "import sys; sys.stderr.write('dying-words-9d0\\\\n'); sys.exit(1)"])


def test_pool_first(pool):
    peer = pool.peer()
    peer.client.call_tool("shout", {"text": "pool-one-4a"})
    peer.stderr.wait_until(lambda lines: "chatty: shout pool-one-4a" in lines)
    assert False, "deliberate"


def test_pool_second(pool):
    peer = pool.peer()
    peer.client.call_tool("shout", {"text": "pool-two-4b"})
    peer.stderr.wait_until(lambda lines: "chatty: shout pool-two-4b" in lines)
    assert False, "deliberate"


def test_pool_passes(pool):
    peer = pool.peer()
    peer.client.call_tool("shout", {"text": "pool-quiet-4c"})
    peer.stderr.wait_until(lambda lines: "chatty: shout pool-quiet-4c" in lines)


def test_pool_schema_check(pool):
    pool.peer().wire.errors.append("Tool: a planted error")
"""


def failure_sections(output: str) -> dict[str, str]:
    """The FAILURES / ERRORS part of a pytest run's output, split by test name ("ERROR at ..." included)."""
    parts = re.split(r"^_{3,} (.+?) _{3,}$", output, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


@pytest.mark.slow
def test_a_failing_test_shows_the_stderr_of_the_servers_it_started(tmp_path):
    (tmp_path / "test_generated.py").write_text(GENERATED)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "conftest",
            "-p",
            "no:cacheprovider",
            "-q",
            "test_generated.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    sections = failure_sections(proc.stdout)
    chatty = f"server stderr ({command_label([sys.executable, str(SERVERS / 'stdio_chatty.py')])}"
    assert chatty.startswith("server stderr (python tests/servers/stdio_chatty.py")

    connect = sections["test_connect_fails"]
    assert chatty + ")" in connect and "chatty: shout connect-7c1e" in connect, output

    raw = sections["test_raw_peer_fails"]
    assert "server stderr (python -c " in raw and "raw-peer-b52" in raw, output

    assert "dying-words-9d0" in sections["test_dies"], output

    # A module-scoped pool: each failing test shows what its server wrote during that test only.
    first, second = sections["test_pool_first"], sections["test_pool_second"]
    assert chatty + ", 2025-11-25)" in first and "chatty: shout pool-one-4a" in first, output
    assert "chatty: starting" in first
    assert (
        "chatty: shout pool-two-4b" in second
        and "pool-one-4a" not in second
        and "chatty: starting" not in second
    ), output
    assert "test_pool_passes" not in sections and "pool-quiet-4c" not in output

    # The pool's per-test schema check fails the test that carried a bad message.
    assert "Tool: a planted error" in sections["ERROR at teardown of test_pool_schema_check"], (
        output
    )
    assert re.search(r"5 failed, 2 passed, 1 error", output), output
    assert str(ROOT.parent / "shared") not in output


def test_an_in_process_command_shows_only_what_its_own_threads_write(monkeypatch, capsys):
    """A thread running before ``run_cli`` started (another test's leftover) that writes to stderr
    during the run is not in the command's stderr: it goes to the stream the capture replaced."""
    from conftest import run_cli

    import mcp_ref.workbench.cli as cli

    run_started, leftover_wrote = threading.Event(), threading.Event()

    def leftover() -> None:
        if run_started.wait(WAIT):
            print("a leftover thread's warning", file=sys.stderr)
            leftover_wrote.set()

    def command(args: list[str]) -> int:
        run_started.set()
        assert leftover_wrote.wait(WAIT)
        print("the command's own line", file=sys.stderr)
        own = threading.Thread(target=lambda: print("its own thread's line", file=sys.stderr))
        own.start()
        own.join(WAIT)
        return 0

    thread = threading.Thread(target=leftover, daemon=True)
    thread.start()
    monkeypatch.setattr(cli, "main", command)
    proc = run_cli("anything")
    thread.join(WAIT)
    assert proc.returncode == 0
    assert proc.stderr == "the command's own line\nits own thread's line\n"
    assert "a leftover thread's warning" in capsys.readouterr().err
