"""Issue 9 §1: mcp_ref's OAuth client (``mcp_ref.OAuth``) against the demo authorization server and a
protected mcp_ref server, over real HTTP: discovery, registration, PKCE, tokens, refresh, step-up,
stores.  The failure cases are in tests/oauth/test_oauth_errors.py."""

from __future__ import annotations

import io
import json
import os
import re
import stat
import subprocess
import sys
import threading
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from conftest import WAIT

from mcp_ref import Client, Context, OAuth, Server
from mcp_ref.http.wsgi_server import WsgiServer
from mcp_ref.oauth.browser import follow_redirect
from mcp_ref.oauth.resource import ProtectedResource
from mcp_ref.oauth.store import FileStore, MemoryStore
from mcp_ref.workbench.demo_auth_server import DEMO_CLIENT_ID, DemoAuthorizationServer


def serve(app):
    httpd = WsgiServer(("127.0.0.1", 0), app)
    threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    return httpd


class Watched:
    """A WSGI app wrapper that records each request's method, path and query."""

    def __init__(self, app):
        self.app, self.seen = app, []

    def __call__(self, environ, start_response):
        self.seen.append(
            (
                environ["REQUEST_METHOD"],
                environ["PATH_INFO"],
                parse_qs(environ.get("QUERY_STRING", "")),
            )
        )
        return self.app(environ, start_response)

    def hits(self, path: str) -> int:
        return sum(1 for _, p, _ in self.seen if p == path)


@pytest.fixture
def deployment():
    """The demo authorization server and a protected server trusting it: (mcp_url, watched AS, demo AS)."""
    authorization = DemoAuthorizationServer(token_lifetime=3600)
    watched = Watched(authorization)
    as_httpd = serve(watched)
    server = Server("protected")

    @server.tool
    def whoami(ctx: Context) -> str:
        """Who is calling, as the token says."""
        return f"{ctx.auth.client_id} {' '.join(ctx.auth.scopes)}"

    @server.tool(scopes=["mcp:admin"])
    def reboot() -> str:
        """Needs mcp:admin."""
        return "rebooted"

    resource = ProtectedResource(
        authorization.token_verifier(), [as_httpd.url], scopes_supported=["mcp:tools"]
    )
    mcp_httpd = serve(server.wsgi_app(auth=resource))
    yield mcp_httpd.url + "/mcp", watched, authorization
    for httpd in (as_httpd, mcp_httpd):
        httpd.shutdown()
        httpd.server_close()


def test_a_first_call_registers_authorizes_and_retries(deployment):
    """§Authorization Flow Steps: 401 → resource metadata → server metadata → registration → authorize
    (PKCE S256, state, resource) → token → the request again, with the token."""
    mcp_url, watched, _ = deployment
    with Client.http(mcp_url, auth=OAuth(authorize=follow_redirect), timeout=WAIT) as client:
        assert client.call_tool("whoami", {}).content[0].text.endswith("mcp:tools")
    assert (
        watched.hits("/register") == 1
        and watched.hits("/authorize") == 1
        and watched.hits("/token") == 1
    )
    query = next(q for _, p, q in watched.seen if p == "/authorize")
    assert (
        query["code_challenge_method"] == ["S256"]
        and query["resource"] == [mcp_url]
        and query["scope"] == ["mcp:tools"]
    )
    assert query["state"][0] and "code_verifier" not in query


def test_a_pre_registered_client_skips_registration(deployment):
    """§Client Registration Approaches: pre-registered credentials come first."""
    mcp_url, watched, _ = deployment
    with Client.http(
        mcp_url, auth=OAuth(DEMO_CLIENT_ID, authorize=follow_redirect), timeout=WAIT
    ) as client:
        assert client.call_tool("whoami", {}).content[0].text.startswith(DEMO_CLIENT_ID)
    assert watched.hits("/register") == 0


def test_tokens_in_a_store_need_no_second_authorization(deployment):
    """The store keeps the registration (by issuer) and the tokens (by server): a second client reuses them."""
    mcp_url, watched, _ = deployment
    store = MemoryStore()
    for _ in range(2):
        with Client.http(
            mcp_url, auth=OAuth(authorize=follow_redirect, store=store), timeout=WAIT
        ) as client:
            client.list_tools()
    assert watched.hits("/authorize") == 1 and watched.hits("/register") == 1
    assert sorted(key.split()[0] for key in store.keys()) == ["client", "tokens"]


def test_an_expired_token_is_refreshed_without_the_user(deployment):
    """OAuth 2.1 §4.3: an access token about to expire is refreshed (rotation: the new refresh token is kept)."""
    mcp_url, watched, authorization = deployment
    authorization.token_lifetime = 1  # within the refresh margin from the start
    auth = OAuth(authorize=follow_redirect)
    with Client.http(mcp_url, auth=auth, timeout=WAIT) as client:
        first = auth._tokens["refresh_token"]
        client.list_tools()
        client.call_tool("whoami", {})
    assert watched.hits("/authorize") == 1
    grants = [q for m, p, q in watched.seen if p == "/token"]
    assert len(grants) >= 2 and auth._tokens["refresh_token"] != first


def confidential_client(authorization, method: str) -> dict:
    """A client registered with the demo authorization server to authenticate by ``method``,
    whose metadata then advertises no Basic for ``client_secret_post`` (RFC 8414 §2
    ``token_endpoint_auth_methods_supported``): its registration."""
    advertised = authorization.metadata

    def metadata(issuer: str) -> dict:
        document = advertised(issuer)
        if method == "client_secret_post":
            document["token_endpoint_auth_methods_supported"] = ["none", "client_secret_post"]
        return document

    authorization.metadata = metadata
    return authorization.register(
        {
            "redirect_uris": ["http://127.0.0.1/callback"],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": method,
        }
    )


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_a_pre_registered_confidential_client_authenticates_its_refresh(deployment, method):
    """OAuth 2.1 §4.3 (RFC 6749 §6): a confidential client authenticates when it refreshes, as
    the code exchange did: with the method the authorization server's metadata allowed then
    (``client_secret_post`` when it advertises no Basic), not a new login in the browser."""
    mcp_url, watched, authorization = deployment
    authorization.token_lifetime = 1  # within the refresh margin from the start
    registered = confidential_client(authorization, method)
    refreshes = []
    token_endpoint = watched.app

    def watch_refreshes(environ, start_response):
        # the form is read here and given back to the authorization server unchanged
        body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
        environ["wsgi.input"] = io.BytesIO(body)
        if parse_qs(body.decode()).get("grant_type") == ["refresh_token"]:
            answered = []
            answer = token_endpoint(
                environ,
                lambda status, *rest: answered.append(status) or start_response(status, *rest),
            )
            refreshes.append(answered[0])
            return answer
        return token_endpoint(environ, start_response)

    watched.app = watch_refreshes
    auth = OAuth(registered["client_id"], registered["client_secret"], authorize=follow_redirect)
    with Client.http(mcp_url, auth=auth, timeout=WAIT) as client:
        client.list_tools()
        assert client.call_tool("whoami", {}).content[0].text.startswith(registered["client_id"])
    assert refreshes and all(status.startswith("200") for status in refreshes)
    assert watched.hits("/authorize") == 1


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_tokens_stored_without_their_client_auth_method_refresh_as_the_metadata_allows(
    deployment, method
):
    """Tokens an earlier release stored say not how the pre-registered confidential client
    authenticated: the refresh authenticates as a login would, by the issuer's metadata
    (RFC 8414 §2 ``token_endpoint_auth_methods_supported``; ``client_secret_post`` when it
    advertises no Basic), and needs no new login in the browser (OAuth 2.1 §4.3, RFC 6749 §6)."""
    mcp_url, watched, authorization = deployment
    registered = confidential_client(authorization, method)
    store = MemoryStore()
    credentials = (registered["client_id"], registered["client_secret"])
    with Client.http(
        mcp_url, auth=OAuth(*credentials, authorize=follow_redirect, store=store), timeout=WAIT
    ) as client:
        client.list_tools()
    (key,) = [key for key in store.keys() if key.startswith("tokens")]
    record = store.load(key)
    del record["client_auth_method"]  # as the earlier release stored it
    record["expires_at"] = 0  # expired: refreshed before the next request
    store.save(key, record)
    with Client.http(
        mcp_url, auth=OAuth(*credentials, authorize=follow_redirect, store=store), timeout=WAIT
    ) as client:
        assert client.call_tool("whoami", {}).content[0].text.startswith(registered["client_id"])
    assert watched.hits("/authorize") == 1
    assert store.load(key)["client_auth_method"] == method


def test_a_revoked_token_gets_the_flow_again(deployment):
    """A 401 for a token the server no longer accepts: refresh, else authorize again, then retry once."""
    mcp_url, watched, authorization = deployment
    auth = OAuth(DEMO_CLIENT_ID, authorize=follow_redirect)
    with Client.http(mcp_url, auth=auth, timeout=WAIT) as client:
        authorization.access_tokens.table.items.clear()  # every access token forgotten
        assert client.call_tool("whoami", {}).content[0].text.startswith(DEMO_CLIENT_ID)
        authorization.access_tokens.table.items.clear()
        authorization.refresh_tokens.table.items.clear()
        assert client.call_tool("whoami", {}).content[0].text.startswith(DEMO_CLIENT_ID)
    assert watched.hits("/authorize") == 2


class LifetimeRewritten:
    """A WSGI app wrapper whose token endpoint answers say ``"expires_in": <lifetime>`` (raw JSON
    text: ``1e999`` is valid JSON, which Python reads as infinity)."""

    def __init__(self, app, lifetime: bytes):
        self.app, self.lifetime = app, lifetime

    def __call__(self, environ, start_response):
        if environ["PATH_INFO"] != "/token":
            return self.app(environ, start_response)
        answered: list = []
        body = b"".join(self.app(environ, lambda status, headers: answered.append(status)))
        body = re.sub(rb'"expires_in":\s*[0-9]+', b'"expires_in": ' + self.lifetime, body)
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        start_response(answered[0], headers + [("Cache-Control", "no-store")])
        return [body]


@pytest.mark.parametrize("lifetime", [b"1e999", b"-1e999", b"1e300", b"0", b'"3600"'])
def test_a_token_lifetime_that_is_no_usable_number_is_taken_as_absent(
    deployment, tmp_path, lifetime
):
    """RFC 6749 §5.1: ``expires_in`` is "The lifetime in seconds of the access token" (RECOMMENDED).
    One that is infinite (``1e999``), absurd, not positive or not a number is taken as absent:
    the tokens are kept without an expiry (the file holds strict JSON, no ``Infinity``), used
    until refused, and once revoked and their refresh refused they are forgotten and the user
    authorizes again.  An infinite ``expires_at`` used to make the stored record unequal to
    itself: the refused tokens were never deleted, and the revoked token was sent for ever."""
    mcp_url, watched, authorization = deployment
    watched.app = LifetimeRewritten(watched.app, lifetime)
    path = tmp_path / "tokens.json"
    auth = OAuth(DEMO_CLIENT_ID, authorize=follow_redirect, store=FileStore(path))
    with Client.http(mcp_url, auth=auth, timeout=WAIT) as client:
        client.list_tools()
        stored = json.loads(path.read_text(), parse_constant=pytest.fail)[f"tokens {mcp_url}"]
        assert stored["expires_at"] is None and stored["refresh_token"]
        authorization.access_tokens.table.items.clear()  # revoked, and the refresh refused
        authorization.refresh_tokens.table.items.clear()
        assert client.call_tool("whoami", {}).content[0].text.startswith(DEMO_CLIENT_ID)
    assert watched.hits("/authorize") == 2


def test_step_up_for_a_scope_protected_tool(deployment):
    """§Scope Challenge Handling: 403 insufficient_scope names the scope; the client authorizes again for
    it (keeping what it had) and retries the call."""
    mcp_url, watched, _ = deployment
    auth = OAuth(DEMO_CLIENT_ID, authorize=follow_redirect)
    with Client.http(mcp_url, auth=auth, timeout=WAIT) as client:
        assert auth._tokens["scope"] == "mcp:tools"
        assert client.call_tool("reboot", {}).content[0].text == "rebooted"
        assert client.call_tool("whoami", {}).content[0].text.endswith("mcp:admin mcp:tools")
    scopes = [q["scope"][0] for _, p, q in watched.seen if p == "/authorize"]
    assert scopes == ["mcp:tools", "mcp:admin mcp:tools"]


class HeldRefusals:
    """A WSGI app wrapper that holds the first ``count`` 403 answers until all of them are ready:
    that many requests are then refused for the same (old) token, each one in flight together."""

    def __init__(self, app, count: int):
        self.app, self.count = app, count
        self.held = threading.Barrier(count, timeout=WAIT)
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        statuses = []

        def start(status, headers, exc_info=None):
            statuses.append(status)
            return start_response(status, headers, exc_info)

        body = self.app(environ, start)
        if statuses and statuses[0].startswith("403"):
            with self.lock:
                hold = self.count > 0
                self.count -= 1
            if hold:
                self.held.wait()
        return body


def test_concurrent_calls_refused_for_scope_retry_with_the_stepped_up_token():
    """2025-11-25 §Step-Up Authorization Flow: "Retry the original request with the new
    authorization".  Two calls refused 403 insufficient_scope together: one steps up, the other
    (waiting for it) is retried with the new token, not refused as if that token had failed."""
    authorization = DemoAuthorizationServer(token_lifetime=3600)
    as_httpd = serve(authorization)
    server = Server("protected")

    @server.tool(scopes=["mcp:admin"])
    def reboot() -> str:
        """Needs mcp:admin."""
        return "rebooted"

    resource = ProtectedResource(
        authorization.token_verifier(), [as_httpd.url], scopes_supported=["mcp:tools"]
    )
    mcp_httpd = serve(HeldRefusals(server.wsgi_app(auth=resource), 2))
    logins = []

    def authorize(url: str) -> str:
        logins.append(url)
        return follow_redirect(url, timeout=WAIT)

    try:
        auth = OAuth(DEMO_CLIENT_ID, authorize=authorize)
        with Client.http(mcp_httpd.url + "/mcp", auth=auth, timeout=WAIT) as client:
            client.list_tools()
            outcomes: list = []
            calls = [
                threading.Thread(
                    target=lambda: outcomes.append(_attempt(client.call_tool, "reboot", {}))
                )
                for _ in range(2)
            ]
            for call in calls:
                call.start()
            for call in calls:
                call.join(WAIT)
        texts = [o.content[0].text if not isinstance(o, Exception) else repr(o) for o in outcomes]
        assert texts == ["rebooted", "rebooted"]
        assert len(logins) == 2  # the first login and one step-up
    finally:
        for httpd in (as_httpd, mcp_httpd):
            httpd.shutdown()
            httpd.server_close()


def test_the_file_store_is_private_and_outlives_the_object(deployment, tmp_path):
    """§Token Theft: "MUST implement secure token storage": mode 0600 in a 0700 directory; no token in a log."""
    mcp_url, watched, _ = deployment
    path = tmp_path / "cache" / "tokens.json"
    with Client.http(
        mcp_url, auth=OAuth(authorize=follow_redirect, store=FileStore(path)), timeout=WAIT
    ) as client:
        client.list_tools()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    with Client.http(
        mcp_url, auth=OAuth(authorize=follow_redirect, store=FileStore(path)), timeout=WAIT
    ) as client:
        client.list_tools()
    assert watched.hits("/authorize") == 1
    assert not list(path.parent.glob(".tokens-*"))  # no temporary file left behind


def test_a_refresh_made_stale_by_another_process_uses_the_stores_tokens(deployment, tmp_path):
    """OAuth 2.1 §4.3.1: the demo authorization server rotates refresh tokens.  Two clients (two
    processes) share a FileStore; the second refreshes first and saves the new tokens.  The
    first, whose refresh token is now spent, reads the store before refreshing: it uses (and
    refreshes) the second's tokens, never deletes them, and never sends the user to log in again."""
    mcp_url, watched, authorization = deployment
    authorization.token_lifetime = (
        1  # within the refresh margin from the start: every use refreshes
    )
    path = tmp_path / "tokens.json"
    logins = {"first": 0, "second": 0}

    def browser(who: str):
        def authorize(url: str) -> str:
            logins[who] += 1
            return follow_redirect(url, timeout=WAIT)

        return authorize

    first = OAuth(authorize=browser("first"), store=FileStore(path))
    second = OAuth(authorize=browser("second"), store=FileStore(path))
    with Client.http(mcp_url, auth=first, timeout=WAIT) as client_1:
        spent = first._tokens["refresh_token"]
        with Client.http(mcp_url, auth=second, timeout=WAIT) as client_2:
            client_2.list_tools()  # refreshed with the first's refresh token, which is now spent
            assert second._tokens["refresh_token"] != spent
            assert client_1.call_tool("whoami", {}).content[0].text.endswith("mcp:tools")
            assert client_2.call_tool("whoami", {}).content[0].text.endswith("mcp:tools")
    assert logins == {"first": 1, "second": 0} and watched.hits("/authorize") == 1
    assert FileStore(path).load(f"tokens {mcp_url}") is not None


class BeforeRefresh:
    """A WSGI app wrapper that runs ``hook`` once, before the token endpoint handles a refresh with
    ``refresh_token``: what another process does while this one's refresh is on its way."""

    def __init__(self, app):
        self.app, self.hook, self.refresh_token = app, None, None

    def __call__(self, environ, start_response):
        if environ["PATH_INFO"] == "/token" and self.hook is not None:
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(body)
            if parse_qs(body.decode()).get("refresh_token") == [self.refresh_token]:
                hook, self.hook = self.hook, None
                hook()
        return self.app(environ, start_response)


def test_a_refresh_refused_after_another_process_refreshed_keeps_its_tokens(deployment, tmp_path):
    """OAuth 2.1 §4.3.1 (rotation): another process sharing the FileStore refreshes with the same
    refresh token while this one's refresh is on its way; this one is refused.  It reads the store
    again before deleting anything: the record holds the other's new tokens, so it uses them,
    leaves them in place, and the user is not sent to log in again."""
    mcp_url, watched, authorization = deployment
    authorization.token_lifetime = (
        1  # within the refresh margin from the start: every use refreshes
    )
    refreshes = BeforeRefresh(watched.app)
    watched.app = refreshes
    path = tmp_path / "tokens.json"
    logins = []

    def authorize(url: str) -> str:
        logins.append(url)
        return follow_redirect(url, timeout=WAIT)

    def another_process_refreshes() -> None:
        with Client.http(mcp_url, auth=OAuth(store=FileStore(path)), timeout=WAIT) as other:
            other.list_tools()

    first = OAuth(authorize=authorize, store=FileStore(path))
    with Client.http(mcp_url, auth=first, timeout=WAIT) as client:
        refreshes.refresh_token = first._tokens["refresh_token"]
        refreshes.hook = another_process_refreshes
        assert client.call_tool("whoami", {}).content[0].text.endswith("mcp:tools")
        assert refreshes.hook is None  # the other process did refresh first
    assert len(logins) == 1 and watched.hits("/authorize") == 1
    assert FileStore(path).load(f"tokens {mcp_url}") is not None


#: Another process saving a record (JSON on stdin) under a key (argv: file, key) in a FileStore.
SAVE_IN_ANOTHER_PROCESS = """
import json, sys
from mcp_ref.oauth.store import FileStore
FileStore(sys.argv[1]).save(sys.argv[2], json.load(sys.stdin))
"""


class SavedByAnotherProcessAfterRead(FileStore):
    """A FileStore whose next read of ``key`` once ``armed`` is followed, before it returns, by
    another process saving ``record`` under that key: a save landing just after this process read
    the store (what it read is then stale)."""

    def __init__(self, path):
        super().__init__(path)
        self.armed = False
        self.key: str | None = None
        self.record: dict | None = None

    def load(self, key):
        value = super().load(key)
        if self.armed and key == self.key:
            self.armed = False
            subprocess.run(
                [sys.executable, "-c", SAVE_IN_ANOTHER_PROCESS, str(self.path), key],
                input=json.dumps(self.record).encode(),
                check=True,
                timeout=WAIT,
            )
        return value


def test_a_refused_refresh_never_deletes_a_login_another_process_saved_meanwhile(
    deployment, tmp_path
):
    """OAuth 2.1 §4.3 (a refused refresh means a new authorization) with a FileStore shared by
    processes: this client's refresh is refused (invalid_grant); it reads the store (still the
    refused tokens), and right then another process saves its fresh login there.  The refused
    tokens are deleted only if the store still holds them, in one step under the file's lock: the
    fresh login stays, this client uses it, and the user is not sent to log in again."""
    mcp_url, watched, authorization = deployment
    path = tmp_path / "tokens.json"
    key = f"tokens {mcp_url}"
    logins = []

    def authorize(url: str) -> str:
        logins.append(url)
        return follow_redirect(url, timeout=WAIT)

    authorization.token_lifetime = 1  # within the refresh margin: the next use refreshes
    store = SavedByAnotherProcessAfterRead(path)
    first = OAuth(authorize=authorize, store=store)
    with Client.http(mcp_url, auth=first, timeout=WAIT) as client:
        client.list_tools()
        authorization.token_lifetime = 3600
        other = OAuth(authorize=authorize, store=MemoryStore())  # the other process's login
        with Client.http(mcp_url, auth=other, timeout=WAIT) as other_client:
            other_client.list_tools()
        fresh = dict(other._tokens)
        # the refresh will be refused; once it was sent, the next read of the store is followed
        # by the other process saving its fresh login there
        authorization.refresh_tokens.table.items.clear()
        refreshes = BeforeRefresh(watched.app)
        watched.app = refreshes
        refreshes.refresh_token = first._tokens["refresh_token"]
        store.key, store.record = key, fresh
        refreshes.hook = lambda: setattr(store, "armed", True)
        assert client.call_tool("whoami", {}).content[0].text.endswith("mcp:tools")
        assert refreshes.hook is None and not store.armed  # refused, then the save came
    assert len(logins) == 2 and watched.hits("/authorize") == 2  # no third login
    assert FileStore(path).load(key)["access_token"] == fresh["access_token"]
    assert first._tokens["access_token"] == fresh["access_token"]


def test_the_token_goes_to_the_mcp_server_only(deployment):
    """§Token Handling: "MCP clients MUST NOT send tokens to the MCP server other than ones issued by
    the MCP server's authorization server", and the authorization server never sees the access token."""
    mcp_url, watched, _ = deployment
    auth = OAuth(authorize=follow_redirect)
    with Client.http(mcp_url, auth=auth, timeout=WAIT) as client:
        client.list_tools()
    session = requests.Session()
    session.auth = auth
    seen = {}

    def elsewhere(environ, start_response):
        seen["authorization"] = environ.get("HTTP_AUTHORIZATION")
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]

    other = serve(elsewhere)
    try:
        assert session.get(other.url + "/", timeout=WAIT).text == "ok"
    finally:
        other.shutdown()
        other.server_close()
    assert seen == {"authorization": None}
    assert not any("HTTP_AUTHORIZATION" in str(q) for _, _, q in watched.seen)


def test_the_loopback_browser_receives_the_redirect(deployment):
    """The default handler: a listener on 127.0.0.1 (RFC 8252 §7.3) gets the redirect; here a thread
    plays the browser, visiting the announced URL."""
    from mcp_ref.oauth.browser import LoopbackBrowser

    mcp_url, watched, _ = deployment
    announced = []

    def browse(url: str) -> None:
        announced.append(url)
        threading.Thread(
            target=requests.get, args=(url,), kwargs={"timeout": WAIT}, daemon=True
        ).start()

    handler = LoopbackBrowser(open_browser=False, announce=browse)
    with Client.http(mcp_url, auth=OAuth(handler=handler), timeout=WAIT) as client:
        client.list_tools()
    redirect = parse_qs(urlsplit(announced[0]).query)["redirect_uri"][0]
    assert urlsplit(redirect).hostname == "127.0.0.1" and urlsplit(redirect).port


class LongRefusals:
    """A WSGI app wrapper that sends every 401 with a 64 MiB body (a hostile or broken server),
    counting the bytes its server managed to write before the client hung up."""

    SIZE = 64 * 1024 * 1024
    PIECE = 64 * 1024

    def __init__(self, app):
        self.app, self.written, self.ended = app, 0, threading.Event()

    def __call__(self, environ, start_response):
        refused = []

        def start(status, headers, exc_info=None):
            if status.startswith("401"):
                refused.append(True)
                headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
                headers.append(("Content-Length", str(self.SIZE)))
            return start_response(status, headers, exc_info)

        body = self.app(environ, start)
        return self.long_body(body) if refused else body

    def long_body(self, body):
        close = getattr(body, "close", None)
        if close is not None:
            close()
        try:
            for _ in range(self.SIZE // self.PIECE):
                self.written += self.PIECE
                yield b"x" * self.PIECE
        finally:
            self.ended.set()


def test_a_long_401_body_is_not_read_before_the_retry():
    """A 401's body is read within the error-body bound (64 KiB) before the client retries with
    a token, or its connection is closed: a server sending 64 MiB there is not read whole."""
    authorization = DemoAuthorizationServer(token_lifetime=3600)
    as_httpd = serve(authorization)
    server = Server("protected")

    @server.tool
    def ping_me() -> str:
        """Answers pong."""
        return "pong"

    resource = ProtectedResource(
        authorization.token_verifier(), [as_httpd.url], scopes_supported=["mcp:tools"]
    )
    refusals = LongRefusals(server.wsgi_app(auth=resource))
    mcp_httpd = serve(refusals)
    try:
        with Client.http(
            mcp_httpd.url + "/mcp", auth=OAuth(authorize=follow_redirect), timeout=WAIT
        ) as client:
            assert client.call_tool("ping_me", {}).content[0].text == "pong"
        assert refusals.ended.wait(WAIT)
        assert refusals.written < LongRefusals.SIZE // 2
    finally:
        for httpd in (as_httpd, mcp_httpd):
            httpd.shutdown()
            httpd.server_close()


def test_the_authorization_servers_answers_are_read_as_the_transport_reads_them():
    # RFC 9110 §15.2: "A client MUST be able to parse one or more 1xx responses received prior to
    # a final response".  The OAuth client's own session reads answers with the MCP transport's
    # reader (mcp_ref.http.framing): a 103 Early Hints before the metadata was taken for the answer.
    import http.server
    import json

    from http_fixtures import InThread

    from mcp_ref.oauth.discovery import fetch_json

    document = {"issuer": "http://127.0.0.1", "token_endpoint": "http://127.0.0.1/token"}

    class Hinting(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            body = json.dumps(document).encode()
            self.wfile.write(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hinting)
    httpd.daemon_threads = True
    serving = InThread(httpd)
    try:
        url = f"http://127.0.0.1:{httpd.server_port}/.well-known/oauth-authorization-server"
        assert fetch_json(OAuth()._session(), url, timeout=WAIT) == (200, document)
    finally:
        serving.stop()


def test_closing_never_starts_a_login():
    """The session's DELETE, and the cancellation of a call still running, both sent as the client
    closes, are answered 401 (every token revoked meanwhile): the close ends there.  No second
    login (discovery, the browser, up to ``login_timeout`` of waiting for the user) is started to
    end a session."""
    authorization = DemoAuthorizationServer(token_lifetime=3600)
    watched = Watched(authorization)
    as_httpd = serve(watched)
    server = Server("protected")
    started, release = threading.Event(), threading.Event()

    @server.tool
    def wait_for_release() -> str:
        """Runs until the test releases it."""
        started.set()
        release.wait(WAIT)
        return "released"

    resource = ProtectedResource(
        authorization.token_verifier(), [as_httpd.url], scopes_supported=["mcp:tools"]
    )
    mcp_httpd = serve(server.wsgi_app(auth=resource))
    logins = []

    def authorize(url: str) -> str:
        logins.append(url)
        return follow_redirect(url, timeout=WAIT)

    try:
        client = Client.http(
            mcp_httpd.url + "/mcp",
            auth=OAuth(DEMO_CLIENT_ID, authorize=authorize),
            timeout=WAIT,
            era="handshake",  # a session, ended by a DELETE
        )
        client.__enter__()
        outcome: list = []
        call = threading.Thread(
            target=lambda: outcome.append(_attempt(client.call_tool, "wait_for_release", {})),
            daemon=True,
        )
        call.start()
        assert started.wait(WAIT)
        authorization.access_tokens.table.items.clear()  # every token revoked
        authorization.refresh_tokens.table.items.clear()
        client.__exit__(None, None, None)
        call.join(WAIT)
        assert not call.is_alive() and isinstance(outcome[0], Exception)
        assert len(logins) == 1 and watched.hits("/authorize") == 1
    finally:
        release.set()
        for httpd in (as_httpd, mcp_httpd):
            httpd.shutdown()
            httpd.server_close()


def test_closing_never_waits_for_a_login_on_another_thread(deployment):
    """A call steps up (403 ``insufficient_scope``) and its login waits for the user, holding the
    OAuth object's lock up to ``login_timeout``; the client closes meanwhile.  Its own notices (the
    session's DELETE, the call's cancellation) go with the tokens at hand, never waiting for that
    login: the close ends within its bounds (``NOTICES_AT_CLOSE`` + ``SESSION_END_TIMEOUT``)."""
    mcp_url, _, _ = deployment
    stepping_up, user_back = threading.Event(), threading.Event()
    logins = []

    def authorize(url: str) -> str:
        logins.append(url)
        if len(logins) > 1:  # the step-up: the user is away until the test ends
            stepping_up.set()
            user_back.wait(4 * WAIT)
        return follow_redirect(url, timeout=WAIT)

    auth = OAuth(DEMO_CLIENT_ID, authorize=authorize, login_timeout=4 * WAIT)
    client = Client.http(mcp_url, auth=auth, timeout=4 * WAIT, era="handshake")
    client.__enter__()
    call = None
    try:
        client.list_tools()  # the first login, approved at once
        call = threading.Thread(target=_attempt, args=(client.call_tool, "reboot", {}), daemon=True)
        call.start()
        assert stepping_up.wait(WAIT)
        closed = threading.Event()
        threading.Thread(
            target=lambda: (client.__exit__(None, None, None), closed.set()), daemon=True
        ).start()
        assert closed.wait(WAIT), "close() waited for the login on the other thread"
    finally:
        user_back.set()
        if call is not None:
            call.join(WAIT)
        client.__exit__(None, None, None)


def _attempt(call, *args):
    """``call(*args)``'s result, or the exception it raised."""
    try:
        return call(*args)
    except Exception as exc:
        return exc


def test_a_client_metadata_document_client_refreshes_without_the_user(deployment):
    """OAuth 2.1 §4.3 for a client identified by its Client ID Metadata Document (2025-11-25
    §Client ID Metadata Documents): its identity is kept with its tokens, so a token about to
    expire is refreshed as that client, not thrown away for a new login in the browser."""
    import json

    mcp_url, watched, authorization = deployment
    authorization.token_lifetime = 1  # within the refresh margin from the start

    def documents(environ, start_response):
        body = json.dumps(
            {
                "client_id": client_id,
                "client_name": "document client",
                "redirect_uris": ["http://127.0.0.1/callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "token_endpoint_auth_method": "none",
            }
        ).encode()
        start_response(
            "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        )
        return [body]

    documents_httpd = serve(documents)
    client_id = documents_httpd.url + "/client.json"
    logins = []

    def authorize(url: str) -> str:
        logins.append(url)
        return follow_redirect(url, timeout=WAIT)

    try:
        auth = OAuth(authorize=authorize, client_metadata_url=client_id)
        with Client.http(mcp_url, auth=auth, timeout=WAIT) as client:
            client.list_tools()
            client.call_tool("whoami", {})
    finally:
        documents_httpd.shutdown()
        documents_httpd.server_close()
    assert len(logins) == 1 and watched.hits("/register") == 0
    grants = [q for m, p, q in watched.seen if p == "/token"]
    assert parse_qs(urlsplit(logins[0]).query)["client_id"] == [client_id]
    assert len(grants) >= 2


def test_http_trace_sees_the_401_and_the_retry_with_the_new_token(deployment):
    """``http_trace`` reports every request with the headers as sent: the one refused 401, and the
    OAuth hook's retry of it with the new token (sent from the response hook, past the session)."""
    from mcp_ref.http.exchange_trace import HttpRequestSeen, HttpResponseSeen

    mcp_url, _, _ = deployment
    seen: list = []
    with Client.http(
        mcp_url, auth=OAuth(authorize=follow_redirect), http_trace=seen.append, timeout=WAIT
    ) as client:
        client.list_tools()
    sent = [s for s in seen if isinstance(s, HttpRequestSeen)]
    status = {s.exchange: s.status for s in seen if isinstance(s, HttpResponseSeen)}
    first, retry = sent[0], sent[1]
    assert "Authorization" not in dict(first.headers) and status[first.exchange] == 401
    assert retry.body == first.body and retry.url == first.url
    assert dict(retry.headers)["Authorization"].startswith("Bearer ")
    assert status[retry.exchange] == 200


def test_the_scopes_option_adds_to_the_challenges_scope(deployment):
    """2025-11-25 §Scope Selection Strategy: the challenge's ``scope`` comes first (the server
    needs it); ``OAuth(scopes=...)`` is asked for besides it, as the user said."""
    mcp_url, watched, _ = deployment
    with Client.http(
        mcp_url,
        auth=OAuth(DEMO_CLIENT_ID, authorize=follow_redirect, scopes=["mcp:admin"]),
        timeout=WAIT,
    ) as client:
        assert client.call_tool("reboot", {}).content[0].text == "rebooted"  # no step-up needed
    [query] = [q for _, p, q in watched.seen if p == "/authorize"]
    assert query["scope"] == ["mcp:tools mcp:admin"]
