"""The inspector's live side over its real HTTP API: the demo server over stdio (a subprocess) and
over HTTP (a subprocess on a real socket), in both eras; the page's requests, the server's asks
answered through the API, and what is pushed on the ``events`` stream."""

from __future__ import annotations

import json
import queue
import threading

import pytest
from conftest import WAIT
from inspector_harness import Inspector, demo_over_http, record_of, strict_json

from mcp_ref.inspector import live
from mcp_ref.inspector.masking import MASK
from mcp_ref.request import RequestContext
from mcp_ref.sampling_and_elicitation import ElicitParams
from mcp_ref.workbench.demo import server_command

pytestmark = pytest.mark.slow

PLACES = [
    pytest.param(("stdio", "modern"), id="stdio-modern"),
    pytest.param(("stdio", "handshake"), id="stdio-handshake"),
    pytest.param(("http", "modern"), id="http-modern"),
    pytest.param(("http", "handshake"), id="http-handshake"),
]


@pytest.fixture(scope="module")
def demo_url():
    with demo_over_http() as url:
        yield url


@pytest.fixture
def inspect(demo_url):
    """``inspect(place, **options)``: an inspector of the demo, over stdio or HTTP, in one era;
    connected; closed after the test."""
    made: list[Inspector] = []

    def start(place: tuple[str, str], **options) -> Inspector:
        transport, era = place
        target = [demo_url] if transport == "http" else ["--", *server_command()]
        made.append(Inspector("--era", era, *target, **options))
        state = made[-1].state
        assert state["connected"], state
        assert state["era"] == era
        return made[-1]

    yield start
    for inspector in made:
        inspector.close()


@pytest.mark.parametrize("place", PLACES)
def test_the_state_says_who_the_server_is(inspect, place):
    inspector = inspect(place)
    state = inspector.post("connect", {"era": place[1]})
    assert state["server_info"]["name"] == "mcp-ref-demo"
    assert state["instructions"].startswith("A demo of every MCP feature")
    assert state["transport"] == ("stdio" if place[0] == "stdio" else "streamable")
    assert "tools" in state["capabilities"]
    assert {"sampling", "elicitation", "roots"} <= set(state["client_capabilities"])
    assert state["protocol_version"] == ("2026-07-28" if place[1] == "modern" else "2025-11-25")
    assert inspector.get("api/state").json() == state


@pytest.mark.parametrize("place", PLACES)
def test_listings_come_one_page_at_a_time(inspect, place):
    inspector = inspect(place)
    first = inspector.post("list", {"what": "tools", "cursor": None})
    assert [tool["name"] for tool in first["items"]][:2] == ["echo", "add"]
    assert len(first["items"]) == 5 and first["nextCursor"]  # the demo's pages hold 5
    second = inspector.post("list", {"what": "tools", "cursor": first["nextCursor"]})
    assert second["items"] and second["items"][0]["name"] not in {t["name"] for t in first["items"]}
    for what, name in (("resources", "demo://readme"), ("templates", "demo://greeting/{name}")):
        items = inspector.post("list", {"what": what})["items"]
        assert name in [item.get("uri") or item.get("uriTemplate") for item in items]
    assert "greet" in [
        prompt["name"] for prompt in inspector.post("list", {"what": "prompts"})["items"]
    ]
    refused = inspector.post("list", {"what": "everything"}, status=400)
    assert refused["error"]["message"].startswith("what must be")


@pytest.mark.parametrize("place", PLACES)
def test_a_call_pushes_its_progress_and_its_result_is_checked(inspect, place):
    inspector = inspect(place)
    events = inspector.events()
    inspector.post("list", {"what": "tools"})  # the tools' outputSchema, known from the listing
    answer = inspector.post(
        "call", {"call": "c1", "name": "count_slowly", "arguments": {"steps": 3, "delay": 0}}
    )
    assert answer["result"]["content"][0]["text"] == "counted to 3"
    progress = events.wait_for("progress", lambda data: data["progress"] == 3)
    assert progress == {"call": "c1", "progress": 3, "total": 3, "message": "step 3 of 3"}
    weather = inspector.post(
        "call", {"call": "c2", "name": "weather", "arguments": {"city": "Oslo"}}
    )
    assert weather["result"]["structuredContent"]["city"] == "Oslo"
    assert weather["output_check"] == {"valid": True, "errors": []}
    failed = inspector.post("call", {"call": "c3", "name": "divide", "arguments": {"a": 1, "b": 0}})
    assert failed["result"]["isError"] is True and failed["output_check"] is None
    unknown = inspector.post("call", {"call": "c4", "name": "no_such_tool", "arguments": {}})
    assert set(unknown) == {"error"} or unknown["result"]["isError"]


@pytest.mark.parametrize("place", PLACES)
def test_a_call_is_cancelled_from_the_page(inspect, place):
    inspector = inspect(place)
    events = inspector.events()
    waiting = inspector.in_background(
        "call", {"call": "long", "name": "wait_for_cancel", "arguments": {"seconds": WAIT * 3}}
    )
    events.wait_for("record", record_of("tools/call", "wait_for_cancel"))
    assert inspector.post("cancel", {"call": "long"}) == {"cancelled": True}
    answer = waiting()
    assert answer["error"]["message"] == "cancelled"
    assert inspector.post("cancel", {"call": "long"}) == {"cancelled": False}  # it has ended


@pytest.mark.parametrize("place", PLACES)
def test_an_elicitation_is_answered_through_the_page(inspect, place):
    inspector = inspect(place)
    events = inspector.events()
    waiting = inspector.in_background("call", {"call": "c1", "name": "ask_user", "arguments": {}})
    ask = events.wait_for("ask")
    assert ask["kind"] == "elicitation" and ask["mode"] == "form"
    assert ask["params"]["requestedSchema"]["required"] == ["name"]
    assert ask["expires"] > 0
    reopened = inspector.events()  # a page that (re)connects is shown what waits
    assert reopened.wait_for("asks-waiting") == {"asks": [ask["ask"]]}
    assert reopened.wait_for("ask") == ask
    inspector.post("answer", {"ask": ask["ask"], "action": "accept", "content": {"name": "Ada"}})
    assert waiting()["result"]["content"][0]["text"] == "hello Ada, who likes blue"
    assert events.wait_for("ask-done") == {"ask": ask["ask"], "outcome": "answered"}
    # a page whose stream was lost meanwhile learns that nothing waits any more
    assert inspector.events().wait_for("asks-waiting") == {"asks": []}
    gone = inspector.post("answer", {"ask": ask["ask"], "action": "accept"}, status=400)
    assert "no such request" in gone["error"]["message"]


@pytest.mark.parametrize("place", PLACES)
def test_a_sampling_request_is_answered_or_declined_through_the_page(inspect, place):
    inspector = inspect(place)
    events = inspector.events()
    waiting = inspector.in_background(
        "call", {"call": "c1", "name": "ask_llm", "arguments": {"question": "6 x 7?"}}
    )
    ask = events.wait_for("ask")
    assert ask["kind"] == "sampling" and ask["mode"] is None
    assert ask["params"]["messages"][0]["content"]["text"] == "6 x 7?"
    bad = inspector.post(
        "answer", {"ask": ask["ask"], "action": "accept", "result": {}}, status=400
    )
    assert "CreateMessageResult" in bad["error"]["message"]
    reply = {"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "a person"}
    inspector.post("answer", {"ask": ask["ask"], "action": "accept", "result": reply})
    assert waiting()["result"]["content"][0]["text"] == "a person says: 42"
    declined = inspector.in_background(
        "call", {"call": "c2", "name": "ask_llm", "arguments": {"question": "again?"}}
    )
    second = events.wait_for("ask", lambda data: data["ask"] != ask["ask"])
    inspector.post("answer", {"ask": second["ask"], "action": "decline"})
    answer = declined()
    # the server's tool fails on the refusal: a tool error, or the refusal itself (2026-07-28)
    refused = answer.get("error") or answer["result"]
    assert "rejected" in str(refused)


@pytest.mark.parametrize("place", PLACES)
def test_an_ask_that_nobody_answers_expires(inspect, place):
    inspector = inspect(place, answer_timeout=0.3)
    events = inspector.events()
    waiting = inspector.in_background("call", {"call": "c1", "name": "ask_user", "arguments": {}})
    ask = events.wait_for("ask")
    assert events.wait_for("ask-done") == {"ask": ask["ask"], "outcome": "expired"}
    assert waiting()["result"]["content"][0]["text"] == "the user chose to cancel"


def test_an_ask_whose_answer_timeout_no_lock_can_hold_still_waits_for_its_answer(inspect):
    """An answer timeout past what a lock's wait can hold (``threading.TIMEOUT_MAX``) is waited
    for as long as the wait can: the ask is answered through the page, not a failed call with
    the ask left behind in the table."""
    inspector = inspect(("stdio", "modern"), answer_timeout=1e10)
    events = inspector.events()
    waiting = inspector.in_background("call", {"call": "c1", "name": "ask_user", "arguments": {}})
    ask = events.wait_for("ask")
    inspector.post("answer", {"ask": ask["ask"], "action": "accept", "content": {"name": "Ada"}})
    assert waiting()["result"]["content"][0]["text"] == "hello Ada, who likes blue"
    assert events.wait_for("ask-done") == {"ask": ask["ask"], "outcome": "answered"}
    assert inspector.events().wait_for("asks-waiting") == {"asks": []}


@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_a_wait_that_fails_leaves_no_ask_behind_and_the_page_is_told(
    inspect, monkeypatch, caplog, era
):
    """The wait for the page's answer fails (the inspector's own failure): its terminal logs why,
    the page's card goes (``ask-done``, ``failed``), and the request is not answered: in the
    2026-07-28 era the page's call (whose retry would carry the answer) ends with a clear 409, not
    a 500; in the handshake era the server is told -32603, and its tool fails with it.  The page then
    works as before: a new ask is answered through it."""

    def failing_wait(ask, context):
        raise OverflowError("timestamp out of range for platform time_t")

    monkeypatch.setattr(live.InspectedServer, "_wait_for_the_end", staticmethod(failing_wait))
    inspector = inspect(("stdio", era))
    events = inspector.events()
    ask_user = {"call": "c1", "name": "ask_user", "arguments": {}}
    with caplog.at_level("ERROR", logger="mcp_ref.inspector"):
        if era == "modern":
            failed = inspector.post("call", ask_user, status=409)
            assert failed["error"]["message"] == (
                "the server's elicitation request could not wait for the page's answer (the "
                "inspector's terminal says why); it was not answered"
            )
        else:
            failed = inspector.post("call", ask_user)  # the server's JSON-RPC error, as it sent it
            assert failed["error"]["code"] == -32603
    ask = events.wait_for("ask")
    assert events.wait_for("ask-done") == {"ask": ask["ask"], "outcome": "failed"}
    assert inspector.inspected.pending_asks() == []
    assert "timestamp out of range" in caplog.text  # the terminal says why
    monkeypatch.undo()
    waiting = inspector.in_background("call", {**ask_user, "call": "c2"})
    second = events.wait_for("ask", lambda data: data["ask"] != ask["ask"])
    inspector.post("answer", {"ask": second["ask"], "action": "accept", "content": {"name": "Ada"}})
    assert waiting()["result"]["content"][0]["text"] == "hello Ada, who likes blue"


IMPATIENT_SERVER = """
from mcp_ref import Context, Server

server = Server("impatient")


@server.tool
def ask_briefly(ctx: Context) -> str:
    try:
        answer = ctx.elicit("Quick?", {"type": "object", "properties": {}}, timeout=0.3)
    except Exception as exc:
        return f"gave up: {type(exc).__name__}"
    return answer.action


if __name__ == "__main__":
    server.run()
"""


def test_an_ask_the_server_cancels_ends_on_the_page(tmp_path):
    """Handshake era: the server gives up waiting (its request's timeout) and sends
    notifications/cancelled; the page is told the ask ended, cancelled."""
    import sys

    (tmp_path / "impatient.py").write_text(IMPATIENT_SERVER)
    inspector = Inspector(
        "--era", "handshake", "--", sys.executable, str(tmp_path / "impatient.py")
    )
    try:
        events = inspector.events()
        waiting = inspector.in_background(
            "call", {"call": "c1", "name": "ask_briefly", "arguments": {}}
        )
        ask = events.wait_for("ask")
        assert events.wait_for("ask-done") == {"ask": ask["ask"], "outcome": "cancelled"}
        assert waiting()["result"]["content"][0]["text"].startswith("gave up")
        sent = [r["label"] for r in inspector.conversation.records() if r["kind"] == "message"]
        assert "notifications/cancelled" in sent
    finally:
        inspector.close()


@pytest.mark.parametrize(
    "place", [PLACES[0], *(p for p in PLACES if p.values[0][1] == "handshake")]
)
def test_cancelling_a_call_ends_its_ask_at_once(inspect, place):
    """Cancelling the call on the page ends its ask, cancelled, at once (the answer timeout is the
    default 300 s; the test waits at most WAIT).  2026-07-28: the server's input request belongs
    to the call.  Handshake era: the server cancels the elicitation it sent for the call
    (notifications/cancelled), and that notification alone ends the ask."""
    inspector = inspect(place)
    events = inspector.events()
    waiting = inspector.in_background("call", {"call": "c1", "name": "ask_user", "arguments": {}})
    ask = events.wait_for("ask")
    assert inspector.post("cancel", {"call": "c1"}) == {"cancelled": True}
    assert events.wait_for("ask-done") == {"ask": ask["ask"], "outcome": "cancelled"}
    assert waiting()["error"]["message"] == "cancelled"
    if place[1] == "modern":
        return
    received = [
        r["message"]
        for r in inspector.conversation.records()
        if r["kind"] == "message" and r["direction"] == "receive"
    ]
    elicitation = next(m for m in received if m.get("method") == "elicitation/create")
    cancellation = next(m for m in received if m.get("method") == "notifications/cancelled")
    assert cancellation["params"]["requestId"] == elicitation["id"]
    sent_to_it = [
        r["message"]
        for r in inspector.conversation.records()
        if r["kind"] == "message"
        and r["direction"] == "send"
        and "method" not in r["message"]
        and r["message"].get("id") == elicitation["id"]
    ]
    assert sent_to_it == []  # cancelled: no answer (basic/utilities/cancellation)


def test_a_parked_ask_ends_when_the_connection_is_remade(inspect):
    """Reconnecting closes the old connection: its parked ask ends at once, cancelled."""
    inspector = inspect(("stdio", "handshake"))
    events = inspector.events()
    waiting = inspector.in_background("call", {"call": "c1", "name": "ask_user", "arguments": {}})
    ask = events.wait_for("ask")
    assert inspector.post("connect", {})["connected"]
    assert events.wait_for("ask-done") == {"ask": ask["ask"], "outcome": "cancelled"}
    with pytest.raises(AssertionError, match="connection closed before an answer arrived"):
        waiting()  # its call ended with the old connection (HTTP 409)
    assert inspector.post("answer", {"ask": ask["ask"], "action": "accept"}, status=400)


def test_the_64th_ask_waits_and_the_65th_is_refused_at_once(inspect):
    """At the bound itself: 2026-07-28, where a parked ask holds no thread of the server's nor
    of the client's handler pool (the call's own thread answers its input requests), 64 asks
    wait; the 65th request is answered at once as if it had expired, and a note says so."""
    assert live.MAX_ASKS == 64
    inspector = inspect(("stdio", "modern"))
    events = inspector.events()
    calls = [
        inspector.in_background(
            "call", {"call": f"c{n}", "name": "ask_user", "arguments": {}}, timeout=WAIT * 6
        )
        for n in range(1, 65)
    ]
    asks = [events.wait_for("ask", timeout=WAIT * 3) for _ in range(64)]
    assert len(inspector.inspected.pending_asks()) == 64
    refused = inspector.post("call", {"call": "c65", "name": "ask_user", "arguments": {}})
    assert refused["result"]["content"][0]["text"] == "the user chose to cancel"
    notes = [r["text"] for r in inspector.conversation.records() if r["kind"] == "note"]
    assert any(note.startswith("64 server requests already wait for an answer") for note in notes)
    # the 64 still wait: each is answered through the page
    for ask in asks:
        inspector.post("answer", {"ask": ask["ask"], "action": "decline"})
    for call in calls:
        assert call()["result"]["content"][0]["text"] == "the user chose to decline"
    assert inspector.inspected.pending_asks() == []


def test_past_the_bound_an_ask_is_refused_at_once(inspect, monkeypatch):
    monkeypatch.setattr(live, "MAX_ASKS", 1)
    inspector = inspect(("stdio", "handshake"))
    events = inspector.events()
    first = inspector.in_background("call", {"call": "c1", "name": "ask_user", "arguments": {}})
    ask = events.wait_for("ask")
    second = inspector.post("call", {"call": "c2", "name": "ask_user", "arguments": {}})
    assert second["result"]["content"][0]["text"] == "the user chose to cancel"
    inspector.post("answer", {"ask": ask["ask"], "action": "decline"})
    assert first()["result"]["content"][0]["text"] == "the user chose to decline"
    notes = [r["text"] for r in inspector.conversation.records() if r["kind"] == "note"]
    assert any("already wait for an answer" in note for note in notes)


@pytest.mark.parametrize("place", PLACES)
def test_a_subscription_pushes_updates(inspect, place):
    inspector = inspect(place)
    events = inspector.events()
    assert inspector.post("subscribe", {"uri": "demo://counter", "on": True}) == {}
    inspector.post("call", {"call": "c1", "name": "bump_counter", "arguments": {}})
    assert events.wait_for("updated") == {"uri": "demo://counter"}
    read = inspector.post("read", {"uri": "demo://counter"})
    assert read["result"]["contents"][0]["uri"] == "demo://counter"
    assert inspector.post("subscribe", {"uri": "demo://counter", "on": False}) == {}


@pytest.mark.parametrize("place", PLACES)
def test_completion_and_a_prompt(inspect, place):
    inspector = inspect(place)
    completed = inspector.post(
        "complete",
        {
            "ref": {"type": "ref/prompt", "name": "greet"},
            "argument": {"name": "style", "value": "f"},
            "context": {"arguments": {"name": "Ada"}},
        },
    )
    assert completed["completion"]["values"] == ["formal"]
    template = inspector.post(
        "complete",
        {
            "ref": {"type": "ref/resource", "uri": "demo://greeting/{name}"},
            "argument": {"name": "name", "value": ""},
            "context": None,
        },
    )
    assert template["completion"]["values"]
    prompt = inspector.post("prompt", {"name": "greet", "arguments": {"name": "Ada"}})
    assert "Ada" in prompt["result"]["messages"][0]["content"]["text"]


@pytest.mark.parametrize("place", PLACES)
def test_the_log_level_and_the_log_pane(inspect, place):
    inspector = inspect(place)
    events = inspector.events()
    assert inspector.post("log-level", {"level": "debug"}) == {}
    inspector.post("call", {"call": "c1", "name": "log_levels", "arguments": {}})
    debug = events.wait_for("log", lambda data: data["level"] == "debug")
    assert debug == {"level": "debug", "logger": "demo", "data": "a debug message"}
    assert inspector.get("api/state").json()["log_level"] == "debug"
    inspector.post("log-level", {"level": "loud"}, status=400)


@pytest.mark.parametrize("place", PLACES)
def test_roots_edited_on_the_page(inspect, place, tmp_path):
    inspector = inspect(place)
    root = tmp_path.as_uri()
    assert inspector.post("roots", {"roots": [{"uri": root, "name": "work"}]}) == {}
    shown = inspector.post("call", {"call": "c1", "name": "show_roots", "arguments": {}})
    assert shown["result"]["content"][0]["text"] == f"work: {root}"
    sent = [
        r["message"].get("method")
        for r in inspector.conversation.records()
        if r["kind"] == "message"
    ]
    assert ("notifications/roots/list_changed" in sent) == (place[1] == "handshake")
    bad = inspector.post("roots", {"roots": [{"uri": "https://example.com/"}]}, status=400)
    assert "file://" in bad["error"]["message"]


@pytest.mark.parametrize("place", PLACES)
def test_a_task(inspect, place):
    inspector = inspect(place)
    answer = inspector.post(
        "call", {"call": "t1", "name": "build_report", "arguments": {"topic": "owls"}, "task": True}
    )
    assert answer["result"]["content"][0]["text"] == "A short report on owls: it works."
    tasks = inspector.post("list", {"what": "tasks"})["items"]
    assert tasks, "the task the call made is listed"
    task_id = tasks[0]["taskId"]
    got = inspector.post("task", {"action": "get", "taskId": task_id})["result"]
    assert got.get("status") == "completed" or got.get("task", {}).get("status") == "completed"
    result = inspector.post("task", {"action": "result", "taskId": task_id})["result"]
    assert "owls" in str(result)


@pytest.mark.parametrize("place", PLACES)
def test_reconnecting_in_the_other_era(inspect, place):
    inspector = inspect(place)
    other = "handshake" if place[1] == "modern" else "modern"
    events = inspector.events()
    state = inspector.post("connect", {"era": other})
    assert state["connected"] and state["era"] == other
    note = events.wait_for("record", lambda r: r["kind"] == "note" and "reconnecting" in r["text"])
    assert other in note["text"]
    events.wait_for("state", lambda s: s["connected"] and s["era"] == other)
    assert inspector.post("list", {"what": "tools"})["items"]
    assert inspector.post("connect", {})["era"] == other  # Reconnect stays in the era chosen


def test_records_carry_the_http_exchanges(inspect):
    inspector = inspect(("http", "modern"))
    inspector.post("call", {"call": "c1", "name": "echo", "arguments": {"text": "hi"}})
    records = inspector.get("api/records?after=0&limit=1000").json()["records"]
    exchanges = [r for r in records if r["kind"] == "http"]
    assert {r["phase"] for r in exchanges} == {"request", "response"}
    calls = [r for r in records if record_of("tools/call", "echo")(r)]
    assert calls and calls[0]["exchange"] in {r["exchange"] for r in exchanges}


def test_the_page_works_when_the_first_connect_fails():
    inspector = Inspector("--", "no-such-command-for-mcp-ref")
    try:
        state = inspector.state
        assert (
            not state["connected"]
            and "cannot launch 'no-such-command-for-mcp-ref'" in state["error"]
        )
        refused = inspector.post("list", {"what": "tools"}, status=409)
        assert refused["error"]["message"] == "not connected: connect first"
        assert inspector.get("api/state").json()["error"] == state["error"]
    finally:
        inspector.close()


def test_the_2024_11_05_http_sse_transport(demo_url):
    """``--transport sse``: the HTTP+SSE transport, said in the state; the page works as over the others."""
    inspector = Inspector("--transport", "sse", demo_url.replace("/mcp", "/sse"))
    try:
        state = inspector.state
        assert state["connected"], state
        assert (state["transport"], state["era"]) == ("sse", "handshake")
        echoed = inspector.post("call", {"call": "c1", "name": "echo", "arguments": {"text": "hi"}})
        assert echoed["result"]["content"][0]["text"] == "hi"
        records = inspector.conversation.records()
        assert any(r["kind"] == "sse" for r in records)
    finally:
        inspector.close()


def test_a_server_that_exits_is_shown_disconnected(tmp_path):
    """The launched server exits (here: its tool ends the process): the page is told at once, and
    Reconnect launches it again."""
    import sys

    (tmp_path / "brittle.py").write_text(
        "import os\nfrom mcp_ref import Server\n\nserver = Server('brittle')\n\n\n"
        "@server.tool\ndef crash() -> str:\n    os._exit(3)\n\n\n"
        "if __name__ == '__main__':\n    server.run()\n"
    )
    inspector = Inspector("--era", "handshake", "--", sys.executable, str(tmp_path / "brittle.py"))
    try:
        events = inspector.events()
        events.wait_for("state", lambda s: s["connected"])
        inspector.post("call", {"call": "c1", "name": "crash", "arguments": {}}, status=409)
        state = events.wait_for("state", lambda s: not s["connected"])
        assert state["error"] == "the connection to the server ended"
        assert inspector.post("list", {"what": "tools"}, status=409)
        assert inspector.post("connect", {})["connected"]
        assert inspector.post("list", {"what": "tools"})["items"][0]["name"] == "crash"
    finally:
        inspector.close()


@pytest.mark.parametrize("place", PLACES)
def test_a_changed_list_is_pushed(inspect, place):
    inspector = inspect(place)
    events = inspector.events()
    # a name of this place's own: the demo over HTTP is one server for the module's tests, and
    # it keeps a tool added (a second test adding the same name would be refused)
    name = f"extra_{place[0]}_{place[1]}"
    added = inspector.post("call", {"call": "c1", "name": "add_tool", "arguments": {"name": name}})
    assert added["result"]["content"][0]["text"] == f"added {name}"
    assert events.wait_for("list-changed") == {"what": "tools"}


def test_calls_running_at_once_are_bounded(inspect, monkeypatch):
    monkeypatch.setattr(live, "MAX_CALLS", 1)
    inspector = inspect(("stdio", "handshake"))
    events = inspector.events()
    long = {"call": "c1", "name": "wait_for_cancel", "arguments": {"seconds": WAIT * 3}}
    waiting = inspector.in_background("call", long)
    events.wait_for("record", record_of("tools/call", "wait_for_cancel"))
    again = inspector.post("call", long, status=400)
    assert again["error"]["message"] == "a call c1 is running already"
    other = inspector.post("call", {**long, "call": "c2"}, status=400)
    assert other["error"]["message"] == "1 calls are running: wait for one to end"
    inspector.post("cancel", {"call": "c1"})
    assert waiting()["error"]["message"] == "cancelled"
    assert inspector.post("call", {"call": "c2", "name": "echo", "arguments": {"text": "x"}})


def test_the_last_call_the_bound_allows_runs_and_the_next_is_refused(monkeypatch):
    """The bound is 256 calls at once; the inspector reads it from ``live.MAX_CALLS`` each time,
    so the test lowers it to 8 (256 POSTs held open at once do not start in time on a loaded
    2-CPU machine): the 8th call runs (the server queues what its handler pool cannot take yet);
    the 9th is refused (HTTP 400) until one of them ends."""
    assert live.MAX_CALLS == 256
    monkeypatch.setattr(live, "MAX_CALLS", 8)
    inspector = Inspector("--era", "handshake", "--", *server_command())
    try:
        events = inspector.events()
        long = {"name": "wait_for_cancel", "arguments": {"seconds": WAIT * 6}}
        calls = [
            inspector.in_background("call", {**long, "call": f"c{n}"}, timeout=WAIT * 6)
            for n in range(1, 9)
        ]
        for _ in range(8):  # every one of them sent: each is in the table of running calls
            events.wait_for("record", record_of("tools/call", "wait_for_cancel"))
        refused = inspector.post("call", {**long, "call": "c9"}, status=400)
        assert refused["error"]["message"] == "8 calls are running: wait for one to end"
        assert inspector.post("cancel", {"call": "c1"}) == {"cancelled": True}
        assert calls[0]()["error"]["message"] == "cancelled"
        # one ended: the 9th runs now
        calls.append(inspector.in_background("call", {**long, "call": "c9"}, timeout=WAIT * 6))
        events.wait_for("record", record_of("tools/call", "wait_for_cancel"))
        for n in range(2, 10):
            assert inspector.post("cancel", {"call": f"c{n}"}) == {"cancelled": True}
        for call in calls[1:]:
            assert call()["error"]["message"] == "cancelled"
    finally:
        inspector.close()


def test_a_page_id_of_64_characters_is_taken_and_one_of_65_refused(inspect):
    assert live.MAX_ID_LENGTH == 64
    inspector = inspect(("stdio", "handshake"))
    echo = {"name": "echo", "arguments": {"text": "x"}}
    assert "result" in inspector.post("call", {**echo, "call": "c" * 64})
    refused = inspector.post("call", {**echo, "call": "c" * 65}, status=400)
    assert refused["error"]["message"] == "call must be a string of 1 to 64 characters"
    assert inspector.post("cancel", {"call": "c" * 64}) == {"cancelled": False}
    inspector.post("cancel", {"call": "c" * 65}, status=400)


#: The stdio loop of the bare servers below: each line a request, answered by ``result_of``.
ANSWER_EACH_LINE = """
for line in sys.stdin:
    message = json.loads(line)
    if "id" in message and "method" in message:
        result = result_of(message["method"], message.get("params") or {})
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""


#: A bare JSON-RPC server over stdio (2025-11-25) with 10,001 tools, each with an outputSchema,
#: listed 1,000 a page (our Server checks each registered tool's schemas: 10,001 take long).
MANY_TOOLS_SERVER = """
import json
import sys

TOOL_COUNT, PAGE = 10_001, 1_000
OUTPUT = {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}


def result_of(method, params):
    if method == "initialize":
        return {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "many", "version": "1"},
        }
    if method == "tools/list":
        start = int(params.get("cursor") or 0)
        end = min(start + PAGE, TOOL_COUNT)
        tools = [
            {"name": f"t{n}", "inputSchema": {"type": "object"}, "outputSchema": OUTPUT}
            for n in range(start + 1, end + 1)
        ]
        return {"tools": tools, **({"nextCursor": str(end)} if end < TOOL_COUNT else {})}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": "1"}], "structuredContent": {"result": 1}}
    return {}
"""


def test_the_10000th_tools_output_schema_is_kept_and_the_10001st_is_not(tmp_path):
    """At the bound itself: the listing's first 10,000 tools have their outputSchema kept, to
    check their results against; past it a tool's result is not checked (output_check None)."""
    import sys

    assert live.MAX_KNOWN_TOOLS == 10_000
    (tmp_path / "many.py").write_text(MANY_TOOLS_SERVER + ANSWER_EACH_LINE)
    inspector = Inspector("--era", "handshake", "--", sys.executable, str(tmp_path / "many.py"))
    try:
        names: list[str] = []
        cursor = None
        while True:
            page = inspector.post("list", {"what": "tools", "cursor": cursor})
            names += [tool["name"] for tool in page["items"]]
            cursor = page["nextCursor"]
            if cursor is None:
                break
        assert names == [f"t{n}" for n in range(1, 10_002)]
        kept = inspector.post("call", {"call": "c1", "name": "t10000", "arguments": {}})
        assert kept["output_check"] == {"valid": True, "errors": []}
        past = inspector.post("call", {"call": "c2", "name": "t10001", "arguments": {}})
        assert past["result"]["structuredContent"] == {"result": 1}
        assert past["output_check"] is None
    finally:
        inspector.close()


#: A bare JSON-RPC server over stdio (2025-11-25) whose one tool's ``outputSchema`` refers to the
#: URI given as its first argument.
REMOTE_REF_SERVER = """
import json
import sys

OUTPUT = {"type": "object", "properties": {"n": {"$ref": sys.argv[1]}}}


def result_of(method, params):
    if method == "initialize":
        return {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "remote-ref", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": [{"name": "t", "inputSchema": {"type": "object"}, "outputSchema": OUTPUT}]}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": "1"}], "structuredContent": {"n": 1}}
    return {}
"""


def test_a_tools_output_schema_naming_a_url_is_checked_without_fetching_it(tmp_path):
    """A hostile server's ``outputSchema`` with a ``$ref`` to a URL (here a socket on this machine
    that would take the connection): the inspector never opens it, and the result is shown with
    its check saying why it could not be checked (it answered 500 and opened the URL)."""
    import socket
    import sys

    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/schema.json"
    (tmp_path / "remote_ref.py").write_text(REMOTE_REF_SERVER + ANSWER_EACH_LINE)
    inspector = Inspector(
        "--era", "handshake", "--", sys.executable, str(tmp_path / "remote_ref.py"), url
    )
    try:
        inspector.post("list", {"what": "tools"})
        answer = inspector.post("call", {"call": "c1", "name": "t", "arguments": {}})
        assert answer["result"]["structuredContent"] == {"n": 1}
        assert answer["output_check"] == {
            "valid": False,
            "errors": [f"the outputSchema's $ref is not in it: {url}"],
        }
        with pytest.raises(BlockingIOError):  # nobody connected
            listener.accept()
    finally:
        inspector.close()
        listener.close()


def test_the_tasks_started_are_remembered_up_to_the_bound(inspect, monkeypatch):
    """2026-07-28 (the demo has no ``tasks/list``): the page lists the tasks it started, the
    latest MAX_STARTED_TASKS of them.  Lowered to 2 here (a task takes a few round trips each);
    the default is the constant the code reads."""
    assert live.MAX_STARTED_TASKS == 1_000
    monkeypatch.setattr(live, "MAX_STARTED_TASKS", 2)
    inspector = inspect(("stdio", "modern"))
    started = []
    for n in range(1, 4):
        report = {"name": "build_report", "arguments": {"topic": f"t{n}"}, "task": True}
        inspector.post("call", {**report, "call": f"c{n}"})
        started.append(inspector.post("list", {"what": "tasks"})["items"][-1]["taskId"])
    listed = inspector.post("list", {"what": "tasks"})["items"]
    assert [task["taskId"] for task in listed] == started[1:]
    assert {task["tool"] for task in listed} == {"build_report"}


def test_an_ask_ends_at_once_when_its_requests_cancelled_event_is_set_by_another_owner():
    """The request's ``cancelled`` Event set by whoever holds it (as a client-hosted task's is, by
    tasks/cancel), not by the session: the ask ends at once, cancelled (the answer timeout is far
    beyond the test's wait), the elicitation answered ``cancel``, the context still cancelled."""
    inspector = Inspector("--", "unused", answer_timeout=WAIT * 20, connect=False)
    try:
        events: queue.Queue = queue.Queue()
        inspector.inspected.add_listener(lambda event, data: events.put((event, data)))
        context = RequestContext(None, 7, "elicitation/create", {})
        owned = context.cancelled  # the Event its owner keeps
        answers: queue.Queue = queue.Queue()
        params = ElicitParams(message="Quick?", requested_schema={"type": "object"})
        threading.Thread(
            target=lambda: answers.put(inspector.inspected._elicit(params, context)), daemon=True
        ).start()
        assert events.get(timeout=WAIT)[0] == "ask"
        owned.set()
        event, data = events.get(timeout=WAIT)
        assert (event, data["outcome"]) == ("ask-done", "cancelled")
        assert answers.get(timeout=WAIT) == {"action": "cancel"}
        assert context.is_cancelled
        assert owned._callbacks == []  # the ask's callback was called once and is gone
    finally:
        inspector.close()


# -- what strict JSON, UTF-8 or Markdown cannot carry as it is (servers/strange_text_server.py) --


def strange_server(*words: str) -> list[str]:
    """``-- python tests/servers/strange_text_server.py WORDS``: an inspector's target."""
    import sys

    from conftest import SERVERS

    server = str(SERVERS / "strange_text_server.py")
    return ["--era", "handshake", "--", sys.executable, server, *words]


def logged(level: str):
    """A ``where`` for :meth:`EventReader.wait_for`: the record of a log message of ``level``
    received."""

    def where(record: dict) -> bool:
        message = record.get("message")
        return (
            record.get("direction") == "receive"
            and isinstance(message, dict)
            and message.get("method") == "notifications/message"
            and message.get("params", {}).get("level") == level
        )

    return where


def test_a_lone_surrogate_or_a_nan_from_the_server_reaches_the_page_as_strict_json():
    """A log message holding a lone surrogate (``"bad \\ud800 text"``: a JavaScript string cut
    mid-emoji) and one holding NaN: each event, ``api/records`` and the export are strict JSON in
    UTF-8 (the page's ``JSON.parse`` takes nothing else), the surrogate U+FFFD, the NaN the string
    "NaN"; the event stream goes on past them (it used to end at the surrogate's record, and again
    at every reconnection), and so does the traffic after them."""
    inspector = Inspector(*strange_server("plain-name"))
    try:
        events = inspector.events()
        events.wait_for("state", lambda state: state["connected"])
        assert inspector.post("list", {"what": "tools"})["items"] == []
        surrogate = events.wait_for("record", logged("error"))
        assert surrogate["message"]["params"]["data"] == "bad \ufffd text"
        nan = events.wait_for("record", logged("info"))
        assert nan["message"]["params"]["data"] == "NaN"
        events.wait_for("record", lambda record: record.get("label", "").endswith(" result"))
        inspector.post("list", {"what": "tools"})  # later traffic reaches the page too
        assert events.wait_for("record", logged("info"))["seq"] > nan["seq"]
        # the log pane's event (pushed beside the records, in no set order with them)
        log = [data for event, data, _ in events.seen if event == "log"]
        log = log or [events.wait_for("log")]
        assert log[0] == {"level": "error", "logger": None, "data": "bad \ufffd text"}
        again = inspector.events(after=0)  # a page that reconnects catches up past them
        assert again.wait_for("record", logged("info"))["message"]["params"]["data"] == "NaN"
        for route in ("api/records?after=0", "api/export.jsonl"):
            response = inspector.get(route)
            assert response.status_code == 200, response.text
            text = response.content.decode("utf-8")  # strict: no surrogate was written
            lines = [text] if route.startswith("api/records") else text.splitlines()
            parsed = [strict_json(line) for line in lines]
            assert "bad \ufffd text" in json.dumps(parsed, ensure_ascii=False), route
    finally:
        inspector.close()


def test_a_lone_surrogate_in_the_server_s_name_leaves_the_state_readable():
    """``serverInfo.name`` holding a lone surrogate: ``api/connect``, ``api/state``, the event
    stream's state and ``api/export.md`` answer (each answered 500, and the stream ended before
    its first event), the name shown with U+FFFD."""
    inspector = Inspector(*strange_server(), connect=False)
    try:
        state = inspector.post("connect", {})
        assert state["connected"] and state["server_info"]["name"] == "weather \ufffd"
        response = inspector.get("api/state")
        assert response.status_code == 200, response.text
        assert strict_json(response.content.decode("utf-8")) == state
        events = inspector.events()
        assert events.wait_for("state")["server_info"]["name"] == "weather \ufffd"
        diagram = inspector.get("api/export.md")
        assert diagram.status_code == 200 and "participant S as weather \ufffd" in diagram.text
    finally:
        inspector.close()


def test_a_server_s_method_stays_inside_the_diagram_of_export_md():
    """A notification method holding line breaks and a code fence: ``api/export.md`` draws it on
    one line of the diagram, and the Markdown holds one code fence, the diagram's (the method
    used to end it and write a heading and a link of the server's into the document)."""
    inspector = Inspector(*strange_server("plain-name"))
    try:
        inspector.post("list", {"what": "tools"})
        text = inspector.get("api/export.md").text
        assert [line for line in text.splitlines() if line.startswith("```")] == [
            "```mermaid",
            "```",
        ], text
        assert "\n# Injected heading" not in text and "participant S as weather\n" in text
        drawn = [line for line in text.splitlines() if "notifications/x" in line]
        assert drawn and all(line.startswith("    S--)C: notifications/x '''") for line in drawn)
    finally:
        inspector.close()


@pytest.mark.parametrize("depth", ["100", "5000"])
def test_the_secrets_of_an_answer_nested_too_deep_never_reach_the_page(depth):
    """The page calls a tool whose answer nests 100 or 5,000 deep (deeper than the client reads:
    it refuses it) holding secrets in an array, in an object, under an escaped key and under a key
    over 64 characters long (tests/servers/deep_answer_server.py): the call fails at once with
    the client's reason; the record shows the answer masked, and no secret reaches the records,
    the event stream or either export (all four were shown: the record was masked as free text)."""
    import sys

    from conftest import SERVERS

    from mcp_ref.inspector.masking import MASK

    server = str(SERVERS / "deep_answer_server.py")
    inspector = Inspector("--era", "handshake", "--", sys.executable, server, "first", depth)
    try:
        events = inspector.events()
        answer = inspector.post("call", {"call": "c1", "name": "secrets", "arguments": {}})
        assert "nested deeper than the limit of 64" in answer["error"]["message"]
        refused = events.wait_for(
            "record", lambda record: record.get("label") == "(nested deeper than the limit of 64)"
        )
        assert (
            f'"result":{{"api_key":"{MASK}","client_secret":"{MASK}","password":"{MASK}"'
            in (refused["message"])
        )
        shown = [
            inspector.get("api/records?after=0").text,
            inspector.get("api/export.jsonl").text,
            inspector.get("api/export.md").text,
            json.dumps(events.seen, ensure_ascii=False),
        ]
        for secret in ("ARRAY-SECRET", "OBJECT-SECRET", "ESCAPED-KEY-SECRET", "LONG-KEY-SECRET"):
            assert not [text for text in shown if secret in text], secret
    finally:
        inspector.close()


#: A bare JSON-RPC server over stdio (2025-06-18) that, before it answers ``tools/call``, sends a
#: ``ping`` whose id is an object (no JSON-RPC id) and a log message.
OBJECT_ID_SERVER = """
import json
import sys


def result_of(method, params):
    if method == "initialize":
        return {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "object-id", "version": "1"},
        }
    if method == "tools/list":
        return {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    if method == "tools/call":
        print(json.dumps({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}), flush=True)
        log = {"level": "info", "data": "after the object id"}
        print(json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": log}))
        return {"content": [{"type": "text", "text": "ok"}]}
    return {}
"""


def test_a_server_message_whose_id_is_an_object_is_shown_marked_invalid(tmp_path):
    """A server's request with an object for its id: it is in the conversation the page shows,
    marked invalid; the call is answered and what came after it is shown too."""
    import sys

    (tmp_path / "object_id.py").write_text(OBJECT_ID_SERVER + ANSWER_EACH_LINE)
    inspector = Inspector(
        "--era", "handshake", "--", sys.executable, str(tmp_path / "object_id.py")
    )
    try:
        answer = inspector.post("call", {"call": "c1", "name": "t", "arguments": {}})
        assert answer["result"]["content"] == [{"type": "text", "text": "ok"}]
        records = inspector.get("api/records").json()["records"]
        pings = [r for r in records if (r.get("message") or {}).get("id") == {"x": 1}]
        assert [(p["direction"], p["valid"]) for p in pings] == [("receive", False)]
        assert pings[0]["errors"] == ["id: not a string or an integer"]
        logs = [
            r for r in records if (r.get("message") or {}).get("method") == "notifications/message"
        ]
        assert logs and logs[0]["seq"] > pings[0]["seq"]
    finally:
        inspector.close()


#: A bare JSON-RPC server over stdio (2025-06-18) whose tools' ``outputSchema`` has a ``pattern``
#: that backtracks catastrophically: ``stuck`` answers what makes it take hours, ``fine`` what
#: it matches at once.
CATASTROPHIC_PATTERN_SERVER = """
import json
import sys

OUTPUT = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}


def result_of(method, params):
    if method == "initialize":
        return {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "catastrophic", "version": "1"},
        }
    if method == "tools/list":
        tools = [{"name": name, "inputSchema": {"type": "object"}, "outputSchema": OUTPUT}
                 for name in ("stuck", "fine")]
        return {"tools": tools}
    if method == "tools/call":
        s = "a" * 34 + "!" if params["name"] == "stuck" else "aaa"
        return {"content": [{"type": "text", "text": s}], "structuredContent": {"s": s}}
    return {}
"""


def test_an_output_schema_whose_pattern_takes_exponential_time_leaves_the_inspector_answering(
    tmp_path,
):
    """The check of such a result is made in a child process: the page's requests are answered
    while it runs, and past its deadline the result is shown as not checked; the next result is
    checked (by a new child)."""
    import sys

    (tmp_path / "catastrophic.py").write_text(CATASTROPHIC_PATTERN_SERVER + ANSWER_EACH_LINE)
    inspector = Inspector(
        "--era", "handshake", "--", sys.executable, str(tmp_path / "catastrophic.py")
    )
    try:
        inspector.post("list", {"what": "tools"})
        events = inspector.events()
        stuck = inspector.in_background("call", {"call": "c1", "name": "stuck", "arguments": {}})
        events.wait_for("record", lambda r: "a!" in json.dumps(r.get("message")))  # its result
        assert inspector.get("api/state").json()["connected"]  # answered while it is checked
        answer = stuck()
        assert answer["result"]["structuredContent"] == {"s": "a" * 34 + "!"}
        assert answer["output_check"] == {
            "valid": None,
            "errors": [
                "not checked: the output schema took too long (its pattern may take exponential time)"
            ],
        }
        fine = inspector.post("call", {"call": "c2", "name": "fine", "arguments": {}})
        assert fine["output_check"] == {"valid": True, "errors": []}
    finally:
        inspector.close()


def test_a_header_given_with_header_is_masked_whatever_its_name(demo_url):
    """A ``--header`` was shown as sent, in every request of the record and in both exports,
    unless its name read as a secret's: Azure's ``Ocp-Apim-Subscription-Key`` did not.  Now the
    value of every header given so is masked (an ``Authorization`` keeps its scheme word)."""
    inspector = Inspector(
        "--header",
        "Ocp-Apim-Subscription-Key: hunter2",
        "--header",
        "Authorization: Bearer hunter2hunter2",
        demo_url,
    )
    try:
        assert inspector.state["connected"], inspector.state
        records = inspector.get("api/records?after=0&limit=1000").json()["records"]
        sent = [r for r in records if r["kind"] == "http" and r["phase"] == "request"]
        assert sent and all(["Ocp-Apim-Subscription-Key", MASK] in r["headers"] for r in sent)
        assert all(["Authorization", f"Bearer {MASK}"] in r["headers"] for r in sent)
        for route in ("api/records", "api/export.jsonl", "api/export.md"):
            assert "hunter2" not in inspector.get(route).text, route
    finally:
        inspector.close()
