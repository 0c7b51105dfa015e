"""No credential in an HTTP client's exception messages or logs: a token in a header value that
HTTP cannot carry (a trailing newline), a URL's query (``?api_key=...``) or userinfo.  The
messages still say what went wrong and what to do.  Real servers on 127.0.0.1 (port 0)."""

from __future__ import annotations

import json
import logging

import pytest
from conftest import WAIT, LoggedOnce
from http_fixtures import serve, serving  # noqa: F401 - serve is a fixture
from test_http_client import scripted
from test_http_client_sessions import scripted as scripted_server  # noqa: F401 - a fixture

from mcp_ref import Client, Server
from mcp_ref.errors import ResponseStreamLost

SECRET = "USER-SECRET-TOKEN"


def _hello_server() -> Server:
    server = Server("plain")

    @server.tool
    def hello() -> str:
        """Says hello."""
        return "hello"

    return server


def test_a_header_value_with_a_line_break_is_refused_at_once_without_its_value():
    """RFC 9110 §5.5: a field value holds no CR or LF.  ``headers=`` with a token read from a file
    (its trailing newline kept) is refused before anything is sent, naming the header, not the value."""
    with pytest.raises(ValueError) as caught:
        Client.http("http://127.0.0.1:1/mcp", headers={"Authorization": f"Bearer {SECRET}\n"})
    message = str(caught.value)
    assert "'Authorization'" in message and "strip it" in message
    assert SECRET not in message


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_an_auth_hook_that_makes_a_bad_header_fails_the_call_without_quoting_it(caplog, era):
    """An auth hook (any ``requests`` auth) that puts a token with a line break in a header: the
    request fails with a message saying so, and neither that message nor any log holds the token."""
    caplog.set_level(logging.DEBUG, logger="mcp_ref")

    def bearer(request):
        request.headers["Authorization"] = f"Bearer {SECRET}\r\nX-Injected: 1"
        return request

    with serving(_hello_server()) as served:
        with pytest.raises(Exception) as caught:
            with Client.http(served.mcp, auth=bearer, era=era, timeout=WAIT) as client:
                client.call_tool("hello")
    message = str(caught.value)
    assert "line break" in message, message
    assert SECRET not in message and SECRET not in caplog.text


@pytest.mark.parametrize(
    "secret_part", ["?api_key=SECRET-QUERY", "userinfo"], ids=["query", "userinfo"]
)
def test_a_2024_11_05_refusal_names_the_url_without_its_credentials(caplog, secret_part):
    """The HTTP+SSE GET answered 401: the message names the URL as the Streamable HTTP path does
    (``not_reached.shown``: no userinfo, no query's contents)."""
    caplog.set_level(logging.DEBUG, logger="mcp_ref")
    server = _hello_server()
    with serving(server, wrap=_refusing) as served:
        url = (
            served.sse + secret_part
            if secret_part.startswith("?")
            else served.sse.replace("http://", "http://user:SECRET-PASS@")
        )
        with pytest.raises(Exception) as caught:
            with Client.http(url, transport="sse", timeout=WAIT):
                pass
    message = str(caught.value)
    assert "401" in message and "/sse" in message, message
    assert "SECRET" not in message and "SECRET" not in caplog.text


def _refusing(app):
    """Middleware answering every request 401 with a bearer challenge."""

    def refuse(environ, start_response):
        start_response(
            "401 Unauthorized",
            [("WWW-Authenticate", 'Bearer realm="t"'), ("Content-Length", "0")],
        )
        return [b""]

    return refuse


@pytest.mark.parametrize(
    "secret_part", ["?api_key=SECRET-QUERY", "userinfo"], ids=["query", "userinfo"]
)
def test_a_server_gone_mid_session_is_named_without_the_urls_credentials(caplog, secret_part):
    """The server stops during a session: the notification that cannot be sent (``set_roots``),
    the DELETE at close and every log line name the URL without its query's contents or userinfo,
    and the reason without them either (requests quotes the URL whole)."""
    caplog.set_level(logging.DEBUG, logger="mcp_ref")
    with serving(_hello_server()) as served:
        url = (
            served.mcp + secret_part
            if secret_part.startswith("?")
            else served.mcp.replace("http://", "http://user:SECRET-PASS@")
        )
        client = Client.http(url, era="handshake", roots=["file:///tmp"], timeout=WAIT)
        assert client.call_tool("hello").content[0].text == "hello"
    # the server is gone: its kept-alive connections too, so the next POST finds no one listening
    client.session.transport.http.close()
    try:
        with pytest.raises(ConnectionError) as caught:
            client.set_roots(["file:///var"])
        assert "/mcp" in str(caught.value), caught.value
        assert "SECRET" not in str(caught.value)
    finally:
        client.close()
    assert "SECRET" not in caplog.text


def test_an_event_dropped_from_the_get_stream_is_logged_without_the_urls_credentials(
    caplog, scripted_server
):
    # The warning named the URL whole: its userinfo and query's secret went to the log.
    caplog.set_level(logging.DEBUG, logger="mcp_ref")
    big = json.dumps(
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "x" * 5000}}
    )
    server = scripted_server()

    def stream(connection) -> None:
        connection.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
            + f"data: {big}\n\n".encode()
        )
        server.stop.wait(WAIT)

    server.script = lambda request: stream if request["method"] == "GET" else None
    url = server.url.replace("http://", "http://user:SECRET-PASS@") + "?api_key=SECRET-QUERY"
    dropped = LoggedOnce("dropped an SSE event")
    logging.getLogger("mcp_ref").addHandler(dropped)
    try:
        with Client.http(url, era="handshake", timeout=WAIT, max_message_size=1000):
            assert dropped.seen.wait(WAIT), "the event was never dropped"
    finally:
        logging.getLogger("mcp_ref").removeHandler(dropped)
    assert "dropped an SSE event from http://***@127.0.0.1" in caplog.text
    assert "SECRET" not in caplog.text


def test_a_lost_response_stream_is_named_without_the_urls_credentials(caplog, serve):
    # 2026-07-28: a call's response stream that breaks every time ends in ResponseStreamLost,
    # whose message named the URL whole.
    caplog.set_level(logging.DEBUG, logger="mcp_ref")
    served, seen = scripted(serve)

    def broken(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/event-stream"), ("Content-Length", "5")])
        return [b": x\n\n"]

    seen.answer = broken
    with Client.http(served.mcp + "?api_key=SECRET-QUERY", era="modern", timeout=WAIT) as client:
        with pytest.raises(ResponseStreamLost) as caught:
            client.call_tool("echo", {"text": "hi"})
    assert "/mcp?..." in str(caught.value), caught.value
    assert "SECRET" not in str(caught.value) and "SECRET" not in caplog.text
