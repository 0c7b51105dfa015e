"""Issue 21, part 5: one exception root.  ``except mcp_ref.MCPRefError`` catches every error the
library raises, and the standard library kinds stay second parents."""

from __future__ import annotations

import pytest
from conftest import WAIT

import mcp_ref
from mcp_ref import Client, Server
from mcp_ref.errors import (
    CapabilityError,
    ConnectionClosed,
    McpError,
    RequestTimeout,
    ResponseStreamLost,
    ServerUnreachable,
)
from mcp_ref.http.client import HttpTransportError
from mcp_ref.http.origins import CrossOriginRefused
from mcp_ref.oauth.errors import AuthorizationError


@pytest.mark.parametrize(
    "kind, second",
    [
        (McpError, None),
        (ConnectionClosed, ConnectionError),
        (ServerUnreachable, ConnectionError),
        (ResponseStreamLost, ConnectionError),
        (RequestTimeout, TimeoutError),
        (CapabilityError, None),
        (AuthorizationError, None),
        (HttpTransportError, ConnectionError),
        (CrossOriginRefused, ConnectionError),
    ],
)
def test_every_error_kind_sits_under_the_root(kind, second):
    assert issubclass(kind, mcp_ref.MCPRefError)
    if second is not None:
        assert issubclass(kind, second)


def test_the_root_catches_what_a_peer_answers_and_a_timeout():
    server = Server("root")

    @server.tool()
    def fail() -> str:
        """Always refuses."""
        raise mcp_ref.InvalidParams("no")

    with Client.in_memory(server, timeout=WAIT) as client:
        with pytest.raises(mcp_ref.MCPRefError) as caught:
            client.call_tool("nope")
        assert isinstance(caught.value, McpError)
    with pytest.raises(mcp_ref.MCPRefError) as caught:
        Client.http(
            "http://127.0.0.1:9/mcp", timeout=WAIT, connect_timeout=2
        )  # nothing listens on port 9
    assert isinstance(caught.value, ConnectionError)
