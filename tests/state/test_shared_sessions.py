"""Handshake-era sessions on any worker (issue 22, item 3): two servers in this process, each its own
HTTP app on its own socket, sharing one real Redis (``Server(state=redis_url)``) — two workers of one
deployment.  A session made on one is served by the other; what must reach the worker holding a
request (an answer to its request to the client, a cancellation) crosses over the bus; streams are
followed and resumed from the shared event store.  See mcp_ref/http/server/shared.py and
spec_notes/deployment.md, "Handshake sessions on any worker".  (Under real gunicorn: test_scale_out.py.)
"""

from __future__ import annotations

import json
import threading

import pytest
from conftest import WAIT, Collector
from http_fixtures import (
    ACCEPT_BOTH,
    RawSession,
    RoundRobin,
    SseReader,
    notification,
    request,
    start,
)
from redis_fixture import redis_server, redis_url, wait_for_writes  # noqa: F401 - fixtures

from mcp_ref import Client, Context, Server
from mcp_ref.cancellation import Cancellation
from mcp_ref.http.server.homes import use_key
from mcp_ref.http.server.shared import SESSIONS

pytestmark = pytest.mark.slow


#: The deployment's public URL, the same for every worker behind one balancer (RFC 8707 audience).
RESOURCE = "https://mcp.example/mcp"
#: Its HTTP+SSE endpoint, a resource of its own (``ProtectedResource``: its own identifier).
SSE_RESOURCE = "https://mcp.example/sse"


class Tokens:
    """A token verifier: ``<user>-token`` is user's (alice or bob), for one client, issued for
    both endpoints, RESOURCE and SSE_RESOURCE (RFC 8707 §2: a token requested with two ``resource``
    parameters names both)."""

    def verify(self, token: str):
        from mcp_ref.oauth.resource import AccessInfo

        user = token.removesuffix("-token")
        if not token.endswith("-token") or user not in ("alice", "bob"):
            return None
        return AccessInfo("shared-sessions-client", user, (), audience=(RESOURCE, SSE_RESOURCE))


class Worker:
    """One "worker": a server with the test's tools, its app served on 127.0.0.1, and what its tools
    saw; with ``token``, a protected resource whose clients send ``Authorization: Bearer``."""

    def __init__(
        self,
        name: str,
        state: str | None,
        token: str | None = None,
        *,
        server_options: dict | None = None,
        **options,
    ):
        self.name = name
        self.token = token
        if token is not None:
            from mcp_ref.oauth.resource import ProtectedResource

            options["auth"] = ProtectedResource(Tokens(), ["https://as.example"], resource=RESOURCE)
        self.release = Cancellation()  # lets `steps` go on (an Event that calls back when set)
        self.release_again = threading.Event()  # lets `polled` answer
        self.cancelled = threading.Event()  # `wait_for_cancel` saw its cancellation
        server = Server("shared-sessions", state=state, **(server_options or {}))
        self.server = server

        @server.tool()
        def whoami() -> str:
            """Which worker answered."""
            return name

        @server.tool()
        def echo(text: str) -> str:
            """Its text back (a large answer, for a stream to fill)."""
            return text

        @server.tool()
        def ask(ctx: Context, tag: str = "") -> str:
            """Asks the client (elicitation/create): its answer may come back to another worker."""
            answer = ctx.elicit(
                f"Your name{tag}?", {"type": "object", "properties": {"name": {"type": "string"}}}
            )
            return f"{answer.content['name']} via {name}"

        @server.tool()
        def steps(ctx: Context) -> str:
            """A log line, then waits for the test, then answers."""
            ctx.info(f"step one on {name}")
            self.release.wait(WAIT)
            ctx.info("step two")
            return f"done on {name}"

        @server.tool()
        def polled(ctx: Context) -> str:
            """A log line, then closes its SSE connection (polling), then one more, then answers."""
            ctx.info(f"step one on {name}")
            ctx.close_sse_stream()
            self.release.wait(WAIT)
            ctx.info("step two")
            self.release_again.wait(3 * WAIT)  # longer than the test waits to hear "step two"
            return f"done on {name}"

        @server.tool()
        def polled_until_cancelled(ctx: Context) -> str:
            """A log line, the SSE connection closed (polling), then nothing until it is cancelled."""
            ctx.info("started")
            ctx.close_sse_stream()
            ctx.sleep(3 * WAIT)  # raises as soon as it is cancelled
            return "never"

        @server.tool()
        def wait_for_cancel(ctx: Context) -> str:
            """Runs until it is cancelled."""
            ctx.info("waiting")
            woken = threading.Event()
            ctx.request.cancelled.add_callback(woken.set)
            self.release.add_callback(woken.set)  # the test gave up
            woken.wait(3 * WAIT)
            self.release.remove_callback(woken.set)
            ctx.request.cancelled.remove_callback(woken.set)
            if ctx.is_cancelled:
                self.cancelled.set()
            return "not cancelled"

        @server.tool()
        def chatty(ctx: Context) -> str:
            """One log message at each level."""
            for level in ("debug", "info", "warning", "error"):
                ctx.log(level, f"{level} from {name}")
            return name

        @server.tool()
        def add_tool(tool: str) -> str:
            """Registers a tool here (tools/list_changed to every session)."""
            server.add_tool(lambda: "late", name=tool, description="added at run time")
            return f"added {tool}"

        @server.resource("memo://note")
        def note() -> str:
            """A note to subscribe to."""
            return "a note"

        @server.resource("memo://other")
        def other() -> str:
            """Another one."""
            return "another note"

        @server.tool()
        def touch_note(uri: str = "memo://note") -> str:
            """The note changed (resources/updated to its subscribers)."""
            server.notify_resource_updated(uri)
            return "touched"

        self.served = start(server, **options)
        self.mcp = self.served.mcp
        self.app = self.served.app

    @property
    def headers(self) -> dict:
        """What each request of the test's client carries: the bearer token, if any."""
        return {} if self.token is None else {"Authorization": f"Bearer {self.token}"}

    def raw(self) -> RawSession:
        """A raw session on this worker, with the token (if any) on every request."""
        raw = RawSession(self.mcp)
        raw.http.headers.update(self.headers)
        return raw

    def stop(self) -> None:
        self.release.set()
        self.release_again.set()
        self.served.stop()
        if self.server.shared_state is not None:
            self.server.shared_state.close()


@pytest.fixture(params=[None, "alice-token"], ids=["no token", "bearer token"])
def workers(redis_url, request):
    """``workers(n=2, **app_options)``: n workers sharing ``redis_url``; each test runs without a
    token and with a bearer token (the sessions then belong to its principal, on every worker)."""
    made: list[Worker] = []

    def make(n: int = 2, **options) -> list[Worker]:
        new = [
            Worker(f"w{len(made) + i}", redis_url, request.param, keepalive=0.5, **options)
            for i in range(n)
        ]
        made.extend(new)
        return new

    yield make
    for worker in made:
        worker.stop()


def on(raw: RawSession, worker: Worker) -> RawSession:
    """The raw session's next requests go to ``worker``."""
    raw.url = worker.mcp
    return raw


def tool_call(raw: RawSession, name: str, arguments: dict | None = None, **options):
    return raw.call("tools/call", {"name": name, "arguments": arguments or {}}, **options)


def next_within(reader: SseReader, seconds: float = WAIT) -> dict:
    """The reader's next event, which must come within ``seconds`` (keep-alives do not count)."""
    got: list = []
    thread = threading.Thread(target=lambda: got.append(reader.next()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert got, f"no event within {seconds} s"
    return got[0]


def test_a_session_made_on_one_worker_is_served_by_the_other(workers):
    a, b = workers()
    raw = a.raw()
    raw.initialize(initialized=False)
    assert on(raw, b).post(notification("notifications/initialized")).status_code == 202
    request_id, response = tool_call(on(raw, b), "whoami")
    answer, _ = raw.result(response, request_id)
    assert answer["result"]["content"][0]["text"] == "w1"
    request_id, response = tool_call(on(raw, a), "whoami")
    assert raw.result(response, request_id)[0]["result"]["content"][0]["text"] == "w0"
    listed = on(raw, b).receive_json(on(raw, b).post(request("tools/list", None, raw.next_id())))
    assert "whoami" in {tool["name"] for tool in listed["result"]["tools"]}


def test_another_principal_or_an_unknown_id_is_not_found_on_any_worker(workers):
    a, b = workers()
    raw = a.raw()
    raw.initialize()
    raw.session_id = raw.session_id[:-2] + ("AA" if not raw.session_id.endswith("AA") else "BB")
    for worker in (a, b):
        assert on(raw, worker).post(request("tools/list", None, raw.next_id())).status_code == 404


def test_a_session_with_a_bearer_token_is_served_by_every_worker_and_no_orphan_is_made(redis_url):
    """Issue 32, item 1: ``initialize`` on A with ``Authorization: Bearer``, then the same token and
    ``Mcp-Session-Id`` on B: 200 (the record's principal, read back from JSON, is the caller's).
    Another user's token gets 404 on every worker; a client through a round-robin balancer keeps one
    session (no 404 made it start another), so the table holds only the sessions made."""
    from mcp_ref.state.redis import RedisState

    a, b = (Worker(f"w{n}", redis_url, "alice-token", keepalive=0.5) for n in range(2))
    state = RedisState.from_url(redis_url)
    balancer = RoundRobin([a.served.url, b.served.url])
    try:
        raw = a.raw()
        raw.initialize()
        for worker in (b, a, b):
            request_id, response = tool_call(on(raw, worker), "whoami")
            assert response.status_code == 200, (response.status_code, response.text)
            answer = raw.result(response, request_id)[0]
            assert answer["result"]["content"][0]["text"] == worker.name
        bob = {"Authorization": "Bearer bob-token"}
        for worker in (a, b):
            listing = request("tools/list", None, raw.next_id())
            assert on(raw, worker).post(listing, headers=bob).status_code == 404
        balanced = balancer.url + "/mcp"
        with Client.http(balanced, timeout=WAIT, era="handshake", headers=a.headers) as client:
            answered_by = [client.call_tool("whoami").content[0].text for _ in range(6)]
            assert set(answered_by) == {"w0", "w1"}
            assert len(state.session_table()) == 2  # the raw session and the client's: no orphan
    finally:
        balancer.stop()
        state.close()
        a.stop()
        b.stop()


def test_a_client_through_a_balancer_without_sticky_sessions_works_as_with_one_process(workers):
    """Every request to the next worker in turn: the handshake, an elicitation whose answer is
    posted to the other worker, a log level set on one and obeyed on the other, a list change and a
    resource update heard on the GET stream whichever worker holds it, and the session's end."""
    a, b = workers()
    balancer = RoundRobin([a.served.url, b.served.url])
    changed, updated, logs = threading.Event(), threading.Event(), []
    logged = threading.Event()

    def on_log(message) -> None:
        logs.append((message.level, message.data))
        if message.data.startswith("error from"):
            logged.set()

    try:
        with Client.http(
            balancer.url + "/mcp",
            timeout=WAIT,
            era="handshake",
            headers=a.headers,
            elicitation_handler=lambda params: {"action": "accept", "content": {"name": "Ada"}},
            on_list_changed=lambda kind: changed.set(),
            on_resource_updated=lambda uri: updated.set(),
            on_log=on_log,
        ) as client:
            answered_by = {client.call_tool("whoami").content[0].text for _ in range(4)}
            assert answered_by == {"w0", "w1"}
            for _ in range(
                2
            ):  # the answer to elicitation/create reaches the worker that asked, wherever posted
                assert client.call_tool("ask").content[0].text.startswith("Ada via w")
            client.set_logging_level("warning")
            for _ in range(2):
                logs.clear()
                logged.clear()
                text = client.call_tool("chatty").content[0].text
                assert logged.wait(WAIT)
                assert [level for level, _ in logs] == ["warning", "error"], (text, logs)
            client.subscribe("memo://note")
            client.call_tool("touch_note")
            assert updated.wait(WAIT)
            client.call_tool("add_tool", {"tool": "late"})
            assert changed.wait(WAIT)
            session_id = client.session.transport.session_id
    finally:
        balancer.stop()
    raw = a.raw()  # the client deleted its session: gone from every worker
    raw.session_id, raw.version = session_id, "2025-11-25"
    for worker in (a, b):
        assert on(raw, worker).post(request("tools/list", None, raw.next_id())).status_code == 404


def test_a_log_level_set_on_one_worker_is_obeyed_on_the_other_before_the_bus_tells_it(workers):
    """2025-11-25 server/utilities/logging §Setting Log Level: once ``logging/setLevel`` is answered
    (by A), a request sent after the answer obeys it on B too, even while B has not heard A's bus
    message (B's bus is held here): B's touch of the record finds its generation changed and B reads
    the record again before serving the request (read-your-writes; .shared.SharedSessions.touch)."""
    a, b = workers()
    raw = a.raw()
    raw.initialize()
    request_id, response = tool_call(
        on(raw, b), "whoami"
    )  # B holds a replica: no level yet (every level)
    assert raw.result(response, request_id)[0]["result"]["content"][0]["text"] == "w1"
    held, release = threading.Event(), threading.Event()

    def hold(message) -> None:  # B's bus delivers nothing more until released
        held.set()
        release.wait(WAIT)

    stop = b.server.bus.subscribe("test:hold", hold)
    try:
        b.server.bus.publish("test:hold", {})
        assert held.wait(WAIT)
        request_id, response = on(raw, a).call("logging/setLevel", {"level": "warning"})
        assert raw.result(response, request_id)[0]["result"] == {}
        request_id, response = tool_call(on(raw, b), "chatty")
        answer, before = raw.result(response, request_id)
        assert answer["result"]["content"][0]["text"] == "w1"
        logged = [
            m["params"]["level"] for m in before if m.get("method") == "notifications/message"
        ]
        assert logged == ["warning", "error"], before
    finally:
        release.set()
        stop()


def test_the_redis_session_table_counts_each_change_and_a_touch_says_how_many(redis_url):
    """What the read-your-writes check above rests on: ``update`` counts a generation, ``touch``
    returns it in the same script (no extra round trip), ``get`` returns it with the record."""
    from mcp_ref.state.redis import RedisState

    state = RedisState.from_url(redis_url)
    try:
        table = state.session_table()
        table.add("g", {"version": "2025-11-25"})
        assert table.touch_generation("g") == (True, 0) and "generation" not in table.get(
            "g"
        )  # absent: 0
        assert table.update("g", {"logLevel": "warning"}) and table.update(
            "g", {"sub:memo://x": True}
        )
        assert table.touch_generation("g") == (True, 2) and table.get("g")["generation"] == 2
        assert table.touch("g") and table.remove("g")
        assert table.touch_generation("g") == (False, None) and not table.touch("g")
    finally:
        state.close()


def test_a_post_stream_is_resumed_on_the_other_worker(workers):
    """2025-11-25 basic/transports §Resumability: the client lost a POST's stream on worker A and
    resumes it on worker B with Last-Event-ID: it gets what followed, then the answer, then the end."""
    a, b = workers()
    raw = a.raw()
    raw.initialize()
    request_id, response = tool_call(on(raw, a), "steps", stream=True)
    reader = SseReader(response)
    seen = [reader.next(), reader.next()]  # the priming event, then "step one"
    assert not seen[0]["data"] and seen[0]["id"]
    assert json.loads(seen[1]["data"])["params"]["data"] == "step one on w0"
    reader.close()  # the connection drops; the request goes on on A
    a.release.set()
    resumed = on(raw, b).get(headers={"Last-Event-ID": seen[1]["id"]})
    assert resumed.status_code == 200
    messages = [message for _, message in SseReader(resumed).messages()]  # to the stream's end
    assert [m.get("params", {}).get("data") for m in messages[:-1]] == ["step two"]
    assert (
        messages[-1]["id"] == request_id
        and messages[-1]["result"]["content"][0]["text"] == "done on w0"
    )


def test_a_post_stream_closed_for_polling_is_followed_live_on_the_other_worker(workers):
    """2025-11-25 basic/transports §Sending Messages: the server "MAY close the connection (without
    terminating the SSE stream)"; the client resumes on another worker and hears each later event as it
    is sent (written through to the shared store), before the request has ended."""
    a, b = workers()
    raw = a.raw()
    raw.initialize()
    request_id, response = tool_call(on(raw, a), "polled", stream=True)
    events = []
    reader = SseReader(response)
    for _ in range(3):
        events.append(reader.next())  # priming, "step one", then the retry event (SSE polling)
    reader.close()  # (an inline handler's response ends when it returns: the client leaves at the retry)
    assert [json.loads(e["data"])["params"]["data"] for e in events if e["data"]] == [
        "step one on w0"
    ]
    assert events[-1]["retry"] is not None
    a.release.set()
    resumed = SseReader(on(raw, b).get(headers={"Last-Event-ID": events[-1]["id"]}))
    step_two = next_within(resumed)
    assert (
        json.loads(step_two["data"])["params"]["data"] == "step two"
    )  # heard while the request still runs
    a.release_again.set()
    messages = [message for _, message in resumed.messages()]
    assert len(messages) == 1 and messages[0]["id"] == request_id
    assert messages[0]["result"]["content"][0]["text"] == "done on w0"


def test_a_cancellation_posted_to_one_worker_reaches_the_request_on_the_other(workers):
    a, b = workers()
    raw = a.raw()
    raw.initialize()
    request_id, response = tool_call(on(raw, a), "wait_for_cancel", stream=True)
    reader = SseReader(response)
    while (event := reader.next()) is not None and not event["data"]:
        pass  # the priming event; then "waiting": the handler runs
    cancel = notification("notifications/cancelled", {"requestId": request_id, "reason": "test"})
    assert on(raw, b).post(cancel).status_code == 202
    assert a.cancelled.wait(WAIT)
    reader.close()


def test_the_get_stream_on_one_worker_hears_a_change_made_on_the_other_and_resumes_on_a_third(
    workers,
):
    a, b, c = workers(3)
    raw = a.raw()
    raw.initialize()
    stream = SseReader(on(raw, b).get())
    priming = stream.next()
    assert priming["id"] and not priming["data"]
    tool_call(on(raw, c), "add_tool", {"tool": "from_c"})
    heard = stream.next()
    assert json.loads(heard["data"])["method"] == "notifications/tools/list_changed"
    stream.close()
    tool_call(on(raw, a), "add_tool", {"tool": "from_a"})  # while no one listens: kept in the store
    again = SseReader(on(raw, c).get(headers={"Last-Event-ID": heard["id"]}))
    assert json.loads(again.next()["data"])["method"] == "notifications/tools/list_changed"
    again.close()


def test_deleted_on_one_worker_the_session_ends_on_every_worker_and_its_streams_close(workers):
    a, b = workers()
    raw = a.raw()
    raw.initialize()
    tool_call(on(raw, b), "whoami")  # b holds a replica now
    stream = on(raw, b).get()
    assert on(raw, a).delete().status_code == 200
    assert (
        SseReader(stream).messages() == []
    )  # b's GET stream ends (no hang: the reader's timeout bounds it)
    for worker in (a, b):
        assert on(raw, worker).post(request("tools/list", None, raw.next_id())).status_code == 404


def test_the_session_cap_counts_every_worker(workers):
    a, b = workers(max_sessions=2, max_sessions_per_client=None)  # one address: the table's cap
    for worker in (a, b):
        worker.raw().initialize()
    refused = b.raw().post(
        request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
            1,
        ),
        version=False,
    )
    assert refused.status_code == 503


INITIALIZE = request(
    "initialize",
    {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
    1,
)


def test_a_session_whose_request_runs_on_another_worker_is_not_ended_as_its_clients_idlest(
    workers, redis_url
):
    """max_sessions_per_client=1: the client's one session runs a call on B while it initializes
    again on A, where the session was made.  The session is in use (B marks it so in the shared
    state), so the new one gets 429 and the call is answered; it used to be ended under the call
    ("Session ended before this request was answered")."""
    a, b = workers(max_sessions_per_client=1)
    raw = a.raw()
    raw.initialize()
    request_id, response = tool_call(on(raw, b), "steps", stream=True)
    reader = SseReader(response)
    while (event := reader.next()) is not None and not event["data"]:
        pass  # the priming event; then "step one": the handler runs on B
    refused = a.raw().post(INITIALIZE, version=False)
    assert refused.status_code == 429 and refused.json()["error"]["data"] == {"limit": 1}
    b.release.set()
    messages = [message for _, message in reader.messages()]
    assert messages[-1]["id"] == request_id
    assert messages[-1]["result"]["content"][0]["text"] == "done on w1"
    # idle everywhere once B's watcher lets its mark go (within a second), a write to the shared
    # held sets: the session makes room
    mark = ("held", use_key(a.app.live_session(raw.session_id)))

    def initialized() -> bool:
        return a.raw().post(INITIALIZE, version=False).status_code == 200

    assert wait_for_writes(redis_url, mark, initialized, WAIT)
    assert on(raw, a).post(request("ping", None, raw.next_id())).status_code == 404


@pytest.mark.parametrize("where", ["same worker", "other worker"])
def test_a_session_whose_get_stream_is_followed_is_not_ended_as_its_clients_idlest(workers, where):
    """max_sessions_per_client=1: a GET stream followed from the shared event store, on the worker
    that made the session or another, makes it in use: a new initialize gets 429, and the stream
    stays open (it used to be ended, and the session with it)."""
    a, b = workers(max_sessions_per_client=1)
    raw = a.raw()
    raw.initialize()
    stream = SseReader(on(raw, a if where == "same worker" else b).get())
    assert stream.next()["id"]  # priming: the stream is followed
    refused = a.raw().post(INITIALIZE, version=False)
    assert refused.status_code == 429
    tool_call(on(raw, a), "add_tool", {"tool": "still_heard"})
    heard = next_within(stream)
    assert json.loads(heard["data"])["method"] == "notifications/tools/list_changed"
    stream.close()


def test_a_2024_11_05_message_posted_to_another_worker_is_answered_on_the_stream(workers):
    """HTTP+SSE: the stream is the session, held by the worker it was opened on; a message POSTed to
    another worker goes there over the bus (202), and its answer comes on the stream."""
    import requests

    a, b = workers()
    listen = {"Accept": "text/event-stream", **a.headers}
    stream = SseReader(
        requests.get(a.served.sse, headers=listen, stream=True, timeout=(WAIT, WAIT))
    )
    endpoint = stream.next()
    assert endpoint["event"] == "endpoint"
    post_to_b = b.served.url + endpoint["data"]
    init = request(
        "initialize",
        {
            "protocolVersion": "2024-11-05",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
        1,
    )
    assert requests.post(post_to_b, json=init, headers=b.headers, timeout=WAIT).status_code == 202
    assert json.loads(next_within(stream)["data"])["result"]["protocolVersion"] == "2024-11-05"
    initialized = notification("notifications/initialized")
    requests.post(post_to_b, json=initialized, headers=b.headers, timeout=WAIT)
    call = request("tools/call", {"name": "whoami", "arguments": {}}, 2)
    assert requests.post(post_to_b, json=call, headers=b.headers, timeout=WAIT).status_code == 202
    answer = json.loads(next_within(stream)["data"])
    assert (
        answer["id"] == 2 and answer["result"]["content"][0]["text"] == "w0"
    )  # served where the stream is
    # its id names no Streamable HTTP session, on its worker nor on another (which would have
    # made a replica of it from its record): 404 at /mcp, and the legacy session goes on
    legacy_id = endpoint["data"].rsplit("session_id=", 1)[1]
    for worker in (a, b):
        posted = requests.post(
            worker.mcp,
            json=request("tools/list", None, 3),
            headers={"Mcp-Session-Id": legacy_id, "Accept": ACCEPT_BOTH, **worker.headers},
            timeout=WAIT,
        )
        assert posted.status_code == 404
    assert requests.post(post_to_b, json=call, headers=b.headers, timeout=WAIT).status_code == 202
    assert json.loads(next_within(stream)["data"])["id"] == 2
    stream.close()
    unknown = b.served.url + "/messages?session_id=unknown"
    assert requests.post(unknown, json=call, headers=b.headers, timeout=WAIT).status_code == 404


def test_2024_11_05_messages_posted_to_another_worker_keep_to_the_clients_share_of_the_pool(
    workers,
):
    """handler_threads=8 (max_handlers_per_client 2): a 2024-11-05 client's calls POSTed to B run
    on A, where its stream is, and count there: the third is answered -31000 Server busy on the
    stream (it used to run past the share)."""
    import requests

    a, b = workers(handler_threads=8)
    listen = {"Accept": "text/event-stream", **a.headers}
    stream = SseReader(
        requests.get(a.served.sse, headers=listen, stream=True, timeout=(WAIT, WAIT))
    )
    post_to_b = b.served.url + stream.next()["data"]

    def post(message) -> None:
        sent = requests.post(post_to_b, json=message, headers=b.headers, timeout=WAIT)
        assert sent.status_code == 202

    post(request("initialize", INITIALIZE["params"] | {"protocolVersion": "2024-11-05"}, "i"))
    assert json.loads(next_within(stream)["data"])["id"] == "i"
    post(notification("notifications/initialized"))
    for n in range(3):
        post(request("tools/call", {"name": "steps", "arguments": {}}, n))
    answers: dict = {}
    while 2 not in answers:
        message = json.loads(next_within(stream)["data"])
        if "id" in message:
            answers[message["id"]] = message
    assert answers[2]["error"]["code"] == -31000 and answers[2]["error"]["data"] == {"limit": 2}
    a.release.set()
    while len(answers) < 3:
        message = json.loads(next_within(stream)["data"])
        if "id" in message:
            answers[message["id"]] = message
    assert [answers[n]["result"]["content"][0]["text"] for n in (0, 1)] == ["done on w0"] * 2
    stream.close()


def open_legacy_session(home: Worker) -> tuple[SseReader, str]:
    """A 2024-11-05 session whose stream ``home`` holds, initialized there: its stream's reader, and
    the path its messages are POSTed to (on any worker)."""
    import requests

    listen = {"Accept": "text/event-stream", **home.headers}
    stream = SseReader(
        requests.get(home.served.sse, headers=listen, stream=True, timeout=(WAIT, WAIT))
    )
    endpoint = stream.next()
    assert endpoint["event"] == "endpoint"
    path = endpoint["data"]
    init = request("initialize", INITIALIZE["params"] | {"protocolVersion": "2024-11-05"}, "i")
    posted = requests.post(home.served.url + path, json=init, headers=home.headers, timeout=WAIT)
    assert posted.status_code == 202
    assert json.loads(next_within(stream)["data"])["id"] == "i"
    initialized = notification("notifications/initialized")
    posted = requests.post(
        home.served.url + path, json=initialized, headers=home.headers, timeout=WAIT
    )
    assert posted.status_code == 202
    return stream, path


def answer_on(stream: SseReader, request_id) -> dict:
    """The answer to ``request_id`` on a 2024-11-05 stream (the notifications before it skipped:
    the lists re-announced after the bus reconnects)."""
    while "id" not in (message := json.loads(next_within(stream)["data"])):
        pass
    assert message["id"] == request_id, message
    return message


class ShutOutHome:
    """Workers ``a`` and ``b`` sharing a namespace of their own (``name``) on ``redis_server``;
    ``a`` reaches Redis as a user of its own, which the test can shut out of new connections, so
    that no process hears what is published to ``a`` (:meth:`deafen`) until :meth:`hear`."""

    def __init__(self, redis_server, name: str):
        import redis

        namespace = f"{redis_server.url}?namespace={name}-{threading.get_ident()}"
        self.admin = redis.Redis.from_url(redis_server.url)
        self.user = f"{name}-a-{threading.get_ident()}"
        self.admin.acl_setuser(
            self.user,
            enabled=True,
            passwords=["+a-pass"],
            keys=["*"],
            channels=["*"],
            commands=["+@all"],
        )
        self.a = Worker("a", namespace.replace("redis://", f"redis://{self.user}:a-pass@"))
        self.b = Worker("b", namespace)

    def deafen(self) -> None:
        """End ``a``'s pub/sub connection, with its user shut out so that it cannot come back."""
        bus = self.a.server.bus
        assert bus.wait_for(lambda: bus.connected, WAIT)  # a pub/sub connection to end
        self.admin.acl_setuser(self.user, enabled=False)
        assert self.admin.client_kill_filter(_type="pubsub", user=self.user) >= 1
        assert bus.wait_for(lambda: not bus.connected, WAIT)

    def hear(self) -> None:
        """Let ``a``'s user in again, and wait until its pub/sub connection is back with every
        channel subscribed again (a reconnection is counted once Redis confirmed them all)."""
        from mcp_ref.http.server.shared import DELIVERY_WINDOW

        bus = self.a.server.bus
        reconnects = bus.reconnects
        self.admin.acl_setuser(self.user, enabled=True)
        assert bus.wait_for(lambda: bus.reconnects > reconnects, WAIT + DELIVERY_WINDOW)

    def close(self) -> None:
        """Stop both workers; remove ``a``'s user."""
        self.a.stop()
        self.b.stop()
        self.admin.acl_deluser(self.user)
        self.admin.close()


def test_a_2024_11_05_message_its_streams_worker_cannot_hear_is_refused_503_not_lost(redis_server):
    """A 2024-11-05 POST to B for a session whose stream A holds goes to A over the bus; while A's
    pub/sub connection is reconnecting no process hears it, and pub/sub keeps nothing.  B answered
    202 and the request was lost: no answer ever came on the stream.  Now it goes as a Streamable
    HTTP client's answer does (shared.DELIVERY_WINDOW): published again for a while, then refused 503
    with Retry-After; sent again once A hears, it is answered on the stream."""
    import requests

    from mcp_ref.http.server.shared import DELIVERY_WINDOW

    pair = ShutOutHome(redis_server, "legacy-unheard")
    a, b = pair.a, pair.b
    try:
        stream, path = open_legacy_session(a)
        pair.deafen()
        call = request("tools/call", {"name": "whoami", "arguments": {}}, 2)
        refused = requests.post(b.served.url + path, json=call, timeout=WAIT + DELIVERY_WINDOW)
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "1"
        pair.hear()  # sent again once A hears: taken
        assert requests.post(b.served.url + path, json=call, timeout=WAIT).status_code == 202
        answer = answer_on(stream, 2)
        assert answer["result"]["content"][0]["text"] == "a"
        stream.response.close()
    finally:
        pair.close()


def test_a_2024_11_05_post_to_another_worker_is_refused_503_while_the_stream_is_full(workers):
    """docs/deploying.md: past either bound (``backlog_bytes``, ``standalone_backlog``) an HTTP+SSE
    session's new POSTs get 503 with ``Retry-After: 1`` until its client reads.  With A's stream
    full (its client reads nothing), POSTs to A got 503, but the same POSTs to B were forwarded and
    run on A, their answers piling up on the stream past its bound without limit.  Now A refuses
    them, its word goes back to B, and B answers 503 as A does; nothing refused was run, and every
    POST accepted is answered once the client reads."""
    import requests

    a, b = workers(backlog_bytes=300_000)
    stream, path = open_legacy_session(a)
    big = "x" * 100_000  # 100 KB answers: the socket buffers fill soon, then the stream's bound

    def post(worker: Worker, request_id):
        call = request("tools/call", {"name": "echo", "arguments": {"text": big}}, request_id)
        return requests.post(
            worker.served.url + path, json=call, headers=worker.headers, timeout=WAIT
        )

    accepted: set = set()
    refused: set = set()

    def post_until_refused(worker: Worker, name: str):
        """POSTs through ``worker`` until one is refused: its response."""
        for number in range(150):
            request_id = f"{name}{number}"
            response = post(worker, request_id)
            if response.status_code != 202:
                refused.add(request_id)
                return response
            accepted.add(request_id)
        raise AssertionError(f"no POST through {name} was refused: the stream never filled")

    to_a = post_until_refused(a, "a")  # until A's stream is full
    assert to_a.status_code == 503
    # A's stream may have been full only while its writer lagged behind the socket, which then
    # took more: B's POSTs are taken until the socket's buffers are full too
    to_b = post_until_refused(b, "b")
    assert to_b.status_code == 503 and to_b.headers["Retry-After"] == "1"
    assert "event stream is full" in to_b.json()["error"]["message"]
    answered: set = set()
    while len(answered) < len(accepted):  # the client reads again
        message = json.loads(next_within(stream)["data"])
        assert message.get("id") not in refused
        if "id" in message:
            assert message["result"]["content"][0]["text"] == big
            answered.add(message["id"])
    assert answered == accepted
    assert post(b, "after").status_code == 202  # room again: taken through B, run on A
    assert answer_on(stream, "after")["result"]["content"][0]["text"] == big
    stream.response.close()


def test_a_2024_11_05_session_ended_twice_is_removed_and_published_once(workers, monkeypatch):
    """A 2024-11-05 session's end comes twice (its stream's body ends, then its response closes):
    each one removed it from the shared table and published its end to every worker again.  Now
    the second finds it ended already and does nothing."""
    (a,) = workers(1)
    stream, path = open_legacy_session(a)
    session = a.app.live_session(legacy_session_id(path))
    assert session is not None
    published: list = []
    monkeypatch.setattr(a.app.shared_sessions, "ended", published.append)
    a.app.end(session)
    a.app.end(session)
    assert published == [session.id]
    stream.response.close()


def test_a_session_ending_after_its_application_closed_subscribes_to_nothing(workers):
    """At shutdown, a 2024-11-05 session whose stream ended after its application closed subscribed
    to the bus again (subscriptions nobody would stop), or, the bus closed too, raised "the bus is
    closed" into the server's log.  Now a closed application subscribes to nothing; a session
    ending then still publishes its end."""
    from mcp_ref.http.server.shared import SESSIONS

    a, b = workers()
    heard = threading.Event()
    b.server.bus.subscribe(
        SESSIONS, lambda message: message.get("session") == "late" and heard.set()
    )
    shared = a.app.shared_sessions
    shared.close()
    shared.ended("late")
    assert heard.wait(WAIT)
    assert not shared._listening
    a.server.shared_state.close()  # its bus closed too
    shared.ended("later")  # raised RuntimeError
    assert not shared._listening


def legacy_session_id(path: str) -> str:
    """The session id in a 2024-11-05 session's POST path (``/messages?session_id=...``)."""
    return path.rsplit("session_id=", 1)[1]


def test_a_2024_11_05_post_forwarded_to_a_worker_of_an_earlier_release_is_answered_202_once_heard(
    workers,
):
    """A worker of an earlier release holds the stream (here A, made to behave as one: its record
    without the word-sending flag, and it runs a forwarded message without sending a word).  B
    waited for a word that never came: 503 after shared.DELIVERY_WINDOW although A ran the message,
    and each retry ran it again.  Now B waits only for a worker whose record says it sends one:
    202 once A heard it, and it runs once."""
    import requests

    from mcp_ref.http.server.shared import SENDS_VERDICTS

    a, b = workers()
    stream, path = open_legacy_session(a)
    assert a.app.session_table.update(legacy_session_id(path), {SENDS_VERDICTS: None})
    a.app.shared_sessions._answer_forward = lambda message, verdict: True  # sends no word
    call = request("tools/call", {"name": "whoami", "arguments": {}}, 2)
    posted = requests.post(b.served.url + path, json=call, headers=b.headers, timeout=WAIT)
    assert posted.status_code == 202
    assert answer_on(stream, 2)["result"]["content"][0]["text"] == "w0"
    last = request("tools/call", {"name": "whoami", "arguments": {}}, 3)
    posted = requests.post(a.served.url + path, json=last, headers=a.headers, timeout=WAIT)
    assert posted.status_code == 202
    assert answer_on(stream, 3)["result"]["content"][0]["text"] == "w0"  # 2 was answered once
    stream.response.close()


def test_a_2024_11_05_post_a_worker_of_an_earlier_release_forwards_while_the_stream_is_full_runs(
    workers,
):
    """A worker of an earlier release (here B, made to behave as one: it publishes the message with
    no reply token, as that release did) answered the POST 202 once A heard it, whatever A's stream
    held.  A, its stream full, refused it, with nobody to hear the refusal, and ran nothing: a 202
    never answered.  Now a message with no reply token runs even while the stream is full (the
    answers of accepted POSTs are kept past the bound): answered once the client reads."""
    import requests

    a, b = workers(backlog_bytes=300_000)
    stream, path = open_legacy_session(a)
    session_id = legacy_session_id(path)
    big = "x" * 100_000

    def post(request_id):
        call = request("tools/call", {"name": "echo", "arguments": {"text": big}}, request_id)
        return requests.post(a.served.url + path, json=call, headers=a.headers, timeout=WAIT)

    accepted = 0
    while post(accepted).status_code == 202:  # until A's stream is full
        accepted += 1
        assert accepted < 150, "the stream never filled"
    state = a.app.session_table.get(session_id)["state"]
    call = request("tools/call", {"name": "echo", "arguments": {"text": "old"}}, "via old b")
    heard = b.app.shared_sessions._deliver(
        session_id,
        state["home"],
        json.dumps(call),
        kind="legacy",
        principal=state["principal"],
    )
    assert heard  # the earlier release's forwarder answered 202 here
    answered: dict = {}
    while "via old b" not in answered or len(answered) <= accepted:  # the client reads again
        message = json.loads(next_within(stream)["data"])
        if "id" in message:
            answered[message["id"]] = message["result"]["content"][0]["text"]
    assert answered.pop("via old b") == "old"
    assert set(answered) == set(range(accepted))
    stream.response.close()


def test_a_2024_11_05_post_whose_worker_cannot_hear_the_word_on_it_is_refused_and_not_run(
    redis_server,
):
    """B forwards a 2024-11-05 POST to A, which holds the stream, and waits for A's word on it
    (taken, or refused: the stream full).  While B's own pub/sub connection is reconnecting that
    word reaches no process: B cannot say 202, so it answers 503 (Retry-After), and A, its word
    unheard, does not run the message, which the client sends again: it runs once."""
    import redis
    import requests

    from mcp_ref.http.server.shared import DELIVERY_WINDOW

    namespace = f"{redis_server.url}?namespace=legacy-no-word-{threading.get_ident()}"
    admin = redis.Redis.from_url(redis_server.url)
    # worker b reaches Redis as a user of its own, which the test can shut out of new connections
    user = f"legacy-forwarder-{threading.get_ident()}"
    admin.acl_setuser(
        user, enabled=True, passwords=["+b-pass"], keys=["*"], channels=["*"], commands=["+@all"]
    )
    a = Worker("a", namespace)
    b = Worker("b", namespace.replace("redis://", f"redis://{user}:b-pass@"))
    try:
        stream, path = open_legacy_session(a)
        call = request("tools/call", {"name": "whoami", "arguments": {}}, 2)
        assert requests.post(b.served.url + path, json=call, timeout=WAIT).status_code == 202
        assert answer_on(stream, 2)["result"]["content"][0]["text"] == "a"
        bus = b.server.bus
        assert bus.wait_for(lambda: bus.connected, WAIT)
        admin.acl_setuser(user, enabled=False)  # its pub/sub connection cannot come back
        assert admin.client_kill_filter(_type="pubsub", user=user) >= 1
        assert bus.wait_for(lambda: not bus.connected, WAIT)
        call = request("tools/call", {"name": "whoami", "arguments": {}}, 3)
        refused = requests.post(b.served.url + path, json=call, timeout=WAIT + 2 * DELIVERY_WINDOW)
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "1"
        reconnects = bus.reconnects
        admin.acl_setuser(user, enabled=True)
        # counted once Redis confirmed every channel again: B hears A's word on the next POST
        assert bus.wait_for(lambda: bus.reconnects > reconnects, WAIT + DELIVERY_WINDOW)
        assert requests.post(b.served.url + path, json=call, timeout=WAIT).status_code == 202
        assert answer_on(stream, 3)["result"]["content"][0]["text"] == "a"
        # the refused one was not run: no second answer to it before the next call's
        last = request("tools/call", {"name": "whoami", "arguments": {}}, 4)
        assert requests.post(a.served.url + path, json=last, timeout=WAIT).status_code == 202
        assert answer_on(stream, 4)["result"]["content"][0]["text"] == "a"
        stream.response.close()
    finally:
        a.stop()
        b.stop()
        admin.acl_deluser(user)
        admin.close()


def test_when_the_home_worker_exits_another_worker_sends_the_sessions_change_notifications(workers):
    """Change notifications of a session are sent by one worker, its home (where it was made): when
    that worker exits, it lets go, and the next worker serving the session becomes its home."""
    a, b = workers()
    raw = a.raw()
    raw.initialize()
    stream = SseReader(on(raw, b).get())
    assert stream.next()["id"]  # priming: b follows the session's standalone stream
    a.stop()  # the home exits (cleanly: gunicorn's stop, with mcp_ref.http.gunicorn_hooks)
    request_id, response = tool_call(
        on(raw, b), "add_tool", {"tool": "after_a"}
    )  # b serves, and claims the home
    assert raw.result(response, request_id)[0]["result"]["content"][0]["text"] == "added after_a"
    heard = next_within(stream)
    assert json.loads(heard["data"])["method"] == "notifications/tools/list_changed"
    stream.close()


def test_redis_stopped_and_restarted_under_shared_sessions(tmp_path):
    """deployment.md, "Faults": with the session table unreachable, a worker goes on serving the
    sessions it holds, and answers 503 with Retry-After where it needs the table (a new session, a
    session it does not hold yet); no hang.  A Redis that keeps its data (appendonly) brings every
    session back on every worker once it is up."""
    import time

    from redis_fixture import RedisServer, required_binary

    redis = RedisServer(required_binary(), tmp_path, persistent=True)
    redis.start()
    a, b = (Worker(f"w{n}", f"{redis.url}?namespace=faults", keepalive=0.5) for n in range(2))
    try:
        raw = a.raw()
        raw.initialize()
        redis.stop()
        started = time.monotonic()
        request_id, response = tool_call(on(raw, a), "whoami")  # held by a: served
        assert raw.result(response, request_id)[0]["result"]["content"][0]["text"] == "w0"
        refused = on(raw, b).post(
            request("tools/list", None, raw.next_id())
        )  # b must read the record
        assert refused.status_code == 503 and refused.headers["Retry-After"]
        fresh = b.raw().post(
            request(
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
                1,
            ),
            version=False,
        )
        assert fresh.status_code == 503
        assert time.monotonic() - started < WAIT  # bounded by the socket timeouts
        redis.start()  # with its data
        request_id, response = tool_call(on(raw, b), "whoami")
        assert raw.result(response, request_id)[0]["result"]["content"][0]["text"] == "w1"
    finally:
        a.stop()
        b.stop()
        redis.stop()


def elicitation_of(reader: SseReader) -> dict:
    """The next request to the client on a POST stream (skipping the priming event)."""
    while True:
        event = next_within(reader)
        if event["data"]:
            message = json.loads(event["data"])
            if message.get("method") == "elicitation/create":
                return message


def test_requests_to_the_client_from_two_workers_never_share_an_id_and_each_answer_reaches_its_asker(
    workers,
):
    """basic §Requests: an id "MUST NOT have been previously used by the requestor within the same
    session"; two workers asking at once use ids that name them, and each answer, posted to the
    other worker on purpose, reaches the one that asked."""
    a, b = workers()
    raw = a.raw()
    raw.initialize(capabilities={"elicitation": {}})
    ids_and_readers = []
    for worker, tag in ((a, "a"), (b, "b")):
        request_id, response = tool_call(on(raw, worker), "ask", {"tag": tag}, stream=True)
        reader = SseReader(response)
        ids_and_readers.append((request_id, reader, elicitation_of(reader)))
    (a_call, a_reader, a_asks), (b_call, b_reader, b_asks) = ids_and_readers
    assert a_asks["id"] != b_asks["id"]
    for asked, worker, name in (
        (b_asks, a, "bee"),
        (a_asks, b, "ay"),
    ):  # each answer to the other worker
        answer = {
            "jsonrpc": "2.0",
            "id": asked["id"],
            "result": {"action": "accept", "content": {"name": name}},
        }
        assert on(raw, worker).post(answer).status_code == 202
    for request_id, reader, expected in (
        (a_call, a_reader, "ay via w0"),
        (b_call, b_reader, "bee via w1"),
    ):
        messages = [m for _, m in reader.messages(request_id)]
        assert messages[-1]["result"]["content"][0]["text"] == expected


def test_a_newer_get_stream_takes_the_standalone_stream_over_from_an_older_one_on_another_worker(
    workers,
):
    """2025-11-25 basic/transports: the server "MUST NOT broadcast the same message across multiple
    streams": the newer GET (say, a reconnect that reached another worker) takes over; the older ends."""
    a, b = workers()
    raw = a.raw()
    raw.initialize()
    older = SseReader(on(raw, a).get())
    assert older.next()["id"]  # priming
    newer = SseReader(on(raw, b).get())
    assert newer.next()["id"]
    assert older.messages() == []  # ended, without the change below
    tool_call(on(raw, a), "add_tool", {"tool": "once"})
    assert json.loads(next_within(newer)["data"])["method"] == "notifications/tools/list_changed"
    newer.close()


def test_what_was_sent_before_the_first_get_reaches_it(workers):
    """As in one process: a message for the standalone stream sent while no GET is open waits for one."""
    a, b = workers()
    raw = a.raw()
    raw.initialize()
    tool_call(on(raw, b), "add_tool", {"tool": "early"})  # announced before any GET
    stream = SseReader(on(raw, b).get())
    events = [
        next_within(stream),
        next_within(stream),
    ]  # the priming event and the change, in either order
    assert ["notifications/tools/list_changed"] == [
        json.loads(e["data"])["method"] for e in events if e["data"]
    ]
    stream.close()


def test_a_resumed_post_stream_ends_when_the_worker_running_its_request_exits(workers):
    a, b = workers()
    raw = a.raw()
    raw.initialize()
    request_id, response = tool_call(on(raw, a), "polled_until_cancelled", stream=True)
    reader = SseReader(response)
    events = [reader.next() for _ in range(3)]  # priming, "started", the retry event
    reader.close()
    resumed = SseReader(on(raw, b).get(headers={"Last-Event-ID": events[-1]["id"]}))
    a.stop()  # its request dies with it: b's follower must not wait for ever
    assert [m for _, m in resumed.messages()] == []  # ended (bounded by the reader's timeout)


def test_two_workers_subscribing_at_once_both_count(workers):
    """A record's subscriptions are kept one key per URI: a subscribe on one worker and another on
    the other both hold, and the session hears both resources' updates."""
    a, b = workers()
    raw = a.raw()
    raw.initialize()
    stream = SseReader(on(raw, a).get())
    assert stream.next()["id"]
    for worker, uri in ((a, "memo://note"), (b, "memo://other")):
        request_id, response = on(raw, worker).call("resources/subscribe", {"uri": uri})
        raw.result(response, request_id)
    heard = set()
    for uri in ("memo://note", "memo://other"):
        tool_call(on(raw, b), "touch_note", {"uri": uri})
        heard.add(json.loads(next_within(stream)["data"])["params"]["uri"])
    assert heard == {"memo://note", "memo://other"}
    stream.close()


def test_a_resource_unsubscribed_on_another_worker_no_longer_counts_against_the_cap(workers):
    """``max_subscribed_resources`` counts over every worker, each worker's places its own; a
    resource subscribed on one worker and unsubscribed on the other left the first one's place
    held until its next heartbeat (10 s), and a subscription within the cap was refused meanwhile.
    The worker taking up the changed record now gives the place back."""
    a, b = workers(server_options={"max_subscribed_resources": 1})
    raw = a.raw()
    raw.initialize()
    request_id, response = on(raw, a).call("resources/subscribe", {"uri": "memo://note"})
    raw.result(response, request_id)
    heard = Collector()  # called after A's own subscriber, on the bus's one delivery thread
    unsubscribe = a.server.bus.subscribe(SESSIONS, heard)
    request_id, response = on(raw, b).call("resources/unsubscribe", {"uri": "memo://note"})
    raw.result(response, request_id)
    session_id = raw.session_id
    changed = b.app.session_table.get(session_id)["generation"]
    home = a.app.live_session(session_id)
    # the home has taken the change up (the bus told it); the generation is set last
    heard.wait_until(lambda _: home.generation == changed)
    unsubscribe()
    request_id, response = on(raw, b).call("resources/subscribe", {"uri": "memo://other"})
    answer, _ = raw.result(response, request_id)
    assert answer.get("result") == {}, answer
    request_id, response = on(raw, a).call("resources/subscribe", {"uri": "memo://note"})
    answer, _ = raw.result(response, request_id)
    assert answer["error"]["data"] == {"limit": 1}  # the cap still holds


def test_a_session_whose_record_is_gone_is_ended_on_every_worker(workers, redis_url):
    """An end a worker was not told of (the record removed behind its back: a lost bus message, an
    expiry another worker found) still ends its replica and its GET stream."""
    from mcp_ref.state.redis import RedisState

    a, b = workers()
    raw = a.raw()
    raw.initialize()
    stream = SseReader(on(raw, b).get())
    assert stream.next()["id"]
    state = RedisState.from_url(redis_url)
    try:
        assert state.session_table().remove(raw.session_id)
    finally:
        state.close()
    assert on(raw, a).post(request("tools/list", None, raw.next_id())).status_code == 404
    assert stream.messages() == []  # b's replica ended: its GET stream closes


def test_one_store_given_keeps_sessions_in_their_process():
    """Both stores are shared, or neither: sessions of one process in a shared table would be swept
    by the others."""
    from mcp_ref.http.server import MemoryEventStore, MemorySessionTable

    server = Server("mixed", state="redis://127.0.0.1:1/0")  # never connected: nothing here asks it
    app = server.wsgi_app(event_store=MemoryEventStore())
    assert not app.shared and isinstance(app.session_table, MemorySessionTable)


def test_a_sessions_task_on_one_worker_is_cancelled_when_the_session_is_deleted_on_the_other(
    redis_url,
):
    """A session without a token owns its 2025-11-25 tasks (basic/utilities/tasks §Task Isolation),
    in records every worker shares.  Made on A, its task created (and run) on B, then deleted on A:
    the task is cancelled (no one can reach it any more) and B's handler stops, told over the bus;
    it no longer counts against the client's ``max_tasks_per_principal``."""
    started, stopped = threading.Event(), threading.Event()
    workers = []  # (server, served)
    for name in ("a", "b"):
        server = Server(f"shared-tasks-{name}", state=redis_url)

        @server.tool(task="required")
        def until_stopped(ctx: Context) -> str:
            """Runs until it is cancelled."""
            ctx.start_task()
            started.set()
            try:
                ctx.sleep(3 * WAIT)  # raises as soon as the task is cancelled
            finally:
                stopped.set()
            return "never cancelled"

        workers.append((server, start(server, keepalive=0.5)))
    (on_a, a), (on_b, b) = workers
    raw = RawSession(a.mcp)
    try:
        raw.initialize()
        raw.url = b.mcp
        request_id, response = raw.call(
            "tools/call", {"name": "until_stopped", "arguments": {}, "task": {}}
        )
        answer, _ = raw.result(response, request_id)
        task_id = answer["result"]["task"]["taskId"]
        assert started.wait(WAIT)  # running on B (a task cancelled before its run began never runs)
        assert on_b.tasks.records.count("http-client:127.0.0.1") == 1
        raw.url = a.mcp
        assert raw.delete().status_code == 200
        assert stopped.wait(WAIT)  # B's handler heard the cancel
        record = on_a.tasks.records.get(task_id)
        assert record["status"] == "cancelled", record
        assert on_b.tasks.records.count("http-client:127.0.0.1") == 0
    finally:
        raw.close()
        for server, one in workers:
            one.stop()
            server.shared_state.close()


def test_an_answer_no_worker_hears_is_refused_503_and_heard_when_sent_again(redis_server):
    """PUBLISH says how many processes heard a message; none while the asking worker's pub/sub
    connection is reconnecting, and pub/sub keeps nothing.  The answer was lost behind a 202, and
    the tool waited for its timeout.  Now it is published again for a while (shared.DELIVERY_WINDOW),
    then refused 503 with Retry-After (2025-11-25 basic/transports: "If the server cannot accept
    the input, it MUST return an HTTP error status code"); sent again once the worker hears, it
    reaches the request."""
    pair = ShutOutHome(redis_server, "unheard")
    a, b = pair.a, pair.b
    try:
        raw = a.raw()
        raw.initialize(capabilities={"elicitation": {}})
        request_id, response = tool_call(raw, "ask", stream=True)
        reader = SseReader(response)
        asked = elicitation_of(reader)
        pair.deafen()
        answer = {
            "jsonrpc": "2.0",
            "id": asked["id"],
            "result": {"action": "accept", "content": {"name": "Ada"}},
        }
        refused = on(raw, b).post(answer)
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "1"
        assert "retry" in refused.json()["error"]["message"] and "id" not in refused.json()
        pair.hear()  # sent again once A hears: taken
        assert on(raw, b).post(answer).status_code == 202
        messages = [m for _, m in reader.messages(request_id)]
        assert messages[-1]["result"]["content"][0]["text"] == "Ada via a"
    finally:
        pair.close()


@pytest.fixture
def forgetful_workers(redis_url):
    """Two workers sharing ``redis_url`` whose event store keeps 8 events a session."""
    from mcp_ref.state.redis import RedisState

    states = [RedisState.from_url(redis_url) for _ in range(2)]
    made = [
        Worker(
            f"w{index}",
            redis_url,
            keepalive=0.5,
            event_store=state.event_store(max_events=8, expire_after=60),
            session_table=state.session_table(),
        )
        for index, state in enumerate(states)
    ]
    yield made
    for worker in made:
        worker.stop()
    for state in states:
        state.close()


def chatty_call(raw: RawSession) -> list[dict]:
    """Call ``chatty`` and read its SSE stream to its end (7 entries in the store: priming, 4 logs,
    the answer, the end marker); its events."""
    _, response = tool_call(raw, "chatty", stream=True)
    reader = SseReader(response)
    events = []
    while (event := reader.next()) is not None:
        events.append(event)
    return events


def test_the_standalone_stream_resumed_from_a_forgotten_event_is_followed_on(forgetful_workers):
    """The standalone stream never ends: resumed from an event id the store has forgotten, it goes
    on from there (§Resumability: the server "MAY use this header to replay messages that would
    have been sent after the last event ID"), as with one worker.  Before: 400 for good."""
    a, b = forgetful_workers
    raw = a.raw()
    raw.initialize()
    listener = SseReader(on(raw, b).get())
    assert not next_within(listener)["data"]  # priming
    tool_call(on(raw, a), "add_tool", {"tool": "one"})
    heard = next_within(listener)
    assert json.loads(heard["data"])["method"] == "notifications/tools/list_changed"
    listener.close()
    chatty_call(on(raw, a))
    chatty_call(raw)  # 14 entries: the event heard is forgotten
    resumed = on(raw, b).get(headers={"Last-Event-ID": heard["id"]})
    assert resumed.status_code == 200, resumed.text
    again = SseReader(resumed)
    tool_call(on(raw, a), "add_tool", {"tool": "two"})
    event = next_within(again)
    assert json.loads(event["data"])["method"] == "notifications/tools/list_changed"
    assert event["id"].rpartition(".")[0] == heard["id"].rpartition(".")[0]
    again.close()


def test_a_live_post_stream_resumed_from_a_forgotten_event_gets_its_answer(forgetful_workers):
    """A request still running whose stream's events are all forgotten: resumed on the other worker,
    what comes next and the answer arrive (as with the memory store).  Before: 400, answer lost."""
    a, b = forgetful_workers
    raw = a.raw()
    raw.initialize()
    request_id, response = tool_call(on(raw, a), "steps", stream=True)
    reader = SseReader(response)
    seen = [reader.next(), reader.next()]  # priming, "step one"
    reader.close()  # the connection drops; the request goes on on A
    chatty_call(raw)
    chatty_call(raw)
    resumed = on(raw, b).get(headers={"Last-Event-ID": seen[1]["id"]})
    assert resumed.status_code == 200, resumed.text
    a.release.set()
    messages = [message for _, message in SseReader(resumed).messages()]  # to the stream's end
    assert [m.get("params", {}).get("data") for m in messages[:-1]] == ["step two"]
    assert messages[-1]["id"] == request_id
    assert messages[-1]["result"]["content"][0]["text"] == "done on w0"


def test_an_ended_post_stream_of_which_nothing_is_kept_is_refused_400(forgetful_workers):
    """Its events and its end marker are forgotten: what the client missed is lost, and it is told
    so (400), rather than a follower waiting for what never comes."""
    a, b = forgetful_workers
    raw = a.raw()
    raw.initialize()
    seen = chatty_call(raw)[1]["id"]
    chatty_call(raw)
    chatty_call(raw)
    for worker in (a, b):
        refused = on(raw, worker).get(headers={"Last-Event-ID": seen})
        assert refused.status_code == 400, refused.text
        assert refused.json()["error"]["code"] == -32600
