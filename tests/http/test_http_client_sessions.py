"""The HTTP client against servers that forget its session, or take their time over what it sends
with no answer to wait for (a notification, an answer, the session's DELETE).

A 404 to anything carrying the session's id starts a new session (2025-11-25 basic/transports
§Session Management), whether a request, a notification, the standalone GET stream or the GET
resuming a call's stream (the call failing: its answer is lost) met it; the new session is asked
again for what the old one held (its subscriptions, its log level), and its own GET stream
opened; a server that forgets every new session at once gets no renewal in a loop.
A notification's POST, and the session's DELETE at close, end within a total deadline, whatever
the server trickles, and closing the client ends them.

:class:`ScriptedServer` is a Streamable HTTP server on a raw socket (127.0.0.1, port 0) whose
answers a test scripts; the rest is mcp_ref's own server.
"""

from __future__ import annotations

import json
import logging
import socket
import threading

import pytest
from conftest import WAIT, Collector, LoggedOnce
from http_fixtures import handshake_http_client, serve  # noqa: F401 - fixtures
from test_http_client_giving_up import Holding, method_is

from mcp_ref import Client, ConnectionClosed, InvalidParams, Server
from mcp_ref.extension import Extension
from mcp_ref.http import client as http_client, notices

#: A timeout the tests wait past (they wait for WAIT): what a fixed bound used to hold far longer.
LONG = 3 * WAIT


def read_request(reader) -> dict | None:
    """One HTTP request from ``reader`` (a socket file): method, headers (lower-case names),
    body and its JSON (None when it has none); None at the end of the connection."""
    line = reader.readline()
    if not line:
        return None
    method = line.decode("latin-1").split(" ", 1)[0]
    headers = {}
    while True:
        header = reader.readline()
        if header in (b"\r\n", b"\n", b""):
            break
        name, _, value = header.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    body = reader.read(int(headers.get("content-length", "0") or 0))
    message = json.loads(body) if body else None
    return {"method": method, "headers": headers, "json": message}


def answer(status: str, body: bytes = b"", headers: str = "") -> bytes:
    """An HTTP/1.1 answer with a Content-Length."""
    return f"HTTP/1.1 {status}\r\nContent-Length: {len(body)}\r\n{headers}\r\n".encode() + body


def json_answer(message: dict, headers: str = "") -> bytes:
    return answer(
        "200 OK", json.dumps(message).encode(), "Content-Type: application/json\r\n" + headers
    )


class ScriptedServer:
    """A Streamable HTTP server on a raw socket whose answers ``script(request)`` chooses: bytes to
    send (the connection kept), a callable that writes to the socket itself (then the connection
    ends), or None for the default: ``initialize`` gets a new session id (``s1``, ``s2`` ...), a
    notification 202, GET 405 (no stream), DELETE 200, any other request an empty result.

    ``requests`` are the requests seen, in order; :meth:`wait_for` waits for one.  ``stop`` (an
    Event) ends every write a script is making, and :meth:`close` every connection."""

    def __init__(self, script=lambda request: None):
        self.script = script
        #: What ``initialize`` answers the server offers.
        self.capabilities: dict = {"tools": {}}
        self.stop = threading.Event()
        self.sessions = 0
        self.requests: list[dict] = []
        self.seen = threading.Condition()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/mcp"
        self.connections: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections.append(connection)
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        reader = connection.makefile("rb")
        try:
            while (request := read_request(reader)) is not None:
                with self.seen:
                    self.requests.append(request)
                    self.seen.notify_all()
                scripted = self.script(request)
                if callable(scripted):
                    scripted(connection)
                    return
                connection.sendall(scripted if scripted is not None else self.usual(request))
        except OSError:
            pass
        finally:
            connection.close()

    def usual(self, request: dict) -> bytes:
        """The default answer to ``request`` (see the class)."""
        message = request["json"] or {}
        if request["method"] == "GET":
            return answer("405 Method Not Allowed")
        if request["method"] == "DELETE":
            return answer("200 OK")
        if "id" not in message:
            return answer("202 Accepted")
        result: dict = {}
        headers = ""
        if message["method"] == "initialize":
            self.sessions += 1
            headers = f"Mcp-Session-Id: s{self.sessions}\r\n"
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": self.capabilities,
                "serverInfo": {"name": "scripted", "version": "1"},
            }
        return json_answer({"jsonrpc": "2.0", "id": message["id"], "result": result}, headers)

    def count(self, picked) -> int:
        """How many requests ``picked(request)`` takes."""
        with self.seen:
            return sum(1 for request in self.requests if picked(request))

    def wait_for(self, picked, what: str, times: int = 1) -> dict:
        """The ``times``-th request ``picked(request)`` takes, waited for (at most WAIT)."""
        with self.seen:
            came = self.seen.wait_for(lambda: self.count(picked) >= times, WAIT)
            assert came, f"the server never saw {what}"
            return [request for request in self.requests if picked(request)][times - 1]

    def close(self) -> None:
        self.stop.set()
        self.listener.close()
        for connection in self.connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


@pytest.fixture
def scripted():
    """Factory: ``scripted(script)`` -> a running :class:`ScriptedServer`, closed after the test."""
    made: list[ScriptedServer] = []

    def factory(script=lambda request: None) -> ScriptedServer:
        made.append(ScriptedServer(script))
        return made[-1]

    yield factory
    for server in made:
        server.close()


def ended_within(seconds: float, job):
    """Run ``job()`` on a thread: its result, or the exception it raised, once it ended; the test
    fails when it has not ended within ``seconds``."""
    outcome: list = []

    def run() -> None:
        try:
            outcome.append(job())
        except Exception as exc:  # handed to the test
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    return outcome[0]


def trickle(server: ScriptedServer, data: bytes):
    """A script's answer: ``data`` a byte at a time, every 0.1 s, until the server stops."""

    def write(connection: socket.socket) -> None:
        for byte in data:
            if server.stop.wait(0.1):
                return
            connection.sendall(bytes([byte]))

    return write


def held(server: ScriptedServer):
    """A script's answer: none at all, the connection held until the server stops."""
    return lambda connection: server.stop.wait(LONG)


#: An answer long enough to trickle past any bound of a test.
SLOW_202 = b"HTTP/1.1 202 Accepted\r\nX-Pad: " + b"a" * 10_000


def posted(method: str):
    """Picks the POSTs of the JSON-RPC ``method``."""
    return lambda request: (request["json"] or {}).get("method") == method


def of_session(session_id: str):
    """Picks the requests carrying the session id ``session_id``."""
    return lambda request: request["headers"].get("mcp-session-id") == session_id


def both(*picks):
    """Picks the requests every one of ``picks`` takes."""
    return lambda request: all(picked(request) for picked in picks)


def renewal_over(transport) -> None:
    """Wait for the new session under way, then for what it is asked after its handshake (its log
    level, its subscriptions: sent on threads of their own once it is ready) to be answered."""
    assert transport._session_ready.wait(WAIT), "the new session was never ready"
    for thread in transport._follow_ups.copy():
        thread.join(WAIT)
        assert not thread.is_alive(), "what the new session is asked again was never answered"


# -- a 404: a new session ----------------------------------------------------------------------


def test_a_404_on_the_get_stream_starts_a_new_session_that_is_subscribed_again(serve):
    # The GET stream met the 404 (the server ended the session, and its stream with it): the
    # client used to stop listening, and a later new session (a request's 404) was not subscribed
    # again, while the client still believed it was; resource updates never came again.
    server = Server("subscribable")

    @server.resource("res://a")
    def resource_a() -> str:
        return "a"

    box: list[Holding] = []
    served = serve(server, wrap=lambda app: box.append(Holding(app)) or box[0])
    seen = box[0]
    updated = Collector()
    with Client.http(
        served.mcp, era="handshake", timeout=WAIT, on_resource_updated=updated
    ) as client:
        transport = client.session.transport
        client.subscribe("res://a")
        server.notify_resource_updated("res://a")
        updated.wait_for(1)
        old = transport.session_id
        assert served.app.end_session(old)
        # no request of the caller's: the GET stream's 404 alone starts the new session
        seen.wait_for(method_is("initialize"), "a new initialize", 2)
        subscribe = seen.wait_for(method_is("resources/subscribe"), "the subscribe again", 2)
        assert subscribe["params"] == {"uri": "res://a"}
        renewal_over(transport)  # its subscribe answered
        assert transport.session_id not in (None, old)
        mark = updated.mark()
        server.notify_resource_updated("res://a")
        # on the new session's GET stream, opened by the client
        assert updated.wait_for(1, since=mark) == ["res://a"]
        assert seen.count(method_is("initialize")) == 2


def test_a_404_to_a_notification_starts_a_new_session(scripted):
    forgotten = threading.Event()

    def script(request):
        if forgotten.is_set() and request["headers"].get("mcp-session-id") == "s1":
            return answer("404 Not Found")
        return None

    server = scripted(script)
    with Client.http(server.url, era="handshake", timeout=WAIT, roots=["file:///a"]) as client:
        forgotten.set()
        client.set_roots(["file:///b"])  # notifications/roots/list_changed meets the 404
        server.wait_for(posted("initialize"), "a new initialize", 2)
        server.wait_for(posted("notifications/initialized"), "the new session's notice", 2)
        client.list_tools()
        assert server.count(lambda r: posted("tools/list")(r) and of_session("s2")(r)) == 1


def test_a_404_to_a_resumption_starts_a_new_session_and_the_next_call_goes_there(scripted):
    """The server forgot the session while a call's stream was broken: the GET resuming it was
    answered 404, and the call failed saying only "HTTP 404", no new session started; the next
    call met a 404 of its own first.  A 404 to a request carrying the session's id starts a new
    session (2025-11-25 basic/transports §Session Management): the call still fails (its answer
    is gone), saying the session expired, and the next call goes to the new session at once."""
    forgotten = threading.Event()

    def script(request):
        message = request["json"] or {}
        if forgotten.is_set() and of_session("s1")(request):
            return answer("404 Not Found")
        if message.get("method") == "tools/call":
            forgotten.set()  # the server forgets s1 as the call's stream breaks
            return lambda connection: connection.sendall(SSE_HEAD + b"id: e0\nretry: 1\ndata:\n\n")
        return None

    server = scripted(script)
    with Client.http(server.url, era="handshake", timeout=LONG, min_retry_delay=0) as client:
        failure = ended_within(WAIT, lambda: client.call_tool("long"))
        assert "session expired" in str(failure), failure
        assert server.count(posted("initialize")) == 2  # the new session, before the call failed
        assert client.list_tools() == []
    assert server.count(both(posted("tools/list"), of_session("s2"))) == 1
    assert server.count(both(posted("tools/list"), of_session("s1"))) == 0


def test_a_server_that_forgets_each_session_as_its_stream_breaks_gets_no_renewal_in_a_loop(
    scripted,
):
    """Each request's stream breaks and the server forgets the session with it: the call's
    resumption (404) starts one new session; the log level asked of it meets the same, and fails
    without starting another (a new session's own request, as for a POST's 404)."""
    forgotten: set[str] = set()

    def script(request):
        message = request["json"] or {}
        session = request["headers"].get("mcp-session-id")
        if session in forgotten:
            return answer("404 Not Found")
        if message.get("method") in ("tools/call", "logging/setLevel"):
            forgotten.add(session)
            return lambda connection: connection.sendall(SSE_HEAD + b"id: e0\nretry: 1\ndata:\n\n")
        return None

    server = scripted(script)
    with Client.http(server.url, era="handshake", timeout=LONG, min_retry_delay=0) as client:
        client.connection.log_level = "info"  # the next new session asks for it again
        failure = ended_within(WAIT, lambda: client.call_tool("long"))
        assert "session expired" in str(failure), failure
        renewal_over(client.session.transport)
        assert server.count(posted("logging/setLevel")) == 1
        assert server.count(posted("initialize")) == 2


def test_a_server_that_forgets_every_new_session_gets_no_renewal_in_a_loop(scripted):
    # Every request but initialize, and every GET, is answered 404: the GET stream starts one new
    # session, then leaves it alone; a call starts one more and fails; the log level asked again
    # of a new session (once it is ready, meeting a 404) fails instead of starting another (it
    # used to wait for the renewal it was part of, then start one more, and so on).
    def script(request):
        message = request["json"] or {}
        if request["method"] == "GET" or ("id" in message and message["method"] != "initialize"):
            return answer("404 Not Found")
        return None

    server = scripted(script)
    client = Client.http(server.url, era="handshake", timeout=WAIT)
    try:
        transport = client.session.transport
        transport._listener.join(WAIT)
        assert not transport._listener.is_alive(), "the GET stream renews for ever"
        assert server.count(posted("initialize")) == 2  # the client's, and the GET stream's
        client.connection.log_level = "info"  # the next new session asks for it again
        with pytest.raises(Exception, match="404"):
            client.list_tools()
        renewal_over(transport)
        assert server.count(posted("initialize")) == 3  # the call's: once
        assert server.count(posted("logging/setLevel")) == 1  # the new session's, refused
    finally:
        client.close()


def test_a_server_that_forgets_every_new_session_gets_no_renewal_in_a_loop_from_its_notices(
    scripted,
):
    # Every POST carrying a session id, notifications included, is answered 404: the 404 to the
    # first session's notifications/initialized starts a new session; the one to the new
    # session's own notifications/initialized used to start another, and so on for ever (some
    # 500 new sessions a second): whether the renewal sent it was asked on the worker the new
    # renewal had been handed to, not on the thread that sent it.
    server = scripted(
        lambda r: answer("404 Not Found") if of_session(f"s{server.sessions}")(r) else None
    )
    client = Client.http(server.url, era="handshake", timeout=WAIT)
    try:
        transport = client.session.transport
        new_notice = both(posted("notifications/initialized"), of_session("s2"))
        server.wait_for(new_notice, "the new session's notice")
        renewal_over(transport)
        # what a 404 to a notice handed the workers has run: a renewal it started has begun
        transport._pool.shutdown(wait=True)
        assert transport._generation == 1, "the new session's own notice started another"
        assert server.count(posted("initialize")) == 2
    finally:
        client.close()


def test_a_new_session_slow_to_take_a_subscription_again_holds_up_no_request(scripted):
    # The new session answers initialize at once, but holds the resources/subscribe asked again:
    # the call that met the 404 (and any other) waited for it, the whole renewal, and failed.
    forgotten = threading.Event()

    def script(request):
        if forgotten.is_set() and of_session("s1")(request):
            return answer("404 Not Found")
        if both(posted("resources/subscribe"), of_session("s2"))(request):
            return held(server)
        return None

    server = scripted(script)
    server.capabilities = {"tools": {}, "resources": {"subscribe": True}}
    with Client.http(server.url, era="handshake", timeout=LONG) as client:
        client.subscribe("res://x")
        forgotten.set()
        assert ended_within(WAIT, client.list_tools) == []  # on the new session, at once
        assert server.count(both(posted("tools/list"), of_session("s2"))) == 1
        server.wait_for(
            both(posted("resources/subscribe"), of_session("s2")), "the subscribe again"
        )


def test_a_subscription_the_old_session_took_during_the_renewal_is_asked_of_the_new_one(scripted):
    # A resources/subscribe under way to the old session is answered (with success) only after a
    # new session was started: the new session used to be left without it for good (the renewal
    # skipped a URI whose subscribe was under way, as if it went to the new session).
    forgotten, answer_it = threading.Event(), threading.Event()

    def script(request):
        message = request["json"] or {}
        if both(posted("resources/subscribe"), of_session("s1"))(request):

            def later(connection: socket.socket) -> None:
                answer_it.wait(LONG)
                reply = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
                connection.sendall(json_answer(reply))

            return later
        if forgotten.is_set() and of_session("s1")(request):
            return answer("404 Not Found")
        return None

    server = scripted(script)
    server.capabilities = {"tools": {}, "resources": {"subscribe": True}}
    with Client.http(server.url, era="handshake", timeout=LONG) as client:
        subscribing = threading.Thread(target=lambda: client.subscribe("res://x"), daemon=True)
        subscribing.start()
        server.wait_for(posted("resources/subscribe"), "the subscribe to the old session")
        forgotten.set()
        client.list_tools()  # meets the 404: a new session, asked again for what the old one held
        answer_it.set()  # the old session took the subscription after all
        subscribing.join(WAIT)
        server.wait_for(
            both(posted("resources/subscribe"), of_session("s2")), "the subscribe again"
        )
        renewal_over(client.session.transport)
        assert client.connection.streams.subscribed_uris() == {"res://x"}


def test_an_unsubscribe_during_the_renewal_reaches_the_new_session_after_its_subscribe_again(
    scripted,
):
    # The new session is asked again for res://x (the follow-up), and holds that subscribe; the
    # user unsubscribes meanwhile.  Were the unsubscribe sent at once, the server could act on it
    # before the subscribe, and stay subscribed against the user's wish: it waits for the
    # subscribe's answer (its turn, taken before the new session was ready), then goes.
    forgotten, release = threading.Event(), threading.Event()
    subscribe_again = both(posted("resources/subscribe"), of_session("s2"))
    unsubscribe = posted("resources/unsubscribe")
    acted_on: list[tuple[str, str | None]] = []  # what the server did, in the order it did it

    def act_on(request) -> None:
        acted_on.append((request["json"]["method"], request["headers"].get("mcp-session-id")))

    def subscribe_when_released(connection: socket.socket, request: dict) -> None:
        if release.wait(LONG):
            act_on(request)
            connection.sendall(server.usual(request))

    def script(request):
        if forgotten.is_set() and of_session("s1")(request):
            return answer("404 Not Found")
        if subscribe_again(request):
            return lambda connection: subscribe_when_released(connection, request)
        if unsubscribe(request):
            act_on(request)
            queued.seen.set()  # sent at once: the test releases the subscribe, and sees the order
        return None

    server = scripted(script)
    server.capabilities = {"tools": {}, "resources": {"subscribe": True}}
    queued = LoggedOnce("waits for the answer to the one before it")
    listening_log = logging.getLogger("mcp_ref.client.listening")
    listening_log.addHandler(queued)
    level = listening_log.level
    listening_log.setLevel(logging.DEBUG)
    try:
        with Client.http(server.url, era="handshake", timeout=LONG) as client:
            client.subscribe("res://x")
            forgotten.set()
            client.list_tools()  # meets the 404: a new session, asked again for res://x
            server.wait_for(subscribe_again, "the subscribe again")
            unsubscribing = threading.Thread(
                target=lambda: client.unsubscribe("res://x"), daemon=True
            )
            unsubscribing.start()
            assert queued.seen.wait(WAIT), "the unsubscribe was neither sent nor queued"
            release.set()
            unsubscribing.join(WAIT)
            assert not unsubscribing.is_alive(), "the unsubscribe never ended"
            renewal_over(client.session.transport)
            assert acted_on == [("resources/subscribe", "s2"), ("resources/unsubscribe", "s2")]
            assert client.connection.streams.subscribed_uris() == set()
    finally:
        release.set()
        listening_log.removeHandler(queued)
        listening_log.setLevel(level)


def test_a_notification_sent_during_a_renewal_goes_to_the_new_session(scripted):
    # A notification written while the new session's initialize is under way used to go with no
    # Mcp-Session-Id (which the server refuses: 400), its caller failing.
    forgotten, release = threading.Event(), threading.Event()

    def script(request):
        if forgotten.is_set() and of_session("s1")(request):
            return answer("404 Not Found")
        if request["method"] == "POST" and not request["headers"].get("mcp-session-id"):
            if not posted("initialize")(request):
                return answer("400 Bad Request")
            if forgotten.is_set():
                return lambda connection: (
                    release.wait(LONG) and connection.sendall(server.usual(request))
                )
        return None

    server = scripted(script)
    with Client.http(server.url, era="handshake", timeout=LONG, roots=["file:///a"]) as client:
        transport = client.session.transport
        sender: threading.Thread | None = None

        class Ready(threading.Event):
            """The session's readiness; a wait for it by the notification's sender releases the
            held initialize."""

            def wait(self, timeout=None) -> bool:
                if threading.current_thread() is sender:
                    release.set()
                return super().wait(timeout)

        transport._session_ready = Ready()
        transport._session_ready.set()
        forgotten.set()
        calling = threading.Thread(target=client.list_tools, daemon=True)
        calling.start()
        server.wait_for(posted("initialize"), "the new session's initialize", 2)
        outcome: list = []

        def notify() -> None:
            try:
                outcome.append(client.set_roots(["file:///b"]))
            except Exception as exc:  # handed to the test
                outcome.append(exc)
            finally:
                release.set()  # sent at once (before the fix): the renewal may go on

        sender = threading.Thread(target=notify, daemon=True)
        sender.start()
        sender.join(WAIT)
        calling.join(WAIT)
        assert outcome == [None], outcome
        notice = server.wait_for(posted("notifications/roots/list_changed"), "the notification")
        assert notice["headers"].get("mcp-session-id") == "s2"


def test_a_renewal_goes_on_when_every_worker_meets_the_404(scripted):
    # Every worker carries a call that meets the 404 at once: one starts the new session, the
    # others wait for it; its initialize used to wait for a worker too, and every call failed at
    # its timeout.
    def script(request):
        if both(posted("tools/list"), of_session("s1"))(request):

            def late(connection: socket.socket) -> None:
                server.wait_for(both(posted("tools/list"), of_session("s1")), "both calls", 2)
                connection.sendall(answer("404 Not Found"))

            return late
        return None

    server = scripted(script)
    transport = http_client.HttpClientTransport(server.url, max_workers=2)
    with Client(transport, era="handshake", timeout=LONG) as client:
        calls = [threading.Thread(target=client.list_tools, daemon=True) for _ in range(2)]
        for call in calls:
            call.start()
        for call in calls:
            call.join(WAIT)
            assert not call.is_alive(), "the new session never came"
        assert server.count(both(posted("tools/list"), of_session("s2"))) == 2
        assert server.count(posted("initialize")) == 2


def test_closing_during_a_renewal_logs_no_error(scripted, caplog):
    # close() while the new session's initialize is held: the call that met the 404 ends, and its
    # worker used to log an ERROR with a traceback (nothing is wrong: the client is closing).
    forgotten = threading.Event()

    def script(request):
        if forgotten.is_set() and of_session("s1")(request):
            return answer("404 Not Found")
        if forgotten.is_set() and posted("initialize")(request):
            return held(server)
        return None

    server = scripted(script)
    client = Client.http(server.url, era="handshake", timeout=LONG)
    transport = client.session.transport
    forgotten.set()
    outcome: list = []
    calling = threading.Thread(
        target=lambda: outcome.append(ended_within(LONG, client.list_tools)), daemon=True
    )
    calling.start()
    server.wait_for(posted("initialize"), "the new session's initialize", 2)
    ended_within(WAIT, client.close)
    calling.join(WAIT)
    assert isinstance(outcome[0], ConnectionClosed), outcome
    transport._pool.shutdown(wait=True)  # the call's worker has ended, and logged what it had to
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert errors == [], errors


@pytest.mark.parametrize("held_method", ["logging/setLevel", "resources/subscribe"])
def test_closing_while_the_new_session_is_asked_again_for_what_the_old_held_logs_nothing(
    scripted, caplog, held_method
):
    # close() while the new session holds the log level (or the subscription) asked again: the
    # follow-up's request fails because the client closed, and the log level's failure used to be
    # a WARNING ("the new session did not take the log level").  A close by the user is no
    # failure: nothing above DEBUG is logged for it, and close() keeps its bound.
    forgotten = threading.Event()
    held_again = both(posted(held_method), of_session("s2"))

    def script(request):
        if forgotten.is_set() and of_session("s1")(request):
            return answer("404 Not Found")
        if held_again(request):
            return held(server)
        return None

    server = scripted(script)
    server.capabilities = {"tools": {}, "logging": {}, "resources": {"subscribe": True}}
    client = Client.http(server.url, era="handshake", timeout=LONG)
    try:
        client.set_logging_level("info")
        client.subscribe("res://x")
        transport = client.session.transport
        forgotten.set()
        client.list_tools()  # meets the 404: a new session, asked again for the two
        server.wait_for(held_again, f"the {held_method} asked again")
        follow_ups = transport._follow_ups.copy()
        caplog.set_level(logging.DEBUG)
        closing = len(caplog.records)
    finally:
        ended_within(WAIT, client.close)
    for thread in follow_ups:  # the follow-up has ended, and logged what it had to
        thread.join(WAIT)
        assert not thread.is_alive(), "the follow-up outlives close()"
    said = [
        f"{record.levelname} {record.name}: {record.getMessage()}"
        for record in caplog.records[closing:]
        if record.levelno > logging.DEBUG
    ]
    assert said == [], said


# -- what the client POSTs with no answer to wait for: within a deadline --------------------------


def test_a_notification_whose_answer_trickles_fails_at_the_clients_timeout(scripted):
    # Its POST had a read timeout of 60 s, restarted by each byte: a server trickling its 202 held
    # set_roots() (and any notification's sender) for ever.
    server = scripted()
    server.script = lambda r: (
        trickle(server, SLOW_202) if posted("notifications/roots/list_changed")(r) else None
    )
    with Client.http(server.url, era="handshake", timeout=1.0, roots=["file:///a"]) as client:
        outcome = ended_within(WAIT, lambda: client.set_roots(["file:///b"]))
        assert isinstance(outcome, ConnectionClosed), outcome
        assert "no answer within 1 s" in str(outcome)
        client.list_tools()  # the connection serves on


def test_a_handshake_whose_initialized_notice_is_never_answered_fails_at_initialize_timeout(
    scripted,
):
    server = scripted()
    server.script = lambda r: held(server) if posted("notifications/initialized")(r) else None
    outcome = ended_within(
        WAIT,
        lambda: Client.http(server.url, era="handshake", timeout=LONG, initialize_timeout=1.0),
    )
    assert isinstance(outcome, ConnectionClosed), outcome
    assert "no answer within 1 s" in str(outcome)


def test_closing_the_client_ends_a_notification_the_server_holds(scripted):
    server = scripted()
    server.script = lambda r: (
        held(server) if posted("notifications/roots/list_changed")(r) else None
    )
    client = Client.http(server.url, era="handshake", timeout=LONG, roots=["file:///a"])
    outcome: list = []
    sender = threading.Thread(
        target=lambda: outcome.append(ended_within(LONG, lambda: client.set_roots(["file:///b"]))),
        daemon=True,
    )
    sender.start()
    server.wait_for(posted("notifications/roots/list_changed"), "the notification")
    ended_within(WAIT, client.close)
    sender.join(WAIT)
    assert not sender.is_alive(), "set_roots() outlives close()"
    assert isinstance(outcome[0], ConnectionClosed), outcome


def test_closing_ends_a_delete_whose_answer_trickles_at_its_bound(scripted, monkeypatch):
    # The DELETE had a read timeout of 5 s that every byte restarted: a server trickling its
    # status line and headers held close() for ever.
    monkeypatch.setattr(notices, "SESSION_END_TIMEOUT", 1.0)
    server = scripted()
    server.script = lambda r: trickle(server, SLOW_202) if r["method"] == "DELETE" else None
    client = Client.http(server.url, era="handshake", timeout=WAIT)
    ended_within(WAIT, client.close)
    assert server.count(lambda r: r["method"] == "DELETE") == 1


def test_closing_reads_no_body_of_the_answer_to_its_delete(scripted, monkeypatch):
    # Its body (up to 64 KiB) was read to the end, as slowly as the server sent it.
    monkeypatch.setattr(notices, "SESSION_END_TIMEOUT", LONG)  # not what ends it here
    hung_up = threading.Event()
    server = scripted()

    def body_trickled(connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 60000\r\n\r\n")
        try:
            while not server.stop.wait(0.1):
                connection.sendall(b"x")
        except OSError:  # the client closed the connection
            hung_up.set()

    server.script = lambda r: body_trickled if r["method"] == "DELETE" else None
    client = Client.http(server.url, era="handshake", timeout=WAIT)
    ended_within(WAIT, client.close)
    assert hung_up.wait(WAIT), "the client never closed the DELETE's connection"


# -- SSE polling: resuming as long as the server brings something new -----------------------------

SSE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"


def polling(server: ScriptedServer, answer_at: int):
    """A script doing SSE polling (2025-11-25 basic/transports §Sending Messages: the server "MAY
    close the connection ... at any time"): the call's POST gets a priming event (``e0``), each
    GET resuming after ``eN`` one new event (a log message, ``eN+1``) and the end of its
    connection; the answer comes on the ``answer_at``-th resumption."""
    call: dict = {}

    def script(request):
        message = request["json"] or {}
        if message.get("method") == "tools/call":
            call["id"] = message["id"]
            return lambda connection: connection.sendall(SSE_HEAD + b"id: e0\nretry: 1\ndata:\n\n")
        last = request["headers"].get("last-event-id")
        if request["method"] != "GET" or not last:
            return None
        number = int(last[1:]) + 1
        if number >= answer_at:
            event = {"jsonrpc": "2.0", "id": call["id"], "result": {"content": []}}
        else:
            event = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": f"step {number}"},
            }
        data = f"id: e{number}\ndata: {json.dumps(event)}\n\n".encode()
        return lambda connection: connection.sendall(SSE_HEAD + data)

    return script


def resumptions(server: ScriptedServer) -> int:
    return server.count(lambda r: r["method"] == "GET" and "last-event-id" in r["headers"])


def test_a_call_resumes_for_as_long_as_each_resumption_brings_something_new(scripted):
    # It failed after MAX_RESUMES (10) resumptions, each of which had brought a new event.
    server = scripted()
    server.script = polling(server, answer_at=15)
    with Client.http(server.url, era="handshake", timeout=WAIT, min_retry_delay=0) as client:
        assert client.call_tool("long").content == []
    assert resumptions(server) == 15


def _cut_short(connection) -> None:
    """An SSE answer's head, then the end of the connection: a chunked body cut short."""
    connection.sendall(SSE_HEAD.replace(b"Connection: close", b"Transfer-Encoding: chunked"))


@pytest.mark.parametrize(
    "resumed, failure",
    [
        # the stream breaks before any event: the call fails after MAX_RESUMES of them, not at
        # its timeout
        (_cut_short, "the server closed the stream before answering"),
        # the connection is closed before any answer: a resumption that brought nothing (tried
        # again), and the call fails saying so; it used to fail at once, saying the server had
        # ended the resumed stream
        (lambda connection: None, "resuming the stream failed"),
    ],
    ids=["stream cut short", "connection closed"],
)
def test_resumptions_that_bring_nothing_new_stop_at_max_resumes(scripted, resumed, failure):
    server = scripted()
    first = polling(server, answer_at=100)

    def script(request):
        if request["method"] == "GET" and "last-event-id" in request["headers"]:
            return resumed
        return first(request)

    server.script = script
    with Client.http(server.url, era="handshake", timeout=LONG, min_retry_delay=0) as client:
        outcome = ended_within(WAIT, lambda: client.call_tool("long"))
    assert failure in str(outcome), outcome
    assert resumptions(server) == http_client.MAX_RESUMES


def test_a_subscription_the_new_session_refuses_is_no_longer_counted(serve):
    # The new session refuses res://a's resources/subscribe (logged): the client no longer counts
    # it as subscribed, so a later Client.subscribe asks the server again (it used to return at
    # once, and the updates never came).
    server = Server("subscribable")
    refusing = threading.Event()

    @server.resource("res://a")
    def resource_a() -> str:
        return "a"

    class Refusing(Extension):
        name = "test/refusing"

        def intercept_request(self, call, proceed):
            if call.method == "resources/subscribe" and refusing.is_set():
                raise InvalidParams("Invalid params: not now")
            return proceed()

    server.add_extension(Refusing())
    box: list[Holding] = []
    served = serve(server, wrap=lambda app: box.append(Holding(app)) or box[0])
    seen = box[0]
    updated = Collector()
    with Client.http(
        served.mcp, era="handshake", timeout=WAIT, on_resource_updated=updated
    ) as client:
        transport = client.session.transport
        client.subscribe("res://a")
        refusing.set()
        assert served.app.end_session(transport.session_id)
        seen.wait_for(method_is("initialize"), "a new initialize", 2)
        seen.wait_for(method_is("resources/subscribe"), "the refused subscribe", 2)
        renewal_over(transport)  # the subscribe refused
        refusing.clear()
        client.subscribe("res://a")  # asked again, and taken
        assert seen.count(method_is("resources/subscribe")) == 3
        server.notify_resource_updated("res://a")
        assert updated.wait_for(1) == ["res://a"]


def pinging(server: ScriptedServer):
    """A call's SSE answer that holds one server request, a ping (id ``server-1``), and nothing
    more until the test stops the server."""

    def asks(connection) -> None:
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
        ping = {"jsonrpc": "2.0", "id": "server-1", "method": "ping"}
        connection.sendall(f"data: {json.dumps(ping)}\n\n".encode())
        server.stop.wait(LONG)

    return asks


def test_an_answer_refused_503_with_retry_after_is_sent_again(scripted):
    # A server that could not hand an answer on yet (a worker of a shared session reconnecting
    # to Redis) says 503 with Retry-After: the client sends it again after that pause, within
    # its deadline (RFC 9110 §10.2.3), since no caller waits on it to do so.
    refusals: list[dict] = []

    def is_answer(request) -> bool:
        return request["method"] == "POST" and "result" in (request["json"] or {})

    def script(request):
        message = request["json"] or {}
        if message.get("method") == "tools/call":
            return pinging(server)
        if is_answer(request) and not refusals:
            refusals.append(request)
            body = b'{"jsonrpc":"2.0","error":{"code":-32000,"message":"not yet: send it again"}}'
            return answer("503 Service Unavailable", body, "Retry-After: 1\r\n")
        if is_answer(request):
            return answer("202 Accepted")
        return None

    server = scripted(script)
    with Client.http(server.url, era="handshake", timeout=LONG) as client:
        calling = threading.Thread(
            target=lambda: ended_within(LONG, lambda: client.call_tool("x")), daemon=True
        )
        calling.start()
        again = server.wait_for(is_answer, "the answer sent again", 2)
        assert again["json"] == {"jsonrpc": "2.0", "id": "server-1", "result": {}}
        server.stop.set()


def test_an_answer_waiting_to_be_sent_again_holds_up_no_other_call(scripted):
    # The server's ping is answered on the session's reader thread; the server refuses that
    # answer 503 with Retry-After: 2 each time.  The pause before sending it again is taken on
    # the notice thread, so the reader goes on: another call's answer reaches its caller at once.
    def script(request):
        message = request["json"] or {}
        if message.get("method") == "tools/call" and message["params"]["name"] == "slow":
            return pinging(server)
        if message.get("method") == "tools/call":
            text = {"content": [{"type": "text", "text": "quick"}]}
            return json_answer({"jsonrpc": "2.0", "id": message["id"], "result": text})
        if request["method"] == "POST" and "result" in message:
            body = b'{"jsonrpc":"2.0","error":{"code":-32000,"message":"not yet: send it again"}}'
            return answer("503 Service Unavailable", body, "Retry-After: 2\r\n")
        return None

    server = scripted(script)
    with Client.http(server.url, era="handshake", timeout=LONG) as client:
        threading.Thread(
            target=lambda: ended_within(LONG, lambda: client.call_tool("slow")), daemon=True
        ).start()
        server.wait_for(lambda r: "result" in (r["json"] or {}), "the ping's answer")
        assert client.call_tool("quick", timeout=WAIT).text == "quick"
        server.stop.set()


def test_a_cancellation_is_not_held_up_by_another_notices_pause_before_it_is_sent_again(scripted):
    # The server refuses a notification 503 with Retry-After: 30; then the user cancels a call.
    # The notice thread used to wait out the refused notice's pause before sending anything it
    # had queued after it: the server heard of the cancellation 30 s late.  It hears of it at once.
    cancelled = threading.Event()

    def script(request):
        message = request["json"] or {}
        if message.get("method") == "notifications/roots/list_changed":
            return answer("503 Service Unavailable", b"", "Retry-After: 30\r\n")
        if message.get("method") == "tools/call":
            return held(server)
        if message.get("method") == "notifications/cancelled":
            cancelled.set()
        return None

    server = scripted(script)
    client = Client.http(server.url, era="handshake", timeout=4 * WAIT, roots=["file:///a"])
    try:
        client.set_roots(["file:///b"])  # refused: to be sent again in 30 s
        server.wait_for(posted("notifications/roots/list_changed"), "the notification")
        call = client.start_tool_call("slow", {})
        server.wait_for(posted("tools/call"), "the call")
        call.cancel()
        assert cancelled.wait(WAIT), "the cancellation waited for the other notice's pause"
    finally:
        ended_within(WAIT, client.close)  # the notice still to be sent again holds up no close()
    assert server.count(posted("notifications/roots/list_changed")) == 1  # not sent after close


def progress_1_and_2_taken(scripted, refused) -> tuple[list[int], int]:
    """Progress 1, then 2, notified by a handshake-era client to a scripted server that answers a
    progress notice 503 with Retry-After: 1 when ``refused(progress, posts)`` (``posts``: the
    progress notices posted so far, this one too), else 202.  Once it has taken both: the progress
    values it took, in its order, and the progress notices posted."""
    accepted: list[int] = []
    both = threading.Event()

    def script(request):
        message = request["json"] or {}
        if message.get("method") != "notifications/progress":
            return None
        progress = message["params"]["progress"]
        if refused(progress, server.count(posted("notifications/progress"))):
            return answer("503 Service Unavailable", b"", "Retry-After: 1\r\n")
        accepted.append(progress)
        if len(accepted) == 2:
            both.set()
        return answer("202 Accepted")

    server = scripted(script)
    with Client.http(server.url, era="handshake", timeout=LONG) as client:
        for progress in (1, 2):
            params = {"progressToken": "the-task", "progress": progress}
            client.connection.notify("notifications/progress", params)
        assert both.wait(WAIT), f"the server took only {accepted}"
        return accepted, server.count(posted("notifications/progress"))


def test_a_notice_refused_again_on_its_resend_stays_before_the_ones_refused_after_it(scripted):
    # 2025-11-25 basic/utilities/progress: "The progress value MUST increase with each
    # notification".  The server refuses progress 1 twice and progress 2 once, each 503 with
    # Retry-After: 1.  Progress 1, refused again when sent again, used to be queued again behind
    # progress 2: the server took 2, then 1.  It waits its new pause in its own turn: 1, then 2.
    refusals = {1: 2, 2: 1}  # progress value: the times it is refused still

    def refused(progress: int, posts: int) -> bool:
        if not refusals[progress]:
            return False
        refusals[progress] -= 1
        return True

    accepted, posts = progress_1_and_2_taken(scripted, refused)
    assert accepted == [1, 2]
    assert posts == 5  # 1 three times, 2 twice


def test_a_notice_sent_while_an_earlier_one_waits_to_be_sent_again_goes_after_it(scripted):
    # 2025-11-25 basic/utilities/progress: "The progress value MUST increase with each
    # notification".  The server refuses progress 1 once, 503 with Retry-After: 1; progress 2,
    # sent meanwhile, used to go at once, so the server took 2, then 1.  It waits behind 1.
    accepted, posts = progress_1_and_2_taken(
        scripted, lambda progress, posts: progress == 1 and posts == 1
    )
    assert accepted == [1, 2]
    assert posts == 3  # 1 twice, 2 once


def test_notices_queued_behind_a_pause_take_no_cancellations_place_and_none_is_dropped(scripted):
    # Progress 0 is refused 503 with Retry-After: 2; a hundred more are sent meanwhile (queued
    # behind it, more than the 64 places of the notices refused and the cancellations), then a
    # call is cancelled.  They used to take those places: 36 were dropped unsent, and so was the
    # cancellation.  The cancellation goes at once, and every progress notice in order.
    count = notices.MAX_WAITING_NOTICES + 36
    accepted: list[int] = []
    every_one = threading.Event()
    cancelled = threading.Event()

    def script(request):
        message = request["json"] or {}
        if message.get("method") == "tools/call":
            return held(server)
        if message.get("method") == "notifications/cancelled":
            cancelled.set()
        if message.get("method") != "notifications/progress":
            return None
        if server.count(posted("notifications/progress")) == 1:
            return answer("503 Service Unavailable", b"", "Retry-After: 2\r\n")
        accepted.append(message["params"]["progress"])
        if len(accepted) == count + 1:
            every_one.set()
        return answer("202 Accepted")

    server = scripted(script)
    client = Client.http(server.url, era="handshake", timeout=4 * WAIT)
    try:
        for progress in range(count + 1):
            params = {"progressToken": "the-task", "progress": progress}
            client.connection.notify("notifications/progress", params)
        call = client.start_tool_call("slow", {})
        server.wait_for(posted("tools/call"), "the call")
        call.cancel()
        assert cancelled.wait(WAIT), "the cancellation was dropped, or waited for the pause"
        assert every_one.wait(WAIT), f"the server took {len(accepted)} of {count + 1}"
        assert accepted == list(range(count + 1))
    finally:
        server.stop.set()
        ended_within(WAIT, client.close)


def test_a_notice_refused_every_time_is_sent_again_max_resends_times_then_dropped(scripted):
    # Refused 503 with Retry-After each time, a notice is sent again notices.MAX_RESENDS times
    # (each after its pause), then dropped (logged); a notice sent after it still gets through.
    refused_each_time = threading.Event()

    def script(request):
        message = request["json"] or {}
        if message.get("method") == "notifications/roots/list_changed":
            if server.count(posted("notifications/roots/list_changed")) > notices.MAX_RESENDS:
                refused_each_time.set()
            return answer("503 Service Unavailable", b"", "Retry-After: 0\r\n")
        return None

    server = scripted(script)
    with Client.http(server.url, era="handshake", timeout=LONG, roots=["file:///a"]) as client:
        client.set_roots(["file:///b"])
        assert refused_each_time.wait(WAIT)
        client.connection.notify("notifications/progress", {"progressToken": "t", "progress": 1})
        server.wait_for(posted("notifications/progress"), "the next notice")
    assert server.count(posted("notifications/roots/list_changed")) == 1 + notices.MAX_RESENDS
