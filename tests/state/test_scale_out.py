"""Beyond one process (issue 22): two deployments of one app under real gunicorn, one worker each,
addressed alternately, sharing a real Redis through ``MCP_REF_STATE``; and, as the control, the
same two without it (each process its own memory: the documented single-process behaviour).

Two single-worker deployments make "the other worker" certain: with one gunicorn of several
workers the kernel decides which worker takes a connection.  The app is tests/servers/scale_out_app.py.
See spec_notes/deployment.md, "Scaling out".
"""

from __future__ import annotations

import importlib.util
import signal
import threading
import time

import pytest
from conftest import SERVERS, WAIT
from redis_fixture import redis_server, redis_url, wait_for_writes  # noqa: F401 - fixtures
from test_http_deploy import start_gunicorn, stop

from mcp_ref import Client, LimitExceeded, McpError
from mcp_ref.extensions.client_tasks import EXTENSION

#: What a request that may become a task declares (the 2026-07-28 tasks extension).
TASKS = (EXTENSION,)

pytestmark = [
    pytest.mark.skipif(
        importlib.util.find_spec("gunicorn") is None,
        reason="gunicorn is not installed (test extra)",
    ),
    pytest.mark.slow,
]


class Deployment:
    """``gunicorn -w <workers>`` serving scale_out_app on a free port; ``url`` is its MCP endpoint."""

    def __init__(
        self,
        state: str | None,
        server_limit: str,
        workers: int = 1,
        stateless: bool = True,
        protected: bool = False,
    ):
        self.proc, self.errors, self.port = start_gunicorn(
            [
                "-c",
                "python:mcp_ref.http.gunicorn_hooks",
                "-k",
                "gthread",
                "-w",
                str(workers),
                "--threads",
                "8",
                "--chdir",
                str(SERVERS),
                "scale_out_app:wsgi_app",
            ],
            {
                "MCP_REF_SECRET": "scale-out-test-secret",
                "SCALE_OUT_SERVER_LIMIT": server_limit,
                "SCALE_OUT_STATELESS": "1" if stateless else "0",
                "SCALE_OUT_PROTECTED": "1" if protected else "0",
            },
            state,
        )
        self.url = f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> None:
        stop(
            self.proc, signal.SIGINT
        )  # gunicorn's quick shutdown: a graceful one waits for open streams
        assert "Traceback" not in "".join(self.errors.all), "".join(self.errors.all)


@pytest.fixture
def two_deployments(request):
    """``two_deployments(state)``: two single-worker deployments of the app, ``state`` their
    ``MCP_REF_STATE`` (None: each its own memory); ``three_workers=True``: one deployment of three
    workers instead, given twice (the kernel then decides which worker takes each connection);
    ``stateless=False``: handshake-era sessions (the app's default is stateless);
    ``protected=True``: a protected resource (bearer tokens: :func:`bearer`)."""
    started: list[Deployment] = []

    def start(
        state: str | None,
        server_limit: str = "100/minute",
        *,
        three_workers: bool = False,
        stateless: bool = True,
        protected: bool = False,
    ) -> tuple[Deployment, Deployment]:
        options = {"stateless": stateless, "protected": protected}
        if three_workers:
            one = Deployment(state, server_limit, workers=3, **options)
            started.append(one)
            return one, one
        pair = (
            Deployment(state, server_limit, **options),
            Deployment(state, server_limit, **options),
        )
        started.extend(pair)
        return pair

    yield start
    for deployment in started:
        deployment.stop()


def bearer(token: str | None) -> dict:
    """The headers carrying ``token`` (none without one): scale_out_app's ``<user>-token``."""
    return {} if token is None else {"Authorization": f"Bearer {token}"}


#: Each handshake-session test runs without a token and with one (issue 32: the session's record
#: keeps its principal, which must match the caller's on every worker).
TOKENS = pytest.mark.parametrize("token", [None, "alice-token"], ids=["no token", "bearer token"])


def session_count(redis_url: str) -> int:
    """How many sessions the deployment's shared table holds."""
    from mcp_ref.state.redis import RedisState

    state = RedisState.from_url(redis_url)
    try:
        return len(state.session_table())
    finally:
        state.close()


def alternate(clients: tuple[Client, Client], calls: int, tool: str) -> list[str]:
    """``tool`` called ``calls`` times, on each client in turn: "ok" or "limited" each."""
    outcomes = []
    for n in range(calls):
        try:
            clients[n % 2].call_tool(tool)
            outcomes.append("ok")
        except LimitExceeded:
            outcomes.append("limited")
    return outcomes


@pytest.mark.parametrize("era", ["modern", "handshake"])
@pytest.mark.parametrize("shared", [True, False], ids=["redis", "memory"])
def test_a_tools_rate_limit_counts_every_worker_together(two_deployments, redis_url, shared, era):
    a, b = two_deployments(redis_url if shared else None)
    with (
        Client.http(a.url, timeout=WAIT, era=era) as on_a,
        Client.http(b.url, timeout=WAIT, era=era) as on_b,
    ):
        assert on_a.call_tool("whoami").content[0].text != on_b.call_tool("whoami").content[0].text
        outcomes = alternate((on_a, on_b), 8, "limited")
    # "3/minute" for one caller (every request comes from 127.0.0.1: one principal): shared, three
    # calls in all; each process on its own, three on each.
    assert outcomes.count("ok") == (3 if shared else 6), outcomes


def test_in_one_deployment_of_three_workers_the_limits_hold_whichever_worker_answers(
    two_deployments, redis_url
):
    a, b = two_deployments(redis_url, three_workers=True)
    clients = [
        Client.http(a.url, timeout=WAIT) for _ in range(4)
    ]  # four connections: the kernel spreads them
    try:
        outcomes = []
        for n in range(12):
            try:
                clients[n % 4].call_tool("limited")
                outcomes.append("ok")
            except LimitExceeded:
                outcomes.append("limited")
        assert outcomes.count("ok") == 3, outcomes  # the tool's limit, whichever worker answered
        tasks = [
            c.connection.send_request(
                "tools/call", {"name": "until_cancelled"}, declares=TASKS
            ).result()["taskId"]
            for c in clients[:2]
        ]
        for client in clients:  # every connection, whichever worker holds it, finds both tasks
            assert [client.get_task(task_id)["status"] for task_id in tasks] == [
                "working",
                "working",
            ]
        for task_id in tasks:
            clients[3].cancel_task(task_id)
    finally:
        for client in clients:
            client.close()


@pytest.mark.parametrize("shared", [True, False], ids=["redis", "memory"])
def test_the_servers_rate_limit_counts_every_worker_together(two_deployments, redis_url, shared):
    a, b = two_deployments(redis_url if shared else None, server_limit="10/minute")
    with Client.http(a.url, timeout=WAIT) as on_a, Client.http(b.url, timeout=WAIT) as on_b:
        outcomes = alternate((on_a, on_b), 16, "whoami")
    # Each client's server/discover is one request of the ten; shared: eight calls are left for the
    # two of them together; alone, each process admits all of its eight.
    assert outcomes.count("ok") == (8 if shared else 16), outcomes


@TOKENS
def test_the_servers_rate_limit_holds_for_one_handshake_session_served_by_both(
    two_deployments, redis_url, token
):
    """The handshake era: without a token the caller is its session (with one, its principal), so
    one session, its requests sent to each deployment in turn (RoundRobin), is held to the one
    limit."""
    from http_fixtures import RoundRobin

    a, b = two_deployments(
        redis_url, server_limit="10/minute", stateless=False, protected=token is not None
    )
    balancer = RoundRobin([a.url.removesuffix("/mcp"), b.url.removesuffix("/mcp")])
    outcomes = []
    try:
        with Client.http(
            balancer.url + "/mcp", timeout=WAIT, era="handshake", headers=bearer(token)
        ) as client:
            for _ in range(16):
                try:
                    client.call_tool("whoami")
                    outcomes.append("ok")
                except LimitExceeded:
                    outcomes.append("limited")
    finally:
        balancer.stop()
    # initialize was the first of the ten, and tools/list the second: the server declares 2025-11-25 tasks (its
    # until_cancelled tool), so the client learns whoami's execution.taskSupport before calling it
    assert outcomes.count("ok") == 8, outcomes
    assert set(balancer.served) == {0, 1}


def test_a_task_made_on_one_worker_is_seen_and_cancelled_on_the_other(two_deployments, redis_url):
    a, b = two_deployments(redis_url)
    with Client.http(a.url, timeout=WAIT) as on_a, Client.http(b.url, timeout=WAIT) as on_b:
        created = on_a.connection.send_request(
            "tools/call", {"name": "until_cancelled"}, declares=TASKS
        ).result()
        assert created["resultType"] == "task", created
        task_id = created["taskId"]
        # SEP-2663: a created task is not returned until "a tasks/get for the returned taskId would resolve".
        assert on_b.get_task(task_id)["status"] == "working"
        on_b.cancel_task(task_id)
        # the worker running it hears the cancel (the bus), and its handler's end is written to
        # the task's record: waited for on the record's writes
        assert wait_for_writes(
            redis_url,
            ("task", task_id),
            lambda: on_a.get_task(task_id)["status"] != "working",
            WAIT,
        )
        assert on_a.get_task(task_id)["status"] == "cancelled"
        assert on_b.get_task(task_id)["status"] == "cancelled"


def test_without_shared_state_another_worker_knows_no_task(two_deployments):
    a, b = two_deployments(None)
    with Client.http(a.url, timeout=WAIT) as on_a, Client.http(b.url, timeout=WAIT) as on_b:
        task_id = on_a.connection.send_request(
            "tools/call", {"name": "until_cancelled"}, declares=TASKS
        ).result()["taskId"]
        with pytest.raises(McpError):
            on_b.get_task(task_id)  # the documented single-process behaviour
        on_a.cancel_task(task_id)


def test_a_tool_added_on_one_worker_is_announced_to_a_listener_on_the_other(
    two_deployments, redis_url
):
    a, b = two_deployments(redis_url)
    heard: list[tuple[str, dict]] = []
    arrived = threading.Event()

    def on_notification(method: str, params: dict) -> None:
        heard.append((method, params))
        arrived.set()

    with Client.http(a.url, timeout=WAIT) as on_a, Client.http(b.url, timeout=WAIT) as on_b:
        with on_b.listen(tools=True, on_notification=on_notification):
            on_a.call_tool("add_tool", {"name": "late_arrival"})
            assert arrived.wait(WAIT), heard
        assert heard[0][0] == "notifications/tools/list_changed"


def test_after_redis_comes_back_the_listeners_are_told_to_list_again(tmp_path):
    """Changes published while the bus was cut off are gone (pub/sub keeps nothing): once the bus is
    connected again, this process's listeners are told every list may have changed."""
    from redis_fixture import RedisServer, required_binary

    redis = RedisServer(required_binary(), tmp_path)
    redis.start()
    try:
        from mcp_ref import Server

        server = Server("reconnects", state=f"{redis.url}?namespace=reconnect")
        server.add_tool(
            lambda: "here", name="present"
        )  # a server with tools offers tools/list_changed
        # Retried every 0.2 s at most (5 s by default): the test waits for the reconnection, not the backoff.
        server.shared_state.bus().max_backoff = 0.2
        heard = threading.Event()
        with Client.in_memory(server, timeout=WAIT) as client:
            with client.listen(tools=True, on_notification=lambda method, params: heard.set()):
                assert not heard.is_set()
                redis.stop()
                redis.start()  # the same port: the bus finds it again
                assert heard.wait(WAIT)
        server.shared_state.close()
    finally:
        redis.stop()


HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


@TOKENS
@pytest.mark.parametrize("shared", [True, False], ids=["redis", "memory"])
def test_a_handshake_session_made_on_one_deployment_is_served_by_the_other(
    redis_url, shared, token
):
    """With the state shared, a handshake-era session made on A is served by B (from its record);
    without it (the control), B answers 404 (the spec's "session not found").  With a bearer token,
    the same: the record's principal is the caller's on B too (issue 32), and another user's token
    is "not found" there."""
    import requests

    state = redis_url if shared else None
    a = Deployment(state, "100/minute", stateless=False, protected=token is not None)
    b = Deployment(state, "100/minute", stateless=False, protected=token is not None)
    try:
        made = requests.post(a.url, json=INIT, headers={**HEADERS, **bearer(token)}, timeout=WAIT)
        assert made.status_code == 200, made.text
        headers = {
            **HEADERS,
            **bearer(token),
            "Mcp-Session-Id": made.headers["Mcp-Session-Id"],
            "MCP-Protocol-Version": "2025-11-25",
        }
        initialized = requests.post(
            b.url,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=headers,
            timeout=WAIT,
        )
        asked = requests.post(
            b.url,
            json={
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "whoami", "arguments": {}},
            },
            headers=headers,
            timeout=WAIT,
        )
        if shared:
            assert initialized.status_code == 202
            answered_by_b = asked.json()["result"]["content"][0]["text"]
            assert answered_by_b.startswith("pid ") and answered_by_b != whoami(a, headers)
            assert session_count(redis_url) == 1  # no orphan session was made
            if token is not None:
                listing = {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}
                as_bob = requests.post(
                    b.url, json=listing, headers={**headers, **bearer("bob-token")}, timeout=WAIT
                )
                assert as_bob.status_code == 404
        else:
            assert (initialized.status_code, asked.status_code) == (404, 404)
    finally:
        a.stop()
        b.stop()


@TOKENS
def test_a_post_stream_is_resumed_on_the_other_deployment(redis_url, token):
    """2025-11-25 basic/transports §Resumability across deployments: the POST's stream closed on A
    (SSE polling), the client resumes it on B with Last-Event-ID and gets the rest and the answer."""
    import json

    import requests
    from http_fixtures import SseReader

    a = Deployment(redis_url, "100/minute", stateless=False, protected=token is not None)
    b = Deployment(redis_url, "100/minute", stateless=False, protected=token is not None)
    try:
        made = requests.post(a.url, json=INIT, headers={**HEADERS, **bearer(token)}, timeout=WAIT)
        headers = {
            **HEADERS,
            **bearer(token),
            "Mcp-Session-Id": made.headers["Mcp-Session-Id"],
            "MCP-Protocol-Version": "2025-11-25",
        }
        requests.post(
            a.url,
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers=headers,
            timeout=WAIT,
        )
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "polled", "arguments": {}},
        }
        reader = SseReader(
            requests.post(a.url, json=call, headers=headers, stream=True, timeout=WAIT)
        )
        first = [reader.next() for _ in range(3)]  # priming, "step one", the retry event
        reader.close()
        assert json.loads(first[1]["data"])["params"]["data"].startswith("step one on pid")
        resumed = requests.get(
            b.url,
            headers={**headers, "Accept": "text/event-stream", "Last-Event-ID": first[2]["id"]},
            stream=True,
            timeout=WAIT,
        )
        messages = [message for _, message in SseReader(resumed).messages()]
        assert messages[0]["params"]["data"] == "step two"
        assert messages[-1]["id"] == 2 and messages[-1]["result"]["content"][0]["text"].startswith(
            "done on pid"
        )
    finally:
        a.stop()
        b.stop()


def whoami(deployment: Deployment, headers: dict) -> str:
    import requests

    answer = requests.post(
        deployment.url,
        json={
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "whoami", "arguments": {}},
        },
        headers=headers,
        timeout=WAIT,
    )
    return answer.json()["result"]["content"][0]["text"]


@TOKENS
@pytest.mark.parametrize("layout", ["two deployments", "three workers"])
def test_a_client_behind_a_balancer_without_sticky_sessions_keeps_every_handshake_feature(
    two_deployments, redis_url, layout, token
):
    """Each request to the next upstream in turn (RoundRobin, a connection per request): the session,
    an elicitation whose answer is posted to another worker than the one asking, a change heard on the
    GET stream wherever it is held, and the session deleted everywhere at the end; one session all
    along (no 404 made the client start an orphan one)."""
    from http_fixtures import RoundRobin

    a, b = two_deployments(
        redis_url,
        three_workers=layout == "three workers",
        stateless=False,
        protected=token is not None,
    )
    upstreams = sorted({a.url.removesuffix("/mcp"), b.url.removesuffix("/mcp")})
    balancer = RoundRobin(upstreams)
    changed = threading.Event()
    try:
        with Client.http(
            balancer.url + "/mcp",
            timeout=WAIT,
            era="handshake",
            on_list_changed=lambda kind: changed.set(),
            headers=bearer(token),
            elicitation_handler=lambda params: {"action": "accept", "content": {"name": "Ada"}},
        ) as client:
            # served by more than one worker, one session: two deployments alternate; three workers behind
            # one port share its accepts as the kernel wakes them (an idle one may win many in a row)
            pids: set = set()
            for _ in range(12 if layout == "two deployments" else 200):
                pids.add(client.call_tool("whoami").content[0].text)
                if len(pids) >= 2 and layout != "two deployments":
                    break
            assert len(pids) >= 2, pids
            for _ in range(3):
                assert client.call_tool("greet").content[0].text.startswith("Hello, Ada, from pid ")
            client.call_tool("add_tool", {"name": "from_somewhere"})
            assert changed.wait(WAIT)
            assert session_count(redis_url) == 1  # the client's one session: no orphan
    finally:
        balancer.stop()


@TOKENS
def test_a_tool_added_on_one_worker_reaches_a_handshake_get_stream_on_the_other(redis_url, token):
    a = Deployment(redis_url, "100/minute", stateless=False, protected=token is not None)
    b = Deployment(redis_url, "100/minute", stateless=False, protected=token is not None)
    changed = threading.Event()
    try:
        with (
            Client.http(
                b.url,
                timeout=WAIT,
                era="handshake",
                headers=bearer(token),
                on_list_changed=lambda kind: changed.set(),
            ) as on_b,
            Client.http(a.url, timeout=WAIT, era="handshake", headers=bearer(token)) as on_a,
        ):
            on_b.list_tools()  # the GET stream is open once the session is (the client opens it at once)
            on_a.call_tool("add_tool", {"name": "from_a"})
            assert changed.wait(WAIT)  # heard on B's GET stream, through the bus
    finally:
        a.stop()
        b.stop()


@pytest.mark.parametrize("token", [None, "alice-token"], ids=["no token", "bearer token"])
def test_an_mrtr_retry_is_answered_by_the_other_worker(redis_url, token):
    """MRTR (2026-07-28 basic/patterns/mrtr): the retry carries the sealed ``requestState``, which any
    worker with the same ``MCP_REF_SECRET`` opens, for the same caller (a bearer token's user)."""
    from test_hardening_tasks import Caller, accept

    a = Deployment(redis_url, "100/minute", protected=token is not None)
    b = Deployment(redis_url, "100/minute", protected=token is not None)
    try:
        on_a, on_b = Caller(a.url, token), Caller(b.url, token)
        first = on_a.call("greet")["result"]
        assert first["resultType"] == "input_required" and list(first["inputRequests"]) == [
            "user_name"
        ]
        done = on_b.call(
            "greet",
            inputResponses={"user_name": accept(name="Ada")},
            requestState=first["requestState"],
        )
        assert "error" not in done, done
        worker_a, worker_b = on_a.text("whoami"), on_b.text("whoami")
        assert (
            worker_a != worker_b
            and done["result"]["content"][0]["text"] == f"Hello, Ada, from {worker_b}!"
        )
        if token is not None:  # another user's token cannot open alice's state, on any worker
            bob = Caller(b.url, "bob-token").call(
                "greet",
                inputResponses={"user_name": accept(name="Eve")},
                requestState=first["requestState"],
            )
            assert "error" in bob and "another caller" in bob["error"]["message"], bob
    finally:
        a.stop()
        b.stop()


def test_redis_stopped_and_restarted_mid_run_costs_no_crash_and_no_hang(tmp_path):
    """spec_notes/deployment.md, "Faults": with Redis gone, rate limits count per process (a warning),
    tasks/get answers -32603, plain calls are served; once it is back, everything is shared again."""
    from redis_fixture import RedisServer, required_binary

    redis = RedisServer(required_binary(), tmp_path)
    redis.start()
    a = Deployment(f"{redis.url}?namespace=faults", "100/minute")
    b = Deployment(f"{redis.url}?namespace=faults", "100/minute")
    try:
        with Client.http(a.url, timeout=WAIT) as on_a, Client.http(b.url, timeout=WAIT) as on_b:
            task_id = on_a.connection.send_request(
                "tools/call", {"name": "until_cancelled"}, declares=TASKS
            ).result()["taskId"]
            redis.stop()
            started = time.monotonic()
            assert (
                on_a.call_tool("whoami").content[0].text.startswith("pid ")
            )  # no shared store needed
            assert alternate((on_a, on_b), 2, "limited") == [
                "ok",
                "ok",
            ]  # counted in each process meanwhile
            with pytest.raises(McpError) as unreachable:
                on_b.get_task(task_id)
            assert unreachable.value.code == -32603 and "unreachable" in unreachable.value.message
            assert time.monotonic() - started < WAIT  # bounded by the socket timeouts: no hang
            redis.start()  # empty: the task records are gone with the old Redis (no persistence)
            assert alternate((on_a, on_b), 8, "limited").count("ok") == 3  # shared again
    finally:
        a.stop()
        b.stop()
        redis.stop()
    assert any(
        "Redis" in line or "redis" in line for line in a.errors.all + b.errors.all
    )  # it was said
