"""The Streamable HTTP server (McpWsgiApp on the stdlib WsgiServer), over real sockets on 127.0.0.1,
driven with raw HTTP: every status code and header of issue 3 §1, the session lifecycle, the
standalone stream, and resumption with Last-Event-ID.  Every JSON-RPC message either way is
validated against the official schema of the negotiated revision (RawSession's WireChecker); the
bodies of HTTP errors, which answer no request, against 2025-11-25's JSONRPCErrorResponse."""

from __future__ import annotations

import http.client
import json
import math
import statistics
import threading
import time

import pytest
import requests
from conftest import WAIT, WireChecker, run_threads, schema_errors
from http_fixtures import (
    ACCEPT_BOTH,
    JSON_CT,
    LATEST,
    TIMEOUT,
    RawSession,
    SseReader,
    error_body_errors,
    handshake_http_client,  # noqa: F401 - fixture
    init_params,
    is_answer,
    notification,
    raw_session,  # noqa: F401 - fixture
    request,
    serve,  # noqa: F401 - fixture
)
from redis_fixture import redis_server, redis_url  # noqa: F401 - fixtures
from test_http_state import Clock

from mcp_ref import Context, Server
from mcp_ref.http.server.events import MemoryEventStore
from mcp_ref.http.server.sessions import MemorySessionTable


def assert_http_error(response, status: int, code: int | None = None) -> dict:
    """``response`` is HTTP ``status`` with a schema-valid JSON-RPC error body; returns the body."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["Content-Type"].split(";")[0] == JSON_CT
    body = response.json()
    assert not error_body_errors(body), error_body_errors(body)
    if code is not None:
        assert body["error"]["code"] == code, body
    return body


def tool(name: str, arguments=None, progress_token=None) -> dict:
    params = {"name": name, "arguments": arguments or {}}
    if progress_token is not None:
        params["_meta"] = {"progressToken": progress_token}
    return params


def echo_ok(session: RawSession, text: str = "still here") -> None:
    """The session still answers a plain call with JSON."""
    request_id, response = session.call("tools/call", tool("echo", {"text": text}))
    answer, before = session.result(response, request_id)
    assert answer["result"]["content"] == [{"type": "text", "text": text}] and not before


def event_number(event_id: str) -> int:
    """The counter part of this server's event ids (``<stream>.<n>``), which grows within a session."""
    return int(event_id.rpartition(".")[2])


# -- initialize and session ids --------------------------------------------------------------


def test_initialize_answers_json_with_a_session_id(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    response = session.initialize()
    assert response.status_code == 200
    assert response.headers["Content-Type"] == JSON_CT
    assert int(response.headers["Content-Length"]) == len(response.content)
    sid = response.headers["Mcp-Session-Id"]
    # basic/transports §Session Management: "MUST only contain visible ASCII characters (0x21 to 0x7E)".
    assert sid and all(0x21 <= ord(c) <= 0x7E for c in sid), sid
    assert session.version == LATEST
    assert sid in srv.app.sessions
    echo_ok(session)


def test_session_ids_are_unpredictable(serve, raw_session):
    srv = serve()
    ids = []
    for _ in range(8):
        session = raw_session(srv.mcp)
        session.initialize(initialized=False)
        ids.append(session.session_id)
    assert len(set(ids)) == len(ids), ids
    # At least 128 bits: estimate the alphabet the ids are drawn from (hex, base64url, or any visible ASCII).
    chars = set("".join(ids))
    if chars <= set("0123456789abcdef") or chars <= set("0123456789ABCDEF"):
        alphabet = 16
    elif chars <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"):
        alphabet = 64
    else:
        alphabet = 94
    bits = min(len(i) for i in ids) * math.log2(alphabet)
    assert bits >= 128, (ids, bits)
    # Not a counter: no two ids share a long common prefix.
    for a in ids:
        for b in ids:
            if a != b:
                assert a[:8] != b[:8], (a, b)


def test_request_without_session_id_is_400(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    _, response = session.call("tools/list", session=False)
    assert_http_error(response, 400)
    echo_ok(session)


def test_unknown_session_is_404(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    real = session.session_id
    session.session_id = "no-such-session-" + "x" * 16
    assert_http_error(session.call("tools/list")[1], 404)
    assert_http_error(session.get(), 404)
    assert_http_error(session.delete(), 404)
    session.session_id = real
    echo_ok(session)


def test_delete_ends_the_session(serve, raw_session):
    srv = serve()
    session, other = raw_session(srv.mcp), raw_session(srv.mcp)
    session.initialize()
    other.initialize()
    response = session.delete()
    assert response.status_code == 200 and response.content == b""
    assert session.session_id not in srv.app.sessions
    assert_http_error(session.call("tools/list")[1], 404)
    assert_http_error(session.delete(), 404)
    assert_http_error(session.get(), 404)
    echo_ok(other)  # the other session is untouched


def test_delete_ends_an_open_standalone_stream(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    stream = SseReader(session.get())
    first = stream.next()  # the priming event: the stream is attached
    assert first["data"] == "" and first["id"]
    assert session.delete().status_code == 200
    assert stream.next() is None  # the stream ended with the session (bounded by the read timeout)


def test_notifications_and_responses_are_202_with_no_body(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize(initialized=False)
    response = session.post(notification("notifications/initialized"))
    assert response.status_code == 202 and response.content == b""
    response = session.post(notification("notifications/roots/list_changed"))
    assert response.status_code == 202 and response.content == b""
    echo_ok(session)  # (a response answered 202: see test_sampling_round_trip_raw)


def test_sampling_round_trip_raw(serve, raw_session):
    """The server's sampling request travels on the POST's SSE stream; the client's answer is
    POSTed (202, no body); the tool's result then ends the stream."""
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize(capabilities={"sampling": {}})
    request_id, response = session.call(
        "tools/call", tool("ask_llm", {"question": "2+2?"}), stream=True
    )
    assert response.status_code == 200 and response.headers["Content-Type"] == "text/event-stream"
    reader = SseReader(response)
    asked = None
    while asked is None:
        event = reader.next()
        assert event is not None, "the stream ended before the sampling request"
        if event["data"]:
            session.checker("<--", event["data"].encode())
            message = json.loads(event["data"])
            if message.get("method") == "sampling/createMessage":
                asked = message
    reply = {
        "jsonrpc": "2.0",
        "id": asked["id"],
        "result": {
            "role": "assistant",
            "content": {"type": "text", "text": "four"},
            "model": "test-model",
        },
    }
    answer_post = session.post(reply)
    assert answer_post.status_code == 202 and answer_post.content == b""
    rest = [m for _, m in reader.messages(request_id, session.checker)]
    assert is_answer(rest[-1], request_id)
    assert rest[-1]["result"]["content"][0]["text"] == "test-model says: four"
    assert session.checker.received("sampling/createMessage")


# -- protocol version header ------------------------------------------------------------------


def test_protocol_version_header_unsupported_or_not_negotiated_is_400_absent_is_accepted(
    serve, raw_session
):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    response = session.call("tools/list", headers={"MCP-Protocol-Version": "1999-01-01"})[1]
    body = assert_http_error(response, 400)
    assert "1999-01-01" in body["error"]["message"]
    request_id, response = session.call(
        "tools/list", version=False
    )  # absent: 2025-03-26 is assumed
    answer, _ = session.result(response, request_id)
    assert answer["result"]["tools"]
    request_id, response = session.call("ping", headers={"MCP-Protocol-Version": LATEST})
    assert session.result(response, request_id)[0]["result"] == {}
    # A supported version that is not the session's: refused, naming both (issue 7, class 8).
    for version in ("2025-03-26", "2025-06-18"):
        response = session.call("ping", headers={"MCP-Protocol-Version": version})[1]
        body = assert_http_error(response, 400)
        assert version in body["error"]["message"] and LATEST in body["error"]["message"]
    request_id, response = session.call("ping")  # and the session goes on
    assert session.result(response, request_id)[0]["result"] == {}


# -- content negotiation, media types, limits, malformed input --------------------------------


def test_wrong_content_type_is_415(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    for content_type in ("text/plain", None, "application/x-www-form-urlencoded"):
        response = session.call("ping", headers={"Content-Type": content_type})[1]
        assert_http_error(response, 415)
    echo_ok(session)


@pytest.mark.parametrize("accept", [None, "application/json", "text/event-stream", "text/html"])
def test_post_accept_missing_a_type_is_406(serve, raw_session, accept):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    assert_http_error(session.call("ping", accept=accept)[1], 406)
    # Also on initialize itself.
    fresh = raw_session(srv.mcp)
    assert_http_error(fresh.post(request("initialize", init_params()), accept=accept), 406)
    echo_ok(session)


@pytest.mark.parametrize("accept", [None, "application/json"])
def test_get_accept_missing_event_stream_is_406(serve, raw_session, accept):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    assert_http_error(session.get(accept=accept), 406)


def test_body_over_max_body_size_is_413(serve, raw_session):
    srv = serve(max_body_size=2000)
    session = raw_session(srv.mcp)
    session.initialize()
    big = request("tools/call", tool("echo", {"text": "x" * 3000}), 99)
    assert_http_error(session.post(big), 413)
    small = request("tools/call", tool("echo", {"text": "x" * 1000}), 100)
    assert session.result(session.post(small), 100)[0]["result"]["content"][0]["text"] == "x" * 1000
    # Over the limit with the headers of a raw exchange: Content-Length alone decides, before reading.
    connection = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=WAIT)
    try:
        body = json.dumps(big).encode()
        connection.request(
            "POST",
            "/mcp",
            body=body,
            headers={
                "Content-Type": JSON_CT,
                "Accept": ACCEPT_BOTH,
                "Mcp-Session-Id": session.session_id,
            },
        )
        answer = connection.getresponse()
        assert answer.status == 413
        assert not error_body_errors(json.loads(answer.read()))
    finally:
        connection.close()


def test_malformed_json_is_400_parse_error(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    for data in (b'{"jsonrpc": "2.0", "id": 1, "method": ', b"\xff\xfe not json", b""):
        body = assert_http_error(session.post(data), 400, code=-32700)
        assert "id" not in body or body["id"] is None
    # Also before any session exists.
    assert_http_error(raw_session(srv.mcp).post(b"{nope", session=False), 400, code=-32700)
    # Valid JSON that is not a JSON-RPC message: an invalid request.
    assert_http_error(session.post(b'{"hello": "world"}'), 400, code=-32600)
    echo_ok(session)


def test_a_number_too_long_to_read_is_a_parse_error_in_plain_words(serve, raw_session):
    """An id of 5,000 digits is past what Python's int() reads (sys.get_int_max_str_digits): the
    400 says so plainly.  It used to pass Python's own message to the peer ("Exceeds the limit
    (4300 digits) for integer string conversion ... use sys.set_int_max_str_digits()"): no
    internals to the peer.  A syntax error still says what is wrong, and where."""
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    data = b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"tools/list"}'
    body = assert_http_error(session.post(data), 400, code=-32700)
    assert body["error"]["message"] == "Parse error: a number with too many digits"
    body = assert_http_error(session.post(b'{"jsonrpc": "2.0", "id": 1,'), 400, code=-32700)
    assert body["error"]["message"].startswith("Parse error: Expecting property name")
    assert "(char 27)" in body["error"]["message"]
    echo_ok(session)


def test_a_request_nested_too_deep_is_400_naming_its_id(serve, raw_session):
    """JSON-RPC 2.0 §5.1: the id is null only "If there was an error in detecting the id"; one
    read from the top level of a request too deep to parse is the error's."""
    session = raw_session(serve().mcp)
    session.initialize()
    params = b'{"a":' * 70 + b"1" + b"}" * 70
    data = b'{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":' + params + b"}"
    body = assert_http_error(session.post(data), 400, code=-32600)
    assert body["id"] == "deep"
    assert "nested deeper than the limit of 64" in body["error"]["message"]
    echo_ok(session)


# -- DNS rebinding: Host and Origin ------------------------------------------------------------


def test_host_not_allowed_is_403(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    for host in ("evil.example", f"evil.example:{srv.port}", "127.0.0.1.evil.example"):
        response = session.post(request("initialize", init_params()), headers={"Host": host})
        assert_http_error(response, 403)
    for host in (f"localhost:{srv.port}", f"127.0.0.1:{srv.port}", "localhost"):
        fresh = raw_session(srv.mcp)
        response = fresh.post(request("initialize", init_params()), headers={"Host": host})
        assert response.status_code == 200, (host, response.text)
        fresh.checker("<--", response.content)


def test_bad_origin_is_403(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    for origin in ("http://evil.example", "https://attacker.test:8443", "null"):
        assert_http_error(session.call("ping", headers={"Origin": origin})[1], 403)
    for origin in (f"http://localhost:{srv.port}", "http://127.0.0.1:3000"):
        request_id, response = session.call("ping", headers={"Origin": origin})
        assert session.result(response, request_id)[0]["result"] == {}


def test_allowed_hosts_and_origins_widen_the_check(serve, raw_session):
    srv = serve(
        allowed_hosts=["mcp.example.com", "127.0.0.1"], allowed_origins=["https://app.example.com"]
    )
    session = raw_session(srv.mcp)
    response = session.post(
        request("initialize", init_params(), 1), headers={"Host": "mcp.example.com"}
    )
    assert response.status_code == 200, response.text
    session.checker("<--", response.content)
    session.session_id = response.headers["Mcp-Session-Id"]
    session.version = response.json()["result"]["protocolVersion"]
    headers = {"Host": "mcp.example.com", "Origin": "https://app.example.com"}
    assert (
        session.post(notification("notifications/initialized"), headers=headers).status_code == 202
    )
    request_id, response = session.call("ping", headers=headers)
    assert session.result(response, request_id)[0]["result"] == {}
    assert_http_error(session.call("ping", headers={"Host": "other.example.com"})[1], 403)
    assert_http_error(session.call("ping", headers={"Origin": "https://evil.example"})[1], 403)
    # "*" allows anything.
    open_srv = serve(allowed_hosts=["*"], allowed_origins=["*"])
    anyone = raw_session(open_srv.mcp)
    response = anyone.post(
        request("initialize", init_params()),
        headers={"Host": "whatever.test", "Origin": "https://x.test"},
    )
    assert response.status_code == 200, response.text
    anyone.checker("<--", response.content)


# -- paths and methods --------------------------------------------------------------------------


def test_unknown_path_is_404_and_put_is_405_with_allow(serve, raw_session):
    srv = serve()
    for path in ("/", "/mcp/", "/nope", "/mcpx"):
        response = requests.post(
            srv.url + path, json=request("ping"), headers={"Accept": ACCEPT_BOTH}, timeout=TIMEOUT
        )
        assert_http_error(response, 404)
    response = requests.get(srv.url + "/nope", timeout=TIMEOUT)
    assert_http_error(response, 404)
    for method in ("PUT", "PATCH"):
        response = requests.request(method, srv.mcp, json=request("ping"), timeout=TIMEOUT)
        assert_http_error(response, 405)
        allowed = {m.strip() for m in response.headers["Allow"].split(",")}
        assert allowed == {"GET", "POST", "DELETE"}, response.headers["Allow"]


# -- reply types --------------------------------------------------------------------------------


def test_plain_call_is_json_streaming_call_is_sse_with_priming_event(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    request_id, response = session.call("tools/call", tool("add", {"a": 2, "b": 3}))
    assert response.headers["Content-Type"] == JSON_CT
    answer, _ = session.result(response, request_id)
    assert answer["result"]["content"][0]["text"] in ("5", "5.0")

    request_id, response = session.call(
        "tools/call", tool("count_slowly", {"steps": 3, "delay": 0.01}, "tok"), stream=True
    )
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    assert "no-cache" in response.headers["Cache-Control"]
    assert "Content-Length" not in response.headers
    reader = SseReader(response)
    priming = reader.next()
    # 2025-11-25 basic/transports: an event ID and an empty data field, and a retry hint.
    assert priming["id"] and priming["data"] == "" and priming["retry"] == str(srv.app.retry_ms), (
        priming
    )
    messages = reader.messages(request_id, session.checker)
    progress = [
        m["params"]["progress"] for _, m in messages if m.get("method") == "notifications/progress"
    ]
    assert progress == [1, 2, 3]
    assert all(m["params"]["progressToken"] == "tok" for _, m in messages[:-1])
    assert is_answer(messages[-1][1], request_id)
    assert messages[-1][1]["result"]["content"][0]["text"] == "counted to 3"
    ids = [priming["id"]] + [eid for eid, _ in messages]
    assert all(ids) and len(set(ids)) == len(ids)
    assert reader.next() is None  # the stream ends after the answer

    # Logs sent while handling a request also make it a stream.
    request_id, response = session.call("tools/call", tool("log_levels"), stream=True)
    assert response.headers["Content-Type"] == "text/event-stream"
    answer, before = session.result(response, request_id)
    assert [m["params"]["level"] for m in before] == ["debug", "info", "warning", "error"]


def test_no_priming_event_before_2025_11_25(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize("2025-06-18")
    request_id, response = session.call(
        "tools/call", tool("count_slowly", {"steps": 2, "delay": 0.01}, 7), stream=True
    )
    reader = SseReader(response)
    first = reader.next()
    assert first["data"], first  # the first event already carries a message
    session.checker("<--", first["data"].encode())
    rest = reader.messages(request_id, session.checker)
    assert is_answer(rest[-1][1], request_id)


def test_json_response_true_forces_json(serve, raw_session):
    srv = serve(json_response=True)
    session = raw_session(srv.mcp)
    session.initialize()
    standalone = SseReader(session.get())
    assert standalone.next()["data"] == ""  # priming: attached
    request_id, response = session.call(
        "tools/call", tool("count_slowly", {"steps": 2, "delay": 0.01}, "p")
    )
    assert response.headers["Content-Type"] == JSON_CT
    answer, _ = session.result(response, request_id)
    assert answer["result"]["content"][0]["text"] == "counted to 2"
    # What is not the answer went to the standalone stream, once each.
    progress = []
    while len(progress) < 2:
        event = standalone.next()
        assert event is not None
        if event["data"]:
            session.checker("<--", event["data"].encode())
            progress.append(json.loads(event["data"])["params"]["progress"])
    assert progress == [1, 2]
    standalone.close()


def test_json_response_false_always_streams(serve, raw_session):
    srv = serve(json_response=False)
    session = raw_session(srv.mcp)
    session.initialize()
    request_id, response = session.call("tools/call", tool("echo", {"text": "sse"}), stream=True)
    assert response.headers["Content-Type"] == "text/event-stream"
    answer, before = session.result(response, request_id)
    assert answer["result"]["content"][0]["text"] == "sse" and before == []


# -- batches --------------------------------------------------------------------------------------


def test_batch_at_2025_03_26_is_answered_as_an_array(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize("2025-03-26")
    batch = [
        request("tools/call", tool("echo", {"text": "a"}), 10),
        request("tools/call", tool("echo", {"text": "b"}), 11),
        notification("notifications/roots/list_changed"),
    ]
    response = session.post(batch)
    assert response.status_code == 200
    body = session.receive_json(response)
    assert isinstance(body, list)
    assert not schema_errors("2025-03-26", "JSONRPCBatchResponse", body)
    assert {m["id"]: m["result"]["content"][0]["text"] for m in body} == {10: "a", 11: "b"}
    # Only notifications: 202.
    response = session.post([notification("notifications/roots/list_changed")])
    assert response.status_code == 202 and response.content == b""


@pytest.mark.parametrize("version", ["2025-06-18", LATEST])
def test_batch_after_2025_03_26_is_400(serve, raw_session, version):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize(version)
    response = session.post([request("ping", None, 1), request("ping", None, 2)])
    assert_http_error(response, 400)
    echo_ok(session)


def test_initialize_in_a_batch_is_400(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    response = session.post([request("initialize", init_params("2025-03-26"))], check=False)
    assert_http_error(response, 400)


# -- session cap and expiry -----------------------------------------------------------------------


def test_session_cap_is_503(serve, raw_session):
    srv = serve(max_sessions=2, max_sessions_per_client=None)  # one address: the table's cap
    first, second, third = raw_session(srv.mcp), raw_session(srv.mcp), raw_session(srv.mcp)
    first.initialize()
    second.initialize()
    response = third.post(request("initialize", init_params()), version=False)
    assert_http_error(response, 503)
    assert response.headers.get("Retry-After")
    echo_ok(first)  # the sessions in place keep working
    assert first.delete().status_code == 200
    third.initialize()  # room again
    echo_ok(third)


def test_idle_session_expires_to_404(serve, raw_session):
    # The table's clock is the test's: a busy machine taking longer than the idle timeout between
    # two requests must not expire a session the test still means to use.
    idle = 0.4
    clock = Clock()
    srv = serve(session_table=MemorySessionTable(idle_timeout=idle, clock=clock))
    session, watched = raw_session(srv.mcp), raw_session(srv.mcp)
    session.initialize()
    watched.initialize()
    echo_ok(session)  # well within the idle timeout
    standalone = SseReader(watched.get())  # a session with its GET stream open is not idle
    assert standalone.next()["data"] == ""
    clock.now += idle * 2.5
    assert_http_error(session.call("ping")[1], 404)
    assert session.session_id not in srv.app.sessions
    echo_ok(watched)
    standalone.close()


# -- stateless mode -------------------------------------------------------------------------------


def test_stateless_mode(serve, raw_session):
    srv = serve(stateless=True)
    session = raw_session(srv.mcp)
    response = session.initialize()
    assert "Mcp-Session-Id" not in response.headers
    assert session.session_id is None and srv.app.sessions == {}
    # Any request is answered without initialize, on a fresh connection each time.
    for _ in range(3):
        cold = raw_session(srv.mcp, checker=session.checker)
        cold.version = LATEST
        cold.http.headers["Connection"] = "close"
        request_id, response = cold.call("tools/call", tool("echo", {"text": "cold"}))
        assert cold.result(response, request_id)[0]["result"]["content"][0]["text"] == "cold"
    # Progress still streams on the POST's own stream.
    request_id, response = session.call(
        "tools/call", tool("count_slowly", {"steps": 2, "delay": 0.01}, "s"), stream=True
    )
    answer, before = session.result(response, request_id)
    assert [m["params"]["progress"] for m in before] == [1, 2]
    assert answer["result"]["content"][0]["text"] == "counted to 2"
    for response in (session.get(), session.delete()):
        assert_http_error(response, 405)
        assert "POST" in response.headers["Allow"]
    assert srv.app.sessions == {}


# -- the standalone stream, and never the same message on two streams -----------------------------


def read_until(reader: SseReader, checker: WireChecker, predicate) -> list[tuple[str, dict]]:
    """(event id, message) of each data event until one matching ``predicate`` (included)."""
    out = []
    while True:
        event = reader.next()
        assert event is not None, f"the stream ended; got {out}"
        if event["data"]:
            checker("<--", event["data"].encode())
            message = json.loads(event["data"])
            out.append((event["id"], message))
            if predicate(message):
                return out


def method_is(name):
    return lambda m: m.get("method") == name


def test_standalone_stream_carries_server_notifications_once(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    response = session.get()
    assert response.status_code == 200 and response.headers["Content-Type"] == "text/event-stream"
    standalone = SseReader(response)
    assert standalone.next()["data"] == ""
    request_id, response = session.call("resources/subscribe", {"uri": "demo://counter"})
    assert session.result(response, request_id)[0]["result"] == {}

    # A call that streams progress on its POST, while the standalone stream is open.
    request_id, response = session.call(
        "tools/call", tool("count_slowly", {"steps": 3, "delay": 0.01}, "x"), stream=True
    )
    answer, before = session.result(response, request_id)
    assert [m["params"]["progress"] for m in before] == [1, 2, 3]

    # Server-initiated notifications: list_changed (add_tool) and resources/updated (bump_counter).
    request_id, response = session.call("tools/call", tool("add_tool", {"name": "fresh_tool"}))
    answer, on_post = session.result(response, request_id)
    assert on_post == [] and answer["result"]["content"][0]["text"] == "added fresh_tool"
    got = read_until(standalone, session.checker, method_is("notifications/tools/list_changed"))
    # Nothing that belonged to the POST (progress, answers) reached the standalone stream.
    assert [m.get("method") for _, m in got] == ["notifications/tools/list_changed"], got

    request_id, response = session.call("tools/call", tool("bump_counter"))
    answer, on_post = session.result(response, request_id)
    assert all(m.get("method") != "notifications/resources/updated" for m in on_post)
    got = read_until(standalone, session.checker, method_is("notifications/resources/updated"))
    assert [m["params"]["uri"] for _, m in got] == ["demo://counter"]
    standalone.close()


def test_a_second_get_takes_the_standalone_stream_over(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    old = SseReader(session.get())
    assert old.next()["data"] == ""
    new = SseReader(session.get())
    assert new.next()["data"] == ""
    assert old.next() is None  # superseded: it ends rather than share messages
    request_id, response = session.call("tools/call", tool("add_tool", {"name": "t2"}))
    session.result(response, request_id)
    got = read_until(new, session.checker, method_is("notifications/tools/list_changed"))
    assert len(got) == 1
    new.close()


# -- resumption -----------------------------------------------------------------------------------


def test_post_stream_resumes_after_a_dropped_connection(serve, raw_session):
    """Read part of a slow call's SSE stream, drop the connection, and GET with Last-Event-ID:
    the rest of the events, then the answer, exactly once, with ids strictly after the given one."""
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    steps = 8
    request_id, response = session.call(
        "tools/call", tool("count_slowly", {"steps": steps, "delay": 0.05}, "r"), stream=True
    )
    reader = SseReader(response)
    priming = reader.next()
    assert priming["data"] == "" and priming["id"]
    seen = read_until(reader, session.checker, lambda m: m.get("params", {}).get("progress") == 2)
    last_id = seen[-1][0]
    response.close()  # drop the connection mid-stream

    resumed = session.get(headers={"Last-Event-ID": last_id})
    assert resumed.status_code == 200 and resumed.headers["Content-Type"] == "text/event-stream"
    rest = SseReader(resumed).messages(None, session.checker)  # to the end of the body
    assert rest and is_answer(rest[-1][1], request_id), rest
    assert rest[-1][1]["result"]["content"][0]["text"] == f"counted to {steps}"
    ids = [eid for eid, _ in rest]
    assert all(eid and eid.rpartition(".")[0] == last_id.rpartition(".")[0] for eid in ids), ids
    numbers = [event_number(eid) for eid in ids]
    assert (
        numbers == sorted(numbers)
        and numbers[0] > event_number(last_id)
        and len(set(numbers)) == len(numbers)
    )
    progress = [
        m["params"]["progress"]
        for _, m in seen + rest[:-1]
        if m.get("method") == "notifications/progress"
    ]
    assert progress == list(range(1, steps + 1))  # nothing lost, nothing duplicated
    assert [m for _, m in rest].count(rest[-1][1]) == 1


def test_post_stream_resumes_after_it_ended(serve, raw_session):
    """The stream finished while the client was away: GET with Last-Event-ID replays what it missed."""
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    request_id, response = session.call(
        "tools/call", tool("count_slowly", {"steps": 4, "delay": 0.01}, "e"), stream=True
    )
    reader = SseReader(response)
    priming = reader.next()
    all_events = reader.messages(
        request_id, session.checker
    )  # read everything, but pretend we saw only priming
    response.close()
    replay = session.get(headers={"Last-Event-ID": priming["id"]})
    assert replay.status_code == 200
    rest = SseReader(replay).messages(None, session.checker)  # to the end of the body
    assert [m for _, m in rest] == [m for _, m in all_events]
    assert [eid for eid, _ in rest] == [eid for eid, _ in all_events]


def test_standalone_stream_resumes_after_a_dropped_connection(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    request_id, response = session.call("resources/subscribe", {"uri": "demo://counter"})
    session.result(response, request_id)
    standalone_response = session.get()
    standalone = SseReader(standalone_response)
    assert standalone.next()["data"] == ""

    def bump() -> int:
        request_id, response = session.call("tools/call", tool("bump_counter"))
        return int(session.result(response, request_id)[0]["result"]["content"][0]["text"])

    first = bump()
    got = read_until(standalone, session.checker, method_is("notifications/resources/updated"))
    last_id = got[-1][0]
    standalone_response.close()  # drop it
    missed = [bump() for _ in range(3)]  # while nobody listens
    assert missed == [first + 1, first + 2, first + 3]

    resumed = SseReader(session.get(headers={"Last-Event-ID": last_id}))
    events = read_until(resumed, session.checker, method_is("notifications/resources/updated"))
    while len([1 for _, m in events if m.get("method") == "notifications/resources/updated"]) < 3:
        events += read_until(resumed, session.checker, method_is("notifications/resources/updated"))
    # Then a marker, sent after resuming: anything duplicated would show up before it.
    request_id, response = session.call("tools/call", tool("add_tool", {"name": "marker"}))
    session.result(response, request_id)
    events += read_until(resumed, session.checker, method_is("notifications/tools/list_changed"))
    methods = [m.get("method") for _, m in events]
    assert methods == ["notifications/resources/updated"] * 3 + [
        "notifications/tools/list_changed"
    ], methods
    numbers = [event_number(eid) for eid, _ in events]
    assert (
        numbers == sorted(numbers)
        and len(set(numbers)) == len(numbers)
        and numbers[0] > event_number(last_id)
    )
    resumed.close()


class ResumedMidWrite(MemoryEventStore):
    """Holds the first message holding ``marker`` between its being taken from its stream and its
    being stored, until a GET resuming the stream has read what was stored (its second
    ``replay_after``: the one made as it takes the stream over).  Held only outside the stream's
    lock (``lock_of(session_id, stream_id)``): inside it, that GET cannot take the stream over
    meanwhile."""

    def __init__(self, marker: bytes):
        super().__init__()
        self.marker = marker
        self.writing = threading.Event()
        self.resumed = threading.Event()
        self.replays = 0
        self.lock_of = None

    def replay_after(self, session_id: str, event_id: str):
        found = super().replay_after(session_id, event_id)
        self.replays += 1
        if self.replays == 2:
            self.resumed.set()
        return found

    def store(self, session_id: str, stream_id: str, data: bytes) -> str:
        if self.marker in data and not self.writing.is_set():
            self.writing.set()
            if not self.lock_of(session_id, stream_id)._is_owned():
                self.resumed.wait(WAIT)
        return super().store(session_id, stream_id, data)


def test_a_message_being_written_as_the_stream_is_resumed_reaches_the_resuming_get(
    serve, raw_session
):
    """A GET with Last-Event-ID took the standalone stream over just as its old response had taken
    a message but not yet stored it: the GET's replay missed it, and its queue no longer held it,
    so it went only to the old connection (the one the client had lost).  Now a message is taken
    and stored in one step: the resuming GET replays it."""
    store = ResumedMidWrite(b"list_changed")
    srv = serve(event_store=store)
    session = raw_session(srv.mcp)
    session.initialize()
    caller = raw_session(srv.mcp)
    caller.session_id = session.session_id
    caller.version = session.version
    old = SseReader(session.get())
    priming = old.next()
    store.lock_of = lambda session_id, _: srv.app.sessions[session_id].standalone.cond

    def add_first() -> None:
        request_id, response = caller.call("tools/call", tool("add_tool", {"name": "first"}))
        caller.result(response, request_id)

    adding = threading.Thread(target=add_first)
    adding.start()
    assert store.writing.wait(WAIT)  # the old response has taken the notification
    resumed = SseReader(session.get(headers={"Last-Event-ID": priming["id"]}))
    adding.join(WAIT)
    request_id, response = session.call("tools/call", tool("add_tool", {"name": "second"}))
    session.result(response, request_id)
    got = read_until(resumed, session.checker, method_is("notifications/tools/list_changed"))
    got += read_until(resumed, session.checker, method_is("notifications/tools/list_changed"))
    assert [m["method"] for _, m in got] == ["notifications/tools/list_changed"] * 2, got
    resumed.close()
    old.close()


def test_a_posts_first_message_being_written_as_its_stream_is_resumed_reaches_the_resuming_get(
    serve, raw_session
):
    """A POST's stream (its handler on the shared pool) sent its priming event, then its first
    message, which its response had taken from the stream but not yet stored; a GET resuming from
    the priming event just then replayed nothing and took the stream over, and the first message
    went only to the old connection (the one the client had lost).  Now the first message is
    taken and stored in one step, under the stream's lock, as every later one is: the resuming
    GET replays it."""
    release = threading.Event()
    store = ResumedMidWrite(b"progress")
    srv = serve(forgetful_server(release), event_store=store, inline_handlers=False)
    store.lock_of = lambda session_id, stream_id: srv.app.sessions[session_id].by_id[stream_id].cond
    session = raw_session(srv.mcp)
    session.initialize()
    request_id, response = session.call("tools/call", tool("hold", {}, "h"), stream=True)
    priming = SseReader(response).next()
    assert priming["data"] == "" and priming["id"]
    assert store.writing.wait(WAIT)  # the old response has taken the first progress
    resumed = SseReader(session.get(headers={"Last-Event-ID": priming["id"]}))
    release.set()
    rest = resumed.messages(request_id, session.checker)
    assert progress_of(rest) == [1, 2, 3] and is_answer(rest[-1][1], request_id), rest
    resumed.response.close()
    response.close()


def test_last_event_id_of_another_session_is_not_replayed(serve, raw_session):
    srv = serve()
    alice, mallory = raw_session(srv.mcp), raw_session(srv.mcp)
    alice.initialize()
    mallory.initialize()
    request_id, response = alice.call(
        "tools/call", tool("count_slowly", {"steps": 2, "delay": 0.01}, "a"), stream=True
    )
    reader = SseReader(response)
    priming = reader.next()
    reader.messages(request_id, alice.checker)
    stolen = SseReader(mallory.get(headers={"Last-Event-ID": priming["id"]}))
    first = stolen.next()
    # Not alice's events: mallory gets her own standalone stream (a priming event, no data).
    assert first["data"] == "" and first["id"] != priming["id"]
    request_id, response = mallory.call("tools/call", tool("add_tool", {"name": "m"}))
    mallory.result(response, request_id)
    got = read_until(stolen, mallory.checker, method_is("notifications/tools/list_changed"))
    assert len(got) == 1, got
    stolen.close()


# -- resuming from an event the store has forgotten (it keeps max_events a session) ---------------


@pytest.fixture(params=["memory", "redis"])
def small_event_store(request):
    """An event store keeping 8 events a session: in memory, or on Redis (one worker)."""
    if request.param == "memory":
        yield MemoryEventStore(max_events=8)
        return
    from mcp_ref.state.redis.connection import Connection
    from mcp_ref.state.redis.http_stores import RedisEventStore

    connection = Connection(request.getfixturevalue("redis_url"))
    store = RedisEventStore(connection, max_events=8)
    yield store
    store.close()
    connection.close()


def forgetful_server(release: threading.Event) -> Server:
    """Tools ``steps`` (``count`` progress notifications, then the answer) and ``hold`` (one
    progress, then waits for ``release``, two more, then the answer)."""
    server = Server("forgetful")

    @server.tool()
    def steps(count: int, ctx: Context) -> str:
        """Reports progress ``count`` times, then answers."""
        for step in range(1, count + 1):
            ctx.report_progress(step, count)
        return f"{count} steps"

    @server.tool()
    def hold(ctx: Context) -> str:
        """Reports progress, waits to be released, reports twice more, answers."""
        ctx.report_progress(1, 3)
        release.wait(WAIT)
        ctx.report_progress(2, 3)
        ctx.report_progress(3, 3)
        return "held"

    return server


def call_steps(session: RawSession, count: int) -> list[tuple[str, dict]]:
    """Call ``steps``; every event of its SSE stream, read to its end (the stream has ended), priming
    excluded.  Each call stores ``count`` + 2 events: priming, progress, the answer."""
    request_id, response = session.call(
        "tools/call", tool("steps", {"count": count}, f"s{count}"), stream=True
    )
    reader = SseReader(response)
    assert reader.next()["data"] == ""  # priming
    events = reader.messages(None, session.checker)
    assert events and is_answer(events[-1][1], request_id), events
    return events


def assert_still_listening(server: Server, session: RawSession, listener: SseReader) -> None:
    """The standalone stream opened before is still the session's: a server notification reaches it
    (a GET that took the standalone stream over would have ended it)."""
    server.add_tool(lambda: "x", name=f"fresh_{session.next_id()}", description="A new tool.")
    got = read_until(listener, session.checker, method_is("notifications/tools/list_changed"))
    assert got[-1][1]["method"] == "notifications/tools/list_changed"
    listener.close()


def progress_of(events: list[tuple[str, dict]]) -> list[int]:
    return [
        m["params"]["progress"] for _, m in events if m.get("method") == "notifications/progress"
    ]


def test_a_stream_resumed_from_a_forgotten_event_gets_what_is_left_of_it(
    serve, raw_session, small_event_store
):
    """spec_notes/security.md: "the oldest are forgotten; a GET resuming from one gets what is
    left".  2025-11-25 basic/transports §Resumability and Redelivery: the server MAY replay what
    would have been sent after the last event ID "on the stream that was disconnected".  Before,
    an id no longer kept made the GET the standalone stream (taking it from the session's listener)
    and the answer, still kept, was never delivered."""
    server = forgetful_server(threading.Event())
    srv = serve(server, event_store=small_event_store)
    session = raw_session(srv.mcp)
    session.initialize()
    listener = SseReader(session.get())
    assert listener.next()["data"] == ""  # priming: 1 event
    everything = call_steps(session, 6)  # 8 events: priming, progress 1 to 6, the answer
    seen = everything[0][0]  # as if the client had seen only progress 1
    call_steps(session, 1)  # 3 more: the store forgets the first 4 (up to progress 2)
    resumed = session.get(headers={"Last-Event-ID": seen})
    assert resumed.status_code == 200, resumed.text
    rest = SseReader(resumed).messages(None, session.checker)  # to the end of the body
    stream = seen.rpartition(".")[0]
    assert [eid.rpartition(".")[0] for eid, _ in rest] == [stream] * 5, rest
    assert progress_of(rest) == [3, 4, 5, 6] and rest[-1] == everything[-1]
    assert_still_listening(server, session, listener)


def test_a_stream_of_which_nothing_is_kept_is_refused_400_not_the_standalone_stream(
    serve, raw_session, small_event_store
):
    """Its events are all forgotten and it has ended: what the client missed is lost.  400 with a
    JSON-RPC error (not 404, which would tell the client its session has ended), never another
    stream (§Resumability and Redelivery: the server "MUST NOT replay messages that would have
    been delivered on a different stream").  Before: 200, the standalone stream, taken from the
    session's listener."""
    server = forgetful_server(threading.Event())
    srv = serve(server, event_store=small_event_store)
    session = raw_session(srv.mcp)
    session.initialize()
    listener = SseReader(session.get())
    assert listener.next()["data"] == ""
    seen = call_steps(session, 2)[0][0]
    call_steps(session, 6)  # 8 events: every earlier one is forgotten
    refused = session.get(headers={"Last-Event-ID": seen})
    body = assert_http_error(refused, 400, -32600)
    assert "Last-Event-ID" in body["error"]["message"]
    assert progress_of(call_steps(session, 1)) == [1]  # the session goes on
    assert_still_listening(server, session, listener)


def test_a_live_stream_resumed_from_a_forgotten_event_gets_what_comes_next(
    serve, raw_session, small_event_store
):
    """A request still running whose stream's events are all forgotten: the GET takes its stream
    over, and what comes after reaches it (before: the standalone stream, and the answer lost)."""
    release = threading.Event()
    server = forgetful_server(release)
    srv = serve(server, event_store=small_event_store)
    session = raw_session(srv.mcp)
    session.initialize()
    listener = SseReader(session.get())
    assert listener.next()["data"] == ""
    request_id, response = session.call("tools/call", tool("hold", {}, "h"), stream=True)
    post = SseReader(response)
    assert post.next()["data"] == ""  # priming
    seen = post.next()["id"]  # progress 1
    response.close()  # the client goes; the handler runs on
    call_steps(session, 6)  # 8 events: the hold stream's are forgotten
    resumed = session.get(headers={"Last-Event-ID": seen})
    assert resumed.status_code == 200, resumed.text
    release.set()
    events = []
    reader = SseReader(resumed)
    while (event := reader.next()) is not None:  # to the end of the body: the answer ends it
        events.append(event)
    stream = seen.rpartition(".")[0]
    assert all(event["id"].rpartition(".")[0] == stream for event in events), events
    messages = [json.loads(event["data"]) for event in events if event["data"]]
    assert [m.get("params", {}).get("progress") for m in messages[:-1]] == [2, 3], messages
    assert (
        is_answer(messages[-1], request_id)
        and messages[-1]["result"]["content"][0]["text"] == "held"
    )
    assert_still_listening(server, session, listener)


def test_what_the_memory_store_keeps_of_a_long_session_is_bounded_by_max_events(serve, raw_session):
    """spec_notes/security.md: the events kept for resumption are bounded, max_events a session.
    The store also noted every stream that had stored an event and not ended; in one process no
    end is ever stored (only a shared session's are), so one note a POST stream stayed for the
    session's whole life, past max_events (1,000 pings: 1,000 notes).  A stream forgotten is
    still refused as before (the resumption tests above)."""
    store = MemoryEventStore(max_events=8)
    srv = serve(forgetful_server(threading.Event()), event_store=store)
    session = raw_session(srv.mcp)
    session.initialize()
    for _ in range(20):  # 20 streams, 3 events each
        call_steps(session, 1)
    assert len(store._events[session.session_id]) == 8
    assert len(store._open) <= store.max_events, len(store._open)


def test_a_deleted_session_leaves_no_events_in_the_store(serve, raw_session):
    """A session deleted while a response was still writing (a batch's stream, a resumed one,
    ``inline_handlers=False``): that response could store its last event, the answer the session's
    end gives its request (SESSION_ENDED), after the session's events were forgotten, and it stayed
    in the store for the server's life (each such session: one more entry, never freed).  Now an
    event stored for a session that has ended is forgotten with it.  The late store is made here
    as that response makes it, once the DELETE is done: the race itself has no cue to wait on."""
    from mcp_ref.http.server.replies import message_event

    store = MemoryEventStore()
    srv = serve(event_store=store)
    session = raw_session(srv.mcp)
    session.initialize()
    ended = srv.app.live_session(session.session_id)
    assert ended is not None
    assert session.delete().status_code == 200
    assert session.session_id not in store._events
    late = b'{"jsonrpc":"2.0","id":"d","error":{"code":-31000,"message":"Session ended"}}'
    message_event(srv.app, ended, ended.standalone, late)  # the response still writing
    assert session.session_id not in store._events, store._events


# -- the server keeps serving; keep-alive without Nagle stalls ---------------------------------


def test_keep_alive_and_no_nagle_stall(serve, raw_session):
    """One HTTP/1.1 connection answers many requests, each well under the 40 ms a
    Nagle + delayed-ACK stall costs."""
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize()
    connection = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=WAIT)
    headers = {
        "Content-Type": JSON_CT,
        "Accept": ACCEPT_BOTH,
        "Mcp-Session-Id": session.session_id,
        "MCP-Protocol-Version": session.version,
    }
    times = []
    try:
        sock = None
        for i in range(30):
            body = json.dumps(request("ping", None, 1000 + i)).encode()
            start = time.perf_counter()
            connection.request("POST", "/mcp", body=body, headers=headers)
            answer = connection.getresponse()
            data = answer.read()
            times.append(time.perf_counter() - start)
            assert answer.status == 200 and answer.getheader("Content-Length") == str(len(data))
            assert json.loads(data) == {"jsonrpc": "2.0", "id": 1000 + i, "result": {}}
            if sock is None:
                sock = connection.sock
            assert connection.sock is sock  # the same connection throughout
    finally:
        connection.close()
    assert statistics.median(times) < 0.02, times


@pytest.mark.slow
def test_concurrent_raw_sessions(serve):
    srv = serve()

    def run(n: int):
        session = RawSession(srv.mcp)
        session.initialize()
        for i in range(5):
            request_id, response = session.call("tools/call", tool("echo", {"text": f"{n}-{i}"}))
            answer, _ = session.result(response, request_id)
            assert answer["result"]["content"][0]["text"] == f"{n}-{i}"
        assert session.delete().status_code == 200
        session.close()
        return session.checker

    checkers = run_threads(run, 16, timeout=WAIT * 2)  # fails with every thread's failure listed
    for checker in checkers:
        checker.assert_valid()
    assert srv.app.sessions == {}


def test_a_cancelled_batch_item_ends_its_post(serve, raw_session):
    """A batch item cancelled while it runs gets no answer; its POST's stream must end all the same
    (2025-03-26 has batches; cancellation §Behavior Requirements: no response for the cancelled request)."""
    raw = raw_session(serve().mcp)
    raw.initialize("2025-03-26")
    item = request(
        "tools/call",
        {
            "name": "count_slowly",
            "arguments": {"steps": 1000, "delay": 0.05},
            "_meta": {"progressToken": "p"},
        },
        7,
    )
    response = raw.post([item], stream=True)
    events = SseReader(response)
    assert events.next()["data"]  # its first progress: the item runs
    assert raw.post(notification("notifications/cancelled", {"requestId": 7})).status_code == 202
    rest = []
    while (event := events.next()) is not None:  # the stream ends (bounded by the read timeout)
        rest.append(json.loads(event["data"]))
    assert not [m for m in rest if m.get("id") == 7]  # and carries no answer to the cancelled item


def test_a_cancelled_calls_question_is_cancelled_on_the_calls_own_stream(serve, raw_session):
    """The client cancels a tools/call whose handler waits on an elicitation: the server cancels
    that question too (cancellation §Behavior Requirements: "Free associated resources"), and its
    notifications/cancelled travels where the question did, on the call's own POST stream
    (basic/transports: messages sent there "SHOULD relate to the originating client request"),
    which then ends without an answer."""
    server = Server("asks")

    @server.tool()
    def ask(ctx: Context) -> str:
        """Asks the user."""
        return ctx.elicit("ok?", {"type": "object", "properties": {}}).action

    raw = raw_session(serve(server).mcp)
    raw.initialize(capabilities={"elicitation": {}})
    call_id, response = raw.call("tools/call", {"name": "ask", "arguments": {}}, stream=True)
    events = SseReader(response)
    first = events.next()
    if not first["data"]:  # 2025-11-25: the priming event (an id, no data) comes first
        first = events.next()
    question = json.loads(first["data"])
    assert question["method"] == "elicitation/create"
    cancel = notification("notifications/cancelled", {"requestId": call_id})
    assert raw.post(cancel).status_code == 202
    rest = []
    while (event := events.next()) is not None:  # the stream ends (bounded by the read timeout)
        if event["data"]:
            rest.append(json.loads(event["data"]))
    assert rest == [
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {
                "requestId": question["id"],
                "reason": "the request it was sent for was cancelled",
            },
        }
    ]


def test_a_get_resuming_a_stream_answered_inline_ends_with_it(serve, raw_session):
    """A POST answered on its own thread (inline) while a GET with Last-Event-ID has taken its stream
    over: the GET replays what the store kept and ends when the request is answered.  (Its narrower
    cousin, a GET that takes the stream over after the inline answer went out but before the POST's
    thread forgot the stream, waited for ever: seen in CI under load, about one run in fifteen of
    test_post_stream_resumes_after_it_ended; ``_answer_inline`` now ends the stream it answered.)"""
    release = threading.Event()
    server = Server("inline")

    @server.tool()
    def hold(ctx: Context) -> str:
        """Reports progress, then waits to be released."""
        ctx.report_progress(1, 2)
        release.wait(WAIT)
        return "done"

    srv = serve(server)
    session = raw_session(srv.mcp)
    session.initialize()
    request_id, response = session.call("tools/call", tool("hold", {}, "h"), stream=True)
    reader = SseReader(response)
    priming = reader.next()
    progress = reader.next()
    assert progress["data"] and json.loads(progress["data"])["method"] == "notifications/progress"
    replay = session.get(headers={"Last-Event-ID": priming["id"]})  # takes the live stream over
    assert replay.status_code == 200
    release.set()
    started = time.monotonic()
    rest = SseReader(replay).messages(None, session.checker)  # to the end of the body
    assert time.monotonic() - started < WAIT / 2  # ended with the request, not at a read timeout
    assert rest and rest[0][1].get("method") == "notifications/progress"  # what it missed, replayed
    assert all(
        m.get("method") == "notifications/progress" or m.get("id") == request_id for _, m in rest
    )
    response.close()


# -- SSE polling: Context.close_sse_stream closes the connection that carries the stream ----------


def polling_server() -> tuple[Server, dict]:
    """A server whose tool ``poll`` closes its stream's connection (``ctx.close_sse_stream()``),
    waits for ``state["resumed"]``, closes it again, then answers; ``state["closed"]`` holds
    what each close returned."""
    server = Server("polling")
    state: dict = {"closed": [], "resumed": threading.Event(), "again": threading.Event()}

    @server.tool()
    def poll(ctx: Context) -> str:
        ctx.report_progress(1, 2)
        state["closed"].append(ctx.close_sse_stream())
        state["resumed"].wait(WAIT)
        state["closed"].append(ctx.close_sse_stream())
        state["again"].set()
        return "done"

    return server, state


def test_a_second_close_of_an_inline_handlers_stream_closes_the_get_that_resumed_it(
    serve, raw_session
):
    # The handler runs on its POST's thread: the first close ends that response's part in the
    # stream (a retry event); the client resumes with a GET meanwhile.  The second close went to
    # the POST's response again (a no-op there) and returned True: the GET carrying the stream
    # was never closed.
    server, state = polling_server()
    srv = serve(server, retry_ms=30)
    session = raw_session(srv.mcp)
    session.initialize()
    request_id, response = session.call("tools/call", tool("poll", progress_token="p"), stream=True)
    post = SseReader(response)
    priming, progress, closing = post.next(), post.next(), post.next()
    assert priming["retry"] is not None and "notifications/progress" in progress["data"]
    assert closing["retry"] is not None and not closing["data"], closing  # closed for polling
    resumed = session.get(headers={"Last-Event-ID": closing["id"]})
    assert resumed.status_code == 200
    state["resumed"].set()  # the GET has taken the stream over
    assert state["again"].wait(WAIT)
    assert state["closed"] == [True, True]
    reader = SseReader(resumed)
    events = []
    while (event := reader.next()) is not None:  # the GET ends: closed for polling
        events.append(event)
    assert events and events[-1]["retry"] is not None, events
    post.close()


def test_an_inline_handlers_second_close_before_the_client_resumed_closes_nothing(
    serve, handshake_http_client
):
    # Nothing carries the stream between the first close and the client's resumption (an inline
    # handler's POST ends only when the handler returns): it said True all the same.
    server, state = polling_server()
    state["resumed"].set()  # no waiting: the second close comes at once
    srv = serve(server, retry_ms=30)
    client = handshake_http_client(srv.mcp)
    assert client.call_tool("poll").content[0].text == "done"
    assert state["closed"] == [True, False]


def closing_server() -> tuple[Server, list]:
    """A server whose tool ``poll`` reports progress, asks to close its stream's connection
    (``ctx.close_sse_stream()``, what it returned kept in the list), reports again and answers."""
    server = Server("closing")
    closed: list = []

    @server.tool()
    def poll(ctx: Context) -> str:
        ctx.report_progress(1, 2)
        closed.append(ctx.close_sse_stream())
        ctx.report_progress(2, 2)
        return "done"

    return server, closed


@pytest.mark.parametrize("inline", [True, False])
@pytest.mark.parametrize("version", ["2025-06-18", "2025-03-26"])
def test_close_sse_stream_before_2025_11_25_closes_nothing(serve, raw_session, version, inline):
    """2025-06-18 and 2025-03-26 basic/transports §Sending Messages: "The server SHOULD NOT close
    the SSE stream before sending the JSON-RPC response" (polling came with 2025-11-25).  Before,
    the POST ended with a retry event and no answer, which a client of those revisions does not
    resume."""
    server, closed = closing_server()
    srv = serve(server, inline_handlers=inline)
    session = raw_session(srv.mcp)
    session.initialize(version)
    request_id, response = session.call("tools/call", tool("poll", {}, "p"), stream=True)
    answer, before = session.result(response, request_id)  # on the POST's own stream
    assert answer["result"]["content"][0]["text"] == "done"
    assert [m["params"]["progress"] for m in before] == [1, 2]
    assert closed == [False]


@pytest.mark.parametrize("inline", [True, False])
def test_close_sse_stream_with_json_response_closes_nothing(serve, raw_session, inline):
    """``json_response=True``: the POST is answered in JSON, so there is no SSE stream to close
    (``Context.close_sse_stream``: False for JSON replies).  Before, the close turned the POST
    into an SSE stream of one retry event, returned True, and left the answer to a GET."""
    server, closed = closing_server()
    srv = serve(server, json_response=True, inline_handlers=inline)
    session = raw_session(srv.mcp)
    session.initialize()
    request_id, response = session.call("tools/call", tool("poll", {}, "p"))
    assert response.headers["Content-Type"] == JSON_CT
    answer, _ = session.result(response, request_id)
    assert answer["result"]["content"][0]["text"] == "done"
    assert closed == [False]
