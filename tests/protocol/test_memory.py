"""The in-memory pair: Client.in_memory(server) and mcp_ref.memory.

The same API as Client.stdio, over the same JSON bytes (every message checked against the
official schema), with no subprocess.
"""

from __future__ import annotations

import threading

import pytest
from conftest import WAIT, WireChecker

from mcp_ref import (
    Client,
    ConnectionClosed,
    Context,
    CreateMessageResult,
    McpError,
    RequestCancelled,
    Server,
    TextContent,
)
from mcp_ref.memory import Channel, memory_pair


def build_server() -> tuple[Server, dict]:
    server = Server("memory-test", version="1.0")
    seen: dict = {"started": threading.Event(), "cancelled": threading.Event(), "connections": []}

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def count(steps: int, ctx: Context) -> str:
        """Report progress."""
        for i in range(steps):
            ctx.report_progress(i + 1, steps)
        return "counted"

    @server.tool()
    def ask(ctx: Context) -> str:
        """Ask the client's model."""
        return ctx.sample("hello?", max_tokens=5).content.text

    @server.tool()
    def wait(ctx: Context) -> str:
        """Wait until cancelled."""
        seen["started"].set()
        if ctx.request.cancelled.wait(WAIT):
            seen["cancelled"].set()
        return "not cancelled"

    @server.resource("memo://note", mime_type="text/plain")
    def note() -> str:
        return "a note"

    return server, seen


@pytest.fixture
def wire():
    checker = WireChecker()
    yield checker
    checker.assert_valid()


@pytest.mark.parametrize("era, version", [("auto", "2026-07-28"), ("handshake", "2025-11-25")])
def test_a_client_in_memory_speaks_the_whole_protocol(wire, era, version):
    server, _ = build_server()
    progress = []

    def sampling(params):
        return CreateMessageResult(role="assistant", content=TextContent(text="hi!"), model="m")

    with Client.in_memory(
        server, trace=wire, timeout=WAIT, sampling_handler=sampling, era=era
    ) as client:
        assert client.server_info.name == "memory-test"
        assert client.protocol_version == version
        assert [t.name for t in client.list_tools()] == ["add", "count", "ask", "wait"]
        assert client.call_tool("add", {"a": 2, "b": 3}).content[0].text == "5"
        assert (
            client.call_tool("count", {"steps": 3}, on_progress=lambda *p: progress.append(p))
            .content[0]
            .text
            == "counted"
        )
        assert [p[0] for p in progress] == [1, 2, 3]
        assert (
            client.call_tool("ask").content[0].text == "hi!"
        )  # the server called back into the client
        assert client.read_resource("memo://note").contents[0].text == "a note"
        client.ping()
    assert wire.sent("tools/call")
    if era == "handshake":  # the server sent a request ...
        assert wire.received("sampling/createMessage")
    else:  # ... or answered input_required, and the client retried with the sample
        assert [
            m for m in wire.received() if m.get("result", {}).get("resultType") == "input_required"
        ]
        assert [m for m in wire.sent("tools/call") if "inputResponses" in m["params"]]


def test_cancel_reaches_the_in_memory_server(wire):
    server, seen = build_server()
    with Client.in_memory(server, trace=wire, timeout=WAIT) as client:
        call = client.start_tool_call("wait")
        assert seen["started"].wait(WAIT)
        assert call.cancel("no longer needed")
        assert seen["cancelled"].wait(WAIT)
        with pytest.raises(RequestCancelled):
            call.result()


def test_closing_the_client_ends_the_servers_side_of_the_connection():
    server, _ = build_server()
    client = Client.in_memory(server, timeout=WAIT)
    [connection] = server.connections()
    assert not connection.session.is_closed
    client.close()
    assert connection.session.wait_closed(WAIT)
    with pytest.raises(ConnectionClosed):
        client.call_tool("add", {"a": 1, "b": 1})


def test_progress_after_the_client_has_gone_is_dropped_not_raised():
    server = Server("memory-progress")
    started, go_on, finished = threading.Event(), threading.Event(), threading.Event()
    reported = []

    @server.tool()
    def slow(ctx: Context) -> str:
        """Report progress once the client has gone."""
        started.set()
        go_on.wait(WAIT)
        try:
            reported.append(ctx.report_progress(1, 2))
        finally:
            finished.set()
        return "done"

    client = Client.in_memory(server, timeout=WAIT, era="handshake")
    [connection] = server.connections()
    call = client.start_tool_call("slow", on_progress=lambda *progress: None)
    assert started.wait(WAIT)
    # the client goes as a dead process does: no cancellation, its end of the channel closes
    client.session.transport.close()
    with pytest.raises(ConnectionClosed):
        call.result()
    go_on.set()
    assert finished.wait(WAIT)
    assert reported == [False]  # dropped, not raised: the tool goes on to its end
    assert connection.session.wait_closed(WAIT)
    client.close()


@pytest.mark.parametrize(
    "raised, code, message",
    [
        (McpError(-32001, "refused by policy"), -32603, "-32001"),  # another SDK's argument order
        (McpError(ValueError("not valid")), -32603, "not valid"),
        (McpError("refused", code="E42"), -32603, "refused"),
        (
            McpError("refused", data={"when": object()}),
            -32603,
            "Internal error: the result is not valid JSON",
        ),
    ],
    ids=["code-first", "an-exception", "a-text-code", "data-no-json-carries"],
)
def test_an_mcp_error_with_odd_arguments_is_still_answered(raised, code, message):
    # JSON-RPC 2.0 §5: a request is answered; §5.1: the code "MUST be an integer".  Such an
    # error used to fail while its answer was made, and the request was never answered.
    server = Server("memory-odd-errors")

    @server.tool()
    def refuse() -> str:
        """Refuse, wrongly."""
        raise raised

    with Client.in_memory(server, timeout=WAIT) as client:
        with pytest.raises(McpError) as caught:
            client.call_tool("refuse")
        assert (caught.value.code, caught.value.message) == (code, message)
        client.ping()  # the connection goes on


def test_a_client_that_fails_to_start_leaves_no_server_connection_running():
    server, _ = build_server()
    with pytest.raises(ValueError):
        Client.in_memory(server, protocol_version="1999-01-01")
    [connection] = server.connections()
    assert connection.session.wait_closed(WAIT)


def test_a_client_that_fails_to_start_lets_go_of_the_servers_lifespan():
    import contextlib

    events: list = []

    @contextlib.contextmanager
    def lifespan(server):
        events.append("enter")
        yield "db"
        events.append("exit")

    server = Server("memory-lifespan", lifespan=lifespan)
    with pytest.raises(ValueError):
        Client.in_memory(server, protocol_version="1999-01-01")
    assert events == ["enter", "exit"] and server.lifespan_context is None
    [connection] = server.connections()
    assert connection.session.wait_closed(WAIT)


def test_many_threads_share_one_in_memory_client():
    server, _ = build_server()
    results, errors = [], []
    with Client.in_memory(server, timeout=WAIT) as client:

        def work(n: int) -> None:
            try:
                for i in range(20):
                    results.append(
                        client.call_tool("add", {"a": n, "b": i}).content[0].text == str(n + i)
                    )
            except Exception as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT)
    assert not errors and len(results) == 160 and all(results)


# -- the channel ---------------------------------------------------------------------------------


def test_a_full_channel_makes_its_writer_wait_until_the_reader_takes_one():
    channel = Channel(limit=1)
    channel.put(b"first")
    second_in = threading.Event()

    def writer() -> None:
        channel.put(b"second")
        second_in.set()

    thread = threading.Thread(target=writer)
    thread.start()
    assert not second_in.wait(0.2)  # full: the writer waits (nothing is dropped)
    assert channel.get() == b"first"
    assert second_in.wait(WAIT)
    assert channel.get() == b"second"
    thread.join(WAIT)


def test_the_reader_gets_what_was_sent_then_end_of_input():
    channel = Channel()
    channel.put(b"a")
    channel.put(b"b")
    channel.close_writer()
    assert [channel.get(), channel.get(), channel.get()] == [b"a", b"b", None]
    with pytest.raises(OSError):
        channel.put(b"late")


def test_writing_towards_a_closed_end_fails_like_a_broken_pipe():
    a, b = memory_pair(limit=2)
    b.close()
    assert a.read() is None  # b closed its writing side: a sees end of input
    with pytest.raises(OSError):
        a.write(b"{}")


def test_a_writer_blocked_on_a_full_channel_is_released_when_the_reader_closes():
    channel = Channel(limit=1)
    channel.put(b"fills it")
    failed = threading.Event()

    def writer() -> None:
        try:
            channel.put(b"blocked")
        except OSError:
            failed.set()

    thread = threading.Thread(target=writer)
    thread.start()
    channel.close_reader()
    assert failed.wait(WAIT)
    thread.join(WAIT)


def test_a_channel_holds_at_least_one_message():
    with pytest.raises(ValueError):
        Channel(limit=0)
