"""A POST that belongs to no session (stateless mode in the handshake era, every 2026-07-28 POST) is
served on its own thread by one :func:`~mcp_ref.http.server.oneshot.one_shot` dispatch:
no ``HttpSession``, stream or event store per request, and still the same answers, errors,
notifications on an SSE reply, auth principal, and cancellation when the client goes (issue 24 item 4).
Real sockets on 127.0.0.1; raw HTTP, so every byte of the reply is the server's."""

from __future__ import annotations

import gc
import http.client
import json
import socket
import threading
import weakref

import pytest
from conftest import WAIT
from http_fixtures import serve  # noqa: F401 - fixture

from mcp_ref import Context, Server
from mcp_ref.http.server import http_session

MODERN = "2026-07-28"
ERAS = ("handshake", "modern")


def oneshot_server(
    started: threading.Event | None = None, cancelled: threading.Event | None = None
) -> Server:
    server = Server("oneshot")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def steps(count: int, ctx: Context) -> str:
        """Report ``count`` progress steps and log one line, then answer."""
        for i in range(1, count + 1):
            ctx.report_progress(i, count)
        ctx.info("stepped")
        return f"stepped {count}"

    @server.tool()
    def who(ctx: Context) -> str:
        """The caller as the server sees it."""
        return ctx.principal.id

    @server.tool()
    def wait_for_cancel(ctx: Context) -> str:
        """Block until cancelled (or WAIT passes)."""
        assert started is not None and cancelled is not None
        started.set()
        try:
            ctx.sleep(WAIT)
        except BaseException:
            cancelled.set()
            raise
        return "not cancelled"

    @server.tool()
    def leave() -> str:
        """Call sys.exit(), as a careless tool might."""
        raise SystemExit(3)

    return server


def post(
    era: str,
    name: str,
    arguments: dict,
    *,
    request_id=1,
    progress: bool = False,
    method: str = "tools/call",
) -> tuple[bytes, dict]:
    """A bare tools/call (or ``method``) POST of ``era`` (no session, no initialize): its body and headers."""
    params: dict = {"name": name, "arguments": arguments}
    meta: dict = {}
    if progress:
        meta["progressToken"] = "p"
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if era == "modern":
        meta.update(
            {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/logLevel": "info",
            }
        )
        headers.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": method, "Mcp-Name": name})
    else:
        headers["MCP-Protocol-Version"] = "2025-11-25"
    if meta:
        params["_meta"] = meta
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return json.dumps(body).encode(), headers


def send(srv, era: str, name: str, arguments: dict, **options) -> tuple[int, str, list[dict]]:
    """POST and read the whole reply: (status, content type, the JSON-RPC messages in order)."""
    body, headers = post(era, name, arguments, **options)
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=WAIT)
    try:
        conn.request("POST", "/mcp", body=body, headers=headers)
        response = conn.getresponse()
        data = response.read().decode()
        content_type = response.getheader("Content-Type", "")
        assert response.getheader("Mcp-Session-Id") is None
    finally:
        conn.close()
    if content_type.startswith("text/event-stream"):
        messages = [
            json.loads(line[5:])
            for line in data.splitlines()
            if line.startswith("data:") and line[5:].strip()
        ]
    else:
        messages = [json.loads(data)] if data else []
    return response.status, content_type, messages


@pytest.fixture
def count_sessions(monkeypatch):
    """How many ``HttpSession`` objects were made (the one-shot path makes none)."""
    made = [0]
    original = http_session.HttpSession.__init__

    def counting(self, *args, **kwargs):
        made[0] += 1
        original(self, *args, **kwargs)

    monkeypatch.setattr(http_session.HttpSession, "__init__", counting)
    return made


@pytest.mark.parametrize("era", ERAS)
def test_a_stateless_post_is_answered_without_a_session_object(serve, count_sessions, era):
    srv = serve(oneshot_server(), stateless=True)
    for i in range(3):
        status, content_type, messages = send(srv, era, "echo", {"text": f"hi {i}"}, request_id=i)
        assert status == 200 and content_type == "application/json", (status, messages)
        assert messages == [messages[0]] and messages[0]["id"] == i
        assert messages[0]["result"]["content"] == [{"type": "text", "text": f"hi {i}"}]
    assert count_sessions[0] == 0
    assert srv.app.sessions == {}


@pytest.mark.parametrize("era", ERAS)
def test_errors_of_a_stateless_post(serve, era):
    srv = serve(oneshot_server(), stateless=True)
    status, _, messages = send(srv, era, "nope", {})
    assert (
        status == 200
        and messages[0]["error"]["code"] == -32602
        and "Unknown tool" in messages[0]["error"]["message"]
    )
    status, _, messages = send(srv, era, "x", {}, method="nothing/here")
    assert messages[0]["error"]["code"] == -32601
    assert status == (
        404 if era == "modern" else 200
    )  # 2026-07-28 maps some codes to HTTP statuses
    # invalid arguments: a tool error the model can see (2025-11-25 and on), validated as ever
    status, _, messages = send(srv, era, "echo", {"text": 3})
    assert status == 200 and messages[0]["result"]["isError"] is True
    assert "Invalid arguments for tool echo" in messages[0]["result"]["content"][0]["text"]


@pytest.mark.parametrize("era", ERAS)
def test_notifications_make_a_stateless_reply_an_sse_stream(serve, count_sessions, era):
    srv = serve(oneshot_server(), stateless=True)
    status, content_type, messages = send(srv, era, "steps", {"count": 2}, progress=True)
    assert status == 200 and content_type.startswith("text/event-stream")
    assert [m.get("method") for m in messages] == ["notifications/progress"] * 2 + [
        "notifications/message",
        None,
    ]
    assert [m["params"]["progress"] for m in messages[:2]] == [1, 2]
    assert messages[-1]["result"]["content"][0]["text"] == "stepped 2"
    assert count_sessions[0] == 0


@pytest.mark.parametrize("era", ERAS)
def test_json_response_keeps_a_stateless_reply_json(serve, era):
    srv = serve(oneshot_server(), stateless=True, json_response=True)
    status, content_type, messages = send(srv, era, "steps", {"count": 2}, progress=True)
    assert status == 200 and content_type == "application/json"
    assert len(messages) == 1 and messages[0]["result"]["content"][0]["text"] == "stepped 2"


def test_json_response_false_streams_even_the_answer_alone(serve):
    srv = serve(oneshot_server(), stateless=True, json_response=False)
    status, content_type, messages = send(srv, "handshake", "echo", {"text": "x"})
    assert status == 200 and content_type.startswith("text/event-stream")
    assert len(messages) == 1 and messages[0]["result"]["content"][0]["text"] == "x"


@pytest.mark.parametrize("era", ERAS)
def test_a_stateless_post_carries_its_callers_principal(serve, era):
    srv = serve(oneshot_server(), stateless=True)
    _, _, messages = send(srv, era, "who", {})
    assert messages[0]["result"]["content"][0]["text"] == "http-client:127.0.0.1"


@pytest.mark.parametrize("era", ERAS)
def test_a_stateless_post_whose_client_closes_is_cancelled(serve, count_sessions, era):
    """The WSGI server's watchdog (``mcp_ref.on_disconnect``) notices the close while the handler
    runs and has written nothing: nothing can resume a stateless request, so it is cancelled."""
    started, cancelled = threading.Event(), threading.Event()
    srv = serve(oneshot_server(started, cancelled), stateless=True)
    body, headers = post(era, "wait_for_cancel", {})
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=WAIT)
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    sock.sendall(
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    assert started.wait(WAIT)
    sock.close()
    assert cancelled.wait(WAIT)
    assert count_sessions[0] == 0
    status, _, messages = send(srv, era, "echo", {"text": "after"})  # the server goes on
    assert status == 200 and messages[0]["result"]["content"][0]["text"] == "after"


@pytest.mark.parametrize("era", ERAS)
def test_a_tool_calling_sys_exit_gets_an_internal_error_and_the_server_goes_on(serve, era):
    """Handlers run on the POST's thread: the answer is sent, and the server goes on."""
    srv = serve(oneshot_server(), stateless=True)
    status, _, messages = send(srv, era, "leave", {})
    assert status == 200  # (2026-07-28: -32603 has no HTTP status of its own)
    assert messages[0]["error"] == {"code": -32603, "message": "Internal error"}
    status, _, messages = send(srv, era, "echo", {"text": "after"})
    assert status == 200 and messages[0]["result"]["content"][0]["text"] == "after"


@pytest.mark.parametrize("era", ERAS)
def test_a_stateless_posts_request_is_freed_once_answered_not_left_to_the_garbage_collector(
    serve, era
):
    """The one-request exchange held its request (the environ, its header fields, the WSGI
    server's ``start_response``) as long as its connection and session, which refer to each
    other: every POST left all of it to the garbage collector, whose passes then cost every
    request.  The exchange now lets go once its answer is out: nothing of the request outlives it.
    """
    server = Server("freed")
    fields = []

    @server.tool()
    def note(ctx: Context) -> str:
        """Keep a weak reference to the request's header fields."""
        assert ctx.http is not None
        fields.append(weakref.ref(ctx.http.environ["mcp_ref.headers"]))
        return "noted"

    srv = serve(server, stateless=True)
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=WAIT)
    collecting = gc.isenabled()
    gc.disable()
    try:
        for request_id in (1, 2):  # one connection: the first POST is over once the second is
            body, headers = post(era, "note", {}, request_id=request_id)
            conn.request("POST", "/mcp", body=body, headers=headers)
            response = conn.getresponse()
            assert response.status == 200 and b"noted" in response.read()
        assert fields[0]() is None
    finally:
        if collecting:
            gc.enable()
        conn.close()
