"""The official MCP Python SDK's OAuth client, logging in to a protected MCP server and calling ``echo``.

Used by tests/interop/test_interop_oauth.py::

    python interop_sdk_oauth_client.py http://127.0.0.1:PORT/mcp

Only the SDK (``mcp``, and the HTTP client it ships with) is used: an ``OAuthClientProvider`` with
in-memory token storage is the auth of the SDK's Streamable HTTP client.  It discovers the
authorization server, registers dynamically, and sends the "browser" to the authorization URL;
here the redirect handler plays the browser by fetching that URL itself, without following the
redirect (the demo's authorization server approves at once), and the callback handler reads
code, state and iss from the ``Location`` it answered with.  No listener is needed at the
loopback redirect URI: nothing is ever sent there.

Prints the text ``echo`` returned on stdout; exits 0 on success, 1 (with the error on stderr)
otherwise.  The whole run is bounded by ``TIMEOUT`` seconds.
"""

from __future__ import annotations

import sys
import traceback
import warnings
from urllib.parse import parse_qs, urlsplit

import anyio

try:  # mcp 2.x talks HTTP through httpx2
    import httpx2 as httpx
except ImportError:  # mcp 1.x: httpx
    import httpx

from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

try:  # mcp 2.x: the callback handler returns an AuthorizationCodeResult (with iss, RFC 9207)
    from mcp.shared.auth import AuthorizationCodeResult
except ImportError:  # mcp 1.x: a (code, state) tuple
    AuthorizationCodeResult = None

warnings.simplefilter("ignore")  # deprecation notices must not clutter stderr

TIMEOUT = 30.0  # seconds
REDIRECT_URI = "http://127.0.0.1:33418/callback"  # loopback: any port; never listened on


class InMemoryTokenStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


class Browser:
    """The redirect handler visits the authorization URL; the callback handler reads the answer."""

    def __init__(self) -> None:
        self.location: str | None = None

    async def redirect_handler(self, authorization_url: str) -> None:
        async with httpx.AsyncClient(follow_redirects=False, timeout=TIMEOUT) as http:
            response = await http.get(authorization_url)
        if response.status_code not in (302, 303, 307) or "location" not in response.headers:
            raise RuntimeError(
                f"the authorization endpoint answered {response.status_code}, not a redirect: "
                f"{response.text[:500]}"
            )
        self.location = response.headers["location"]

    async def callback_handler(self):
        if self.location is None:
            raise RuntimeError("the authorization endpoint was not visited")
        query = {
            name: values[0] for name, values in parse_qs(urlsplit(self.location).query).items()
        }
        if "code" not in query:
            raise RuntimeError(f"the authorization response carries no code: {self.location}")
        if AuthorizationCodeResult is None:
            return query["code"], query.get("state")
        return AuthorizationCodeResult(
            code=query["code"], state=query.get("state"), iss=query.get("iss")
        )


async def call_echo(url: str) -> str:
    browser = Browser()
    auth = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="mcp-python-sdk interop client",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=InMemoryTokenStorage(),
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
    )
    try:  # mcp 2.x: the caller hands over (and owns) the HTTP client
        from mcp.client.streamable_http import streamable_http_client
    except ImportError:  # mcp 1.x
        from mcp.client.streamable_http import streamablehttp_client

        transport = streamablehttp_client(url, auth=auth)
        http = None
    else:
        http = httpx.AsyncClient(auth=auth, timeout=httpx.Timeout(TIMEOUT))
        transport = streamable_http_client(url, http_client=http)
    try:
        async with transport as streams, ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            result = await session.call_tool("echo", {"text": "sdk-oauth"})
    finally:
        if http is not None:
            await http.aclose()
    if result.is_error if hasattr(result, "is_error") else result.isError:
        raise RuntimeError(f"echo failed: {result}")
    return result.content[0].text


async def main(url: str) -> str:
    with anyio.fail_after(TIMEOUT):
        return await call_echo(url)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: interop_sdk_oauth_client.py MCP_URL")
    try:
        text = anyio.run(main, sys.argv[1])
    except Exception:
        traceback.print_exc()
        sys.exit(1)
    print(text)
