"""The HTTP client transport's observer (``http_trace``), over real sockets: every request, response
head and body, and SSE event, in both eras and over the 2024-11-05 HTTP+SSE transport; the HTTP
records the inspector makes of them (masked, Mcp-* headers decoded); and an observer that raises
never breaks the transport."""

from __future__ import annotations

import base64
import json
import logging

import pytest
from conftest import WAIT, Collector
from http_fixtures import serving

from mcp_ref import Client, Context, Server, ServerUnreachable
from mcp_ref.http.client import HttpClientTransport
from mcp_ref.http.exchange_trace import HttpRequestSeen, HttpResponseSeen, SseEventSeen
from mcp_ref.inspector.http_view import MAX_BODY_TEXT, http_record, mcp_headers, sse_record
from mcp_ref.inspector.masking import MASK, mask_text, mask_url


def traced_server() -> Server:
    server = Server("traced")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text."""
        return text

    @server.tool()
    def counted(ctx: Context) -> str:
        """Report progress twice, then answer (its answer comes on an SSE stream)."""
        ctx.report_progress(1, 2)
        ctx.report_progress(2, 2)
        return "done"

    @server.tool()
    def polled(ctx: Context) -> str:
        """Close its stream mid-call: the client resumes it with Last-Event-ID."""
        ctx.report_progress(1, 2)
        ctx.close_sse_stream()
        ctx.report_progress(2, 2)
        return "resumed"

    return server


def header(seen, name: str) -> str | None:
    return next((v for k, v in seen.headers if k.lower() == name.lower()), None)


def requests_of(seen: list, method: str | None = None) -> list[HttpRequestSeen]:
    return [s for s in seen if isinstance(s, HttpRequestSeen) and method in (None, s.method)]


def response_to(seen: list, exchange: int) -> HttpResponseSeen:
    (response,) = [s for s in seen if isinstance(s, HttpResponseSeen) and s.exchange == exchange]
    return response


def test_a_stateful_session_is_seen_whole():
    seen = Collector()
    with serving(traced_server()) as served:
        with Client.http(served.mcp, era="handshake", http_trace=seen, timeout=WAIT) as client:
            assert client.call_tool("echo", {"text": "hi"}).content[0].text == "hi"
            assert client.call_tool("counted", on_progress=Collector()).content[0].text == "done"
    posts, gets, deletes = (requests_of(seen, m) for m in ("POST", "GET", "DELETE"))
    exchanges = [s.exchange for s in requests_of(seen)]
    assert sorted(exchanges) == list(range(1, len(exchanges) + 1))  # each request its number
    initialize = posts[0]
    assert b'"initialize"' in initialize.body and header(initialize, "Mcp-Session-Id") is None
    session = header(response_to(seen, initialize.exchange), "Mcp-Session-Id")
    assert session and b'"protocolVersion"' in response_to(seen, initialize.exchange).body
    assert all(header(p, "Mcp-Session-Id") == session for p in posts[1:] + gets + deletes)
    # the standalone GET stream: an event stream, its head reported with no body
    stream = response_to(seen, gets[0].exchange)
    assert stream.status == 200 and stream.body is None
    assert header(stream, "Content-Type").startswith("text/event-stream")
    # the call with progress: its answer on an SSE stream, events with ids
    (counted,) = [p for p in posts if b'"counted"' in p.body]
    events = [s for s in seen if isinstance(s, SseEventSeen) and s.exchange == counted.exchange]
    assert [e.event for e in events if e.data] == ["message"] * 3
    assert all(e.event_id for e in events)
    assert (
        '"notifications/progress"' in events[0].data or '"notifications/progress"' in events[1].data
    )
    assert '"done"' in [e.data for e in events if e.data][-1]
    # the notification's 202, and the DELETE at close with its answer
    (initialized,) = [p for p in posts if b"notifications/initialized" in p.body]
    assert response_to(seen, initialized.exchange).status == 202
    assert len(deletes) == 1 and response_to(seen, deletes[0].exchange).status == 200


def test_a_resumed_stream_is_seen_with_its_last_event_id():
    seen = Collector()
    with serving(traced_server(), retry_ms=30) as served:
        with Client.http(served.mcp, era="handshake", http_trace=seen, timeout=WAIT) as client:
            progress = Collector()
            assert client.call_tool("polled", on_progress=progress).content[0].text == "resumed"
    (call,) = [p for p in requests_of(seen, "POST") if b'"polled"' in p.body]
    ids = [s.event_id for s in seen if isinstance(s, SseEventSeen) and s.exchange == call.exchange]
    resumed = [g for g in requests_of(seen, "GET") if header(g, "Last-Event-ID")]
    assert len(resumed) == 1
    assert header(resumed[0], "Last-Event-ID") == [i for i in ids if i][-1]
    later = [s for s in seen if isinstance(s, SseEventSeen) and s.exchange == resumed[0].exchange]
    assert any('"resumed"' in e.data for e in later)


def test_the_modern_era_is_seen_with_its_mcp_headers():
    seen = Collector()
    with serving(traced_server()) as served:
        with Client.http(served.mcp, era="modern", http_trace=seen, timeout=WAIT) as client:
            client.call_tool("echo", {"text": "hi"})
    posts = requests_of(seen, "POST")
    assert b'"server/discover"' in posts[0].body
    (call,) = [p for p in posts if b'"tools/call"' in p.body]
    assert header(call, "Mcp-Method") == "tools/call" and header(call, "Mcp-Name") == "echo"
    assert header(call, "MCP-Protocol-Version") == "2026-07-28"
    record = http_record(call)
    names = {h["name"].lower(): h for h in record["mcp_headers"]}
    assert names["mcp-name"]["decoded"] == "echo"
    assert names["mcp-protocol-version"]["decoded"] == "2026-07-28"
    assert b'"content"' in response_to(seen, call.exchange).body
    assert not requests_of(seen, "GET") and not requests_of(seen, "DELETE")  # no session


def test_the_legacy_transport_is_seen_with_its_endpoint_event():
    seen = Collector()
    with serving(traced_server()) as served:
        with Client.http(served.sse, transport="sse", http_trace=seen, timeout=WAIT) as client:
            client.call_tool("echo", {"text": "old"})
    stream = requests_of(seen, "GET")[0]
    assert stream.exchange == 1 and stream.url == served.sse
    events = [s for s in seen if isinstance(s, SseEventSeen) and s.exchange == 1]
    assert events[0].event == "endpoint" and "session_id=" in events[0].data
    posts = requests_of(seen, "POST")
    assert posts and all("session_id=" in p.url for p in posts)
    assert all(response_to(seen, p.exchange).status == 202 for p in posts)
    assert any('"old"' in e.data for e in events)  # answers come on the GET stream
    # its record shows the endpoint as it was sent: a URL, not re-encoded as if it were a form
    assert sse_record(events[0])["data"] == events[0].data


def test_compact_json_with_an_equals_sign_is_masked_as_json():
    """An SSE event's data comes without a Content-Type; JSON written without spaces (as other
    SDKs write it) that holds an ``=`` anywhere is still JSON, its secrets masked."""
    data = (
        '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"image","data":"iVBORw0KGgo=",'
        '"mimeType":"image/png"}],"structuredContent":{"token":"t0k3n-s3cret","note":"a=b"}}}'
    )
    record = sse_record(SseEventSeen(3, "7", "message", data, None))
    assert "t0k3n-s3cret" not in record["data"]
    assert json.loads(record["data"])["result"]["structuredContent"] == {
        "token": MASK,
        "note": "a=b",
    }
    assert mask_text('{"password":"pw","q":"x=1"}', "text/plain") == json.dumps(
        {"password": MASK, "q": "x=1"}, ensure_ascii=False
    )


def test_form_text_keeps_what_is_no_secret_as_it_was_sent():
    assert mask_text("/messages/?session_id=3f2a&token=abc") == (
        f"/messages/?session_id=3f2a&token={MASK}"
    )
    assert mask_text("scope=read+write&redirect_uri=http%3A%2F%2Fh%2Fcb&code=x") == (
        f"scope=read+write&redirect_uri=http%3A%2F%2Fh%2Fcb&code={MASK}"
    )
    assert mask_url("http://h/cb?code=abc&state=a+b") == f"http://h/cb?code={MASK}&state=a+b"


def test_a_4xx_answer_is_seen_with_its_error_body():
    from mcp_ref import McpError
    from mcp_ref.oauth.resource import ProtectedResource

    class NoToken:
        def verify(self, token: str):
            return None

    seen = Collector()
    app = traced_server().wsgi_app(auth=ProtectedResource(NoToken(), ["https://as.example"]))
    with serving(app=app) as served:
        with pytest.raises(McpError):
            Client.http(served.mcp, era="handshake", http_trace=seen, timeout=WAIT)
    (post,) = requests_of(seen, "POST")
    answer = response_to(seen, post.exchange)
    assert (answer.status, answer.reason) == (401, "Unauthorized")
    assert header(answer, "WWW-Authenticate").startswith("Bearer")
    assert b'"error"' in answer.body  # the error body, as the transport read it


def test_a_response_closed_unread_is_seen_without_a_body():
    seen = Collector()
    with serving(traced_server()) as served:
        with pytest.raises(ServerUnreachable):
            Client.http(served.url + "/nowhere", era="handshake", http_trace=seen, timeout=WAIT)
    (post,) = requests_of(seen, "POST")
    answer = response_to(seen, post.exchange)  # 404: the fall back to HTTP+SSE, body unread
    assert answer.status == 404 and answer.body is None
    assert requests_of(seen, "GET")[0].url == served.url + "/nowhere"  # the fall back's GET


def test_a_raising_observer_is_logged_once_and_never_breaks_the_transport(caplog):
    calls = Collector()

    def observer(seen):
        calls(seen)
        raise RuntimeError("observer bug")

    with caplog.at_level(logging.ERROR, logger="mcp_ref.http.exchange_trace"):
        with serving(traced_server()) as served:
            with Client.http(
                served.mcp, era="handshake", http_trace=observer, timeout=WAIT
            ) as client:
                for n in range(3):
                    assert client.call_tool("echo", {"text": str(n)}).content[0].text == str(n)
                client.call_tool("counted", on_progress=Collector())
    assert len(calls) > 10
    logged = [r for r in caplog.records if r.name == "mcp_ref.http.exchange_trace"]
    assert len(logged) == 1 and "http_trace" in logged[0].getMessage()


def test_without_an_observer_the_session_is_untouched():
    with serving(traced_server()) as served:
        transport = HttpClientTransport(served.mcp)
        try:
            assert "send" not in vars(transport.http)
            assert transport._tracer is None
        finally:
            transport.close()


# -- the records made of them ----------------------------------------------------------------


def test_http_records_are_masked_and_decode_mcp_headers():
    encoded = "=?base64?" + base64.b64encode("café".encode()).decode() + "?="
    seen = HttpRequestSeen(
        4,
        "POST",
        "https://user:pw@example.com/mcp?access_token=abc",
        (
            ("Authorization", "Bearer s3cret"),
            ("Mcp-Name", encoded),
            ("Mcp-Param-Region", "=?base64?not base64?="),
            ("Content-Type", "application/json"),
        ),
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"password":"pw1"}}}',
    )
    record = http_record(seen)
    assert (record["kind"], record["phase"], record["exchange"], record["method"]) == (
        "http",
        "request",
        4,
        "POST",
    )
    assert record["url"] == f"https://{MASK}@example.com/mcp?access_token={MASK}"
    assert ["Authorization", f"Bearer {MASK}"] in record["headers"]
    assert "pw1" not in record["body"] and "s3cret" not in str(record)
    assert {h["name"]: h["decoded"] for h in record["mcp_headers"]} == {
        "Mcp-Name": "café",
        "Mcp-Param-Region": None,
    }
    assert record["status"] is None and record["sse"] is False


def test_a_secret_argument_mirrored_into_a_header_is_masked_there_too():
    """A 2026-07-28 tool's ``x-mcp-header`` parameter named as a secret (``api_key``) is masked
    in the body; its ``Mcp-Param-Api-Key`` header carries the same value, masked as well."""
    from mcp_ref.inspector.conversation import Conversation

    server = Server("keyed")

    @server.tool(headers={"api_key": "Api-Key"})
    def fetch(api_key: str) -> str:
        """Fetch with a key."""
        return "fetched"

    conversation = Conversation(http=True)
    with serving(server) as served:
        with Client.http(
            served.mcp, era="modern", http_trace=conversation.http_trace, timeout=WAIT
        ) as client:
            assert client.call_tool("fetch", {"api_key": "k3y-s3cret"}).text == "fetched"
    records = conversation.records(limit=1000)
    calls = [r for r in records if r["kind"] == "http" and ["Mcp-Name", "fetch"] in r["headers"]]
    assert any(["Mcp-Param-Api-Key", MASK] in r["headers"] for r in calls)
    assert "k3y-s3cret" not in str(records)
    assert "k3y-s3cret" not in conversation.export_jsonl()


def test_a_secret_argument_under_a_header_name_of_its_own_is_masked_there_too():
    """The header's name is the tool's choice: ``password`` declared ``x-mcp-header: Pw`` travels
    as ``Mcp-Param-Pw``, plain or Base64-encoded (a value with spaces at its ends, or not ASCII);
    its value is the one the body masks, so the header is masked too, in the records, in the
    header list and among the decoded Mcp headers, and in the export."""
    from mcp_ref.inspector.conversation import Conversation

    server = Server("login")

    @server.tool(headers={"password": "Pw", "user": "User"})
    def login(user: str, password: str) -> str:
        """Log in."""
        return f"hello {user}"

    conversation = Conversation(http=True)
    secrets = ("hunter2hunter2", " padded secret ", "pässwörd-geheim")
    with serving(server) as served:
        with Client.http(
            served.mcp, era="modern", http_trace=conversation.http_trace, timeout=WAIT
        ) as client:
            for secret in secrets:
                assert client.call_tool("login", {"user": "ada", "password": secret}).text == (
                    "hello ada"
                )
    records = conversation.records(limit=1000)
    calls = [
        r for r in records if r["kind"] == "http" and ["Mcp-Param-User", "ada"] in r["headers"]
    ]
    assert len(calls) == len(secrets)  # (the first call, before the tool was listed, has none)
    for call in calls:
        assert ["Mcp-Param-Pw", MASK] in call["headers"]
        assert {"name": "Mcp-Param-Pw", "raw": MASK, "decoded": MASK} in call["mcp_headers"]
    exported = conversation.export_jsonl()
    encoded = [base64.b64encode(s.encode()).decode() for s in secrets[1:]]
    for text in (*secrets, *encoded, "hunter2"):
        assert text not in str(records) and text not in exported


def test_a_param_header_is_masked_by_the_value_it_carries_as_sent_or_decoded():
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "t",
            "arguments": {"auth": {"db_password": "é-s3cret"}, "n": "x", "pin": {"token": 4711}},
        },
    }
    encoded = "=?base64?" + base64.b64encode("é-s3cret".encode()).decode() + "?="
    seen = HttpRequestSeen(
        1,
        "POST",
        "http://127.0.0.1/mcp",
        (
            ("Mcp-Param-Db", encoded),
            ("Mcp-Param-N", "x"),
            ("Mcp-Param-Bad", "=?base64?!?="),
            ("Mcp-Param-Pin", "4711"),  # an integer travels as its decimal text
        ),
        json.dumps(body).encode(),
    )
    headers = http_record(seen)["headers"]
    assert headers == [
        ["Mcp-Param-Db", MASK],
        ["Mcp-Param-N", "x"],
        ["Mcp-Param-Bad", "=?base64?!?="],
        ["Mcp-Param-Pin", MASK],
    ]


def test_a_long_body_is_cut_and_an_sse_response_marked():
    body = b'{"x": "' + b"a" * (MAX_BODY_TEXT + 10) + b'"}'
    record = http_record(
        HttpResponseSeen(2, 200, "OK", (("Content-Type", "application/json"),), body)
    )
    assert record["truncated"] is True and len(record["body"]) == MAX_BODY_TEXT
    stream = http_record(
        HttpResponseSeen(3, 200, "OK", (("Content-Type", "text/event-stream"),), None)
    )
    assert stream["sse"] is True and stream["body"] is None and stream["phase"] == "response"
    event = sse_record(SseEventSeen(3, "e-1", "message", '{"refresh_token": "rt"}', 500))
    assert event == {
        "kind": "sse",
        "exchange": 3,
        "event_id": "e-1",
        "event": "message",
        "data": f'{{"refresh_token": "{MASK}"}}',
        "truncated": False,
        "retry": 500,
    }


def test_a_long_body_of_no_known_shape_is_cut_before_it_is_masked(monkeypatch):
    """Free text (an HTML error page, an event's data that is no JSON) is cut to what is shown
    before it is masked, the cut's last word masked as a secret's start; JSON is masked whole
    (its secret key's value lies past the cut), then cut."""
    from mcp_ref.inspector import http_view
    from mcp_ref.inspector.masking import mask_free_text

    read: list[int] = []

    def measured(text: str, cut_short: bool = False) -> str:
        read.append(len(text))
        return mask_free_text(text, cut_short)

    monkeypatch.setattr(http_view, "mask_free_text", measured, raising=False)
    page = "<p>" + "x" * (MAX_BODY_TEXT - 20) + " Bearer eyJhbGciOiJ" + "z" * MAX_BODY_TEXT
    seen = HttpResponseSeen(1, 500, "Error", (("Content-Type", "text/html"),), page.encode())
    record = http_record(seen)
    assert read == [MAX_BODY_TEXT]
    assert record["truncated"] is True
    assert record["body"].endswith(f"Bearer {MASK}") and "eyJ" not in record["body"]
    event = sse_record(SseEventSeen(1, None, "message", page, None))
    assert event["truncated"] is True and event["data"].endswith(f"Bearer {MASK}")
    data = json.dumps({"x": "a" * MAX_BODY_TEXT, "password": "p4ss"})
    event = sse_record(SseEventSeen(1, None, "message", data, None))
    assert event["truncated"] is True and "p4ss" not in event["data"]


def test_a_long_header_value_is_cut_as_a_body_is_and_marked():
    long_value = "a" * (MAX_BODY_TEXT + 10)
    headers = (("X-Long", long_value), ("Mcp-Session-Id", "s" * (MAX_BODY_TEXT + 1)), ("X-S", "ok"))
    record = http_record(HttpResponseSeen(4, 200, "OK", headers, b"{}"))
    assert record["headers"] == [
        ["X-Long", "a" * MAX_BODY_TEXT + "…"],
        ["Mcp-Session-Id", "s" * MAX_BODY_TEXT + "…"],
        ["X-S", "ok"],
    ]
    assert record["mcp_headers"][0]["raw"] == "s" * MAX_BODY_TEXT + "…"


def test_mcp_headers_lists_only_the_protocol_s_own():
    found = mcp_headers(
        [
            ("Mcp-Session-Id", "s1"),
            ("Accept", "x"),
            ("Mcp-Method", "tools/list"),
            ("Mcp-Other", "o"),
        ]
    )
    assert [h["name"] for h in found] == ["Mcp-Session-Id", "Mcp-Method", "Mcp-Other"]
