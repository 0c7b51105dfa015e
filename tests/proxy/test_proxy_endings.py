"""What ends, and what it lets go of: a forwarded call its client cancelled (the connection it ran
on, when the target may still ask for it), a listen stream (the resources the watcher holds for
it), and the proxy itself (nothing is opened, kept or sent once it has closed).

The library form (``proxy_server``) served over HTTP on 127.0.0.1 port 0, in front of
tests/servers/proxy_target.py launched on stdio or over HTTP (a real subprocess).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from pathlib import Path

import pytest
from conftest import WAIT, Collector
from proxy_peers import PYTHON, Spawned, served_proxy as served, start_target_http, target_command

from mcp_ref import Client, McpError, proxy_server
from mcp_ref.errors import InternalError

pytestmark = pytest.mark.slow

SERVERS = Path(__file__).resolve().parents[1] / "servers"
ASKING_TARGET = [PYTHON, str(SERVERS / "proxy_asking_target.py")]
ANSWERING_TARGET = [PYTHON, str(SERVERS / "proxy_answering_target.py")]
STUBBORN_TARGET = [PYTHON, str(SERVERS / "proxy_stubborn_target.py")]


def recording(command: list[str], opened: list, before=None):
    """A connector to the target ``command`` on stdio that keeps every back Client it opens in
    ``opened`` (the watcher first); ``before(n)`` runs before the n-th is opened (0: the watcher)."""

    def connect(**options):
        if before is not None:
            before(len(opened))
        client = Client.stdio(command, **options)
        opened.append(client)
        return client

    return connect


class Turn:
    """A handshake-era command target's turn (``ProxyServer._turn``) that counts who asks for it."""

    def __init__(self, lock):
        self.lock = lock
        self.asked = threading.Semaphore(0)

    def acquire(self, *args, **kwargs) -> bool:
        self.asked.release()
        return self.lock.acquire(*args, **kwargs)

    def release(self) -> None:
        self.lock.release()

    def locked(self) -> bool:
        return self.lock.locked()


def ended(back: Client) -> None:
    """Assert that a back connection is closed and its process has exited."""
    assert back.session.is_closed
    back.session.transport.process.wait(WAIT)


def tracebacks(caplog) -> list[str]:
    """The messages logged with a traceback."""
    return [record.getMessage() for record in caplog.records if record.exc_info]


# -- a cancelled call: the connection it ran on serves no other client while the target may ask -----


def test_a_cancelled_calls_pool_connection_is_closed_not_leased_again():
    # A handshake-era HTTP target asks for Alice's call after she cancelled it, on its GET stream
    # (its question names no request; the spec lets it send requests there).  The pool connection
    # her call leased is closed, its session at the target ended, never leased to Bob's call: the
    # question reaches no client, and Bob is asked his own question only.
    target = Spawned([*ASKING_TARGET, "--http"], r"^URL (\S+)", "stdout")
    asked_bob = Collector()

    def bob_answers(params):
        asked_bob(params.message)
        return {"action": "accept", "content": {"name": "Bob"}}

    try:
        with (
            served(target.url) as (proxy, url),
            Client.http(url, era="modern", timeout=WAIT) as alice,
            Client.http(url, era="modern", timeout=WAIT, elicitation_handler=bob_answers) as bob,
        ):
            given_back = threading.Event()
            give_back = proxy.links.give_back

            def give_back_and_tell(link, **options) -> None:
                give_back(link, **options)
                given_back.set()

            proxy.links.give_back = give_back_and_tell  # type: ignore[method-assign]
            started = threading.Event()
            late = alice.start_tool_call("late", on_progress=lambda *report: started.set())
            assert started.wait(WAIT)
            late.cancel("the user gave up")
            assert given_back.wait(WAIT)  # Alice's lease has ended before Bob's call comes
            seen = bob.call_tool("seen_late").text
    finally:
        target.stop()
    assert asked_bob.items == ["A question of this call"]
    assert seen.startswith("late error:")
    assert seen.endswith("mine: accept {'name': 'Bob'}")


def test_a_cancel_costs_a_handshake_era_command_target_its_process_not_the_turn():
    # Alice cancels her call; the target stops as asked and, as the spec says, never answers it.
    # Her call held the target's turn, which every other 2026 call waits for: after CANCEL_GRACE,
    # not the call's timeout (here 3 x WAIT, past Bob's), its connection is closed, its process
    # with it, and the turn passes on.  Bob's call is served by a new process, which subscribes
    # again to what a listen stream watches.
    updated = Collector()

    def on_notification(method: str, params: dict) -> None:
        if method == "notifications/resources/updated":
            updated(params["uri"])

    opened: list[Client] = []
    options = {"timeout": 3 * WAIT}
    with (
        served(recording(target_command("handshake"), opened), client_options=options) as (
            proxy,
            url,
        ),
        Client.http(url, era="modern", timeout=WAIT) as alice,
        Client.http(url, era="modern", timeout=WAIT) as bob,
        bob.listen(resource_uris=["note://1"], on_notification=on_notification) as stream,
    ):
        assert stream.acknowledged["resourceSubscriptions"] == ["note://1"]
        started = threading.Event()
        slow = alice.start_tool_call("slow", on_progress=lambda *report: started.set())
        assert started.wait(WAIT)
        slow.cancel("the user gave up")
        assert bob.call_tool("echo", {"text": "hi"}).text == "hi"
        ended(opened[0])
        assert proxy.watcher.client is not opened[0]
        assert bob.call_tool("touch").text == "touched"
        updated.wait_until(lambda uris: "note://1" in uris)


def test_a_new_process_that_does_not_answer_its_subscribes_is_kept_not_leaked():
    # Alice's cancelled call costs the handshake-era command target its process (as above); the
    # new one comes up but does not answer resources/subscribe (here for 30 s, past the back
    # timeout).  The watcher subscribes again within UNWATCH_WAIT, drops what the target did not
    # take, and keeps the new process: Bob's calls are served by it, no third is opened, and the
    # proxy's close leaves none running.
    def connect(**options):
        stalls = ["--stall-subscribe"] if opened else []
        client = Client.stdio([*STUBBORN_TARGET, *stalls], **options)
        opened.append(client)
        return client

    opened: list[Client] = []
    with (
        served(connect) as (proxy, url),
        Client.http(url, era="modern", timeout=3 * WAIT) as alice,
        Client.http(url, era="modern", timeout=3 * WAIT) as bob,
        bob.listen(resource_uris=["note://1"]) as stream,
    ):
        assert stream.acknowledged["resourceSubscriptions"] == ["note://1"]
        started = threading.Event()
        slow = alice.start_tool_call("slow", on_progress=lambda *report: started.set())
        assert started.wait(WAIT)
        slow.cancel("the user gave up")
        for _ in range(3):
            assert bob.call_tool("echo", {"text": "hi"}).text == "hi"
        assert len(opened) == 2
        ended(opened[0])
        assert proxy.watcher.client is opened[1] and proxy.watcher.alive
        assert proxy.watcher.subscribed == set()
    for back in opened:
        ended(back)


def test_closing_the_proxy_ends_the_process_a_cancel_left_closing():
    # A handshake-era command target ignores Alice's cancel (receivers only SHOULD stop): after
    # CANCEL_GRACE its connection is closed on a thread of its own, which waits for the process
    # to exit before it ends it.  The proxy closes meanwhile (as `mcp-ref proxy` at Ctrl-C, which
    # then exits): that old process has exited by the time close() returns, not left running.
    # (That close ends the process once its wait, shutdown_timeout, has passed: a new process
    # slower to serve Bob than that left none still at work to see.  Its pipes are closed here
    # once the proxy closes, so the process is at work until then.)
    opened: list[Client] = []
    with served(recording(STUBBORN_TARGET, opened)) as (proxy, url):
        with (
            Client.http(url, era="modern", timeout=WAIT) as alice,
            Client.http(url, era="modern", timeout=WAIT) as bob,
        ):
            transport = opened[0].session.transport
            close_transport = transport.close
            closing = threading.Event()

            def close_once_the_proxy_closes() -> None:
                closing.wait(WAIT)
                close_transport()

            transport.close = close_once_the_proxy_closes  # type: ignore[method-assign]
            started = threading.Event()
            stubborn = alice.start_tool_call("stubborn", on_progress=lambda *report: started.set())
            assert started.wait(WAIT)
            stubborn.cancel("the user gave up")
            assert bob.call_tool("echo", {"text": "hi"}).text == "hi"
            assert len(opened) == 2 and proxy.watcher.client is opened[1]
            assert transport.process.poll() is None  # still at work
        closing.set()
        proxy.close()
        assert opened[0].session.transport.process.poll() is not None
    for back in opened:
        ended(back)


def test_a_target_that_answers_a_cancelled_call_keeps_its_connection():
    # A target that answers a cancelled request (with an error, as some do) ends the call within
    # CANCEL_GRACE: the turn passes on to Bob's call on the same connection, nothing restarted.
    opened: list[Client] = []
    with (
        served(recording(ANSWERING_TARGET, opened)) as (proxy, url),
        Client.http(url, era="modern", timeout=WAIT) as alice,
        Client.http(url, era="modern", timeout=WAIT) as bob,
    ):
        started = threading.Event()
        stop_me = alice.start_tool_call("stop_me", on_progress=lambda *report: started.set())
        assert started.wait(WAIT)
        stop_me.cancel("the user gave up")
        assert bob.call_tool("echo", {"text": "hi"}).text == "hi"
        assert len(opened) == 1
        assert proxy.watcher.client is opened[0] and proxy.watcher.alive


# -- a listen stream's end: what the watcher held for it is let go, within one short bound --------


@pytest.mark.parametrize("era", ["both", "handshake"])
def test_a_shutdown_with_a_listen_stream_open_is_not_held_by_a_stalled_target(era):
    # What run_http does at Ctrl-C: the HTTP server closes, its app ends every listen stream, and
    # the watcher lets go at the target of the resources they named.  The target (over HTTP; a
    # 2026 watcher, or a handshake-era one) is stalled (SIGSTOP): the six resources are let go
    # together, within UNWATCH_WAIT, not one after another each for a request timeout (here
    # 3 x WAIT).
    target = start_target_http(era)
    proxy = proxy_server(target.url, client_options={"timeout": 3 * WAIT})
    httpd = proxy.http_server("127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    client = Client.http(f"{httpd.url}/mcp", era="modern", timeout=WAIT)
    try:
        uris = [f"note://{n}/text" for n in range(6)]
        stream = client.listen(resource_uris=uris)
        assert stream.acknowledged["resourceSubscriptions"] == uris
        os.kill(target.proc.pid, signal.SIGSTOP)
        httpd.shutdown()
        thread.join(WAIT)
        httpd.server_close()
        closed = threading.Event()
        threading.Thread(target=lambda: (httpd.app.close(), closed.set()), daemon=True).start()
        assert closed.wait(WAIT)
        assert proxy.watcher.subscribed == set()
    finally:
        os.kill(target.proc.pid, signal.SIGCONT)
        client.close()
        proxy.close()
        target.stop()


def test_a_listen_subscribing_at_a_stalled_target_holds_neither_listens_nor_a_shutdown():
    # One stream holds note://1; the target (handshake era, over HTTP) is stalled (SIGSTOP) while
    # a second client's listen subscribes to six more.  That listen waits UNWATCH_WAIT at most,
    # not a request timeout (here 3 x WAIT) for each; a third client's listen naming note://1
    # only, held already, is answered at once; and a shutdown ending every stream is not held.
    target = start_target_http("handshake")
    trace = Collector()
    proxy = proxy_server(target.url, client_options={"timeout": 3 * WAIT, "trace": trace})
    httpd = proxy.http_server("127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"{httpd.url}/mcp"
    clients = [Client.http(url, era="modern", timeout=3 * WAIT) for _ in range(3)]
    try:
        first = clients[0].listen(resource_uris=["note://1"])
        assert first.acknowledged["resourceSubscriptions"] == ["note://1"]
        os.kill(target.proc.pid, signal.SIGSTOP)
        second: list = []
        uris = [f"note://{n}/text" for n in range(2, 8)]
        threading.Thread(
            target=lambda: second.append(clients[1].listen(resource_uris=uris)), daemon=True
        ).start()
        trace.wait_until(lambda _: sent(trace, "resources/subscribe", "note://2/text"))
        third: list = []
        answered = threading.Event()

        def third_listens() -> None:
            third.append(clients[2].listen(resource_uris=["note://1"]))
            answered.set()

        threading.Thread(target=third_listens, daemon=True).start()
        assert answered.wait(WAIT)
        assert third[0].acknowledged["resourceSubscriptions"] == ["note://1"]
        httpd.shutdown()
        thread.join(WAIT)
        httpd.server_close()
        closed = threading.Event()
        threading.Thread(target=lambda: (httpd.app.close(), closed.set()), daemon=True).start()
        assert closed.wait(WAIT)
    finally:
        os.kill(target.proc.pid, signal.SIGCONT)
        for client in clients:
            client.close()
        proxy.close()
        target.stop()


def sent(trace: Collector, method: str, uri: str) -> bool:
    """True once a back connection has sent ``method`` for ``uri`` to the target."""
    needles = (f'"method":"{method}"'.encode(), f'"uri":"{uri}"'.encode())
    return any(
        way == "-->" and all(n in data.replace(b" ", b"") for n in needles) for way, data in trace
    )


def test_a_listen_stream_opened_again_at_once_still_gets_its_updates():
    # A client closes its stream and opens another naming the same resource at once, a few times
    # (the old stream's unsubscribe is sent outside the lock; the new one's subscribe waits for
    # it): the target is left subscribed, and the update reaches the last stream.
    updated = Collector()

    def on_notification(method: str, params: dict) -> None:
        if method == "notifications/resources/updated":
            updated(params["uri"])

    with (
        served(target_command("handshake")) as (_, url),
        Client.http(url, era="modern", timeout=WAIT) as client,
    ):
        for _ in range(3):
            client.listen(resource_uris=["note://1"]).close()
        with client.listen(resource_uris=["note://1"], on_notification=on_notification) as stream:
            assert stream.acknowledged["resourceSubscriptions"] == ["note://1"]
            assert client.call_tool("touch").text == "touched"
            updated.wait_until(lambda uris: "note://1" in uris)


# -- closing: nothing is opened, kept or sent once the proxy has closed ----------------------------


def echo_into(client: Client, outcome: list) -> None:
    """``client`` calls the target's echo tool: its text, or the McpError it met, into ``outcome``."""
    try:
        outcome.append(client.call_tool("echo", {"text": "hi"}).text)
    except McpError as exc:
        outcome.append(exc)


def test_a_request_waiting_for_the_turn_at_close_opens_no_connection(caplog):
    # Alice's call holds the handshake-era command target's turn, Bob's waits for it; the proxy
    # closes.  Alice's call ends with the watcher, and Bob's, given the turn, is refused: the
    # closed proxy opens no new connection (a process nobody would end), sends nothing, and its
    # places are given back.
    caplog.set_level(logging.ERROR)
    opened: list[Client] = []
    with served(recording(target_command("handshake"), opened)) as (proxy, url):
        proxy._turn = turn = Turn(proxy._turn)
        with (
            Client.http(url, era="modern", timeout=WAIT) as alice,
            Client.http(url, era="modern", timeout=WAIT) as bob,
        ):
            started = threading.Event()
            slow = alice.start_tool_call("slow", on_progress=lambda *report: started.set())
            assert started.wait(WAIT)
            outcome: list = []
            waiting = threading.Thread(target=echo_into, args=(bob, outcome))
            waiting.start()
            assert turn.asked.acquire(timeout=WAIT) and turn.asked.acquire(timeout=WAIT)
            proxy.close()
            waiting.join(WAIT)
            with pytest.raises(McpError):
                slow.result()
        (refusal,) = outcome
        assert isinstance(refusal, InternalError)
        assert "this proxy has closed" in refusal.message
        assert len(opened) == 1  # the watcher only
        ended(opened[0])
        assert proxy._forwarded.held() == 0 and not proxy._turn.locked()
    assert tracebacks(caplog) == []


def test_a_sessions_connection_opened_during_close_is_closed(caplog):
    # A handshake-era session's first request opens its own connection to the target, which is
    # slow to start; the proxy closes meanwhile.  The connection, once open, is closed at once
    # and the request refused: the closed proxy keeps no session and leaves no process behind.
    caplog.set_level(logging.ERROR)
    opening, go_on = threading.Event(), threading.Event()

    def slow_start(n: int) -> None:
        if n == 1:  # the session's (the watcher is the first)
            opening.set()
            assert go_on.wait(WAIT)

    opened: list[Client] = []
    with served(recording(target_command("handshake"), opened, slow_start)) as (proxy, url):
        with Client.http(url, era="handshake", timeout=WAIT) as session:
            outcome: list = []
            asking = threading.Thread(target=echo_into, args=(session, outcome))
            asking.start()
            assert opening.wait(WAIT)
            proxy.close()
            go_on.set()
            asking.join(WAIT)
            (refusal,) = outcome
            assert isinstance(refusal, InternalError)
            assert "this proxy has closed" in refusal.message
            assert proxy._sessions == {}
            assert len(opened) == 2
            for back in opened:
                ended(back)
    assert tracebacks(caplog) == []
