"""The threads of the session engine: one reader thread per connection, reading for the connection's
whole life, and the handlers of incoming requests on a bounded ``ThreadPoolExecutor``.

Two sessions joined in memory, each with a small dispatcher: a handler may call back into the peer
and wait (the reader reads the answer), ``max_workers`` bounds the handlers running at once, requests
past ``max_incoming`` are refused, a cancellation reaches a running handler, the handlers running at
end of input finish and reply, one thread reads, and the threads of a closed connection exit.
"""

import asyncio
import itertools
import json
import logging
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import WAIT

from mcp_ref.errors import SERVER_BUSY, McpError
from mcp_ref.memory import Channel, MemoryTransport, memory_pair
from mcp_ref.session import Session

NAMES = itertools.count()


class Watched(MemoryTransport):
    """A memory end that records how many threads are inside ``read()`` at once (at most one, ever)."""

    def __init__(self, end: MemoryTransport):
        super().__init__(end.inbox, end.outbox)
        self.lock = threading.Lock()
        self.inside = 0
        self.most = 0
        self.readers: set[str] = set()

    def read(self):
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
            self.readers.add(threading.current_thread().name + str(threading.get_ident()))
        try:
            return super().read()
        finally:
            with self.lock:
                self.inside -= 1


class Role:
    """A dispatcher whose methods a test defines: ``handle_request`` calls ``methods[method](context, params)``."""

    def __init__(self, **methods):
        self.methods = methods
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)
        self.running = 0
        self.most = 0
        self.release = threading.Event()

    def handle_request(self, context, method, params):
        with self.changed:
            self.running += 1
            self.most = max(self.most, self.running)
            self.changed.notify_all()
        try:
            return self.methods[method](context, params)
        finally:
            with self.changed:
                self.running -= 1
                self.changed.notify_all()

    def handle_notification(self, method, params):
        pass

    def ended(self):
        pass

    def batches_allowed(self):
        return False

    def wait_running(self, n):
        with self.changed:
            assert self.changed.wait_for(lambda: self.running == n, WAIT), self.running


def held(role):
    """A method that holds its handler until the test sets ``role.release``."""

    def hold(context, params):
        assert role.release.wait(WAIT)
        return {"held": params.get("n")}

    return hold


def pair(server_role, client_role=None, **options):
    """Two started sessions in memory: (client session, server session, the server's watched transport)."""
    name = f"handoff{next(NAMES)}"
    client_end, server_end = memory_pair()
    watched = Watched(server_end)
    server = Session(watched, server_role, name=name, **options)
    client = Session(client_end, client_role or Role(), name=f"{name}c")
    server.start()
    client.start()
    return client, server, watched


def threads_named(prefix):
    return [t for t in threading.enumerate() if t.name.startswith(prefix + "-")]


def close_both(client, server):
    client.close()
    server.close()
    assert client.wait_closed(WAIT) and server.wait_closed(WAIT)


@pytest.mark.parametrize("max_workers", [1, 2])
def test_a_handler_calling_back_into_the_peer_works_with_few_workers(max_workers):
    def ask(
        context, params
    ):  # the handler asks the peer and waits: someone else must read the answer
        return {"echo": context.session.request("echo", {"n": params["n"]}, timeout=WAIT)["n"]}

    client, server, watched = pair(
        Role(ask=ask), Role(echo=lambda context, params: params), max_workers=max_workers
    )
    calls = [client.send_request("ask", {"n": n}, timeout=WAIT) for n in range(20)]
    assert [call.result() for call in calls] == [{"echo": n} for n in range(20)]
    assert watched.most == 1  # never two threads inside read() at once
    assert watched.readers == {
        f"{server.name}-reader{server._reader.ident}"
    }  # one reader, all along
    assert len(threads_named(server.name)) <= max_workers + 1
    close_both(client, server)


def test_max_workers_bounds_the_handlers_running_at_once_and_the_rest_wait():
    role = Role()
    role.methods["hold"] = held(role)
    client, server, watched = pair(role, max_workers=3)
    calls = [client.send_request("hold", {"n": n}, timeout=WAIT) for n in range(10)]
    role.wait_running(3)
    # A ping is answered by the reader in arrival order: once it is, every hold before it was read.
    assert client.request("ping", timeout=WAIT) == {}
    assert role.running == 3 and role.most == 3
    role.release.set()
    assert [call.result() for call in calls] == [{"held": n} for n in range(10)]
    assert role.most == 3
    assert watched.most == 1
    close_both(client, server)


def test_requests_queued_beyond_max_incoming_are_refused_with_server_busy():
    role = Role()
    role.methods["hold"] = held(role)
    client, server, _ = pair(role, max_workers=1, max_incoming=3)
    calls = [
        client.send_request("hold", {"n": n}, timeout=WAIT) for n in range(3)
    ]  # one runs, two wait
    role.wait_running(1)
    refused = client.send_request("hold", {"n": 3}, timeout=WAIT)
    with pytest.raises(McpError) as busy:
        refused.result()
    assert busy.value.code == SERVER_BUSY
    role.release.set()
    assert [call.result() for call in calls] == [{"held": n} for n in range(3)]
    close_both(client, server)


def test_a_request_cancelled_while_queued_never_runs_and_makes_room():
    role = Role()
    role.methods["hold"] = held(role)
    ran = []
    role.methods["note"] = lambda context, params: ran.append(params["n"]) or {}
    client, server, _ = pair(role, max_workers=1, max_incoming=2)
    first = client.send_request("hold", {"n": 0}, timeout=WAIT)
    role.wait_running(1)
    queued = client.send_request("note", {"n": 1}, timeout=WAIT)
    queued.cancel()  # notifications/cancelled: it leaves the table before a thread took it
    second = client.send_request("note", {"n": 2}, timeout=WAIT)  # room again (max_incoming=2)
    assert client.request("ping", timeout=WAIT) == {}
    role.release.set()
    assert first.result() == {"held": 0} and second.result() == {}
    assert ran == [2]
    close_both(client, server)


@pytest.mark.parametrize("max_workers", [1, 2])
def test_a_cancellation_reaches_a_running_handler(max_workers):
    started = threading.Event()

    def wait_cancel(context, params):
        started.set()
        assert context.cancelled.wait(WAIT)
        return {"cancelled": True}

    role = Role(wait=wait_cancel)
    client, server, _ = pair(role, max_workers=max_workers)
    call = client.send_request("wait", {}, timeout=WAIT)
    assert started.wait(WAIT)
    call.cancel()
    role.wait_running(0)  # the handler saw it and ended
    assert client.request("ping", timeout=WAIT) == {}
    close_both(client, server)


def test_handlers_running_at_end_of_input_finish_and_reply_before_closed_is_set():
    role = Role()
    role.methods["hold"] = held(role)
    inbox, outbox = Channel(), Channel()
    server = Session(
        MemoryTransport(inbox, outbox), role, name=f"handoff{next(NAMES)}", max_workers=2
    )
    server.start()
    for n in range(3):  # two run, one waits for a slot
        inbox.put(
            json.dumps({"jsonrpc": "2.0", "id": n, "method": "hold", "params": {"n": n}}).encode()
        )
    role.wait_running(2)
    inbox.close_writer()  # end of input
    assert not server.closed.is_set()  # two handlers are still running (and one request waits)
    role.release.set()
    assert server.wait_closed(WAIT)
    answers = [json.loads(outbox.get()) for _ in range(3)]
    assert sorted(a["id"] for a in answers) == [0, 1, 2] and all("result" in a for a in answers)
    for thread in threads_named(server.name):
        thread.join(WAIT)
        assert not thread.is_alive()


def test_the_threads_of_closed_sessions_exit():
    def ask(context, params):
        return context.session.request("echo", params, timeout=WAIT)

    sessions = []
    for _ in range(20):
        role = Role(ask=ask)
        client, server, _ = pair(role, Role(echo=lambda context, params: params), max_workers=4)
        calls = [client.send_request("ask", {"n": n}, timeout=WAIT) for n in range(12)]
        assert [call.result() for call in calls] == [{"n": n} for n in range(12)]
        assert len(threads_named(server.name)) <= 4 + 1
        sessions.append((client, server))
        close_both(client, server)
    for client, server in sessions:
        for thread in threads_named(server.name) + threads_named(client.name):
            thread.join(WAIT)
            assert not thread.is_alive(), thread.name


def test_a_shared_executor_still_runs_the_handlers_and_inline_dispatch_runs_in_the_caller():
    role = Role(where=lambda context, params: {"thread": threading.current_thread().name})
    client_end, server_end = memory_pair()
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="shared-pool") as pool:
        server = Session(server_end, role, name=f"handoff{next(NAMES)}", executor=pool)
        client = Session(client_end, Role(), name=f"handoff{next(NAMES)}")
        server.start()
        client.start()
        assert client.request("where", {}, timeout=WAIT)["thread"].startswith("shared-pool")
        close_both(client, server)
    from mcp_ref.jsonrpc import Request

    inbox, outbox = Channel(), Channel()
    alone = Session(
        MemoryTransport(inbox, outbox), role, name=f"handoff{next(NAMES)}"
    )  # never started: fed by dispatch
    alone.dispatch(Request(7, "where", {}), inline=True)
    assert json.loads(outbox.get())["result"]["thread"] == threading.current_thread().name
    alone.dispatch(Request(8, "where", {}))  # not inline: one of its own threads runs it
    answer = json.loads(outbox.get())
    assert answer["id"] == 8 and answer["result"]["thread"].startswith(f"{alone.name}-handler")
    alone.close()
    assert alone.wait_closed(WAIT)


def test_the_callback_thread_runs_what_was_queued_in_order_then_ends():
    from mcp_ref.callback_queue import CallbackQueue

    class Limits:
        max_callbacks, max_callback_bytes = 100, 1000

    queue = CallbackQueue(f"handoff{next(NAMES)}", Limits())
    gate, seen = threading.Event(), []
    assert queue.submit(gate.wait, (WAIT,), 0)
    for n in range(5):
        assert queue.submit(seen.append, (n,), 10)
    [thread] = threads_named(queue.name)
    queue.shutdown(wait=False)
    assert not queue.submit(seen.append, (99,), 0)  # after shutdown: dropped
    gate.set()
    thread.join(WAIT)
    assert not thread.is_alive() and seen == [0, 1, 2, 3, 4]


def test_max_workers_below_one_is_refused_at_once():
    client_end, _ = memory_pair()
    with pytest.raises(ValueError, match="max_workers"):
        Session(client_end, Role(), max_workers=0)


def test_requests_read_while_initialize_runs_wait_for_its_answer():
    """A client that sends a request right behind ``initialize`` (without waiting for its answer) gets it served
    after the handshake; meanwhile the reader goes on (a ping is answered, a notification could release it)."""
    gate, other_started = threading.Event(), threading.Event()

    def initialize(context, params):
        assert gate.wait(WAIT)
        return {}

    def other(context, params):
        other_started.set()
        return {"after": gate.is_set()}

    role = Role(initialize=initialize, other=other)
    client, server, _ = pair(role, max_workers=4)
    first = client.send_request("initialize", {}, timeout=WAIT)
    second = client.send_request("other", {}, timeout=WAIT)
    assert (
        client.request("ping", timeout=WAIT) == {}
    )  # read after "other": so "other" was read, and waits
    assert not other_started.wait(0.5)  # bounded: it must not start while initialize runs
    gate.set()
    assert first.result() == {} and second.result() == {"after": True}
    close_both(client, server)


@pytest.mark.parametrize(
    "raised", [SystemExit(3), KeyboardInterrupt(), asyncio.CancelledError(), GeneratorExit()]
)
def test_a_handler_raising_system_exit_is_answered_and_its_slot_freed(raised, caplog):
    """Any BaseException (an async tool's CancelledError too) is answered and frees the request's slot."""

    def leave(context, params):
        raise raised

    client, server, _ = pair(
        Role(leave=leave, ok=lambda context, params: {"ok": True}), max_workers=1, max_incoming=1
    )
    with pytest.raises(McpError) as failed:
        client.request("leave", {}, timeout=WAIT)
    assert (
        failed.value.code == -32603 and failed.value.message == "Internal error"
    )  # nothing of it reaches the peer
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert (
        len(errors) == 1 and "handler for leave failed" in errors[0].getMessage()
    )  # once, not re-raised off the main thread
    # Its request left the table (max_incoming=1: else the next one is refused as busy) and a thread still serves.
    assert client.request("ok", {}, timeout=WAIT) == {"ok": True}
    close_both(client, server)


UNCLOSED = """
import json, sys, threading
sys.path[:0] = sys.argv[1:]
from test_handoff import Role
from mcp_ref.session import Session
from mcp_ref.memory import Channel, MemoryTransport

inbox, outbox = Channel(), Channel()
session = Session(MemoryTransport(inbox, outbox), Role(ok=lambda context, params: {}), name="unclosed")
session.start()
inbox.put(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ok"}).encode())
outbox.get()  # answered: a handler thread exists, and the session is never closed
print("answered", flush=True)
"""


@pytest.mark.slow
def test_a_session_never_closed_does_not_hold_the_interpreter_at_exit():
    """The executor's threads are not daemons, so a handler thread left waiting for the next request
    would keep the process alive for ever after its main thread ends."""
    tests = str(Path(__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", UNCLOSED, tests, str(Path(__file__).resolve().parent)],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode == 0 and done.stdout == "answered\n", done.stderr


def test_a_dispatcher_whose_end_hook_raises_still_ends_its_connection(caplog):
    """The reader's last act tells the dispatcher the connection ended (``ended()``); what that
    raises was let out of the reader, so ``closed`` was never set and ``wait_closed`` waited for
    ever.  Now it is logged, and the connection ends all the same."""

    class Failing(Role):
        def ended(self):
            raise RuntimeError("the end hook failed")

    client, server, _ = pair(Failing())
    with caplog.at_level(logging.ERROR, logger="mcp_ref"):
        close_both(client, server)
    assert "the end hook failed" in caplog.text


class NoEndHook:
    """A dispatcher without ``ended()``, which the Dispatcher protocol requires."""

    def handle_request(self, context, method, params):
        return {}

    def handle_notification(self, method, params):
        pass


class ExitingEndHook(Role):
    """A dispatcher whose ``ended()`` calls ``sys.exit()``: no Exception, so the hook's guard lets it out."""

    def ended(self):
        sys.exit(3)


@pytest.mark.parametrize(
    "role, raised",
    [(NoEndHook, AttributeError), (ExitingEndHook, SystemExit)],
    ids=["no ended()", "ended() exits"],
)
def test_the_end_of_input_sets_closed_whatever_the_dispatchers_end_hook_raises(
    role, raised, monkeypatch
):
    """The reader's end set ``closed`` only after ``ended()`` returned: a dispatcher without the
    hook (AttributeError) or whose hook raised what is no Exception (``sys.exit()``) left ``closed``
    unset, so ``wait_closed()`` (and a stdio server, which waits for it to exit) waited for ever.
    Now ``closed`` is set whatever the hook does; what it raised is the reader thread's error."""
    errors = []
    reported = threading.Event()

    def excepthook(args):
        errors.append(args.exc_type)
        reported.set()

    monkeypatch.setattr(threading, "excepthook", excepthook)
    client, server, _ = pair(role())
    client.close()  # the server's input ends
    assert server.wait_closed(WAIT)
    assert reported.wait(WAIT)
    assert errors == [raised]
    close_both(client, server)
