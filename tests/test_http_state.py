"""The HTTP server's seams (issue 21): the session table and the event store (each a Protocol and its
in-memory implementation, with an injectable clock), the middleware chain, the one status table,
and the layering of the HTTP package (no workbench import; the auth middleware only with ``auth=``).
"""

from __future__ import annotations

import ast
import inspect
import json
import logging
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from conftest import WAIT, run_threads
from http_fixtures import TIMEOUT, SseReader, raw_session, serve  # noqa: F401  (fixtures)
from redis_fixture import redis_server, redis_url  # noqa: F401  (fixtures)

from mcp_ref.core.errors import LIMIT_EXCEEDED, METHOD_NOT_FOUND, LimitExceeded
from mcp_ref.extras.redis_state.connection import Connection
from mcp_ref.extras.redis_state.http_stores import RedisEventStore
from mcp_ref.transports import http_server
from mcp_ref.transports.http_server import (
    STATUS_OF,
    EventStore,
    HttpError,
    MemoryEventStore,
    MemorySessionTable,
    Middleware,
    SessionTable,
    modern_status,
)
from mcp_ref.transports.http_server import status as statuses

PACKAGE = Path(http_server.__file__).parent


class Clock:
    """A clock the test moves: expiry without sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def protocol_members(protocol) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(member) for name, member in vars(protocol).items()
            if callable(member) and (not name.startswith("_") or name == "__len__")}


@pytest.mark.parametrize("implementation, protocol", [
    (MemorySessionTable, SessionTable), (MemoryEventStore, EventStore), (RedisEventStore, EventStore)])
def test_the_in_memory_state_implements_its_protocol(implementation, protocol):
    members = protocol_members(protocol)
    assert members  # the protocol is really read
    for name, signature in members.items():
        mine = inspect.signature(getattr(implementation, name))
        assert list(mine.parameters) == list(signature.parameters), name
        assert [p.kind for p in mine.parameters.values()] == [p.kind for p in signature.parameters.values()], name


def test_a_protocol_check_that_can_fail():
    class Partial:
        def add(self, session_id: str) -> None: ...

    with pytest.raises(AttributeError):
        test_the_in_memory_state_implements_its_protocol(Partial, SessionTable)


def test_the_session_table_expires_by_its_clock():
    clock = Clock()
    table = MemorySessionTable(idle_timeout=60, handshake_timeout=5, clock=clock)
    table.add("a")
    table.add("b")
    table.touch("b")  # came back after initialize: established
    assert table.get("a") == {"created": 1000.0, "last_seen": 1000.0, "established": False}
    clock.now += 5.5
    assert table.is_expired("a") and not table.is_expired("b")  # the handshake timeout is for "a" only
    assert table.expired() == ["a"]
    clock.now += 60
    assert sorted(table.expired()) == ["a", "b"]
    table.touch("b")
    assert table.expired() == ["a"] and not table.is_expired("b")
    assert table.remove("a") and not table.remove("a")
    assert table.get("a") is None and not table.is_expired("a") and len(table) == 1


def test_the_session_table_is_bounded_and_evicts_the_oldest_unproven_session():
    clock = Clock()
    table = MemorySessionTable(max_sessions=3, clock=clock)
    for number, session_id in enumerate(["old", "proven", "young"]):
        clock.now += number
        assert table.make_room() == (True, None)
        table.add(session_id)
    table.touch("proven")
    assert table.make_room() == (True, "old")  # the oldest that never came back
    assert table.get("old") is None and len(table) == 2
    clock.now += 1
    table.add("new")
    assert table.make_room() == (True, "young")
    table.add("newer")
    table.touch("new")
    table.touch("newer")
    assert table.make_room() == (False, None)  # every session is established: the caller answers 503
    assert len(table) == 3


@pytest.fixture
def redis_connections(redis_url):  # noqa: F811
    """Factory: a new Connection to this test's Redis namespace (each one stands for a worker); closed after."""
    made: list[Connection] = []

    def connect() -> Connection:
        made.append(Connection(redis_url))
        return made[-1]

    yield connect
    for connection in made:
        connection.close()


@pytest.fixture(params=["memory", "redis"])
def event_stores(request):
    """Factory of event stores of one backend: ``event_stores(max_events=...)``; the Redis ones share a namespace."""
    if request.param == "memory":
        return lambda **options: MemoryEventStore(**options)
    connect = request.getfixturevalue("redis_connections")
    return lambda **options: RedisEventStore(connect(), **options)


def test_the_event_store_replays_one_stream_after_an_id_and_is_bounded(event_stores):
    store = event_stores(max_events=4)
    first = store.store("s1", "p1", b"one")
    other = store.store("s1", "p2", b"elsewhere")
    second = store.store("s1", "p1", b"two")
    store.store("s2", "p1", b"another session")
    assert first.startswith("p1.") and other.startswith("p2.")
    assert store.replay_after("s1", first) == ("p1", [(second, b"two")])
    assert store.replay_after("s1", "p1.999") is None and store.replay_after("s9", first) is None
    for n in range(4):
        store.store("s1", "p3", b"%d" % n)
    assert store.replay_after("s1", first) is None  # past max_events the oldest went
    store.forget("s1")
    assert store.replay_after("s1", second) is None


def test_the_event_store_refuses_ids_it_never_issued(event_stores):
    store = event_stores()
    first = store.store("s1", "p1", b"one")
    number = first.rpartition(".")[2]
    assert int(number) >= 1  # <stream id>.<n>: what the transport and its clients expect
    for foreign in [f"p2.{number}", number, f".{number}", "p1.", "p1.x", "p1.-1", "p1.1e3", "p1.\u00b2",
                    "p1." + "9" * 40, f"p1.{number}.0"]:
        assert store.replay_after("s1", foreign) is None, foreign
    assert store.replay_after("s1", first) == ("p1", [])


def test_event_ids_are_unique_and_growing_in_a_session_across_writers(event_stores):
    store = event_stores(max_events=10_000)
    ids = run_threads(lambda i: [store.store("s1", "p1", b"%d" % i) for _ in range(50)], 8)
    numbers = [int(eid.rpartition(".")[2]) for batch in ids for eid in batch]
    assert len(set(numbers)) == 400
    for batch in ids:
        assert [int(eid.rpartition(".")[2]) for eid in batch] == sorted(int(eid.rpartition(".")[2]) for eid in batch)


def test_a_redis_event_store_replays_what_another_worker_stored(redis_connections):
    one, two = RedisEventStore(redis_connections()), RedisEventStore(redis_connections())
    first = one.store("s1", "p1", b"one")
    second = two.store("s1", "p1", b"two")  # numbered after the other worker's event
    third = one.store("s1", "p1", b"three")
    assert two.replay_after("s1", first) == ("p1", [(second, b"two"), (third, b"three")])
    assert one.replay_after("s1", second) == ("p1", [(third, b"three")])
    two.forget("s1")
    assert one.replay_after("s1", first) is None


def test_a_redis_event_store_expires_a_sessions_events_after_the_last_one(redis_connections):
    connection = redis_connections()
    store = RedisEventStore(connection, expire_after=90)
    store.store("s1", "p1", b"one")
    key = store.key("s1")
    assert key.startswith(connection.namespace + ":")
    for name in (key, key + ":n"):
        assert 0 < connection.client.pttl(name) <= 90_000  # refreshed by each store; gone with forget
    store.forget("s1")
    assert connection.client.exists(key, key + ":n") == 0


def test_a_redis_event_store_without_redis_degrades_and_says_so(caplog):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"redis://127.0.0.1:{probe.getsockname()[1]}/0"
    connection = Connection(url, socket_timeout=1.0)
    store = RedisEventStore(connection)
    try:
        with caplog.at_level(logging.WARNING, logger="mcp_ref.extras.redis_state.http_stores"):
            unkept = store.store("s1", "p1", b"one")
            assert unkept.rpartition(".")[0] == "p1"  # still names its stream: the event goes out live
            assert store.store("s1", "p1", b"two") != unkept
            assert store.replay_after("s1", unkept) is None
            assert store.replay_after("s1", "p1.1") is None  # Redis not asked, or not reachable: no replay
            store.forget("s1")  # no raise: the keys expire
        assert store.failures == 4
        assert sum("event store: could not" in r.getMessage() for r in caplog.records) == 1  # once a minute
    finally:
        connection.close()


def test_a_stream_resumes_over_http_from_the_redis_event_store(serve, raw_session, redis_connections):  # noqa: F811
    """The transport takes the Redis store's ids as its own: GET with Last-Event-ID replays what was missed."""
    srv = serve(event_store=RedisEventStore(redis_connections()))
    session = raw_session(srv.mcp)
    session.initialize()
    arguments = {"name": "count_slowly", "arguments": {"steps": 3, "delay": 0.01}, "_meta": {"progressToken": "r"}}
    request_id, response = session.call("tools/call", arguments, stream=True)
    reader = SseReader(response)
    priming = reader.next()
    everything = reader.messages(request_id, session.checker)
    response.close()
    replay = session.get(headers={"Last-Event-ID": priming["id"]})
    assert replay.status_code == 200
    rest = SseReader(replay).messages(None, session.checker)
    assert [m for _, m in rest] == [m for _, m in everything] and len(rest) == 4  # 3 progress, the answer
    assert [eid for eid, _ in rest] == [eid for eid, _ in everything]


def test_every_refusal_has_its_status_in_the_one_table():
    kinds = [value for value in vars(statuses).values()
             if isinstance(value, type) and issubclass(value, HttpError)]
    assert len(kinds) >= 10
    for kind in kinds:
        assert kind in STATUS_OF, kind
        assert kind("x").status == STATUS_OF[kind]
    assert statuses.InsufficientScope("x").status == "403 Forbidden"
    limited = statuses.refusal(LimitExceeded("slow down", data={"retryAfter": 2.2}), 7)
    assert limited.status == "429 Too Many Requests" and ("Retry-After", "3") in limited.headers
    assert limited.code == LIMIT_EXCEEDED and limited.request_id == 7
    assert modern_status(METHOD_NOT_FOUND) == "404 Not Found" and modern_status(-32603) == "200 OK"
    with pytest.raises(LookupError):
        statuses.status_of(ValueError("not a refusal"))


def test_a_session_expires_over_http_when_the_table_clock_moves(serve, raw_session):  # noqa: F811
    clock = Clock()
    srv = serve(session_table=MemorySessionTable(idle_timeout=60, clock=clock))
    session = raw_session(srv.mcp)
    session.initialize()
    assert session.call("ping")[1].status_code == 200
    clock.now += 61
    assert session.call("ping")[1].status_code == 404
    assert session.session_id not in srv.app.sessions


class Refuse(Middleware):
    """A user middleware: refuses one method before any session is looked up, answers one path."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_request(self, call):
        if call.path == "/hello":
            call.start_response("200 OK", [("Content-Type", "text/plain")])
            return [b"hello"]
        return None

    def on_messages(self, environ, messages, resource_path):
        self.seen += [getattr(m, "method", None) for m in messages]
        if any(getattr(m, "method", None) == "tools/list" for m in messages):
            raise statuses.Forbidden("Forbidden: not today")


def test_a_middleware_in_the_chain_sees_each_request_and_refuses_with_the_tables_status(serve, raw_session):  # noqa: F811
    srv = serve()
    mine = Refuse()
    assert [type(m).__name__ for m in srv.app.middleware] == ["Admission"]  # no auth: no auth middleware
    srv.app.middleware.insert(0, mine)
    assert requests.get(srv.url + "/hello", timeout=TIMEOUT).text == "hello"
    session = raw_session(srv.mcp)
    session.initialize()
    assert session.call("ping")[1].status_code == 200
    refused = session.call("tools/list")[1]
    assert refused.status_code == 403 and refused.json()["error"]["message"] == "Forbidden: not today"
    assert mine.seen == ["ping", "tools/list"]


def test_the_auth_middleware_loads_only_with_auth():
    code = ("import sys\nfrom mcp_ref import Server\nfrom mcp_ref.transports.http_server import McpWsgiApp\n"
            "app = McpWsgiApp(Server('x'))\n"
            "print(json.dumps(sorted(m for m in sys.modules if 'protected' in m or m.startswith('mcp_ref.auth'))))")
    done = subprocess.run([sys.executable, "-c", "import json\n" + code], capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def imports_in(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            names.append("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return names


def test_no_transport_imports_the_workbench_and_every_http_module_is_small():
    transports = PACKAGE.parent
    found = {str(p.relative_to(transports)): name for p in transports.rglob("*.py")
             for name in imports_in(p) if "workbench" in name}
    assert found == {}
    assert len(list(PACKAGE.glob("*.py"))) >= 8  # really split
    assert {p.name: n for p in PACKAGE.glob("*.py") if (n := len(p.read_text().splitlines())) >= 700} == {}


def test_the_import_checker_can_fail(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("def f():\n    from ..workbench.wsgi_server import WsgiServer\n")
    assert imports_in(sample) == ["..workbench.wsgi_server"]
