"""The inspector's Conversation: a bounded, ordered, thread-safe record of the conversation, its
subscribers' bounded queues, the JSON-lines export and the Mermaid diagram; and, over real
transports, each message linked to the HTTP exchange that carried it (null over stdio)."""

from __future__ import annotations

import json
import threading

import pytest
from conftest import WAIT

from mcp_ref.inspector.conversation import (
    EXPORT_FORMAT,
    SUBSCRIBER_QUEUE,
    Conversation,
    label,
)
from mcp_ref.inspector.masking import MASK


def wire(message: dict) -> bytes:
    return json.dumps(message).encode()


def request(request_id, method, **params) -> bytes:
    return wire({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})


def result(request_id, value) -> bytes:
    return wire({"jsonrpc": "2.0", "id": request_id, "result": value})


def echo_round(conv: Conversation, n: int) -> None:
    conv.trace("-->", request(n, "tools/call", name="echo", arguments={"text": str(n)}))
    conv.trace("<--", result(n, {"content": [{"type": "text", "text": str(n)}]}))


# -- in process -----------------------------------------------------------------------------


def test_records_are_numbered_in_order_and_typed():
    conv = Conversation()
    conv.set_revision("2025-11-25")
    conv.note("connected over stdio, 2025-11-25")
    echo_round(conv, 3)
    conv.trace("<--", wire({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "x"}}))
    conv.trace("<--", wire({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}))
    conv.stderr("a line\n")
    records = conv.records()
    assert [r["seq"] for r in records] == [1, 2, 3, 4, 5, 6]
    assert [r["kind"] for r in records] == [
        "note",
        "message",
        "message",
        "message",
        "message",
        "stderr",
    ]
    call, answer, error, progress = records[1:5]
    assert (call["type"], call["direction"], call["label"]) == (
        "request",
        "send",
        "tools/call #3 echo",
    )
    assert (answer["type"], answer["direction"], answer["label"]) == (
        "result",
        "receive",
        "#3 result",
    )
    assert answer["method"] == "tools/call"  # the method of the request it answers
    assert call["valid"] is True and answer["valid"] is True
    assert answer["spec"]["url"].endswith("/2025-11-25/server/tools#calling-tools")
    assert (error["type"], error["label"]) == ("error", "#4 error -32602")
    assert progress["type"] == "notification"
    assert progress["valid"] is False and progress["errors"]  # progressToken, progress: required
    assert call["exchange"] is None and call["size"] == len(
        request(3, "tools/call", name="echo", arguments={"text": "3"})
    )
    assert records[5]["line"] == "a line"
    assert all(isinstance(r["time"], float) for r in records)
    json.dumps(records)  # JSON-safe


def test_what_is_not_json_is_an_invalid_record_and_nothing_breaks():
    conv = Conversation()
    conv.trace("<--", b"\xff not json {")
    conv.trace("<--", wire([1, 2]))  # a batch of no messages
    first, *rest = conv.records()
    assert (first["type"], first["valid"], first["label"]) == ("invalid", False, "(not JSON)")
    assert "not json" in first["message"]
    assert [r["type"] for r in rest] == ["invalid", "invalid"]
    echo_round(conv, 1)
    assert conv.records(after=3)[0]["label"] == "tools/call #1 echo"


def strict(text: str):
    """``text`` parsed as strict JSON (RFC 8259: no ``NaN``, no ``Infinity``), as a browser's
    ``JSON.parse`` or any strict reader of the export parses it."""

    def refuse(constant: str):
        raise ValueError(f"{constant} is no JSON")

    return json.loads(text, parse_constant=refuse)


def test_what_strict_json_cannot_hold_is_exported_as_strict_json_in_utf_8():
    """A server's NaN and infinities (Python's parser reads them) and lone surrogates (JSON text
    may escape one: ``"\\ud800"``) in the records: the export is strict JSON, UTF-8 throughout
    (it raised at the surrogate, and wrote the NaN as it is), the NaN the string "NaN", the
    surrogate U+FFFD; the records themselves keep what was received."""
    conv = Conversation(target="weather \ud83d", http=False)
    conv.trace(
        "<--",
        b'{"jsonrpc":"2.0","method":"notifications/message",'
        b'"params":{"level":"info","data":[NaN,Infinity,-Infinity,"bad \\ud800 text",1.5]}}',
    )
    conv.trace("<--", b'{"jsonrpc":"2.0","id":NaN,"result":{}}')
    conv.note("the server said \udc80")
    lines = conv.export_jsonl().encode("utf-8").decode("utf-8").splitlines()
    header, logged, answered, note = [strict(line) for line in lines]
    assert header["target"] == "weather \ufffd"
    assert logged["message"]["params"]["data"] == [
        "NaN",
        "Infinity",
        "-Infinity",
        "bad \ufffd text",
        1.5,
    ]
    assert answered["id"] == "NaN" and answered["message"]["id"] == "NaN"
    assert note["text"] == "the server said \ufffd"
    assert conv.records()[0]["message"]["params"]["data"][3] == "bad \ud800 text"


def test_json_text_changes_nothing_strict_json_holds():
    from mcp_ref.inspector.conversation import json_text

    value = {"a": [1, 2.5, None, True, "ü €", {"b": []}], "c": ("tuple",)}
    assert json_text(value) == '{"a":[1,2.5,null,true,"ü €",{"b":[]}],"c":["tuple"]}'
    assert json_text({"x": float("nan"), "keep": value}) == (
        '{"x":"NaN","keep":{"a":[1,2.5,null,true,"ü €",{"b":[]}],"c":["tuple"]}}'
    )
    assert value["c"] == ("tuple",)  # what was given is not changed


def test_a_message_nested_deeper_than_the_session_reads_is_recorded_as_text():
    """A message the session refuses as nested deeper than its limit (64), which Python's parser
    still reads: the trace hook never raises (masking, checking and drawing it recursed, and the
    client then lost the message), and the record says why it is shown as text, and what the
    client does with it."""
    conv = Conversation(http=False)
    deep = b'{"jsonrpc":"2.0","id":1,"result":{"deep":' + b"[" * 600 + b"]" * 600 + b"}}"
    conv.trace("<--", deep)
    conv.trace("<--", wire({"jsonrpc": "2.0", "id": 2, "result": {"deep": [[[]]]}}))
    refused, kept = conv.records()
    assert (refused["type"], refused["valid"]) == ("invalid", False)
    assert refused["errors"] == [
        "nested deeper than the limit of 64: the client refuses it, and its request #1 fails at once"
    ]
    assert refused["label"] == "(nested deeper than the limit of 64)"
    assert refused["message"].startswith('{"jsonrpc":"2.0","id":1,')
    assert kept["message"]["result"] == {"deep": [[[]]]}
    strict(conv.export_jsonl().splitlines()[1])
    assert "S-xC: (not a JSON-RPC message)" in conv.mermaid("t")


@pytest.mark.slow
def test_the_client_with_the_inspector_s_hook_refuses_a_too_deep_answer_at_once():
    """A server's answer nested 520 deep (valid JSON, far under every size bound): a client with
    the inspector's trace hook fails the call at once with the session's own reason, as a plain
    client does (the hook raised RecursionError, the message was dropped, and the call waited for
    its timeout); the conversation shows the answer, refused."""
    import sys

    from conftest import SERVERS

    from mcp_ref import Client
    from mcp_ref.errors import InvalidRequest

    conv = Conversation(http=False)
    command = [sys.executable, str(SERVERS / "deep_answer_server.py"), "first", "520"]
    with Client.stdio(command, trace=conv.trace, timeout=WAIT, era="handshake") as client:
        with pytest.raises(InvalidRequest, match="nested deeper than the limit of 64"):
            client.call_tool("deep", {})
        assert client.call_tool("other", {}).content[0].text == "still here"
    refused = [r for r in conv.records() if r["type"] == "invalid"]
    assert [r["errors"] for r in refused] == [
        [
            "nested deeper than the limit of 64: the client refuses it, and its request #2 fails at once"
        ]
    ]


#: Secrets as tests/servers/deep_answer_server.py's ``secrets`` answer writes them, in the shapes
#: masking as free text missed (an array, an object, an escaped key, a key over 64 characters),
#: then each as the masked record writes it.
SECRET_MEMBERS = (
    '"api_key":["sk-ARRAY-SECRET"],"client_secret":{"value":"OBJECT-SECRET"},'
    '"pass\\u0077ord":"ESCAPED-KEY-SECRET","' + "x" * 70 + '_token":"LONG-KEY-SECRET"'
)
MASKED_MEMBERS = (
    f'"api_key":"{MASK}","client_secret":"{MASK}","password":"{MASK}","'
    + "x" * 70
    + f'_token":"{MASK}"'
)
SECRET_VALUES = ("ARRAY-SECRET", "OBJECT-SECRET", "ESCAPED-KEY-SECRET", "LONG-KEY-SECRET")


@pytest.mark.parametrize("depth", [100, 600, 5_000])
def test_a_message_received_nested_too_deep_is_masked_as_any_message_is(depth):
    """An answer, a notification and a request nested 100, 600 or 5,000 deep (deeper than the
    session reads, 64; the last deeper than Python's parser goes), holding secrets: each record shows the
    message's structure with every secret masked as any message's are (they were masked as free
    text, which missed all four shapes, and at 5,000 the record said "not JSON"), and says what
    the client does with it."""
    conv = Conversation(http=False)
    nested = "[" * depth + "]" * depth

    def answer(members: str) -> str:
        return '{"jsonrpc":"2.0","id":1,"result":{' + members + ',"content":' + nested + "}}"

    def notification(members: str) -> str:
        head = '{"jsonrpc":"2.0","method":"notifications/message","params":{'
        return head + members + ',"data":' + nested + "}}"

    def server_request(members: str) -> str:
        head = '{"jsonrpc":"2.0","id":"s-1","method":"sampling/createMessage","params":{'
        return head + members + ',"messages":' + nested + "}}"

    conv.trace("-->", request(1, "tools/call", name="secrets", arguments={}))
    conv.trace("<--", answer(SECRET_MEMBERS).encode())
    conv.trace("<--", notification(SECRET_MEMBERS).encode())
    conv.trace("<--", server_request(SECRET_MEMBERS).encode())
    _sent, refused_answer, refused_notification, refused_request = conv.records()
    for refused in (refused_answer, refused_notification, refused_request):
        assert (refused["type"], refused["valid"]) == ("invalid", False)
        assert refused["label"] == "(nested deeper than the limit of 64)"
    assert refused_answer["message"] == answer(MASKED_MEMBERS)
    assert refused_answer["errors"] == [
        "nested deeper than the limit of 64: the client refuses it, and its request #1 fails at once"
    ]
    assert refused_notification["message"] == notification(MASKED_MEMBERS)
    assert refused_notification["errors"] == [
        "nested deeper than the limit of 64: the client refuses it as a parse error (-32700)"
    ]
    assert refused_request["message"] == server_request(MASKED_MEMBERS)
    assert refused_request["errors"] == [
        "nested deeper than the limit of 64: the client refuses it, answering -32600 (Invalid"
        " Request) to #s-1"
    ]
    export = conv.export_jsonl()
    for line in export.splitlines():
        strict(line)
    for secret in SECRET_VALUES:
        assert secret not in export
    assert conv.mermaid("t").count("S-xC: (not a JSON-RPC message)") == 3


@pytest.mark.slow
def test_a_request_the_client_sends_nested_too_deep_is_recorded_as_the_request_it_is():
    """The client sends a tool call whose arguments nest 70 deep (the session writes what its
    caller built; this server reads it): its record is that request, labelled and paired with its
    answer, its secret masked, marked as not checked against the schema; the diagram draws it.
    It was recorded as text masked as free text (the secret, in an array, shown), "nested deeper
    than the limit of 64" (which the client does not hold to what it sends), and drawn as not a
    JSON-RPC message."""
    import sys

    from conftest import SERVERS

    from mcp_ref import Client

    conv = Conversation(http=False)
    command = [sys.executable, str(SERVERS / "deep_answer_server.py"), "first", "70"]
    pad: list = []
    for _ in range(70):
        pad = [pad]
    with Client.stdio(command, trace=conv.trace, timeout=WAIT, era="handshake") as client:
        answer = client.call_tool("other", {"api_key": ["sk-SENT-SECRET"], "pad": pad})
        assert answer.content[0].text == "still here"
    records = conv.records()
    (sent,) = [r for r in records if r["direction"] == "send" and r["method"] == "tools/call"]
    number = sent["id"]
    assert (sent["type"], sent["label"], sent["valid"]) == (
        "request",
        f"tools/call #{number} other",
        None,
    )
    assert sent["errors"] == [
        "nested deeper than 64 levels, the most this library reads: sent as it is, not checked"
        " against the schema"
    ]
    arguments = json.loads(sent["message"])["params"]["arguments"]
    assert arguments == {"api_key": MASK, "pad": pad}
    (answered,) = [r for r in records if r["direction"] == "receive" and r["id"] == number]
    assert (answered["type"], answered["method"]) == ("result", "tools/call")  # paired
    assert "SENT-SECRET" not in conv.export_jsonl()
    assert f"C->>S: tools/call other #{number}" in conv.mermaid("t")


def test_a_message_sent_deeper_than_python_s_parser_goes_is_paired_with_its_request():
    """Over HTTP, a request nested 2,000 deep (past Python's parser): recorded as the request it
    is when the HTTP request carrying it is seen, linked to it, its secret masked there and in the
    body (it was "not JSON", and the body's array secret was shown)."""
    conv = Conversation(http=True)
    data = (
        '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":'
        '{"api_key":["SENT-SECRET"],"pad":' + "[" * 2000 + "]" * 2000 + "}}}"
    ).encode()
    conv.trace("-->", data)
    assert conv.records() == []  # waiting for the request that carries it
    conv.http_trace(seen_request(7, data))
    message, post = conv.records()
    assert (message["type"], message["label"], message["exchange"]) == (
        "request",
        "tools/call #1 x",
        7,
    )
    assert post["messages"] == [message["seq"]]
    assert message["message"] == data.decode().replace('["SENT-SECRET"]', f'"{MASK}"')
    assert f'"api_key": "{MASK}", "pad": [[[' in post["body"] and "SENT-SECRET" not in post["body"]
    assert "SENT-SECRET" not in conv.export_jsonl()


def test_a_batch_is_one_record_per_message():
    conv = Conversation(http=False)
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    conv.trace("-->", wire(batch))
    assert [r["label"] for r in conv.records()] == ["ping #1", "notifications/initialized"]


@pytest.mark.slow  # 10,000 messages checked against the schema
def test_the_log_is_bounded_and_counts_what_it_dropped():
    conv = Conversation(max_records=1000)
    for n in range(1, 5001):  # 10,000 messages
        echo_round(conv, n)
    records = conv.records(limit=5000)
    assert len(records) == 1000
    assert conv.dropped == 9000
    assert [r["seq"] for r in records] == list(range(9001, 10001))
    assert conv.last == 10000
    assert conv.records(after=9990, limit=5)[0]["seq"] == 9991
    assert conv.records(after=10) == records[:1000]  # before the start: from the oldest kept
    assert conv.records(after=10000) == []
    export = conv.export_jsonl().splitlines()
    header = json.loads(export[0])
    assert header["format"] == EXPORT_FORMAT and header["version"] == 1
    assert header["dropped"] == 9000
    assert [json.loads(line)["seq"] for line in export[1:]] == list(range(9001, 10001))


@pytest.mark.slow  # 10,000 messages checked against the schema
def test_ten_thousand_records_reach_a_subscriber_in_order_across_threads():
    conv = Conversation()
    conv.set_revision("2025-06-18")
    subscription = conv.subscribe()
    threads = [
        threading.Thread(target=lambda k=k: [echo_round(conv, k * 10_000 + n) for n in range(1250)])
        for k in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    seqs = []
    while len(seqs) < 10_000:
        record = subscription.get(WAIT)
        assert record is not None
        seqs.append(record["seq"])
    assert seqs == list(range(1, 10_001))
    assert subscription.get(0) is None
    assert not subscription.closed
    # each answer was checked as the answer to its own request, whatever the interleaving
    assert all(r["valid"] and r["method"] == "tools/call" for r in conv.records(limit=10_000))


@pytest.mark.slow  # 10,000 messages checked against the schema
def test_a_subscriber_that_falls_behind_is_closed_and_catches_up_from_records():
    conv = Conversation()
    slow = conv.subscribe()
    for n in range(SUBSCRIBER_QUEUE // 2 + 1):
        echo_round(conv, n)  # SUBSCRIBER_QUEUE + 2 records
    assert slow.closed
    got = []
    while (record := slow.get(0)) is not None:
        got.append(record["seq"])
    assert got == list(range(1, SUBSCRIBER_QUEUE + 1))  # those queued are still there
    rest = conv.records(after=got[-1])
    assert [r["seq"] for r in rest] == [SUBSCRIBER_QUEUE + 1, SUBSCRIBER_QUEUE + 2]
    fresh = conv.subscribe()  # the page reconnects
    echo_round(conv, 99)
    assert fresh.get(WAIT)["label"] == "tools/call #99 echo"


def test_a_closed_subscription_wakes_its_reader_and_gets_nothing_more():
    conv = Conversation()
    subscription = conv.subscribe()
    got = []
    reader = threading.Thread(target=lambda: got.append(subscription.get(WAIT)))
    reader.start()
    subscription.close()
    reader.join(WAIT)
    assert got == [None] and subscription.closed
    echo_round(conv, 1)
    assert subscription.get(0) is None


def test_clear_forgets_records_but_seq_goes_on():
    conv = Conversation()
    echo_round(conv, 1)
    conv.clear()
    assert conv.records() == [] and conv.dropped == 0
    echo_round(conv, 2)
    assert [r["seq"] for r in conv.records()] == [3, 4]
    assert "#1" not in conv.mermaid("after clear")


def test_the_mermaid_diagram_is_the_demo_s_own():
    from mcp_ref.workbench.diagram import Recorder

    conv = Conversation()
    recorder = Recorder()
    messages = [
        ("-->", request(1, "tools/call", name="echo", arguments={"text": "x"})),
        ("<--", result(1, {"content": []})),
    ]
    for direction, data in messages:
        conv.trace(direction, data)
        recorder(direction, data)
    conv.note("3. Tools")
    recorder.note("3. Tools")
    assert conv.mermaid("Title") == recorder.mermaid("Title")
    assert "C->>S: tools/call echo #1" in conv.mermaid("Title")


def test_secrets_are_masked_in_records_export_and_diagram():
    conv = Conversation()
    conv.trace("-->", request(1, "tools/call", name="login", arguments={"password": "hunter2"}))
    conv.trace("<--", result(1, {"content": [], "access_token": "AT-42"}))
    text = conv.export_jsonl() + json.dumps(conv.records()) + conv.mermaid("t")
    assert "hunter2" not in text and "AT-42" not in text


def test_stderr_lines_and_what_is_not_json_are_masked_too():
    conv = Conversation()
    conv.stderr("token refreshed: Bearer abc.def.ghi\n")
    conv.trace("<--", b'oops {"refresh_token": "RT-1", ')
    text = json.dumps(conv.records())
    assert "abc.def.ghi" not in text and "RT-1" not in text
    assert conv.records()[0]["line"] == f"token refreshed: Bearer {MASK}"
    assert "S-xC: (not a JSON-RPC message)" in conv.mermaid("t")


def test_a_stderr_line_naming_a_url_loses_the_url_s_secret_query_values():
    """A launched server's stderr line naming a URL kept the URL's ``?code=`` (an authorization
    code) and what followed a ``#``: only its userinfo was masked.  The URL in it is masked as a
    URL is now."""
    conv = Conversation()
    conv.stderr("redirected to https://app/cb?state=s&code=AUTH-C0DE#id_token=ID-T0KEN\n")
    line = conv.records()[0]["line"]
    assert line == f"redirected to https://app/cb?state=s&code={MASK}#id_token={MASK}"


def test_a_long_line_is_cut_before_it_is_masked_and_the_cut_shows_no_secret():
    """A line that is no JSON, longer than what is shown, is cut first and then masked (masking
    takes time as the text's length does): a credential the cut splits, its first characters
    too few to read as one, is masked all the same, in a stderr line as in a message."""
    from mcp_ref.inspector.http_view import MAX_BODY_TEXT

    line = "x" * (MAX_BODY_TEXT - 12) + " Bearer eyJhbGciOiJIUzI1NiJ9.secret " + "'\\" * 100_000
    conv = Conversation()
    conv.trace("<--", line.encode())
    conv.stderr(line + "\n")
    message, stderr = conv.records()
    assert message["message"] == line[: MAX_BODY_TEXT - 4] + MASK
    assert message["size"] == len(line)
    assert stderr["line"] == message["message"]
    assert "eyJ" not in json.dumps(conv.records())


def test_labels():
    assert label(
        {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "file:///a"}}
    ) == ("resources/read #3 file:///a")
    assert label(
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info"}}
    ) == ("notifications/message info")
    assert label({"jsonrpc": "2.0", "id": "a;b", "result": {}}) == "#a,b result"
    assert label({"id": 1}) == "(not a JSON-RPC message)"


def test_max_records_must_be_positive():
    with pytest.raises(ValueError):
        Conversation(max_records=0)
    with pytest.raises(ValueError):
        Conversation(max_bytes=True)


def test_the_log_is_bounded_in_bytes_too():
    from mcp_ref.inspector.conversation import RECORD_OVERHEAD

    conv = Conversation(max_bytes=10 * (1000 + RECORD_OVERHEAD))
    big = result(1, {"content": [{"type": "text", "text": "x" * 918}]})
    assert len(big) == 1000
    for _ in range(25):
        conv.trace("<--", big)
    assert len(conv.records()) == 10 and conv.dropped == 15
    assert [r["seq"] for r in conv.records()] == list(range(16, 26))
    conv.stderr("a line")  # small: one more record fits in place of the oldest
    assert conv.dropped == 16 and conv.records()[-1]["kind"] == "stderr"
    conv.clear()
    conv.trace("<--", big)
    assert len(conv.records()) == 1


def test_a_subscriber_is_bounded_in_bytes_too():
    from mcp_ref.inspector.conversation import RECORD_OVERHEAD

    conv = Conversation(max_bytes=3 * (1000 + RECORD_OVERHEAD))
    big = result(1, {"content": [{"type": "text", "text": "x" * 918}]})
    reader, slow = conv.subscribe(), conv.subscribe()
    for n in range(5):
        conv.trace("<--", big)
        assert reader.get(WAIT)["seq"] == n + 1  # one that keeps up is never closed
    assert not reader.closed
    assert slow.closed  # the fourth would have made it hold more than max_bytes
    assert [slow.get(0)["seq"] for _ in range(3)] == [1, 2, 3] and slow.get(0) is None


def seen_request(exchange: int, body: bytes):
    from mcp_ref.http.exchange_trace import HttpRequestSeen

    return HttpRequestSeen(exchange, "POST", "http://127.0.0.1:1/mcp", (), body)


def test_an_http_conversation_records_a_sent_message_when_its_request_goes():
    conv = Conversation(http=True)
    subscription = conv.subscribe()
    data = request(1, "tools/list")
    conv.trace("-->", data)
    assert conv.records() == []  # waiting for the request that carries it
    conv.http_trace(seen_request(7, data))
    message, post = subscription.get(WAIT), subscription.get(WAIT)
    assert (message["kind"], message["exchange"], message["seq"]) == ("message", 7, 1)
    assert (post["kind"], post["exchange"], post["messages"]) == ("http", 7, [1])


def test_a_sent_message_whose_request_never_comes_is_recorded_at_the_next_event():
    conv = Conversation(http=True)
    conv.trace("-->", wire({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}))
    conv.trace("<--", result(1, {}))  # the 2026-07-28 era sends no client notification over HTTP
    assert [(r["type"], r["exchange"]) for r in conv.records()] == [
        ("notification", None),
        ("result", None),
    ]
    conv.trace("-->", request(2, "ping"))
    conv.note("closed")
    assert [r["kind"] for r in conv.records(after=2)] == ["message", "note"]


def test_a_message_already_recorded_is_completed_when_its_request_comes():
    conv = Conversation(http=True)
    data = request(1, "tools/list")
    conv.trace("-->", data)
    conv.trace("<--", wire({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}))
    first = conv.records()[0]  # recorded before its request was seen (another thread's answer came)
    assert first["exchange"] is None and first["label"] == "tools/list #1"
    conv.http_trace(seen_request(4, data))
    assert conv.records()[0]["exchange"] == 4
    assert conv.records()[-1]["messages"] == [first["seq"]]


def test_whether_it_is_http_is_found_out():
    http = Conversation()
    data = request(1, "initialize")
    http.trace("-->", data)
    assert http.records() == []  # not known yet: waits for its request or the next event
    http.http_trace(seen_request(1, data))
    assert [(r["kind"], r["exchange"]) for r in http.records()] == [("message", 1), ("http", 1)]
    stdio = Conversation()
    stdio.trace("-->", data)
    stdio.trace("<--", result(1, {}))  # an answer with no HTTP before it: not HTTP
    assert [r["label"] for r in stdio.records()] == ["initialize #1", "#1 result"]
    stdio.trace("-->", request(2, "ping"))  # recorded at once from now on
    assert stdio.records(after=2)[0]["label"] == "ping #2"
    assert all(r["exchange"] is None for r in stdio.records())


def test_a_received_message_names_the_exchange_whose_body_carried_it():
    from mcp_ref.http.exchange_trace import HttpResponseSeen, SseEventSeen

    conv = Conversation()
    answer = result(1, {"tools": []})
    conv.http_trace(HttpResponseSeen(3, 200, "OK", (("Content-Type", "application/json"),), answer))
    event = wire({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    conv.http_trace(SseEventSeen(5, "e1", "message", event.decode(), None))
    conv.trace("<--", event)
    conv.trace("<--", json.dumps(json.loads(answer), indent=2).encode())  # spaced otherwise
    conv.trace("<--", result(9, {}))  # made by the client itself (a failed request): no exchange
    messages = [r for r in conv.records() if r["kind"] == "message"]
    assert [r["exchange"] for r in messages] == [5, 3, None]
    assert [r["carrier"] for r in messages] == [2, 1, None]  # the sse record, the http record


# -- over real transports ----------------------------------------------------------------------


def http_conversation(url: str, **options) -> Conversation:
    """The demo over HTTP: a call, one with progress (its answer on an SSE stream), and one that
    asks the user (a server request on the stream, answered in a POST of its own)."""
    from conftest import Collector as _Collector

    from mcp_ref import Client, ElicitResult

    conv = Conversation(target=url)
    with Client.http(
        url,
        trace=conv.trace,
        http_trace=conv.http_trace,
        timeout=WAIT,
        elicitation_handler=lambda params: ElicitResult(action="accept", content={"name": "Ada"}),
        **options,
    ) as client:
        conv.set_revision(client.protocol_version)
        assert client.call_tool("echo", {"text": "hi"}).content[0].text == "hi"
        progress = _Collector()
        client.call_tool("count_slowly", {"steps": 2, "delay": 0}, on_progress=progress)
        assert len(progress) == 2
        assert "Ada" in client.call_tool("ask_user").content[0].text
    return conv


def assert_each_message_names_its_exchange(conv: Conversation) -> list[dict]:
    records = conv.records(limit=10_000)
    messages = [r for r in records if r["kind"] == "message"]
    assert messages
    carriers = {}
    for r in records:
        if r["kind"] == "http" and r["body"]:
            carriers.setdefault(r["exchange"], []).append(r["body"])
        if r["kind"] == "sse" and r["data"]:
            carriers.setdefault(r["exchange"], []).append(r["data"])
    by_seq = {r["seq"]: r for r in records}
    for message in messages:
        assert message["exchange"] is not None, message["label"]
        if message["direction"] == "receive":
            assert by_seq[message["carrier"]]["exchange"] == message["exchange"]
        assert message["valid"] is True, (message["label"], message["errors"])
        text = (
            json.dumps(message["message"]["id"])
            if "id" in message["message"]
            else message["method"]
        )
        assert any(text in body for body in carriers[message["exchange"]]), message["label"]
    for request in (r for r in records if r["kind"] == "http" and r["phase"] == "request"):
        for seq in request["messages"]:  # the request lists what it carried
            (carried,) = [m for m in messages if m["seq"] == seq]
            assert carried["exchange"] == request["exchange"]
            assert carried["seq"] < request["seq"]  # shown before the request that carries it
    return messages


@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_over_http_each_message_names_the_exchange_that_carried_it(era):
    from http_fixtures import serving

    with serving() as served:
        conv = http_conversation(served.mcp, era=era)
    messages = assert_each_message_names_its_exchange(conv)
    sent = [m for m in messages if m["direction"] == "send"]
    assert len({m["exchange"] for m in sent if m["type"] == "request"}) == len(
        [m for m in sent if m["type"] == "request"]
    )  # one POST per request
    phases = [
        (r["exchange"], r["phase"]) for r in conv.records(limit=10_000) if r["kind"] == "http"
    ]
    assert all((exchange, "request") in phases for exchange, _ in phases)


class LargeHeaders:
    """WSGI middleware that adds 20 headers of 10,000 bytes each to every response."""

    PADDING = [(f"X-Pad-{n:02d}", "a" * 10_000) for n in range(20)]

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        def padded(status, headers, *exc_info):
            return start_response(status, [*headers, *self.PADDING], *exc_info)

        return self.app(environ, padded)


def test_an_exchange_s_headers_count_in_the_conversation_s_weight():
    """A server whose every response carries 200 kB of headers (a real socket): what the
    conversation counts holds them, and past its bound the oldest records are dropped."""
    from http_fixtures import serving

    from mcp_ref import Client

    conv = Conversation(max_bytes=1_000_000)
    with serving(wrap=LargeHeaders) as served:
        with Client.http(
            served.mcp, trace=conv.trace, http_trace=conv.http_trace, timeout=WAIT
        ) as client:
            for n in range(10):
                assert client.call_tool("echo", {"text": str(n)}).content[0].text == str(n)
    kept = conv.records(limit=10_000)
    padded = [r for r in kept if r["kind"] == "http" and ["X-Pad-00", "a" * 10_000] in r["headers"]]
    header_bytes = sum(len(name) + len(value) for r in kept for name, value in r.get("headers", ()))
    assert padded and header_bytes >= 200_000 * len(padded)
    assert header_bytes <= conv._bytes <= conv.max_bytes  # the headers kept are counted
    assert conv.dropped > 0 and kept[0]["seq"] > 1  # so the oldest went


def test_over_the_legacy_transport_answers_name_the_get_stream():
    from http_fixtures import serving

    with serving() as served:
        conv = http_conversation(served.sse, transport="sse")
    messages = assert_each_message_names_its_exchange(conv)
    assert {m["exchange"] for m in messages if m["direction"] == "receive"} == {1}
    # each names the very event that carried it, among the stream's
    by_seq = {r["seq"]: r for r in conv.records(limit=10_000)}
    for message in (m for m in messages if m["direction"] == "receive"):
        event = by_seq[message["carrier"]]
        assert event["kind"] == "sse" and json.loads(event["data"]) == message["message"]


def test_a_bearer_token_never_reaches_a_record_or_the_export():
    from http_fixtures import serving

    from mcp_ref import Client, McpError
    from mcp_ref.oauth.resource import ProtectedResource
    from mcp_ref.server.principal import AccessInfo
    from mcp_ref.workbench.demo import build_server

    token = "tok-" + "9" * 24

    class OneToken:
        url = ""

        def verify(self, presented: str):
            if presented != token:
                return None
            return AccessInfo(client_id="c1", audience=(self.url,))

    verifier = OneToken()
    app = build_server().wsgi_app(auth=ProtectedResource(verifier, ["https://as.example"]))
    with serving(app=app) as served:
        verifier.url = served.mcp
        conv = Conversation(target=served.mcp)
        refused = Conversation()
        with pytest.raises(McpError):  # no token: 401
            Client.http(
                served.mcp, trace=refused.trace, http_trace=refused.http_trace, timeout=WAIT
            )
        with Client.http(
            served.mcp,
            headers={"Authorization": f"Bearer {token}"},
            trace=conv.trace,
            http_trace=conv.http_trace,
            timeout=WAIT,
        ) as client:
            client.call_tool("echo", {"text": "x"})
    everything = conv.export_jsonl() + json.dumps(conv.records(limit=10_000)) + conv.mermaid("t")
    assert token not in everything
    sent = [
        r for r in conv.records(limit=10_000) if r["kind"] == "http" and r["phase"] == "request"
    ]
    assert all(["Authorization", f"Bearer {MASK}"] in r["headers"] for r in sent)
    statuses = [
        r["status"] for r in refused.records() if r["kind"] == "http" and r["phase"] == "response"
    ]
    assert 401 in statuses


@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_a_resource_uri_s_credentials_never_reach_a_record_or_the_export(era):
    """A resource whose URI holds a password (``https://reader:hunter2@...``) and a token in its
    query was recorded as sent: in resources/list's answer, resources/read's request and answer
    (and, in the 2026-07-28 era, the request's ``Mcp-Name`` header).  Now the URI is shown with
    its userinfo and secret query values masked, everything else in it as sent."""
    from http_fixtures import serving

    from mcp_ref import Client, Server

    uri = "https://reader:hunter2@files.example/doc?token=T0K-77&page=2"
    server = Server("uris")

    @server.resource(uri, name="doc")
    def doc() -> str:
        return "the doc"

    with serving(server) as served:
        conv = Conversation(target=served.mcp)
        with Client.http(
            served.mcp, trace=conv.trace, http_trace=conv.http_trace, timeout=WAIT, era=era
        ) as client:
            assert [r.uri for r in client.list_resources()] == [uri]
            assert client.read_resource(uri).contents[0].text == "the doc"
    records = conv.records(limit=10_000)
    everything = conv.export_jsonl() + json.dumps(records) + conv.mermaid("t")
    assert "hunter2" not in everything and "T0K-77" not in everything
    shown = f"https://{MASK}@files.example/doc?token={MASK}&page=2"
    read = [r for r in records if r["kind"] == "message" and r["method"] == "resources/read"]
    assert [r["message"]["params"]["uri"] for r in read if r["type"] == "request"] == [shown]
    assert [
        r["message"]["result"]["contents"][0]["uri"] for r in read if r["type"] == "result"
    ] == [shown]
    names = [
        value
        for r in records
        if r["kind"] == "http" and r["phase"] == "request"
        for name, value in r["headers"]
        if name.lower() == "mcp-name"
    ]
    assert names == ([MASK] if era == "modern" else [])


@pytest.mark.slow
def test_over_stdio_messages_have_no_exchange_and_stderr_is_recorded():
    import sys

    from mcp_ref import Client

    conv = Conversation(target="serve-demo")
    command = [
        sys.executable,
        "-c",
        "import sys; print('starting', file=sys.stderr, flush=True); "
        "from mcp_ref.workbench.demo import main; main()",
    ]
    with Client.stdio(command, trace=conv.trace, stderr=conv.stderr, timeout=WAIT) as client:
        client.call_tool("echo", {"text": "hi"})
    records = conv.records(limit=10_000)
    messages = [r for r in records if r["kind"] == "message"]
    assert len(messages) >= 4
    assert all(m["exchange"] is None and m["valid"] for m in messages)
    assert {"kind": "stderr", "line": "starting"}.items() <= next(
        r for r in records if r["kind"] == "stderr"
    ).items()


def test_messages_waiting_for_their_request_are_bounded():
    from mcp_ref.inspector.conversation import MAX_HELD

    conv = Conversation(http=True)
    for n in range(MAX_HELD + 5):
        conv.trace("-->", request(n, "ping"))
    held_out = conv.records()
    assert [r["id"] for r in held_out] == [0, 1, 2, 3, 4]  # the oldest, without an exchange
    assert all(r["exchange"] is None for r in held_out)
    conv.http_trace(seen_request(1, request(2, "ping")))  # its request came after all
    assert conv.records()[2]["exchange"] == 1


def test_a_message_whose_id_is_an_object_or_an_array_is_recorded_as_invalid():
    """No JSON-RPC id (2025-06-18 basic/index §Requests: "a string or integer ID"): the message is
    recorded all the same, marked invalid, drawn in the diagram; what follows is recorded too."""
    conv = Conversation()
    conv.set_revision("2025-06-18")
    conv.trace("<--", wire({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}))
    conv.trace("-->", wire({"jsonrpc": "2.0", "id": [1], "result": {}}))
    echo_round(conv, 2)
    ping, answer, call, result = conv.records()
    assert ping["message"]["id"] == {"x": 1} and answer["message"]["id"] == [1]
    assert (ping["valid"], answer["valid"]) == (False, False)
    assert ping["errors"] == answer["errors"] == ["id: not a string or an integer"]
    assert (call["label"], result["label"], result["valid"]) == (
        "tools/call #2 echo",
        "#2 result",
        True,
    )
    assert "ping #{'x': 1}" in conv.mermaid("t")
