"""Client.http against the stdlib WsgiServer over real sockets: every feature through Streamable
HTTP (progress, sampling, elicitation and roots over the SSE streams, logging, subscriptions on
the GET stream), the headers it sends (seen by a recording WSGI middleware), DELETE on close,
transparent session renewal after a 404, resumption of streams the server ends or drops, and
concurrency.  Every message is validated against the negotiated revision's schema (WireChecker).
All of it is the handshake era's (the 2026-07-28 era over HTTP: test_modern_client.py)."""

from __future__ import annotations

import json
import ssl
import threading

import pytest
import requests
from conftest import WAIT, Collector, run_threads
from http_fixtures import (
    LATEST,
    TIMEOUT,
    HeaderRecorder,
    InThread,
    handshake_http_client,  # noqa: F401 - fixture
    serve,  # noqa: F401 - fixture
)
from proxies import route_through
from test_hardening_client_bounds import RawHttp, still_serves
from tls_fixtures import Pki, start_tls

from mcp_ref import (
    Client,
    Context,
    LimitExceeded,
    McpError,
    MCPRefError,
    RequestCancelled,
    RequestTimeout,
    Server,
    ServerUnreachable,
)


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
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "forty-two"},
            "model": "stub-llm",
        }

    def elicitation(params):
        elicits.append(params)
        return {"action": "accept", "content": {"name": "Ada", "colour": "green"}}

    client = handshake_http_client(
        srv.mcp,
        sampling_handler=sampling,
        elicitation_handler=elicitation,
        roots=[tmp_path.as_uri()],
        on_log=logs,
        on_resource_updated=updated,
        on_list_changed=changed,
    )
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
    assert (
        text(client.call_tool("ask_llm", {"question": "meaning of life?"}))
        == "stub-llm says: forty-two"
    )
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
    assert (
        client.get_prompt("greet", {"name": "Ada", "style": "formal"}).messages[0].content.text
        == "Good day, Ada."
    )
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
    client = handshake_http_client(
        srv.mcp,
        protocol_version=version,
        sampling_handler=lambda p: {
            "role": "assistant",
            "content": {"type": "text", "text": "ok"},
            "model": "m",
        },
    )
    assert client.protocol_version == version
    assert (
        text(client.call_tool("count_slowly", {"steps": 2, "delay": 0.01}, on_progress=progress))
        == "counted to 2"
    )
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
        assert {t.strip() for t in headers["accept"].split(",")} >= {
            "application/json",
            "text/event-stream",
        }
        assert headers["content-type"].split(";")[0] == "application/json"
    gets = recorder.seen("GET")
    assert gets and all(
        h["mcp-session-id"] == session_id and "text/event-stream" in h["accept"] for h in gets
    )
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
        response = requests.delete(
            srv.mcp,
            headers={"Mcp-Session-Id": old, "MCP-Protocol-Version": LATEST},
            timeout=TIMEOUT,
        )
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

    threads = {
        label: threading.Thread(target=call, args=(label,))
        for label in ("in-flight", "renewer", "meanwhile")
    }
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
    assert results == {"in-flight": "in-flight", "renewer": "renewer", "meanwhile": "meanwhile"}, (
        results
    )
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
        self.app, self.method, self.after, self.abrupt, self.left = (
            app,
            method,
            after,
            abrupt,
            times,
        )
        self.cuts = 0
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        state = {"armed": False, "messages": 0, "cut": False}

        def spy(status, headers, exc_info=None):
            write = start_response(status, headers, exc_info)
            sse = any(
                n.lower() == "content-type" and v.startswith("text/event-stream")
                for n, v in headers
            )
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
    srv = serve(
        retry_ms=20, wrap=lambda app: box.append(CutStreams(app, "POST", 2, abrupt)) or box[0]
    )
    client = handshake_http_client(srv.mcp)
    progress = Collector()
    result = client.call_tool("count_slowly", {"steps": 6, "delay": 0.03}, on_progress=progress)
    assert text(result) == "counted to 6"
    assert box[0].cuts == 1
    assert [p[0] for p in progress.wait_for(6)] == [1, 2, 3, 4, 5, 6]  # nothing lost
    assert len(client.wire.received("notifications/progress")) == 6  # nothing duplicated
    answers = [
        m for m in client.wire.received() if m.get("id") == client.wire.sent("tools/call")[0]["id"]
    ]
    assert len(answers) == 1


def test_client_resumes_the_standalone_stream(serve, handshake_http_client):
    box = []
    srv = serve(
        retry_ms=20,
        wrap=lambda app: box.append(CutStreams(app, "GET", 1, False, times=3)) or box[0],
    )
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


@pytest.mark.slow
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


@pytest.mark.slow
def test_eight_threads_on_one_client(serve, handshake_http_client):
    srv = serve()
    client = handshake_http_client(srv.mcp)

    def run(n: int) -> None:
        for i in range(8):
            assert text(client.call_tool("echo", {"text": f"{n}:{i}"})) == f"{n}:{i}"
        progress = Collector()
        assert (
            text(
                client.call_tool("count_slowly", {"steps": 3, "delay": 0.01}, on_progress=progress)
            )
            == "counted to 3"
        )
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
    assert (
        text(client.call_tool("count_slowly", {"steps": 2, "delay": 0.01}, on_progress=progress))
        == "counted to 2"
    )
    assert len(progress.wait_for(2)) == 2
    assert srv.app.sessions == {}


def test_http_error_reaches_the_caller_as_an_error(serve, handshake_http_client):
    srv = serve(max_body_size=3000)
    client = handshake_http_client(srv.mcp)
    from mcp_ref.errors import McpError

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
def test_server_closes_a_stream_mid_call_and_the_client_resumes(
    serve, handshake_http_client, inline
):
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
    srv = serve(
        server,
        retry_ms=30,
        inline_handlers=inline,
        wrap=lambda app: box.append(HeaderRecorder(app)) or box[0],
    )
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
    assert seen and all(
        h.get("authorization") == "Bearer t0ken" and h.get("x-team") == "blue" for h in seen
    ), seen
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


def test_a_json_answer_is_decoded_once_on_its_way_to_the_caller(serve, monkeypatch):
    """A JSON body answering a POST was decoded twice: once to check it answers the request POSTed,
    and again by the session.  The transport parses it once and hands the session the message."""
    from mcp_ref import jsonrpc

    text = "x" * 1234  # in the answer only
    decoded: list[str] = []

    def counted(decode):
        def decoding(data, *args, **kwargs):
            decoded.extend([text] if isinstance(data, (str, bytes)) and text in str(data) else [])
            return decode(data, *args, **kwargs)

        return decoding

    srv = serve(tools_server())
    with Client.http(srv.mcp, timeout=WAIT) as client:
        monkeypatch.setattr(json, "loads", counted(json.loads))
        monkeypatch.setattr(jsonrpc, "_decode", counted(jsonrpc._decode))
        assert client.call_tool("big", {"size": len(text)}).text == text
    assert len(decoded) == 1


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


# -- one HTTP stack: every request goes through requests -------------------------------------------

#: Modules that reach below ``requests`` (sockets, ``http.client``, TLS, urllib3): each named with
#: why.  Any other module of the package that imports one of these fails the test below.
LOW_LEVEL = ("http.client", "socket", "ssl", "urllib.request", "urllib3", "httpx", "aiohttp")
BELOW_REQUESTS_ALLOWED = {
    # the reader class and connection pools of requests' own adapter (1xx skipped, RFC 9110 §15.2)
    "http/framing.py": {"http.client", "urllib3"},
    # reads the responses requests returns: shuts down the socket under one, names urllib3's
    # exceptions, words a chunk line as http.client does
    "http/bounded_reads.py": {"http.client", "socket", "urllib3"},
    "http/origins.py": {"socket"},  # inet_aton: reads an address, opens nothing
    # a stdio server's own stdout, when it is a socket: shut down for writing at the end
    "stdio_end.py": {"socket"},
    # the server side
    "http/server/": {"socket", "ssl"},
    "http/wsgi_server.py": {"socket"},
    "http/connection_limits.py": {"socket"},
    "workbench/demo_auth_server.py": {"socket", "urllib3"},  # fetches client metadata documents
    # the loopback listener the login redirect comes to: a server socket, no client
    "oauth/browser.py": {"socket"},
}


def imported_modules(path) -> set[str]:
    """Every module ``path`` imports, at the top or inside a function."""
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


@pytest.mark.slow
def test_no_module_of_the_client_speaks_http_below_requests():
    """Issue 33 item 3: one HTTP client stack.  No module opens sockets or HTTP connections of its
    own for the client (the thin path over http.client, with its TLS set-up, is gone)."""
    from pathlib import Path

    import mcp_ref

    package = Path(mcp_ref.__file__).parent
    offending = {}
    for path in sorted(package.rglob("*.py")):
        name = path.relative_to(package).as_posix()
        allowed = set().union(
            *(mods for prefix, mods in BELOW_REQUESTS_ALLOWED.items() if name.startswith(prefix))
        )
        low = {
            below
            for module in imported_modules(path)
            for below in LOW_LEVEL
            if module == below or module.startswith(below + ".")
        }
        if low - allowed:
            offending[name] = sorted(low - allowed)
    assert offending == {}
    assert not (package / "transports" / "http_fast.py").exists()


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_every_request_of_client_http_goes_through_a_requests_adapter(serve, monkeypatch, era):
    """Every request the server receives from Client.http was sent through requests' adapter (the
    transport's ``requests.Session``): initialize, the calls, the GET stream, the DELETE."""
    from collections import Counter

    sent: Counter = Counter()
    original = requests.adapters.HTTPAdapter.send

    def counting(self, request, *args, **options):
        sent[request.method] += 1
        return original(self, request, *args, **options)

    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", counting)
    box: list = []
    srv = serve(wrap=lambda app: box.append(HeaderRecorder(app)) or box[0])
    with Client.http(srv.mcp, era=era, timeout=WAIT) as client:
        adapter = client.session.transport.http.get_adapter(srv.mcp)
        assert isinstance(adapter, requests.adapters.HTTPAdapter)
        for i in range(5):
            assert client.call_tool("echo", {"text": f"t{i}"}).text == f"t{i}"
        client.list_tools()
    received = Counter(method for method, _, _ in box[0].requests)
    assert received["POST"] >= 6
    assert all(received[method] <= sent[method] for method in received), (received, sent)


def tools_server() -> Server:
    """echo, big (a text of ``size`` characters), slow (waits for ``server.release`` or its
    cancellation)."""
    server = Server("one-stack")
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
    """Middleware: while ``answer`` is set, a POST of a ``tools/call`` is answered by it (a WSGI
    app) instead of the server; every request is recorded (method, path, headers, body)."""

    def __init__(self, app):
        self.app = app
        self.answer = None
        self.requests: list[tuple[str, str, dict, bytes]] = []
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        import io

        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        headers = {
            k[5:].replace("_", "-").lower(): v for k, v in environ.items() if k.startswith("HTTP_")
        }
        for key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            if key in environ:
                headers[key.replace("_", "-").lower()] = environ[key]
        with self.lock:
            self.requests.append(
                (environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), headers, body)
            )
        environ = {**environ, "wsgi.input": io.BytesIO(body)}
        if self.answer is not None and b'"tools/call"' in body:
            return self.answer(environ, start_response)
        return self.app(environ, start_response)

    def posts(self, path: str | None = None) -> list[tuple[str, dict, bytes]]:
        """The POSTs seen (to ``path``, or all): (path, headers, body)."""
        with self.lock:
            return [
                (p, h, b)
                for m, p, h, b in self.requests
                if m == "POST" and (path is None or p == path)
            ]


def scripted(serve, **options):
    box: list = []
    srv = serve(tools_server(), wrap=lambda app: box.append(Scripted(app)) or box[0], **options)
    return srv, box[0]


ERAS = ["handshake", "modern"]


@pytest.mark.parametrize("era", ERAS)
def test_calls_carry_the_session_headers_and_the_callers(serve, era):
    srv, seen = scripted(serve)
    with Client.http(srv.mcp, era=era, headers={"X-Team": "blue"}, timeout=WAIT) as client:
        posts = len(seen.posts())
        assert [client.call_tool("echo", {"text": f"t{i}"}).text for i in range(5)] == [
            f"t{i}" for i in range(5)
        ]
        calls = seen.posts()[posts:]
    assert len(calls) == 5
    for _, headers, body in calls:
        assert headers["x-team"] == "blue" and headers["user-agent"].startswith("python-requests/")
        assert headers["accept"] == "application/json, text/event-stream"
        assert headers["content-type"] == "application/json" and int(
            headers["content-length"]
        ) == len(body)
        assert headers["mcp-protocol-version"]
        if era == "modern":
            assert headers["mcp-method"] == "tools/call" and headers["mcp-name"] == "echo"
        else:
            assert headers["mcp-session-id"] == client.session.transport.session_id


@pytest.mark.parametrize("era", ERAS)
def test_a_requests_auth_object_sees_every_request(serve, era):
    seen_by_auth: list[str] = []

    class Bearer(requests.auth.AuthBase):
        def __call__(self, request):
            seen_by_auth.append(request.method)
            request.headers["Authorization"] = "Bearer t0ken"
            return request

    srv, seen = scripted(serve)
    with Client.http(srv.mcp, era=era, auth=Bearer(), timeout=WAIT) as client:
        for i in range(5):
            assert client.call_tool("echo", {"text": str(i)}).text == str(i)
    assert seen_by_auth.count("POST") == len(seen.posts())
    assert all(headers.get("authorization") == "Bearer t0ken" for _, headers, _ in seen.posts())


def test_a_transport_sent_elsewhere_is_served_there(serve):
    """A transport whose ``url`` is changed (benchmarks/state_bench.py moves a client from one
    deployment to another) sends its next requests to the new one."""
    (a, seen_a), (b, seen_b) = scripted(serve), scripted(serve)
    with Client.http(a.mcp, era="modern", timeout=WAIT) as client:
        assert client.call_tool("echo", {"text": "on a"}).text == "on a"
        client.session.transport.url = b.mcp
        assert client.call_tool("echo", {"text": "on b"}).text == "on b"
    assert [body for _, _, body in seen_b.posts() if b'"on b"' in body]
    assert not [body for _, _, body in seen_a.posts() if b'"on b"' in body]


@pytest.mark.parametrize("status", [307, 308])
def test_a_same_origin_redirect_of_a_call_is_followed(serve, status):
    """A same-origin 307/308: requests follows it with the body; the first place got the POST
    once."""
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
def test_a_401_to_a_call_says_what_to_do_and_the_client_serves_on(serve, era):
    srv, seen = scripted(serve)

    def refused(environ, start_response):
        start_response(
            "401 Unauthorized",
            [
                ("Content-Type", "application/json"),
                (
                    "WWW-Authenticate",
                    'Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"',
                ),
            ],
        )
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


def test_a_cookie_set_on_an_answer_goes_back_with_the_next_requests(serve):
    srv, seen = scripted(serve)

    def with_cookie(environ, start_response):
        def start(status, headers, *rest):
            return start_response(status, [*headers, ("Set-Cookie", "route=b7; Path=/")], *rest)

        return seen.app(environ, start)

    with Client.http(srv.mcp, era="modern", timeout=WAIT) as client:
        seen.answer = with_cookie
        assert client.call_tool("echo", {"text": "one"}).text == "one"
        seen.answer = None
        assert client.call_tool("echo", {"text": "two"}).text == "two"
    assert seen.posts()[-1][1].get("cookie") == "route=b7"


@pytest.mark.parametrize("era", ERAS)
def test_an_answer_past_max_message_size_fails_its_request(serve, era):
    srv, _ = scripted(serve)
    with Client.http(srv.mcp, era=era, max_message_size=4096, timeout=WAIT) as client:
        with pytest.raises(LimitExceeded, match="limit of 4096 bytes"):
            client.call_tool("big", {"size": 5000})
        assert client.call_tool("big", {"size": 100}).text == "x" * 100


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


@pytest.mark.parametrize("era", ERAS)
def test_an_answer_that_stalls_after_its_headers_ends_at_the_calls_timeout(serve, era):
    """Headers at once, then the body stalls: the call's own timeout ends it, starting a call
    returns at once, and the client serves on."""
    srv, seen = scripted(serve)
    stall = threading.Event()

    def stalled(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", "200")])
        yield b'{"jsonrpc": "2.0", '
        stall.wait(WAIT)  # the rest never comes while the test runs

    try:
        with Client.http(srv.mcp, era=era, timeout=WAIT) as client:
            seen.answer = stalled
            with pytest.raises(RequestTimeout):
                client.call_tool("echo", {"text": "x"}, timeout=0.3)
            call = client.start_tool_call("echo", {"text": "y"})
            assert call.cancel("enough")
            seen.answer = None
            assert client.call_tool("echo", {"text": "still"}).text == "still"
    finally:
        stall.set()


@pytest.mark.parametrize("era", ERAS)
def test_a_slow_request_keeps_its_timeout_and_can_be_cancelled(serve, era):
    server = tools_server()
    srv = serve(server)
    with Client.http(srv.mcp, era=era, timeout=WAIT) as client:
        with pytest.raises(RequestTimeout):
            client.call_tool("slow", timeout=0.3)
        call = client.start_tool_call("slow")
        assert call.cancel("enough")
        server.release.set()
        assert client.call_tool("echo", {"text": "still"}).text == "still"


@pytest.mark.parametrize("era", ERAS)
def test_a_call_given_up_on_as_its_answer_comes_leaves_the_next_call_alone(serve, monkeypatch, era):
    """Giving up on a request (its timeout, a cancellation) as its answer comes touches nothing
    but the socket of that answer: the worker reading the answer alone closes it.

    A flake: a call cancelled just as its answer came (here a 202, the request taken without an
    answer, which the worker closes), and the next call failed with ``('Connection aborted.',
    ResponseNotReady())``.  The caller's thread closed the response too, which put its
    connection back in requests' pool while the worker was still closing it; the next request
    took that connection, and the worker's close landed on it between its request and its
    answer.  The events are ordered here: the worker is held inside its close of the connection,
    the call is cancelled, and the next request, sent, waits for its answer while the worker's
    close completes."""
    srv, seen = scripted(serve)
    answer, closing, go, closed = (threading.Event() for _ in range(4))
    cancelled = threading.Event()
    waiting: dict = {}  # request id -> the worker thread waiting for its answer
    slow: dict = {}  # "id": the slow call's request id

    def taken(environ, start_response):  # the request taken; no answer on this response
        answer.wait(WAIT)
        start_response("202 Accepted", [("Content-Length", "0")])
        return [b""]

    with Client.http(srv.mcp, era=era, timeout=WAIT) as client:
        transport = client.session.transport
        pool = transport.http.get_adapter(srv.mcp).poolmanager.connection_from_url(srv.mcp)
        close_connection, awaiting = pool.ConnectionCls.close, transport.awaiting

        def held_close(connection):  # the slow call's worker, closing its answer's connection
            worker = waiting.get(slow.get("id"))
            if threading.current_thread() is not worker or closing.is_set():
                return close_connection(connection)
            closing.set()
            go.wait(WAIT)
            close_connection(connection)
            closed.set()

        def held_awaiting(request_id, underway):  # a worker waits for the head of an answer
            waiting[request_id] = threading.current_thread()
            if cancelled.is_set() and not go.is_set():  # the next request, sent
                go.set()
                closed.wait(WAIT)
            awaiting(request_id, underway)

        monkeypatch.setattr(pool.ConnectionCls, "close", held_close)
        monkeypatch.setattr(transport, "awaiting", held_awaiting)
        seen.answer = taken
        call = client.start_tool_call("slow")
        slow["id"] = call.request_id
        answer.set()
        assert closing.wait(WAIT)
        seen.answer = None
        assert call.cancel("enough")
        cancelled.set()
        assert client.call_tool("echo", {"text": "still"}).text == "still"
        assert closed.is_set()


@pytest.mark.parametrize("era", ERAS)
def test_a_call_given_up_on_once_its_answer_is_read_spares_the_next_call_on_its_socket(
    serve, monkeypatch, era
):
    """Its answer read, a request's connection is back in requests' pool and may carry the next
    request: giving up on the first request then (its answer not yet handed to the session) must
    not shut that socket down.  The events are ordered here: the first call's worker is held
    with the answer read; the next call is sent on the same connection (the pool hands out the
    last one returned) and waits for its answer; then the first call is cancelled."""
    import io

    srv, seen = scripted(serve)
    first_answer, read, handover, second_sent, second_answer = (threading.Event() for _ in range(5))
    socks: dict = {}  # request id -> the socket its answer comes on
    waiting: dict = {}  # request id -> the worker thread waiting for its answer
    first: dict = {}  # "id": the first call's request id

    def in_turn(environ, start_response):  # each answer when the test says
        body = environ["wsgi.input"].read()
        environ["wsgi.input"] = io.BytesIO(body)
        if b'"first"' in body:
            first_answer.wait(WAIT)
        else:
            second_sent.set()
            second_answer.wait(WAIT)
        return seen.app(environ, start_response)

    with Client.http(srv.mcp, era=era, timeout=WAIT) as client:
        transport = client.session.transport
        awaiting, put = transport.awaiting, transport._incoming.put

        def watched(request_id, underway):  # a worker waits for the head of an answer
            socks[request_id] = underway.sock
            waiting[request_id] = threading.current_thread()
            awaiting(request_id, underway)

        def held_put(item):  # the first call's worker hands its answer, read, to the session
            if threading.current_thread() is waiting.get(first.get("id")) and not read.is_set():
                read.set()
                handover.wait(WAIT)
            put(item)

        monkeypatch.setattr(transport, "awaiting", watched)
        monkeypatch.setattr(transport._incoming, "put", held_put)
        seen.answer = in_turn
        call = client.start_tool_call("echo", {"text": "first"})
        first["id"] = call.request_id
        first_answer.set()
        assert read.wait(WAIT)
        second = client.start_tool_call("echo", {"text": "second"})
        assert second_sent.wait(WAIT)
        assert call.cancel("enough")
        second_answer.set()
        handover.set()
        assert second.result().text == "second"
        assert socks[second.request_id] is socks[call.request_id]


# -- over https: requests' TLS settings, as given ------------------------------------------------


@pytest.fixture
def pki(tmp_path):
    return Pki(tmp_path)


@pytest.fixture
def tls(pki):
    """Factory: ``tls(server=None, cert=None, **options)`` -> a running TlsServed (for localhost
    and 127.0.0.1 by default)."""
    servers = []

    def factory(server=None, cert=None, **options):
        served = start_tls(
            server or tools_server(), cert or pki.cert("localhost", "127.0.0.1"), **options
        )
        servers.append(served)
        return served

    yield factory
    for served in servers:
        served.stop()


@pytest.mark.parametrize("era", ERAS)
def test_calls_over_https_with_the_ca_given(tls, pki, era):
    """Plain answers, a large one, and an SSE stream (a tool that logs) over TLS."""
    server = tools_server()

    @server.tool()
    def chatty(ctx: Context) -> str:
        """Logs, then answers."""
        ctx.info("working")
        return "done"

    srv = tls(server)
    logs = Collector()
    with Client.http(
        srv.mcp, era=era, verify=str(pki.ca_path), timeout=WAIT, on_log=logs
    ) as client:
        assert [client.call_tool("echo", {"text": f"t{i}"}).text for i in range(5)] == [
            f"t{i}" for i in range(5)
        ]
        assert client.call_tool("big", {"size": 200_000}).text == "x" * 200_000
        assert client.call_tool("chatty", {}).text == "done"
        assert logs.wait_until(lambda items: len(items) >= 1)


@pytest.mark.parametrize(
    "era, transport",
    [("auto", "auto"), ("modern", "auto"), ("handshake", "streamable"), ("handshake", "sse")],
)
def test_the_ca_requests_uses_by_default_does_not_know_the_server(tls, era, transport):
    """verify=True trusts requests' own bundle (certifi), not this test's CA: the server is
    unreachable, in every era and transport, and the message says what to pass."""
    srv = tls()
    url = srv.sse if transport == "sse" else srv.mcp
    with pytest.raises(ServerUnreachable) as refused:
        Client.http(url, era=era, transport=transport, timeout=WAIT, connect_timeout=WAIT)
    message = str(refused.value)
    assert message.startswith(f"cannot reach {url}: TLS failed: [CERTIFICATE_VERIFY_FAILED]")
    assert message.endswith(
        "Pass verify= the path of the CA bundle that signed the server's certificate "
        "(or set REQUESTS_CA_BUNDLE)"
    )
    assert refused.value.status is None


@pytest.mark.parametrize("who", ["another CA", "another host"])
def test_a_certificate_requests_refuses_is_refused(tls, pki, tmp_path, who):
    cert = (
        Pki(tmp_path, "another CA").cert("localhost", "127.0.0.1")
        if who == "another CA"
        else pki.cert("other.example")
    )
    srv = tls(cert=cert)
    reason = "unable to get local issuer" if who == "another CA" else "mismatch"
    with pytest.raises(ServerUnreachable) as refused:
        Client.http(srv.mcp, era="modern", verify=str(pki.ca_path), timeout=WAIT)
    assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value) and reason in str(refused.value)


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_verify_false_warns_for_every_request(tls):
    import urllib3

    srv = tls()
    with Client.http(srv.mcp, era="modern", verify=False, timeout=WAIT) as client:
        with pytest.warns(urllib3.exceptions.InsecureRequestWarning, match="127.0.0.1"):
            assert client.call_tool("echo", {"text": "x"}).text == "x"


def test_requests_ca_bundle_from_the_environment_is_the_one_trusted(tls, pki, monkeypatch):
    """verify left True: REQUESTS_CA_BUNDLE (read once, when the client is made) is the CA
    trusted."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(pki.ca_path))
    srv = tls()
    with Client.http(srv.mcp, era="modern", timeout=WAIT) as client:
        assert client.session.transport.http.verify == str(pki.ca_path)
        assert client.call_tool("echo", {"text": "x"}).text == "x"


def test_the_wsgi_servers_watchdog_peeks_under_tls(tls, pki, monkeypatch):
    """mcp_ref's own WsgiServer peeks at the socket of a client whose response is running, for its
    end; an SSL socket refuses a peek, so it peeks at the bytes under TLS.  Here the client sends
    more (the start of a next request) while its handler runs: the watchdog peeks, finds data, and
    goes on watching, so the client's close then cancels the stateless request."""
    import socket
    import ssl

    from test_stateless_oneshot import oneshot_server, post

    from mcp_ref.http import connection_limits

    peeked, looks = threading.Event(), connection_limits.closed_by_peer

    def looking(watched):
        try:
            return looks(watched)
        finally:
            if any(socket_io.serving for socket_io in watched):
                peeked.set()

    started, cancelled = threading.Event(), threading.Event()
    served = tls(oneshot_server(started, cancelled), stateless=True)
    body, headers = post("modern", "wait_for_cancel", {})
    context = ssl.create_default_context(cafile=str(pki.ca_path))
    sock = context.wrap_socket(
        socket.create_connection(("127.0.0.1", served.port), timeout=WAIT),
        server_hostname="127.0.0.1",
    )
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    sock.sendall(
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    assert started.wait(WAIT)
    sock.sendall(b"POST")  # readable, not ended: the watchdog must peek
    monkeypatch.setattr(connection_limits, "closed_by_peer", looking)
    assert peeked.wait(WAIT)
    sock.close()
    assert cancelled.wait(WAIT)  # the watchdog still watches
    with Client.http(
        served.mcp, verify=str(pki.ca_path), era="modern", timeout=WAIT
    ) as client:  # the server goes on
        assert client.call_tool("echo", {"text": "after"}).text == "after"


# -- closing while the server holds a stream that ends its connection -------------------------------


class HeldStreamServer:
    """A Streamable HTTP server (a real socket on 127.0.0.1) whose GET stream ends its connection
    (HTTP/1.0, or HTTP/1.1 with ``Connection: close``) and stays open until :meth:`stop`: the
    kind of answer whose connection forgets its socket, which closing the client must still
    shut down.  ``headless``: the GET is never answered at all (no status line, no headers)."""

    def __init__(self, protocol: str, tls: ssl.SSLContext | None = None, headless: bool = False):
        import http.server

        self.get_started = threading.Event()
        self.released = threading.Event()
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = protocol

            def log_message(self, *args):
                pass

            def do_POST(self):
                message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if "id" not in message:
                    self.answer(202, b"")
                    return
                result = {}
                if message["method"] == "initialize":
                    result = {
                        "protocolVersion": LATEST,
                        "capabilities": {},
                        "serverInfo": {"name": "held", "version": "1"},
                    }
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
                self.answer(200, json.dumps(answer).encode(), "application/json")

            def do_GET(self):
                if headless:
                    owner.get_started.set()
                    owner.released.wait(WAIT * 3)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(b": open\n\n")
                self.wfile.flush()
                owner.get_started.set()
                owner.released.wait(WAIT * 3)  # held open past any wait of the test

            def do_DELETE(self):
                self.answer(200, b"")

            def answer(self, status, body, kind=None):
                self.send_response(status)
                if kind:
                    self.send_header("Content-Type", kind)
                self.send_header("Mcp-Session-Id", "held-session")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Listener(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def get_request(self):
                connection, address = super().get_request()
                if tls is not None:  # the handshake on the connection's own thread
                    connection = tls.wrap_socket(
                        connection, server_side=True, do_handshake_on_connect=False
                    )
                return connection, address

        self.httpd = Listener(("127.0.0.1", 0), Handler)
        scheme = "http" if tls is None else "https"
        self.url = f"{scheme}://127.0.0.1:{self.httpd.server_port}/mcp"
        self.serving = InThread(self.httpd)

    def stop(self):
        self.released.set()
        self.serving.stop()


def server_tls(pki: Pki) -> ssl.SSLContext:
    """A server context presenting ``pki``'s certificate for 127.0.0.1."""
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(*pki.cert("127.0.0.1"))
    return tls


#: (the server's scheme, the route to it): an https:// proxy carries TLS inside its own TLS.
PATHS = [
    ("http", "direct"),
    ("https", "direct"),
    ("https", "https-proxy"),
    ("http", "socks5"),
    ("https", "socks5"),
]
PATH_IDS = [f"{scheme}-{route}" for scheme, route in PATHS]


@pytest.mark.parametrize(("scheme", "route"), PATHS, ids=PATH_IDS)
@pytest.mark.parametrize("protocol", ["HTTP/1.0", "HTTP/1.1"])
def test_closing_does_not_wait_for_a_stream_that_ends_its_connection(
    tmp_path, monkeypatch, protocol, scheme, route
):
    # Such a stream's connection forgets its socket; closing used to wait for the server to end
    # the stream (here never, within the test): the reader thread held the response.  Through a
    # SOCKS proxy too (its connections were urllib3's own, which kept no socket).  Through an
    # https:// proxy, TLS inside the tunnel is read through urllib3's SSLTransport, which has no
    # shutdown(): ending the stream raised AttributeError out of close(), which then left the
    # client's other streams and its workers running.
    pki = Pki(tmp_path)
    tls = server_tls(pki)
    server = HeldStreamServer(protocol, tls if scheme == "https" else None)
    proxy = route_through(monkeypatch, route, tls)  # read once, as the client is made
    try:
        client = Client.http(server.url, era="handshake", timeout=WAIT, verify=pki.ca_path)
        assert server.get_started.wait(WAIT), "the client opened its GET stream"
        failures: list = []

        def close():
            try:
                client.close()
            except Exception as exc:  # what the test looks for
                failures.append(exc)

        closing = threading.Thread(target=close, daemon=True)
        closing.start()
        closing.join(WAIT)
        assert not closing.is_alive(), "close() waited for the server to end the GET stream"
        assert failures == []
        # the whole transport closed: the session's reader saw the end of input
        assert client.session.closed.is_set()
        assert not server.released.is_set()  # the server still holds the stream
        assert proxy is None or proxy.tunnels >= 1  # the client really went through the proxy
    finally:
        if proxy is not None:
            proxy.stop()
        server.stop()


@pytest.mark.parametrize(("scheme", "route"), PATHS, ids=PATH_IDS)
def test_closing_ends_a_get_stream_that_never_got_its_headers(tmp_path, monkeypatch, scheme, route):
    # The standalone GET stream has no read timeout (it lasts as long as the server keeps it), and
    # its thread left close() behind while it waited for the headers: closing the client left it
    # and its connection waiting for as long as the server held the GET (here, past the test).
    pki = Pki(tmp_path)
    tls = server_tls(pki)
    server = HeldStreamServer("HTTP/1.1", tls if scheme == "https" else None, headless=True)
    proxy = route_through(monkeypatch, route, tls)  # read once, as the client is made
    try:
        # initialized() waits connect_timeout for the GET's answer, then goes on without it
        client = Client.http(
            server.url, era="handshake", timeout=WAIT, verify=pki.ca_path, connect_timeout=0.5
        )
        assert server.get_started.wait(WAIT), "the client opened its GET stream"
        listener = client.session.transport._listener
        client.close()
        listener.join(WAIT)
        assert not listener.is_alive(), "the GET's thread still waits for its headers"
        assert not server.released.is_set()  # the server still holds the GET
    finally:
        if proxy is not None:
            proxy.stop()
        server.stop()


@pytest.mark.parametrize(("scheme", "route"), PATHS, ids=PATH_IDS)
def test_a_request_given_up_on_lets_go_of_its_connection_through_any_proxy(
    tmp_path, monkeypatch, scheme, route
):
    # The server sends the head of an answer and one byte of its body, then nothing.  The call,
    # whose own timeout is far off, is cancelled while its worker reads the body: its socket is
    # shut down at once, through any proxy (a SOCKS proxy's connections were not watched; through
    # an https:// proxy the socket watched was urllib3's SSLTransport, which has no shutdown():
    # cancelling, or the call's timeout, raised AttributeError).
    pki = Pki(tmp_path)
    tls = server_tls(pki)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"
    server = RawHttp(lambda message: head, tls=tls if scheme == "https" else None)
    proxy = route_through(monkeypatch, route, tls)
    try:
        with Client.http(server.url, era="handshake", timeout=WAIT, verify=pki.ca_path) as client:
            transport = client.session.transport
            reading = threading.Event()
            deliver = transport._deliver

            def delivering(response, request, **options):  # the worker has the head
                reading.set()
                return deliver(response, request, **options)

            monkeypatch.setattr(transport, "_deliver", delivering)
            call = client.start_tool_call("stalled", {}, timeout=10 * WAIT)
            assert reading.wait(WAIT), "the worker reads the answer's body"
            call.cancel()
            with pytest.raises(RequestCancelled):
                call.result()
            assert server.dropped.wait(WAIT), "the client still reads the stalled answer"
            with pytest.raises(RequestTimeout):  # and a timeout ends a call as it did
                client.call_tool("stalled", {}, timeout=0.5)
            still_serves(client)
        assert proxy is None or proxy.tunnels >= 1
    finally:
        if proxy is not None:
            proxy.stop()
        server.close()
