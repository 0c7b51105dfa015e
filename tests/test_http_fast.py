"""The HTTP client's thin path (mcp_ref.transports.http_fast): a plain POST goes over http.client on
the caller's thread, never through requests.Session.send, with requests' headers; whatever is not a
plain JSON answer (a redirect, a 401, a cookie) is handled by the requests code as before, without
sending the POST again; an auth object, a proxy or a changed session keeps requests' way; answers
stay bounded by max_message_size; timeouts and cancellation still govern a slow request.  Real
servers on 127.0.0.1 port 0 (the stdlib WsgiServer, a middleware scripting the odd answers)."""

from __future__ import annotations

import json
import threading
import time

import pytest
import requests
from conftest import WAIT, run_threads
from http_fixtures import serve  # noqa: F401 - a fixture

from mcp_ref import Client, Context, LimitExceeded, McpError, RequestTimeout, Server
from mcp_ref.transports import http_fast

ERAS = ["handshake", "modern"]


@pytest.fixture
def sent_by_requests(monkeypatch):
    """The methods of the HTTP requests that went through ``requests.Session.send``."""
    methods: list[str] = []
    original = requests.Session.send

    def counting(self, request, **options):
        methods.append(request.method)
        return original(self, request, **options)

    monkeypatch.setattr(requests.Session, "send", counting)
    return methods


def tools_server() -> Server:
    server = Server("thin")
    release = threading.Event()

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    @server.tool()
    def big(size: int) -> str:
        """A text of ``size`` characters."""
        return "x" * size

    @server.tool()
    def slow(ctx: Context) -> str:
        """Waits to be released (or cancelled)."""
        if not release.is_set():
            ctx.request.cancelled.wait(WAIT)  # the client's timeout or cancellation ends the wait
        return "slow"

    server.release = release  # type: ignore[attr-defined]
    return server


class Scripted:
    """Middleware: while ``answer`` is set, a POST of a ``tools/call`` is answered by it (a WSGI app)
    instead of the server; every request is recorded (method, path, headers, body)."""

    def __init__(self, app):
        self.app = app
        self.answer = None
        self.requests: list[tuple[str, str, dict, bytes]] = []
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        import io

        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        headers = {k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")}
        headers.update({k.replace("_", "-").lower(): v for k, v in environ.items() if k in ("CONTENT_TYPE", "CONTENT_LENGTH")})
        with self.lock:
            self.requests.append((environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), headers, body))
        environ = {**environ, "wsgi.input": io.BytesIO(body)}
        if self.answer is not None and b'"tools/call"' in body:
            return self.answer(environ, start_response)
        return self.app(environ, start_response)

    def posts(self, path: str | None = None) -> list[tuple[str, dict, bytes]]:
        with self.lock:
            return [(p, h, b) for m, p, h, b in self.requests if m == "POST" and (path is None or p == path)]


def scripted(serve, **options):
    box: list = []
    srv = serve(tools_server(), wrap=lambda app: box.append(Scripted(app)) or box[0], **options)
    return srv, box[0]


# -- the thin path is taken, with requests' headers --------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_plain_calls_take_the_thin_path_with_the_same_headers(serve, sent_by_requests, era):
    srv, seen = scripted(serve)
    with Client.http(srv.mcp, era=era, headers={"X-Team": "blue"}, timeout=WAIT) as client:
        assert client.session.transport._lane is not None
        before, posts = sent_by_requests.count("POST"), len(seen.posts())
        results = [client.call_tool("echo", {"text": f"t{i}"}).text for i in range(20)]
        assert results == [f"t{i}" for i in range(20)]
        assert sent_by_requests.count("POST") == before  # none of them went through requests
        calls = seen.posts()[posts:]
    assert len(calls) == 20
    for _, headers, body in calls:
        assert headers["x-team"] == "blue" and headers["user-agent"].startswith("python-requests/")
        assert headers["accept"] == "application/json, text/event-stream"
        assert headers["content-type"] == "application/json" and int(headers["content-length"]) == len(body)
        assert headers["mcp-protocol-version"]
        if era == "modern":
            assert headers["mcp-method"] == "tools/call" and headers["mcp-name"] == "echo"
        else:
            assert headers["mcp-session-id"] == client.session.transport.session_id


@pytest.mark.parametrize("era", ERAS)
def test_a_thin_answer_is_handled_on_the_callers_own_thread(serve, era):
    """Issue 24: the caller that waits for an answer reads it itself: a plain answer reaches the session
    (its ``trace``) on the thread that called, with no hand-off to the reader thread."""
    srv, _ = scripted(serve)
    readers: list[tuple[str, str]] = []

    def trace(direction: str, data: bytes) -> None:
        if direction == "<--" and b'"echo-me"' in data:
            readers.append((threading.current_thread().name, data.decode()))

    with Client.http(srv.mcp, era=era, timeout=WAIT, trace=trace) as client:
        assert client.call_tool("echo", {"text": "echo-me"}).text == "echo-me"
    assert [name for name, _ in readers] == [threading.current_thread().name]


def test_eight_threads_share_the_thin_path(serve, sent_by_requests):
    srv, _ = scripted(serve)
    with Client.http(srv.mcp, era="handshake", timeout=WAIT) as client:
        before = sent_by_requests.count("POST")

        def run(n: int) -> None:
            for i in range(25):
                assert client.call_tool("echo", {"text": f"{n}:{i}"}).text == f"{n}:{i}"

        run_threads(run, 8)  # fails on any thread's error, or one still running
        assert sent_by_requests.count("POST") == before
        lane = client.session.transport._lane
        assert 1 <= len(lane._idle) <= lane.max_idle
    assert lane._idle == []  # closed with the client


# -- requests keeps what it earns --------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_a_requests_auth_object_sees_every_request(serve, sent_by_requests, era):
    seen_by_auth: list[str] = []

    class Bearer(requests.auth.AuthBase):
        def __call__(self, request):
            seen_by_auth.append(request.method)
            request.headers["Authorization"] = "Bearer t0ken"
            return request

    srv, seen = scripted(serve)
    with Client.http(srv.mcp, era=era, auth=Bearer(), timeout=WAIT) as client:
        before = sent_by_requests.count("POST")
        for i in range(5):
            assert client.call_tool("echo", {"text": str(i)}).text == str(i)
        assert sent_by_requests.count("POST") == before + 5
    assert seen_by_auth.count("POST") == len(seen.posts())
    assert all(headers.get("authorization") == "Bearer t0ken" for _, headers, _ in seen.posts())


def test_a_proxy_keeps_requests_way_and_no_proxy_the_thin_one(monkeypatch):
    """The environment is read once: a proxy for the URL means no thin path at all (requests speaks to
    proxies); NO_PROXY naming the host leaves it direct.  (The proxy itself: test_http_client.py.)"""
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.delenv("http_proxy", raising=False)
    for bypass, expected in (("", False), ("127.0.0.1", True)):
        monkeypatch.setenv("NO_PROXY", bypass)
        monkeypatch.delenv("no_proxy", raising=False)
        session = requests.Session()
        from mcp_ref.transports.http_plumbing import resolve_environment

        resolve_environment(session, "http://127.0.0.1:8000/mcp")
        lane = http_fast.open_lane(session, "http://127.0.0.1:8000/mcp", connect_timeout=1, max_idle=2)
        assert (lane is not None) is expected
        session.close()
    assert http_fast.open_lane(requests.Session(), "ftp://127.0.0.1:8000/mcp", connect_timeout=1, max_idle=2) is None
    assert http_fast.open_lane(requests.Session(), "http://ada:pw@127.0.0.1:8000/mcp", connect_timeout=1, max_idle=2) is None


def test_a_session_changed_after_the_client_was_made_keeps_requests_way(serve, sent_by_requests):
    """``trust_env`` turned back on (requests reads the environment for every request), or params set:
    every request goes through requests.Session.send again."""
    srv, _ = scripted(serve)
    with Client.http(srv.mcp, era="modern", timeout=WAIT) as client:
        http = client.session.transport.http
        for change in (lambda: setattr(http, "trust_env", True), lambda: http.params.update(v="1")):
            change()
            before = sent_by_requests.count("POST")
            assert client.call_tool("echo", {"text": "x"}).text == "x"
            assert sent_by_requests.count("POST") == before + 1


def test_a_transport_sent_elsewhere_stops_taking_its_old_lane(serve):
    """The lane is made for one URL: a transport whose ``url`` is changed (benchmarks/state_bench.py
    moves a client from one deployment to another) is served by the new one."""
    (a, seen_a), (b, seen_b) = scripted(serve), scripted(serve)
    with Client.http(a.mcp, era="modern", timeout=WAIT) as client:
        assert client.call_tool("echo", {"text": "on a"}).text == "on a"
        client.session.transport.url = b.mcp
        assert client.call_tool("echo", {"text": "on b"}).text == "on b"
    assert [body for _, _, body in seen_b.posts() if b'"on b"' in body]
    assert not [body for _, _, body in seen_a.posts() if b'"on b"' in body]


@pytest.mark.parametrize("status", [307, 308])
def test_a_redirect_of_a_thin_post_is_followed_as_requests_follows_it(serve, status):
    """A same-origin 307/308 to a thin POST: requests' own redirect handling takes the answer over and
    sends the body on to the new place; the first place got the POST once."""
    srv, seen = scripted(serve)

    def moved(environ, start_response):
        if environ["PATH_INFO"] == "/mcp":
            start_response(f"{status} Moved", [("Location", "/elsewhere"), ("Content-Length", "0")])
            return [b""]
        return seen.app({**environ, "PATH_INFO": "/mcp"}, start_response)

    with Client.http(srv.mcp, era="handshake", timeout=WAIT) as client:
        seen.answer = moved
        assert client.call_tool("echo", {"text": "moved"}).text == "moved"
        seen.answer = None
    first = [body for _, _, body in seen.posts("/mcp") if b'"moved"' in body]
    then = [body for _, _, body in seen.posts("/elsewhere")]
    assert len(first) == 1 and then == first


@pytest.mark.parametrize("era", ERAS)
def test_a_401_to_a_thin_post_reads_as_before(serve, era):
    srv, seen = scripted(serve)

    def refused(environ, start_response):
        start_response("401 Unauthorized", [
            ("Content-Type", "application/json"),
            ("WWW-Authenticate", 'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"')])
        return [b'{"error": "unauthorized"}']

    with Client.http(srv.mcp, era=era, timeout=WAIT) as client:
        seen.answer = refused
        with pytest.raises(McpError) as info:
            client.call_tool("echo", {"text": "x"})
        seen.answer = None
        assert "401" in str(info.value) and "auth=OAuth()" in str(info.value)
        assert "oauth-protected-resource" in str(info.value)
        assert info.value.data["httpStatus"] == 401
        assert client.call_tool("echo", {"text": "after"}).text == "after"


def test_a_cookie_set_on_a_thin_answer_goes_back_with_the_next_requests(serve, sent_by_requests):
    srv, seen = scripted(serve)

    def with_cookie(environ, start_response):
        def start(status, headers, *rest):
            return start_response(status, [*headers, ("Set-Cookie", "route=b7; Path=/")], *rest)
        return seen.app(environ, start)

    with Client.http(srv.mcp, era="modern", timeout=WAIT) as client:
        seen.answer = with_cookie
        assert client.call_tool("echo", {"text": "one"}).text == "one"
        seen.answer = None
        before = sent_by_requests.count("POST")
        assert client.call_tool("echo", {"text": "two"}).text == "two"
        assert sent_by_requests.count("POST") == before + 1  # a cookie in the jar: requests' way
    last = seen.posts()[-1][1]
    assert last.get("cookie") == "route=b7"


# -- bounds, timeouts, cancellation ------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_an_answer_past_max_message_size_fails_its_request(serve, sent_by_requests, era):
    srv, _ = scripted(serve)
    with Client.http(srv.mcp, era=era, max_message_size=4096, timeout=WAIT) as client:
        before = sent_by_requests.count("POST")
        with pytest.raises(LimitExceeded, match="limit of 4096 bytes"):
            client.call_tool("big", {"size": 5000})
        assert client.call_tool("big", {"size": 100}).text == "x" * 100
        assert sent_by_requests.count("POST") == before


def test_an_answer_without_length_past_max_message_size_fails_its_request(serve):
    """No Content-Length (a chunked body): refused as soon as the bound is passed."""
    srv, seen = scripted(serve)
    flood = json.dumps({"jsonrpc": "2.0", "id": 0, "result": {"pad": "y" * 20000}}).encode()

    def unbounded(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/json")])
        return (part for part in (flood[:8000], flood[8000:]))  # streamed: sent chunked

    with Client.http(srv.mcp, era="modern", max_message_size=4096, timeout=WAIT) as client:
        seen.answer = unbounded
        with pytest.raises(LimitExceeded, match="limit of 4096 bytes"):
            client.call_tool("echo", {"text": "x"})
        seen.answer = None
        assert client.call_tool("echo", {"text": "fine"}).text == "fine"


def test_slow_calls_in_flight_hold_at_most_max_idle_thin_connections(serve, sent_by_requests):
    """Review of issue 24: past ``max_idle`` thin connections in flight, a request goes the ``requests``
    way (bounded by the transport's workers): many slow calls cannot open sockets without end."""
    server = Server("held")
    gate = threading.Event()

    @server.tool()
    def hold() -> str:
        """Waits for the test's gate."""
        gate.wait(WAIT)
        return "held"

    srv = serve(server)
    with Client.http(srv.mcp, era="handshake", timeout=WAIT) as client:
        lane = client.session.transport._lane
        before = sent_by_requests.count("POST")
        try:
            calls = [client.start_tool_call("hold") for _ in range(lane.max_idle + 3)]
            assert len(lane._busy) <= lane.max_idle
        finally:
            gate.set()
        assert [call.result().text for call in calls] == ["held"] * len(calls)
        assert sent_by_requests.count("POST") - before >= 3  # the ones past the bound went requests' way


@pytest.mark.parametrize("era", ERAS)
def test_an_answer_that_stalls_after_its_headers_never_holds_the_caller(serve, era):
    """Review of issue 24: headers at once, then the body stalls; the caller's thread reads only an answer
    already whole, so the call's own timeout still ends it, and starting a call returns at once."""
    srv, seen = scripted(serve)
    stall = threading.Event()

    def stalled(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", "200")])
        yield b'{"jsonrpc": "2.0", '
        stall.wait(WAIT)  # the rest never comes while the test runs

    try:
        with Client.http(srv.mcp, era=era, timeout=WAIT) as client:
            seen.answer = stalled
            started = time.monotonic()
            with pytest.raises(RequestTimeout):
                client.call_tool("echo", {"text": "x"}, timeout=0.3)
            assert time.monotonic() - started < 0.3 + 1.5
            started = time.monotonic()
            call = client.start_tool_call("echo", {"text": "y"})
            assert time.monotonic() - started < 1.0  # not held inside send_request by the stalled body
            assert call.cancel("enough")
            seen.answer = None
            assert client.call_tool("echo", {"text": "still"}).text == "still"
    finally:
        stall.set()


@pytest.mark.parametrize("era", ERAS)
def test_a_slow_thin_request_keeps_its_timeout_and_can_be_cancelled(serve, era):
    server = tools_server()
    srv = serve(server)
    with Client.http(srv.mcp, era=era, timeout=WAIT) as client:
        started = time.monotonic()
        with pytest.raises(RequestTimeout):
            client.call_tool("slow", timeout=0.3)
        assert time.monotonic() - started < 0.3 + 1.5  # the thin path waits for the answer FAST_WAIT (0.05 s) at most
        started = time.monotonic()
        call = client.start_tool_call("slow")
        assert time.monotonic() - started < 1.5  # the caller is not held for the answer (a slow server's answer)
        assert call.cancel("enough")
        server.release.set()
        assert client.call_tool("echo", {"text": "still"}).text == "still"
