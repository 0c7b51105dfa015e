"""The 2026-07-28 (modern) era on the client: choosing the era, the envelope, MRTR, HTTP headers.

Servers are real: mcp_ref's own (tests/servers/modern_server.py) over stdio, in memory and HTTP on
127.0.0.1, and hand-written raw stdio peers (tests/servers/scripted_server.py) for the legacy and
odd servers a dual-era client meets.  Every message is checked against the official schema of
its revision (WireChecker).  See spec_notes/modern.md.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time

import pytest
from conftest import SERVERS, WAIT, Collector, InMemory, LoggedOnce, WireChecker
from http_fixtures import HeaderRecorder, http_client, serve  # noqa: F401 - fixtures

from mcp_ref import (
    CapabilityError,
    Client,
    Context,
    InvalidParams,
    InvalidResult,
    LimitExceeded,
    McpError,
    RequestCancelled,
    RequestTimeout,
    ResourceNotFound,
    Server,
    UnsupportedProtocolVersionError,
)
from mcp_ref.client.connection import MAX_INPUT_ROUNDS

MODERN = InMemory("modern_server")
SCRIPTED = [sys.executable, str(SERVERS / "scripted_server.py")]


def name_answer(params):
    return {"action": "accept", "content": {"name": "Ada", "color": "blue", "context": "tests"}}


def envelopes(wire: WireChecker) -> list[dict]:
    return [m["params"]["_meta"] for m in wire.sent() if "id" in m and "method" in m]


# -- choosing the era -------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_dual_era_server_is_spoken_to_in_2026_over_stdio(connect, wire):
    client = connect(
        [sys.executable, str(SERVERS / "modern_server.py")], elicitation_handler=name_answer
    )
    assert (client.era, client.protocol_version) == ("modern", "2026-07-28")
    assert (
        client.initialize_result is None
        and client.discover_result.supported_versions[0] == "2026-07-28"
    )
    assert (
        client.server_info.name == "modern" and client.instructions == "Tests the 2026-07-28 era."
    )
    assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    assert client.call_tool("greet").text == "Hello, Ada!"
    methods = [m["method"] for m in wire.sent() if "method" in m]
    assert methods[0] == "server/discover" and "initialize" not in methods
    for meta in envelopes(wire):  # basic/index §_meta: on every request
        assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        assert meta["io.modelcontextprotocol/clientInfo"]["name"] == "mcp-ref"
        assert meta["io.modelcontextprotocol/clientCapabilities"] == {"elicitation": {"form": {}}}


@pytest.mark.parametrize("mode", ["legacy", "silent"])
def test_a_handshake_only_server_gets_initialize_after_the_probe(mode, wire):
    # "silent" never answers the probe: the client waits probe_timeout for it (not the default 10 s)
    with Client.stdio(
        [*SCRIPTED, mode], trace=wire, timeout=WAIT, stderr="capture", probe_timeout=0.5
    ) as client:
        assert (client.era, client.protocol_version) == ("handshake", "2025-06-18")
        assert client.call_tool("echo", {"text": "still works"}).text == "still works"
    methods = [m["method"] for m in wire.sent() if "method" in m]
    assert methods[:3] == ["server/discover", "initialize", "notifications/initialized"]
    assert "notifications/cancelled" not in methods  # the probe is not cancelled: nothing began


@pytest.mark.parametrize("code", [-31005, -32000, -32002, -32601, -32602, -1])
def test_a_probe_refused_with_any_code_but_a_modern_refusal_means_a_legacy_server(code, wire):
    # stdio §Backward Compatibility: "any other error ... the server is legacy. Fall back to the
    # initialize handshake"; "The fallback MUST NOT be keyed to one specific error code".  mcp_ref's
    # own -31005 (a limit) is such a code: a handshake-era server may answer it before initialize.
    with Client.stdio(
        [*SCRIPTED, f"legacy-code:{code}"], trace=wire, timeout=WAIT, stderr="capture"
    ) as client:
        assert (client.era, client.protocol_version) == ("handshake", "2025-06-18")
        assert client.call_tool("echo", {"text": "on"}).text == "on"


@pytest.mark.parametrize("code", [-32020, -32021])
def test_a_probe_refused_with_a_modern_refusal_is_raised_not_taken_for_a_legacy_server(code):
    # basic/versioning §Backward Compatibility: "a recognized modern JSON-RPC error ... identifies a
    # modern server": HeaderMismatch (-32020) and MissingRequiredClientCapability (-32021).
    with pytest.raises(McpError) as refused:
        Client.stdio([*SCRIPTED, f"legacy-code:{code}"], timeout=WAIT, stderr="capture")
    assert refused.value.code == code


def test_the_probe_waits_probe_timeout_for_a_silent_server_and_no_longer(wire):
    started = time.monotonic()
    with Client.stdio(
        [*SCRIPTED, "silent"], trace=wire, timeout=WAIT, stderr="capture", probe_timeout=0.2
    ) as client:
        assert client.era == "handshake" and client.probe_timeout == 0.2
    probe, initialize = wire.sent("server/discover"), wire.sent("initialize")
    assert len(probe) == 1 and len(initialize) == 1
    assert time.monotonic() - started < WAIT  # the request timeout (WAIT) did not bound the probe


def test_a_modern_server_slow_to_start_is_spoken_to_in_2026_though_the_probe_gave_up(
    tmp_path, wire
):
    """A modern server that starts slower than ``probe_timeout`` (a package being fetched, a busy
    machine) answers ``server/discover`` after the client gave up on it, then refuses the
    ``initialize`` that followed with -32022, as the official SDK's server does: connecting failed
    with that error.  Now a -32022 to ``initialize`` after an unanswered probe, which identifies a
    modern server (2026-07-28 basic/versioning §Backward Compatibility), has the client ask
    ``server/discover`` again and speak 2026-07-28."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    fifo = tmp_path / "start"
    os.mkfifo(fifo)
    gave_up = LoggedOnce("falling back to initialize")
    logger = logging.getLogger("mcp_ref.client.fallback")
    logger.addHandler(gave_up)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    command = [*SCRIPTED, f"slow-start:{fifo}"]
    try:
        with ThreadPoolExecutor(1) as pool:
            connecting = pool.submit(
                Client.stdio, command, trace=wire, timeout=WAIT, stderr="capture", probe_timeout=0.2
            )
            assert gave_up.seen.wait(WAIT)
            with open(fifo, "w"):  # the server starts now
                pass
            client = connecting.result(WAIT)
    finally:
        logger.removeHandler(gave_up)
        logger.setLevel(level)
    with client:
        assert (client.era, client.protocol_version) == ("modern", "2026-07-28")
        assert client.call_tool("echo", {"text": "late"}).text == "ok"  # its one answer
    methods = [m["method"] for m in wire.sent() if "method" in m]
    assert methods[:3] == ["server/discover", "initialize", "server/discover"]


def test_a_version_the_client_does_not_speak_is_refused_at_once_after_a_silent_probe(wire):
    """After an unanswered probe, a handshake-era server whose ``initialize`` answer names a
    version mcp_ref does not speak is refused at once, as after any probe: the client took its own
    refusal for a modern server's -32022 and asked ``server/discover`` again in the middle of the
    handshake, which a server that answers nothing before ``initialized`` left unanswered until
    the caller's timeout."""
    with pytest.raises(UnsupportedProtocolVersionError):
        Client.stdio(
            [*SCRIPTED, "silent-old"], trace=wire, timeout=WAIT, stderr="capture", probe_timeout=0.2
        )
    assert len(wire.sent("server/discover")) == 1


def test_an_error_of_the_fallback_handshake_is_not_chained_to_the_probes_internal_one():
    """The handshake after the fallback ran while the probe's internal finding (a handshake-era
    server, never raised to the caller) was being handled, so an error of ``initialize`` came out
    chained to it: the traceback showed ``ProbeUnanswered`` and "During handling of the above
    exception, another exception occurred".  Now the handshake's error is raised as it is."""
    with pytest.raises(UnsupportedProtocolVersionError) as refused:
        Client.stdio([*SCRIPTED, "silent-old"], timeout=WAIT, stderr="capture", probe_timeout=0.2)
    assert refused.value.__context__ is None
    assert refused.value.__cause__ is None


#: A server that reads its input and never answers anything (nor the probe, nor initialize).
SILENT_SERVER = [sys.executable, "-c", "import sys\nfor line in sys.stdin: pass"]


@pytest.mark.parametrize("probe_timeout", [10.0, 1.0])
def test_initialize_timeout_bounds_the_probe_and_initialize_together(probe_timeout):
    # --connect-timeout (initialize_timeout) is the bound on connecting: the probe's wait is part
    # of it, and initialize gets what is left, not the whole bound again (a probe that waited all
    # of it: none, at once; a shorter probe: the rest)
    bound = 4.0
    outcome: list[BaseException] = []
    ended = threading.Event()

    def connect() -> None:
        try:
            Client.stdio(
                SILENT_SERVER,
                initialize_timeout=bound,
                probe_timeout=probe_timeout,
                timeout=WAIT,
                stderr="capture",
            )
        except BaseException as exc:
            outcome.append(exc)
        ended.set()

    threading.Thread(target=connect, name="connecting", daemon=True).start()
    assert ended.wait(bound + 3), "connecting outlived its bound (probe, then a whole new bound?)"
    assert len(outcome) == 1 and isinstance(outcome[0], RequestTimeout), outcome
    # the bound the caller gave, not what the probe left of it
    assert str(outcome[0]) == f"server/discover, initialize: no answer within {bound:g} s"


@pytest.mark.parametrize("bad", [0, -1, "1", True, None])
def test_probe_timeout_must_be_a_positive_number(bad):
    with pytest.raises(ValueError, match="probe_timeout"):
        Client.stdio([*SCRIPTED, "legacy"], probe_timeout=bad, timeout=WAIT, stderr="capture")


def test_pinning_the_modern_era_against_a_legacy_server_is_a_clear_error():
    with pytest.raises(McpError, match="does not speak 2026-07-28"):
        Client.stdio(
            [*SCRIPTED, "legacy"], protocol_version="2026-07-28", timeout=WAIT, stderr="capture"
        )


def test_unsupported_version_is_retried_with_one_from_the_servers_list(wire):
    with Client.stdio(
        [*SCRIPTED, "reject-first"], trace=wire, timeout=WAIT, stderr="capture"
    ) as client:
        assert client.era == "modern"
        assert client.call_tool("anything", {}).text == "ok"
    discovers = wire.sent("server/discover")
    assert len(discovers) == 2 and discovers[0]["id"] != discovers[1]["id"]


def test_a_modern_client_writes_no_response_to_a_servers_request_or_bad_line(caplog):
    # 2026-07-28 basic/transports/stdio §Sending Messages: "The client MUST NOT write JSON-RPC
    # responses"; server-to-client interactions are carried in InputRequiredResult replies.
    sampled = []
    client = Client.stdio(
        [*SCRIPTED, "asks"],
        timeout=WAIT,
        stderr="capture",
        roots=["file:///tmp"],
        sampling_handler=sampled.append,
    )
    with client:
        assert client.era == "modern"
        assert client.call_tool("anything", {}).text == "ok"
        assert client.call_tool("anything", {}).text == "ok"  # the connection goes on
    # close() has read the server's stderr to its end: every line it got from the client
    got = [
        json.loads(line[4:]) for line in client.session.transport.stderr_lines if line[:4] == "got "
    ]
    assert [m.get("method") for m in got] == ["server/discover"] * 2 + ["tools/call"] * 2
    assert sampled == []
    dropped = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(dropped) == 2 * 3, dropped  # each of the three requests, at each call


def test_a_modern_server_with_no_common_version_is_refused():
    with pytest.raises(UnsupportedProtocolVersionError, match="2099-01-01"):
        Client.stdio([*SCRIPTED, "modern-only"], timeout=WAIT, stderr="capture")


@pytest.mark.parametrize(
    "options, message",
    [
        ({"era": "modern", "protocol_version": "2025-11-25"}, "handshake-era revision"),
        ({"era": "handshake", "protocol_version": "2026-07-28"}, "modern revision"),
        ({"era": "sometimes"}, "era must be one of"),
        ({"protocol_version": "1999-01-01"}, "unsupported protocol version"),
    ],
)
def test_contradictory_choices_are_refused_before_connecting(options, message):
    with pytest.raises(ValueError, match=message):
        Client.in_memory(MODERN.build(), **options)


# -- MRTR -------------------------------------------------------------------------------------------


def test_input_required_is_answered_by_the_handlers_and_retried(connect, wire):
    seen = []
    client = connect(
        MODERN,
        elicitation_handler=lambda p: seen.append(p.message) or name_answer(p),
        sampling_handler=lambda p: {
            "role": "assistant",
            "content": {"type": "text", "text": "hi"},
            "model": "m",
        },
        roots=["file:///work"],
    )
    assert client.call_tool("two_rounds").text == "Ada likes blue"
    assert seen == ["What is your name?", "What is your favourite colour?"]
    calls = wire.sent("tools/call")
    assert (
        len({c["id"] for c in calls}) == len(calls) == 3
    )  # mrtr: "The JSON-RPC id MUST be different"
    answers = [
        m["result"]
        for m in wire.received()
        if m.get("result", {}).get("resultType") == "input_required"
    ]
    for call, answer in zip(calls[1:], answers, strict=True):
        assert call["params"]["requestState"] == answer["requestState"]  # echoed exactly
        assert set(call["params"]["inputResponses"]) == set(answer["inputRequests"])
    assert client.call_tool("everything").text == "Ada|hi|file:///work"
    assert client.get_prompt("with_context").messages[0].content.text == "Use: tests"
    # Unrelated calls carry neither field (mrtr: they "MUST NOT be used for any other request").
    client.call_tool("echo", {"text": "x"})
    last = wire.sent("tools/call")[-1]["params"]
    assert "inputResponses" not in last and "requestState" not in last


def test_an_update_of_the_callbacks_stream_is_bounded_from_its_call_not_from_its_turn(connect):
    """``CallbackFeed.update(timeout)`` opens one stream at a time; one update held up (here: its
    lock held, as by an update waiting on a stalled server) makes another give up at its own
    timeout, counted from its call, instead of waiting its whole timeout once its turn comes:
    callers at once never wait ``timeout`` each, one after another."""
    client = connect(MODERN)
    feed = client.connection.streams.feed
    outcome: list = []

    def update() -> None:
        try:
            feed.update(0.05)
            outcome.append("updated")
        except RequestTimeout as exc:
            outcome.append(exc)

    with feed._lock:  # an update under way, which never ends while the test holds it
        waiting = threading.Thread(target=update)
        waiting.start()
        waiting.join(WAIT)
        assert not waiting.is_alive()
    assert isinstance(outcome[0], RequestTimeout)
    assert "not re-opened within 0.05 s" in str(outcome[0])
    feed.update(WAIT)  # the feed works on once its turn is free


def test_a_missing_capability_is_the_servers_error(connect):
    client = connect(MODERN)
    with pytest.raises(McpError) as caught:
        client.call_tool("needs_sampling")
    assert caught.value.code == -32021 and caught.value.required_capabilities == {"sampling": {}}


def test_a_server_that_asks_forever_is_bounded():
    server = Server("forever")
    count = iter(range(1000))

    @server.tool()
    def ask(ctx: Context) -> str:
        """Asks again on every run."""
        return ctx.elicit(
            "again?", {"type": "object", "properties": {}}, key=f"k{next(count)}"
        ).action

    with Client.in_memory(
        server, timeout=WAIT, elicitation_handler=lambda p: {"action": "accept", "content": {}}
    ) as client:
        with pytest.raises(McpError, match=f"after {MAX_INPUT_ROUNDS} rounds"):
            client.call_tool("ask")
        assert client.call_tool  # the client still works
    assert next(count) == MAX_INPUT_ROUNDS + 1


def test_progress_across_rounds_only_increases(connect):
    server = Server("progress")

    @server.tool()
    def steps(ctx: Context) -> str:
        """Reports two steps, then asks; re-run on the retry."""
        ctx.report_progress(1, 2)
        ctx.report_progress(2, 2)
        return ctx.elicit("ok?", {"type": "object", "properties": {}}).action

    seen = []
    with Client.in_memory(
        server, timeout=WAIT, elicitation_handler=lambda p: {"action": "accept", "content": {}}
    ) as client:
        assert (
            client.call_tool("steps", on_progress=lambda p, t, m: seen.append(p)).text == "accept"
        )
    assert seen == [1, 2]


def test_a_call_cancelled_while_its_input_round_runs_says_so_and_ends():
    """2026-07-28: between an ``input_required`` answer and the retry no request is on the wire, yet
    the call has not settled: ``cancel()`` is True, ``result()`` raises RequestCancelled and no
    retry is sent; once settled, ``cancel()`` is False."""
    server = Server("asks")
    runs = []

    @server.tool()
    def ask(ctx: Context) -> str:
        """Asks once; counts its runs."""
        runs.append(1)
        return ctx.elicit("ok?", {"type": "object", "properties": {}}).action

    asked, release = threading.Event(), threading.Event()

    def answer(params):
        asked.set()
        release.wait(WAIT)
        return {"action": "accept", "content": {}}

    outcome: dict = {}
    with Client.in_memory(server, timeout=WAIT, elicitation_handler=answer) as client:
        call = client.start_tool_call("ask")

        def wait_for_result() -> None:
            try:
                outcome["result"] = call.result()
            except RequestCancelled as exc:
                outcome["error"] = exc

        waiter = threading.Thread(target=wait_for_result)
        waiter.start()
        assert asked.wait(WAIT)
        assert not call.done()  # the round is being answered: the call goes on
        assert call.cancel("the user gave up") is True
        assert call.done() and call.cancel() is False  # its outcome is fixed: RequestCancelled
        release.set()
        waiter.join(WAIT)
        assert not waiter.is_alive() and "result" not in outcome
        assert "the user gave up" in str(outcome["error"])
        assert call.done() and call.cancel() is False
        assert runs == [1]  # no retry reached the server
        assert client.call_tool("ask").text == "accept"  # the client goes on (the handler's
        # event is set: it answers at once)


def test_a_call_whose_answer_came_is_done_before_result_is_asked():
    """``done()`` and ``cancel()`` before anyone called ``result()``: a complete answer ends the
    call (cancel() is then False and the result stands); an ``input_required`` one does not (the
    round is answered in ``result()``), so cancel() still takes effect."""
    server = Server("answers")
    answered = threading.Event()

    @server.tool()
    def plain() -> str:
        """Answers at once."""
        return "here"

    @server.tool()
    def ask(ctx: Context) -> str:
        """Asks once."""
        return ctx.elicit("ok?", {"type": "object", "properties": {}}).action

    def trace(direction, data):
        if direction == "<--" and b'"result"' in data:
            answered.set()

    with Client.in_memory(
        server,
        timeout=WAIT,
        trace=trace,
        elicitation_handler=lambda p: {"action": "accept", "content": {}},
    ) as client:
        call = client.start_tool_call("plain")
        assert answered.wait(WAIT) and call.call.pending.result(0)  # the answer is in
        assert call.done() and call.cancel() is False
        assert call.result().text == "here"
        answered.clear()
        asking = client.start_tool_call("ask")
        assert answered.wait(WAIT) and asking.call.pending.result(0)["resultType"] == (
            "input_required"
        )
        assert not asking.done()
        assert asking.cancel("no") is True and asking.done()
        with pytest.raises(RequestCancelled):
            asking.result()
        # an input_required answer past the last round the client answers ends the call as it is
        answered.clear()
        last = client.start_tool_call("ask")
        assert answered.wait(WAIT) and last.call.pending.result(0)["resultType"] == (
            "input_required"
        )
        last.call.rounds = client.max_input_rounds  # as if the rounds were used up
        assert last.done() and last.cancel() is False
        with pytest.raises(LimitExceeded, match="max_input_rounds"):
            last.result()


def test_log_level_travels_in_meta_and_resource_not_found_keeps_its_class(connect, wire):
    logs = []
    client = connect(
        MODERN, on_log=logs.append, log_level=None
    )  # on_log's default level asks nothing
    client.call_tool("chatty")
    client.set_logging_level("info")
    client.call_tool("chatty")
    client.close()
    assert [m.data for m in logs] == [
        "an info line"
    ]  # none before the level was set; none below info
    assert envelopes(wire)[-1]["io.modelcontextprotocol/logLevel"] == "info"
    with Client.in_memory(MODERN.build(), timeout=WAIT) as other:
        with pytest.raises(ResourceNotFound) as caught:
            other.read_resource("test://missing")
        assert caught.value.code == -32602  # 2026-07-28: -32602 with data.uri
        other.ping()  # no ping in 2026: server/discover instead
        with pytest.raises(ValueError):
            other.set_logging_level("loud")


# -- Streamable HTTP ---------------------------------------------------------------------------------


def test_input_required_for_a_request_that_may_not_have_it_is_invalid_and_not_answered(wire):
    # mrtr §Supported Requests: "Servers MUST NOT send InputRequiredResult responses on any other
    # client requests" than tools/call, prompts/get, resources/read; basic/index §ResultType: one
    # the client does not recognize "MUST be considered invalid".  The sampling handler is not
    # run, nothing is sent again, and the connection goes on.
    asked = []
    with Client.stdio(
        [*SCRIPTED, "asks-in-listing"],
        trace=wire,
        timeout=WAIT,
        stderr="capture",
        sampling_handler=lambda params: asked.append(params) or {},
    ) as client:
        assert client.era == "modern"
        with pytest.raises(InvalidResult, match="tools/list: .*input_required"):
            client.list_tools()
        call = client.connection.start("tools/list")
        assert call.pending.result() is not None and call.done()  # its answer ends it
        with pytest.raises(InvalidResult):
            call.result()
        assert client.call_tool("echo", {"text": "on"}).text == "ok"
    assert asked == []
    assert len(wire.sent("tools/list")) == 2  # one each, no retry carrying inputResponses
    assert all("inputResponses" not in m["params"] for m in wire.sent("tools/list"))
    wire.errors.clear()  # the server's input_required answers are what this test is about


def test_http_requests_carry_the_headers_and_no_session(serve, http_client):
    recorder_box = {}

    def wrap(app):
        recorder_box["r"] = HeaderRecorder(app)
        return recorder_box["r"]

    srv = serve(MODERN.build(), wrap=wrap)
    client = http_client(srv.mcp, elicitation_handler=name_answer)
    assert client.era == "modern" and client.session.transport.session_id is None
    # A tool with x-mcp-header parameters, called before listing: the server says -32020, the client
    # learns the tool's schema and retries with the headers.
    assert (
        client.call_tool("routed", {"region": "eu west", "count": 3, "dry_run": True}).text
        == "eu west:3:True:"
    )
    assert client.call_tool("greet").text == "Hello, Ada!"
    assert client.read_resource("test://stable").contents[0].text == "always"
    requests_seen = [(m, headers) for m, path, headers in recorder_box["r"].requests if m == "POST"]
    assert all(
        "mcp-session-id" not in h and h["mcp-protocol-version"] == "2026-07-28"
        for _, h in requests_seen
    )
    assert all(m != "GET" for m, _, _ in recorder_box["r"].requests)  # no standalone stream
    routed = [h for _, h in requests_seen if h.get("mcp-name") == "routed"]
    assert routed[-1]["mcp-param-region"] == "eu west" and routed[-1]["mcp-param-count"] == "3"
    assert routed[-1]["mcp-param-dry-run"] == "true" and routed[-1]["mcp-method"] == "tools/call"
    read = [h for _, h in requests_seen if h.get("mcp-method") == "resources/read"]
    assert read[-1]["mcp-name"] == "test://stable"


@pytest.mark.parametrize("cache_size", [256, 0])
def test_a_tool_whose_headers_change_is_listed_again_past_the_cache_and_retried_once(
    cache_size, serve, http_client
):
    # streamable-http §Client Behavior: on HeaderMismatch the client "SHOULD call tools/list to
    # check for changes to the tool's inputSchema, then retry" -- for a tool it listed before as
    # for a new one, and not from a cached listing (caching §Time-to-Live: "MAY re-fetch before
    # the TTL expires").  The server's listing is cached for a minute.
    server = Server("changing", ttl_ms=60_000, cache_scope="public")

    @server.tool()
    def var(region: str) -> str:
        """Its region, not yet a header."""
        return "var " + region

    @server.tool()
    def change() -> str:
        """From now on ``var`` and the new ``late`` send the region as a header."""
        server.remove_tool("var")

        @server.tool(name="var", headers={"region": "Region"})
        def var2(region: str) -> str:
            return "var2 " + region

        @server.tool(name="late", headers={"region": "Region"})
        def late(region: str) -> str:
            return "late " + region

        return "changed"

    recorders = []
    served = serve(server, wrap=lambda app: recorders.append(HeaderRecorder(app)) or recorders[0])
    client = http_client(served.mcp, cache_size=cache_size)
    assert [tool.name for tool in client.list_tools()] == ["var", "change"]
    assert client.call_tool("var", {"region": "us"}).text == "var us"
    assert client.call_tool("change").text == "changed"
    assert client.call_tool("var", {"region": "us"}).text == "var2 us"  # a tool listed before
    assert client.call_tool("late", {"region": "eu"}).text == "late eu"  # a new one
    sent = [(h.get("mcp-method"), h.get("mcp-name")) for h in recorders[0].seen("POST")]
    listings = [i for i, (method, _) in enumerate(sent) if method == "tools/list"]
    assert sent[listings[1] - 1 : listings[1] + 2] == [
        ("tools/call", "var"),  # refused: -32020
        ("tools/list", None),
        ("tools/call", "var"),  # the retry, with the header
    ]
    assert len(listings) == 2  # "late" was in the second listing: known, no third
    retried = [h for h in recorders[0].seen("POST") if h.get("mcp-name") in ("var", "late")]
    assert retried[-1]["mcp-param-region"] == "eu" and retried[-2]["mcp-param-region"] == "us"


def test_a_header_mismatch_that_listing_again_does_not_change_is_not_retried(serve, http_client):
    # The same declarations as the call was sent with: listing again changes nothing, so the
    # client does not send the same call a second time (one retry at most, and only one that can
    # differ); the error is the caller's.  A proxy on the way drops the header.
    server = Server("strict")

    @server.tool(headers={"region": "Region"})
    def routed(region: str) -> str:
        """Its region as a header."""
        return region

    def drop_region(app):
        def dropping(environ, start_response):
            environ.pop("HTTP_MCP_PARAM_REGION", None)
            environ.pop("mcp_ref.headers", None)  # (the server's exact names: read from the keys)
            return app(environ, start_response)

        recorders.append(HeaderRecorder(dropping))
        return recorders[0]

    recorders: list[HeaderRecorder] = []
    client = http_client(serve(server, wrap=drop_region).mcp)
    client.list_tools()
    with pytest.raises(McpError) as refused:
        client.call_tool("routed", {"region": "us"})
    assert refused.value.code == -32020
    sent = [h.get("mcp-method") for h in recorders[0].seen("POST")]
    assert sent == ["server/discover", "tools/list", "tools/call", "tools/list"]


def test_a_whole_float_for_an_integer_header_parameter_is_sent_as_the_integer(serve, http_client):
    # streamable-http §Value Encoding: an integer is its decimal text; 42.0 is a JSON Schema
    # integer, which the server accepts and compares numerically (§Server Validation: "42.0 and 42
    # are considered equal").  A fraction is no integer: no header, the server's refusal.
    server = Server("counted")

    @server.tool(headers={"n": "N"})
    def count(n: int) -> str:
        """Its count as a header."""
        return f"n={n}"

    recorders = []
    served = serve(server, wrap=lambda app: recorders.append(HeaderRecorder(app)) or recorders[0])
    client = http_client(served.mcp)
    client.list_tools()
    assert client.call_tool("count", {"n": 42.0}).text == "n=42"
    assert client.call_tool("count", {"n": -7.0}).text == "n=-7"
    calls = [h for h in recorders[0].seen("POST") if h.get("mcp-method") == "tools/call"]
    assert [h.get("mcp-param-n") for h in calls] == ["42", "-7"]
    with pytest.raises(McpError) as refused:
        client.call_tool("count", {"n": 42.5})
    assert refused.value.code == -32020  # HeaderMismatch
    calls = [h for h in recorders[0].seen("POST") if h.get("mcp-method") == "tools/call"]
    assert len(calls) == 3 and "mcp-param-n" not in calls[-1]  # not retried: nothing changed


def test_http_cancel_closes_the_requests_stream(serve, http_client):
    started, stopped = threading.Event(), threading.Event()
    server = Server("slow")

    @server.tool()
    def wait(ctx: Context) -> str:
        """Waits to be cancelled."""
        started.set()
        for step in range(1, int(WAIT / 0.05)):  # progress keeps the SSE answer streaming
            ctx.report_progress(step)
            if ctx.request.cancelled.wait(0.05):
                stopped.set()
                break
        return "cancelled"

    recorders = []
    client = http_client(
        serve(server, wrap=lambda app: recorders.append(HeaderRecorder(app)) or recorders[0]).mcp
    )
    assert client.era == "modern"
    progressed = threading.Event()
    call = client.start_tool_call("wait", on_progress=lambda *a: progressed.set())
    assert started.wait(WAIT) and progressed.wait(WAIT)
    assert call.cancel("enough")
    assert stopped.wait(WAIT)  # streamable-http §Cancellation: the closed stream is the signal
    with pytest.raises(RequestCancelled):
        call.result()
    # The session's cancellation became the closed stream: no notification was POSTed.
    assert [h.get("mcp-method") for h in recorders[0].seen("POST")] == [
        "server/discover",
        "tools/call",
    ]


def test_a_malformed_elicitation_among_input_requests_is_refused_before_anyone_sees_it(
    connect, wire
):
    # 2026-07-28 client/elicitation: "The url parameter MUST contain a valid URL".  The answering
    # code is the handshake era's: neither the approve hook nor the handler is shown the request.
    seen, shown = [], []
    client = connect(
        [sys.executable, str(SERVERS / "untested_server.py")],
        elicitation_handler=lambda p: seen.append(p) or {"action": "decline"},
        elicitation_modes=("form", "url"),
        approve=lambda request: shown.append(request) or True,
    )
    assert client.era == "modern"
    arguments = {"url": "javascript:alert(1)", "elicitation_id": "e"}
    with pytest.raises(InvalidParams, match="needs a url, an http or https URL"):
        client.call_tool("elicit_url", arguments)
    assert seen == [] and shown == []
    arguments["url"] = "https://example.com/sign-in"
    assert client.call_tool("elicit_url", arguments).text == "decline"
    assert [p.url for p in seen] == ["https://example.com/sign-in"] and len(shown) == 1
    assert all(error.startswith("InputRequiredResult") for error in wire.errors), wire.errors
    wire.errors.clear()


def test_an_elicitation_handlers_malformed_answer_fails_the_call_here(connect, wire):
    # 2026-07-28 client/elicitation §Response Actions: the action is "accept", "decline" or
    # "cancel", and a form's content holds its schema's primitive types.  In this era the answer
    # rides on the retried call, so the handler's mistake fails that call, in the caller's hands,
    # and nothing is sent; the client goes on.
    answers = [{"action": "accept", "content": {"name": 42}}, {"action": "decline"}]
    client = connect(
        [sys.executable, str(SERVERS / "untested_server.py")],
        elicitation_handler=lambda params: answers.pop(0),
    )
    assert client.era == "modern"
    with pytest.raises(ValueError, match="its content's 'name' is not a string"):
        client.call_tool("elicit_form")
    assert len(wire.sent("tools/call")) == 1  # not retried with the malformed answer
    assert json.loads(client.call_tool("elicit_form").text) == {
        "action": "decline",
        "content": None,
    }


# -- the cache (2026-07-28 server/utilities/caching) -------------------------------------------------


def test_fresh_results_come_from_the_cache_until_a_change_invalidates_them(connect, wire):
    changed = threading.Event()
    updated = threading.Event()
    client = connect(
        MODERN,
        on_list_changed=lambda kind: changed.set(),
        on_resource_updated=lambda uri: updated.set(),
    )
    first = [t.name for t in client.list_tools()]  # the server says ttlMs 60000
    assert [t.name for t in client.list_tools()] == first
    assert len(wire.sent("tools/list")) == 1 and client.cache.hits == 1
    client.call_tool("change_tools")
    assert changed.wait(WAIT)  # caching §Interaction with Notifications: invalidated at once
    assert "extra" in [t.name for t in client.list_tools()]
    assert len(wire.sent("tools/list")) == 2
    # One key per URI; a resource may say ttlMs 0 (test://fresh): never kept.
    for _ in range(2):
        assert client.read_resource("test://stable").contents[0].text == "always"
        assert client.read_resource("test://fresh").contents[0].text == "now"
    reads = [m["params"]["uri"] for m in wire.sent("resources/read")]
    assert reads == ["test://stable", "test://fresh", "test://fresh"]
    client.subscribe("test://stable")
    client.call_tool("touch", {"uri": "test://stable"})
    assert updated.wait(WAIT)
    client.read_resource("test://stable")
    assert [m["params"]["uri"] for m in wire.sent("resources/read")][-1] == "test://stable"


def test_a_change_notification_arriving_before_the_answer_keeps_that_answer_out_of_the_cache():
    # caching §Interaction with Notifications: the notification "invalidates the cached response
    # and it should be considered immediately stale".  The server sends tools/list_changed, then
    # the answer it had made before the change (ttlMs five minutes): that answer is not kept.
    seen = Collector()
    with Client.stdio([*SCRIPTED, "cache-race"], timeout=WAIT, stderr="capture") as client:
        stream = client.listen(tools=True, on_notification=lambda method, params: seen(method))
        assert stream.acknowledged == {"toolsListChanged": True}
        assert [tool.name for tool in client.list_tools()] == ["before"]  # its caller gets it
        seen.wait_for(1)
        assert [tool.name for tool in client.list_tools()] == ["after"]
        assert [tool.name for tool in client.list_tools()] == ["after"]  # this one was kept
        assert client.cache.hits == 1


def test_a_cursor_refused_after_a_redeploy_drops_the_cached_pages_and_lists_again():
    # caching §Interaction with Pagination: "If a cursor becomes invalid (e.g., the server
    # restarts ...), the client SHOULD discard all cached pages and re-fetch from the beginning."
    # The first page is cached for ten minutes with its cursor; the server is redeployed.
    wire = WireChecker()
    with Client.stdio([*SCRIPTED, "cursor-epochs"], timeout=WAIT, trace=wire) as client:
        assert [tool.name for tool in client.list_tools()] == ["a1", "b1"]
        client.call_tool("echo", {"text": "redeploy"})
        assert [tool.name for tool in client.list_tools()] == ["a2", "b2"]
        assert [tool.name for tool in client.list_tools()] == ["a2", "b2"]
    cursors = [m.get("params", {}).get("cursor") for m in wire.sent("tools/list")]
    # the first page from the cache, its stale cursor refused, then from the start; the new first
    # page is cached in its turn
    assert cursors == [None, "e1:1", "e1:1", None, "e2:1", "e2:1"]


def test_a_cursor_refused_to_one_page_at_a_time_drops_the_cached_pages_too():
    # The same, for a caller following the cursors itself (list_tools_page): the refused cursor
    # drops the cached first page, so asking for the first page again asks the server.
    wire = WireChecker()
    with Client.stdio([*SCRIPTED, "cursor-epochs"], timeout=WAIT, trace=wire) as client:
        first = client.list_tools_page()
        assert [tool.name for tool in first.items] == ["a1"]
        client.call_tool("echo", {"text": "redeploy"})
        with pytest.raises(InvalidParams):
            client.list_tools_page(first.next_cursor)
        again = client.list_tools_page()
        assert [tool.name for tool in again.items] == ["a2"]
        assert [tool.name for tool in client.list_tools_page(again.next_cursor).items] == ["b2"]
    cursors = [m.get("params", {}).get("cursor") for m in wire.sent("tools/list")]
    assert cursors == [None, "e1:1", None, "e2:1"]


@pytest.mark.parametrize("mode", ["legacy", "reject-first"], ids=["handshake", "modern"])
def test_a_progress_report_whose_values_are_not_numbers_is_dropped(mode):
    # schema ProgressNotification: progress is a number, total (optional) a number; a boolean or
    # null is neither.  Such a report neither reaches on_progress nor stops the later ones (in
    # the 2026-07-28 era a string progress used to silence every report after it).
    reports = [
        {"progress": "1", "total": 3},
        {"progress": None, "total": 3},
        {"progress": True, "total": 3},
        {"total": 3},
        {"progress": 1, "total": "3"},
        {"progress": 1, "total": None},
        {"progress": 1, "total": 3},
        {"progress": 2},
        {"progress": 2.5, "total": 3.0},
    ]
    seen = []
    with Client.stdio([*SCRIPTED, mode], timeout=WAIT, stderr="capture") as client:
        client.call_tool(
            "echo",
            {"text": "x", "progress": reports},
            on_progress=lambda progress, total, message: seen.append((progress, total)),
        )  # every report is handled before the result is given
    assert seen == [(1, 3), (2, None), (2.5, 3.0)]


def test_the_caller_whose_request_filled_the_cache_gets_its_own_result(connect, wire):
    # mcp_ref.client.cache: each caller its own result, the first one too.
    client = connect([sys.executable, str(SERVERS / "modern_server.py")])
    first = client.request("tools/list")  # the server says ttlMs 60000
    names = [tool["name"] for tool in first["tools"]]
    first["tools"].pop()
    first["ttlMs"] = 0
    second = client.request("tools/list")
    assert [tool["name"] for tool in second["tools"]] == names and second["ttlMs"] == 60_000
    assert [tool.name for tool in client.list_tools()] == names
    assert len(wire.sent("tools/list")) == 1 and client.cache.hits == 2


def test_a_result_reached_through_input_required_is_not_cached(connect, wire):
    client = connect(MODERN, elicitation_handler=name_answer)
    for _ in range(2):  # the server says ttlMs 60000, but the result came through a retry
        assert client.read_resource("test://asks").contents[0].text == "read by Ada"
    assert len(wire.sent("resources/read")) == 4  # 2 rounds, twice
    assert len(client.cache) == 0
    cache = client.cache
    key = cache.key("resources/read", {"uri": "x", "inputResponses": {}, "requestState": "s"})
    assert key is None  # caching §Cache Key: a retry's result "MUST NOT be cached"
    cache.put(cache.key("tools/list", {}), {"tools": [], "ttlMs": 60_000})
    cached = cache.get(
        cache.key("tools/list", {"_meta": {"other": 1}})
    )  # _meta is not part of the key
    assert cached == {"tools": [], "ttlMs": 60_000}
    cached["tools"].append("mine")  # a caller's copy: the cache keeps its own
    assert cache.get(cache.key("tools/list", None))["tools"] == []


def test_the_cache_keeps_a_non_ascii_result_as_compact_text():
    """A result is kept as its JSON text, written as it came (not ``\\uXXXX`` escapes, six
    characters a character), and read back unchanged."""
    import sys

    from mcp_ref.client.cache import ResultCache

    cache = ResultCache()
    text = "é" * 100_000
    result = {"contents": [{"uri": "a://b", "text": text}], "ttlMs": 60_000}
    key = cache.key("resources/read", {"uri": "a://b"})
    cache.put(key, result)
    assert cache.get(key) == result
    kept = max(sys.getsizeof(entry[1]) for entry in cache._entries.values())
    assert kept < 2 * sys.getsizeof(text)


def test_the_cache_is_bounded_and_expires_by_the_clock():
    from mcp_ref.client.cache import ResultCache

    now = [0.0]
    cache = ResultCache(max_entries=2, clock=lambda: now[0])
    for uri in ("a", "b", "c"):
        cache.put(cache.key("resources/read", {"uri": uri}), {"contents": [], "ttlMs": 1000})
    assert (
        len(cache) == 2 and cache.get(cache.key("resources/read", {"uri": "a"})) is None
    )  # oldest dropped
    assert cache.get(cache.key("resources/read", {"uri": "c"})) is not None
    for ttl in (0, -5, None, "60", True):  # caching §Time-to-Live: not fresh at all
        cache.put(cache.key("tools/list", {}), {"tools": [], "ttlMs": ttl})
        assert cache.get(cache.key("tools/list", {})) is None
    now[0] = 1.0  # now >= t_received + ttlMs: stale
    assert cache.get(cache.key("resources/read", {"uri": "c"})) is None


def test_a_huge_ttl_keeps_a_result_for_a_day_at_most(serve):
    """``ttlMs`` is a JSON integer of any size: ``10**400`` is schema-valid, and no float holds it
    as seconds.  The client keeps such a result for ``MAX_TTL_MS`` (a day), and every call goes
    on working (it raised OverflowError on each cacheable request)."""
    from mcp_ref import Server

    server = Server("huge-ttl", ttl_ms=10**400)

    @server.tool()
    def alpha() -> str:
        """One tool."""
        return "alpha"

    with Client.http(serve(server).mcp, era="modern", timeout=WAIT) as client:
        assert [t.name for t in client.list_tools()] == ["alpha"]
        assert [t.name for t in client.list_tools()] == ["alpha"]
        assert client.cache.hits == 1
        assert client.call_tool("alpha").content[0].text == "alpha"
    from mcp_ref.client.cache import MAX_TTL_MS, ResultCache

    now = [0.0]
    cache = ResultCache(clock=lambda: now[0])
    key = cache.key("tools/list", {})
    cache.put(key, {"tools": [], "ttlMs": 10**400})
    now[0] = MAX_TTL_MS / 1000 - 1
    assert cache.get(key) == {"tools": [], "ttlMs": 10**400}
    now[0] = MAX_TTL_MS / 1000
    assert cache.get(key) is None


def test_no_cache_when_asked_for_none(connect, wire):
    client = connect(MODERN, cache_size=0)
    client.list_tools()
    client.list_tools()
    assert len(wire.sent("tools/list")) == 2


def test_a_broken_http_response_stream_is_re_issued_as_a_new_request(serve, http_client):
    """2026-07-28 has no resumability (changelog, SEP-2575): a client whose response stream breaks
    "MUST re-issue it as a new request with a new request ID"."""
    broken = []

    def break_first_stream(app):
        def middleware(environ, start_response):
            first = not broken and environ.get("HTTP_MCP_NAME") == "chatty"
            if not first:
                return app(environ, start_response)
            broken.append(True)
            events = []

            def cut(status, headers, exc_info=None):
                write = start_response(status, headers, exc_info)

                def first_event_only(data):  # the stream ends after its first event, with no answer
                    if not events:
                        events.append(data)
                        write(data)

                return first_event_only

            body = app(environ, cut)
            return [b"".join(body)] if not events else []

        return middleware

    client = http_client(serve(MODERN.build(), wrap=break_first_stream).mcp)
    client.set_logging_level("info")  # so the answer is a stream: a log message, then the result
    assert client.call_tool("chatty").text == "logged"
    assert broken == [True]
    calls = client.wire.sent("tools/call")
    assert (
        len(calls) == 2
        and calls[0]["id"] != calls[1]["id"]
        and calls[0]["params"] == calls[1]["params"]
    )
    client.wire.assert_valid()


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_a_subscription_the_server_refuses_raises_and_is_not_kept(era):
    # 2026-07-28 basic/patterns/subscriptions §Acknowledgment: the acknowledgment "reflects the
    # subset the server agreed to honor"; a URI it leaves out is refused, as a handshake-era
    # server's error to resources/subscribe is.
    target = [sys.executable, str(SERVERS / "proxy_refusing_target.py"), "--era", era]
    with Client.stdio(target, era=era) as client:
        client.call_tool("release")  # the target refuses at once from now on
        refused = CapabilityError if era == "modern" else InvalidParams
        with pytest.raises(refused):
            client.subscribe("refused://a")
        assert "refused://a" not in client.connection.streams.feed.uris
        client.subscribe("kept://1")
        with pytest.raises(refused):
            client.subscribe("refused://a")  # asked again, not taken as held


def test_a_re_opened_stream_that_leaves_a_resource_out_no_longer_holds_it(monkeypatch):
    # 2026-07-28 basic/patterns/subscriptions §Acknowledgment: the callbacks' stream drops and is
    # opened again; the server's new acknowledgment leaves note://1 out: it is no longer counted
    # as subscribed, and a later subscribe asks the server again (and is refused again).
    monkeypatch.setattr("mcp_ref.client.listening.REOPEN_DELAY", 0.01)
    dropped = LoggedOnce("does not agree to send updates about note://1")
    logger = logging.getLogger("mcp_ref.client.listening")
    logger.addHandler(dropped)
    target = [sys.executable, str(SERVERS / "proxy_refusing_target.py"), "--era", "modern"]
    try:
        with Client.stdio(target, era="modern") as client:
            client.subscribe("note://1")
            client.call_tool("refuse_notes")
            client.call_tool("end_streams")  # the callbacks' stream is opened again
            assert dropped.seen.wait(WAIT)
            assert "note://1" not in client.connection.streams.feed.uris
            with pytest.raises(CapabilityError):
                client.subscribe("note://1")
    finally:
        logger.removeHandler(dropped)


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_a_subscribe_made_while_one_of_the_same_resource_is_under_way_shares_its_outcome(era):
    # The target holds its refusal of refused://a back until "release": a second subscribe of it
    # meanwhile waits for the first, and is refused with it (it used to return as if subscribed).
    asked = threading.Event()

    def trace(direction: str, data: bytes) -> None:
        if direction == "-->" and b"refused://a" in data:
            asked.set()

    target = [sys.executable, str(SERVERS / "proxy_refusing_target.py"), "--era", era]
    refused = CapabilityError if era == "modern" else InvalidParams
    outcomes: dict = {}

    def subscribe(who: str) -> None:
        try:
            client.subscribe("refused://a")
            outcomes[who] = "subscribed"
        except Exception as exc:
            outcomes[who] = exc

    with Client.stdio(target, era=era, trace=trace) as client:
        first = threading.Thread(target=subscribe, args=("first",), daemon=True)
        first.start()
        assert asked.wait(WAIT)  # its request is at the target, held back
        second = threading.Thread(target=subscribe, args=("second",), daemon=True)
        second.start()
        client.call_tool("release")
        first.join(WAIT)
        second.join(WAIT)
        assert isinstance(outcomes["first"], refused)
        assert isinstance(outcomes["second"], refused)
        assert "refused://a" not in client.connection.streams.feed.uris


# -- change notifications: only those a listen stream asked for -----------------------------------


def test_a_listen_stream_passes_on_only_what_its_acknowledgment_agreed_to(caplog):
    # 2026-07-28 basic/patterns/subscriptions §Opening a Stream: "The server MUST NOT send
    # notification types the client has not explicitly requested"; §Acknowledgment: the filter
    # acknowledged "reflects the subset the server agreed to honor".  The server acknowledges
    # a://b only, then sends a tools list change (asked for, not agreed to), a prompts one (never
    # asked for) and an update of other://x before the update of a://b.
    seen = Collector()
    with Client.stdio([*SCRIPTED, "listen-extra"], timeout=WAIT, stderr="capture") as client:
        with caplog.at_level(logging.DEBUG, logger="mcp_ref.client.listening"):
            stream = client.listen(
                tools=True,
                resource_uris=["a://b"],
                on_notification=lambda method, params: seen((method, params.get("uri"))),
            )
            assert stream.acknowledged == {"resourceSubscriptions": ["a://b"]}
            # the callback thread runs them in arrival order: what came before it was handled
            seen.wait_until(lambda items: ("notifications/resources/updated", "a://b") in items)
            stream.close()
    assert seen.items == [("notifications/resources/updated", "a://b")]
    dropped = [
        r.getMessage() for r in caplog.records if "outside the acknowledged" in r.getMessage()
    ]
    assert len(dropped) == 3, dropped


def test_a_modern_client_runs_no_callback_for_a_change_notification_on_no_listen_stream(caplog):
    # 2026-07-28: change notifications come on a subscriptions/listen stream the client opened
    # (basic/patterns/subscriptions §Opening a Stream: "The server MUST NOT send notification
    # types the client has not explicitly requested"), and notifications/elicitation/complete is
    # gone (changelog 11).  The server sends both kinds unasked, then a log message.
    changed, completed, logged = Collector(), Collector(), Collector()
    with caplog.at_level(logging.DEBUG, logger="mcp_ref.client"):
        with Client.stdio(
            [*SCRIPTED, "unsolicited"],
            timeout=WAIT,
            stderr="capture",
            on_list_changed=changed,
            on_elicitation_complete=completed,
            on_log=logged,
        ) as client:
            assert client.era == "modern"
            assert client.call_tool("anything", {}).text == "ok"
            # sent after the others, and run on the same callback thread after them
            logged.wait_until(lambda items: len(items) == 1)
    assert changed.items == [] and completed.items == []
    dropped = [r.getMessage() for r in caplog.records if "on no listen stream" in r.getMessage()]
    assert len(dropped) == 4, dropped


def test_a_server_that_never_acknowledges_the_callbacks_stream_still_serves_the_rest(caplog):
    # Client(on_list_changed=) opens a listen stream as it connects; the server declares list
    # changes but never acknowledges it.  As for a refusal, that is logged and the client is
    # connected: it was raised as RequestTimeout from Client() before.
    with caplog.at_level(logging.WARNING, logger="mcp_ref.client.listening"):
        with Client.stdio(
            [*SCRIPTED, "listen-silent"],
            timeout=WAIT,
            initialize_timeout=2.0,
            stderr="capture",
            on_list_changed=lambda kind: None,
        ) as client:
            assert client.call_tool("anything", {}).text == "ok"
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("subscriptions/listen" in message for message in warned), warned
