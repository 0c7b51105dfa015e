"""A worker killed under handshake-era sessions (issue 32, item 6), and one client's streams
counted over every worker (item 10): deployments of one gunicorn worker each, sharing a real Redis
through ``MCP_REF_STATE``, behind a balancer the test points at one or the other (so "the other
worker" is certain).  The app is tests/servers/failover_app.py.  See spec_notes/deployment.md,
"A worker killed under its sessions", and spec_notes/security.md.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import queue
import signal
import threading

import pytest
from conftest import SERVERS, WAIT, Collector
from http_fixtures import RawSession, RoundRobin
from redis_fixture import redis_server, redis_url, wait_for_writes  # noqa: F401 - fixtures
from test_http_deploy import start_gunicorn, stop
from test_shared_sessions import Worker, on, tool_call

from mcp_ref import Client, McpError
from mcp_ref.http.server.shared import SESSIONS

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("gunicorn") is None,
        reason="gunicorn is not installed (test extra)",
    ),
    pytest.mark.slow,
]

#: Seconds within which a dead worker's sessions move and its requests' streams end: its home lease
#: (shared.HOME_TTL, 6 s), a look every second (shared.CLAIM_EVERY), the client's retry (1 s), and
#: room for a loaded machine; well under the 40 s (and 50 s for a call) it took before.
FAILOVER_BOUND = 25.0


class Deployment:
    """``gunicorn -w 1`` serving failover_app on a free port; ``base`` is its URL."""

    def __init__(self, state: str, stream_cap: int = 32):
        self.proc, self.errors, port = start_gunicorn(
            [
                "-c",
                "python:mcp_ref.http.gunicorn_hooks",
                "-k",
                "gthread",
                "-w",
                "1",
                "--threads",
                "16",
                "--chdir",
                str(SERVERS),
                "failover_app:wsgi_app",
            ],
            {"FAILOVER_STREAM_CAP": str(stream_cap)},
            state,
        )
        self.base = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        stop(self.proc, signal.SIGINT)


@pytest.fixture
def deployments(redis_url):
    """``deployments(n, **options)``: n single-worker deployments sharing ``redis_url``."""
    started: list[Deployment] = []

    def start(n: int = 2, **options) -> list[Deployment]:
        made = [Deployment(redis_url, **options) for _ in range(n)]
        started.extend(made)
        return made

    yield start
    for deployment in started:
        deployment.stop()


def test_a_killed_home_workers_notifications_and_cut_calls_are_not_lost(deployments):
    """SIGKILL the worker that is a session's home and holds its GET stream and a running call: the
    call fails at once rather than at its timeout, and a resource changed right after the kill is
    announced on the GET stream, resumed on the other worker, within seconds."""
    a, b = deployments()
    balancer = RoundRobin([a.base])  # every request to a, until it dies
    updates: queue.Queue = queue.Queue()
    stalling = threading.Event()
    try:
        with Client.http(
            balancer.url + "/mcp",
            timeout=WAIT,
            era="handshake",
            on_resource_updated=updates.put,
            on_log=lambda message: stalling.set(),
        ) as client:
            client.subscribe("memo://note")
            client.call_tool("touch")  # the GET stream carries updates (home: a)
            assert updates.get(timeout=WAIT) == "memo://note"
            home = int(client.call_tool("whoami").content[0].text)
            ended = threading.Event()
            stall = {"name": "stall", "arguments": {}}
            call = client.connection.send_request("tools/call", stall, timeout=120)
            call.add_done_callback(lambda _: ended.set())
            assert stalling.wait(WAIT)  # the call runs on a

            balancer.upstreams = [b.base]  # from now on every request (and resumption) reaches b
            os.kill(home, signal.SIGKILL)
            assert "touched" in client.call_tool("touch").content[0].text  # on b; the home is dead

            # the call's stream was cut: resumed on b, which ends it once a's lease lapses; the
            # client fails the call then, far under its 120 s timeout
            assert ended.wait(FAILOVER_BOUND), "the cut call was not failed promptly"
            with pytest.raises(McpError, match="without an answer"):
                call.result()
            # the GET stream, resumed on b with Last-Event-ID, hears of the change made meanwhile
            assert updates.get(timeout=FAILOVER_BOUND) == "memo://note"
            assert "touched" in client.call_tool("touch").content[0].text  # b is the home now
            assert updates.get(timeout=WAIT) == "memo://note"
    finally:
        balancer.stop()


def test_one_clients_stream_cap_holds_over_every_worker(deployments, redis_url):
    """``max_streams_per_client`` (here 4) counts one address's GET streams on both workers."""
    a, b = deployments(stream_cap=4)
    statuses: list[int] = []
    streams = []
    try:
        for n in range(6):
            raw = RawSession((a, b)[n % 2].base + "/mcp")
            raw.initialize()
            response = raw.get()
            statuses.append(response.status_code)
            streams.append(response)
        assert sorted(statuses) == [200] * 4 + [429] * 2, statuses
        streams[0].close()  # a place freed on a is free on b (once a notices: its next keep-alive)
        freed = RawSession(b.base + "/mcp")
        freed.initialize()
        # the place goes back to the shared count (shares.ClientStreams): a write to its key
        places = "streams:" + hashlib.sha256(b"http-client:127.0.0.1").hexdigest()[:32]
        assert wait_for_writes(redis_url, ("count", places), lambda: _opened(freed, streams), WAIT)
    finally:
        for response in streams:
            response.close()


def _opened(raw: RawSession, streams: list) -> bool:
    """Whether a GET stream opened on ``raw`` now is accepted (kept in ``streams``), not 429."""
    response = raw.get()
    if response.status_code == 429:
        response.close()
        return False
    streams.append(response)
    return response.status_code == 200


def test_a_home_whose_lease_lapsed_steps_down_when_another_worker_claims_it(redis_url):
    """Another worker's watcher claims a session whose home has gone, though nothing uses it; and a
    home whose heartbeat came later than its lease (a stalled process, Redis out of reach) only
    seemed dead: the worker that claimed the session tells it, and it stops sending the session's
    change notifications, so the client hears each change once.  Two workers in this process
    (tests/state/test_shared_sessions.py's), the lapse made by stopping a's heartbeat and ending its
    lease in Redis."""
    a, b = Worker("a", redis_url, keepalive=0.5), Worker("b", redis_url, keepalive=0.5)
    try:
        raw = RawSession(a.mcp)
        raw.initialize()
        request_id, response = tool_call(on(raw, b), "whoami")  # b holds a replica now
        assert raw.result(response, request_id)[0]["result"]["content"][0]["text"] == "b"
        at_a, at_b = a.app.live_session(raw.session_id), b.app.live_session(raw.session_id)
        assert at_a.home and not at_b.home

        heard = Collector()  # a's messages about sessions, each once a's own subscriber has it
        unsubscribe = a.server.bus.subscribe(SESSIONS, heard)
        homes = a.app.shared_sessions.homes._held
        beating = homes._beater
        homes._stop.set()  # a's heartbeat stops ...
        if beating is not None:
            beating.join(WAIT)
        state = a.server.shared_state.connection
        state.client.zrem(state.key("holders"), homes.token)  # ... and its lease has lapsed
        # b's watcher finds a gone and claims the session, which no request nor stream uses now,
        # and then says so over the bus: heard here after a's own subscriber took it up
        assert heard.wait_until(lambda said: any(m["kind"] == "home" for m in said))
        assert at_b.home
        assert at_b.connection in b.server.connections()

        assert not at_a.home  # a heard b's claim over the bus
        assert at_a.connection not in a.server.connections()  # a sends its changes no more
        assert at_a.home_worker == b.app.shared_sessions.worker
        unsubscribe()
    finally:
        a.stop()
        b.stop()
