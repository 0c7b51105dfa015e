"""``subscriptions/listen`` (2026-07-28 basic/patterns/subscriptions), both sides.

The server side is driven with raw messages: over stdio a real subprocess
(tests/servers/modern_server.py), over HTTP raw POSTs to a real socket, the
listen stream read as it arrives.  The client side runs mcp_ref's Client against
the same server in both eras.  Every message is checked against the official
2026-07-28 schema.  See spec_notes/subscriptions.md.
"""

from __future__ import annotations

import json
import logging
import queue
import sys
import threading

import pytest
import requests
from conftest import SERVERS, WAIT, InMemory, WireChecker, client_over, schema_errors
from http_fixtures import serve  # noqa: F401 - a fixture
from test_modern_server import SERVER, VERSION, meta

from mcp_ref import Client, ResourceNotFound, Server

MODERN = InMemory("modern_server")
ACK = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
TYPES = {
    ACK: "SubscriptionsAcknowledgedNotification",
    "notifications/tools/list_changed": "ToolListChangedNotification",
    "notifications/prompts/list_changed": "PromptListChangedNotification",
    "notifications/resources/updated": "ResourceUpdatedNotification",
    "notifications/cancelled": "CancelledNotification",
}


def checked(message: dict) -> dict:
    """A message of a listen stream, after checking it against the 2026-07-28 schema."""
    if "method" in message:
        assert schema_errors(VERSION, TYPES[message["method"]], message) == []
    elif "result" in message:
        assert schema_errors(VERSION, "SubscriptionsListenResultResponse", message) == []
    else:
        assert schema_errors(VERSION, "JSONRPCErrorResponse", message) == []
    return message


def listen_params(**notifications) -> dict:
    return {"_meta": meta(), "notifications": notifications}


# -- the two transports, one interface ----------------------------------------------------------


class StdioServer:
    """The test server as a subprocess: every message it writes lands in one queue."""

    def __init__(self, raw_peer):
        self.peer = raw_peer(SERVER)
        self.next_id = 0

    def listen(self, **notifications) -> StdioStream:
        self.next_id += 1
        stream = StdioStream(self, self.next_id)
        self.peer.send_json(
            {
                "jsonrpc": "2.0",
                "id": stream.id,
                "method": "subscriptions/listen",
                "params": listen_params(**notifications),
            }
        )
        return stream

    def call(self, tool: str, **arguments) -> dict:
        """Call a tool and wait for its answer; what else arrives meanwhile is kept for the streams."""
        self.next_id += 1
        self.peer.send_json(
            {
                "jsonrpc": "2.0",
                "id": self.next_id,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments, "_meta": meta()},
            }
        )
        return self.wait_for(lambda m: m.get("id") == self.next_id and "method" not in m)

    backlog: list

    def wait_for(self, match) -> dict:
        if not hasattr(self, "backlog"):
            self.backlog = []
        for message in self.backlog:
            if match(message):
                self.backlog.remove(message)
                return message
        while True:
            message = self.peer.recv()
            assert message is not None, "the server ended its output"
            if match(message):
                return message
            self.backlog.append(message)


class StdioStream:
    """One listen stream over stdio: the messages tagged with its id, or answering it."""

    def __init__(self, server: StdioServer, request_id):
        self.server, self.id = server, request_id

    def next(self) -> dict:
        def mine(message):
            if message.get("id") == self.id and "method" not in message:
                return True
            return message.get("params", {}).get("_meta", {}).get(SUBSCRIPTION_ID) == self.id

        return checked(self.server.wait_for(mine))

    def cancel(self) -> None:
        self.server.peer.send_json(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": self.id, "reason": "done"},
            }
        )


class HttpServer:
    """The test server over Streamable HTTP: each listen is a POST whose SSE body is read as it comes."""

    def __init__(self, served):
        self.served = served
        self.next_id = 0

    def post(self, method: str, params: dict, **options):
        from mcp_ref.http.headers import request_headers

        self.next_id += 1
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
            **request_headers(method, params),
        }
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        return requests.post(self.served.mcp, json=body, headers=headers, timeout=WAIT, **options)

    def listen(self, **notifications) -> HttpStream:
        reply = self.post("subscriptions/listen", listen_params(**notifications), stream=True)
        return HttpStream(reply, self.next_id)

    def call(self, tool: str, **arguments) -> dict:
        reply = self.post("tools/call", {"name": tool, "arguments": arguments, "_meta": meta()})
        assert reply.status_code == 200
        return reply.json()


class HttpStream:
    """One listen POST: its SSE messages, read on a thread into a queue (None once it ends)."""

    def __init__(self, reply, request_id):
        self.reply, self.id = reply, request_id
        self.status = reply.status_code
        self.content_type = reply.headers.get("Content-Type", "")
        self.messages: queue.Queue = queue.Queue()
        if self.content_type.startswith("application/json"):
            self.messages.put(reply.json())
            self.messages.put(None)
        else:
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        try:
            for line in self.reply.iter_lines():
                if line.startswith(b"data:"):
                    self.messages.put(json.loads(line[5:]))
        except Exception:
            pass
        self.messages.put(None)

    def next(self) -> dict:
        message = self.messages.get(timeout=WAIT)
        assert message is not None, "the stream ended"
        return checked(message)

    def cancel(self) -> None:
        self.reply.close()


@pytest.fixture(params=["stdio", "http"])
def server(request, raw_peer, serve):
    if request.param == "stdio":
        return StdioServer(raw_peer)
    return HttpServer(serve(MODERN.build(), keepalive=0.2))


def is_ack_of(message: dict, stream) -> bool:
    return message["method"] == ACK and message["params"]["_meta"][SUBSCRIPTION_ID] == stream.id


# -- the server ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_acknowledgment_comes_first_and_every_notification_is_tagged(server):
    stream = server.listen(toolsListChanged=True, resourceSubscriptions=["test://stable"])
    ack = stream.next()
    assert is_ack_of(ack, stream)
    assert ack["params"]["notifications"] == {
        "toolsListChanged": True,
        "resourceSubscriptions": ["test://stable"],
    }
    assert server.call("change_tools")["result"]["content"][0]["text"] == "changed"
    changed = stream.next()
    assert changed["method"] == "notifications/tools/list_changed"
    assert changed["params"]["_meta"][SUBSCRIPTION_ID] == stream.id
    server.call("touch", uri="test://other")  # not asked for: nothing on the stream
    server.call("touch", uri="test://stable")
    updated = stream.next()
    assert updated["method"] == "notifications/resources/updated"
    assert updated["params"]["uri"] == "test://stable"
    assert updated["params"]["_meta"][SUBSCRIPTION_ID] == stream.id
    if isinstance(stream, HttpStream):
        assert stream.content_type.startswith("text/event-stream")
        assert stream.reply.headers.get("X-Accel-Buffering") == "no"
        assert "Mcp-Session-Id" not in stream.reply.headers


@pytest.mark.slow
def test_only_what_was_asked_for_is_sent(server):
    stream = server.listen(promptsListChanged=True)
    assert is_ack_of(stream.next(), stream)
    server.call("change_tools")  # tools were not asked for
    server.call("change_prompts")
    assert stream.next()["method"] == "notifications/prompts/list_changed"


@pytest.mark.slow
def test_several_streams_each_get_their_own(server):
    tools = server.listen(toolsListChanged=True)
    assert is_ack_of(tools.next(), tools)
    prompts = server.listen(promptsListChanged=True)
    assert is_ack_of(prompts.next(), prompts)
    server.call("change_prompts")
    server.call("change_tools")
    assert prompts.next()["method"] == "notifications/prompts/list_changed"
    assert tools.next()["method"] == "notifications/tools/list_changed"


@pytest.mark.slow
def test_types_the_revision_does_not_define_are_left_out_of_the_acknowledgment(server):
    stream = server.listen(toolsListChanged=True, somethingNew=True, promptsListChanged=False)
    assert stream.next()["params"]["notifications"] == {"toolsListChanged": True}


@pytest.mark.slow
@pytest.mark.parametrize(
    "notifications",
    [
        None,
        [],
        {"toolsListChanged": "yes"},
        {"resourceSubscriptions": "test://stable"},
        {"resourceSubscriptions": [1]},
        {"resourceSubscriptions": [""]},
        {"resourceSubscriptions": [f"test://{i}" for i in range(1025)]},
    ],
    ids=[
        "missing",
        "array",
        "not-boolean",
        "uris-not-array",
        "uri-not-string",
        "empty-uri",
        "too-many-uris",
    ],
)
def test_a_malformed_filter_is_invalid_params_and_the_server_goes_on(server, notifications):
    params = (
        {"_meta": meta()}
        if notifications is None
        else {"_meta": meta(), "notifications": notifications}
    )
    if isinstance(server, StdioServer):
        server.next_id += 1
        server.peer.send_json(
            {
                "jsonrpc": "2.0",
                "id": server.next_id,
                "method": "subscriptions/listen",
                "params": params,
            }
        )
        answer = checked(server.wait_for(lambda m: m.get("id") == server.next_id))
    else:
        reply = server.post("subscriptions/listen", params)
        assert reply.headers["Content-Type"].startswith("application/json")
        answer = checked(reply.json())
    assert answer["error"]["code"] == -32602
    assert server.call("echo", text="still here")["result"]["content"][0]["text"] == "still here"


@pytest.mark.slow
def test_a_cancelled_stream_gets_nothing_more(server):
    first = server.listen(toolsListChanged=True)
    assert is_ack_of(first.next(), first)
    first.cancel()
    if isinstance(server, HttpServer):
        # 2026-07-28 streamable-http §Cancellation: closing the stream cancels the request.
        assert server.served.app.server.subscriptions.wait_at_most(0, WAIT)
    second = server.listen(toolsListChanged=True)
    assert is_ack_of(second.next(), second)
    server.call("change_tools")
    assert second.next()["method"] == "notifications/tools/list_changed"
    if isinstance(server, StdioServer):
        # The cancelled stream was not answered (cancellation: "SHOULD NOT send a response"),
        # and the change went to the open one only.
        assert all(
            m.get("id") != first.id
            and m.get("params", {}).get("_meta", {}).get(SUBSCRIPTION_ID) != first.id
            for m in server.backlog
        )


@pytest.mark.slow
def test_the_server_ends_its_streams_with_a_result(server):
    stream = server.listen(toolsListChanged=True)
    assert is_ack_of(stream.next(), stream)
    assert server.call("end_streams")["result"]["content"][0]["text"] == "1"
    # basic/patterns/cancellation: the server "MUST send notifications/cancelled referencing" it...
    cancelled = stream.next()
    assert (
        cancelled["method"] == "notifications/cancelled"
        and cancelled["params"]["requestId"] == stream.id
    )
    # ...and subscriptions §Graceful Closure: it "SHOULD respond ... with a completion result".
    end = stream.next()
    assert end["id"] == stream.id
    assert end["result"]["resultType"] == "complete"
    assert end["result"]["_meta"][SUBSCRIPTION_ID] == stream.id
    assert end["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "modern"
    if isinstance(stream, HttpStream):
        assert stream.messages.get(timeout=WAIT) is None  # and the SSE response ends


def test_an_http_server_shutting_down_ends_its_streams_gracefully(serve):
    served = serve(MODERN.build(), keepalive=0.2)
    stream = HttpServer(served).listen(toolsListChanged=True)
    assert is_ack_of(stream.next(), stream)
    served.app.close()
    assert stream.next()["method"] == "notifications/cancelled"
    assert stream.next()["result"]["_meta"][SUBSCRIPTION_ID] == stream.id
    assert stream.messages.get(timeout=WAIT) is None


def test_listen_streams_are_bounded_per_server(serve):
    built = MODERN.build()
    built.subscriptions.max_subscriptions = 1
    server = HttpServer(serve(built, keepalive=0.2))
    first = server.listen(toolsListChanged=True)
    assert is_ack_of(first.next(), first)
    refused = server.listen(toolsListChanged=True)
    answer = refused.next()
    assert answer["error"]["code"] == -31000 and answer["error"]["data"] == {"maxSubscriptions": 1}
    first.cancel()
    assert built.subscriptions.wait_at_most(0, WAIT)
    again = server.listen(toolsListChanged=True)
    assert is_ack_of(again.next(), again)


def test_a_server_without_the_feature_agrees_to_nothing():
    bare = Server("bare")  # no tools, prompts or resources: no listChanged, no subscribe
    with Client.in_memory(bare, era="modern", timeout=WAIT) as client:
        with client.listen(tools=True, resource_uris=["test://x"]) as stream:
            assert stream.requested == {
                "toolsListChanged": True,
                "resourceSubscriptions": ["test://x"],
            }
            assert stream.acknowledged == {}


# -- the client ---------------------------------------------------------------------------------


class Watch:
    """A trace hook: checks every message (WireChecker) and counts acknowledgments as events."""

    def __init__(self):
        self.wire = WireChecker()
        self.acks = threading.Semaphore(0)

    def __call__(self, direction: str, data: bytes) -> None:
        self.wire(direction, data)
        if direction == "<--" and ACK.encode() in data:
            self.acks.release()


class Events:
    """What a callback received, and an event per arrival."""

    def __init__(self):
        self.items: queue.Queue = queue.Queue()

    def __call__(self, *args) -> None:
        self.items.put(args[0] if len(args) == 1 else args)

    def next(self):
        return self.items.get(timeout=WAIT)


def modern_clients(kind: str, serve, **options):
    watch = Watch()
    return client_over(kind, MODERN, serve, trace=watch, **options), watch


@pytest.fixture(params=["stdio", "http", "memory"])
def transport(request):
    return request.param


@pytest.mark.slow
def test_the_callbacks_are_fed_by_a_listen_stream_in_the_2026_era(transport, serve):
    changed, updated = Events(), Events()
    client, watch = modern_clients(
        transport, serve, on_list_changed=changed, on_resource_updated=updated
    )
    with client:
        assert client.protocol_version == VERSION
        assert watch.acks.acquire(
            timeout=WAIT
        )  # the stream was open before the constructor returned
        (listen,) = watch.wire.sent("subscriptions/listen")
        assert listen["params"]["notifications"] == {
            "toolsListChanged": True,
            "promptsListChanged": True,
            "resourcesListChanged": True,
        }
        client.call_tool("change_tools")
        assert changed.next() == "tools"
        client.call_tool("change_prompts")
        assert changed.next() == "prompts"
        client.subscribe("test://stable")  # the stream is re-opened with the URI in its filter
        client.call_tool("touch", {"uri": "test://stable"})
        assert updated.next() == "test://stable"
        client.unsubscribe("test://stable")
        assert (
            watch.wire.sent("subscriptions/listen")[-1]["params"]["notifications"].get(
                "resourceSubscriptions"
            )
            is None
        )
    watch.wire.assert_valid()


@pytest.mark.slow
def test_the_callbacks_stream_is_opened_again_when_the_server_ends_it(transport, serve):
    changed = Events()
    client, watch = modern_clients(transport, serve, on_list_changed=changed)
    with client:
        assert watch.acks.acquire(timeout=WAIT)
        client.call_tool("end_streams")
        assert watch.acks.acquire(timeout=WAIT)  # a new stream, acknowledged
        client.call_tool("change_tools")
        assert changed.next() == "tools"
    watch.wire.assert_valid()


@pytest.mark.slow
@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_listen_is_the_same_code_in_both_eras(era, transport, serve):
    client, watch = modern_clients(transport, serve, era=era)
    got = Events()
    with client:
        with client.listen(
            prompts=True, resource_uris=["test://stable"], on_notification=got
        ) as stream:
            assert stream.acknowledged == {
                "promptsListChanged": True,
                "resourceSubscriptions": ["test://stable"],
            }
            client.call_tool("change_tools")  # not asked for
            client.call_tool("change_prompts")
            method, params = got.next()
            assert method == "notifications/prompts/list_changed"
            client.call_tool("touch", {"uri": "test://stable"})
            method, params = got.next()
            assert (method, params["uri"]) == ("notifications/resources/updated", "test://stable")
        assert stream.closed and not stream.ended_gracefully and stream.error is None
        if era == "handshake":
            assert watch.wire.sent("resources/unsubscribe")[-1]["params"] == {
                "uri": "test://stable"
            }
        client.call_tool("change_prompts")
        assert client.call_tool("echo", {"text": "after"}).content[0].text == "after"
        assert got.items.empty()
    watch.wire.assert_valid()


@pytest.mark.slow
def test_a_stream_the_server_ends_says_so(transport, serve):
    client, watch = modern_clients(transport, serve)
    with client:
        stream = client.listen(tools=True)
        client.call_tool("end_streams")
        assert stream.wait_closed(WAIT)
        assert stream.ended_gracefully and stream.error is None
    watch.wire.assert_valid()


# -- the handshake era's subscriptions behind Client.listen --------------------------------------

STALLS_UNSUBSCRIBE = [sys.executable, str(SERVERS / "untested_raw_server.py"), "stall-unsubscribe"]
HOLDS_UNSUBSCRIBE = [sys.executable, str(SERVERS / "untested_raw_server.py"), "hold-unsubscribe"]
SUB_RESOURCES = [sys.executable, str(SERVERS / "untested_raw_server.py"), "sub-resources"]


def resource_params(wire: WireChecker, method: str) -> list[str]:
    return [message["params"]["uri"] for message in wire.sent(method)]


def test_an_update_about_a_sub_resource_reaches_who_subscribed_to_the_resource(connect):
    # Every revision's schema (ResourceUpdatedNotification's uri): "This might be a sub-resource
    # of the one that the client actually subscribed to".  file:///dirx is beside file:///dir,
    # not below it.  Callbacks run in arrival order on one thread: the last update comes last.
    # The server sends them as soon as it has answered the subscribe: a listen stream, already
    # acknowledged then, gets them too.
    updated, got = Events(), Events()
    client = connect(SUB_RESOURCES, era="handshake", on_resource_updated=updated)
    client.subscribe("file:///dir")
    assert [updated.next(), updated.next()] == ["file:///dir/a.txt", "file:///dir"]
    with client.listen(resource_uris=["file:///doc"], on_notification=got):
        assert [got.next()[1]["uri"], got.next()[1]["uri"]] == ["file:///doc/a.txt", "file:///doc"]


def test_unsubscribe_keeps_what_a_listen_stream_still_wants(connect, wire):
    # A session holds one subscription to a resource at a handshake-era server, whoever on the
    # client asked for it: client.unsubscribe(uri) must not cut off a listen stream on uri, but
    # it stops the updates to on_resource_updated, as its docstring says.
    got, updated = Events(), Events()
    client = connect(SERVER, era="handshake", on_resource_updated=updated)
    with client.listen(resource_uris=["test://stable"], on_notification=got) as stream:
        client.subscribe("test://stable")
        client.unsubscribe("test://stable")
        assert resource_params(wire, "resources/unsubscribe") == []
        client.call_tool("touch", {"uri": "test://stable"})
        method, params = got.next()
        assert (method, params["uri"]) == ("notifications/resources/updated", "test://stable")
    assert stream.closed  # and now nothing wants it
    assert resource_params(wire, "resources/unsubscribe") == ["test://stable"]
    client.subscribe("test://fresh")
    with client.listen(resource_uris=["test://fresh"]):
        pass  # the client's own subscription outlives the stream
    assert resource_params(wire, "resources/unsubscribe") == ["test://stable"]
    client.call_tool("touch", {"uri": "test://fresh"})
    assert updated.next() == "test://fresh"  # the first: test://stable's update did not reach it


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_on_resource_updated_gets_only_what_client_subscribe_asked_for(connect, era):
    # A listen stream's updates are its own (on_notification): on_resource_updated gets those
    # about the URIs client.subscribe asked for and client.unsubscribe has not let go, in both
    # eras, although a handshake-era server sends the session's updates once for everyone.
    got, updated = Events(), Events()
    client = connect(SERVER, era=era, on_resource_updated=updated)
    client.subscribe("test://fresh")
    with client.listen(resource_uris=["test://stable"], on_notification=got):
        client.call_tool("touch", {"uri": "test://stable"})  # the stream's: never subscribed here
        assert got.next()[1]["uri"] == "test://stable"
        client.subscribe("test://stable")
        client.unsubscribe("test://stable")
        client.call_tool("touch", {"uri": "test://stable"})  # unsubscribed here
        assert got.next()[1]["uri"] == "test://stable"
        client.call_tool("touch", {"uri": "test://fresh"})
    # the callbacks run in order on one thread: an update about test://stable would come first
    assert updated.next() == "test://fresh"


def test_a_listen_that_fails_leaves_nothing_behind(connect, wire):
    updated = Events()
    client = connect(SERVER, era="handshake", on_resource_updated=updated)
    with pytest.raises(ResourceNotFound):
        client.listen(resource_uris=["test://stable", "test://unknown"])
    assert resource_params(wire, "resources/subscribe") == ["test://stable", "test://unknown"]
    assert resource_params(wire, "resources/unsubscribe") == ["test://stable"]
    assert client.connection.streams.subscribed_uris() == set()
    client.subscribe("test://fresh")
    client.call_tool("touch", {"uri": "test://stable"})  # no one's: no update
    client.call_tool("touch", {"uri": "test://fresh"})
    assert updated.next() == "test://fresh"


def test_closing_a_stream_the_server_never_unsubscribes_does_not_raise(connect, wire):
    # Subscription.close() is idempotent and ends the stream whatever the server does: the
    # unsubscribes are sent together and waited for until one request timeout, then given up
    # (notifications/cancelled), logged and not raised.
    client = connect(STALLS_UNSUBSCRIBE, era="handshake", timeout=1.0)
    uris = [f"test://r{i}" for i in range(4)]
    stream = client.listen(resource_uris=uris)
    with stream:
        pass
    assert stream.closed
    sent = wire.sent()
    unsubscribes = [m for m in sent if m.get("method") == "resources/unsubscribe"]
    cancels = [m for m in sent if m.get("method") == "notifications/cancelled"]
    assert sorted(m["params"]["uri"] for m in unsubscribes) == uris
    assert [m["params"]["requestId"] for m in cancels] == [m["id"] for m in unsubscribes]
    assert sent.index(unsubscribes[-1]) < sent.index(cancels[0])  # all sent before any wait
    stream.close()
    assert len(wire.sent("resources/unsubscribe")) == 4
    client.ping()


class TurnWatch(logging.Handler):
    """Sets ``waiting`` when the client logs that a request about a resource waits for the answer
    to the one decided before it (``Streams._wait_turn``)."""

    def __init__(self, waiting: threading.Event):
        super().__init__(logging.DEBUG)
        self.waiting = waiting

    def emit(self, record: logging.LogRecord) -> None:
        if "waits for the answer to the one before it" in record.getMessage():
            self.waiting.set()


@pytest.fixture
def turn_watch():
    """An Event set once a subscription request waits for its turn (the client's debug log)."""
    waiting = threading.Event()
    logger = logging.getLogger("mcp_ref.client.listening")
    handler, level = TurnWatch(waiting), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    yield waiting
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.mark.parametrize("let_go", ["close", "unsubscribe"])
@pytest.mark.parametrize("take", ["listen", "subscribe"])
def test_a_resource_let_go_as_it_is_taken_again_stays_subscribed(connect, turn_watch, let_go, take):
    # A session has one subscription to a resource at a handshake-era server.  One thread lets
    # test://x go (the last stream on it closes, or client.unsubscribe) while another takes it
    # again (a listen stream, or client.subscribe).  The server may act on the two requests in
    # any order (it handles them at once): this one acts on the unsubscribe only when the next
    # ping arrives.  The client sends the subscribe only once the unsubscribe is answered, so
    # the server acts on it last and the resource stays subscribed for the one that took it.
    held = queue.Queue()
    client = connect(HOLDS_UNSUBSCRIBE, era="handshake", on_log=lambda m: held.put(m.data))
    if let_go == "close":
        letting_go = threading.Thread(target=client.listen(resource_uris=["test://x"]).close)
    else:
        client.subscribe("test://x")
        letting_go = threading.Thread(target=client.unsubscribe, args=("test://x",))
    letting_go.start()
    assert held.get(timeout=WAIT) == "test://x"  # its resources/unsubscribe is not answered yet
    taken: list = []
    decided = turn_watch  # set when the subscribe waits for its turn, or (without one) is done

    def take_again() -> None:
        if take == "listen":
            taken.append(client.listen(resource_uris=["test://x"]))
        else:
            taken.append(client.subscribe("test://x"))
        decided.set()

    taking = threading.Thread(target=take_again)
    taking.start()
    assert decided.wait(WAIT)
    client.ping()  # the server answers the held unsubscribe, and acts on it, now
    letting_go.join(WAIT)
    taking.join(WAIT)
    assert not letting_go.is_alive() and not taking.is_alive() and len(taken) == 1
    if take == "listen":
        assert taken[0].acknowledged == {"resourceSubscriptions": ["test://x"]}
    answer = client.request("tools/call", {"name": "subscribed", "arguments": {}})
    assert json.loads(answer["content"][0]["text"]) == ["test://x"]
