"""Client.http against the stdlib WsgiServer over real sockets: every feature through Streamable
HTTP (progress, sampling, elicitation and roots over the SSE streams, logging, subscriptions on
the GET stream), the headers it sends (seen by a recording WSGI middleware), DELETE on close,
transparent session renewal after a 404, resumption of streams the server ends or drops, and
concurrency.  Every message is validated against the negotiated revision's schema (WireChecker).
All of it is the handshake era's (the 2026-07-28 era over HTTP: test_modern_client.py)."""

from __future__ import annotations

import threading

import pytest
import requests
from conftest import WAIT, Collector, run_threads
from http_fixtures import (
    LATEST,
    TIMEOUT,
    HeaderRecorder,
    handshake_http_client,  # noqa: F401 - fixture
    serve,  # noqa: F401 - fixture
)

from mcp_ref import Client, Context, MCPRefError, Server


def text(result) -> str:
    assert not result.is_error, result.raw
    return result.content[0].text


# -- every feature ---------------------------------------------------------------------------------


def test_every_feature_over_streamable_http(serve, handshake_http_client, tmp_path):
    srv = serve()
    logs, updated, changed, progress = Collector(), Collector(), Collector(), Collector()
    samples, elicits = [], []

    def sampling(params):
        samples.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "forty-two"}, "model": "stub-llm"}

    def elicitation(params):
        elicits.append(params)
        return {"action": "accept", "content": {"name": "Ada", "colour": "green"}}

    client = handshake_http_client(srv.mcp, sampling_handler=sampling, elicitation_handler=elicitation,
                         roots=[tmp_path.as_uri()], on_log=logs, on_resource_updated=updated,
                         on_list_changed=changed)
    assert client.protocol_version == LATEST
    assert client.server_info.name == "mcp-ref-demo"
    assert {t.name for t in client.list_tools()} >= {"echo", "count_slowly", "ask_llm", "ask_user"}
    assert text(client.call_tool("echo", {"text": "hello"})) == "hello"
    assert text(client.call_tool("divide", {"a": 1, "b": 2})) in ("0.5",)
    assert client.call_tool("divide", {"a": 1, "b": 0}).is_error

    # Progress over the POST's SSE stream.
    result = client.call_tool("count_slowly", {"steps": 4, "delay": 0.01}, on_progress=progress)
    assert text(result) == "counted to 4"
    assert [p[0] for p in progress.wait_for(4)] == [1, 2, 3, 4]

    # Server-to-client requests travel on the POST's stream; the answers are POSTed back.
    assert text(client.call_tool("ask_llm", {"question": "meaning of life?"})) == "stub-llm says: forty-two"
    assert samples and samples[0].messages[0].content.text == "meaning of life?"
    assert text(client.call_tool("ask_user")) == "hello Ada, who likes green"
    assert elicits and elicits[0].message == "Who are you?"
    assert tmp_path.as_uri() in text(client.call_tool("show_roots"))

    # Logging, filtered by logging/setLevel.
    client.set_logging_level("warning")
    assert text(client.call_tool("log_levels")) == "sent: warning, error"
    assert [m.level for m in logs.wait_for(2)] == ["warning", "error"]

    # Subscriptions and list_changed on the standalone GET stream.
    client.subscribe("demo://counter")
    assert text(client.call_tool("bump_counter")) == "1"
    assert updated.wait_for(1) == ["demo://counter"]
    assert text(client.call_tool("add_tool", {"name": "late_tool"})) == "added late_tool"
    assert changed.wait_for(1) == ["tools"]
    assert text(client.call_tool("late_tool")) == "I am late_tool"

    # Resources, prompts, completion.
    assert "demo://readme" in {r.uri for r in client.list_resources()}
    assert client.read_resource("demo://greeting/Grace").contents[0].text == "Hello, Grace!"
    assert client.get_prompt("greet", {"name": "Ada", "style": "formal"}).messages[0].content.text == "Good day, Ada."
    assert client.complete(prompt="greet", argument="name", value="Al").values == ["Alan", "Alonzo"]
    client.ping()

    # The progress went to the POST stream, the notifications to the GET stream: each once.
    received = client.wire.received()
    assert len([m for m in received if m.get("method") == "notifications/progress"]) == 4
    assert len(client.wire.received("notifications/resources/updated")) == 1
    assert len(client.wire.received("notifications/tools/list_changed")) == 1
    assert len(client.wire.received("sampling/createMessage")) == 1
    assert len(client.wire.received("elicitation/create")) == 1


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18"])
def test_older_revisions_over_streamable_http(serve, handshake_http_client, version):
    srv = serve()
    progress = Collector()
    client = handshake_http_client(srv.mcp, protocol_version=version,
                         sampling_handler=lambda p: {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"})
    assert client.protocol_version == version
    assert text(client.call_tool("count_slowly", {"steps": 2, "delay": 0.01}, on_progress=progress)) == "counted to 2"
    assert len(progress.wait_for(2)) == 2
    assert text(client.call_tool("ask_llm", {"question": "q"})) == "m says: ok"


# -- headers ---------------------------------------------------------------------------------------


class BearerAuth(requests.auth.AuthBase):
    def __call__(self, r):
        r.headers["Authorization"] = "Bearer s3cret"
        return r


def test_headers_session_id_protocol_version_and_delete_on_close(serve, handshake_http_client):
    recorder_box = []

    def wrap(app):
        recorder_box.append(HeaderRecorder(app))
        return recorder_box[0]

    srv = serve(wrap=wrap)
    recorder = recorder_box[0]
    client = handshake_http_client(srv.mcp, headers={"X-Test": "1"}, auth=BearerAuth())
    updated = Collector()
    client.on_resource_updated = updated
    client.subscribe("demo://counter")
    client.call_tool("bump_counter")
    updated.wait_for(1)  # the GET stream is open by now
    session_id = client.session.transport.session_id
    assert session_id in srv.app.sessions
    client.close()

    posts = recorder.seen("POST")
    init, later = posts[0], posts[1:]
    assert "mcp-session-id" not in init and "mcp-protocol-version" not in init
    assert later, posts
    for headers in later:
        assert headers["mcp-session-id"] == session_id
        assert headers["mcp-protocol-version"] == LATEST
    for headers in posts:
        assert {t.strip() for t in headers["accept"].split(",")} >= {"application/json", "text/event-stream"}
        assert headers["content-type"].split(";")[0] == "application/json"
    gets = recorder.seen("GET")
    assert gets and all(h["mcp-session-id"] == session_id and "text/event-stream" in h["accept"] for h in gets)
    assert all(h["mcp-protocol-version"] == LATEST for h in gets)
    deletes = recorder.seen("DELETE")
    assert len(deletes) == 1 and deletes[0]["mcp-session-id"] == session_id
    assert session_id not in srv.app.sessions
    # Custom headers and the auth hook on every request.
    for _, _, headers in recorder.requests:
        assert headers.get("x-test") == "1" and headers.get("authorization") == "Bearer s3cret"


# -- session renewal -------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["raw DELETE", "server forgets"])
def test_a_404_starts_a_new_session_once_transparently(serve, handshake_http_client, how):
    srv = serve()
    client = handshake_http_client(srv.mcp)
    old = client.session.transport.session_id
    assert text(client.call_tool("echo", {"text": "before"})) == "before"
    if how == "raw DELETE":
        response = requests.delete(srv.mcp, headers={"Mcp-Session-Id": old, "MCP-Protocol-Version": LATEST}, timeout=TIMEOUT)
        assert response.status_code == 200
    else:
        assert srv.app.end_session(old)
    assert old not in srv.app.sessions
    assert not srv.app.end_session(old)  # already gone
    assert text(client.call_tool("echo", {"text": "after"})) == "after"
    new = client.session.transport.session_id
    assert new and new != old and new in srv.app.sessions
    assert len(client.wire.sent("initialize")) == 2
    assert len(client.wire.sent("notifications/initialized")) == 2
    assert text(client.call_tool("echo", {"text": "again"})) == "again"
    assert len(client.wire.sent("initialize")) == 2  # once


def test_the_log_level_asked_for_is_asked_again_of_the_new_session(serve, handshake_http_client):
    """A handshake-era server keeps the level of ``logging/setLevel`` per session: the session that
    replaces an expired one is asked again, or it would send every level."""
    srv = serve()
    client = handshake_http_client(srv.mcp)
    client.set_logging_level("warning")
    assert srv.app.end_session(client.session.transport.session_id)
    assert text(client.call_tool("echo", {"text": "after"})) == "after"
    asked = client.wire.sent("logging/setLevel")
    assert [message["params"]["level"] for message in asked] == ["warning", "warning"]
    assert len(client.wire.sent("initialize")) == 2


class RenewalGate:
    """WSGI middleware holding the second initialize POST (a session renewal in progress) until
    ``release`` is set, and holding any POST whose body contains ``hold_marker`` until the renewal
    is under way — so that request meets its 404 exactly while the client is renewing."""

    def __init__(self, app, hold_marker: bytes):
        self.app, self.hold_marker = app, hold_marker
        self.initializes = 0
        self.renewing = threading.Event()
        self.release = threading.Event()
        self.statuses: dict[bytes, list[str]] = {}
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        import io

        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(body)
        if environ["REQUEST_METHOD"] == "POST" and b'"initialize"' in body:
            with self.lock:
                self.initializes += 1
                second = self.initializes == 2
            if second:
                self.renewing.set()
                self.release.wait(WAIT)
        elif self.hold_marker in body:
            self.renewing.wait(WAIT)

        def spy(status, headers, exc_info=None):
            with self.lock:
                self.statuses.setdefault(body, []).append(status)
            return start_response(status, headers, exc_info)

        return self.app(environ, spy)


def test_requests_during_a_session_renewal_succeed(serve, handshake_http_client):
    """While one request renews the session after a 404, another that met the same 404, and a third
    sent during the renewal, both wait for the new session and succeed."""
    box = []
    srv = serve(wrap=lambda app: box.append(RenewalGate(app, b'"in-flight"')) or box[0])
    gate = box[0]
    client = handshake_http_client(srv.mcp)
    assert srv.app.end_session(client.session.transport.session_id)
    results: dict[str, object] = {}

    def call(label: str) -> None:
        try:
            results[label] = text(client.call_tool("echo", {"text": label}))
        except Exception as exc:
            results[label] = exc

    threads = {label: threading.Thread(target=call, args=(label,)) for label in ("in-flight", "renewer", "meanwhile")}
    try:
        threads["in-flight"].start()  # POSTed with the old id; held until the renewal starts
        threads["renewer"].start()  # 404 -> starts the renewal (its initialize is held)
        assert gate.renewing.wait(WAIT)
        threads["meanwhile"].start()  # sent while the renewal is in progress
        # A correct client makes these two wait for the new session (so these joins time out);
        # a client that does not fails them at once, before the renewal completes.
        threads["in-flight"].join(0.5)
        threads["meanwhile"].join(0.5)
        assert not results, f"failed during the renewal: {results}"
    finally:
        gate.release.set()
    for thread in threads.values():
        thread.join(WAIT)
    assert results == {"in-flight": "in-flight", "renewer": "renewer", "meanwhile": "meanwhile"}, results
    assert len(client.wire.sent("initialize")) == 2
    assert len(srv.app.sessions) == 1


# -- resumption by the client ----------------------------------------------------------------------


class CutStreams:
    """WSGI middleware that cuts SSE responses to ``method`` after ``after`` messages (events
    with data), as a server ending streams early (SSE polling) or a dropped connection would:
    whether the app streams through the WSGI ``write`` callable or a body iterable, everything
    after the cut fails to send (the app sees a broken connection); the client then sees the
    body end cleanly (``abrupt=False``) or the connection break mid-body (``abrupt=True``).
    At most ``times`` responses are cut."""

    def __init__(self, app, method: str, after: int, abrupt: bool, times: int = 1):
        self.app, self.method, self.after, self.abrupt, self.left = app, method, after, abrupt, times
        self.cuts = 0
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        state = {"armed": False, "messages": 0, "cut": False}

        def spy(status, headers, exc_info=None):
            write = start_response(status, headers, exc_info)
            sse = any(n.lower() == "content-type" and v.startswith("text/event-stream") for n, v in headers)
            if sse and environ["REQUEST_METHOD"] == self.method:
                with self.lock:
                    if self.left > 0:
                        self.left -= 1
                        state["armed"] = True
            if not state["armed"]:
                return write

            def cutting_write(data):
                if not self._passes(state, data):
                    raise ConnectionAbortedError("test: the connection is gone")
                write(data)

            return cutting_write

        result = self.app(environ, spy)
        return self._iterate(state, result)

    def _passes(self, state, data: bytes) -> bool:
        """Whether ``data`` still goes out; counts messages and performs the cut once."""
        if state["cut"]:
            return False
        if state["messages"] >= self.after and b"data: {" in data:
            state["cut"] = True
            with self.lock:
                self.cuts += 1
            return False
        state["messages"] += data.count(b"data: {")
        return True

    def _iterate(self, state, result):
        try:
            for chunk in result:
                if state["armed"] and not self._passes(state, chunk):
                    break
                yield chunk
            if state["cut"] and self.abrupt:
                raise ConnectionAbortedError("test: connection dropped mid-stream")
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()


@pytest.mark.parametrize("abrupt", [False, True], ids=["closed-early", "dropped"])
def test_client_resumes_a_post_stream(serve, handshake_http_client, abrupt):
    box = []
    srv = serve(retry_ms=20, wrap=lambda app: box.append(CutStreams(app, "POST", 2, abrupt)) or box[0])
    client = handshake_http_client(srv.mcp)
    progress = Collector()
    result = client.call_tool("count_slowly", {"steps": 6, "delay": 0.03}, on_progress=progress)
    assert text(result) == "counted to 6"
    assert box[0].cuts == 1
    assert [p[0] for p in progress.wait_for(6)] == [1, 2, 3, 4, 5, 6]  # nothing lost
    assert len(client.wire.received("notifications/progress")) == 6  # nothing duplicated
    answers = [m for m in client.wire.received() if m.get("id") == client.wire.sent("tools/call")[0]["id"]]
    assert len(answers) == 1


def test_client_resumes_the_standalone_stream(serve, handshake_http_client):
    box = []
    srv = serve(retry_ms=20, wrap=lambda app: box.append(CutStreams(app, "GET", 1, False, times=3)) or box[0])
    client = handshake_http_client(srv.mcp)
    updated, changed = Collector(), Collector()
    client.on_resource_updated, client.on_list_changed = updated, changed
    client.subscribe("demo://counter")
    for _ in range(5):
        client.call_tool("bump_counter")
    assert updated.wait_for(5) == ["demo://counter"] * 5
    client.call_tool("add_tool", {"name": "marker"})
    changed.wait_for(1)
    assert box[0].cuts >= 1
    assert len(client.wire.received("notifications/resources/updated")) == 5  # none twice
    assert len(updated) == 5


# -- concurrency -----------------------------------------------------------------------------------


def test_many_concurrent_sessions(serve):
    srv = serve()
    from conftest import WireChecker

    def run(n: int) -> WireChecker:
        checker = WireChecker()
        with Client.http(srv.mcp, trace=checker, timeout=WAIT) as client:
            for i in range(3):
                assert text(client.call_tool("echo", {"text": f"{n}/{i}"})) == f"{n}/{i}"
            assert text(client.call_tool("add", {"a": n, "b": 1})) in (str(n + 1), f"{n + 1}.0")
        return checker

    checkers = run_threads(run, 20, timeout=WAIT * 3)  # fails with every thread's failure listed
    for checker in checkers:
        checker.assert_valid()
    assert srv.app.sessions == {}  # every client DELETEd its session


def test_eight_threads_on_one_client(serve, handshake_http_client):
    srv = serve()
    client = handshake_http_client(srv.mcp)

    def run(n: int) -> None:
        for i in range(8):
            assert text(client.call_tool("echo", {"text": f"{n}:{i}"})) == f"{n}:{i}"
        progress = Collector()
        assert text(client.call_tool("count_slowly", {"steps": 3, "delay": 0.01}, on_progress=progress)) == "counted to 3"
        assert [p[0] for p in progress.wait_for(3)] == [1, 2, 3]

    run_threads(run, 8, timeout=WAIT * 3)  # fails with every thread's failure listed
    assert len(client.wire.sent("initialize")) == 1
    assert len(srv.app.sessions) == 1


# -- stateless servers and failures ----------------------------------------------------------------


def test_client_against_a_stateless_server(serve, handshake_http_client):
    srv = serve(stateless=True)
    client = handshake_http_client(srv.mcp)
    assert client.session.transport.session_id is None
    assert text(client.call_tool("echo", {"text": "x"})) == "x"
    progress = Collector()
    assert text(client.call_tool("count_slowly", {"steps": 2, "delay": 0.01}, on_progress=progress)) == "counted to 2"
    assert len(progress.wait_for(2)) == 2
    assert srv.app.sessions == {}


def test_http_error_reaches_the_caller_as_an_error(serve, handshake_http_client):
    srv = serve(max_body_size=3000)
    client = handshake_http_client(srv.mcp)
    from mcp_ref.core.errors import McpError

    with pytest.raises(McpError) as info:
        client.call_tool("echo", {"text": "x" * 5000})
    assert "413" in str(info.value)
    assert text(client.call_tool("echo", {"text": "fine"})) == "fine"


def test_unreachable_url_fails_fast():
    """Connection refused: Client.http raises at once (not after the request timeout)."""
    import socket
    import time

    from conftest import WireChecker

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        start = time.monotonic()
        with pytest.raises(Exception) as info:
            Client.http(f"http://127.0.0.1:{port}/mcp", trace=WireChecker(), timeout=WAIT)
        assert time.monotonic() - start < WAIT / 2
    assert f"127.0.0.1:{port}" in str(info.value) or str(port) in str(info.value)


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "pooled"])
def test_server_closes_a_stream_mid_call_and_the_client_resumes(serve, handshake_http_client, inline):
    # SSE polling (2025-11-25 basic/transports §Sending Messages 6): the server ends the connection
    # without ending the stream; the client waits `retry` and resumes with GET + Last-Event-ID.
    server = Server("polling")

    @server.tool()
    def polled(ctx: Context) -> str:
        ctx.report_progress(1, 3)
        closed = ctx.close_sse_stream()
        ctx.report_progress(2, 3)
        ctx.report_progress(3, 3)
        return f"closed={closed}"

    box = []
    srv = serve(server, retry_ms=30, inline_handlers=inline, wrap=lambda app: box.append(HeaderRecorder(app)) or box[0])
    client = handshake_http_client(srv.mcp)
    progress = Collector()
    assert text(client.call_tool("polled", on_progress=progress)) == "closed=True"
    assert [p[0] for p in progress.wait_for(3)] == [1, 2, 3]  # nothing lost
    assert len(client.wire.received("notifications/progress")) == 3  # nothing duplicated
    resumed = [h for h in box[0].seen("GET") if h.get("last-event-id")]
    assert len(resumed) == 1, box[0].requests


def test_custom_headers_and_a_requests_auth_hook_reach_the_server(serve, handshake_http_client):
    # Issue 4 builds bearer-token auth on this: a requests auth hook applied to every HTTP request.
    import requests as _requests

    class Bearer(_requests.auth.AuthBase):
        def __call__(self, request):
            request.headers["Authorization"] = "Bearer t0ken"
            return request

    box = []
    srv = serve(wrap=lambda app: box.append(HeaderRecorder(app)) or box[0])
    client = handshake_http_client(srv.mcp, headers={"X-Team": "blue"}, auth=Bearer())
    assert text(client.call_tool("echo", {"text": "authorised"})) == "authorised"
    client.close()
    seen = box[0].seen()
    assert seen and all(h.get("authorization") == "Bearer t0ken" and h.get("x-team") == "blue" for h in seen), seen
    assert {"POST", "DELETE"} <= {m for m, _, _ in box[0].requests}


# -- the environment, read once ---------------------------------------------------------------------


def test_netrc_credentials_are_read_once_when_the_client_is_made(serve, tmp_path, monkeypatch):
    """requests reads ~/.netrc (and the proxy variables) on every request; the transport reads them
    once, for the one origin it talks to, then turns ``trust_env`` off."""
    import base64

    recorder_box: list = []
    srv = serve(wrap=lambda app: recorder_box.append(HeaderRecorder(app)) or recorder_box[0])
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login ada password s3cret\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    with Client.http(srv.mcp, timeout=WAIT) as client:
        assert client.session.transport.http.trust_env is False
        monkeypatch.setenv("NETRC", str(tmp_path / "missing"))  # read already: changes nothing now
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    expected = "Basic " + base64.b64encode(b"ada:s3cret").decode()
    posts = recorder_box[0].seen("POST")
    assert posts and all(headers.get("authorization") == expected for headers in posts)


@pytest.mark.parametrize("bypass", [False, True], ids=["proxied", "no_proxy"])
def test_the_proxy_variables_are_honoured(serve, monkeypatch, bypass):
    """HTTP_PROXY sends the requests to the proxy (absolute-form target); NO_PROXY bypasses it."""
    import socket

    srv = serve()
    proxy = socket.socket()
    proxy.bind(("127.0.0.1", 0))
    proxy.listen(1)
    proxy.settimeout(WAIT)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.getsockname()[1]}")
    monkeypatch.delenv("http_proxy", raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1" if bypass else "")
    monkeypatch.delenv("no_proxy", raising=False)
    try:
        if bypass:
            with Client.http(srv.mcp, timeout=WAIT) as client:
                assert client.call_tool("echo", {"text": "direct"}).text == "direct"
            return
        seen: list = []

        def accept_one() -> None:
            connection, _ = proxy.accept()
            with connection:
                seen.append(connection.recv(4096).split(b"\r\n", 1)[0])

        listener = threading.Thread(target=accept_one, daemon=True)
        listener.start()
        with pytest.raises(MCPRefError):  # the "proxy" hangs up: the client cannot connect
            Client.http(srv.mcp, timeout=WAIT, connect_timeout=WAIT)
        listener.join(WAIT)
        assert seen and seen[0].startswith(b"POST " + srv.mcp.encode()), seen
    finally:
        proxy.close()
