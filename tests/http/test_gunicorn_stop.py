"""A gunicorn worker told to stop ends its long-lived streams at once (mcp_ref.http.gunicorn_hooks).

Without the hooks a 2026-07-28 listen stream or a handshake-era GET stream held the worker for the
whole ``--graceful-timeout`` (30 s), then the arbiter killed it.  Real gunicorn (gthread, one
worker) serving tests/servers/scale_out_app.py, with real clients holding both kinds of stream.
"""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import SERVERS, WAIT, command_label, watch_stderr
from test_http_deploy import LineReader, free_port, start_gunicorn, stop, wait_for_port

from mcp_ref import Client

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("gunicorn") is None, reason="gunicorn is not installed (test extra)"
)

#: gunicorn's own default: without the hooks, how long a stop waited for the streams.
GRACEFUL_TIMEOUT = 30


@pytest.mark.slow
@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGQUIT], ids=["graceful", "quick"])
def test_a_stopped_worker_ends_its_listen_and_get_streams_at_once(stop_signal):
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        "python:mcp_ref.http.gunicorn_hooks",
        "-k",
        "gthread",
        "-w",
        "1",
        "--threads",
        "8",
        "--graceful-timeout",
        str(GRACEFUL_TIMEOUT),
        "-b",
        f"127.0.0.1:{port}",
        "--chdir",
        str(SERVERS),
        "scale_out_app:wsgi_app",
    ]
    env = {key: value for key, value in os.environ.items() if key != "MCP_REF_STATE"}
    env.update(SCALE_OUT_STATELESS="0")  # handshake-era sessions, so a GET stream
    proc = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    errors = LineReader(proc.stderr)
    watch_stderr(command_label(command), lambda: list(errors.all))
    try:
        wait_for_port(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        heard = threading.Event()
        with (
            Client.http(
                url, era="handshake", timeout=WAIT, on_list_changed=lambda kind: heard.set()
            ) as old,
            Client.http(url, era="modern", timeout=WAIT) as new,
        ):
            old.call_tool("add_tool", {"name": "late"})
            assert heard.wait(WAIT)  # the GET stream is open: it carried the list change
            stream = new.listen(tools=True)
            stopped_at = time.monotonic()
            proc.send_signal(stop_signal)
            # subscriptions §Graceful Closure: answered with its completion result, not cut
            assert stream.wait_closed(WAIT) and stream.ended_gracefully
            proc.wait(WAIT)  # without the hooks: GRACEFUL_TIMEOUT, then SIGKILL
            took = time.monotonic() - stopped_at
        assert took < WAIT < GRACEFUL_TIMEOUT and proc.returncode == 0, (took, proc.returncode)
    finally:
        stop(proc, signal.SIGKILL)
    assert "Traceback" not in "".join(errors.all), "".join(errors.all)


#: TTIN/TTOU rounds: each retires the oldest worker, which gunicorn's arbiter sends SIGTERM again on
#: every turn of its loop until it has exited.
ROUNDS = 6


def wait_for_every(errors: LineReader, patterns: list[str]) -> None:
    """Wait (bounded) until every one of ``patterns`` has matched a line, in any order."""
    left = list(patterns)
    while left:
        found = errors.wait_for("|".join(f"(?:{pattern})" for pattern in left))
        left = [pattern for pattern in left if not re.search(pattern, found.string)]


@pytest.mark.slow
def test_workers_retired_by_ttou_close_their_app_and_exit_at_once():
    """gunicorn repeats SIGTERM to a retiring worker, microseconds apart: the stop hook is
    entered again while it runs.  It used to deadlock the worker's main thread (a second
    ``Event.set`` in the handler waiting for the lock the first held): ``app.close()`` never ran
    and the arbiter killed the worker at its timeout, 30 s later (a race: 4 runs of 7 on a loaded
    machine; the next test makes it certain).  Each retired worker now closes its app and exits
    at once."""
    proc, errors, _port = start_gunicorn(
        [
            "-c",
            "python:mcp_ref.http.gunicorn_hooks",
            "-k",
            "gthread",
            "-w",
            "1",
            "--threads",
            "2",
            "--timeout",
            str(GRACEFUL_TIMEOUT),
            "--graceful-timeout",
            str(GRACEFUL_TIMEOUT),
            "--chdir",
            str(SERVERS),
            "retiring_app:wsgi_app",
        ],
        {},
        None,
    )
    try:
        workers = [int(errors.wait_for(r"Booting worker with pid: (\d+)").group(1))]
        for _ in range(ROUNDS):
            proc.send_signal(signal.SIGTTIN)
            workers.append(int(errors.wait_for(r"Booting worker with pid: (\d+)").group(1)))
            proc.send_signal(signal.SIGTTOU)  # the oldest worker retires
            retired = workers.pop(0)
            # within WAIT, well before the worker timeout that would kill a stuck one
            wait_for_every(
                errors,
                [rf"mcp_ref app closed in pid {retired}\b", rf"Worker exiting \(pid: {retired}\)"],
            )
    finally:
        stop(proc)
    log = "".join(errors.all)
    assert "WORKER TIMEOUT" not in log and "SIGKILL" not in log and "Traceback" not in log, log


#: A process that installs the stop hook, then has its signal handler interrupted by the same
#: signal at every line it runs (a tracer sends it again, up to 200 times): the handler is entered
#: again inside itself, wherever it is, as a burst of gunicorn's SIGTERMs can do.  It prints
#: ``closed`` once the app's close() has run; a handler that takes a lock hangs instead.
REENTERED_HOOK = """
import os, signal, sys
from mcp_ref.http.gunicorn_hooks import close_on_stop

class App:
    def close(self):
        print("closed", flush=True)

calls = []
signal.signal(signal.SIGUSR1, lambda number, frame: calls.append(number))
closer = close_on_stop(App(), [signal.SIGUSR1])
left = [200]

def again(frame, event, arg):
    if event == "line" and left[0] > 0:
        left[0] -= 1
        os.kill(os.getpid(), signal.SIGUSR1)
    return again

sys.settrace(again)
os.kill(os.getpid(), signal.SIGUSR1)
sys.settrace(None)
closer.join(%r)
print("handled", len(calls) > 1, flush=True)
"""


def test_the_stop_hook_may_be_entered_again_from_inside_itself():
    done = subprocess.run(
        [sys.executable, "-c", REENTERED_HOOK % WAIT],
        capture_output=True,
        text=True,
        timeout=WAIT * 3,
    )
    assert done.stdout.split() == ["closed", "handled", "True"], (done.stdout, done.stderr)
