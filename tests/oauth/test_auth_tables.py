"""Issue 22: the demo authorization server's tables (clients, codes, access and refresh tokens)
behind one declared interface (mcp_ref.workbench.auth_tables.AuthTable), on both backends: this
process's memory and a real Redis (mcp_ref.state.redis.auth_tables).

One contract suite runs against both; then two authorization servers sharing one Redis in this
process; then two gunicorn deployments of the protected demo (``mcp_ref.workbench.demo:
protected_wsgi_app``) sharing a Redis, with the same two without it as the control (each worker
its own tables: ``invalid_client`` / ``invalid_token`` on the other, the single-process behaviour).
"""

from __future__ import annotations

import importlib.util
import threading
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from conftest import WAIT
from redis_fixture import redis_server, redis_url  # noqa: F401 - fixtures
from test_http_deploy import free_port, start_gunicorn, stop

from mcp_ref.oauth import pkce
from mcp_ref.workbench.auth_tables import MemoryAuthTable
from mcp_ref.workbench.demo_auth_server import DEMO_CLIENT_ID, DemoAuthorizationServer

needs_redis = pytest.mark.skipif(
    importlib.util.find_spec("redis") is None, reason="redis-py is not installed"
)


class FakeClock:
    """Seconds the test moves by hand (expiry without sleeping)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", pytest.param("redis", marks=needs_redis)])
def make_table(request):
    """``make_table(limit)``: an empty table of the backend under test, and its clock."""
    made = []

    def make(limit: int = 100, name: str = "t"):
        clock = FakeClock()
        if request.param == "memory":
            return MemoryAuthTable(limit, clock=clock), clock
        from mcp_ref.state.redis import RedisState

        state = RedisState.from_url(request.getfixturevalue("redis_url"))
        made.append(state)
        return state.auth_table(name, limit=limit, clock=clock), clock

    yield make
    for state in made:
        state.close()


# -- the contract, on both backends ----------------------------------------------------------------


def test_a_value_is_json_copied_in_and_out(make_table):
    table, _ = make_table()
    value = {"client_id": "c", "redirect_uris": ["https://a.example/cb"], "expires": None}
    table.put("k:with:colons", value)
    got = table.get("k:with:colons")
    assert got == value and got is not value
    got["client_id"] = "changed"
    assert table.get("k:with:colons")["client_id"] == "c"  # what the caller changes is its own copy
    assert table.get("missing") is None and len(table) == 1


def test_take_gives_a_value_once(make_table):
    table, _ = make_table()
    table.put("code", {"n": 1}, ttl=60)
    assert table.take("code") == {"n": 1}
    assert table.take("code") is None and table.get("code") is None and len(table) == 0


def test_of_many_concurrent_takes_exactly_one_gets_the_code(make_table):
    table, _ = make_table()
    for n in range(20):
        table.put(f"code-{n}", {"n": n}, ttl=60)
    got: list = []
    start = threading.Barrier(8, timeout=WAIT)

    def taker():
        start.wait()
        got.extend(value for n in range(20) if (value := table.take(f"code-{n}")) is not None)

    threads = [threading.Thread(target=taker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert sorted(value["n"] for value in got) == list(
        range(20)
    )  # each code taken once, by one taker


def test_delete_says_whether_an_entry_was_there(make_table):
    table, _ = make_table()
    table.put("k", [1, 2])
    assert table.delete("k") is True and table.delete("k") is False and table.get("k") is None


def test_an_entry_with_a_ttl_expires_by_the_tables_clock(make_table):
    table, clock = make_table()
    table.put("short", "s", ttl=60)
    table.put("forever", "f")
    clock.now += 59.5
    assert table.get("short") == "s" and len(table) == 2
    clock.now += 1.0
    assert (
        table.get("short") is None
        and table.take("short") is None
        and table.delete("short") is False
    )
    assert table.get("forever") == "f" and len(table) == 1


def test_when_full_the_oldest_unpinned_entry_goes(make_table):
    table, _ = make_table(limit=3)
    table.put("pinned", "p", pinned=True)
    for n in range(10):
        table.put(f"k{n}", n)
    assert len(table) == 3
    assert table.get("pinned") == "p" and [table.get(f"k{n}") for n in range(10)] == [None] * 8 + [
        8,
        9,
    ]
    table.put("k8", "again")  # a put makes the entry the newest: k9 is now the oldest unpinned
    table.put("k10", 10)
    assert table.get("k9") is None and table.get("k8") == "again" and table.get("pinned") == "p"


def test_expired_entries_make_room_before_live_ones_go(make_table):
    table, clock = make_table(limit=3)
    table.put("a", 1)
    table.put("short", 0, ttl=10)
    table.put("b", 2)
    clock.now += 11
    table.put("c", 3)  # "short" expired: forgotten, so the oldest live entry ("a") stays
    assert [table.get(k) for k in ("a", "b", "c")] == [1, 2, 3] and len(table) == 3


# -- Redis: shared by processes, and faults -------------------------------------------------------


@needs_redis
def test_two_connections_see_one_table_and_one_take(redis_url):
    """Two states on one URL stand for two workers: what one puts the other reads, and a code
    taken by one is gone for the other."""
    from mcp_ref.state.redis import RedisState

    one, two = RedisState.from_url(redis_url), RedisState.from_url(redis_url)
    try:
        a, b = one.auth_table("codes", limit=10), two.auth_table("codes", limit=10)
        a.put("code", {"client_id": "c"}, ttl=60)
        assert b.get("code") == {"client_id": "c"}
        assert b.take("code") == {"client_id": "c"} and a.take("code") is None
        other = one.auth_table("clients", limit=10)  # another table: another key space
        other.put("code", 1)
        assert b.get("code") is None and len(b) == 0 and len(other) == 1
    finally:
        one.close()
        two.close()


@needs_redis
def test_an_unreachable_redis_is_503_and_an_invalid_token_never_a_crash(caplog):
    from mcp_ref.state.redis import RedisState

    state = RedisState.from_url(
        f"redis://127.0.0.1:{free_port()}/0?namespace=down", socket_timeout=1.0
    )
    try:
        with pytest.raises(ConnectionError):
            state.auth_table("codes", limit=10).get("x")
        app = DemoAuthorizationServer(state=state)  # starts (a worker boots while Redis is down)
        assert (
            app.token_verifier().verify("any-token") is None
        )  # fail closed, as a failed introspection
        answer = _call(
            app,
            "POST",
            "/register",
            b'{"redirect_uris": ["https://c.example/cb"]}',
            "application/json",
        )
        assert answer[0].startswith("503") and answer[2]["error"] == "temporarily_unavailable"
        assert ("Retry-After", "5") in answer[1]
        verifier = (
            pkce.new_verifier()
        )  # the pre-registered client is known without the store; its code is not kept
        query = (
            f"response_type=code&client_id={DEMO_CLIENT_ID}&redirect_uri=http://127.0.0.1/callback&scope=mcp:tools"
            f"&code_challenge={pkce.challenge(verifier)}&code_challenge_method=S256"
        )
        answer = _call(app, "GET", "/authorize", b"", "", query)
        assert answer[0].startswith("503") and answer[2]["error"] == "temporarily_unavailable"
        assert "Redis is unreachable" in caplog.text
    finally:
        state.close()


def _call(app, method: str, path: str, body: bytes, content_type: str, query: str = ""):
    """One request to a WSGI app in process: (status, headers, JSON body)."""
    import io
    import json

    environ = {
        "REQUEST_METHOD": method,
        "PATH_INFO": path,
        "HTTP_HOST": "127.0.0.1:8000",
        "wsgi.url_scheme": "http",
        "CONTENT_LENGTH": str(len(body)),
        "CONTENT_TYPE": content_type,
        "wsgi.input": io.BytesIO(body),
        "REMOTE_ADDR": "127.0.0.1",
        "QUERY_STRING": query,
    }
    seen: list = []
    data = b"".join(app(environ, lambda status, headers: seen.extend([status, headers])))
    return seen[0], seen[1], json.loads(data)


@needs_redis
def test_two_authorization_servers_on_one_redis_are_one(redis_url):
    """Two DemoAuthorizationServer on one shared state (two workers, in process): a client
    registered on one authorizes on the other, its code is exchanged once, its token verifies on both."""
    one, two = DemoAuthorizationServer(state=redis_url), DemoAuthorizationServer(state=redis_url)
    client = one.register(
        {
            "redirect_uris": ["http://127.0.0.1/callback"],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
        }
    )["client_id"]
    verifier = pkce.new_verifier()
    location = two.authorize(
        {
            "response_type": "code",
            "client_id": client,
            "redirect_uri": "http://127.0.0.1/callback",
            "code_challenge": pkce.challenge(verifier),
            "code_challenge_method": "S256",
            "scope": "mcp:tools",
            "resource": "http://127.0.0.1:8000/mcp",
        },
        "http://127.0.0.1:8000",
    )
    code = parse_qs(urlsplit(location).query)["code"][0]
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "client_id": client,
        "redirect_uri": "http://127.0.0.1/callback",  # as in the authorization request
        "code_verifier": verifier,
    }
    tokens = one.token(form, None)
    with pytest.raises(Exception, match="unknown, used"):
        two.token(form, None)  # the code was used, on the other worker
    for server in (one, two):
        info = server.token_verifier().verify(tokens["access_token"])
        assert (
            info is not None
            and info.client_id == client
            and info.audience == ("http://127.0.0.1:8000/mcp",)
        )
    renewed = two.token(
        {
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": client,
        },
        None,
    )
    assert one.verify(renewed["access_token"]) is not None
    with pytest.raises(
        Exception, match="unknown, used"
    ):  # rotated: the old refresh token is gone everywhere
        one.token(
            {
                "grant_type": "refresh_token",
                "refresh_token": tokens["refresh_token"],
                "client_id": client,
            },
            None,
        )


# -- two gunicorn deployments of the protected demo ------------------------------------------------

#: The one origin both deployments are addressed as (as behind a balancer): issuer and resource.
ORIGIN = "127.0.0.1:8000"
ACCEPT = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "Host": ORIGIN,
}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


class ProtectedDemo:
    """``gunicorn -w 1`` serving ``mcp_ref.workbench.demo:protected_wsgi_app`` on a free port."""

    def __init__(self, state: str | None):
        self.proc, self.errors, self.port = start_gunicorn(
            [
                "-k",
                "gthread",
                "-w",
                "1",
                "--threads",
                "4",
                "mcp_ref.workbench.demo:protected_wsgi_app",
            ],
            # the URL clients reach (the load balancer's), the audience of every token
            {
                "MCP_REF_SECRET": "auth-tables-test-secret",
                "MCP_REF_RESOURCE": f"http://{ORIGIN}/mcp",
            },
            state,
        )
        self.url = f"http://127.0.0.1:{self.port}"

    def get(self, path: str, **params) -> requests.Response:
        return requests.get(
            self.url + path,
            params=params,
            headers={"Host": ORIGIN},
            allow_redirects=False,
            timeout=WAIT,
        )

    def post(self, path: str, **kwargs) -> requests.Response:
        return requests.post(
            self.url + path,
            headers={"Host": ORIGIN, **kwargs.pop("headers", {})},
            timeout=WAIT,
            **kwargs,
        )

    def stop(self) -> None:
        stop(self.proc)
        assert "Traceback" not in "".join(self.errors.all), "".join(self.errors.all)


@pytest.fixture
def two_demos():
    """``two_demos(state)``: two single-worker deployments, ``state`` their MCP_REF_STATE (None: none)."""
    started: list[ProtectedDemo] = []

    def start(state: str | None) -> tuple[ProtectedDemo, ProtectedDemo]:
        pair = (ProtectedDemo(state), ProtectedDemo(state))
        started.extend(pair)
        return pair

    yield start
    for demo in started:
        demo.stop()


def authorize(demo: ProtectedDemo, client_id: str, verifier: str) -> requests.Response:
    return demo.get(
        "/authorize",
        response_type="code",
        client_id=client_id,
        redirect_uri="http://127.0.0.1:5555/callback",
        code_challenge=pkce.challenge(verifier),
        code_challenge_method="S256",
        scope="mcp:tools",
        state="s",
        resource=f"http://{ORIGIN}/mcp",
    )


def code_of(answer: requests.Response) -> str:
    assert answer.status_code == 302, answer.text
    return parse_qs(urlsplit(answer.headers["Location"]).query)["code"][0]


def exchange(demo: ProtectedDemo, client_id: str, code: str, verifier: str) -> requests.Response:
    return demo.post(
        "/token",
        data={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": client_id,
            "redirect_uri": "http://127.0.0.1:5555/callback",
            "code_verifier": verifier,
        },
    )


def initialize(demo: ProtectedDemo, token: str) -> requests.Response:
    return demo.post("/mcp", json=INIT, headers={**ACCEPT, "Authorization": f"Bearer {token}"})


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("gunicorn") is None, reason="gunicorn is not installed (test extra)"
)
@needs_redis
@pytest.mark.parametrize("shared", [True, False], ids=["redis", "memory"])
def test_a_client_and_its_tokens_work_on_every_worker(two_demos, redis_url, shared):
    a, b = two_demos(redis_url if shared else None)
    registered = a.post(
        "/register",
        json={
            "redirect_uris": ["http://127.0.0.1/callback"],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
        },
    )
    assert registered.status_code == 201, registered.text
    client_id = registered.json()["client_id"]
    verifier = pkce.new_verifier()
    on_b = authorize(b, client_id, verifier)
    if not shared:  # the control: each worker its own tables
        assert on_b.status_code == 400 and on_b.json()["error"] == "invalid_client"
        tokens = exchange(
            a, DEMO_CLIENT_ID, code_of(authorize(a, DEMO_CLIENT_ID, verifier)), verifier
        ).json()
        assert initialize(a, tokens["access_token"]).status_code == 200
        refused = initialize(b, tokens["access_token"])
        assert (
            refused.status_code == 401
            and 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
        )
        return
    code = code_of(on_b)  # registered on a, authorized on b
    tokens = exchange(a, client_id, code, verifier)
    assert tokens.status_code == 200, tokens.text
    again = exchange(
        b, client_id, code, verifier
    )  # a code is used once, whichever worker sees it again
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    for demo in (a, b):
        answer = initialize(demo, tokens.json()["access_token"])
        assert answer.status_code == 200, answer.text
    renewed = b.post(
        "/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": tokens.json()["refresh_token"],
            "client_id": client_id,
        },
    )
    assert (
        renewed.status_code == 200
        and initialize(a, renewed.json()["access_token"]).status_code == 200
    )
    stale = a.post(
        "/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": tokens.json()["refresh_token"],
            "client_id": client_id,
        },
    )
    assert stale.status_code == 400 and stale.json()["error"] == "invalid_grant"
