"""Issue 9: "the official SDK's OAuth client logs in to mcp-ref serve-demo --http --auth and calls a tool".

``mcp-ref serve-demo --http 127.0.0.1:0 --auth`` runs in a subprocess; the official MCP Python SDK's
client (tests/servers/interop_sdk_oauth_client.py, written with nothing but ``mcp``) runs in
another against its MCP URL.  Its ``OAuthClientProvider`` meets the 401, discovers the protected
resource metadata and the authorization server's metadata, registers dynamically (/register),
authorizes with PKCE S256 (the demo approves at once; the script plays the browser and reads
code, state and iss from the redirect's ``Location``), exchanges the code at /token, then
initializes over Streamable HTTP with the access token and calls ``echo``.  The endpoint answers
401 to a request without a token, so the echoed text can only come from a completed login.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
import requests
from conftest import SERVERS, WAIT, watch_stderr
from test_http_deploy import LineReader, stop

pytest.importorskip(
    "mcp", reason="the official MCP Python SDK (`pip install mcp`) is not installed"
)
#: The official SDK's OAuth client, against our server started for real: slow (`pytest -m "not slow"` leaves it out).
pytestmark = pytest.mark.slow

SDK_OAUTH_CLIENT = SERVERS / "interop_sdk_oauth_client.py"


@pytest.fixture(scope="module")
def protected_demo():
    """``mcp-ref serve-demo --http 127.0.0.1:0 --auth`` in a subprocess: the MCP endpoint's URL."""
    command = [sys.executable, "-m", "mcp_ref", "serve-demo", "--http", "127.0.0.1:0", "--auth"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    errors = LineReader(proc.stderr)
    unwatch = watch_stderr("serve-demo --auth", lambda: list(errors.all), keep=True)
    try:
        yield errors.wait_for(r"serving the demo at (http://127\.0\.0\.1:\d+/mcp)").group(1)
    finally:
        stop(proc, signal.SIGINT)
        unwatch()


def test_the_sdk_oauth_client_logs_in_and_calls_a_tool(protected_demo):
    anonymous = requests.post(
        protected_demo,
        json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        headers={"Accept": "application/json, text/event-stream"},
        timeout=WAIT,
    )
    assert anonymous.status_code == 401 and "Bearer" in anonymous.headers.get(
        "WWW-Authenticate", ""
    )

    # The script bounds itself to 30 s (anyio.fail_after); this bound only catches a hung interpreter.
    run = subprocess.run(
        [sys.executable, str(SDK_OAUTH_CLIENT), protected_demo],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == "sdk-oauth\n", run.stdout + run.stderr
