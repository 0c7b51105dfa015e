"""The lifespan (``Server(lifespan=fn)``, ``ctx.lifespan_context``): when each way of serving enters
and exits it.  Issue 34 item 2: an in-memory client holds it from its start to its ``close()``, the
last of several open at once exits it, and serving (run, run_http, a WSGI app, ``connect``) holds
it apart from them.  The sqlite3 scenarios of item 3 (handlers on other threads than the
lifespan's, ``mcp_ref.PerThread``) are in test_lifespan_threads.py.
"""

from __future__ import annotations

import contextlib
import json
import queue
import sys
import threading

import pytest
from conftest import WAIT, run_threads

from mcp_ref import Client, Server
from mcp_ref.memory import memory_pair
from mcp_ref.server import Context

ERAS = ["handshake", "modern"]


def lifespan_server(
    events: list, *, asynchronous: bool = False, fail: bool = False, fail_exit: bool = False
) -> Server:
    if asynchronous:

        @contextlib.asynccontextmanager
        async def lifespan(server):
            import asyncio

            await asyncio.sleep(0)
            events.append(("enter", server.name))
            yield {"db": "async pool"}
            events.append("exit")
    else:

        @contextlib.contextmanager
        def lifespan(server):
            if fail:
                raise RuntimeError("no database")
            events.append(("enter", server.name))
            try:
                yield {"db": "pool"}
            finally:
                events.append("exit")
            if fail_exit:
                raise RuntimeError("the database did not close")

    server = Server("lifespan", lifespan=lifespan)

    @server.tool()
    def db(ctx: Context) -> str:
        """The lifespan's value, as a tool sees it."""
        return json.dumps(ctx.lifespan_context)

    @server.tool()
    async def adb(ctx: Context) -> str:
        """The same from an async tool."""
        return json.dumps(ctx.lifespan_context)

    return server


def lifespan_value(client: Client) -> object:
    return json.loads(client.call_tool("db").content[0].text)


# -- in memory: each client holds it until it closes ------------------------------------------------


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("era", ERAS)
def test_an_in_memory_client_enters_the_lifespan_and_leaves_it_when_it_closes(era, asynchronous):
    events: list = []
    server = lifespan_server(events, asynchronous=asynchronous)
    assert events == [] and server.lifespan_context is None
    db = {"db": "async pool" if asynchronous else "pool"}
    with Client.in_memory(server, era=era) as client:
        assert events == [("enter", "lifespan")]  # before the first request
        assert lifespan_value(client) == db
        assert json.loads(client.call_tool("adb").content[0].text) == db
    assert events == [("enter", "lifespan"), "exit"] and server.lifespan_context is None
    with Client.in_memory(server, era=era) as client:  # the next client: a fresh lifespan
        assert lifespan_value(client) == db
    assert events == [("enter", "lifespan"), "exit"] * 2
    server.exit_lifespan()  # nothing holds it: nothing to do
    assert events == [("enter", "lifespan"), "exit"] * 2


def test_without_a_lifespan_the_context_is_none():
    server = Server("plain")

    @server.tool()
    def db(ctx: Context) -> str:
        """The lifespan's value."""
        return repr(ctx.lifespan_context)

    with Client.in_memory(server) as client:
        assert client.call_tool("db").content[0].text == "None"


def test_a_failing_lifespan_stops_the_start_and_the_next_client_tries_again():
    events: list = []
    server = lifespan_server(events, fail=True)
    with pytest.raises(RuntimeError, match="no database"):
        Client.in_memory(server)
    assert server.connections() == []  # no server side was left behind
    with pytest.raises(TypeError, match="context manager"):
        Server("bad", lifespan=lambda server: 42).enter_lifespan()
    good = lifespan_server(events)
    with Client.in_memory(good) as client:
        assert lifespan_value(client) == {"db": "pool"}


def test_clients_open_at_once_share_one_lifespan_and_the_last_to_close_exits_it():
    events: list = []
    server = lifespan_server(events)
    first = Client.in_memory(server)
    second = Client.in_memory(server, era="handshake")
    assert events == [("enter", "lifespan")]
    first.close()
    assert events == [("enter", "lifespan")]  # the second still holds it
    assert lifespan_value(second) == {"db": "pool"}
    first.close()  # a second close lets go of nothing more
    assert events == [("enter", "lifespan")]
    second.close()
    assert events == [("enter", "lifespan"), "exit"]


def test_many_threads_opening_and_closing_clients_enter_it_once_at_a_time():
    lock = threading.Lock()
    state = {"entered": 0, "enters": 0, "exits": 0, "overlaps": 0}

    @contextlib.contextmanager
    def lifespan(server):
        with lock:
            state["overlaps"] += state["entered"]
            state["entered"] += 1
            state["enters"] += 1
        try:
            yield {"db": "pool"}
        finally:
            with lock:
                state["entered"] -= 1
                state["exits"] += 1

    server = Server("shared", lifespan=lifespan)

    @server.tool()
    def db(ctx: Context) -> str:
        """The lifespan's value."""
        return json.dumps(ctx.lifespan_context)

    def work(n: int) -> None:
        for _ in range(5):
            with Client.in_memory(server, timeout=WAIT) as client:
                assert lifespan_value(client) == {"db": "pool"}

    run_threads(work, 6, timeout=6 * WAIT)
    assert state["overlaps"] == 0 and state["entered"] == 0
    assert state["enters"] == state["exits"] >= 1
    assert server.lifespan_context is None


def test_an_exit_that_raises_comes_out_of_the_last_client_close():
    events: list = []
    server = lifespan_server(events, fail_exit=True)
    first = Client.in_memory(server)
    with pytest.raises(RuntimeError, match="did not close"):
        with Client.in_memory(server) as client:
            first.close()  # not the last: nothing is raised
            assert lifespan_value(client) == {"db": "pool"}
    assert events == [("enter", "lifespan"), "exit"] and server.lifespan_context is None
    client = Client.in_memory(server)  # exited all the same: the next client enters it again
    assert lifespan_value(client) == {"db": "pool"}
    assert events == [("enter", "lifespan"), "exit", ("enter", "lifespan")]
    with pytest.raises(RuntimeError, match="did not close"):
        client.close()
    client.close()  # raised once: closed, nothing more to let go of


def test_the_lifespan_is_left_after_the_servers_side_has_finished_its_handlers():
    events: list = []
    server = lifespan_server(events)
    started = threading.Event()

    @server.tool()
    def slow(ctx: Context) -> str:
        """Waits for its cancellation, then records whether the lifespan is still entered."""
        started.set()
        ctx.request.cancelled.wait(WAIT)
        events.append(("handler ends", ctx.lifespan_context is not None))
        return "done"

    client = Client.in_memory(server, timeout=WAIT)
    client.start_tool_call("slow")
    assert started.wait(WAIT)
    client.close()  # cancels the call; returns once the handler ended and the lifespan exited
    assert events == [("enter", "lifespan"), ("handler ends", True), "exit"]


def test_a_handler_that_outlasts_the_close_is_waited_for_on_a_thread(monkeypatch):
    import mcp_ref.memory

    monkeypatch.setattr(mcp_ref.memory, "SERVER_END_WAIT", 0.01)
    events: list = []
    exited = threading.Event()
    server = lifespan_server(events)
    started, release = threading.Event(), threading.Event()

    @server.tool()
    def stubborn(ctx: Context) -> str:
        """Ignores its cancellation until released."""
        started.set()
        release.wait(WAIT)
        events.append(("handler ends", ctx.lifespan_context is not None))
        return "done"

    lifespan = server.lifespan_state
    real_exit = lifespan._exit

    def exit_and_tell() -> None:
        real_exit()
        exited.set()

    monkeypatch.setattr(lifespan, "_exit", exit_and_tell)
    client = Client.in_memory(server, timeout=WAIT)
    client.start_tool_call("stubborn")
    assert started.wait(WAIT)
    client.close()  # gives up waiting: the handler still runs, so the lifespan stays entered
    assert events == [("enter", "lifespan")] and server.lifespan_context == {"db": "pool"}
    release.set()
    assert exited.wait(WAIT)
    assert events == [("enter", "lifespan"), ("handler ends", True), "exit"]


# -- serving holds it apart from in-memory clients ----------------------------------------------------


def test_server_connect_holds_the_lifespan_as_serving_does_until_exit_lifespan():
    events: list = []
    server = lifespan_server(events)
    client_end, server_end = memory_pair()
    connection = server.connect(server_end, name="own")
    with Client(client_end) as client:
        assert lifespan_value(client) == {"db": "pool"}
    assert connection.session.wait_closed(WAIT)
    with Client.in_memory(server) as client:  # an in-memory client comes and goes: still entered
        assert lifespan_value(client) == {"db": "pool"}
    assert events == [("enter", "lifespan")]
    server.exit_lifespan()
    assert events == [("enter", "lifespan"), "exit"]


def test_exit_lifespan_leaves_it_to_the_in_memory_client_that_still_holds_it():
    events: list = []
    server = lifespan_server(events)
    server.enter_lifespan()
    with Client.in_memory(server) as client:
        server.exit_lifespan()  # serving ends while the client is open
        assert events == [("enter", "lifespan")]
        assert lifespan_value(client) == {"db": "pool"}
    assert events == [("enter", "lifespan"), "exit"]


LIFESPAN_SCRIPT = '''
import contextlib, sys
from mcp_ref import Server
from mcp_ref.server import Context

@contextlib.contextmanager
def lifespan(server):
    print("lifespan: enter", file=sys.stderr, flush=True)
    yield {"ready": True}
    print("lifespan: exit", file=sys.stderr, flush=True)

server = Server("stdio-lifespan", lifespan=lifespan)

@server.tool()
async def ready(ctx: Context) -> bool:
    """Whether the lifespan is entered."""
    await ctx.info("checking")
    return ctx.lifespan_context["ready"]

server.run()
'''


@pytest.mark.slow
def test_run_stdio_enters_the_lifespan_at_start_and_exits_it_at_the_end(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(LIFESPAN_SCRIPT)
    lines: queue.Queue = queue.Queue()
    client = Client.stdio([sys.executable, str(script)], stderr=lines.put)
    with client:
        assert lines.get(timeout=WAIT) == "lifespan: enter"
        assert client.call_tool("ready").structured_content == {"result": True}
    assert (
        lines.get(timeout=WAIT) == "lifespan: exit"
    )  # the server ran it on end of input, before exiting


def test_a_wsgi_app_enters_the_lifespan_at_its_first_request_and_close_exits_it():
    events: list = []
    server = lifespan_server(events)
    httpd = server.http_server("127.0.0.1", 0)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        assert events == []  # a WSGI app has no start
        with Client.http(f"{httpd.url}/mcp") as client:
            assert lifespan_value(client) == {"db": "pool"}
        assert events == [("enter", "lifespan")]
        with Client.in_memory(server) as client:  # the app holds it: a client's close leaves it
            assert lifespan_value(client) == {"db": "pool"}
        assert events == [("enter", "lifespan")]
        with Client.http(f"{httpd.url}/mcp") as client:
            assert lifespan_value(client) == {"db": "pool"}
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(WAIT)
    httpd.app.close()
    assert events == [("enter", "lifespan"), "exit"]


def run_http_in_a_thread(server: Server) -> tuple[threading.Thread, object]:
    ready: queue.Queue = queue.Queue()
    thread = threading.Thread(
        target=server.run_http, args=("127.0.0.1", 0), kwargs={"on_ready": ready.put}, daemon=True
    )
    thread.start()
    return thread, ready.get(timeout=WAIT)


def test_run_http_enters_the_lifespan_before_serving_and_exits_it_when_serving_ends():
    events: list = []
    server = lifespan_server(events)
    thread, httpd = run_http_in_a_thread(server)
    assert events == [("enter", "lifespan")]  # before any request
    with Client.http(f"{httpd.url}/mcp") as client:
        assert lifespan_value(client) == {"db": "pool"}
    with Client.in_memory(server) as client:  # run_http holds it: the client's close leaves it
        assert lifespan_value(client) == {"db": "pool"}
    assert events == [("enter", "lifespan")]
    with Client.http(f"{httpd.url}/mcp") as client:
        assert lifespan_value(client) == {"db": "pool"}
    httpd.shutdown()
    thread.join(WAIT)
    assert not thread.is_alive() and events == [("enter", "lifespan"), "exit"]


def test_run_http_started_while_an_in_memory_client_holds_it_keeps_it_after_that_client():
    events: list = []
    server = lifespan_server(events)
    client = Client.in_memory(server)
    thread, httpd = run_http_in_a_thread(server)
    client.close()  # entered by the client, but run_http serves with it now
    assert events == [("enter", "lifespan")]
    with Client.http(f"{httpd.url}/mcp") as http_client:
        assert lifespan_value(http_client) == {"db": "pool"}
    httpd.shutdown()
    thread.join(WAIT)
    assert events == [("enter", "lifespan"), "exit"]
