"""Issue 11: who may see and call what, how often — through real transports, in both eras.

The server is tests/servers/policy_server.py: items named ``secret...`` are for the ``admin``
scope only, ``limited`` allows 3 calls a minute per caller, a caller may subscribe to 3
resources.  Its rate limits run on a clock its ``advance`` tool moves, so a window is crossed
without waiting.  stdio runs the script as a subprocess; HTTP serves it on 127.0.0.1 (port 0).
"""

from __future__ import annotations

import gc
import json
import math
import sys
import threading

import pytest
import requests
from conftest import SERVERS, WAIT, InMemory
from http_fixtures import HeaderRecorder, serve  # noqa: F401 - a fixture
from policy_tokens import Tokens, bearer

from mcp_ref import Client, LimitExceeded, McpError
from mcp_ref.oauth.resource import ProtectedResource

POLICY = InMemory("policy_server", "build")
ERAS = ("modern", "handshake")
TRANSPORTS = ("stdio", "http")
VISIBLE_TOOLS = {
    "alpha",
    "beta",
    "gamma",
    "epsilon",
    "limited",
    "audit",
    "advance",
    "whoami",
    "add_item",
    "remove_item",
    "touch",
}


def open_client(transport: str, era: str, serve, variant: str = "", **options) -> Client:
    """A Client of policy_server (``variant``: its factory) over ``transport``, speaking ``era``."""
    options.setdefault("timeout", WAIT)
    if transport == "stdio":
        command = [sys.executable, str(SERVERS / "policy_server.py")] + (
            [variant] if variant else []
        )
        return Client.stdio(command, era=era, stderr="discard", **options)
    factory = {"": "build", "global": "build_global", "storm": "build_storm"}[variant]
    return Client.http(serve(InMemory("policy_server", factory).build()).mcp, era=era, **options)


@pytest.fixture(params=[(t, e) for t in TRANSPORTS for e in ERAS], ids=lambda p: f"{p[0]}-{p[1]}")
def client(request, serve):
    """A policy_server client over each transport, in each era."""
    transport, era = request.param
    with open_client(transport, era, serve) as opened:
        assert opened.era == era
        yield opened


def every_page(fetch) -> list[list]:
    """Every page of a listing, following the cursors."""
    pages, cursor = [], None
    while True:
        page = fetch(cursor)
        pages.append(page.items)
        cursor = page.next_cursor
        if cursor is None:
            return pages
        assert len(pages) < 50, "the cursors never end"


# -- access control ---------------------------------------------------------------------------


@pytest.mark.slow
def test_hidden_items_stay_hidden_in_every_listing_and_page(client):
    tools = every_page(client.list_tools_page)
    assert all(
        len(page) <= 2 for page in tools
    )  # page_size=2: pages are of the caller's own listing
    assert [t.name for page in tools for t in page] == sorted(
        VISIBLE_TOOLS,
        key=[
            "alpha",
            "beta",
            "gamma",
            "epsilon",
            "limited",
            "audit",
            "advance",
            "whoami",
            "add_item",
            "remove_item",
            "touch",
        ].index,
    )
    resources = [r.uri for page in every_page(client.list_resources_page) for r in page]
    assert resources == [
        "mem://public/1",
        "mem://public/2",
        "mem://public/3",
        "mem://public/4",
        "files://public.txt",
    ]
    templates = [
        t.uri_template for page in every_page(client.list_resource_templates_page) for t in page
    ]
    assert templates == ["mem://items/{item}", "files://{+path}"]
    prompts = [p.name for page in every_page(client.list_prompts_page) for p in page]
    assert prompts == ["greet", "summary"]


def _as_missing(exc: McpError, hidden: str, missing: str) -> tuple:
    """An error with the name it was about replaced, to compare a hidden item's with a missing one's."""
    text = (
        json.dumps([exc.code, exc.message, exc.data])
        .replace(hidden, "<name>")
        .replace(missing, "<name>")
    )
    return json.loads(text)


@pytest.mark.slow
@pytest.mark.parametrize(
    "attempt, hidden, missing",
    [
        (lambda c, name: c.call_tool(name), "secret_delta", "no_such_tool"),
        (
            lambda c, name: c.call_tool(name),
            "secret_limited",
            "no_such_tool",
        ),  # hidden beats its scope and limit
        (lambda c, uri: c.read_resource(uri), "mem://secret/doc", "mem://gone/doc"),
        (
            lambda c, uri: c.read_resource(uri),
            "mem://secret/7",
            "mem://gone/7",
        ),  # a hidden template's URI
        (
            lambda c, uri: c.read_resource(uri),
            "mem://vault/7",
            "mem://gone/7",
        ),  # the template is hidden, not the URI
        (
            lambda c, uri: c.read_resource(uri),
            "files://secret.txt",
            "files://gone.txt",
        ),  # a hidden file
        (
            lambda c, uri: c.read_resource(uri),
            "files://secre%74.txt",
            "files://gone.txt",
        ),  # ... spelled otherwise
        (
            lambda c, uri: c.read_resource(uri),
            "mem://items/secre%74",
            "mem://gone/7",
        ),  # a hidden name, encoded
        (lambda c, name: c.get_prompt(name), "secret_brief", "no_such_prompt"),
        (
            lambda c, name: c.complete(argument="x", value="", prompt=name),
            "secret_brief",
            "no_such_prompt",
        ),
        (
            lambda c, name: c.complete(argument="who", value="", prompt=name),
            "greet",
            "no_such_prompt",
        ),  # no completion
        (
            lambda c, uri: c.complete(argument="item", value="", resource=uri),
            "mem://secret/{item}",
            "mem://gone/{item}",
        ),
    ],
    ids=[
        "tool",
        "scoped-tool",
        "resource",
        "template-resource",
        "hidden-template",
        "file",
        "file-encoded",
        "encoded-name",
        "prompt",
        "completion",
        "completion-denied",
        "template-completion",
    ],
)
def test_a_hidden_item_answers_exactly_as_a_missing_one(client, attempt, hidden, missing):
    with pytest.raises(McpError) as refused_hidden:
        attempt(client, hidden)
    with pytest.raises(McpError) as refused_missing:
        attempt(client, missing)
    assert _as_missing(refused_hidden.value, hidden, missing) == _as_missing(
        refused_missing.value, hidden, missing
    )
    assert client.call_tool("alpha").content[0].text == "alpha"  # the connection goes on


@pytest.mark.slow
@pytest.mark.parametrize("transport, era", [(t, e) for t in TRANSPORTS for e in ERAS])
def test_a_hidden_item_changing_is_not_announced_to_those_who_cannot_see_it(transport, era, serve):
    heard, cond = [], threading.Condition()

    def hear(what):
        with cond:
            heard.append(what)
            cond.notify_all()

    with open_client(
        transport, era, serve, on_list_changed=hear, on_resource_updated=hear
    ) as client:
        client.subscribe("mem://public/1")
        client.call_tool(
            "add_item", {"name": "secret_new"}
        )  # hidden from this caller: not announced to it
        client.call_tool("add_item", {"name": "public_new"})
        client.call_tool("remove_item", {"name": "secret_new"})
        assert "public_new" in {t.name for t in client.list_tools()}
        client.call_tool("remove_item", {"name": "public_new"})
        client.call_tool(
            "touch", {"uri": "mem://public/1"}
        )  # a marker: it comes after them all, on the same stream
        with cond:
            assert cond.wait_for(lambda: "mem://public/1" in heard, WAIT)
        assert heard == [
            "tools",
            "tools",
            "mem://public/1",
        ]  # the changes it can see, not the hidden ones


def test_a_removal_is_announced_to_those_authorize_let_see_it_while_it_existed():
    from mcp_ref import Server

    # an authorize that reads the item from the registry: it must be asked before the item is gone
    server = Server(
        "lookup",
        authorize=lambda who, action, name: server.get_tool(name).listing["description"] == "open",
    )
    server.add_tool(lambda: "x", name="visible", description="open")
    changed = threading.Event()
    with Client.in_memory(
        server, era="handshake", timeout=WAIT, on_list_changed=lambda kind: changed.set()
    ) as client:
        assert [t.name for t in client.list_tools()] == ["visible"]
        server.remove_tool("visible")
        assert changed.wait(WAIT)


@pytest.mark.slow
def test_completion_functions_can_offer_each_caller_only_its_own(client):
    assert client.complete(argument="topic", value="s", prompt="summary").values == [
        "science",
        "sport",
    ]


@pytest.mark.slow
def test_subscribing_to_a_hidden_resource_answers_as_for_a_missing_one(serve):
    for transport in TRANSPORTS:
        with open_client(transport, "handshake", serve) as client:
            errors = []
            for uri in ("mem://secret/doc", "mem://gone/doc"):
                with pytest.raises(McpError) as refused:
                    client.subscribe(uri)
                errors.append(_as_missing(refused.value, "mem://secret/doc", "mem://gone/doc"))
            assert errors[0] == errors[1]


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_listen_stream_never_carries_a_hidden_resource(transport, serve):
    with open_client(transport, "modern", serve) as client:
        seen, arrived = [], threading.Event()

        def collect(method, params):
            seen.append(params.get("uri"))
            if params.get("uri") == "mem://public/1":
                arrived.set()

        with client.listen(
            resource_uris=["mem://secret/doc", "mem://public/1", "mem://gone/doc"],
            on_notification=collect,
        ) as stream:
            # acknowledged like an unknown URI: the acknowledgment does not tell which exist
            assert stream.acknowledged["resourceSubscriptions"] == [
                "mem://gone/doc",
                "mem://public/1",
                "mem://secret/doc",
            ]
            client.call_tool("touch", {"uri": "mem://secret/doc"})
            client.call_tool(
                "touch", {"uri": "mem://public/1"}
            )  # after the secret one, on the same stream
            assert arrived.wait(WAIT)
        assert seen == ["mem://public/1"]


# -- the caller, and its token ------------------------------------------------------------------


@pytest.fixture
def protected(serve):
    """policy_server behind a bearer token (alice: admin; bob: none): its /mcp URL."""
    tokens = Tokens()
    served = serve(
        app=POLICY.build().wsgi_app(auth=ProtectedResource(tokens, ["https://as.example"]))
    )
    tokens.audience = (served.mcp,)
    return served.mcp


@pytest.mark.parametrize("era", ERAS)
def test_what_a_principal_sees_and_may_call_follows_its_token(protected, era):
    with (
        Client.http(protected, era=era, auth=bearer("alice-token"), timeout=WAIT) as alice,
        Client.http(protected, era=era, auth=bearer("bob-token"), timeout=WAIT) as bob,
    ):
        me = alice.call_tool("whoami").structured_content
        assert me == {"id": "oauth:policy-client:alice", "scopes": ["admin"], "authenticated": True}
        assert bob.call_tool("whoami").structured_content["id"] == "oauth:policy-client:bob"
        assert {"secret_delta", "secret_zeta", "secret_limited"} <= {
            t.name for t in alice.list_tools()
        }
        assert not any("secret" in t.name for t in bob.list_tools())
        assert alice.call_tool("secret_delta").content[0].text == "secret_delta"
        assert alice.read_resource("mem://secret/doc").contents[0].text == "the secret"
        assert alice.complete(argument="topic", value="s", prompt="summary").values == [
            "science",
            "sport",
            "secrets",
        ]
        assert bob.complete(argument="topic", value="s", prompt="summary").values == [
            "science",
            "sport",
        ]
        with pytest.raises(McpError) as refused:
            bob.call_tool("secret_delta")
        assert refused.value.code == -32602 and "httpStatus" not in (refused.value.data or {})
        # a scope-protected tool stays listed and answers 403 insufficient_scope (step-up)
        assert "audit" in {t.name for t in bob.list_tools()}
        with pytest.raises(McpError) as step_up:
            bob.call_tool("audit")
        assert "403" in step_up.value.message and "auditor" in step_up.value.message
        # limits are per principal: bob's use of limited leaves alice's allowance whole
        for _ in range(3):
            bob.call_tool("limited")
        with pytest.raises(LimitExceeded):
            bob.call_tool("limited")
        assert alice.call_tool("limited").content[0].text == "done"


@pytest.mark.parametrize("era", ERAS)
def test_a_hidden_template_leaves_the_files_it_serves_out_of_resources_list(protected, era):
    """``authorize`` denies the vault file root's template (``vault://{+path}``), never a file's
    URI: a hidden template hides every URI it serves, from ``resources/list`` as from a read."""
    with (
        Client.http(protected, era=era, auth=bearer("alice-token"), timeout=WAIT) as alice,
        Client.http(protected, era=era, auth=bearer("bob-token"), timeout=WAIT) as bob,
    ):
        for caller, admin in ((alice, True), (bob, False)):
            listed = {r.uri for page in every_page(caller.list_resources_page) for r in page}
            templates = {
                t.uri_template
                for page in every_page(caller.list_resource_templates_page)
                for t in page
            }
            assert ("vault://plan.txt" in listed) is admin
            assert ("vault://{+path}" in templates) is admin
            assert "files://public.txt" in listed  # the other file root is listed to both
        assert alice.read_resource("vault://plan.txt").contents[0].text == "the plan\n"
        with pytest.raises(McpError) as refused:
            bob.read_resource("vault://plan.txt")
        assert "Resource not found" in refused.value.message


def test_a_hidden_scoped_tool_is_not_found_not_forbidden_over_raw_http(protected):
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "Authorization": "Bearer bob-token",
    }
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    answer = requests.post(protected, json=init, headers=headers, timeout=WAIT)
    session = {
        **headers,
        "Mcp-Session-Id": answer.headers["Mcp-Session-Id"],
        "MCP-Protocol-Version": "2025-11-25",
    }
    for name, status in (("secret_limited", 200), ("audit", 403)):
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name}}
        answer = requests.post(protected, json=call, headers=session, timeout=WAIT)
        assert answer.status_code == status, (name, answer.text)
    assert (
        "Unknown tool: secret_limited"
        in requests.post(
            protected,
            json={
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "secret_limited"},
            },
            headers=session,
            timeout=WAIT,
        ).text
    )


@pytest.mark.slow
def test_the_principal_of_each_transport(serve):
    with open_client("stdio", "handshake", serve) as client:
        assert client.call_tool("whoami").structured_content == {
            "id": "stdio",
            "scopes": [],
            "authenticated": False,
        }
    with open_client("http", "modern", serve) as client:
        assert client.call_tool("whoami").structured_content["id"] == "http-client:127.0.0.1"
    with open_client("http", "handshake", serve) as client:
        first = client.call_tool("whoami").structured_content["id"]
        assert first.startswith("http-session:") and len(first) == len("http-session:") + 16
        assert (
            client.call_tool("whoami").structured_content["id"] == first
        )  # stable for the session
        assert client.session.transport.session_id not in first  # the session id is a credential
    stateless = serve(POLICY.build(), stateless=True)
    with Client.http(stateless.mcp, era="handshake", timeout=WAIT) as client:
        assert client.call_tool("whoami").structured_content["id"] == "http-client:127.0.0.1"


# -- rate limits ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_tool_limit_holds_under_concurrent_callers_and_resets_after_its_window(client):
    outcomes, start = [], threading.Barrier(8, timeout=WAIT)

    def caller():
        start.wait()
        try:
            outcomes.append(client.call_tool("limited").content[0].text)
        except LimitExceeded as exc:
            outcomes.append(exc)

    threads = [threading.Thread(target=caller) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    assert sorted(o for o in outcomes if isinstance(o, str)) == ["done"] * 3
    refusals = [o for o in outcomes if isinstance(o, LimitExceeded)]
    assert len(refusals) == 5
    for refusal in refusals:
        assert (
            refusal.code == -31005 and 0 < refusal.retry_after <= 20.001
        )  # 3 a minute: one every 20 s
        assert refusal.data["limit"] == "3/60s"
    assert client.call_tool("alpha").content[0].text == "alpha"  # other tools are not limited by it
    client.call_tool("advance", {"seconds": 20})  # one token back
    assert client.call_tool("limited").content[0].text == "done"
    with pytest.raises(LimitExceeded):
        client.call_tool("limited")
    client.call_tool("advance", {"seconds": 60})  # a whole window: the burst again
    assert [client.call_tool("limited").content[0].text for _ in range(3)] == ["done"] * 3


MODERN_CALL_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": "alpha",
}


def raw_call(url: str, era: str, request_id: int) -> requests.Response:
    params = {"name": "alpha", "arguments": {}}
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-11-25",
    }
    if era == "modern":
        params["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        headers = MODERN_CALL_HEADERS
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    return requests.post(url, json=body, headers=headers, timeout=WAIT)


@pytest.mark.parametrize("era", ERAS)
def test_over_the_server_limit_http_answers_429_with_retry_after(era, serve):
    server = InMemory("policy_server", "build_global").build()
    url = serve(server, stateless=True).mcp
    assert [raw_call(url, era, n).status_code for n in range(1, 6)] == [200] * 5
    refused = raw_call(url, era, 6)
    assert refused.status_code == 429
    retry_after = refused.headers["Retry-After"]
    assert retry_after.isdigit() and int(retry_after) == 12  # 5 a minute: a token every 12 s
    body = refused.json()
    assert body["id"] == 6 and body["error"]["code"] == -31005
    assert (
        math.ceil(body["error"]["data"]["retryAfter"]) == 12
        and body["error"]["data"]["limit"] == "5/60s"
    )
    server.policy.clock.advance(12)
    assert raw_call(url, era, 7).status_code == 200
    assert raw_call(url, era, 8).status_code == 429


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
def test_over_the_server_limit_a_stdio_client_gets_the_error_and_the_connection_goes_on(era, serve):
    with open_client("stdio", era, serve, "global") as client:
        answered = 1  # server/discover or initialize counted too
        with pytest.raises(LimitExceeded) as refused:
            for _ in range(10):
                client.call_tool("alpha")
                answered += 1
        assert answered == 5
        assert refused.value.retry_after == 12.0
        with pytest.raises(LimitExceeded):
            client.list_tools()  # every request counts; the session is still there to answer


def test_a_client_refused_at_its_first_request_is_told_so_not_downgraded(serve):
    server = InMemory("policy_server", "build_global").build()
    served = serve(server, stateless=True, wrap=HeaderRecorder)
    for n in range(5):
        raw_call(served.mcp, "modern", n)
    with pytest.raises(LimitExceeded) as refused:
        Client.http(served.mcp, timeout=WAIT)  # its server/discover got 429: not a legacy server
    assert refused.value.data["httpStatus"] == 429
    methods = [headers.get("mcp-method") for headers in served.httpd.app.seen("POST")]
    assert methods == ["tools/call"] * 5 + [
        "server/discover"
    ]  # no initialize: no fallback to the handshake


@pytest.mark.parametrize("transport", ["streamable", "sse"])
def test_a_new_http_session_does_not_reset_an_unauthenticated_callers_limits(transport, serve):
    """A handshake-era HTTP client without a token is its session (``ctx.principal.id``), but its
    limits count against the client that opens the sessions (its address, ``Principal.limit_id``),
    as a 2026-07-28 client's do: a new session is free to open, and used to start the server's
    and the tool's limits afresh (2025-11-25 server/tools §Security Considerations: servers MUST
    "Rate limit tool invocations")."""
    served = serve(POLICY.build())
    url = served.mcp if transport == "streamable" else served.sse
    ran, refused, ids = 0, 0, set()
    for _ in range(3):  # limited: 3 a minute per caller
        with Client.http(url, era="handshake", transport=transport, timeout=WAIT) as client:
            ids.add(client.call_tool("whoami").structured_content["id"])
            for _ in range(2):
                try:
                    assert client.call_tool("limited").content[0].text == "done"
                    ran += 1
                except LimitExceeded as exc:
                    assert exc.data["limit"] == "3/60s"
                    refused += 1
    assert (ran, refused) == (3, 3)
    assert len(ids) == 3 and all(i.startswith("http-session:") for i in ids)  # ids are per session


@pytest.mark.parametrize("transport", ["streamable", "sse"])
def test_a_new_http_session_does_not_reset_the_server_limit(transport, serve):
    """The server's own limit (5 a minute per caller) likewise: once one session has spent it, the
    next session of the same client is refused at its ``initialize``."""
    served = serve(InMemory("policy_server", "build_global").build())
    url = served.mcp if transport == "streamable" else served.sse
    with Client.http(url, era="handshake", transport=transport, timeout=WAIT) as client:
        for _ in range(4):  # initialize was the first
            client.call_tool("alpha")
        with pytest.raises(LimitExceeded):
            client.call_tool("alpha")
    with pytest.raises(LimitExceeded) as refused:
        Client.http(url, era="handshake", transport=transport, timeout=WAIT)
    assert refused.value.data["limit"] == "5/60s"


#: A server whose limited items are named with a caller's values: a customer's number and a token
#: in a resource's URI, an order's number in a URI its template serves.  It logs everything.
LOGGED_SERVER = """
import logging, sys
from mcp_ref import Server

logging.basicConfig(stream=sys.stderr, level=logging.DEBUG, format="%(levelname)s %(message)s")
server = Server("logged")

@server.resource("db://customers/4711?token=abc", rate_limit="1/minute")
def customer() -> str:
    return "row"

@server.resource("db://orders/{number}", rate_limit="1/minute")
def order(number: str) -> str:
    return number

@server.tool(rate_limit="1/minute")
def lookup(customer: str) -> str:
    return customer

server.run()
"""


@pytest.mark.parametrize("era", ERAS)
def test_a_refusal_is_logged_with_the_kind_of_item_and_the_limit_never_its_uri(era, tmp_path):
    """spec_notes/policy.md: a refusal's log names the caller and the limit, "never a token, a
    session id, the token's claims, an argument or a resource's URI" (a URI may carry a caller's
    values).  The first refusal is a warning, the next ones debug lines: none names the item."""
    script = tmp_path / "logged_server.py"
    script.write_text(LOGGED_SERVER)
    customer, order = "db://customers/4711?token=abc", "db://orders/secret-9"
    with Client.stdio(
        [sys.executable, str(script)], era=era, stderr="capture", timeout=WAIT
    ) as client:
        client.read_resource(customer)
        client.read_resource(order)
        with pytest.raises(LimitExceeded) as refused:
            client.read_resource(customer)
        assert customer in refused.value.message  # the client is told which item of its own
        with pytest.raises(LimitExceeded):
            client.read_resource(order)
        client.call_tool("lookup", {"customer": "4711"})
        with pytest.raises(LimitExceeded) as refused:
            client.call_tool("lookup", {"customer": "4711"})
        assert "lookup" in refused.value.message
    lines = client.session.transport.stderr_lines
    assert [line for line in lines if "rate limit" in line] == [
        "WARNING rate limit 1/60s on a resource: refused resources/read, from stdio",
        "DEBUG rate limit 1/60s on a resource: refused resources/read, from stdio",
        "DEBUG rate limit 1/60s on a tool: refused tools/call, from stdio",
    ]
    assert not [
        line for line in lines if "4711" in line or "secret-9" in line or "token=abc" in line
    ]


# -- subscriptions ----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("transport, era", [(t, e) for t in TRANSPORTS for e in ERAS])
def test_subscriptions_are_capped_per_caller(transport, era, serve):
    server = POLICY.build()
    if transport == "stdio":
        client = open_client("stdio", era, serve)
    else:
        client = Client.http(serve(server, keepalive=0.2).mcp, era=era, timeout=WAIT)
    with client:
        for n in (1, 2, 3):
            client.subscribe(f"mem://public/{n}")
        with pytest.raises(LimitExceeded) as refused:
            client.subscribe("mem://public/4")
        assert refused.value.code == -31005 and refused.value.data["limit"] == 3
        client.subscribe("mem://public/2")  # already held: no room needed
        client.unsubscribe("mem://public/1")
        if transport == "http" and era == "modern":
            # 2026-07-28 over HTTP the client ends a listen stream by closing its response: the
            # server counts it until it notices, at its next write (a keep-alive, here 0.2 s).
            assert server.subscriptions.wait_at_most(1, WAIT)
        client.subscribe("mem://public/4")
        assert client.call_tool("alpha").content[0].text == "alpha"


def test_the_subscription_cap_holds_over_the_sessions_of_one_client(serve):
    """``max_subscribed_resources`` counts every session of a client without a token together
    (``Principal.limit_id``): a second session cannot take another 3 resources."""
    url = serve(POLICY.build()).mcp
    with (
        Client.http(url, era="handshake", timeout=WAIT) as first,
        Client.http(url, era="handshake", timeout=WAIT) as second,
    ):
        for n in (1, 2):
            first.subscribe(f"mem://public/{n}")
        second.subscribe("mem://public/2")  # held by the first session already: no room needed
        second.subscribe("mem://public/3")
        with pytest.raises(LimitExceeded) as refused:
            second.subscribe("mem://public/4")
        assert refused.value.data["limit"] == 3
        first.unsubscribe("mem://public/1")
        second.subscribe("mem://public/4")


@pytest.mark.parametrize("legacy", [False, True], ids=["deleted", "legacy-ended-by-server"])
def test_an_ended_sessions_subscriptions_no_longer_count(serve, legacy):
    """A session's subscriptions end with it: a client whose session held the cap's 3 resources
    ends it (DELETE; an HTTP+SSE one is ended by the server, as when it expires or its stream
    closes) and subscribes at once in a new one.  The cyclic garbage collector is off: an ended
    connection used to count until it ran."""
    server = POLICY.build()
    served = serve(server)
    transport = {"transport": "sse"} if legacy else {}
    url = served.sse if legacy else served.mcp
    gc.disable()
    try:
        with Client.http(url, era="handshake", timeout=WAIT, **transport) as first:
            for n in (1, 2, 3):
                first.subscribe(f"mem://public/{n}")
            if legacy:
                (session_id,) = served.app.sessions
                assert served.app.end_session(session_id)
        with Client.http(url, era="handshake", timeout=WAIT, **transport) as second:
            second.subscribe("mem://public/4")
            live = [c for c in server.connections() if c.subscriptions]
            assert [c.subscriptions for c in live] == [{"mem://public/4"}]
    finally:
        gc.enable()


@pytest.mark.parametrize("era", ERAS)
def test_subscriptions_have_a_default_cap_per_caller(era):
    """Issue 32, item 10: with no ``max_subscribed_resources`` given, one caller may hold
    DEFAULT_MAX_SUBSCRIBED_RESOURCES (1,000) resources at once; the next is refused with -31005 and
    ``data.limit`` (a session's record, which a shared state keeps and rereads, stays bounded);
    unsubscribing makes room.  ``None`` still means no cap."""
    from mcp_ref import Server
    from mcp_ref.extensions.policy import DEFAULT_MAX_SUBSCRIBED_RESOURCES as DEFAULT

    server = Server("default-cap")

    @server.resource("memo://{n}")
    def memo(n: str) -> str:
        """One of many."""
        return n

    with Client.in_memory(server, timeout=WAIT, era=era) as client:
        uris = [f"memo://{n}" for n in range(DEFAULT + 1)]
        if era == "modern":  # 2026-07-28: the resources a listen stream names
            with pytest.raises(LimitExceeded) as refused:
                client.listen(resource_uris=uris)
            with client.listen(resource_uris=uris[:DEFAULT]) as held:
                assert len(held.acknowledged["resourceSubscriptions"]) == DEFAULT
        else:
            for uri in uris[:DEFAULT]:
                client.subscribe(uri)
            with pytest.raises(LimitExceeded) as refused:
                client.subscribe(uris[DEFAULT])
            client.unsubscribe(uris[0])
            client.subscribe(uris[DEFAULT])
        assert refused.value.code == -31005 and refused.value.data["limit"] == DEFAULT
        assert "Too many subscriptions" in refused.value.message
    assert Server("uncapped", max_subscribed_resources=None).subscription_cap() is None


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_one_listen_naming_more_than_the_cap_is_refused(transport, serve):
    with open_client(transport, "modern", serve) as client:
        with pytest.raises(LimitExceeded):
            client.listen(resource_uris=[f"mem://public/{n}" for n in (1, 2, 3, 4)])
        with client.listen(resource_uris=["mem://public/1", "mem://public/2"]):
            with pytest.raises(LimitExceeded):
                client.listen(resource_uris=["mem://public/3", "mem://public/4"])
            with client.listen(resource_uris=["mem://public/2", "mem://public/3"]) as second:
                assert second.acknowledged["resourceSubscriptions"] == [
                    "mem://public/2",
                    "mem://public/3",
                ]


@pytest.mark.slow
def test_a_storm_of_updates_is_coalesced_to_one_per_interval(serve):
    def storm(transport: str, era: str) -> None:
        updates, cond = [], threading.Condition()

        def on_updated(uri):
            with cond:
                updates.append(uri)
                cond.notify_all()

        with open_client(transport, era, serve, "storm", on_resource_updated=on_updated) as client:
            client.subscribe("mem://public/1")
            client.subscribe("mem://public/2")
            assert (
                client.call_tool("touch", {"uri": "mem://public/1", "times": 500}).content[0].text
                == "touched"
            )
            with cond:  # the first at once, the last when the interval ends; nothing queued between
                assert cond.wait_for(lambda: updates.count("mem://public/1") == 2, WAIT), (
                    transport,
                    era,
                    updates,
                )
            client.call_tool("touch", {"uri": "mem://public/2"})
            with cond:
                assert cond.wait_for(lambda: "mem://public/2" in updates, WAIT)
            assert updates == ["mem://public/1", "mem://public/1", "mem://public/2"], (
                transport,
                era,
            )

    for transport in TRANSPORTS:
        for era in ERAS:
            storm(transport, era)


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ping_is_not_counted_against_the_limit(transport, serve):
    server = InMemory("policy_server", "build_global").build()
    if transport == "stdio":
        client = open_client("stdio", "handshake", serve, "global")
    else:
        client = Client.http(serve(server).mcp, era="handshake", timeout=WAIT)
    with client:
        for _ in range(20):
            client.ping()  # answered by the session: no bucket is touched
        assert [client.call_tool("alpha").content[0].text for _ in range(4)] == [
            "alpha"
        ] * 4  # initialize was 1
        with pytest.raises(LimitExceeded):
            client.call_tool("alpha")
        if transport == "http":
            connections = server.connections()
            assert (
                len(connections) == 1 and not connections[0].admitted
            )  # nothing left behind by the pre-count


def test_a_policy_without_rate_limits_leaves_no_admission_notes(serve):
    # authorize only: the HTTP step counts nothing, so it notes nothing that no one would take
    from mcp_ref import Server

    server = Server("gated", authorize=lambda principal, action, name: True)
    server.tool(name="alpha")(lambda: "alpha")
    with Client.http(serve(server).mcp, era="handshake", timeout=WAIT) as client:
        assert [client.call_tool("alpha").text for _ in range(20)] == ["alpha"] * 20
        connections = server.connections()
        assert len(connections) == 1 and not connections[0].admitted


def test_the_legacy_http_sse_transport_applies_the_same_policy(serve):
    served = serve(POLICY.build())
    with Client.http(served.sse, transport="sse", timeout=WAIT) as client:
        assert (
            client.session.transport.legacy_endpoint
        )  # HTTP+SSE: POSTs to the endpoint the stream named
        assert {t.name for t in client.list_tools()} == VISIBLE_TOOLS
        with pytest.raises(McpError) as refused:
            client.call_tool("secret_delta")
        assert refused.value.message == "Unknown tool: secret_delta"
        assert client.call_tool("whoami").structured_content["id"].startswith("http-session:")
        assert [client.call_tool("limited").content[0].text for _ in range(3)] == ["done"] * 3
        with pytest.raises(
            LimitExceeded
        ) as limited:  # counted at dispatch: the error comes on the SSE stream
            client.call_tool("limited")
        assert limited.value.retry_after == 20.0
