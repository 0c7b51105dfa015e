"""docs/first-client.md: its examples, run as pasted over real transports."""

import subprocess
import sys

import pytest
from conftest import ROOT, WAIT
from doc_blocks import block, run_python
from test_first_server import write_server_example

PAGE = ROOT / "docs" / "first-client.md"

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run".
BLOCKS = {
    "print(client.server_info.name, client.protocol_version)": "test_client_tour_runs",
    'Client.http("http://127.0.0.1:8000/mcp", headers': "test_the_http_client_example_calls_the_server",
    "sampling_handler=lambda params": "test_callbacks_example_runs",
    "# listen.py": "test_listen_example_runs_in_both_eras",
    "# tasks.py": "test_tasks_example_runs",
    "# errors.py": "test_the_errors_example_meets_each_error",
    "# arguments.py": "test_the_arguments_example_sends_python_values",
}


def _block(marker: str) -> str:
    return block(PAGE, marker)


@pytest.mark.slow
def test_client_tour_runs(tmp_path):
    tour = _block("print(client.server_info.name, client.protocol_version)")
    done = run_python(tour, tmp_path, "tour.py", timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "mcp-ref-demo 2026-07-28"
    assert "hi False" in lines
    assert "Hey Ada!" in lines


@pytest.mark.slow
def test_the_arguments_example_sends_python_values(tmp_path):
    source = _block("# arguments.py")
    done = run_python(source, tmp_path, "arguments.py", timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
    # each print is followed by a comment saying what it prints
    shown = [line.strip()[2:] for line in source.splitlines() if line.startswith("    # ")]
    assert done.stdout.splitlines() == shown


@pytest.mark.slow
def test_listen_example_runs_in_both_eras(tmp_path):
    done = run_python(_block("# listen.py"), tmp_path, "listen.py", timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
    ack = "{'toolsListChanged': True, 'resourceSubscriptions': ['demo://counter']}"
    assert done.stdout.splitlines() == [
        f"2026-07-28 {ack}",
        "notifications/resources/updated",
        "notifications/tools/list_changed",
        f"2025-11-25 {ack}",
        "notifications/resources/updated",
        "notifications/tools/list_changed",
    ]


@pytest.mark.slow
def test_tasks_example_runs(tmp_path):
    done = run_python(_block("# tasks.py"), tmp_path, "tasks.py", timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["2026-07-28 built docs True", "2025-11-25 built docs True"]


def serve_over_http(tmp_path, source: str, name: str):
    """Run an HTTP server script (``port=8000`` made a free port); returns (process, port) once
    it listens (it announces its address on stderr)."""
    import queue
    import threading

    from http_fixtures import free_port

    port = free_port()
    script = tmp_path / name
    script.write_text(source.replace("port=8000", f"port={port}"))
    proc = subprocess.Popen(
        [sys.executable, str(script)], cwd=tmp_path, stderr=subprocess.PIPE, text=True
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()
    assert f":{port}/mcp" in lines.get(timeout=WAIT), "the server did not announce its address"
    return proc, port


def run_http_client(tmp_path, port: int) -> subprocess.CompletedProcess:
    """This page's HTTP client, its port made ``port``."""
    source = _block('Client.http("http://127.0.0.1:8000/mcp", headers').replace(":8000", f":{port}")
    return run_python(source, tmp_path, "http_client.py", timeout=WAIT * 3)


@pytest.mark.slow
def test_the_http_client_example_calls_the_server(tmp_path):
    """Against first-server.md's server.py over HTTP, served the way deploying.md's http_server.py does."""
    write_server_example(tmp_path)
    http_server = block(ROOT / "docs" / "deploying.md", "# http_server.py")
    proc, port = serve_over_http(tmp_path, http_server, "http_server.py")
    try:
        done = run_http_client(tmp_path, port)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["5"]
    finally:
        proc.terminate()
        proc.wait(WAIT)


@pytest.mark.slow
def test_callbacks_example_runs(tmp_path):
    """As pasted, beside first-server.md's server.py (``python server.py``)."""
    write_server_example(tmp_path, docs=False)
    done = run_python(
        _block("sampling_handler=lambda params"), tmp_path, "callbacks.py", timeout=WAIT * 3
    )
    assert done.returncode == 0, done.stderr
    # slow() asked the client's model, and the handler answered.  (The on_log callback prints from
    # its own thread, so its words may interleave with ours: look for the text, not a whole line.)
    assert "42" in done.stdout


@pytest.mark.slow
def test_the_errors_example_meets_each_error(tmp_path):
    done = run_python(_block("# errors.py"), tmp_path, "errors.py", timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
    tool_error, protocol_error, timed_out, unreachable = done.stdout.splitlines()
    assert tool_error.startswith("True Invalid arguments for tool echo: ")
    assert protocol_error.startswith("-32602 ") and "no_such_prompt" in protocol_error
    assert timed_out == "True" and unreachable == "True"
