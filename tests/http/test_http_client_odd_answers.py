"""The Streamable HTTP client against a server whose answers break the transport's rules: a 202 to
a request, a redirect that would turn a POST into a GET, an ``Mcp-Session-Id`` HTTP cannot carry
back, a JSON body answering another request.  Each fails the request it concerns at once, with
a clear error (never at its timeout), and the client serves on.

The server is :class:`~test_http_client_sessions.ScriptedServer` (a raw socket on 127.0.0.1, port 0).
"""

from __future__ import annotations

from conftest import WAIT, outcome_within
from test_http_client_sessions import LONG, ScriptedServer, answer, posted, scripted  # noqa: F401

from mcp_ref import Client


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
