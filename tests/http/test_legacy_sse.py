"""The 2024-11-05 HTTP+SSE transport: GET /sse (the stream, whose first event is ``endpoint``) and
POST /messages?session_id=... (202; the answer travels on the stream) — raw, and with Client.http,
explicitly (transport="sse") and through the backwards-compatible fallback.  Every message is
validated against the negotiated revision's schema."""

from __future__ import annotations

import json
import queue
import socket
import threading
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
import requests
from conftest import WAIT, Collector, WireChecker, run_threads
from http_fixtures import (
    ACCEPT_BOTH,
    TIMEOUT,
    HeaderRecorder,
    SseReader,
    error_body_errors,
    http_client,  # noqa: F401 - fixture
    init_params,
    notification,
    request,
    serve,  # noqa: F401 - fixture
)


class LegacyRaw:
    """One raw HTTP+SSE session: the GET stream and the endpoint to POST to."""

    def __init__(self, base_url: str, sse_path: str = "/sse"):
        self.checker = WireChecker()
        self.http = requests.Session()
        self.response = self.http.get(
            base_url + sse_path,
            headers={"Accept": "text/event-stream"},
            stream=True,
            timeout=TIMEOUT,
        )
        assert self.response.status_code == 200, self.response.text
        assert self.response.headers["Content-Type"] == "text/event-stream"
        self.reader = SseReader(self.response)
        first = self.reader.next()
        assert first["event"] == "endpoint", first
        self.endpoint_data = first["data"]
        self.endpoint = urljoin(base_url + sse_path, first["data"])

    def post(self, message, **kwargs):
        data = json.dumps(message).encode()
        self.checker("-->", data)
        return self.http.post(
            self.endpoint,
            data=data,
            headers={"Content-Type": "application/json"},
            timeout=TIMEOUT,
            **kwargs,
        )

    def next_message(self) -> dict:
        while True:
            event = self.reader.next()
            assert event is not None, "the stream ended"
            if event["data"]:
                assert event["event"] in (None, "message"), event
                self.checker("<--", event["data"].encode())
                return json.loads(event["data"])

    def initialize(self, version: str) -> dict:
        response = self.post(request("initialize", init_params(version, {"sampling": {}}), "init"))
        assert response.status_code == 202, response.text
        answer = self.next_message()
        assert answer["id"] == "init" and answer["result"]["protocolVersion"] == version
        assert self.post(notification("notifications/initialized")).status_code == 202
        return answer

    def close(self) -> None:
        self.response.close()
        self.http.close()


@pytest.fixture
def legacy_raw():
    made = []

    def factory(base_url: str, **options) -> LegacyRaw:
        session = LegacyRaw(base_url, **options)
        made.append(session)
        return session

    yield factory
    for session in made:
        session.close()
    for session in made:
        session.checker.assert_valid()


def test_get_sse_first_event_is_endpoint_with_a_session_id(serve, legacy_raw):
    srv = serve()
    session = legacy_raw(srv.url)
    parts = urlsplit(session.endpoint_data)
    assert parts.path == "/messages"
    (session_id,) = parse_qs(parts.query)["session_id"]
    assert session_id in srv.app.sessions
    assert all(0x21 <= ord(c) <= 0x7E for c in session_id) and len(session_id) >= 22
    assert session.response.headers.get("Cache-Control", "").startswith("no-cache")
    other = legacy_raw(srv.url)
    assert other.endpoint != session.endpoint


@pytest.mark.parametrize("version", ["2024-11-05", "2025-11-25"])
def test_post_messages_is_202_and_the_answer_arrives_on_the_stream(serve, legacy_raw, version):
    srv = serve()
    session = legacy_raw(srv.url)
    session.initialize(version)
    response = session.post(
        request("tools/call", {"name": "echo", "arguments": {"text": "over sse"}}, 2)
    )
    assert response.status_code == 202
    answer = session.next_message()
    assert answer == {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {"content": [{"type": "text", "text": "over sse"}]},
    }
    # Progress and a server-to-client request (sampling) share the one stream.
    response = session.post(
        request(
            "tools/call",
            {
                "name": "count_slowly",
                "arguments": {"steps": 2, "delay": 0.01},
                "_meta": {"progressToken": "p"},
            },
            3,
        )
    )
    assert response.status_code == 202
    seen = [session.next_message() for _ in range(3)]
    assert [m.get("method") for m in seen] == ["notifications/progress"] * 2 + [None]
    assert seen[-1]["id"] == 3
    session.post(request("tools/call", {"name": "ask_llm", "arguments": {"question": "hm?"}}, 4))
    asked = session.next_message()
    assert asked["method"] == "sampling/createMessage"
    reply = session.post(
        {
            "jsonrpc": "2.0",
            "id": asked["id"],
            "result": {
                "role": "assistant",
                "content": {"type": "text", "text": "yes"},
                "model": "stub",
            },
        }
    )
    assert reply.status_code == 202
    answer = session.next_message()
    assert answer["id"] == 4 and answer["result"]["content"][0]["text"] == "stub says: yes"


def test_unknown_or_missing_session_id(serve, legacy_raw):
    srv = serve()
    body = json.dumps(request("ping")).encode()
    headers = {"Content-Type": "application/json"}
    response = requests.post(
        srv.url + "/messages?session_id=nope", data=body, headers=headers, timeout=TIMEOUT
    )
    assert response.status_code == 404 and not error_body_errors(response.json())
    response = requests.post(srv.url + "/messages", data=body, headers=headers, timeout=TIMEOUT)
    assert response.status_code == 400 and not error_body_errors(response.json())
    # A Streamable HTTP session id is not a legacy session.
    init = requests.post(
        srv.mcp,
        data=json.dumps(request("initialize", init_params())),
        headers={**headers, "Accept": ACCEPT_BOTH},
        timeout=TIMEOUT,
    )
    streamable_id = init.headers["Mcp-Session-Id"]
    response = requests.post(
        srv.url + f"/messages?session_id={streamable_id}",
        data=body,
        headers=headers,
        timeout=TIMEOUT,
    )
    assert response.status_code == 404
    # Wrong media type and malformed JSON on a real session.
    session = legacy_raw(srv.url)
    response = session.http.post(
        session.endpoint, data=body, headers={"Content-Type": "text/plain"}, timeout=TIMEOUT
    )
    assert response.status_code == 415
    response = session.http.post(session.endpoint, data=b"{oops", headers=headers, timeout=TIMEOUT)
    assert response.status_code == 400 and response.json()["error"]["code"] == -32700


def test_a_legacy_session_id_is_no_session_of_the_streamable_endpoint(serve, legacy_raw):
    """The other way round: a 2024-11-05 session's id names no Streamable HTTP session, whose ids
    are given out with an InitializeResult at /mcp (2025-03-26 basic/transports §Session
    Management).  POST, GET and DELETE at /mcp with it are 404, as for an unknown id, and the
    legacy session goes on untouched."""
    srv = serve()
    session = legacy_raw(srv.url)
    session.initialize("2024-11-05")
    legacy_id = parse_qs(urlsplit(session.endpoint_data).query)["session_id"][0]
    headers = {"Mcp-Session-Id": legacy_id, "MCP-Protocol-Version": "2024-11-05"}
    posted = requests.post(
        srv.mcp,
        data=json.dumps(request("tools/list", {}, 5)),
        headers={**headers, "Content-Type": "application/json", "Accept": ACCEPT_BOTH},
        timeout=TIMEOUT,
    )
    assert posted.status_code == 404 and not error_body_errors(posted.json())
    got = requests.get(srv.mcp, headers={**headers, "Accept": "text/event-stream"}, timeout=TIMEOUT)
    assert got.status_code == 404
    deleted = requests.delete(srv.mcp, headers=headers, timeout=TIMEOUT)
    assert deleted.status_code == 404
    assert legacy_id in srv.app.sessions
    assert session.post(request("ping", {}, 6)).status_code == 202
    assert session.next_message() == {"jsonrpc": "2.0", "id": 6, "result": {}}


def test_legacy_sessions_count_towards_the_cap(serve, legacy_raw):
    srv = serve(max_sessions=1, max_sessions_per_client=None)  # one address: the table's cap
    legacy_raw(srv.url).initialize("2024-11-05")  # established: it keeps its place
    response = requests.get(srv.sse, headers={"Accept": "text/event-stream"}, timeout=TIMEOUT)
    assert response.status_code == 503 and not error_body_errors(response.json())


def test_a_legacy_session_that_never_posted_makes_room(serve, legacy_raw):
    srv = serve(max_sessions=1, max_sessions_per_client=None)  # one address: the table's cap
    idle = legacy_raw(srv.url)  # opened its stream, never sent a message
    newcomer = legacy_raw(srv.url)
    newcomer.initialize("2024-11-05")
    assert list(srv.app.sessions) == [
        parse_qs(urlsplit(newcomer.endpoint_data).query)["session_id"][0]
    ]
    assert idle.reader.next() is None  # the idle one's stream was ended


def test_legacy_sse_off_is_404(serve):
    srv = serve(legacy_sse=False)
    response = requests.get(srv.sse, headers={"Accept": "text/event-stream"}, timeout=TIMEOUT)
    assert response.status_code == 404 and not error_body_errors(response.json())
    response = requests.post(
        srv.url + "/messages?session_id=x", json=request("ping"), timeout=TIMEOUT
    )
    assert response.status_code == 404
    with pytest.raises(Exception) as info:
        Client_http(srv.sse, transport="sse")
    assert "404" in str(info.value)


def Client_http(url, **options):
    from mcp_ref import Client

    client = Client.http(url, trace=WireChecker(), timeout=WAIT, **options)
    client.close()
    return client


# -- Client.http ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2024-11-05", "2025-11-25"])
def test_client_with_transport_sse(serve, http_client, version):
    box = []
    # keepalive=0.2: closing an SSE-mode client waits for the server's next write (see
    # test_closing_an_sse_client_is_prompt), so keep the server chatty.
    srv = serve(keepalive=0.2, wrap=lambda app: box.append(HeaderRecorder(app)) or box[0])
    progress, updated = Collector(), Collector()
    client = http_client(
        srv.sse,
        transport="sse",
        protocol_version=version,
        on_resource_updated=updated,
        sampling_handler=lambda p: {
            "role": "assistant",
            "content": {"type": "text", "text": "hi"},
            "model": "m",
        },
    )
    assert client.protocol_version == version
    assert client.session.transport.mode == "sse"
    assert client.call_tool("echo", {"text": "legacy"}).content[0].text == "legacy"
    assert (
        client.call_tool("count_slowly", {"steps": 3, "delay": 0.01}, on_progress=progress)
        .content[0]
        .text
        == "counted to 3"
    )
    assert [v[0] for v in progress.wait_for(3)] == [1, 2, 3]
    assert client.call_tool("ask_llm", {"question": "q"}).content[0].text == "m says: hi"
    client.subscribe("demo://counter")
    client.call_tool("bump_counter")
    assert updated.wait_for(1) == ["demo://counter"]
    paths = {path for method, path, _ in box[0].requests}
    assert paths == {"/sse", "/messages"}, paths  # never /mcp
    assert all(method == "POST" for method, path, _ in box[0].requests if path == "/messages")


def test_auto_falls_back_to_sse(serve, http_client):
    box = []
    srv = serve(keepalive=0.2, wrap=lambda app: box.append(HeaderRecorder(app)) or box[0])
    client = http_client(srv.sse)  # transport="auto": the initialize POST to /sse gets 404
    assert client.session.transport.mode == "sse"
    assert client.call_tool("echo", {"text": "fell back"}).content[0].text == "fell back"
    methods = [(method, path) for method, path, _ in box[0].requests]
    assert methods[0] == ("POST", "/sse") and ("GET", "/sse") in methods
    assert ("POST", "/messages") in methods
    assert (
        len(client.wire.sent("initialize")) == 1
    )  # the same initialize, sent again over the new transport


def test_auto_against_streamable_does_not_fall_back(serve, http_client):
    srv = serve()
    client = http_client(srv.mcp)
    assert client.session.transport.mode == "streamable"
    assert client.session.transport.legacy_endpoint is None


class RefusesCalls:
    """WSGI middleware: the first ``times`` POSTs of a ``tools/call`` to the 2024-11-05 endpoint
    are answered 503 with ``Retry-After: retry_after`` (as mcp_ref's server answers when the worker
    holding a shared session's stream cannot be reached now: ``SharedSessions.forward_legacy``),
    the server never seeing them; every POST of a ``tools/call`` is counted in :attr:`calls`."""

    def __init__(self, app, times: int, retry_after: str):
        self.app = app
        self.times = times
        self.retry_after = retry_after
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        import io

        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ = {**environ, "wsgi.input": io.BytesIO(body)}
        if environ["REQUEST_METHOD"] != "POST" or b'"tools/call"' not in body:
            return self.app(environ, start_response)
        with self.lock:
            self.calls += 1
            refused = self.calls <= self.times
        if not refused:
            return self.app(environ, start_response)
        start_response(
            "503 Service Unavailable",
            [("Content-Type", "text/plain"), ("Retry-After", self.retry_after)],
        )
        return [b"the worker this message is for cannot be reached now"]


def refusing(serve, times: int, retry_after: str):
    box: list[RefusesCalls] = []
    srv = serve(
        keepalive=0.2, wrap=lambda app: box.append(RefusesCalls(app, times, retry_after)) or box[0]
    )
    return srv, box[0]


def test_a_request_refused_503_with_retry_after_is_sent_again(serve, http_client):
    """2024-11-05 transport: a request POSTed to the endpoint and refused 503 with Retry-After is
    sent again after that pause, as the Streamable HTTP client sends a refused notice again (it
    failed at once: "HTTP 503 Service Unavailable")."""
    srv, refuser = refusing(serve, times=1, retry_after="1")
    client = http_client(srv.sse, transport="sse")
    assert client.call_tool("echo", {"text": "sent again"}).content[0].text == "sent again"
    assert refuser.calls == 2
    assert (
        client.call_tool("echo", {"text": "next"}).content[0].text == "next"
    )  # the session goes on


def test_a_request_refused_for_longer_than_its_timeout_fails_at_once(serve, http_client):
    """A pause that would end past the request's deadline is not waited: the request fails with
    the 503 (not a timeout, which waiting would have met), sent once."""
    from mcp_ref import McpError

    srv, refuser = refusing(serve, times=1, retry_after="3600")
    client = http_client(srv.sse, transport="sse")
    with pytest.raises(McpError) as info:
        client.call_tool("echo", {"text": "x"})
    assert info.value.data["httpStatus"] == 503 and "503 Service Unavailable" in str(info.value)
    assert refuser.calls == 1
    assert client.call_tool("echo", {"text": "y"}).content[0].text == "y"  # sent at once now


def test_a_request_refused_every_time_is_sent_again_a_bounded_number_of_times(serve, http_client):
    from mcp_ref import McpError
    from mcp_ref.http.notices import MAX_RESENDS

    srv, refuser = refusing(serve, times=1000, retry_after="0")
    client = http_client(srv.sse, transport="sse")
    with pytest.raises(McpError) as info:
        client.call_tool("echo", {"text": "x"})
    assert info.value.data["httpStatus"] == 503
    assert refuser.calls == 1 + MAX_RESENDS


def test_closing_an_sse_client_is_prompt(serve):
    from mcp_ref import Client

    # The stream's next byte (a keep-alive) is past the test's WAIT: close() returns within WAIT
    # only if it does not wait for the server to send something.
    srv = serve(keepalive=3 * WAIT)
    checker = WireChecker()
    client = Client.http(srv.sse, transport="sse", trace=checker, timeout=WAIT)
    assert client.call_tool("echo", {"text": "x"}).content[0].text == "x"
    run_threads(lambda _: client.close(), 1)  # fails if close() is still running after WAIT
    checker.assert_valid()


@pytest.mark.slow
@pytest.mark.parametrize(
    "backlog",
    [{"standalone_backlog": 20}, {"backlog_bytes": 300_000}],
    ids=["messages", "bytes"],
)
def test_a_slow_reader_never_loses_an_answer_in_silence(serve, legacy_raw, caplog, backlog):
    """Issue 7 class 5: with a client that stops reading, the server refuses new POSTs (503) once
    the stream is full, and every POST it accepted (202) is answered once the client reads again:
    an answer is queued past the stream's bounds, and its session goes on.  Full is
    ``standalone_backlog`` messages, or ``backlog_bytes`` bytes with far fewer messages (the
    1,000-message default would let a client that never reads pin a thousand large answers)."""
    srv = serve(**backlog)
    session = legacy_raw(srv.url)
    session.initialize("2024-11-05")
    big = "x" * 100_000  # 100 KB answers: the socket buffers fill soon, then the stream's backlog
    statuses: dict[int, int] = {}
    with caplog.at_level("WARNING"):
        for n in range(150):
            response = session.post(
                request("tools/call", {"name": "echo", "arguments": {"text": big}}, n)
            )
            statuses[n] = response.status_code
            assert response.status_code in (202, 503), response.text
            if response.status_code == 503:
                assert (
                    response.headers.get("Retry-After")
                    and "event stream is full" in response.json()["error"]["message"]
                )
        accepted = {n for n, status in statuses.items() if status == 202}
        assert len(accepted) < 150  # the backpressure did engage
        answered = set()
        while answered < accepted:
            message = session.next_message()  # the client reads again; the stream goes on
            if message.get("id") in accepted:
                assert message["result"]["content"][0]["text"] == big
                answered.add(message["id"])
    assert "session is ended" not in caplog.text
    assert session.post(request("ping", {}, "after")).status_code == 202  # the session goes on
    assert session.next_message() == {"jsonrpc": "2.0", "id": "after", "result": {}}


def test_answers_to_accepted_posts_are_queued_past_the_byte_bound_of_a_reading_client(
    serve, legacy_raw, monkeypatch
):
    """A 2024-11-05 client that reads its stream as it should, with three requests accepted at
    once whose answers are 8 MB each (the bound is 4 MiB): the answers come in while the stream
    still carries the first (more than the socket buffers hold), so they are queued past the byte
    bound, and the session is not ended.  The 503 to new POSTs while the stream is full is what
    holds the client back (spec_notes/security.md promises it, and that no answer is too large to
    send); what is queued past the bound is the answers of the handlers already running."""
    from mcp_ref import Server
    from mcp_ref.http.server.streams import Stream

    size = 8 * 1024 * 1024
    release = threading.Event()
    server = Server("big-answers")

    @server.tool()
    def big(n: int) -> str:
        """An answer of n characters, once the test lets it go."""
        assert release.wait(WAIT)
        return "x" * n

    queued_big = threading.Semaphore(0)  # one per big answer put on a stream (kept or refused)
    put = Stream.put

    def counting(self, data, **options):
        outcome = put(self, data, **options)
        if len(data) > size:
            queued_big.release()
        return outcome

    monkeypatch.setattr(Stream, "put", counting)
    srv = serve(server)
    session = legacy_raw(srv.url)
    session.initialize("2024-11-05")
    for n in (1, 2, 3):
        message = request("tools/call", {"name": "big", "arguments": {"n": size}}, n)
        assert session.post(message).status_code == 202
    release.set()
    for _ in range(3):  # every answer has reached the stream before the client reads on
        assert queued_big.acquire(timeout=WAIT)
    answered = set()
    while len(answered) < 3:
        message = session.next_message()
        assert message["result"]["content"][0]["text"] == "x" * size
        answered.add(message["id"])
    assert answered == {1, 2, 3}
    assert session.post(request("ping", {}, 4)).status_code == 202
    assert session.next_message() == {"jsonrpc": "2.0", "id": 4, "result": {}}


def test_an_answer_is_queued_on_a_full_stream_and_a_notification_ends_the_session(caplog):
    """The other half of the policy, on the app's own objects (no socket can hold a stream full on
    cue): an answer that finds the stream full is queued all the same, the session going on; a
    notification of the server's that finds it full is not dropped in silence: the session ends,
    and the log says why."""
    from mcp_ref.http.server import HttpSession
    from mcp_ref.jsonrpc import Notification, Response, serialize
    from mcp_ref.workbench.demo import build_server

    app = build_server().wsgi_app(standalone_backlog=2)
    session = HttpSession(app, "legacy-unit", kind="legacy")
    session.connection = app.server.new_connection(session)
    app.sessions[session.id] = session
    assert session.standalone.put(b"1") and session.standalone.put(b"2")
    assert session.standalone.full() and not session.standalone.put(b"3")
    answer = Response(7, {})
    session.write(serialize(answer), answer)
    assert list(session.standalone.items) == [b"1", b"2", serialize(answer)]
    assert session.id in app.sessions and not session.closed
    with caplog.at_level("WARNING"):
        note = Notification("notifications/message", {"level": "info", "data": "x"})
        session.write(serialize(note), note)
    assert "rather than drop a message in silence" in caplog.text
    assert session.id not in app.sessions and session.closed
    app.close()


def test_a_stream_is_full_at_its_byte_bound_too(caplog):
    """``backlog_bytes`` bounds the bytes a stream holds undelivered, whatever their count: a
    message past it is refused (on HTTP+SSE, a notification that finds no room ends the session,
    with the reason logged; an answer is queued past it), while a stream holding nothing takes
    one message however long (no answer is ever too large to send); what its client reads makes
    room again."""
    from mcp_ref.http.server import HttpSession
    from mcp_ref.jsonrpc import Notification, Response, serialize
    from mcp_ref.workbench.demo import build_server

    app = build_server().wsgi_app(backlog_bytes=1000)
    session = HttpSession(app, "legacy-bytes", kind="legacy")
    session.connection = app.server.new_connection(session)
    app.sessions[session.id] = session
    stream = session.standalone
    assert stream.put(b"a" * 5000) and stream.full()  # alone, however long
    token = stream.attach()
    assert stream.take(token, 0) == b"a" * 5000 and not stream.full()
    assert stream.put(b"b" * 600) and stream.put(b"c" * 300) and not stream.full()
    assert not stream.put(b"d" * 200)  # 1,100 bytes: past the bound, with two messages held
    assert stream.put(b"e" * 100) and stream.full()  # exactly 1,000
    assert stream.take(token, 0) == b"b" * 600 and not stream.full()
    assert stream.put(b"f" * 600) and stream.full()
    answer = Response(7, {"text": "g" * 200})
    session.write(serialize(answer), answer)
    assert stream.held_bytes == 1000 + len(serialize(answer)) and not session.closed
    with caplog.at_level("WARNING"):
        note = Notification("notifications/message", {"level": "info", "data": "h"})
        session.write(serialize(note), note)
    assert "rather than drop a message in silence" in caplog.text
    assert f"{1000 + len(serialize(answer))} bytes" in caplog.text
    assert session.id not in app.sessions and session.closed
    app.close()


def test_an_unknown_methods_long_name_is_not_echoed_whole(serve, legacy_raw):
    """An error message a client's string is echoed in is cut at ``errors.MAX_MESSAGE`` (1,024)
    characters: a client that posts megabyte method names (and never reads its stream) cannot make
    each answer the server holds for it a megabyte.  JSON-RPC 2.0 §5.1: "The message SHOULD be
    limited to a concise single sentence"; the session goes on."""
    srv = serve()
    session = legacy_raw(srv.url)
    session.initialize("2024-11-05")
    name = "x" * 1_000_000
    response = session.http.post(
        session.endpoint,
        data=json.dumps(request(name, {}, 5)).encode(),
        headers={"Content-Type": "application/json"},
        timeout=TIMEOUT,
    )
    assert response.status_code == 202, response.text
    answer = session.next_message()
    assert answer["id"] == 5 and answer["error"]["code"] == -32601
    message = answer["error"]["message"]
    assert message.startswith("Method not found: xxx") and len(message) == 1024
    assert message.endswith("x…")  # the peer can tell it was cut
    assert session.post(request("ping", {}, 6)).status_code == 202
    assert session.next_message() == {"jsonrpc": "2.0", "id": 6, "result": {}}


def test_a_full_standalone_stream_of_streamable_http_drops_a_notification_with_a_log_line(caplog):
    from mcp_ref.http.server import HttpSession
    from mcp_ref.jsonrpc import Notification, serialize
    from mcp_ref.workbench.demo import build_server

    app = build_server().wsgi_app(standalone_backlog=1)
    session = HttpSession(app, "streamable-unit")
    session.connection = app.server.new_connection(session)
    app.sessions[session.id] = session
    assert session.standalone.put(b"1") and session.standalone.full()
    with caplog.at_level("WARNING"):
        note = Notification("notifications/tools/list_changed")
        session.write(serialize(note), note)
    assert "are dropped until there is room" in caplog.text
    assert (
        session.id in app.sessions and not session.closed
    )  # it carries no answers: the session goes on
    app.close()


class HeadlessGets:
    """A TCP server on 127.0.0.1 (port 0) that reads each request but never answers a GET: no
    status line, no headers, its connection held open (kept in :attr:`held`).  A POST is answered
    405, as a server of the old transport answers it at the URL of its stream (an ``auto`` client
    falls back to HTTP+SSE)."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/sse"
        self.held: queue.Queue[socket.socket] = queue.Queue()
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed: the test is over
                return
            self.connections.append(connection)
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        connection.settimeout(WAIT)
        reader = connection.makefile("rb")
        while True:
            head = [reader.readline(65536)]
            while head[-1] not in (b"\r\n", b"\n", b""):
                head.append(reader.readline(65536))
            if head[0].startswith(b"GET "):
                self.held.put(connection)  # never answered
                return
            if not head[0].startswith(b"POST "):
                return  # the client closed it
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            reader.read(length)
            connection.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n")

    def close(self) -> None:
        self.listener.close()
        for connection in self.connections:
            connection.close()


def ended_by_the_client(connection: socket.socket) -> bool:
    """Whether the client closes ``connection`` within WAIT (what it sent is read and dropped)."""
    connection.settimeout(WAIT)
    try:
        while connection.recv(65536):
            pass
    except TimeoutError:
        return False
    except OSError:  # reset: ended too
        pass
    return True


@pytest.mark.parametrize("transport", ["sse", "auto"])
def test_a_get_that_never_gets_its_headers_leaves_no_thread_nor_connection(transport):
    """A server that accepts the GET and never answers it: the client gives up after
    connect_timeout (ServerUnreachable), and its close() ends the GET's thread and connection
    (they were left waiting for the headers for ever, one more on every attempt)."""
    from mcp_ref import Client, ServerUnreachable

    server = HeadlessGets()
    try:
        before = set(threading.enumerate())
        with pytest.raises(ServerUnreachable, match="no answer"):
            Client.http(server.url, transport=transport, connect_timeout=0.5)
        assert ended_by_the_client(server.held.get(timeout=WAIT))
        for thread in set(threading.enumerate()) - before:
            if thread.name == "mcp-sse-listen":
                thread.join(WAIT)
                assert not thread.is_alive()
    finally:
        server.close()
