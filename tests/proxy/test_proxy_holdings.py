"""What the proxy holds, and that it lets it go: its connections to the target (the pool leased to
2026 requests, each client's share), its forwarded requests, the resources its watcher subscribes
to, and all of it when it closes.

The library form (``proxy_server``) served over HTTP on 127.0.0.1 port 0, in front of
tests/servers/proxy_target.py launched on stdio or over HTTP (a real subprocess).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

import pytest
from conftest import WAIT, run_threads
from proxy_peers import start_target_http, target_command

from mcp_ref import Client, McpError, proxy_server

pytestmark = pytest.mark.slow


@contextlib.contextmanager
def served(target, **options):
    """A proxy of ``target`` served over HTTP; yields ``(proxy, url)``."""
    options.setdefault("client_options", {"timeout": WAIT})
    proxy = proxy_server(target, **options)
    httpd = proxy.http_server("127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield proxy, f"{httpd.url}/mcp"
    finally:
        httpd.shutdown()
        thread.join(WAIT)
        proxy.close()


@pytest.fixture
def http_target():
    """The target over HTTP (both eras): 2026 requests that may ask lease pool connections."""
    target = start_target_http("both")
    yield target.url
    target.stop()


def recording(url: str, opened: list):
    """A connector to ``url`` that keeps every back Client it opens in ``opened`` (the watcher
    first)."""

    def connect(**options):
        client = Client.http(url, **options)
        opened.append(client)
        return client

    return connect


def answering(barrier: threading.Barrier | None = None) -> dict:
    """A front client's handlers for ``work``'s three questions; elicitation waits at
    ``barrier`` (so that several calls hold their connections at once)."""

    def elicitation(params):
        if barrier is not None:
            barrier.wait()
        return {"action": "accept", "content": {"name": "Lin"}}

    def sampling(params):
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}

    return {
        "elicitation_handler": elicitation,
        "sampling_handler": sampling,
        "roots": ["file:///here"],
    }


# -- the pool of connections leased to 2026 requests ---------------------------------------------


def test_an_idle_pool_connection_makes_room_for_a_session(http_target):
    # max_back_connections=2: the watcher, and the one a 2026 call leased, idle once it ended.  A
    # handshake-era session needs a connection of its own: the idle one is closed to make room.
    with served(http_target, max_back_connections=2) as (_, url):
        with Client.http(url, era="modern", timeout=WAIT) as modern:
            assert modern.call_tool("echo", {"text": "leased"}).text == "leased"
        with Client.http(url, era="handshake", timeout=WAIT) as session:
            assert session.call_tool("echo", {"text": "own"}).text == "own"
        with Client.http(url, era="modern", timeout=WAIT) as modern:
            assert modern.call_tool("echo", {"text": "again"}).text == "again"


def test_a_burst_of_2026_calls_does_not_lock_sessions_out(http_target):
    # Three 2026 calls at once (each waits for the others before answering the target's first
    # question) fill the bound with pool connections; then three handshake-era sessions at once
    # each get one, every idle pool connection closed to make room.
    with served(http_target, max_back_connections=4) as (_, url):
        barrier = threading.Barrier(3, timeout=WAIT)

        def call(i: int) -> str:
            with Client.http(url, era="modern", timeout=WAIT, **answering(barrier)) as client:
                return client.call_tool("work", {"steps": 1}).text

        assert run_threads(call, 3) == ["Lin|ok|1 roots|file:///here"] * 3
        sessions = [Client.http(url, era="handshake", timeout=WAIT) for _ in range(3)]
        try:
            said = run_threads(lambda i: sessions[i].call_tool("echo", {"text": f"s{i}"}).text, 3)
            assert said == ["s0", "s1", "s2"]
        finally:
            for session in sessions:
                session.close()


def test_an_idle_pool_connection_is_closed_after_its_idle_time(http_target):
    # Idle past links.idle_timeout (POOL_IDLE_TIMEOUT, 60 s; here 0): closed at the pool's next
    # use, and the next request gets a new connection.
    opened: list[Client] = []
    with served(recording(http_target, opened)) as (proxy, url):
        proxy.links.idle_timeout = 0.0
        with Client.http(url, era="modern", timeout=WAIT) as client:
            assert client.call_tool("echo", {"text": "one"}).text == "one"
            assert len(opened) == 2 and not opened[1].session.is_closed  # the watcher, the lease
            assert client.call_tool("echo", {"text": "two"}).text == "two"
        assert len(opened) == 3
        assert opened[1].session.is_closed
        assert not opened[0].session.is_closed  # the watcher stays


# -- closing -------------------------------------------------------------------------------------


def test_closing_the_proxy_closes_a_connection_leased_to_a_request_in_flight(http_target):
    # A 2026 call in flight holds a pool connection: close() closes it with the others, and when
    # the call ends it is not pooled by the closed proxy (nor is a new one opened).
    opened: list[Client] = []
    with served(recording(http_target, opened)) as (proxy, url):
        with Client.http(url, era="modern", timeout=WAIT) as client:
            started = threading.Event()
            slow = client.start_tool_call("slow", on_progress=lambda *report: started.set())
            assert started.wait(WAIT)
            assert len(opened) == 2  # the watcher, and the lease of the call in flight
            proxy.close()
            assert opened[1].session.is_closed
            with pytest.raises(McpError):
                slow.result()
            with pytest.raises(McpError):  # a closed proxy opens nothing
                client.call_tool("echo", {"text": "after"})
    assert len(opened) == 2 and all(back.session.is_closed for back in opened)


def test_closing_the_proxy_closes_stalled_command_targets_at_once():
    # Four processes (the watcher's and three sessions') stopped with SIGSTOP: each close waits
    # its own bound for its process before ending it.  They close at once: every close has begun
    # before any goes on (the barrier), so the proxy's close is one bound, not four in turn.
    closing = threading.Barrier(4, timeout=WAIT)
    opened: list[Client] = []

    def connect(**options):
        client = Client.stdio(target_command("handshake"), **options)
        opened.append(client)
        close = client.close

        def close_with_the_others() -> None:
            closing.wait()  # broken (and the test failed) when closes run one after another
            close()

        client.close = close_with_the_others  # type: ignore[method-assign]
        return client

    proxy = proxy_server(connect, client_options={"timeout": WAIT})
    sessions = []
    try:
        httpd = proxy.http_server("127.0.0.1", 0)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        sessions = [
            Client.http(f"{httpd.url}/mcp", era="handshake", timeout=WAIT) for _ in range(3)
        ]
        for session in sessions:
            assert session.call_tool("echo", {"text": "hi"}).text == "hi"
        httpd.shutdown()
        thread.join(WAIT)
        processes = [back.session.transport.process for back in opened]
        assert len(processes) == 4
        for process in processes:
            os.kill(process.pid, signal.SIGSTOP)
        proxy.close()
        assert not closing.broken
        for process in processes:
            process.wait(WAIT)  # ended, stopped as it was
    finally:
        for back in opened:
            with contextlib.suppress(ProcessLookupError):
                os.kill(back.session.transport.process.pid, signal.SIGKILL)
        for session in sessions:
            session.close()
