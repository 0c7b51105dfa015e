"""The inspector's web app serves its user only: on 127.0.0.1, under the secret token, to this
address's Host and Origin, JSON POSTs of bounded size; every response with the CSP and the other
headers.  Real sockets (raw HTTP where a client library would correct what is sent)."""

from __future__ import annotations

import http.client
import json
import logging
import socket
import threading
from urllib.parse import urlsplit

import pytest
from conftest import WAIT
from inspector_harness import EventReader, Inspector

from mcp_ref.inspector.app import CONTENT_SECURITY_POLICY, MAX_BODY


@pytest.fixture
def inspector():
    """An inspector never connected (what is checked comes before any server is asked)."""
    made = Inspector("--", "no-such-command-for-mcp-ref", connect=False)
    yield made
    made.close()


def raw(inspector: Inspector, method: str, path: str, headers: dict, body: bytes = b""):
    """One request on a socket of its own, sent exactly as given: (status, headers, body)."""
    connection = http.client.HTTPConnection("127.0.0.1", inspector.port, timeout=WAIT)
    try:
        connection.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders(body or None)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def assert_guarded(headers: dict) -> None:
    """The headers every response carries."""
    assert headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert (
        "script-src 'self'" in CONTENT_SECURITY_POLICY
        and "unsafe-inline" not in CONTENT_SECURITY_POLICY
    )
    assert headers["Referrer-Policy"] == "no-referrer"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Cache-Control"] == "no-store"


def good(inspector: Inspector) -> dict:
    return {"Host": f"127.0.0.1:{inspector.port}"}


def page_path(inspector: Inspector, route: str = "") -> str:
    return f"/{inspector.served.app.token}/{route}"


def test_the_page_is_served_with_its_token_and_guarded(inspector):
    status, headers, body = raw(inspector, "GET", page_path(inspector), good(inspector))
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert b'<script src="static/inspector.js"' in body
    assert_guarded(headers)
    status, headers, _ = raw(
        inspector, "GET", page_path(inspector, "static/inspector.js"), good(inspector)
    )
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    assert_guarded(headers)
    by_name = {"Host": f"localhost:{inspector.port}"}
    assert raw(inspector, "GET", page_path(inspector, "api/state"), by_name)[0] == 200


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/index.html",
        "/static/inspector.js",
        "/api/state",
        "/{wrong}/",
        "/{wrong}/api/state",
        "/{token}",  # the token, not a folder: nothing under it
        "/{token}x/api/state",
        "/{token}/static/../app.py",
        "/{token}/static/live.py",
        "/{token}/nothing",
    ],
)
def test_without_the_token_nothing_is_served(inspector, path):
    token = inspector.served.app.token
    wrong = token[:-1] + ("A" if token[-1] != "A" else "B")  # as long, one character off
    path = path.format(token=token, wrong=wrong)
    status, headers, body = raw(inspector, "GET", path, good(inspector))
    assert (status, body) == (404, b"Not Found")
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert_guarded(headers)
    assert not {"Set-Cookie", "Location", "Content-Disposition"} & set(headers)


@pytest.mark.parametrize(
    "host", ["evil.example:{port}", "127.0.0.1:{other}", "127.0.0.1", "[::1]:{port}"]
)
def test_another_host_is_refused(inspector, host):
    host = host.format(port=inspector.port, other=inspector.port + 1)
    status, answered, body = raw(
        inspector, "GET", page_path(inspector, "api/state"), {"Host": host}
    )
    assert (status, body) == (421, b"Misdirected Request")
    assert_guarded(answered)


def test_a_request_without_host_is_refused_before_the_page(inspector):
    """RFC 9112 §3.2: an HTTP/1.1 request without Host gets 400 from the HTTP server itself,
    before the inspector's application sees it (it was the application's 421)."""
    status, _, body = raw(inspector, "GET", page_path(inspector, "api/state"), {})
    assert status == 400 and b"Host" in body
    assert inspector.served.app.token.encode() not in body


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "null", "http://127.0.0.1:1", "https://127.0.0.1:{port}"]
)
def test_a_foreign_origin_is_refused(inspector, origin):
    origin = origin.format(port=inspector.port)
    for method, route in (("GET", "api/state"), ("GET", "events"), ("POST", "api/clear")):
        headers = {**good(inspector), "Origin": origin, "Content-Type": "application/json"}
        status, answered, body = raw(
            inspector,
            method,
            page_path(inspector, route),
            headers,
            b"{}" if method == "POST" else b"",
        )
        assert status == 403 and body.startswith(b"Forbidden")
        assert_guarded(answered)


def test_a_post_needs_the_origin_and_json_and_a_bounded_body(inspector):
    inspector.conversation.note("kept")
    clear = page_path(inspector, "api/clear")
    origin = {"Origin": inspector.origin}
    cases = [
        ({"Content-Type": "application/json"}, b"{}", 403),  # no Origin: a form of another site
        ({**origin, "Content-Type": "text/plain"}, b"{}", 415),
        ({**origin}, b"{}", 415),
        ({**origin, "Content-Type": "application/x-www-form-urlencoded"}, b"a=1", 415),
        ({**origin, "Content-Type": "application/json"}, b"[1]", 400),
        ({**origin, "Content-Type": "application/json"}, b"{nope", 400),
    ]
    for headers, body, expected in cases:
        status, answered, _ = raw(
            inspector,
            "POST",
            clear,
            {**good(inspector), **headers, "Content-Length": str(len(body))},
            body,
        )
        assert status == expected, headers
        assert_guarded(answered)
    # too large: refused from its Content-Length, before a byte of it is read
    status, answered, body = raw(
        inspector,
        "POST",
        clear,
        {
            **good(inspector),
            **origin,
            "Content-Type": "application/json",
            "Content-Length": str(MAX_BODY + 1),
        },
    )
    assert status == 413
    assert_guarded(answered)
    assert [r["text"] for r in inspector.conversation.records() if r["kind"] == "note"] == ["kept"]
    # the page's own request is done
    assert inspector.post("clear", {}) == {}
    assert inspector.conversation.records() == []


def test_a_bad_request_to_the_api_is_a_clear_json_error(inspector):
    assert raw(inspector, "GET", page_path(inspector, "api/clear"), good(inspector))[0] == 405
    assert raw(inspector, "PUT", page_path(inspector, ""), good(inspector))[0] == 405
    refused = inspector.post("call", {"call": "c1", "name": "echo"}, status=409)
    assert refused == {
        "error": {"code": None, "message": "not connected: connect first", "data": None}
    }
    assert inspector.post("connect", {"era": "sideways"}, status=400)["error"][
        "message"
    ].startswith("era")
    bad = inspector.get("api/records?after=-1")
    assert bad.status_code == 400 and "Traceback" not in bad.text


def test_a_failure_inside_is_logged_without_the_token(inspector, monkeypatch, caplog):
    """A failure of the inspector's own is a short 500 for the page and a traceback on its
    terminal, whose line names the route, not the secret address."""

    def broken() -> dict:
        raise RuntimeError("a bug of the inspector's")

    monkeypatch.setattr(inspector.inspected, "state", broken)
    with caplog.at_level(logging.ERROR, logger="mcp_ref.inspector.app"):
        failed = inspector.get("api/state")
    assert failed.status_code == 500 and "Traceback" not in failed.text
    assert "bug" not in failed.text
    (logged,) = [r for r in caplog.records if r.name == "mcp_ref.inspector.app"]
    assert "api/state" in logged.getMessage() and logged.exc_info
    assert inspector.served.app.token not in caplog.text


def test_the_request_lines_logged_at_debug_hold_no_token(inspector, caplog):
    """The HTTP server logs the request line of an answer it makes itself (here a 400 for a
    malformed head) at debug level: the token in its path is left out."""
    path = urlsplit(inspector.url).path + "api/state"
    head = (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{inspector.port}\r\n"
        "Content-Length: 1\r\nContent-Length: 2\r\n\r\n"
    )
    with caplog.at_level(logging.DEBUG, logger="mcp_ref.http.wsgi_server"):
        with socket.create_connection(("127.0.0.1", inspector.port), timeout=WAIT) as raw:
            raw.sendall(head.encode())
            answer = raw.makefile("rb").readline()
            assert answer.startswith(b"HTTP/1.1 400")
            raw.shutdown(socket.SHUT_WR)
            raw.makefile("rb").read()  # the server closes the connection: its lines are written
    lines = [r.getMessage() for r in caplog.records if r.name == "mcp_ref.http.wsgi_server"]
    assert any("/TOKEN/api/state" in line for line in lines), lines
    assert inspector.served.app.token not in caplog.text


def test_it_listens_on_127_0_0_1_only(inspector):
    assert inspector.served.server.server_address[0] == "127.0.0.1"
    assert inspector.url.startswith(f"http://127.0.0.1:{inspector.port}/")
    token = inspector.url.rstrip("/").rsplit("/", 1)[1]
    assert len(token) >= 32  # secrets.token_urlsafe(24)
    # another address of this machine's loopback does not reach it
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.2", inspector.port), timeout=WAIT).close()


def test_events_replay_from_after_and_last_event_id_then_go_live(inspector):
    for text in ("one", "two", "three"):
        inspector.conversation.note(text)
    events = inspector.events(after=1)
    assert events.wait_for("state")["connected"] is False
    replayed = [events.wait_for("record")["text"], events.wait_for("record")["text"]]
    assert replayed == ["two", "three"]
    inspector.conversation.note("four")
    assert events.wait_for("record")["text"] == "four"
    resumed = EventReader(inspector.url + "events?after=0", headers={"Last-Event-ID": "3"})
    inspector.readers.append(resumed)
    assert resumed.wait_for("record")["text"] == "four"
    assert [item[2] for item in resumed.seen if item[0] == "record"] == ["4"]
    records = inspector.get("api/records?after=2&limit=1").json()
    assert [r["text"] for r in records["records"]] == ["three"] and records["last"] == 3
    exported = inspector.get("api/export.jsonl")
    assert exported.headers["Content-Disposition"].startswith("attachment")
    assert json.loads(exported.text.splitlines()[0])["kind"] == "header"
    assert inspector.get("api/export.md").text.count("sequenceDiagram") == 1


def test_a_stream_ends_when_its_browser_goes(inspector, monkeypatch):
    app = inspector.served.app
    ended = threading.Event()
    forget = app.forget

    def forgotten(stream) -> None:  # the stream's last act: it has ended
        forget(stream)
        ended.set()

    monkeypatch.setattr(app, "forget", forgotten)
    connection = socket.create_connection(("127.0.0.1", inspector.port), timeout=WAIT)
    connection.sendall(
        f"GET {page_path(inspector, 'events')} HTTP/1.1\r\nHost: 127.0.0.1:{inspector.port}\r\n\r\n".encode()
    )
    assert connection.recv(4096).startswith(b"HTTP/1.1 200")
    assert len(app._streams) == 1
    connection.close()
    # the server's watchdog notices within a fraction of a second; the stream then ends at once
    assert ended.wait(WAIT), "the stream outlived its browser"
    assert not app._streams


def test_credentials_in_the_target_url_are_masked():
    inspector = Inspector("http://user:hunter2@127.0.0.1:1/mcp?access_token=hunter2", connect=False)
    try:
        state = inspector.get("api/state").json()
        assert "hunter2" not in json.dumps(state) and state["target"].startswith("http://")
        assert "hunter2" not in inspector.get("api/export.md").text
    finally:
        inspector.close()


def test_credentials_in_a_target_command_line_are_masked():
    """A command line TARGET (a proxy to a URL with a password, a key given as KEY=VALUE) is
    shown with what reads as a secret masked: in the state, the export's header, the diagram."""
    inspector = Inspector(
        "--",
        "npx",
        "mcp-remote",
        "https://ada:hunter2@example.com/mcp",
        "API_KEY=hunter2",
        connect=False,
    )
    try:
        state = inspector.get("api/state").json()
        assert state["target"].startswith("npx mcp-remote https://")
        for route in ("api/state", "api/export.jsonl", "api/export.md"):
            assert "hunter2" not in inspector.get(route).text, route
    finally:
        inspector.close()


def test_credentials_in_the_target_url_are_masked_when_connecting_fails():
    """The reason a connect failed (the state's ``error``, the note in the record and both
    exports) names the target without its userinfo: here a server that never answers."""
    silent = socket.create_server(("127.0.0.1", 0))  # accepts into its backlog, never answers
    port = silent.getsockname()[1]
    inspector = Inspector("--connect-timeout", "0.5", f"http://user:hunter2@127.0.0.1:{port}/mcp")
    try:
        assert inspector.state["error"] and not inspector.state["connected"]
        assert "127.0.0.1" in inspector.state["error"]
        for route in ("api/state", "api/records", "api/export.jsonl", "api/export.md"):
            assert "hunter2" not in inspector.get(route).text, route
    finally:
        inspector.close()
        silent.close()


def test_a_stream_holds_no_more_than_the_conversation_may_weigh(inspector):
    """The records waiting for a page that does not read are bounded by the conversation's
    ``max_bytes`` too, not only by their number: past it the stream ends (the page reconnects and
    catches up), so records the conversation dropped are not kept alive in a stream's queue."""
    from mcp_ref.inspector.app import EventStream, InspectorApp
    from mcp_ref.inspector.conversation import Conversation

    class Feed:
        """A subscription that hands the pump these records, as fast as it takes them."""

        closed = False

        def __init__(self, records: list[dict]) -> None:
            self.records = records
            self.ended = threading.Event()

        def get(self, timeout: float) -> dict | None:
            if self.records:
                return self.records.pop(0)
            self.ended.wait(timeout)
            return None

    notes = [{"kind": "note", "text": "x" * 4000, "time": 0.0, "seq": n} for n in (1, 2, 3, 4)]
    stream = EventStream(InspectorApp(inspector.inspected, Conversation(max_bytes=10_000)), 0)
    feed = Feed(notes)
    pump = threading.Thread(target=stream._pump, args=(feed,), daemon=True)
    pump.start()
    try:  # each note about 4 kB: the third passes the bound
        assert stream.stopped.wait(WAIT), "the stream kept more than the conversation may weigh"
        waiting = [item for item in list(stream.queue.queue) if item and item[0] == "record"]
        assert len(waiting) == 2 and stream.waiting_bytes <= 10_000
    finally:
        stream.stop()
        feed.ended.set()
        pump.join(WAIT)


def test_a_stalled_page_s_stream_holds_no_more_log_events_than_the_conversation_may_weigh():
    """A page whose stream reads nothing (a real socket), a server that floods it with log
    messages (a real subprocess, 20 MB): the events waiting (logs as records) weigh at most the
    conversation's ``max_bytes``; past it the stream ends and takes no event any more."""
    import sys
    from pathlib import Path

    server = Path(__file__).parents[1] / "servers" / "flooding_server.py"
    inspector = Inspector("--era", "handshake", "--", sys.executable, str(server))
    inspector.conversation.max_bytes = 1_000_000  # read as each stream starts
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        stalled.settimeout(WAIT)
        stalled.connect(("127.0.0.1", inspector.port))
        stalled.sendall(
            f"GET {page_path(inspector, 'events')} HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{inspector.port}\r\n\r\n".encode()
        )
        assert stalled.recv(64).startswith(b"HTTP/1.1 200")
        [stream] = inspector.served.app._streams
        flood = {"kind": "log", "count": 200, "size": 100_000}
        answer = inspector.post("call", {"call": "c1", "name": "flood", "arguments": flood})
        assert answer["result"]["content"] == [{"type": "text", "text": "sent 200"}]
        assert stream.stopped.wait(WAIT), "the stream kept more than the conversation may weigh"
        waiting = [item for item in list(stream.queue.queue) if item is not None]
        weight = sum(
            len(data) if isinstance(data, bytes) else len(json.dumps(data))
            for _event, data, _seq in waiting
        )
        assert weight <= 1_000_000, f"{len(waiting)} events waiting weigh {weight} bytes"
        assert stream._on_event not in inspector.inspected._listeners  # it takes no more
    finally:
        stalled.close()
        inspector.close()


def test_an_idle_stream_is_kept_open_with_comments(inspector, monkeypatch):
    from mcp_ref.inspector import app

    monkeypatch.setattr(app, "KEEPALIVE", 0.05)
    events = inspector.events()
    assert events.wait_for("state")["connected"] is False
    assert events.wait_for(":") == {"comment": ": keep-alive"}
    inspector.conversation.note("still there")
    assert events.wait_for("record")["text"] == "still there"


def test_a_stream_that_falls_behind_is_ended(inspector, monkeypatch):
    """Its queue is bounded: past it the stream ends (the page reconnects and catches up)."""
    from mcp_ref.inspector import app

    monkeypatch.setattr(app, "STREAM_QUEUE", 3)
    stream = app.EventStream(inspector.served.app, 0)
    inspector.inspected.add_listener(stream._on_event)
    for number in range(3):
        inspector.inspected.publish("log", {"level": "info", "logger": None, "data": number})
    assert not stream.stopped.is_set()
    inspector.inspected.publish("log", {"level": "info", "logger": None, "data": 3})
    assert stream.stopped.is_set()
    inspector.inspected.remove_listener(stream._on_event)
    assert stream.queue.qsize() == 3  # bounded: the fourth was not kept


def test_past_the_bound_of_open_streams_one_more_is_refused(inspector, monkeypatch):
    from mcp_ref.inspector import app

    monkeypatch.setattr(app, "MAX_STREAMS", 1)
    first = inspector.events()
    assert first.wait_for("state")["connected"] is False
    refused = inspector.get("events")
    assert refused.status_code == 503 and refused.text.startswith("Service Unavailable")
    assert_guarded(refused.headers)
