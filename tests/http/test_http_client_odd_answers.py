"""The Streamable HTTP client against a server whose answers break the transport's rules: a 202 to
a request, a redirect that would turn a POST into a GET, an ``Mcp-Session-Id`` HTTP cannot carry
back, a JSON body answering another request, a GET of an SSE stream answered with something else.
Each fails the request it concerns at once, with a clear error (never at its timeout), and the
client serves on.

The server is :class:`~test_http_client_sessions.ScriptedServer` (a raw socket on 127.0.0.1, port 0).
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from conftest import WAIT, Collector, outcome_within
from test_hardening_origins import Recorder, Redirector, plain_server, serve, stop_after  # noqa: F401
from test_http_client_sessions import (  # noqa: F401
    LONG,
    SSE_HEAD,
    ScriptedServer,
    answer,
    json_answer,
    posted,
    scripted,
)

from mcp_ref import Client, McpError


def test_a_202_to_a_request_fails_it_at_once_and_the_client_serves_on(scripted):
    """A 202 Accepted to ``tools/list`` was taken for "no answer on this response", and the call
    waited for its timeout; it fails at once now, saying so, and the next call is served."""
    refusing = [True]

    def script(request: dict):
        if posted("tools/list")(request) and refusing[0]:
            return answer("202 Accepted")
        return None

    server: ScriptedServer = scripted(script)
    with Client.http(server.url, transport="streamable", era="handshake", timeout=LONG) as client:
        failure = outcome_within(client.list_tools, WAIT)
        assert isinstance(failure, ConnectionError), failure
        assert "202" in str(failure) and "tools/list" in str(failure)
        refusing[0] = False
        assert client.list_tools() == []


@pytest.mark.parametrize("era", ["handshake", "modern"])
@pytest.mark.parametrize("status", [301, 302, 303])
def test_a_redirect_that_would_turn_a_post_into_a_get_is_refused_clearly(stop_after, status, era):
    """A same-origin 301, 302 or 303 to a call's POST was followed as requests follows it: a GET
    without the message.  mcp_ref's server took it for a session's standalone stream, and the call
    waited for its timeout (or, with no session, failed with a 400 about a missing session id).  It
    fails at once now, naming the status and the URL; nothing went there."""
    seen = Recorder(plain_server().wsgi_app())

    def front(environ, start_response):
        if environ["PATH_INFO"] == "/moved":  # serves MCP too: following would reach it
            return seen({**environ, "PATH_INFO": "/mcp"}, start_response)
        return redirector(environ, start_response)

    redirector = Redirector(seen)
    httpd = serve(front, stop_after)
    with Client.http(httpd.url + "/mcp", era=era, timeout=LONG) as client:
        redirector.to, redirector.status = "/moved", status
        failure = outcome_within(lambda: client.call_tool("hello"), WAIT)
        assert isinstance(failure, ConnectionError), failure
        assert f"HTTP {status}" in str(failure) and f"{httpd.url}/moved" in str(failure)
        redirector.to = None
        assert client.call_tool("hello").content[0].text == "hello"
    assert not [request for request in seen.seen() if request[1] == "/moved"]


@pytest.mark.parametrize("session_id", [b"a b", b"caf\xe9", b"tab\there", b"del\x7f"])
def test_a_session_id_that_is_not_visible_ascii_is_refused(scripted, session_id):
    """An ``Mcp-Session-Id`` with a space, a byte past ASCII or a control character (2025-11-25
    basic/transports: visible ASCII, 0x21 to 0x7E) was taken and sent back on every request; the
    handshake fails now, naming the header, and nothing more is sent with it."""

    def script(request: dict):
        if posted("initialize")(request):
            usual = server.usual(request)
            return usual.replace(b"Mcp-Session-Id: s1", b"Mcp-Session-Id: " + session_id)
        return None

    server: ScriptedServer = scripted(script)
    with pytest.raises(McpError) as caught:
        Client.http(server.url, transport="streamable", era="handshake", timeout=WAIT).close()
    assert "Mcp-Session-Id" in str(caught.value) and "visible ASCII" in str(caught.value)
    assert [request for request in server.requests if "mcp-session-id" in request["headers"]] == []


@pytest.mark.parametrize("version", ["2025-11-25", "2025-03-26"])
def test_a_json_body_carrying_another_pending_requests_id_fails_only_the_request_posted(
    scripted, version
):
    """A JSON body to ``tools/call``'s POST carrying the id of ``tools/list`` (still waiting on its
    own POST) settled the listing with it, and the call failed as unreadable.  A JSON body answers
    the POST's own request only (2025-11-25 basic/transports §Sending Messages; 2025-03-26, where
    it may be an array, the same): the call fails saying so, and the listing gets its own answer."""
    release = threading.Event()
    listing: dict = {}

    def script(request: dict):
        message = request["json"] or {}
        if message.get("method") == "initialize":
            return server.usual(request).replace(b"2025-11-25", version.encode())
        if message.get("method") == "tools/list":
            listing["id"] = message["id"]
            listed = json_answer({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": []}})
            return lambda connection: release.wait(WAIT) and connection.sendall(listed)
        if message.get("method") == "tools/call":
            tool = {"name": "stolen", "inputSchema": {"type": "object"}}
            stolen: Any = {"jsonrpc": "2.0", "id": listing["id"], "result": {"tools": [tool]}}
            return json_answer([stolen] if version == "2025-03-26" else stolen)
        return None

    server: ScriptedServer = scripted(script)
    with ThreadPoolExecutor(1) as pool:
        with Client.http(
            server.url, transport="streamable", protocol_version=version, timeout=LONG
        ) as client:
            listed = pool.submit(client.list_tools)
            server.wait_for(posted("tools/list"), "the listing")
            failure = outcome_within(lambda: client.call_tool("x"), WAIT)
            release.set()
            assert listed.result(WAIT) == []
    assert isinstance(failure, McpError), failure
    assert "tools/call with another request's id" in str(failure)


def not_sse(content_type: str, body: bytes = b"") -> bytes:
    """A 200 answer of ``content_type`` to a GET that asked for an SSE stream."""
    return answer("200 OK", body, f"Content-Type: {content_type}\r\n")


@pytest.mark.parametrize("content_type", ["application/json", "text/html"])
def test_a_standalone_get_answered_with_no_sse_stream_stops_listening_with_a_warning(
    scripted, caplog, content_type
):
    """A 200 of another type to the standalone GET was read as SSE, found empty, and asked again
    for ever.  2025-11-25 basic/transports §Listening for Messages from the Server: the server
    answers text/event-stream or 405; the client stops listening, as after a 405, with a warning
    naming what came, and serves on."""

    def script(request: dict):
        if request["method"] == "GET":
            return not_sse(content_type, b'data: {"jsonrpc": "2.0", "method": "ping", "id": 1}\n\n')
        return None

    server: ScriptedServer = scripted(script)
    with Client.http(server.url, transport="streamable", era="handshake", timeout=LONG) as client:
        listener = client.session.transport._listener
        listener.join(WAIT)
        assert not listener.is_alive(), "the client listens on an answer that is no SSE stream"
        assert client.list_tools() == []
    assert server.count(lambda request: request["method"] == "GET") == 1
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(content_type in message and "text/event-stream" in message for message in warned)


def test_a_resumption_answered_with_no_sse_stream_fails_its_request_clearly(scripted):
    """The GET resuming a call's stream, answered 200 ``text/html``, was read as SSE: a page
    holding ``data:`` lines answered the call.  A resumption's GET is the GET of 2025-11-25
    basic/transports §Listening for Messages from the Server (text/event-stream or 405): the call
    fails, naming what came, and the next call is served."""
    call: dict = {}

    def script(request: dict):
        message = request["json"] or {}
        if message.get("method") == "tools/call" and not call:
            call["id"] = message["id"]
            return lambda connection: connection.sendall(SSE_HEAD + b"id: e0\nretry: 1\ndata:\n\n")
        if request["headers"].get("last-event-id"):
            answered = {"jsonrpc": "2.0", "id": call["id"], "result": {"content": []}}
            return not_sse("text/html", f"id: e1\ndata: {json.dumps(answered)}\n\n".encode())
        return None

    server: ScriptedServer = scripted(script)
    with Client.http(
        server.url, transport="streamable", era="handshake", timeout=LONG, min_retry_delay=0
    ) as client:
        failure = outcome_within(lambda: client.call_tool("x"), WAIT)
        assert isinstance(failure, McpError), failure
        assert "text/html" in str(failure) and "text/event-stream" in str(failure)
        assert client.call_tool("x").content == []


def test_an_answer_on_the_standalone_get_stream_is_dropped_with_a_warning_and_settles_nothing(
    scripted, caplog
):
    """An answer carrying a pending call's id on the standalone GET stream settled the call with
    it, and the call's own answer, on its POST, was then thrown away.  2025-11-25 basic/transports
    §Listening for Messages from the Server (2025-03-26 and 2025-06-18 alike): the server "MUST NOT
    send a JSON-RPC response on the stream unless resuming a stream associated with a previous
    client request"; the client drops it with a warning, and the call gets its POST's answer."""
    release = threading.Event()
    logged = Collector()

    def own_answer(message: dict):
        result = {"content": [{"type": "text", "text": "own"}]}
        body = json_answer({"jsonrpc": "2.0", "id": message["id"], "result": result})
        return lambda connection: release.wait(WAIT) and connection.sendall(body)

    def stolen_on_get(connection) -> None:
        connection.sendall(SSE_HEAD)
        call = server.wait_for(posted("tools/call"), "the call")["json"]
        result = {"content": [{"type": "text", "text": "stolen"}]}
        stolen = {"jsonrpc": "2.0", "id": call["id"], "result": result}
        # a log message after it: once the client has it, it has handled the answer before it
        note = {"jsonrpc": "2.0", "method": "notifications/message"}
        note["params"] = {"level": "info", "data": "after"}
        connection.sendall(f"data: {json.dumps(stolen)}\n\ndata: {json.dumps(note)}\n\n".encode())
        server.stop.wait(WAIT)

    def script(request: dict):
        message = request["json"] or {}
        if request["method"] == "GET":
            return stolen_on_get
        return own_answer(message) if message.get("method") == "tools/call" else None

    server: ScriptedServer = scripted(script)
    with ThreadPoolExecutor(1) as pool:
        with Client.http(
            server.url, transport="streamable", era="handshake", timeout=LONG, on_log=logged
        ) as client:
            called = pool.submit(client.call_tool, "x")
            logged.wait_for(1)
            release.set()
            assert called.result(WAIT).content[0].text == "own"
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("standalone GET stream" in message for message in warned), warned
