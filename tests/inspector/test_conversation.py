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


def test_a_batch_is_one_record_per_message():
    conv = Conversation()
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
