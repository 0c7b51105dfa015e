"""Issue 32: admission under load.  Concurrent ``initialize``s never overshoot ``max_sessions`` (in
memory and in the shared Redis table), one caller cannot take every slot of the HTTP server with
slow calls (``max_requests_per_client``: 429 with ``Retry-After`` past its share), and a body over
``max_body_size`` is answered 413 in a way a client that sends its whole body first still reads.

Real sockets on 127.0.0.1 (and 127.0.0.2, another loopback address, as another client), a real
redis-server; every wait is bounded and waits for an event.
"""

from __future__ import annotations

import asyncio
import json
import threading
from urllib.parse import urlsplit

import pytest
import requests
from conftest import WAIT, run_threads, watch_lock
from http_fixtures import ACCEPT_BOTH, LATEST, TIMEOUT, init_params, request, serve  # noqa: F401 - a fixture
from policy_tokens import Tokens
from redis_fixture import redis_server, redis_url  # noqa: F401  (fixtures)
from test_hardening_streams import FREED_WITHIN, Raw, listen, raw_http, streams_server
from test_legacy_sse import legacy_raw  # noqa: F401 - a fixture

from mcp_ref import ConnectionLimits, Server
from mcp_ref.http.server import MemorySessionTable
from mcp_ref.oauth.resource import ProtectedResource

# -- concurrent initializes: exactly max_sessions admitted -------------------------------------------

CAP = 12
RUSH = 20


class DecidedFirst:
    """A session table that lets no session be recorded (``add``) before every one of ``expected``
    admissions (``make_room``) has been decided: the widest window between a place being granted
    and the session being recorded, so a count checked apart from the grant would admit them all.
    An admission is one session id's: the place asked again at ``register`` is not another."""

    def __init__(self, table, expected: int):
        self.table = table
        self.shared = table.shared
        self.expected = expected
        self.decided: set = set()
        self.all_decided = threading.Event()
        self.lock = threading.Lock()

    def make_room(self, *args):
        try:
            return self.table.make_room(*args)
        finally:
            with self.lock:
                self.decided.add(args)
                if len(self.decided) >= self.expected:
                    self.all_decided.set()

    def add(self, *args):
        assert self.all_decided.wait(WAIT), (
            f"only {len(self.decided)} of {self.expected} admissions were decided"
        )
        return self.table.add(*args)

    def __getattr__(self, name):
        return getattr(self.table, name)

    def __len__(self) -> int:
        return len(self.table)


def initialize_at_once(mcp_url: str, count: int) -> list[requests.Response]:
    """``count`` initializes, each on its own connection, sent together (a Barrier releases them)."""
    barrier = threading.Barrier(count)
    headers = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH}

    def one(i: int) -> requests.Response:
        barrier.wait(WAIT)
        return requests.post(
            mcp_url,
            json=request("initialize", init_params(), i + 1),
            headers=headers,
            timeout=TIMEOUT,
        )

    return run_threads(one, count)


@pytest.fixture
def request_fixture(request):
    """pytest's ``request`` (this module's ``request`` builds JSON-RPC requests)."""
    return request


@pytest.mark.parametrize("where", ["memory", "redis"])
def test_concurrent_initializes_admit_exactly_max_sessions(serve, where, request_fixture):
    server = Server(
        "admission",
        state=request_fixture.getfixturevalue("redis_url") if where == "redis" else None,
    )
    if where == "redis":
        state = server.shared_state
        table = DecidedFirst(state.session_table(max_sessions=CAP), RUSH)
        options = {"session_table": table, "event_store": state.event_store()}
    else:
        table = DecidedFirst(MemorySessionTable(max_sessions=CAP), RUSH)
        options = {"session_table": table}
    # one address: every initialize is one client's (max_sessions_per_client=None: the table's cap)
    srv = serve(server, max_sessions=CAP, max_sessions_per_client=None, **options)
    assert srv.app.shared is (where == "redis")
    answers = initialize_at_once(srv.mcp, RUSH)
    admitted = [answer for answer in answers if answer.status_code == 200]
    refused = [answer for answer in answers if answer.status_code != 200]
    assert len(admitted) == CAP, [answer.status_code for answer in answers]
    assert len(table) == CAP
    for (
        answer
    ) in refused:  # the documented refusal: the table is full of sessions being initialized
        assert answer.status_code == 503 and answer.headers["Retry-After"] == "5"
        assert answer.json()["error"]["message"] == "Service Unavailable: too many sessions"
    for answer in admitted:  # each admitted session is served
        session = answer.headers["Mcp-Session-Id"]
        headers = {
            "Content-Type": "application/json",
            "Accept": ACCEPT_BOTH,
            "Mcp-Session-Id": session,
            "MCP-Protocol-Version": LATEST,
        }
        ping = requests.post(
            srv.mcp, json=request("ping", None, 99), headers=headers, timeout=TIMEOUT
        )
        assert ping.status_code == 200 and ping.json()["result"] == {}
    assert len(table) == CAP


def test_a_place_held_for_a_failed_initialize_is_free_again(serve):
    srv = serve(Server("admission"), max_sessions=1)
    headers = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH}
    bad = requests.post(
        srv.mcp,
        json=request("initialize", {"protocolVersion": 7}),
        headers=headers,
        timeout=TIMEOUT,
    )
    assert "error" in bad.json() and "Mcp-Session-Id" not in bad.headers
    assert len(srv.app.session_table) == 0
    good = requests.post(
        srv.mcp, json=request("initialize", init_params()), headers=headers, timeout=TIMEOUT
    )
    assert good.status_code == 200 and good.headers["Mcp-Session-Id"]


@pytest.mark.parametrize("where", ["memory", "redis"])
def test_a_held_place_counts_is_never_evicted_and_is_freed_by_add_or_remove(where, request_fixture):
    if where == "redis":
        table = Server(
            "admission", state=request_fixture.getfixturevalue("redis_url")
        ).shared_state.session_table(max_sessions=2)
    else:
        table = MemorySessionTable(max_sessions=2)
    assert table.make_room("a") == (True, None) and table.make_room("b") == (True, None)
    assert len(table) == 2
    assert table.make_room("c") == (False, None)  # both places held by initializes being answered
    table.add("a")  # recorded: now the oldest session that never came back, the one to evict
    assert table.make_room("c") == (True, "a")
    assert table.remove("b") and len(table) == 1  # an initialize that failed lets its place go
    assert table.make_room("d") == (True, None) and len(table) == 2


# -- a body over max_body_size: the client reads its 413 ---------------------------------------------

BODY_LIMIT = 64 * 1024
#: Over the WSGI server's own drain of an unread body (``wsgi_server.DRAIN_LIMIT``, 1 MiB): only the
#: application reading it lets a client that sends its whole body first read the answer.
OVERSIZE = 4 * 1024 * 1024


def oversize_body() -> bytes:
    """A whole JSON-RPC request, ``OVERSIZE`` bytes long."""
    padding = "x" * OVERSIZE
    return json.dumps(
        request("tools/call", {"name": "echo", "arguments": {"text": padding}}, 7)
    ).encode()


def post_path(srv, kind: str, legacy_raw) -> tuple[str, object]:
    """The path a POST of ``kind`` goes to, and the legacy session behind it (None for Streamable HTTP)."""
    if kind == "streamable":
        return "/mcp", None
    session = legacy_raw(srv.url)
    session.initialize("2024-11-05")
    parts = urlsplit(session.endpoint)
    return f"{parts.path}?{parts.query}", session


def assert_payload_too_large(status: int, body: bytes) -> None:
    assert status == 413, status
    error = json.loads(body)["error"]
    assert (
        error["code"] == -32600
        and error["message"] == f"Payload Too Large: the limit is {BODY_LIMIT} bytes"
    )


def assert_still_serving(srv, kind: str, session) -> None:
    """The server answers a plain request of the same kind after the refusal."""
    if kind == "legacy":
        assert session.post(request("ping", None, "after")).status_code == 202
        assert session.next_message() == {"jsonrpc": "2.0", "id": "after", "result": {}}
        return
    headers = {"Content-Type": "application/json", "Accept": ACCEPT_BOTH}
    answer = requests.post(
        srv.mcp, json=request("initialize", init_params(), 1), headers=headers, timeout=TIMEOUT
    )
    assert answer.status_code == 200 and answer.json()["result"]["protocolVersion"] == LATEST


@pytest.mark.parametrize("kind", ["streamable", "legacy"])
def test_a_client_that_sends_its_whole_oversize_body_then_reads_gets_the_413(
    serve, legacy_raw, kind
):
    srv = serve(max_body_size=BODY_LIMIT)
    path, session = post_path(srv, kind, legacy_raw)
    headers = {
        "Content-Type": "application/json",
        "Accept": ACCEPT_BOTH,
        "MCP-Protocol-Version": LATEST,
    }
    raw = raw_http(srv.port, "POST", path, headers, oversize_body())  # sendall, then read
    assert_payload_too_large(raw.status, raw.body())
    assert "close" not in raw.headers.get("connection", "")  # the body was read whole: kept alive
    raw.sock.sendall(b"GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n")
    assert Raw(raw.sock).status == 404  # the same connection serves its next request
    raw.drop()
    assert_still_serving(srv, kind, session)


def httpx_module():
    """httpx, or httpx2 (what the SDK 2.x ships) when httpx itself is not installed."""
    try:
        import httpx
    except ImportError:
        import httpx2 as httpx
    return httpx


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["streamable", "legacy"])
def test_an_async_httpx_client_reads_the_413(serve, legacy_raw, kind):
    """The issue's interop fault: an httpx ``AsyncClient`` saw ``ReadError('')`` instead of the 413."""
    httpx = httpx_module()
    srv = serve(max_body_size=BODY_LIMIT)
    path, session = post_path(srv, kind, legacy_raw)

    async def post() -> tuple[int, bytes]:
        async with httpx.AsyncClient(timeout=WAIT) as client:
            answer = await client.post(
                srv.url + path,
                content=oversize_body(),
                headers={
                    "Content-Type": "application/json",
                    "Accept": ACCEPT_BOTH,
                    "MCP-Protocol-Version": LATEST,
                },
            )
            return answer.status_code, answer.content

    assert_payload_too_large(*asyncio.run(post()))
    assert_still_serving(srv, kind, session)


# -- one caller's share of the server's slots --------------------------------------------------------

#: Connections of the test's server: a quarter (the default share) is 2 requests in flight a client.
SLOTS = 8
SHARE = 2


def share_server(events: dict) -> Server:
    """A tool that blocks until the test releases it (``hold``), and ``echo``."""
    server = streams_server(events)

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    return server


def tool_call(
    port: int, name: str, request_id: int, *, source: str, token: str | None, read: bool = True
):
    """A stateless 2025-11-25 ``tools/call`` on a new connection from ``source`` (with a bearer token)."""
    headers = {
        "Content-Type": "application/json",
        "Accept": ACCEPT_BOTH,
        "MCP-Protocol-Version": LATEST,
    }
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    arguments = {"text": "still served"} if name == "echo" else {}
    body = json.dumps(
        request("tools/call", {"name": name, "arguments": arguments}, request_id)
    ).encode()
    return raw_http(port, "POST", "/mcp", headers, body, source=source, read=read)


def echoed(raw: Raw) -> bool:
    """True when ``raw`` is a 200 whose JSON answer is the echo tool's."""
    answer = json.loads(raw.body())
    raw.drop()
    return raw.status == 200 and answer["result"]["content"][0]["text"] == "still served"


@pytest.mark.parametrize("by", ["address", "principal"])
def test_one_caller_cannot_take_every_slot_with_slow_calls(serve, by):
    """Issue 32, item 2: the greedy caller fills its share with calls that block; past it, 429 with
    Retry-After; another caller (another address, or another principal at the same address) is
    still served; once the calls end, everyone is."""
    events: dict = {}
    options: dict = {}
    tokens = Tokens()
    if by == "principal":
        options["auth"] = ProtectedResource(tokens, ["https://as.example"])
    srv = serve(
        share_server(events),
        stateless=True,
        limits=ConnectionLimits(max_connections=SLOTS),
        **options,
    )
    in_flight = watch_lock(srv.app._requests)  # its count is kept under it
    # the resource: the name raw_http's Host gives, and the port the server listens on
    tokens.audience = (f"http://127.0.0.1:{srv.port}/mcp",)
    greedy = {"source": "127.0.0.1", "token": "alice-token" if by == "principal" else None}
    other = {
        "source": "127.0.0.1" if by == "principal" else "127.0.0.2",
        "token": "bob-token" if by == "principal" else None,
    }
    held = [tool_call(srv.port, "hold", n, read=False, **greedy) for n in range(1, SHARE + 1)]
    for _ in held:
        assert events["started"].acquire(timeout=WAIT)
    for n in range(
        SLOTS
    ):  # it tries to take every slot of the server: each one past its share is refused
        refused = tool_call(srv.port, "hold", 10 + n, **greedy)
        assert refused.status == 429 and refused.headers["retry-after"] == "1"
        error = json.loads(refused.body())["error"]
        assert error["code"] == -31005 and error["data"] == {"limit": SHARE}
        assert error["message"].startswith(
            "Too many requests in flight: one client may have 2 at once"
        )
        refused.drop()
    assert echoed(tool_call(srv.port, "echo", 20, **other))  # another caller is served meanwhile
    assert srv.app.requests_in_flight() == SHARE
    events["release"].set()
    for sock in held:
        answer = Raw(sock)
        assert (
            answer.status == 200
            and json.loads(answer.body())["result"]["content"][0]["text"] == "released"
        )
        answer.drop()
    assert in_flight(lambda: srv.app.requests_in_flight() == 0, FREED_WITHIN)
    assert echoed(
        tool_call(srv.port, "echo", 12, **greedy)
    )  # and, once its calls ended, the greedy one
    assert echoed(tool_call(srv.port, "echo", 13, **other))


def test_a_stream_counts_as_a_stream_not_as_a_request_in_flight(serve):
    """``subscriptions/listen`` POSTs become long-lived streams: bounded by max_streams_per_client
    (and ended at the connection cap to make room), not by the requests in flight."""
    srv = serve(
        share_server({}),
        stateless=True,
        keepalive=60,
        limits=ConnectionLimits(max_connections=SLOTS),
    )
    streams = [
        listen(srv.port, n) for n in range(1, SHARE + 2)
    ]  # one more than the share of requests
    assert srv.app.requests_in_flight() == 0 and srv.app.streams_held() == SHARE + 1
    assert echoed(tool_call(srv.port, "echo", 9, source="127.0.0.1", token=None))
    for stream in streams:
        stream.drop()


@pytest.mark.parametrize(
    "setting, error",
    [(0, ValueError), (1.5, ValueError), (0.0, ValueError), ("all", TypeError), (True, TypeError)],
)
def test_a_meaningless_request_share_is_refused_at_once(setting, error):
    with pytest.raises(error, match="max_requests_per_client"):
        Server("share").wsgi_app(max_requests_per_client=setting)
