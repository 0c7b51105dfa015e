"""What the proxy holds, and that it lets it go: its connections to the target (the pool leased to
2026 requests, each client's share), its forwarded requests, the resources its watcher subscribes
to, and all of it when it closes.

The library form (``proxy_server``) served over HTTP on 127.0.0.1 port 0, in front of
tests/servers/proxy_target.py launched on stdio or over HTTP (a real subprocess).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import os
import signal
import threading
import urllib.parse

import pytest
from conftest import SERVERS, WAIT, Collector, LoggedOnce, run_threads
from proxy_peers import PYTHON, served_proxy as served, start_target_http, target_command

from mcp_ref import Client, McpError, lifecycle, proxy_server
from mcp_ref.errors import ServerBusy

pytestmark = pytest.mark.slow

REFUSING_TARGET = str(SERVERS / "proxy_refusing_target.py")
ANSWERING_TARGET = str(SERVERS / "proxy_answering_target.py")


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
    # One client here, whose share of the connections is not what this test is about.
    with served(http_target, max_back_connections=4, max_back_connections_per_client=None) as (
        _,
        url,
    ):
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


# -- each client's share ---------------------------------------------------------------------------


class Raw:
    """A client of the proxy's HTTP front at its own address (127.0.0.2: another client than the
    Clients at 127.0.0.1), one POST at a time."""

    def __init__(self, url: str, source: str = "127.0.0.2"):
        self.url = urllib.parse.urlparse(url)
        self.source = source

    def post(self, method: str, params: dict | None, session: str | None = None, **headers):
        """``(status, session id, the JSON-RPC answer or None)`` of one request (a notification:
        no ``id``, when ``params`` is None)."""
        body: dict = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            body.update(id=1, params=params)
        sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        sent.update(headers)
        if session is not None:
            sent["Mcp-Session-Id"] = session
        connection = http.client.HTTPConnection(
            self.url.hostname, self.url.port, timeout=WAIT, source_address=(self.source, 0)
        )
        try:
            connection.request("POST", self.url.path, json.dumps(body), sent)
            response = connection.getresponse()
            text = response.read().decode()
            session = response.getheader("Mcp-Session-Id") or session
        finally:
            connection.close()
        if response.getheader("Content-Type", "").startswith("text/event-stream"):
            text = next(line[5:] for line in text.splitlines() if line.startswith("data:"))
        return response.status, session, json.loads(text) if text.strip() else None

    def session(self) -> str:
        """A new handshake-era session (initialized): its id."""
        version = {"MCP-Protocol-Version": "2025-11-25"}
        hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw"}}
        _, session, _ = self.post("initialize", hello, **version)
        self.post("notifications/initialized", None, session, **version)
        return session

    def call_2026(self, name: str, arguments: dict) -> dict:
        """One 2026-07-28 ``tools/call`` (declaring elicitation): its answer."""
        meta = lifecycle.request_meta("2026-07-28", {"elicitation": {}}, {"name": "raw"})
        params = {"name": name, "arguments": arguments, "_meta": meta}
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}
        return self.post("tools/call", params, **headers, **{"Mcp-Name": name})[2]


def test_one_client_cannot_hold_every_connection_to_the_target():
    # max_back_connections=6, so one client's share is 3 (half).  A client at 127.0.0.2 opens five
    # handshake-era sessions, each with a connection of its own once it asks something: its first
    # three get one, the next are refused, and the client at 127.0.0.1 still gets its own.
    with served(target_command("handshake"), max_back_connections=6) as (_, url):
        hog = Raw(url)
        answers = []
        for _ in range(5):
            session = hog.session()
            version = {"MCP-Protocol-Version": "2025-11-25"}
            answers.append(hog.post("tools/list", {}, session, **version)[2])
        assert ["result" in answer for answer in answers] == [True] * 3 + [False] * 2
        refusal = answers[3]["error"]
        assert refusal["code"] == ServerBusy.code and refusal["data"] == {"limit": 3}
        assert "one client may hold 3 connections" in refusal["message"]
        with Client.http(url, era="handshake", timeout=WAIT) as other:
            assert other.call_tool("echo", {"text": "mine"}).text == "mine"


def test_one_client_cannot_park_every_forwarded_request():
    # max_forwarded=8, so one client's share is 2 (a quarter).  A 2026 client at 127.0.0.2 sends
    # eight calls that each ask it a question and never retries them: two are parked (for
    # ask_timeout), the rest refused, and the client at 127.0.0.1 is still served.
    with served(target_command("modern"), max_forwarded=8) as (_, url):
        hog = Raw(url)
        answers = [hog.call_2026("work", {"steps": 1}) for _ in range(8)]
        parked = [a for a in answers if a.get("result", {}).get("resultType") == "input_required"]
        refused = [a["error"] for a in answers if "error" in a]
        assert (len(parked), len(refused)) == (2, 6)
        assert refused[0]["code"] == ServerBusy.code and refused[0]["data"] == {"limit": 2}
        assert "one client may have 2 requests" in refused[0]["message"]
        with Client.http(url, era="modern", timeout=WAIT) as other:
            assert other.call_tool("echo", {"text": "mine"}).text == "mine"


def completing(value: str) -> dict:
    """``completion/complete`` params for the name argument of a prompt, completing ``value``."""
    return {
        "ref": {"type": "ref/prompt", "name": "greet"},
        "argument": {"name": "name", "value": value},
    }


def test_a_sessions_cancelled_completions_the_target_never_answers_are_bounded(monkeypatch):
    # A handshake-era session cancels completions its command target stops as asked, so never
    # answers (2025-11-25 basic/utilities/cancellation): each still counts on the session's own
    # connection, until its timeout (3 * WAIT here).  With MAX_UNANSWERED (2 here) of them there,
    # its next listing or completion is refused with -31000 (data.limit), the target not asked;
    # its tool calls go on, one thread (not one per request) gives them up, and once the target
    # answers them its listings and completions are served again.
    monkeypatch.setattr("mcp_ref.proxy.back.MAX_UNANSWERED", 2)
    target_said = Collector()
    options = {"timeout": 3 * WAIT, "stderr": target_said}
    with (
        served([PYTHON, ANSWERING_TARGET], client_options=options) as (proxy, url),
        Client.http(url, era="handshake", timeout=WAIT) as client,
    ):
        for count in (1, 2):
            call = client.connection.start("completion/complete", completing("hold"))
            target_said.wait_until(lambda lines, n=count: lines.count("holding") == n)
            call.cancel("the user typed on")
            target_said.wait_until(lambda lines, n=count: lines.count("stopped") == n)
        for refused in (
            lambda: client.request("completion/complete", completing("a")),
            client.list_tools,
        ):
            with pytest.raises(McpError) as caught:
                refused()
            assert caught.value.code == ServerBusy.code and caught.value.data == {"limit": 2}
        assert "this session has 2 listings and completions" in caught.value.message
        withdrawing = [t for t in threading.enumerate() if t.name == "mcp-proxy-withdrawn"]
        assert len(withdrawing) == 1
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"
        assert client.call_tool("answer_held").text == "answered 2"
        (link,) = proxy._sessions.values()
        with link.lock:
            assert link.withdrawn_changed.wait_for(lambda: not link.withdrawn, WAIT)
        assert client.request("completion/complete", completing("a"))["completion"]["values"] == [
            "a"
        ]
        assert [tool.name for tool in client.list_tools()][0] == "echo"


# -- the resources the watcher subscribes to for 2026 listen streams ------------------------------


def sent(trace: Collector, method: str, uri: str) -> bool:
    """True once a back connection has sent ``method`` for ``uri`` to the target."""
    needles = (f'"method":"{method}"'.encode(), f'"uri":"{uri}"'.encode())
    return any(
        way == "-->" and all(n in data.replace(b" ", b"") for n in needles) for way, data in trace
    )


def test_a_closed_listen_streams_resources_are_let_go_at_the_target(monkeypatch):
    # The watcher holds 2 resources at most here.  A listen stream names two, then closes: the
    # watcher unsubscribes from them at the target, so a later stream's resource fits, is
    # acknowledged, and its updates reach that stream (they never did once the table was full).
    monkeypatch.setattr("mcp_ref.proxy.server.MAX_WATCHED_URIS", 2)
    trace = Collector()
    options = {"timeout": WAIT, "trace": trace}
    with (
        served(target_command("handshake"), client_options=options) as (_, url),
        Client.http(url, era="modern", timeout=WAIT) as client,
    ):
        first = client.listen(resource_uris=["note://2/text", "note://3/text"])
        assert first.acknowledged["resourceSubscriptions"] == ["note://2/text", "note://3/text"]
        first.close()
        trace.wait_until(
            lambda _: (
                sent(trace, "resources/unsubscribe", "note://2/text")
                and sent(trace, "resources/unsubscribe", "note://3/text")
            )
        )
        updated = threading.Event()

        def on_notification(method: str, params: dict) -> None:
            if method == "notifications/resources/updated" and params.get("uri") == "note://1":
                updated.set()

        with client.listen(resource_uris=["note://1"], on_notification=on_notification) as later:
            assert later.acknowledged["resourceSubscriptions"] == ["note://1"]
            assert client.call_tool("touch").text == "touched"
            assert updated.wait(WAIT)


def test_a_listen_stream_is_acknowledged_for_the_resources_the_proxy_holds(monkeypatch):
    # 2026-07-28 basic/patterns/subscriptions §Acknowledgment: "The notifications field in the
    # acknowledgment reflects the subset the server agreed to honor."  The watcher holds 2
    # resources at most here: a stream is acknowledged for those it holds (note://1, another
    # stream's too), not one the target refused (aaa://x, unknown), nor one past the bound.
    monkeypatch.setattr("mcp_ref.proxy.server.MAX_WATCHED_URIS", 2)
    trace = Collector()
    options = {"timeout": WAIT, "trace": trace}
    with (
        served(target_command("handshake"), client_options=options) as (_, url),
        Client.http(url, era="modern", timeout=WAIT) as client,
        client.listen(resource_uris=["note://1"]) as first,
    ):
        assert first.acknowledged["resourceSubscriptions"] == ["note://1"]
        asked = ["aaa://x", "note://1", "note://2/text", "note://3/text"]
        with client.listen(resource_uris=asked) as second:
            assert second.acknowledged["resourceSubscriptions"] == ["note://1", "note://2/text"]
        # the second stream closed: note://2/text is let go, note://1 is still the first's
        trace.wait_until(lambda _: sent(trace, "resources/unsubscribe", "note://2/text"))
        assert not sent(trace, "resources/unsubscribe", "note://1")


class Arrivals(dict):
    """The proxy's table of the resources being subscribed to (``ProxyServer._arriving``), that
    tells when a listen finds one of them being subscribed to for another."""

    def __init__(self, uri: str):
        super().__init__()
        self.uri = uri
        self.joined = threading.Event()

    def __getitem__(self, uri):
        if uri == self.uri:
            self.joined.set()
        return super().__getitem__(uri)


def times_sent(trace: Collector, method: str, text: str) -> int:
    """How many times a back connection has sent ``method`` naming ``text`` to the target."""
    needles = (f'"method":"{method}"'.encode(), f'"{text}"'.encode())
    return sum(
        way == "-->" and all(n in data.replace(b" ", b"") for n in needles) for way, data in trace
    )


@pytest.mark.parametrize(
    "era, method",
    [("handshake", "resources/subscribe"), ("modern", "subscriptions/listen")],
)
def test_a_resource_the_target_refuses_is_held_for_no_stream(monkeypatch, era, method):
    # 2026-07-28 basic/patterns/subscriptions §Acknowledgment: "The notifications field in the
    # acknowledgment reflects the subset the server agreed to honor."  Alice's stream names
    # refused://a: the target holds the watcher's request about it back (a handshake-era
    # resources/subscribe, or a 2026 listen).  Bob's stream names it too, and note://1, while
    # that request is pending.  The target then refuses it (an error; a 2026 acknowledgment
    # without it): neither stream is acknowledged for it, no stream counts it, and a later
    # stream naming it has the watcher ask the target again.
    monkeypatch.setattr("mcp_ref.proxy.server.UNWATCH_WAIT", WAIT)
    trace = Collector()
    options = {"timeout": WAIT, "trace": trace}
    target = [PYTHON, REFUSING_TARGET, "--era", era]
    refused = "refused://a"
    with (
        served(target, client_options=options) as (proxy, url),
        Client.http(url, era="modern", timeout=3 * WAIT) as alice,
        Client.http(url, era="modern", timeout=3 * WAIT) as bob,
    ):
        proxy._arriving = arrivals = Arrivals(refused)
        streams: dict = {}
        opening = [
            threading.Thread(
                target=lambda: streams.update(alice=alice.listen(resource_uris=[refused])),
                daemon=True,
            ),
            threading.Thread(
                target=lambda: streams.update(bob=bob.listen(resource_uris=[refused, "note://1"])),
                daemon=True,
            ),
        ]
        opening[0].start()
        trace.wait_until(lambda _: times_sent(trace, method, refused) == 1)
        opening[1].start()
        assert arrivals.joined.wait(WAIT)  # Bob's listen waits for Alice's request about it
        assert alice.call_tool("release").text == "released"
        for thread in opening:
            thread.join(WAIT)
        assert streams["alice"].acknowledged.get("resourceSubscriptions", []) == []
        assert streams["bob"].acknowledged["resourceSubscriptions"] == ["note://1"]
        assert refused not in proxy.watcher.subscribed
        assert refused not in proxy._watched
        with alice.listen(resource_uris=[refused]) as later:
            assert later.acknowledged.get("resourceSubscriptions", []) == []
        assert times_sent(trace, method, refused) >= 2  # asked again, and refused again
        assert refused not in proxy.watcher.subscribed
        streams["alice"].close()
        streams["bob"].close()


def test_a_resource_the_target_does_not_let_go_is_held_again_for_a_later_stream(monkeypatch):
    # Alice's stream holds kept://1, then closes: the watcher's resources/unsubscribe is held
    # back by the handshake-era target.  Bob's stream names kept://1 meanwhile, and waits for
    # it; the target then refuses it (the subscription stays).  Bob's stream is acknowledged for
    # kept://1, held for it (subscribed again: the target holds it), and gets its updates.
    monkeypatch.setattr("mcp_ref.proxy.server.UNWATCH_WAIT", WAIT)
    trace = Collector()
    options = {"timeout": WAIT, "trace": trace}
    kept = "kept://1"
    updated = Collector()

    def on_notification(method: str, params: dict) -> None:
        if method == "notifications/resources/updated":
            updated(params["uri"])

    with (
        served([PYTHON, REFUSING_TARGET], client_options=options) as (proxy, url),
        Client.http(url, era="modern", timeout=3 * WAIT) as alice,
        Client.http(url, era="modern", timeout=3 * WAIT) as bob,
    ):
        proxy._leaving = leavings = Arrivals(kept)
        first = alice.listen(resource_uris=[kept])
        assert first.acknowledged["resourceSubscriptions"] == [kept]
        first.close()
        trace.wait_until(lambda _: times_sent(trace, "resources/unsubscribe", kept) == 1)
        streams: dict = {}

        def bob_listens() -> None:
            streams["bob"] = bob.listen(resource_uris=[kept], on_notification=on_notification)

        opening = threading.Thread(target=bob_listens, daemon=True)
        opening.start()
        assert leavings.joined.wait(WAIT)  # Bob's listen waits for the unsubscribe's answer
        assert alice.call_tool("release").text == "released"
        opening.join(WAIT)
        assert streams["bob"].acknowledged["resourceSubscriptions"] == [kept]
        assert kept in proxy.watcher.subscribed and proxy._watched[kept] == 1
        assert bob.call_tool("touch_kept").text == "touched"
        updated.wait_until(lambda uris: kept in uris)
        streams["bob"].close()


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


def test_a_resource_a_re_opened_watcher_stream_leaves_out_is_held_for_no_later_stream(monkeypatch):
    # The watcher's listen stream at a 2026 target drops and is opened again; the target's new
    # acknowledgment leaves note://1 out (it no longer watches it).  A later stream naming it is
    # not acknowledged for it on the strength of the old subscription: the target is asked again.
    monkeypatch.setattr("mcp_ref.client.listening.REOPEN_DELAY", 0.01)
    dropped = LoggedOnce("does not agree to send updates about note://1")
    logger = logging.getLogger("mcp_ref.client.listening")
    logger.addHandler(dropped)
    target = [PYTHON, REFUSING_TARGET, "--era", "modern"]
    try:
        with (
            served(target, client_options={"timeout": WAIT}) as (proxy, url),
            Client.http(url, era="modern", timeout=3 * WAIT) as alice,
            Client.http(url, era="modern", timeout=3 * WAIT) as bob,
        ):
            with alice.listen(resource_uris=["note://1"]) as first:
                assert first.acknowledged["resourceSubscriptions"] == ["note://1"]
                alice.call_tool("refuse_notes")
                alice.call_tool("end_streams")  # the target's: the watcher's stream re-opens
                assert dropped.seen.wait(WAIT)
                with bob.listen(resource_uris=["note://1"]) as later:
                    assert later.acknowledged.get("resourceSubscriptions", []) == []
                assert "note://1" not in proxy.watcher.subscribed
    finally:
        logger.removeHandler(dropped)
