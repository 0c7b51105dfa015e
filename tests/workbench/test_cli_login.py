"""Issue 9 §4: ``mcp-ref`` against a protected server logs in on the first 401, through the browser
(here a script named by ``BROWSER`` that visits the URL, as a person would), caches the login under
``$XDG_CACHE_HOME/mcp-ref/`` (mode 0600), reuses it, forgets it on ``logout``; a failed authorization
is one line and exit code 7; ``--trace`` shows the flow with every secret masked."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import stat
import subprocess
import sys
import threading

import pytest
from conftest import WAIT, run_cli, watch_stderr
from test_http_deploy import LineReader, stop

from mcp_ref.http.wsgi_server import WsgiServer
from mcp_ref.inspector.masking import MASK

BROWSER_SCRIPT = """
import pathlib, sys, requests
pathlib.Path(sys.argv[1]).write_text(sys.argv[2])  # the browser was opened, with this URL
requests.get(sys.argv[2], timeout=30)  # the demo approves at once; its redirect reaches mcp-ref's listener
"""
#: Each test runs ``python -m mcp_ref`` for real (its own environment: the cache, the browser): slow.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def protected_demo():
    """``mcp-ref serve-demo --http 127.0.0.1:0 --auth`` in a subprocess: the MCP endpoint's URL."""
    command = [sys.executable, "-m", "mcp_ref", "serve-demo", "--http", "127.0.0.1:0", "--auth"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    errors = LineReader(proc.stderr)
    watch_stderr("serve-demo --auth", lambda: list(errors.all))
    try:
        yield errors.wait_for(r"serving the demo at (http://127\.0\.0\.1:\d+/mcp)").group(1)
    finally:
        stop(proc, signal.SIGINT)


@pytest.fixture
def env(tmp_path):
    """A private cache and a browser that records it was opened, then visits the URL."""
    script = tmp_path / "browser.py"
    script.write_text(BROWSER_SCRIPT)
    opened = tmp_path / "opened"
    environment = dict(
        os.environ,
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        BROWSER=f"{sys.executable} {script} {opened} %s",
    )
    return environment, opened, tmp_path / "cache" / "mcp-ref" / "tokens.json"


def mcp_ref(environment, *args):
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_ref", "--timeout", str(WAIT), *args],
        capture_output=True,
        text=True,
        timeout=WAIT * 3,
        env=environment,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_the_first_call_logs_in_through_the_browser_and_the_next_needs_none(protected_demo, env):
    environment, opened, cache = env
    first = mcp_ref(environment, "call", protected_demo, "echo", "text=hi")
    assert first.returncode == 0 and first.stdout == "hi\n", first.stderr
    assert opened.exists() and "/authorize?" in opened.read_text()
    assert (
        "open this URL in a browser" in first.stderr
    )  # printed as well, for a browser that does not open
    assert (
        stat.S_IMODE(os.stat(cache).st_mode) == 0o600
        and stat.S_IMODE(os.stat(cache.parent).st_mode) == 0o700
    )
    opened.unlink()
    second = mcp_ref(environment, "tools", protected_demo)
    assert second.returncode == 0 and "echo" in second.stdout and not opened.exists(), second.stderr
    assert "open this URL" not in second.stderr


def test_logout_forgets_the_login(protected_demo, env):
    environment, opened, cache = env
    assert mcp_ref(environment, "info", protected_demo).returncode == 0
    records = json.loads(cache.read_text())
    assert any(key.startswith("tokens ") for key in records) and any(
        key.startswith("client ") for key in records
    )
    out = mcp_ref(environment, "logout", protected_demo)
    assert out.returncode == 0 and "forgot" in out.stderr
    assert json.loads(cache.read_text()) == {}
    opened.unlink()
    assert (
        mcp_ref(environment, "info", protected_demo).returncode == 0 and opened.exists()
    )  # the browser again
    assert "no cached authorization" in mcp_ref(environment, "logout", protected_demo + "x").stderr


def test_trace_shows_the_flow_with_secrets_masked(protected_demo, env):
    environment, _, cache = env
    proc = mcp_ref(environment, "--trace", "call", protected_demo, "echo", "text=t")
    assert proc.returncode == 0, proc.stderr
    for step in (
        "http> GET ",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server",
        "http> POST ",
        "/register",
        "/token",
        "code=••••••",
        '"access_token": "••••••"',
    ):
        assert step in proc.stderr, step
    tokens = next(v for k, v in json.loads(cache.read_text()).items() if k.startswith("tokens "))
    for secret in (tokens["access_token"], tokens["refresh_token"]):
        assert secret not in proc.stderr
    assert not re.search(r"[?&]code=(?!••••••)", proc.stderr)


@contextlib.contextmanager
def serving(app):
    """A WsgiServer of ``app`` on 127.0.0.1 (port 0), serving on a thread while the block runs."""
    httpd = WsgiServer(("127.0.0.1", 0), app)
    threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_the_login_trace_masks_a_url_s_userinfo_and_a_client_secret():
    """The login's ``--trace`` had rules of its own, narrower than the inspector's: a URL's userinfo
    (``https://ann:s3cret@host/``) was shown, and only keys of one exact spelling were hidden (an
    authorization server's ``clientSecret`` or ``api_key`` was not).  Now each exchange is masked
    by the inspector's rules (:mod:`mcp_ref.inspector.masking`), its shape kept."""
    from mcp_ref.workbench.login import traced_http

    def authorization_server(environ, start_response):
        answer = {"client_id": "c1", "client_secret": "SEKRIT-1", "clientSecret": "SEKRIT-2"}
        start_response(
            "302 Found",
            [
                ("Content-Type", "application/json"),
                ("Location", "http://bob:pa55@127.0.0.1/cb?code=C0DE&state=s"),
            ],
        )
        return [json.dumps(answer).encode()]

    trace = io.StringIO()
    with serving(authorization_server) as httpd:
        url = httpd.url.replace("http://", "http://ann:s3cret@") + "/token?api_key=K3Y"
        form = {"grant_type": "client_credentials", "client_secret": "SEKRIT-3"}
        traced_http(trace).post(url, data=form, timeout=WAIT, allow_redirects=False)
    for secret in ("s3cret", "K3Y", "SEKRIT", "pa55", "C0DE"):
        assert secret not in trace.getvalue(), trace.getvalue()
    sent, received = trace.getvalue().splitlines()
    port = httpd.server_address[1]
    assert sent == (
        f"http> POST http://••••••@127.0.0.1:{port}/token?api_key=••••••"
        " grant_type=client_credentials&client_secret=••••••"
    )
    assert received == (
        "http< 302 Location: http://••••••@127.0.0.1/cb?code=••••••&state=s"
        ' {"client_id": "c1", "client_secret": "••••••", "clientSecret": "••••••"}'
    )


def test_the_login_trace_masks_an_authorization_code_sent_or_answered_as_json():
    """An authorization code was masked only in a form or a URL's query: a token request sent as
    JSON (``{"code": "..."}``), or an answer quoting it, showed it in the ``--trace``.  In an
    OAuth exchange's JSON, a string under ``code`` is masked now; a number there (an error's
    code) stays."""
    from mcp_ref.workbench.login import traced_http

    def authorization_server(environ, start_response):
        answer = {"error": "invalid_grant", "code": "C0DE-2", "details": {"code": 400}}
        start_response("400 Bad Request", [("Content-Type", "application/json")])
        return [json.dumps(answer).encode()]

    trace = io.StringIO()
    with serving(authorization_server) as httpd:
        sent = {"grant_type": "authorization_code", "code": "C0DE-1", "code_verifier": "V3R"}
        traced_http(trace).post(httpd.url + "/token", json=sent, timeout=WAIT)
    assert trace.getvalue().splitlines() == [
        f"http> POST {httpd.url}/token"
        f' {{"grant_type": "authorization_code", "code": "{MASK}", "code_verifier": "{MASK}"}}',
        f'http< 400 {{"error": "invalid_grant", "code": "{MASK}", "details": {{"code": 400}}}}',
    ]


def test_no_browser_only_prints_the_url(protected_demo, env):
    """``--no-browser``: the URL on stderr, no browser; whoever opens it completes the login."""
    environment, opened, _ = env
    command = [
        sys.executable,
        "-m",
        "mcp_ref",
        "--no-browser",
        "--timeout",
        str(WAIT),
        "info",
        protected_demo,
    ]
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment
    )
    errors = LineReader(proc.stderr)
    try:
        url = errors.wait_for(r"^\s+(http://\S+/authorize\?\S+)").group(1)
        import requests

        requests.get(url, timeout=WAIT)  # the person, in a browser of their choice
        assert proc.wait(WAIT) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(WAIT)
    assert not opened.exists()


def test_a_failed_authorization_is_one_line_and_exit_7(env):
    """A server whose metadata names an authorization server that cannot be reached."""
    environment, _, _ = env

    def protected(environ, start_response):
        base = f"http://{environ['HTTP_HOST']}"
        if environ["PATH_INFO"].startswith("/.well-known/oauth-protected-resource"):
            body = json.dumps(
                {"resource": base + "/mcp", "authorization_servers": ["http://127.0.0.1:9/"]}
            ).encode()
            start_response("200 OK", [("Content-Type", "application/json")])
            return [body]
        start_response(
            "401 Unauthorized",
            [
                (
                    "WWW-Authenticate",
                    f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"',
                ),
                ("Content-Length", "0"),
            ],
        )
        return [b""]

    httpd = WsgiServer(("127.0.0.1", 0), protected)
    threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    try:
        proc = mcp_ref(environment, "tools", httpd.url + "/mcp")
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert proc.returncode == 7, (proc.returncode, proc.stderr)
    assert (
        proc.stderr.startswith("mcp-ref: authorization failed:")
        and len(proc.stderr.strip().splitlines()) == 1
    ), proc.stderr


@pytest.mark.parametrize("era", ["auto", "modern", "handshake"])
def test_a_bad_header_token_exits_with_the_auth_code(protected_demo, era):
    """Issue 23 item 7: a token given with --header that the server refuses (401) is exit 7, not 4, in
    every era (2026-07-28's probe reads the 401 as "not a modern server": the 401 behind it is found)."""
    proc = run_cli(
        "tools", protected_demo, "--era", era, "--header", "Authorization: Bearer not-a-token"
    )
    assert proc.returncode == 7, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "mcp-ref: authorization failed: the server refused the Authorization header given with --header: HTTP 401"
    ), lines
