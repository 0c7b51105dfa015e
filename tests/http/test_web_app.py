"""The web application around the server (issue 23 item 5): ``ctx.http`` (the HTTP request a call
came in on, per request, in every era and transport; None over stdio and in memory), the hint a
refused Host gets, long-lived streams refused under a single-threaded WSGI worker (gunicorn's sync
worker, for real), and the Django recipe (tests/servers/django_app, under gunicorn) with SSE
streaming through the view."""

from __future__ import annotations

import importlib.util
import itertools
import logging
import os
import subprocess
import sys

import pytest
import requests
from conftest import WAIT, command_label, watch_stderr
from http_fixtures import (
    ACCEPT_BOTH,
    LATEST,
    TIMEOUT,
    free_port,
    init_params,
    request,
    serve,  # noqa: F401 - fixture
)
from test_http_deploy import LineReader, stop, wait_for_port

from mcp_ref import Client, Context, Server

SERVERS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "servers")
needs_gunicorn = pytest.mark.skipif(
    importlib.util.find_spec("gunicorn") is None, reason="gunicorn is not installed"
)


def http_server() -> Server:
    server = Server("web-app")

    @server.tool()
    def seen(ctx: Context) -> dict:
        """What the HTTP request of this call carried."""
        http = ctx.http
        if http is None:
            return {"http": None}
        return {
            "agent": http.headers.get("x-agent"),
            "agent_title": http.headers.get("X-Agent"),
            "has_lower": "content-type" in http.headers,
            "seq": http.headers.get("X-Seq"),
            "cookies": http.cookies,
            "remote": http.remote_addr,
            "method": http.method,
            "path": http.path,
            "user": http.user,
            "environ": "wsgi.input" in http.environ,
        }

    return server


class Numbered:
    """WSGI middleware: every HTTP request gets its own ``X-Seq`` header, and a user (``mcp_ref.user``),
    as a framework's authentication would set it."""

    def __init__(self, app):
        self.app, self.numbers = app, itertools.count(1)

    def __call__(self, environ, start_response):
        environ["HTTP_X_SEQ"] = str(next(self.numbers))
        environ["mcp_ref.user"] = "carol"
        return self.app(environ, start_response)


@pytest.mark.parametrize("how", ["handshake", "modern", "sse", "stateless"])
def test_ctx_http_is_the_request_of_each_call(serve, how):
    """Headers (case-insensitive), cookies, address, method, path, environ, user; and per request:
    two calls of one session came on two HTTP requests, and each sees its own."""
    stateless = how == "stateless"
    srv = serve(http_server(), wrap=Numbered, stateless=stateless)
    url, options = (
        (srv.sse, {"transport": "sse"})
        if how == "sse"
        else (srv.mcp, {"era": "modern" if how == "modern" else "handshake"})
    )
    headers = {"X-Agent": "agent/1", "Cookie": 'user=alice; theme="dark"; user=shadow'}
    with Client.http(url, headers=headers, timeout=WAIT, **options) as client:
        first = client.call_tool("seen").structured_content
        second = client.call_tool("seen").structured_content
    assert first["agent"] == first["agent_title"] == "agent/1" and first["has_lower"]
    assert first["cookies"] == {"user": "alice", "theme": "dark"}
    assert first["remote"] == "127.0.0.1" and first["method"] == "POST" and first["environ"]
    assert first["path"] == ("/messages" if how == "sse" else "/mcp")
    assert first["user"] == "carol"
    assert int(second["seq"]) > int(
        first["seq"]
    )  # another HTTP request: its own headers, not the session's first


def test_ctx_http_is_none_in_memory():
    with Client.in_memory(http_server(), timeout=WAIT) as client:
        assert client.call_tool("seen").structured_content == {"http": None}


@pytest.mark.slow
def test_ctx_http_is_none_over_stdio(tmp_path):
    script = tmp_path / "server.py"
    here = os.path.dirname(os.path.dirname(__file__))
    script.write_text(
        f"import sys\nsys.path[:0] = [{here!r}, {os.path.dirname(__file__)!r}]\nfrom test_web_app import http_server\n"
        "http_server().run()\n"
    )
    with Client.stdio([sys.executable, str(script)], timeout=WAIT) as client:
        assert client.call_tool("seen").structured_content == {"http": None}


# -- a host that is not allowed ---------------------------------------------------------------


def test_a_refused_host_is_told_about_allowed_hosts_and_logged_once(serve, caplog):
    srv = serve(http_server())
    caplog.set_level(logging.WARNING, logger="mcp_ref.http.server.base")
    for _ in range(3):
        answer = requests.post(
            srv.mcp,
            json=request(1, "initialize", init_params()),
            timeout=TIMEOUT,
            headers={"Host": "myapp.example.com", "Accept": ACCEPT_BOTH},
        )
        assert answer.status_code == 403
        message = answer.json()["error"]["message"]
        assert "host 'myapp.example.com' is not allowed" in message
        assert "allowed_hosts=['myapp.example.com']" in message, message
    logged = [r.getMessage() for r in caplog.records if "myapp.example.com" in r.getMessage()]
    assert len(logged) == 1 and "allowed_hosts=" in logged[0], logged
    with Client.http(srv.mcp, timeout=WAIT) as client:  # a local name still passes
        assert client.call_tool("seen").structured_content["remote"] == "127.0.0.1"


def test_an_allowed_host_list_names_itself_in_the_refusal(serve):
    srv = serve(http_server(), allowed_hosts=["api.example.com"])
    answer = requests.post(
        srv.mcp,
        json=request(1, "initialize", init_params()),
        timeout=TIMEOUT,
        headers={"Host": "myapp.example.com", "Accept": ACCEPT_BOTH},
    )
    assert answer.status_code == 403
    assert "allowed_hosts is ['api.example.com']" in answer.json()["error"]["message"]


# -- one request at a time per worker ---------------------------------------------------------


def single_threaded(app):
    """What gunicorn's sync worker says of itself (PEP 3333 ``wsgi.multithread``)."""

    def call(environ, start_response):
        environ["wsgi.multithread"], environ["wsgi.multiprocess"] = False, True
        return app(environ, start_response)

    return call


def test_single_threaded_worker_refuses_long_lived_streams(serve):
    """GET's standalone stream: 405 (basic/transports allows it); the 2024-11-05 GET: 405; a
    2026-07-28 subscriptions/listen: a JSON-RPC error; requests and their answers still work."""
    srv = serve(http_server(), wrap=single_threaded)
    with Client.http(
        srv.mcp, era="handshake", timeout=WAIT
    ) as client:  # its GET refused: it goes on without one
        assert client.call_tool("seen").structured_content["method"] == "POST"
        session_id = client.session.transport.session_id
        get = requests.get(
            srv.mcp,
            timeout=TIMEOUT,
            headers={
                "Accept": "text/event-stream",
                "Mcp-Session-Id": session_id,
                "MCP-Protocol-Version": LATEST,
            },
        )
        assert get.status_code == 405 and "gthread" in get.json()["error"]["message"], get.text
        assert "GET" not in get.headers["Allow"]
        assert client.call_tool("seen").structured_content["method"] == "POST"
    legacy = requests.get(srv.sse, timeout=TIMEOUT, headers={"Accept": "text/event-stream"})
    assert legacy.status_code == 405 and "wsgi.multithread" in legacy.json()["error"]["message"]
    with Client.http(srv.mcp, era="modern", timeout=WAIT) as client:
        with pytest.raises(Exception, match="subscriptions/listen is not served here"):
            client.listen(timeout=WAIT)


@pytest.mark.slow
@needs_gunicorn
def test_gunicorn_sync_worker_answers_get_with_405_and_keeps_serving():
    """For real: one sync worker.  Were the GET held, the POST after it would wait for gunicorn's timeout."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "-k",
        "sync",
        "-w",
        "1",
        "--timeout",
        "30",
        "-b",
        f"127.0.0.1:{port}",
        "--chdir",
        SERVERS,
        "sync_worker_app:app",
    ]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    LineReader(proc.stdout)
    errors = LineReader(proc.stderr)
    watch_stderr(command_label(command), lambda: list(errors.all))
    try:
        wait_for_port(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        with Client.http(url, era="handshake", timeout=WAIT) as client:
            session_id = client.session.transport.session_id
            get = requests.get(
                url,
                timeout=TIMEOUT,
                headers={
                    "Accept": "text/event-stream",
                    "Mcp-Session-Id": session_id,
                    "MCP-Protocol-Version": LATEST,
                },
            )
            assert get.status_code == 405, get.text
            assert "sync worker" in get.json()["error"]["message"]
            assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}
        errors.wait_for(r"the standalone SSE stream \(GET\) refused")  # and logged, with the reason
    finally:
        stop(proc)
    assert "WORKER TIMEOUT" not in "".join(errors.all)


# -- the Django recipe ------------------------------------------------------------------------


def gunicorn_site(framework: str, app: str, options: tuple[str, ...] = ()):
    """``app`` (under tests/servers) served by gunicorn (gthread, one worker, 8 threads, and
    ``options``): (its URL, its stderr lines)."""
    if importlib.util.find_spec(framework) is None or importlib.util.find_spec("gunicorn") is None:
        pytest.skip(f"{framework} and gunicorn are needed (the test extra)")
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "-k",
        "gthread",
        "-w",
        "1",
        "--threads",
        "8",
        *options,
        "-b",
        f"127.0.0.1:{port}",
        "--chdir",
        SERVERS,
        app,
    ]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    LineReader(proc.stdout)
    errors = LineReader(proc.stderr)
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}", errors
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def django_site():
    """tests/servers/django_app under gunicorn (gthread): the MCP app mounted by a view at /tools/."""
    yield from gunicorn_site("django", "django_app.wsgi:application")


@pytest.mark.slow
@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_django_view_mounts_the_app_with_its_user(django_site, era):
    site, errors = django_site
    watch_stderr("gunicorn django_app", lambda: list(errors.all))
    cookie = {"Cookie": "user=alice", "X-Agent": "django-test"}
    assert (
        requests.get(site + "/", headers=cookie, timeout=TIMEOUT).text == "hello alice"
    )  # the rest of the site
    with Client.http(site + "/tools/mcp", headers=cookie, era=era, timeout=WAIT) as client:
        seen = client.call_tool("whoami").structured_content
        assert seen == {
            "user": "alice",
            "path": "/tools/mcp",
            "method": "POST",
            "cookie": "alice",
            "agent": "django-test",
        }
        steps: list = []
        assert (
            client.call_tool("count", {"n": 3}, on_progress=lambda *p: steps.append(p)).text
            == "counted 3"
        )
        assert [p[0] for p in steps] == [1, 2, 3]  # SSE events through the view, in order


@pytest.mark.slow
def test_django_view_streams_sse_both_ways(django_site):
    """An elicitation waits on the POST's SSE stream for the client's answer (another POST through
    the view): a view that buffered the answer would never send the question."""
    site, errors = django_site
    watch_stderr("gunicorn django_app", lambda: list(errors.all))
    asked: list = []

    def answer(params):
        asked.append(params.message)
        return {"action": "accept", "content": {"ok": True}}

    with Client.http(
        site + "/tools/mcp", era="handshake", elicitation_handler=answer, timeout=WAIT
    ) as client:
        assert client.call_tool("confirm", {"question": "ship it?"}).text == "accept:True"
    assert asked == ["ship it?"]
    # The 2024-11-05 transport: its session is a GET stream held through the view, and its endpoint
    # event names the mount prefix.
    with Client.http(
        site + "/tools/sse", transport="sse", headers={"Cookie": "user=bob"}, timeout=WAIT
    ) as client:
        seen = client.call_tool("whoami").structured_content
        assert seen["user"] == "bob" and seen["path"] == "/tools/messages"


# -- the same recipe under Flask ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def flask_site():
    """tests/servers/flask_app.py under gunicorn (gthread): the MCP app mounted by a Flask route at /tools/."""
    yield from gunicorn_site("flask", "flask_app:app")


@pytest.mark.slow
@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_flask_route_mounts_the_app_with_its_user_and_streams_sse(flask_site, era):
    site, errors = flask_site
    watch_stderr("gunicorn flask_app", lambda: list(errors.all))
    cookie = {"Cookie": "user=carol", "X-Agent": "flask-test"}
    assert requests.get(site + "/", headers=cookie, timeout=TIMEOUT).text == "hello carol"
    asked: list = []

    def answer(params):
        asked.append(params.message)
        return {"action": "accept", "content": {"ok": True}}

    with Client.http(
        site + "/tools/mcp", headers=cookie, era=era, elicitation_handler=answer, timeout=WAIT
    ) as client:
        seen = client.call_tool("whoami").structured_content
        assert seen == {
            "user": "carol",
            "path": "/tools/mcp",
            "method": "POST",
            "cookie": "carol",
            "agent": "flask-test",
        }
        steps: list = []
        assert (
            client.call_tool("count", {"n": 3}, on_progress=lambda *p: steps.append(p)).text
            == "counted 3"
        )
        assert [p[0] for p in steps] == [1, 2, 3]  # SSE events through the route, in order
        assert client.call_tool("confirm", {"question": "ship it?"}).text == "accept:True"
    assert asked == ["ship it?"]
