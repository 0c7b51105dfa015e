"""A gunicorn worker told to stop ends its long-lived streams at once (mcp_ref.workbench.gunicorn_hooks).

Without the hooks a 2026-07-28 listen stream or a handshake-era GET stream held the worker for the
whole ``--graceful-timeout`` (30 s), then the arbiter killed it.  Real gunicorn (gthread, one
worker) serving tests/servers/scale_out_app.py, with real clients holding both kinds of stream.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import SERVERS, WAIT, command_label, watch_stderr
from test_http_deploy import LineReader, free_port, stop, wait_for_port

from mcp_ref import Client

pytestmark = pytest.mark.skipif(importlib.util.find_spec("gunicorn") is None,
                                reason="gunicorn is not installed (test extra)")

#: gunicorn's own default: without the hooks, how long a stop waited for the streams.
GRACEFUL_TIMEOUT = 30


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGQUIT], ids=["graceful", "quick"])
def test_a_stopped_worker_ends_its_listen_and_get_streams_at_once(stop_signal):
    port = free_port()
    command = [sys.executable, "-m", "gunicorn", "-c", "python:mcp_ref.workbench.gunicorn_hooks", "-k", "gthread",
               "-w", "1", "--threads", "8", "--graceful-timeout", str(GRACEFUL_TIMEOUT), "-b", f"127.0.0.1:{port}",
               "--chdir", str(SERVERS), "scale_out_app:wsgi_app"]
    env = {key: value for key, value in os.environ.items() if key != "MCP_REF_STATE"}
    env.update(SCALE_OUT_STATELESS="0")  # handshake-era sessions, so a GET stream
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    errors = LineReader(proc.stderr)
    watch_stderr(command_label(command), lambda: list(errors.all))
    try:
        wait_for_port(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        heard = threading.Event()
        with Client.http(url, era="handshake", timeout=WAIT, on_list_changed=lambda kind: heard.set()) as old, \
                Client.http(url, era="modern", timeout=WAIT) as new:
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
