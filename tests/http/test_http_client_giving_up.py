"""Giving up on a request over HTTP (its timeout, a cancellation) holds no caller, and touches
only that request: whatever the server does with the POSTs around it.

Each server is mcp_ref's own, behind :class:`Holding`, a middleware that holds the POSTs a test
names (until the test ends) and records the JSON-RPC messages it saw.  The scenarios came from a
review of the client's workers:

* a server slow to take ``notifications/cancelled`` kept the caller whose call timed out until
  the POST's 60 s read timeout (the notice was POSTed on the caller's thread);
* over the 2024-11-05 transport a request's POST was sent on the caller's thread too: a server
  holding it kept ``call_tool(timeout=...)`` for 60 s;
* a request given up on while it waited for a worker was sent later all the same, and its answer
  read with no bound at all (the session no longer knew its deadline);
* while a worker started a new session (the server forgot the old one), the new session's
  ``notifications/initialized`` was watched as the answer to that worker's call: once the call
  timed out, the notice's socket was shut down, and the new session failed.
"""

from __future__ import annotations

import json
import logging
import threading

import pytest
from conftest import WAIT, outcome_within
from http_fixtures import serve  # noqa: F401 - a fixture
from test_http_client import tools_server

from mcp_ref import Client, RequestTimeout
from mcp_ref.http import notices
from mcp_ref.http.client import HttpClientTransport

#: The timeout of a call that is to time out: short, the test waits on events past it.
SHORT = 0.5


class Holding:
    """WSGI middleware: a POST whose message ``hold(message)`` picks waits until :meth:`release`
    (at most 3 x WAIT), then goes on to the app; ``held`` is set as the first one starts waiting,
    :meth:`holding` counts those waiting now.  ``messages`` are the JSON-RPC messages of the POSTs,
    in the order they came."""

    def __init__(self, app):
        self.app = app
        self.hold = lambda message: False
        self.held = threading.Event()
        self.released = threading.Event()
        self.messages: list[dict] = []
        self.seen = threading.Condition()
        self._holding = 0

    def __call__(self, environ, start_response):
        import io

        if environ["REQUEST_METHOD"] != "POST":
            return self.app(environ, start_response)
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        message = json.loads(body)
        with self.seen:  # seen and counted as held in one step: a test woken by one sees both
            self.messages.append(message)
            held = self.hold(message)  # (may count the messages: the lock is reentrant)
            if held:
                self._holding += 1
            self.seen.notify_all()
        if held:
            self.held.set()
            self.released.wait(3 * WAIT)
            with self.seen:
                self._holding -= 1
        return self.app({**environ, "wsgi.input": io.BytesIO(body)}, start_response)

    def holding(self) -> int:
        """How many POSTs are held now."""
        with self.seen:
            return self._holding

    def count(self, picked) -> int:
        """How many messages ``picked(message)`` takes."""
        with self.seen:
            return sum(1 for message in self.messages if picked(message))

    def wait_for(self, picked, what: str, times: int = 1) -> dict:
        """The ``times``-th message ``picked(message)`` takes, waited for (at most WAIT)."""
        with self.seen:
            came = self.seen.wait_for(
                lambda: sum(1 for message in self.messages if picked(message)) >= times, WAIT
            )
            assert came, f"the server never saw {what}"
            return [message for message in self.messages if picked(message)][times - 1]

    def release(self) -> None:
        self.released.set()


@pytest.fixture
def holding(serve):
    """Factory: ``holding()`` -> (the Served, its :class:`Holding`, the tools Server); the held
    POSTs released after the test."""
    made: list[Holding] = []

    def factory():
        tools = tools_server()
        box: list[Holding] = []
        served = serve(tools, wrap=lambda app: box.append(Holding(app)) or box[0])
        made.append(box[0])
        return served, box[0], tools

    yield factory
    for middleware in made:
        middleware.release()


def call_of(name: str):
    """Picks the ``tools/call`` requests of the tool ``name``."""
    return lambda message: (
        message.get("method") == "tools/call" and message["params"]["name"] == name
    )


def method_is(method: str):
    """Picks the messages of ``method``."""
    return lambda message: message.get("method") == method


@pytest.mark.parametrize("transport", ["streamable", "sse"])
def test_a_server_slow_to_take_a_cancellation_holds_no_caller(holding, transport):
    served, server, _tools = holding()
    server.hold = method_is("notifications/cancelled")
    url = served.mcp if transport == "streamable" else served.sse
    with Client.http(url, transport=transport, era="handshake", timeout=WAIT) as client:
        outcome = outcome_within(lambda: client.call_tool("slow", {}, timeout=SHORT), 3 * WAIT)
        assert isinstance(outcome, RequestTimeout), outcome
        cancel = server.wait_for(method_is("notifications/cancelled"), "the cancellation")
        assert cancel["params"]["requestId"] == server.wait_for(call_of("slow"), "the call")["id"]
        assert server.holding() == 1  # the notice is sent all the same, and still held
        server.release()
        assert client.call_tool("echo", {"text": "after"}).text == "after"


def test_a_held_post_over_the_2024_transport_holds_no_caller(holding):
    # 2024-11-05: the POST's reply only says "Accepted", the answer comes on the SSE stream; a
    # server that never replies to the POST left the caller in it until its read timeout (60 s).
    served, server, _tools = holding()
    server.hold = call_of("slow")
    with Client.http(served.sse, transport="sse", timeout=WAIT) as client:
        outcome = outcome_within(lambda: client.call_tool("slow", {}, timeout=SHORT), 3 * WAIT)
        assert isinstance(outcome, RequestTimeout), outcome
        assert server.holding() == 1  # the call returned while its POST is still held
        assert client.call_tool("echo", {"text": "after"}).text == "after"


def test_a_call_given_up_on_while_it_waits_for_a_worker_is_never_sent(holding):
    served, server, tools = holding()
    server.hold = call_of("slow")
    tools.release.set()  # once past the middleware, the slow tool answers at once
    transport = HttpClientTransport(served.mcp, max_workers=1)  # one worker: calls queue for it
    with Client(transport, era="handshake", timeout=WAIT) as client:
        first = client.start_tool_call("slow", {})
        assert server.held.wait(WAIT), "the only worker carries the held call"
        with pytest.raises(RequestTimeout):
            client.call_tool("queued", {}, timeout=SHORT)  # queued behind it, and given up on
        server.release()
        assert first.result().text == "slow"
        # the worker takes the queued call next and drops it: the server gets the next one only
        assert client.call_tool("echo", {"text": "next"}).text == "next"
    assert server.count(call_of("queued")) == 0


def test_a_new_session_started_by_a_call_given_up_on_is_kept(holding):
    # The server forgot the session (a 404 to it); the worker carrying the call starts a new one.
    # The call times out while the new session's notifications/initialized is held: that notice,
    # sent on the call's worker, is no part of the call (its socket was shut down with the call's,
    # the new session failed, and the next call started a third), and the call, given up on, is
    # not sent again on the new session.
    served, server, _tools = holding()
    notices = method_is("notifications/initialized")
    server.hold = lambda message: notices(message) and server.count(notices) == 2

    def given_up(message) -> bool:
        return call_of("echo")(message) and message["params"]["arguments"] == {"text": "given up"}

    with Client.http(served.mcp, era="handshake", timeout=WAIT) as client:
        transport = client.session.transport
        transport.session_id = "forgotten"  # the server answers 404 to a session it does not know
        call = outcome_within(
            lambda: client.call_tool("echo", {"text": "given up"}, timeout=SHORT), 3 * WAIT
        )
        assert isinstance(call, RequestTimeout), call
        # (on a slow machine the call may time out before the notice reaches the server)
        assert server.held.wait(WAIT) and server.holding() == 1, "the new session's notice is held"
        server.release()
        assert client.call_tool("echo", {"text": "renewed"}).text == "renewed"
    assert server.count(method_is("initialize")) == 2, "the new session was started once"
    assert server.count(given_up) == 1  # the 404: not sent again once given up on


def test_closing_gives_up_on_every_call_and_tells_the_server(holding):
    served, server, _tools = holding()
    server.hold = call_of("slow")
    client = Client.http(served.mcp, era="handshake", timeout=WAIT)
    transport = client.session.transport
    calls = [client.start_tool_call("slow", {}) for _ in range(3)]
    server.wait_for(call_of("slow"), "the three calls", 3)
    outcome_within(client.close, 3 * WAIT)
    told = server.wait_for(method_is("notifications/cancelled"), "three cancellations", 3)
    assert told  # each call's, sent before the session ended
    for worker in list(transport._pool._threads):  # none is left reading a held answer
        worker.join(WAIT)
        assert not worker.is_alive(), "a worker still reads after close()"
    assert server.holding() == 3  # the server still holds the calls
    assert all(call.done() for call in calls)


def test_closing_ends_a_cancellation_the_server_is_slow_to_take(holding):
    served, server, _tools = holding()
    server.hold = method_is("notifications/cancelled")
    client = Client.http(served.mcp, era="handshake", timeout=WAIT)
    transport = client.session.transport
    with pytest.raises(RequestTimeout):
        client.call_tool("slow", {}, timeout=SHORT)
    assert server.held.wait(WAIT)
    outcome_within(
        client.close, 3 * WAIT
    )  # waits NOTICES_AT_CLOSE for the notice, then shuts its socket down
    for sender in list(transport._notices._threads):
        sender.join(WAIT)
        assert not sender.is_alive(), "the notice's POST outlives close()"
    assert server.holding() == 1  # the server still holds it


def test_past_the_bound_a_cancellation_is_dropped_and_its_stream_closed(
    holding, monkeypatch, caplog
):
    # The cancellations wait for one thread to POST them; a server slow to take them makes them
    # pile up, at most MAX_WAITING_NOTICES (here 2): the next is dropped, said in the log.
    monkeypatch.setattr(notices, "MAX_WAITING_NOTICES", 2)
    served, server, _tools = holding()
    server.hold = method_is("notifications/cancelled")
    with Client.http(served.mcp, era="handshake", timeout=WAIT) as client:
        calls = [client.start_tool_call("slow", {}) for _ in range(3)]
        server.wait_for(call_of("slow"), "the three calls", 3)
        with caplog.at_level(logging.WARNING, logger="mcp_ref.http.client"):
            for call in calls:
                call.cancel()
        assert "2 cancellations wait to be sent: one is dropped" in caplog.text
        server.release()
        server.wait_for(method_is("notifications/cancelled"), "the second cancellation", 2)
        assert client.call_tool("echo", {"text": "after"}).text == "after"
    cancellation = method_is("notifications/cancelled")
    told = [m["params"]["requestId"] for m in server.messages if cancellation(m)]
    assert told == [calls[0].request_id, calls[1].request_id]
