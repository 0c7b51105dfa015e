"""What one session, and one client, may hold of an HTTP server: a session whose request runs is
in use (never swept as idle, its answer never lost); a session ended under a running request
answers it with a JSON-RPC error; one client's sessions and its handlers on the shared pool are
bounded, so that other clients keep being served.  Real servers on 127.0.0.1, raw HTTP."""

from __future__ import annotations

import json
import math
import threading

import pytest
from conftest import WAIT, watch_lock
from http_fixtures import (
    ACCEPT_BOTH,
    JSON_CT,
    RawSession,
    init_params,
    notification,
    raw_session,  # noqa: F401 - fixture
    request,
    serve,  # noqa: F401 - fixture
)
from policy_tokens import Tokens
from test_hardening_streams import FREED_WITHIN, Raw, raw_http, streams_server
from test_http_server import tool
from test_http_state import Clock

from mcp_ref import Server
from mcp_ref.extension import Extension
from mcp_ref.http.server import MemorySessionTable
from mcp_ref.http.server.streams import Stream
from mcp_ref.oauth.resource import ProtectedResource


def run_sweep_now(app) -> None:
    """The sweep of idle sessions runs at most once a second, at an ``initialize``: let the next
    one run whatever the real clock says (the table's clock is the test's)."""
    app._last_sweep = -math.inf


def same_session(raw_session, session: RawSession) -> RawSession:
    """Another HTTP client (its own connections) on ``session``: for a request made meanwhile."""
    other = raw_session(session.url, session.checker)
    other.session_id, other.version = session.session_id, session.version
    return other


class Call(threading.Thread):
    """``session.call(method, params)`` on a thread of its own: ``request_id`` and ``response``."""

    def __init__(self, session: RawSession, method: str, params=None):
        super().__init__(daemon=True)
        self.session, self.method, self.params = session, method, params
        self.request_id = self.response = None
        self.start()

    def run(self) -> None:
        self.request_id, self.response = self.session.call(self.method, self.params)

    def answer(self) -> dict:
        """The JSON answer (the call must end within WAIT)."""
        self.join(WAIT)
        assert not self.is_alive()
        return self.session.result(self.response, self.request_id)[0]


# -- a session whose request runs is in use ----------------------------------------------------------


@pytest.mark.parametrize("inline", [True, False])
def test_a_session_whose_request_runs_is_not_swept_as_idle_and_its_answer_arrives(
    serve, raw_session, inline
):
    """2025-11-25 basic/transports §Sending Messages: to a POSTed request the server "MUST either
    return Content-Type: text/event-stream ... or Content-Type: application/json".  A session
    whose request outlives session_idle_timeout used to be swept at another client's
    initialize: its POST ended 202 with no body, the session 404."""
    events: dict = {}
    clock = Clock()
    table = MemorySessionTable(idle_timeout=60, clock=clock)
    srv = serve(streams_server(events), session_table=table, inline_handlers=inline)
    session = raw_session(srv.mcp)
    session.initialize()
    call = Call(same_session(raw_session, session), "tools/call", tool("hold"))
    assert events["started"].acquire(timeout=WAIT)
    clock.now += 61  # the request has run longer than the idle timeout
    run_sweep_now(srv.app)
    raw_session(srv.mcp).initialize()  # another client's initialize sweeps idle sessions
    assert session.session_id in srv.app.sessions
    clock.now += 40
    events["release"].set()
    answer = call.answer()
    assert answer["result"]["content"][0]["text"] == "released"
    clock.now += 50  # idle from its answer: 50 s ago (90 s since the sweep saw it)
    run_sweep_now(srv.app)
    raw_session(srv.mcp).initialize()
    assert session.call("ping")[1].status_code == 200


@pytest.mark.parametrize("inline", [True, False])
def test_a_session_deleted_under_a_running_request_answers_it_with_an_error(
    serve, raw_session, inline
):
    """The POST of a request whose session ends (DELETE) gets a JSON-RPC error answering it, not
    202 with no body; its handler is cancelled."""
    events: dict = {}
    srv = serve(streams_server(events), inline_handlers=inline)
    session = raw_session(srv.mcp)
    session.initialize()
    call = Call(same_session(raw_session, session), "tools/call", tool("hold"))
    assert events["started"].acquire(timeout=WAIT)
    assert session.delete().status_code == 200
    answer = call.answer()
    assert answer["id"] == call.request_id
    assert answer["error"]["code"] == -31000
    assert answer["error"]["message"].startswith("Session ended before this request was answered")
    assert events["cancelled"].acquire(timeout=WAIT)
    assert session.call("ping")[1].status_code == 404


def test_a_session_ended_while_an_answer_is_on_its_way_still_delivers_it(serve, monkeypatch):
    """The session ends (as a DELETE on another thread would) after a request's answer left the
    session's books but before it reached its POST's stream: the POST still gets the answer (it
    used to get 202 with no body, the stream ended under the answer)."""
    server = Server("race")

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    srv = serve(server, inline_handlers=False)
    client = Caller(srv.port)
    session_id = client.session()
    put = Stream.put
    ended: list = []

    def put_after_the_end(stream: Stream, data: bytes, **how: bool) -> bool:
        if not ended and stream.id.startswith("p") and b'"result"' in data:
            ended.append(srv.app.end_session(session_id))  # in the window the race had
        return put(stream, data, **how)

    monkeypatch.setattr(Stream, "put", put_after_the_end)
    raw = client.post(request("tools/call", tool("echo", {"text": "kept"}), 5), session_id)
    assert ended == [True]
    assert raw.status == 200
    answer = json.loads(raw.body())  # JSON: its only message is the answer
    raw.drop()
    assert answer["id"] == 5 and answer["result"]["content"][0]["text"] == "kept"
    assert client.ping(session_id) == 404


def streams_server_with_echo(events: dict) -> Server:
    """The test server of test_hardening_streams (its ``hold`` tool), with ``echo(text)`` too."""
    server = streams_server(events)

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    return server


# -- one client's sessions --------------------------------------------------------------------------


class Caller:
    """One client as the server tells clients apart: an address (``source``), or a bearer token."""

    def __init__(self, port: int, source: str = "127.0.0.1", token: str | None = None):
        self.port, self.source, self.token = port, source, token

    def post(self, message, session_id: str | None = None, version: str = "2025-11-25", read=True):
        """POST ``message`` on a connection of its own: its response (``read=False``: the socket)."""
        headers = {"Content-Type": JSON_CT, "Accept": ACCEPT_BOTH, "MCP-Protocol-Version": version}
        if session_id is not None:
            headers["Mcp-Session-Id"] = session_id
        if self.token is not None:
            headers["Authorization"] = f"Bearer {self.token}"
        body = json.dumps(message).encode()
        return raw_http(
            self.port, "POST", "/mcp", headers, body, source=self.source, keep=False, read=read
        )

    def initialize(self, version: str = "2025-11-25") -> tuple[Raw, dict]:
        """An ``initialize`` (and, when it succeeds, ``notifications/initialized``): its response
        and body."""
        raw = self.post(request("initialize", init_params(version)), version=version)
        body = json.loads(raw.body())
        raw.drop()
        if raw.status == 200:
            session_id = raw.headers["mcp-session-id"]
            note = self.post(notification("notifications/initialized"), session_id, version)
            assert note.status == 202
            note.drop()
        return raw, body

    def session(self, version: str = "2025-11-25") -> str:
        """A new established session's id."""
        raw, body = self.initialize(version)
        assert raw.status == 200, body
        return raw.headers["mcp-session-id"]

    def ping(self, session_id: str) -> int:
        """The status of a ping on ``session_id``."""
        raw = self.post(request("ping", None, 7), session_id)
        status = raw.status
        raw.drop()
        return status


def two_clients(srv, by: str, tokens: Tokens) -> tuple[Caller, Caller]:
    """Two clients of ``srv``: two addresses, or two principals at one address."""
    if by == "address":
        return Caller(srv.port, "127.0.0.1"), Caller(srv.port, "127.0.0.2")
    # the resource: the name raw_http's Host gives, and the port the server listens on
    tokens.audience = (f"http://127.0.0.1:{srv.port}/mcp",)
    return Caller(srv.port, token="alice-token"), Caller(srv.port, token="bob-token")


def auth_options(by: str, tokens: Tokens) -> dict:
    return {"auth": ProtectedResource(tokens, ["https://as.example"])} if by == "principal" else {}


@pytest.mark.parametrize("by", ["address", "principal"])
def test_one_client_cannot_fill_the_session_table_its_oldest_idle_session_makes_room(serve, by):
    """max_sessions=20: a client may hold a tenth, 2 (max_sessions_per_client's default share).
    One that makes more ends its own least recently used idle session, whose next request gets
    404 (basic/transports §Session Management: the client then "MUST start a new session");
    another client's initialize is never refused.  (It used to get 503 for session_idle_timeout.)"""
    tokens = Tokens()
    srv = serve(Server("sessions"), max_sessions=20, **auth_options(by, tokens))
    greedy, other = two_clients(srv, by, tokens)
    first, second = greedy.session(), greedy.session()
    assert greedy.ping(first) == 200  # first used more recently than second
    made = [greedy.session() for _ in range(20)]  # more than max_sessions, one after another
    assert greedy.ping(second) == 404 and greedy.ping(first) == 404
    assert [greedy.ping(session_id) for session_id in made[-2:]] == [200, 200]
    assert len(srv.app.sessions) == 2
    assert other.ping(other.session()) == 200  # another client is served


def test_a_client_whose_sessions_are_all_in_use_gets_429(serve):
    """A session with a request in progress is not idle: when each of a client's sessions is in
    use, its new one is refused with 429 and Retry-After, -31005 with data.limit."""
    events: dict = {}
    srv = serve(streams_server(events), max_sessions=20)  # 2 a client
    client = Caller(srv.port)
    sessions = [client.session(), client.session()]
    holds = []
    for session_id in sessions:  # one after the other: the first is the least recently used
        holds.append(client.post(request("tools/call", tool("hold"), 9), session_id, read=False))
        assert events["started"].acquire(timeout=WAIT)
    raw, body = client.initialize()
    assert raw.status == 429 and raw.headers["retry-after"] == "5"
    assert body["error"]["code"] == -31005 and body["error"]["data"] == {"limit": 2}
    assert body["error"]["message"].startswith("Too many sessions: one client may hold 2")
    assert Caller(srv.port, "127.0.0.2").session()  # another client is served
    events["release"].set()
    for sock in holds:
        hold = Raw(sock)
        assert hold.status == 200 and json.loads(hold.body())["result"]
        hold.drop()
    assert client.session()  # once idle, the least recently used makes room
    assert [client.ping(s) for s in sessions] == [404, 200]


@pytest.mark.parametrize("setting, error", [(0, ValueError), (1.5, ValueError), ("all", TypeError)])
@pytest.mark.parametrize("name", ["max_sessions_per_client", "max_handlers_per_client"])
def test_a_meaningless_client_cap_is_refused_at_once(name, setting, error):
    with pytest.raises(error, match=name):
        Server("caps").wsgi_app(**{name: setting})


# -- one client's share of the handler pool ---------------------------------------------------------


class LegacyOn:
    """A raw 2024-11-05 session from ``source``: its GET stream and the endpoint to POST to."""

    def __init__(self, port: int, source: str):
        self.port, self.source = port, source
        self.stream = raw_http(port, "GET", "/sse", {"Accept": "text/event-stream"}, source=source)
        assert self.stream.status == 200
        endpoint = self.stream.event()
        assert endpoint is not None and endpoint["event"] == "endpoint"
        self.endpoint = endpoint["data"]
        self.post(request("initialize", init_params("2024-11-05"), "init"))
        assert self.stream.message()["id"] == "init"
        self.post(notification("notifications/initialized"))

    def post(self, message) -> None:
        headers = {"Content-Type": JSON_CT}
        body = json.dumps(message).encode()
        raw = raw_http(self.port, "POST", self.endpoint, headers, body, source=self.source)
        assert raw.status == 202, raw.status
        raw.drop()


def test_one_legacy_client_cannot_queue_unbounded_work_on_the_handler_pool(serve):
    """handler_threads=8: a client may have a quarter, 2, running or waiting (the default
    max_handlers_per_client).  A 2024-11-05 client's POSTs are answered 202 at once, so it could
    queue any number of slow calls: each past its share is answered -31000 Server busy on its
    stream, and another client's call is served at once (it used to wait behind them)."""
    events: dict = {}
    server = streams_server_with_echo(events)

    srv = serve(server, handler_threads=8)
    handlers = watch_lock(srv.app._handlers)  # its count is kept under it
    greedy, other = LegacyOn(srv.port, "127.0.0.1"), LegacyOn(srv.port, "127.0.0.2")
    for n in range(10):
        greedy.post(request("tools/call", tool("hold"), n))
    for _ in range(2):
        assert events["started"].acquire(timeout=WAIT)
    refused = [greedy.stream.message() for _ in range(8)]
    assert sorted(m["id"] for m in refused) == list(range(2, 10))
    for message in refused:
        assert message["error"]["code"] == -31000 and message["error"]["data"] == {"limit": 2}
    assert srv.app.handlers_held("http-client:127.0.0.1") == 2
    other.post(request("tools/call", tool("echo", {"text": "served"}), "e"))
    answer = other.stream.message()
    assert answer["id"] == "e" and answer["result"]["content"][0]["text"] == "served"
    events["release"].set()
    assert sorted(greedy.stream.message()["id"] for _ in range(2)) == [0, 1]
    assert handlers(lambda: srv.app.handlers_held() == 0, FREED_WITHIN)
    greedy.post(request("tools/call", tool("echo", {"text": "again"}), "g"))
    assert greedy.stream.message()["result"]["content"][0]["text"] == "again"
    greedy.stream.drop()
    other.stream.drop()


def test_a_2024_11_05_batch_past_the_share_is_answered_in_one_array(serve):
    """handler_threads=8 (a share of 2): a 2024-11-05 batch of 4 calls has 2 refused.  JSON-RPC 2.0
    §6: the batch gets one array, the refusals (-31000) in it beside the answers; they used to come
    first as an array of their own."""
    server = Server("legacy-batch")

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    srv = serve(server, handler_threads=8)
    client = LegacyOn(srv.port, "127.0.0.1")
    client.post([request("tools/call", tool("echo", {"text": str(n)}), n) for n in range(4)])
    answers = client.stream.message()
    assert isinstance(answers, list) and sorted(answer["id"] for answer in answers) == [0, 1, 2, 3]
    busy = [answer for answer in answers if "error" in answer]
    assert len(busy) == 2 and all(answer["error"]["data"] == {"limit": 2} for answer in busy)
    client.post(request("ping", None, "after"))
    assert client.stream.message() == {"jsonrpc": "2.0", "id": "after", "result": {}}
    client.stream.drop()


def test_the_requests_of_a_batch_past_the_share_are_answered_server_busy_in_its_array(serve):
    """2025-03-26 batches run on the shared pool: those of its requests past the client's share
    (2: handler_threads=8) are answered -31000 in the batch's one array; ping is answered at
    once, never queued, so it takes no place."""
    srv = serve(handler_threads=8)
    handlers = watch_lock(srv.app._handlers)  # its count is kept under it
    client = Caller(srv.port)
    session_id = client.session("2025-03-26")
    batch = [request("tools/call", tool("echo", {"text": str(n)}), n) for n in range(1, 4)]
    batch.append(request("ping", None, 4))
    raw = client.post(batch, session_id, "2025-03-26")
    assert raw.status == 200
    answers = {answer["id"]: answer for answer in json.loads(raw.body())}
    raw.drop()
    assert sorted(answers) == [1, 2, 3, 4]
    assert [answers[n]["result"]["content"][0]["text"] for n in (1, 2)] == ["1", "2"]
    assert answers[3]["error"]["code"] == -31000 and answers[3]["error"]["data"] == {"limit": 2}
    assert answers[4]["result"] == {}
    assert handlers(lambda: srv.app.handlers_held() == 0, FREED_WITHIN)


def test_a_batchs_jobs_are_counted_once_while_it_is_dispatched(serve):
    """handler_threads=12 (a share of 3): a 2025-03-26 batch of 2 calls holds 2 places; while it is
    being dispatched (held between its two submissions), the client's third call fits.  Each job
    takes over its request's place: it used to be counted twice until the whole batch was
    dispatched, and the third call was answered -31000 Server busy."""
    events: dict = {}
    server = streams_server_with_echo(events)

    srv = serve(server, handler_threads=12, inline_handlers=False)
    handlers = watch_lock(srv.app._handlers)  # its count is kept under it
    client = Caller(srv.port)
    session_id = client.session("2025-03-26")
    pool = srv.app.handler_pool()
    submit = pool.submit
    submitted = threading.Semaphore(0)
    go_on = threading.Event()

    dispatching: list = []  # the server's thread dispatching the batch (its first submitter)

    def submit_and_hold_the_second(fn, /, *args, **kwargs):
        future = submit(fn, *args, **kwargs)
        if not dispatching:
            dispatching.append(threading.current_thread())
            submitted.release()
            go_on.wait(WAIT)  # the batch's dispatch stops here, between its submissions
        return future

    monkeypatch_submit = pytest.MonkeyPatch()
    monkeypatch_submit.setattr(pool, "submit", submit_and_hold_the_second)
    try:
        calls = [
            request("tools/call", tool("hold"), 1),
            request("tools/call", tool("echo", {"text": "2"}), 2),
        ]
        answers: list = []
        batch = threading.Thread(
            target=lambda: answers.append(client.post(calls, session_id, "2025-03-26")),
            daemon=True,
        )
        batch.start()
        assert submitted.acquire(timeout=WAIT)  # the batch's first job is on the pool
        assert events["started"].acquire(timeout=WAIT)  # and runs (until the test ends it)
        third = client.post(
            request("tools/call", tool("echo", {"text": "3"}), 3), session_id, "2025-03-26"
        )
        body = json.loads(third.body())
        third.drop()
        assert body.get("result", body)["content"][0]["text"] == "3"
    finally:
        go_on.set()
        events["release"].set()
        monkeypatch_submit.undo()
    batch.join(WAIT)
    assert answers and sorted(a["id"] for a in json.loads(answers[0].body())) == [1, 2]
    answers[0].drop()
    assert handlers(lambda: srv.app.handlers_held() == 0, FREED_WITHIN)


def test_a_batch_whose_kept_requests_are_cancelled_still_gets_its_refusals(serve):
    """max_handlers_per_client=1: a 2025-03-26 batch of two calls has its second refused; the
    client cancels the first, which then has no answer.  The batch's POST still gets its one array,
    the refusal in it (it used to get 202 with no body, the refusal lost)."""
    events: dict = {}
    server = streams_server_with_echo(events)

    srv = serve(server, max_handlers_per_client=1)
    client = Caller(srv.port)
    session_id = client.session("2025-03-26")
    calls = [
        request("tools/call", tool("hold"), 1),
        request("tools/call", tool("echo", {"text": "x"}), 2),
    ]
    batch = client.post(calls, session_id, "2025-03-26", read=False)
    assert events["started"].acquire(timeout=WAIT)
    cancel = notification("notifications/cancelled", {"requestId": 1, "reason": "test"})
    note = client.post(cancel, session_id, "2025-03-26")
    assert note.status == 202
    note.drop()
    assert events["cancelled"].acquire(timeout=WAIT)
    answered = Raw(batch)
    assert answered.status == 200
    answers = []
    if answered.headers["content-type"].startswith("text/event-stream"):
        while (event := answered.event()) is not None:
            if event.get("data"):
                answers.append(json.loads(event["data"]))
    else:
        answers.append(json.loads(answered.body()))
    answered.drop()
    assert len(answers) == 1 and isinstance(answers[0], list)
    assert [(m["id"], m["error"]["code"]) for m in answers[0]] == [(2, -31000)]


def test_a_request_past_the_share_without_inline_handlers_is_answered_server_busy(serve):
    """inline_handlers=False: every request runs on the shared pool; one past its client's share
    is answered at once with -31000 (JSON), while another client is served."""
    events: dict = {}
    server = streams_server_with_echo(events)

    srv = serve(server, handler_threads=8, inline_handlers=False)
    client, other = Caller(srv.port), Caller(srv.port, "127.0.0.2")
    session_id = client.session()
    holds = [
        client.post(request("tools/call", tool("hold"), n), session_id, read=False) for n in (1, 2)
    ]
    for _ in holds:
        assert events["started"].acquire(timeout=WAIT)
    raw = client.post(request("tools/call", tool("echo", {"text": "x"}), 3), session_id)
    busy = json.loads(raw.body())
    raw.drop()
    assert raw.status == 200 and busy["id"] == 3 and busy["error"]["code"] == -31000
    served = other.post(request("tools/call", tool("echo", {"text": "y"}), 4), other.session())
    assert json.loads(served.body())["result"]["content"][0]["text"] == "y"
    served.drop()
    events["release"].set()
    for sock in holds:
        hold = Raw(sock)
        assert hold.status == 200
        hold.drop()


def fill_the_handler_pool(srv, events: dict, *, batches: bool) -> list:
    """handler_threads=8 (a share of 2 a client): four clients each run two ``hold`` calls on the
    shared pool, 2025-03-26 batches (``batches``) or single POSTs (``inline_handlers=False``), until
    the test releases them; their sockets."""
    holds = []
    for n in range(4):
        client = Caller(srv.port, f"127.0.0.{n + 2}")
        version = "2025-03-26" if batches else "2025-11-25"
        session_id = client.session(version)
        calls = [request("tools/call", tool("hold"), k) for k in (1, 2)]
        for message in [calls] if batches else calls:
            holds.append(client.post(message, session_id, version, read=False))
    for _ in range(8):
        assert events["started"].acquire(timeout=WAIT)
    return holds


def test_initialize_runs_on_its_posts_thread_not_behind_other_clients_pooled_calls(serve):
    """McpWsgiApp: with inline_handlers (the default) a POSTed request's handler runs on the POST's
    own thread; handler_threads is for batches, the legacy transport and inline_handlers=False.
    ``initialize`` used to go to the shared pool: with every thread of it running other clients'
    calls (each client within its share), a new client's initialize waited for them all."""
    events: dict = {}
    srv = serve(streams_server_with_echo(events), handler_threads=8)
    holds = fill_the_handler_pool(srv, events, batches=True)
    try:
        newcomer = Caller(srv.port, "127.0.0.9")
        session_id = newcomer.session()  # at once, while every pool thread still holds
        raw = newcomer.post(request("tools/call", tool("echo", {"text": "in"}), 3), session_id)
        assert json.loads(raw.body())["result"]["content"][0]["text"] == "in"
        raw.drop()
    finally:
        events["release"].set()
    for sock in holds:  # each ran until released: the newcomer was served meanwhile
        hold = Raw(sock)
        answers = json.loads(hold.body())
        hold.drop()
        assert [a["result"]["content"][0]["text"] for a in answers] == ["released"] * 2


def test_a_pooled_initialize_waits_at_most_the_handshake_timeout(serve):
    """inline_handlers=False: ``initialize`` runs on the shared pool; while every thread of it is
    taken, its POST waits at most handshake_timeout (the time its session's place in the table is
    held), then gets 503 with Retry-After and the place is free again.  It used to wait with no
    bound, its client having gone or not."""
    events: dict = {}
    srv = serve(
        streams_server_with_echo(events),
        handler_threads=8,
        inline_handlers=False,
        handshake_timeout=0.5,
    )
    holds = fill_the_handler_pool(srv, events, batches=False)
    try:
        raw, body = Caller(srv.port, "127.0.0.9").initialize()
        assert raw.status == 503 and raw.headers["retry-after"] == "5"
        assert body["error"]["message"].startswith("Service Unavailable: initialize was not served")
        assert "mcp-session-id" not in raw.headers
        assert len(srv.app.sessions) == 4
    finally:
        events["release"].set()
    for sock in holds:
        Raw(sock).drop()
    assert Caller(srv.port, "127.0.0.9").session()  # the pool free, it is served


@pytest.mark.parametrize("stateless", [False, True])
def test_a_request_the_closed_pool_refuses_is_answered_server_busy(serve, stateless):
    """After ``app.close()`` (as ``run_http`` does once it stops accepting) a kept-alive connection
    may still POST: a request whose handler would run on the shut pool is answered -31000 at once
    (JSON-RPC 2.0 §5: a call "MUST" get a Response).  It used to get nothing, so its POST waited
    for ever: an ``initialize``, a stateless call (``inline_handlers=False``)."""
    srv = serve(streams_server_with_echo({}), inline_handlers=False, stateless=stateless)
    client = Caller(srv.port)
    echo = request("tools/call", tool("echo", {"text": "x"}), 3)
    if stateless:
        before = client.post(echo)
        assert json.loads(before.body())["result"]["content"][0]["text"] == "x"
        before.drop()
    else:
        client.session()  # its initialize ran on the pool
    srv.app.close()
    raw = client.post(echo if stateless else request("initialize", init_params(), 0))
    answer = json.loads(raw.body())
    raw.drop()
    assert raw.status == 200 and "mcp-session-id" not in raw.headers
    assert answer["error"]["code"] == -31000
    assert answer["error"]["message"] == "Server busy: the server is shutting down"


class CountInitializes(Extension):
    """Counts the ``initialize`` handlers that run (``runs``)."""

    name = "count-initializes"

    def __init__(self) -> None:
        self.runs = 0

    def intercept_request(self, call, proceed):
        """Count an ``initialize``, then go on."""
        if call.method == "initialize":
            self.runs += 1
        return proceed()


def test_pooled_initializes_a_client_leaves_are_within_its_share_and_never_run(serve):
    """inline_handlers=False: an ``initialize`` goes to the shared pool within its client's share
    (max_handlers_per_client, 2 of handler_threads=8), as every pooled request does: past it,
    -31000 Server busy.  One that was not served in time (503, its session abandoned) never runs.
    Its job used to be counted without a cap and to run anyway once a thread was free: a client
    that sent initializes and left grew the pool's queue without bound."""
    events: dict = {}
    server = streams_server_with_echo(events)
    counter = server.add_extension(CountInitializes())
    srv = serve(server, handler_threads=8, inline_handlers=False, handshake_timeout=0.5)
    handlers = watch_lock(srv.app._handlers)  # its count is kept under it
    holds = fill_the_handler_pool(srv, events, batches=False)
    leaver = Caller(srv.port, "127.0.0.9")
    try:
        for _ in range(2):  # each waits for a pool thread, in its client's share: 503
            raw, body = leaver.initialize()
            assert raw.status == 503, body
        assert srv.app.handlers_held("http-client:127.0.0.9") == 2
        # past its share: refused at once, nothing queued
        raw = leaver.post(request("initialize", init_params("2025-11-25")))
        body = json.loads(raw.body())
        raw.drop()
        assert raw.status == 200 and body["error"]["code"] == -31000
        assert body["error"]["data"] == {"limit": 2}
        assert "mcp-session-id" not in raw.headers
        assert srv.app.handlers_held("http-client:127.0.0.9") == 2
        assert len(srv.app.session_table) == 4
    finally:
        events["release"].set()
    for sock in holds:
        Raw(sock).drop()
    # the two queued jobs leave the queue without running their handlers
    assert handlers(lambda: srv.app.handlers_held("http-client:127.0.0.9") == 0)
    assert counter.runs == 4  # the four clients that filled the pool
    assert leaver.session()  # the pool free, it is served
    assert counter.runs == 5


class HoldInitialize(Extension):
    """Holds each ``initialize`` until ``release`` is set (a slow extension, a lifespan),
    telling ``started``."""

    name = "hold-initialize"

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()

    def intercept_request(self, call, proceed):
        """Hold an ``initialize`` of the client named ``slow``, then go on."""
        if call.method == "initialize" and call.params["clientInfo"]["name"] == "slow":
            self.started.set()
            assert self.release.wait(WAIT)
        return proceed()


def test_an_initialize_that_outlasts_its_place_is_not_registered_past_max_sessions(serve):
    """max_sessions=2.  An ``initialize`` holds its place in the table for handshake_timeout; one
    whose handler runs longer loses it, and two other clients fill the table meanwhile.  Its
    session is then abandoned with 503 and Retry-After, the table within max_sessions.  It used to
    be registered all the same: three sessions in a table of two."""
    clock = Clock()
    table = MemorySessionTable(max_sessions=2, handshake_timeout=5, clock=clock)
    server = Server("slow-initialize")
    holder = server.add_extension(HoldInitialize())
    srv = serve(server, session_table=table)
    params = {**init_params("2025-11-25"), "clientInfo": {"name": "slow", "version": "1"}}
    slow = threading.Thread(
        target=lambda: results.append(
            Caller(srv.port, "127.0.0.9").post(request("initialize", params))
        ),
        daemon=True,
    )
    results: list = []
    slow.start()
    try:
        assert holder.started.wait(WAIT)
        clock.now += 6  # its place lapses
        for n in (2, 3):
            Caller(srv.port, f"127.0.0.{n}").session()
    finally:
        holder.release.set()
    slow.join(WAIT)
    assert not slow.is_alive()
    raw = results[0]
    body = json.loads(raw.body())
    raw.drop()
    assert raw.status == 503 and raw.headers["retry-after"] == "5"
    assert body["error"]["message"].startswith("Service Unavailable")
    assert "mcp-session-id" not in raw.headers
    assert len(table) == 2 and len(srv.app.sessions) == 2
