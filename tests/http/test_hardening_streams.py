"""Issue 20, class 4: a long-lived stream whose client has gone frees its thread and its connection
slot at once, idle streams never lock newcomers out, and one client cannot hold every slot.

Every kind of long-lived response is covered: the 2026-07-28 ``subscriptions/listen`` POST, the
handshake-era GET stream, the legacy (2024-11-05) GET ``/sse`` stream, and POSTs whose handler
waits (2026-07-28, stateless 2025-11-25, stateful with ``inline_handlers=False``).  Real sockets on
127.0.0.1 (and 127.0.0.2 / 127.0.0.3, other loopback addresses, as other clients); the keep-alive
interval is set far beyond every wait, so only the server's noticing the close can free a slot in
time (on the old code each of these tests times out: the slot was freed at the next keep-alive
write, 15 s to 30 s later).  Every wait is bounded and waits for a condition, never a fixed time.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time

import pytest
from conftest import WAIT
from http_fixtures import ACCEPT_BOTH, LATEST, init_params, request, serve  # noqa: F401 - a fixture

from mcp_ref import ConnectionLimits, Context, Server
from mcp_ref.cancellation import Cancellation
from mcp_ref.http.headers import request_headers

V26 = "2026-07-28"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
#: How soon a dropped stream must be noticed and its slot freed (the check runs every 0.25 s).
FREED_WITHIN = 2.0


def meta() -> dict:
    return {
        "io.modelcontextprotocol/protocolVersion": V26,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "streams-test", "version": "0"},
    }


def ended(threads: frozenset, timeout: float = WAIT) -> int:
    """Wait (``timeout`` s in all) for ``threads``, each serving a connection, to end; how many are
    still alive.  A connection's thread releases its slot in the table, its stream and its hold on
    the client's share before it ends: once it has, they are free."""
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return sum(thread.is_alive() for thread in threads)


def connection_threads(before: frozenset = frozenset()) -> int:
    """The live threads serving an HTTP connection, not counting ``before`` (a snapshot: a thread
    of an earlier test's server on this worker may still be ending, and must not count either way)."""
    return sum(
        "process_request_thread" in t.name and t not in before for t in threading.enumerate()
    )


def connection_thread_set() -> frozenset:
    """The threads serving an HTTP connection now (for :func:`connection_threads`)."""
    return frozenset(t for t in threading.enumerate() if "process_request_thread" in t.name)


def streams_server(events: dict | None = None) -> Server:
    """A tool that waits until it is cancelled (or released), telling the test what happened."""
    events = events if events is not None else {}
    events.update(
        started=threading.Semaphore(0),
        cancelled=threading.Semaphore(0),
        finished=threading.Semaphore(0),
        release=Cancellation(),  # an Event that calls back when set
    )
    server = Server("streams")

    @server.tool()
    def hold(ctx: Context) -> str:
        """Wait for cancellation or release."""
        woken = threading.Event()
        ctx.request.cancelled.add_callback(woken.set)
        events["release"].add_callback(woken.set)
        events["started"].release()
        woken.wait(WAIT)
        events["release"].remove_callback(woken.set)
        ctx.request.cancelled.remove_callback(woken.set)
        if ctx.is_cancelled:
            events["cancelled"].release()
            return "cancelled"
        if events["release"].is_set():
            events["finished"].release()
            return "released"
        return "timed out"

    return server


# -- raw HTTP ---------------------------------------------------------------------------------------


def raw_http(
    port: int,
    method: str,
    path: str,
    headers: dict,
    body: bytes = b"",
    *,
    source: str = "127.0.0.1",
    keep: bool = True,
    read: bool = True,
):
    """Send one request on a new socket from ``source``; its response (:class:`Raw`), or with
    ``read=False`` the socket, nothing read."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT, source_address=(source, 0))
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if not keep:
        lines.append("Connection: close")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    return Raw(sock) if read else sock


def post(port: int, message: dict, *, version: str = V26, session: str | None = None, **options):
    headers = {
        "Content-Type": "application/json",
        "Accept": ACCEPT_BOTH,
        "MCP-Protocol-Version": version,
    }
    if version == V26:
        headers.update(request_headers(message["method"], message.get("params")))
    if session is not None:
        headers["Mcp-Session-Id"] = session
    return raw_http(port, "POST", "/mcp", headers, json.dumps(message).encode(), **options)


def listen(port: int, request_id: int = 1, **options) -> Raw:
    """A ``subscriptions/listen`` POST, its acknowledgment read."""
    params = {"_meta": meta(), "notifications": {"toolsListChanged": True}}
    raw = post(port, request("subscriptions/listen", params, request_id), **options)
    assert raw.status == 200, raw.status
    ack = raw.message()
    assert ack["method"] == "notifications/subscriptions/acknowledged", ack
    return raw


def discover(port: int, **options) -> int:
    """A plain request on a new connection: its status."""
    raw = post(port, request("server/discover", {"_meta": meta()}), keep=False, **options)
    status = raw.status
    raw.sock.close()
    return status


def initialize(port: int, version: str = LATEST) -> str:
    """A new handshake-era session (its connection closed): its id."""
    raw = post(port, request("initialize", init_params(version)), version=version, keep=False)
    assert raw.status == 200
    session = raw.headers["mcp-session-id"]
    raw.sock.close()
    note = post(
        port,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        version=version,
        session=session,
        keep=False,
    )
    assert note.status == 202
    note.sock.close()
    return session


def standalone_get(port: int, session: str, **options) -> Raw:
    return raw_http(
        port,
        "GET",
        "/mcp",
        {"Accept": "text/event-stream", "Mcp-Session-Id": session, "MCP-Protocol-Version": LATEST},
        **options,
    )


class Raw:
    """One HTTP response read off a raw socket: status, headers, then its body's SSE events."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.file = sock.makefile("rb")
        self.status = int(self.file.readline().split()[1])
        self.headers: dict[str, str] = {}
        while True:
            line = self.file.readline().decode("latin-1").strip()
            if not line:
                break
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        self.chunked = self.headers.get("transfer-encoding") == "chunked"
        self.buffer = b""

    def body(self) -> bytes:
        """The whole body of a sized response."""
        return self.file.read(int(self.headers.get("content-length", "0")))

    def event(self) -> dict | None:
        """The next SSE event with a field other than a comment (None at the end of the body)."""
        while True:
            while b"\n\n" not in self.buffer:
                if not self.chunked:
                    return None
                size = int(self.file.readline().strip() or b"0", 16)
                if size == 0:
                    return None
                self.buffer += self.file.read(size)
                self.file.readline()
            block, self.buffer = self.buffer.split(b"\n\n", 1)
            fields: dict[str, str] = {}
            for line in block.decode().split("\n"):
                if line and not line.startswith(":"):
                    name, _, value = line.partition(":")
                    fields[name] = fields.get(name, "") + value.strip()
            if fields:
                return fields

    def message(self) -> dict:
        """The next JSON-RPC message of an SSE body."""
        while True:
            event = self.event()
            assert event is not None, "the stream ended"
            if event.get("data"):
                return json.loads(event["data"])

    def ended_by_server(self) -> bool:
        """True once the server closes the connection (bounded by the socket's timeout)."""
        try:
            while self.file.read(65536):
                pass
        except OSError:
            return True
        return True

    def drop(self, reset: bool = False) -> None:
        """Close the socket abruptly, with nothing said: a reset (``reset``) or a plain close."""
        if reset:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.file.close()
        self.sock.close()


# -- a dropped stream frees its slot at once ----------------------------------------------------------


def test_dropped_listen_streams_free_their_threads_and_slots_at_once(serve):
    count = 40
    srv = serve(
        streams_server(),
        keepalive=60,
        max_streams_per_client=None,
        limits=ConnectionLimits(max_connections=count, evict_streams=False),
    )
    hub, table = srv.app.server.subscriptions, srv.httpd.connections
    before = connection_thread_set()
    streams = [listen(srv.port, n + 1) for n in range(count)]
    assert len(hub) == count and table.count == count and connection_threads(before) == count
    assert discover(srv.port) == 503  # the table is full of streams, and they count as work here
    started = time.monotonic()
    for n, stream in enumerate(streams):
        stream.drop(reset=bool(n % 2))  # half closed, half reset; no cancellation sent
    assert hub.wait_at_most(0, FREED_WITHIN), len(hub)
    assert ended(connection_thread_set() - before, FREED_WITHIN) == 0 and table.count == 0, (
        table.count,
        connection_threads(before),
    )
    freed = time.monotonic() - started
    assert srv.app.streams_held() == 0
    assert discover(srv.port) == 200, f"freed in {freed:.2f} s, yet a new client is refused"


def open_call(srv, kind: str, request_id: int) -> socket.socket:
    """A POST whose handler waits (``hold``), in one of three shapes: its socket, nothing read
    (the handler sends nothing before its answer, so the response has not begun)."""
    call = request("tools/call", {"name": "hold", "arguments": {}}, request_id)
    if kind == "modern":
        call["params"]["_meta"] = meta()
        return post(srv.port, call, read=False)
    session = None if kind == "stateless" else initialize(srv.port)
    return post(srv.port, call, version=LATEST, session=session, read=False)


@pytest.mark.parametrize("kind", ["modern", "stateless", "stateful"])
def test_a_post_whose_handler_waits_is_ended_when_its_client_goes(serve, kind):
    """2026-07-28 streamable-http §Cancellation: closing the stream "MUST be treated by the server as
    cancellation"; a stateless 2025-11-25 request cannot be resumed, so it is cancelled too; a stateful
    one is not ("Disconnection SHOULD NOT be interpreted as the client cancelling"), but the thread
    that relayed its stream is freed at once and the handler runs on."""
    events: dict = {}
    options = (
        {"stateless": True}
        if kind == "stateless"
        else {"inline_handlers": False}
        if kind == "stateful"
        else {}
    )
    srv = serve(streams_server(events), keepalive=60, **options)
    table = srv.httpd.connections
    before = connection_thread_set()
    calls = []
    for n in range(4):
        calls.append(open_call(srv, kind, n + 10))
        assert events["started"].acquire(timeout=WAIT)
    for call in calls:
        call.close()
    assert ended(connection_thread_set() - before, FREED_WITHIN) == 0 and table.count == 0, (
        table.count,
        connection_threads(before),
    )
    if kind == "stateful":
        assert not events["cancelled"].acquire(
            blocking=False
        )  # the handlers run on, for a resuming GET
        events["release"].set()
        for _ in calls:
            assert events["finished"].acquire(timeout=WAIT)
    else:
        for _ in calls:
            assert events["cancelled"].acquire(timeout=WAIT)
    assert discover(srv.port) == 200


def test_dropped_get_streams_free_their_slots_and_keep_their_sessions(serve):
    srv = serve(streams_server(), keepalive=60)
    table = srv.httpd.connections
    before = connection_thread_set()
    sessions = [initialize(srv.port) for _ in range(4)]
    streams = [standalone_get(srv.port, session) for session in sessions]
    assert all(stream.status == 200 for stream in streams)
    for session in sessions:
        standalone = srv.app.sessions[session].standalone
        with standalone.cond:  # notified as a consumer attaches
            assert standalone.cond.wait_for(lambda s=standalone: s.consumer is not None, WAIT)
    for stream in streams:
        stream.drop()
    assert ended(connection_thread_set() - before, FREED_WITHIN) == 0, table.count
    assert table.count == 0
    assert all(srv.app.sessions[s].standalone.consumer is None for s in sessions)  # free to expire
    again = standalone_get(srv.port, sessions[0])  # the session goes on: its client comes back
    assert again.status == 200
    again.drop()


def test_dropped_legacy_streams_end_their_sessions_at_once(serve):
    srv = serve(streams_server(), keepalive=60)
    table = srv.httpd.connections
    before = connection_thread_set()
    streams = [raw_http(srv.port, "GET", "/sse", {"Accept": "text/event-stream"}) for _ in range(4)]
    assert all(stream.event()["event"] == "endpoint" for stream in streams)
    assert len(srv.app.sessions) == 4
    for stream in streams:
        stream.drop(reset=True)
    assert ended(connection_thread_set() - before, FREED_WITHIN) == 0, table.count
    assert table.count == 0 and not srv.app.sessions, (
        table.count,
        len(srv.app.sessions),
    )
    assert discover(srv.port) == 200


def test_a_pipelined_request_is_not_taken_for_a_close(serve):
    """A client that sends its next request while a stream is open makes the socket readable
    without closing it: the stream goes on (the check peeks; only an end of input is a close)."""
    srv = serve(streams_server(), keepalive=60)
    hub, watchdog = srv.app.server.subscriptions, srv.httpd.watchdog
    before = connection_thread_set()
    stream = listen(srv.port)
    ping = json.dumps(request("server/discover", {"_meta": meta()}, 2)).encode()
    stream.sock.sendall(
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: "
        + ACCEPT_BOTH.encode()
        + b"\r\nMCP-Protocol-Version: "
        + V26.encode()
        + b"\r\nMcp-Method: server/discover\r\nContent-Length: %d\r\n\r\n%s" % (len(ping), ping)
    )
    checks = threading.Semaphore(0)
    check = watchdog._check_peers
    watchdog._check_peers = lambda: (check(), checks.release())
    for _ in range(4):  # enough looks for the stream to be polled, its socket readable each time
        assert checks.acquire(timeout=WAIT)
    assert len(hub) == 1 and srv.httpd.connections.count == 1
    srv.app.server.subscriptions.publish("notifications/tools/list_changed")
    assert stream.message()["method"] == "notifications/tools/list_changed"  # still served
    stream.drop()
    assert hub.wait_at_most(0, FREED_WITHIN), len(hub)
    assert ended(connection_thread_set() - before, FREED_WITHIN) == 0
    assert srv.httpd.connections.count == 0


# -- idle streams do not lock newcomers out -----------------------------------------------------------


def test_at_the_cap_the_oldest_stream_of_the_heaviest_client_ends_gracefully(serve):
    """subscriptions §Graceful Closure: a server ending a subscription "SHOULD respond to the original
    subscriptions/listen request with a completion result before closing the stream"."""
    srv = serve(
        streams_server(),
        keepalive=60,
        max_streams_per_client=None,
        limits=ConnectionLimits(max_connections=4),
    )
    hub = srv.app.server.subscriptions
    light = listen(srv.port, 1, source="127.0.0.3")  # the oldest stream, of a client holding one
    heavy = [listen(srv.port, n, source="127.0.0.2") for n in (2, 3, 4)]
    assert len(hub) == 4 and srv.httpd.connections.count == 4
    assert discover(srv.port) == 200  # the table was full of streams: one made room
    cancelled, answer = heavy[0].message(), heavy[0].message()
    assert (
        cancelled["method"] == "notifications/cancelled" and cancelled["params"]["requestId"] == 2
    )
    assert answer["id"] == 2 and answer["result"]["resultType"] == "complete"
    assert answer["result"]["_meta"][SUBSCRIPTION_ID] == 2
    assert heavy[0].event() is None and heavy[0].ended_by_server()
    assert hub.wait_at_most(3, WAIT), len(hub)
    srv.app.server.subscriptions.publish("notifications/tools/list_changed")
    for stream in (light, heavy[1], heavy[2]):  # the others go on
        assert stream.message()["method"] == "notifications/tools/list_changed"
        stream.drop()


def test_at_the_cap_a_get_stream_is_closed_with_a_retry_and_resumes(serve):
    """2025-11-25 basic/transports §Listening: the server "MAY close the SSE stream at any time",
    "sending a retry field and allowing the client to reconnect"."""
    srv = serve(streams_server(), keepalive=60, limits=ConnectionLimits(max_connections=2))
    before = connection_thread_set()
    sessions = []
    for _ in range(2):  # each after the last one's connections have left the table (a cap of 2)
        assert ended(connection_thread_set() - before) == 0
        sessions.append(initialize(srv.port))
    first, second = sessions
    # the second initialize's connections too (a cap of 2)
    assert ended(connection_thread_set() - before) == 0
    assert srv.httpd.connections.count == 0
    streams = [
        standalone_get(srv.port, first, source="127.0.0.2"),
        standalone_get(srv.port, second, source="127.0.0.3"),
    ]
    # each stream's head was read (it answered): both are at work, none waits for a head
    assert srv.httpd.connections.count == 2 and not srv.httpd.connections.waiting
    priming = streams[0].event()
    assert priming is not None and priming["id"] and "retry" in priming  # the stream's first event
    assert discover(srv.port) == 200
    closing = streams[0].event()
    assert closing is not None and closing["retry"] == "1000" and closing["id"] != priming["id"]
    assert streams[0].event() is None and streams[0].ended_by_server()
    resumed = raw_http(
        srv.port,
        "GET",
        "/mcp",
        {
            "Accept": "text/event-stream",
            "Mcp-Session-Id": first,
            "MCP-Protocol-Version": LATEST,
            "Last-Event-ID": closing["id"],
        },
    )
    assert resumed.status == 200
    for stream in (resumed, streams[1]):
        stream.drop()


# -- one client cannot hold every slot ------------------------------------------------------------------


def test_one_client_past_its_stream_cap_gets_a_clear_429_and_others_are_served(serve):
    srv = serve(streams_server(), keepalive=60, max_streams_per_client=3)
    hub = srv.app.server.subscriptions
    before = connection_thread_set()
    held = [listen(srv.port, 1)]
    first = connection_thread_set() - before  # the thread serving held[0]
    held += [listen(srv.port, n) for n in (2, 3)]
    refused = post(
        srv.port, request("subscriptions/listen", {"_meta": meta(), "notifications": {}}, 4)
    )
    assert refused.status == 429 and refused.headers["retry-after"] == "5"
    error = json.loads(refused.body())
    assert (
        error["id"] == 4
        and error["error"]["code"] == -31005
        and error["error"]["data"] == {"limit": 3}
    )
    assert "Too many open streams" in error["error"]["message"]
    refused.drop()
    session = initialize(srv.port)  # a GET stream counts against the same client
    get = standalone_get(srv.port, session)
    assert get.status == 429 and json.loads(get.body())["error"]["code"] == -31005
    get.drop()
    legacy = raw_http(srv.port, "GET", "/sse", {"Accept": "text/event-stream"})
    assert legacy.status == 429
    legacy.drop()
    assert discover(srv.port) == 200  # the same client's requests are served
    other = listen(srv.port, 5, source="127.0.0.2")  # and another client's streams
    assert len(hub) == 4
    held[0].drop()  # a stream closed frees its place at once
    assert ended(first, FREED_WITHIN) == 0 and srv.app.streams_held() == 3
    again = listen(srv.port, 6)
    for stream in (*held[1:], other, again):
        stream.drop()
    assert hub.wait_at_most(0, FREED_WITHIN), len(hub)
    assert ended(connection_thread_set() - before, FREED_WITHIN) == 0
    assert srv.app.streams_held() == 0


def test_a_get_that_takes_over_a_stream_whose_end_was_already_taken_ends_too():
    """A POST's own response takes the stream's end just as a GET with Last-Event-ID takes the stream
    over (the client closed the POST at once after its answer): the GET replays what the event store
    kept and ends, instead of waiting for an end that was already consumed (it hung until its
    client's read timeout, one run in several under load)."""
    from mcp_ref.http.server import END, Stream

    stream = Stream("1", answers=[1])
    post = stream.attach()
    stream.put(b"answer", end=True)
    assert stream.take(post, 0) == b"answer" and stream.take(post, 0) is END
    resuming = stream.attach()
    assert stream.take(resuming, 5) is END  # at once: not after the 5 s wait
