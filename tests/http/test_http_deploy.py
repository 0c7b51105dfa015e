"""Deployments of the WSGI app, and the CLI over HTTP: the demo's stateless app under gunicorn
with two gthread workers; the app mounted under a prefix next to a Flask app; ``mcp-ref`` with URL
targets; ``mcp-ref serve-demo --http``.  Every message is validated against the official schema
(WireChecker, or check_trace on a --trace run)."""

from __future__ import annotations

import importlib.util
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
import requests
from conftest import (
    WAIT,
    WireChecker,
    check_trace,
    command_label,
    run_cli,
    run_threads,
    watch_stderr,
)
from http_fixtures import (
    ACCEPT_BOTH,
    LATEST,
    TIMEOUT,
    HeaderRecorder,
    SseReader,
    free_port,
    init_params,
    request,
    serve,  # noqa: F401 - fixture
    start,
)

from mcp_ref import Client


class LineReader:
    """The lines a subprocess writes to one pipe, readable with a bounded wait."""

    def __init__(self, pipe):
        self.lines: queue.Queue = queue.Queue()
        self.all: list[str] = []
        self.thread = threading.Thread(target=self._pump, args=(pipe,), daemon=True)
        self.thread.start()

    def _pump(self, pipe) -> None:
        for line in iter(pipe.readline, ""):
            self.all.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, pattern: str, timeout: float = WAIT) -> re.Match:
        deadline = time.monotonic() + timeout
        while True:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            assert line is not None, "the process ended: " + "".join(self.all)
            found = re.search(pattern, line)
            if found:
                return found


def stop(proc: subprocess.Popen, sig=signal.SIGTERM) -> int:
    """Stop ``proc`` with ``sig`` (killed if it does not end within WAIT); a gunicorn started by
    :func:`start_gunicorn` leads a process group of its own, whose leftovers are killed too: a worker
    whose quit signal landed inside gunicorn's own ``ThreadPoolExecutor.submit`` deadlocks in
    ``handle_quit`` (gthread), and would outlive its killed master."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(WAIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(WAIT)
    finally:
        if getattr(proc, "own_group", False):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass  # the group has ended


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = WAIT) -> None:
    """Wait until something accepts connections on 127.0.0.1:port.

    gunicorn announces nothing a test can wait on reliably (its log lines are not a readiness
    contract), so this loops over connect attempts — bounded by ``timeout``, and ended early if
    the process dies.  Each failed attempt is an immediate "connection refused", so the loop
    paces itself with a short wait between attempts.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the server exited with {proc.returncode}"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port} after {timeout} s")


def start_gunicorn(
    options: list[str], env: dict, state: str | None
) -> tuple[subprocess.Popen, LineReader, int]:
    """``gunicorn`` with ``options`` (worker class, app, ...) on a free loopback port, its environment
    this process's plus ``env``, ``MCP_REF_STATE`` set to ``state`` (None: unset); waits until it
    listens.  Returns the process, its stderr reader (watched for tracebacks) and the port.

    The port was free a moment ago; another test's server may take it first (gunicorn then says
    "Connection in use" and retries, while the port answers for the other server): it is told by
    gunicorn's own "Listening at" line, and a new port is taken (three tries)."""
    environ = {key: value for key, value in os.environ.items() if key != "MCP_REF_STATE"}
    environ.update(env)
    if state is not None:
        environ["MCP_REF_STATE"] = state
    for _ in range(3):
        port = free_port()
        command = [sys.executable, "-m", "gunicorn", *options, "-b", f"127.0.0.1:{port}"]
        proc = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=environ,
            start_new_session=True,
        )
        proc.own_group = True  # type: ignore[attr-defined]  # stop() ends the workers too
        errors = LineReader(proc.stderr)
        watch_stderr(command_label(command), lambda errors=errors: list(errors.all))
        if "in use" in errors.wait_for(r"Listening at: |Connection in use").group(0):
            stop(proc)
            continue
        wait_for_port(port, proc)
        return proc, errors, port
    raise AssertionError("gunicorn found no free port in three tries")


# -- gunicorn ------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("gunicorn") is None,
    reason="gunicorn is not installed (pip install gunicorn; in the test extra)",
)
@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_demo_under_gunicorn_two_workers_stateless(era):
    """Several workers, no sticky sessions: the 2026-07-28 era is stateless by design, and the
    handshake era is served statelessly by mcp_ref (each worker answers any request)."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "-k",
        "gthread",
        "-w",
        "2",
        "--threads",
        "8",
        "-b",
        f"127.0.0.1:{port}",
        "--access-logfile",
        "-",
        "--access-logformat",
        "%(p)s %(m)s %(U)s %(s)s",
        "mcp_ref.workbench.demo:wsgi_app",
    ]
    # docs/deploying.md "Every worker of a stateless deployment must share one secret": the cursors of tools/list
    # (which a 2025-11-25 client sends to learn each tool's taskSupport) verify on either worker.
    env = {**os.environ, "MCP_REF_SECRET": "two-workers-" + "0" * 32}
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=os.getcwd(), env=env
    )
    access, errors = LineReader(proc.stdout), LineReader(proc.stderr)
    watch_stderr(command_label(command), lambda: list(errors.all))
    try:
        wait_for_port(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        workers = {
            int(errors.wait_for(r"Booting worker with pid: (\d+)").group(1)) for _ in range(2)
        }
        calls_per_thread = 25

        def run(n: int) -> WireChecker:
            checker = WireChecker()
            with Client.http(
                url, trace=checker, timeout=WAIT, headers={"Connection": "close"}, era=era
            ) as client:
                assert client.session.transport.session_id is None  # stateless
                assert client.era == era
                for i in range(calls_per_thread):
                    if i % 5 == 0:
                        result = client.call_tool("add", {"a": n, "b": i})
                        assert float(result.content[0].text) == n + i
                    else:
                        result = client.call_tool("echo", {"text": f"{n}.{i}"})
                        assert result.content[0].text == f"{n}.{i}", result.raw
            return checker

        checkers = run_threads(run, 8, timeout=WAIT * 3)  # fails with every thread's failure listed
        for checker in checkers:
            checker.assert_valid()
        tool_calls = sum(len(c.sent("tools/call")) for c in checkers)
        assert tool_calls == 8 * calls_per_thread

        # A bare request, no initialize, no session: any worker answers it.
        response = requests.post(
            url,
            json=request("tools/call", {"name": "echo", "arguments": {"text": "raw"}}),
            headers={"Accept": ACCEPT_BOTH, "MCP-Protocol-Version": LATEST},
            timeout=TIMEOUT,
        )
        assert (
            response.status_code == 200 and response.json()["result"]["content"][0]["text"] == "raw"
        )
        assert response.headers.get("Server", "").startswith("gunicorn")
        assert "Mcp-Session-Id" not in response.headers

        # Which worker answered each POST, from the access log (pid, method, path, status).
        # + server/discover per client (modern) or initialize and initialized (handshake), + the raw one
        posts = 8 * (calls_per_thread + (1 if era == "modern" else 2)) + 1
        answered: dict[int, int] = {}
        while sum(answered.values()) < posts:
            line = access.lines.get(timeout=WAIT)
            assert line is not None
            pid, method, path, status = line.split()
            pid = pid.strip("<>")  # gunicorn writes %(p)s as <PID>
            if method == "POST":
                assert path == "/mcp" and status in ("200", "202"), line
                answered[int(pid)] = answered.get(int(pid), 0) + 1
        assert set(answered) <= workers, (answered, workers)
        # How the kernel spreads connections over the two workers is not ours to decide, so the
        # split is reported, not asserted; test_stateless_requests_need_no_state_from_another_instance
        # proves deterministically that any instance can answer any request.
        print("POSTs answered per worker:", answered)
    finally:
        stop(proc)
        assert "Traceback" not in "".join(errors.all), "".join(errors.all)


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("gunicorn") is None,
    reason="gunicorn is not installed (pip install gunicorn; in the test extra)",
)
def test_pagination_across_three_gunicorn_workers_with_a_shared_secret():
    """Issue 7 class 9: a cursor minted by one worker is accepted by every other (MCP_REF_SECRET)."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "-k",
        "gthread",
        "-w",
        "3",
        "--threads",
        "4",
        "-b",
        f"127.0.0.1:{port}",
        "--access-logfile",
        "-",
        "--access-logformat",
        "%(p)s %(m)s %(U)s %(s)s",
        "mcp_ref.workbench.demo:wsgi_app",
    ]
    env = {**os.environ, "MCP_REF_SECRET": "new-shared-secret,old-shared-secret"}
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=os.getcwd(), env=env
    )
    access, errors = LineReader(proc.stdout), LineReader(proc.stderr)
    watch_stderr(command_label(command), lambda: list(errors.all))
    try:
        wait_for_port(port, proc)
        workers = {
            int(errors.wait_for(r"Booting worker with pid: (\d+)").group(1)) for _ in range(3)
        }
        url = f"http://127.0.0.1:{port}/mcp"
        headers = {"Accept": ACCEPT_BOTH, "MCP-Protocol-Version": LATEST, "Connection": "close"}

        def tools_list(cursor, request_id):
            params = {"cursor": cursor} if cursor else None
            response = requests.post(
                url,
                json=request("tools/list", params, request_id),
                headers=headers,
                timeout=TIMEOUT,
            )
            assert response.status_code == 200, response.text
            return response.json()

        first = tools_list(None, 1)["result"]
        assert first.get("nextCursor"), first  # the demo lists five tools a page
        for n in range(
            20
        ):  # each follow-up on a new connection: workers take turns as the kernel pleases
            page = tools_list(first["nextCursor"], 100 + n)
            assert "result" in page and page["result"]["tools"], page
        answered: dict[int, int] = {}
        while sum(answered.values()) < 21:  # the first page and 20 follow-ups, from the access log
            line = access.lines.get(timeout=WAIT)
            assert line is not None
            pid = int(line.split()[0].strip("<>"))
            answered[pid] = answered.get(pid, 0) + 1
        assert set(answered) <= workers
        # How the kernel spreads connections is not ours to decide; the cross-instance proof is
        # test_hardening.py::test_a_cursor_from_one_instance_is_accepted_by_another_with_the_same_secret.
        print("pages answered per worker:", answered)
        assert not any("no configured secret" in line for line in errors.all)
    finally:
        stop(proc)
        assert "Traceback" not in "".join(errors.all), "".join(errors.all)


def test_stateless_requests_need_no_state_from_another_instance():
    # Two separate servers, as two workers or machines behind a load balancer would be: the
    # session starts at one, and every later request goes to the other.
    from http_fixtures import serving

    with serving(stateless=True) as first, serving(stateless=True) as second:
        headers = {"Accept": ACCEPT_BOTH}
        init = requests.post(
            first.mcp,
            json=request(
                "initialize",
                {
                    "protocolVersion": LATEST,
                    "capabilities": {},
                    "clientInfo": {"name": "lb", "version": "1"},
                },
            ),
            headers=headers,
            timeout=TIMEOUT,
        )
        assert init.status_code == 200 and "Mcp-Session-Id" not in init.headers
        headers["MCP-Protocol-Version"] = init.json()["result"]["protocolVersion"]
        note = requests.post(
            second.mcp,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=headers,
            timeout=TIMEOUT,
        )
        assert note.status_code == 202
        call = requests.post(
            second.mcp,
            json=request("tools/call", {"name": "echo", "arguments": {"text": "elsewhere"}}, 2),
            headers=headers,
            timeout=TIMEOUT,
        )
        assert (
            call.status_code == 200 and call.json()["result"]["content"][0]["text"] == "elsewhere"
        )


# -- mounted under a prefix next to a Flask app --------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("flask") is None,
    reason="flask is not installed (pip install flask; in the test extra)",
)
def test_mounted_under_a_prefix_next_to_flask():
    from flask import Flask
    from werkzeug.middleware.dispatcher import DispatcherMiddleware

    from mcp_ref.workbench.demo import build_server

    flask_app = Flask("host-app")

    @flask_app.route("/hello")
    def hello():
        return {"hello": "from flask"}

    mcp_app = build_server().wsgi_app(
        keepalive=0.2
    )  # short keep-alives: see test_closing_an_sse_client_is_prompt
    recorder = HeaderRecorder(mcp_app)
    flask_app.wsgi_app = DispatcherMiddleware(flask_app.wsgi_app, {"/tools": recorder})
    served = start(app=flask_app)
    try:
        base = served.url
        checker = WireChecker()
        with Client.http(
            base + "/tools/mcp", trace=checker, timeout=WAIT, era="handshake"
        ) as client:
            assert client.session.transport.mode == "streamable"
            assert client.call_tool("echo", {"text": "mounted"}).content[0].text == "mounted"
            progress = []
            result = client.call_tool(
                "count_slowly",
                {"steps": 2, "delay": 0.01},
                on_progress=lambda *a: progress.append(a),
            )
            assert result.content[0].text == "counted to 2"
            assert client.session.transport.session_id in mcp_app.sessions
        checker.assert_valid()
        assert mcp_app.sessions == {}  # DELETEd on close, through the prefix
        # The app saw paths relative to its mount point.
        assert {path for _, path, _ in recorder.requests} == {"/mcp"}

        response = requests.get(base + "/hello", timeout=TIMEOUT)
        assert response.status_code == 200 and response.json() == {"hello": "from flask"}
        assert requests.get(base + "/mcp", timeout=TIMEOUT).status_code == 404  # Flask's, not ours

        # The legacy endpoint event carries the prefix.
        stream = requests.get(
            base + "/tools/sse",
            headers={"Accept": "text/event-stream"},
            stream=True,
            timeout=TIMEOUT,
        )
        event = SseReader(stream).next()
        stream.close()
        assert event["event"] == "endpoint" and event["data"].startswith(
            "/tools/messages?session_id="
        ), event
        legacy_checker = WireChecker()
        with Client.http(
            base + "/tools/sse", transport="sse", trace=legacy_checker, timeout=WAIT
        ) as client:
            assert client.session.transport.legacy_endpoint.startswith(
                base + "/tools/messages?session_id="
            )
            assert (
                client.call_tool("echo", {"text": "legacy mounted"}).content[0].text
                == "legacy mounted"
            )
        legacy_checker.assert_valid()
        # And the auto fallback finds it through the prefix too.
        with Client.http(base + "/tools/sse", trace=WireChecker(), timeout=WAIT) as client:
            assert client.session.transport.mode == "sse"
    finally:
        served.stop()
        mcp_app.close()


# -- the CLI over HTTP ----------------------------------------------------------------------------


@pytest.fixture
def recorded(serve):
    """A demo server behind a HeaderRecorder (short keep-alives, so SSE-mode clients close promptly)."""
    box = []
    srv = serve(keepalive=0.2, wrap=lambda app: box.append(HeaderRecorder(app)) or box[0])
    srv.recorder = box[0]
    return srv


def traced(*args: str) -> tuple[subprocess.CompletedProcess, WireChecker]:
    proc = run_cli("--trace", "--timeout", str(WAIT), *args, timeout=WAIT * 3)
    checker = check_trace(proc.stderr)
    checker.assert_valid()
    return proc, checker


def test_cli_info_tools_call_over_streamable_http(recorded):
    """The handshake era: a session per command, DELETEd at the end."""
    proc, checker = traced("--era", "handshake", "info", recorded.mcp)
    assert proc.returncode == 0, proc.stderr
    assert "mcp-ref-demo" in proc.stdout and LATEST in proc.stdout
    assert checker.version == LATEST and checker.sent("initialize")

    proc, _ = traced("--era", "handshake", "tools", recorded.mcp)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^echo\(text(: string)?\)", proc.stdout, re.MULTILINE), proc.stdout

    proc, checker = traced("--era", "handshake", "call", recorded.mcp, "echo", "text=hi")
    assert proc.returncode == 0 and proc.stdout == "hi\n", (proc.stdout, proc.stderr)
    assert checker.received() and recorded.app.sessions == {}  # the CLI DELETEd its session
    assert [m for m, _, _ in recorded.recorder.requests].count("DELETE") == 3

    proc, _ = traced("call", recorded.mcp, "divide", "a=1", "b=0")
    assert proc.returncode == 5


def test_cli_transport_sse(recorded):
    proc, checker = traced("--transport", "sse", "call", recorded.sse, "echo", "text=over sse")
    assert proc.returncode == 0 and proc.stdout == "over sse\n", (proc.stdout, proc.stderr)
    assert checker.received() and checker.sent("tools/call")
    assert {path for _, path, _ in recorded.recorder.requests} == {"/sse", "/messages"}
    # auto, with the SSE URL: the fallback.
    proc, _ = traced("call", recorded.sse, "echo", "text=fallback")
    assert proc.returncode == 0 and proc.stdout == "fallback\n", proc.stderr


def test_cli_header_reaches_the_server(recorded):
    proc, _ = traced(
        "--header", "X-Test: 1", "--header", "X-Other:two", "call", recorded.mcp, "echo", "text=h"
    )
    assert proc.returncode == 0, proc.stderr
    assert recorded.recorder.requests
    for _, _, headers in recorded.recorder.requests:
        assert headers.get("x-test") == "1" and headers.get("x-other") == "two", headers
    proc = run_cli("--header", "no colon here", "info", recorded.mcp)
    assert proc.returncode == 1


def test_cli_unreachable_url_exits_4():
    port = free_port()  # nothing listens there (freed a moment ago)
    started = time.monotonic()
    proc = run_cli("--timeout", "5", "info", f"http://127.0.0.1:{port}/mcp", timeout=WAIT * 2)
    assert proc.returncode == 4, (proc.stdout, proc.stderr)
    assert proc.stderr.startswith("mcp-ref:") and "127.0.0.1" in proc.stderr
    assert time.monotonic() - started < WAIT


def test_cli_url_that_is_not_mcp_exits_4(serve):
    srv = serve()
    proc = run_cli(
        "--timeout", "5", "info", srv.url + "/nowhere", timeout=WAIT * 2
    )  # asserts: no Traceback
    assert proc.returncode == 4, (proc.stdout, proc.stderr)
    assert "404" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("stateless", [False, True], ids=["sessions", "stateless"])
def test_serve_demo_http(stateless):
    command = [sys.executable, "-m", "mcp_ref", "serve-demo", "--http", "127.0.0.1:0"] + (
        ["--stateless"] if stateless else []
    )
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    errors = LineReader(proc.stderr)
    watch_stderr(command_label(command), lambda: list(errors.all))
    try:
        found = errors.wait_for(
            r"serving the demo at (http://127\.0\.0\.1:\d+)/mcp \((stateless )?Streamable HTTP\)"
        )
        base = found.group(1)
        assert bool(found.group(2)) == stateless
        proc_cli, _ = traced("call", base + "/mcp", "echo", "text=hi")
        assert proc_cli.returncode == 0 and proc_cli.stdout == "hi\n", proc_cli.stderr
        init = requests.post(
            base + "/mcp",
            data=json.dumps(request("initialize", init_params())),
            headers={"Accept": ACCEPT_BOTH, "Content-Type": "application/json"},
            timeout=TIMEOUT,
        )
        assert init.status_code == 200
        assert ("Mcp-Session-Id" in init.headers) != stateless
        get = requests.get(base + "/mcp", headers={"Accept": "text/event-stream"}, timeout=TIMEOUT)
        assert get.status_code == (
            405 if stateless else 400
        )  # stateless: no stream; else: no session id
        # Both transports at once: the legacy endpoint is there as well.
        stream = requests.get(
            base + "/sse", headers={"Accept": "text/event-stream"}, stream=True, timeout=TIMEOUT
        )
        assert SseReader(stream).next()["event"] == "endpoint"
        stream.close()
    finally:
        code = stop(proc, signal.SIGINT)
    assert code == 0, "".join(errors.all)
    assert "Traceback" not in "".join(errors.all)


# -- ASGI: FastAPI / Starlette under uvicorn, through a2wsgi ----------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("a2wsgi", "uvicorn", "starlette")),
    reason="the ASGI recipe needs a2wsgi, uvicorn and starlette (in the test extra)",
)
def test_the_asgi_recipe_serves_and_streams():
    from conftest import SERVERS

    port = free_port()
    command = [
        sys.executable,
        "-m",
        "uvicorn",
        "asgi_mount:app",
        "--app-dir",
        str(SERVERS),
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    errors = LineReader(proc.stderr)
    watch_stderr(command_label(command), lambda: list(errors.all))
    try:
        wait_for_port(port, proc)
        assert (
            requests.get(f"http://127.0.0.1:{port}/health", timeout=WAIT).text == "ok"
        )  # Starlette's own route
        changed = threading.Event()
        # The handshake era: list changes come on its GET stream.
        with Client.http(
            f"http://127.0.0.1:{port}/mcp",
            timeout=WAIT,
            on_list_changed=lambda kind: changed.set(),
            era="handshake",
        ) as client:
            assert (
                client.call_tool("echo", {"text": "through asgi"}).content[0].text == "through asgi"
            )
            # Streamed, not buffered: each progress event arrives while the tool still runs.
            seen: list[float] = []
            client.call_tool(
                "count_slowly",
                {"steps": 3, "delay": 0.4},
                on_progress=lambda *a: seen.append(time.monotonic()),
            )
            done = time.monotonic()
            assert len(seen) == 3 and done - seen[0] > 0.5, (seen, done)
            # The standalone GET stream works through the adapter too.
            client.call_tool("add_tool", {"name": "extra_asgi"})
            assert changed.wait(WAIT)
    finally:
        stop(proc)
