"""Issue 20, classes 8 and 9: the smaller holes, each sent over the real transport, the peer still serving after.

- ``Mcp-Param-*`` numbers compare exactly; a body number no header can carry is a 400 HeaderMismatch,
  never an exception out of the WSGI app (mcp_ref/http/headers.py);
- an error answered before dispatch is cut at 1,024 characters (mcp_ref/http/server/status.py);
- the demo authorization server answers every bad input with an RFC 6749 §5.2 error, checks the
  ``Host`` of every route, and fetches Client ID Metadata Documents only from global addresses
  (mcp_ref/workbench/demo_auth_server.py);
- the CLI shows a server's strings with their escape sequences made visible (mcp_ref/workbench/terminal.py);
- the demo's ``add_tool`` is scoped to its caller and bounded (mcp_ref/workbench/demo.py);
- a 431 is answered without a traceback (mcp_ref/http/wsgi_server.py ``_head_by_lines``).
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import sys
import threading

import pytest
import requests
from conftest import SERVERS, WAIT, InMemory, run_cli
from http_fixtures import TIMEOUT, serve  # noqa: F401 - a fixture
from test_demo_authorization_server import auth_server  # noqa: F401 - a fixture

from mcp_ref.oauth import pkce
from mcp_ref.workbench.demo_auth_server import (
    DEMO_CLIENT_ID,
    DemoAuthorizationServer,
    OAuthError,
    fetch_client_metadata,
)

MODERN = InMemory("modern_server")
VERSION = "2026-07-28"


# -- Mcp-Param-* headers: exact numbers, and no exception for any body ---------------------------------


def post_routed(
    url: str, count_json: str, headers: dict[str, str | None], name_json: str = '"routed"'
) -> requests.Response:
    """A 2026-07-28 tools/call of ``routed`` whose body's ``count`` is the raw JSON ``count_json``."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
    }
    body = (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": '
        + name_json
        + ', "arguments": {"region": "us", "count": '
        + count_json
        + '}, "_meta": '
        + json.dumps(meta)
        + "}}"
    )
    sent = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "routed",
        "Mcp-Param-Region": "us",
        **headers,
    }
    return requests.post(
        url,
        data=body.encode(),
        headers={k: v for k, v in sent.items() if v is not None},
        timeout=TIMEOUT,
    )


def answered(reply: requests.Response) -> dict:
    if reply.headers.get("Content-Type", "").startswith("text/event-stream"):
        return [
            json.loads(line[5:]) for line in reply.text.splitlines() if line.startswith("data:")
        ][-1]
    return reply.json()


@pytest.mark.parametrize(
    "count_json, header",
    [
        ("9007199254740993", "9007199254740992"),  # equal as floats, not as integers
        ("9007199254740992", "9007199254740992"),  # 2**53: outside the safe range the spec allows
        ("1" + "0" * 400, "1"),  # 10**400: float() overflows (was: no HTTP answer)
        ("1" + "0" * 400, None),  # ... and without its header
        ("1e400", "1"),  # a float that is infinite
        ("2.5", "2"),  # not an integer
        ("2", "2" * 5000),  # a header too long to be the number
        ("2", "=?base64?" + base64.b64encode("２".encode()).decode() + "?="),  # a full-width digit
        ("2", "2e0"),  # no exponents: integers are written in decimal
        ("2", "+2"),
    ],
    ids=[
        "2**53+1-vs-2**53",
        "2**53",
        "10**400",
        "10**400-no-header",
        "1e400",
        "fraction",
        "long-header",
        "fullwidth",
        "exponent",
        "plus",
    ],
)
def test_a_header_number_that_is_not_the_body_number_is_a_400_header_mismatch(
    serve, count_json, header
):
    served = serve(MODERN.build())
    reply = post_routed(served.mcp, count_json, {"Mcp-Param-Count": header})
    assert reply.status_code == 400, reply.text
    assert answered(reply)["error"]["code"] == -32020 and answered(reply)["id"] == 7
    # the same server goes on answering
    good = post_routed(served.mcp, "2", {"Mcp-Param-Count": "2"})
    assert answered(good)["result"]["content"][0]["text"] == "us:2:False:"


@pytest.mark.parametrize(
    "count_json, header",
    [
        ("2", "2.0"),
        ("2.0", "2"),
        ("2", "2.000"),
        ("-3", "-3"),
        ("9007199254740991", "9007199254740991"),
        ("0", "-0"),
    ],
)
def test_header_numbers_compare_numerically_and_exactly(serve, count_json, header):
    # 2026-07-28 basic/transports/streamable-http §Server Validation: "42.0 and 42 are considered equal".
    served = serve(MODERN.build())
    reply = post_routed(served.mcp, count_json, {"Mcp-Param-Count": header})
    assert reply.status_code == 200, reply.text
    assert "result" in answered(reply)


def test_a_body_with_a_number_too_long_to_read_is_refused_and_the_server_goes_on(serve):
    served = serve(MODERN.build())
    # 5000 digits: past Python's int-from-text limit (4300): the body cannot be read as JSON at all.
    reply = post_routed(served.mcp, "7" * 5000, {"Mcp-Param-Count": "7"})
    assert reply.status_code == 400 and "error" in answered(reply)
    # and a non-string name no header can be: HeaderMismatch, not an exception
    reply = post_routed(served.mcp, "2", {"Mcp-Param-Count": "2"}, name_json="1" + "0" * 400)
    assert reply.status_code == 400 and answered(reply)["error"]["code"] == -32020
    assert (
        answered(post_routed(served.mcp, "2", {"Mcp-Param-Count": "2"}))["result"]["content"][0][
            "text"
        ]
        == "us:2:False:"
    )


def post_enveloped(url: str, body: dict, headers: dict[str, str]) -> requests.Response:
    """POST ``body`` (a 2026-07-28 request whose ``_meta`` it carries) with ``headers`` added."""
    sent = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    return requests.post(url, data=json.dumps(body), headers={**sent, **headers}, timeout=TIMEOUT)


def envelope(version: str) -> dict:
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
    }


@pytest.mark.parametrize("echoed", ["_meta version", "body method", "body tool name"])
def test_an_error_answered_before_dispatch_does_not_echo_a_peers_string_whole(serve, echoed):
    """A refusal of the HTTP layer echoing the peer's string (here a -32020 header mismatch naming
    the body's value) is cut at ``errors.MAX_MESSAGE`` (1,024) characters, as an error a handler
    raises is: a client sending megabyte values cannot make each answer a megabyte.  JSON-RPC 2.0
    §5.1: "The message SHOULD be limited to a concise single sentence"; the server goes on."""
    served = serve(MODERN.build())
    big = "v" * 1_000_000
    headers = {"MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/list"}
    body = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/list",
        "params": {"_meta": envelope(VERSION)},
    }
    if echoed == "_meta version":
        body["params"]["_meta"] = envelope(big)
    elif echoed == "body method":
        body["method"] = big
    else:
        body["method"] = headers["Mcp-Method"] = "tools/call"
        body["params"].update(name=big, arguments={})
        headers["Mcp-Name"] = "other"
    reply = post_enveloped(served.mcp, body, headers)
    assert reply.status_code == 400, reply.text[:200]
    error = answered(reply)["error"]
    assert error["code"] == -32020 and error["message"].startswith("Header mismatch: ")
    message = error["message"]
    assert len(message) <= 1024
    if echoed != "body tool name":  # the name is not echoed at all
        assert len(message) == 1024 and message.endswith("v…")  # the peer can tell it was cut
    assert len(error["message"]) <= 1024 and len(reply.content) < 2048
    if echoed != "body tool name":  # this one names the header, not the value
        assert "v" * 900 in error["message"]  # echoed, and cut
    body = {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/list",
        "params": {"_meta": envelope(VERSION)},
    }
    headers = {"MCP-Protocol-Version": VERSION, "Mcp-Method": "tools/list"}
    assert "tools" in answered(post_enveloped(served.mcp, body, headers))["result"]


# -- the demo authorization server ---------------------------------------------------------------------


def confidential_client(url: str) -> tuple[str, str]:
    answer = requests.post(
        url + "/register",
        json={
            "redirect_uris": ["http://127.0.0.1/cb"],
            "token_endpoint_auth_method": "client_secret_post",
        },
        timeout=WAIT,
    )
    assert answer.status_code == 201, answer.text
    return answer.json()["client_id"], answer.json()["client_secret"]


def still_serves(url: str) -> None:
    """The whole code flow still works: the server was not harmed."""
    verifier = pkce.new_verifier()
    location = requests.get(
        url + "/authorize",
        allow_redirects=False,
        timeout=WAIT,
        params={
            "response_type": "code",
            "client_id": DEMO_CLIENT_ID,
            "redirect_uri": "http://127.0.0.1:5/callback",
            "code_challenge": pkce.challenge(verifier),
            "code_challenge_method": "S256",
        },
    ).headers["Location"]
    code = location.split("code=")[1].split("&")[0]
    answer = requests.post(
        url + "/token",
        timeout=WAIT,
        data={
            "grant_type": "authorization_code",
            "code": code,
            "client_id": DEMO_CLIENT_ID,
            "redirect_uri": "http://127.0.0.1:5/callback",
            "code_verifier": verifier,
        },
    )
    assert answer.status_code == 200, answer.text


def raw_request(port: int, head: bytes, body: bytes = b"") -> tuple[int, bytes]:
    """One request as raw bytes (header values no client library would send); (status, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock:
        sock.sendall(
            head
            + b"Content-Length: "
            + str(len(body)).encode()
            + b"\r\nConnection: close\r\n\r\n"
            + body
        )
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[1]


def test_every_bad_client_credential_is_an_invalid_client_answer(auth_server):
    url = auth_server.url
    client_id, secret = confidential_client(url)
    form = {"grant_type": "refresh_token", "refresh_token": "x"}
    cases = [
        {
            "data": {**form, "client_id": client_id, "client_secret": "sécret-ünicode"}
        },  # was: TypeError, no answer
        {"data": {**form, "client_id": client_id, "client_secret": secret + "\u2603"}},
        {"data": {**form, "client_id": "clïent", "client_secret": "x"}},
        {
            "data": form,
            "headers": {
                "Authorization": "Basic "
                + base64.b64encode(f"{client_id}:sécret".encode()).decode()
            },
        },  # a UTF-8 secret in Basic
        {"data": form, "headers": {"Authorization": "Basic !!!not-base64"}},
        {
            "data": form,
            "headers": {"Authorization": "Basic " + base64.b64encode(b"\xff\xfe:\xff").decode()},
        },
        {
            "data": form,
            "headers": {"Authorization": "Basic " + base64.b64encode(b"a:%ff%fe").decode()},
        },
    ]
    for case in cases:
        answer = requests.post(url + "/token", timeout=WAIT, **case)
        assert answer.status_code == 401 and answer.json()["error"] == "invalid_client", (
            case,
            answer.text,
        )
        assert secret not in answer.text
    # A Basic header with raw non-ASCII bytes (Latin-1 on the wire), and one for /introspect.
    for path, body in (
        ("/token", b"grant_type=refresh_token&refresh_token=x"),
        ("/introspect", b"token=x"),
    ):
        status, text = raw_request(
            auth_server.port,
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
            + b"Content-Type: application/x-www-form-urlencoded\r\n"
            + b"Authorization: Basic \xe9\xe9\xe9\r\n",
            body,
        )
        assert status == 401 and json.loads(text)["error"] == "invalid_client"
    still_serves(url)


@pytest.mark.parametrize(
    "body, error",
    [
        (
            {"redirect_uris": ["http://127.0.0.1/cb"], "grant_types": [{}]},
            "invalid_client_metadata",
        ),  # unhashable
        (
            {"redirect_uris": ["http://127.0.0.1/cb"], "grant_types": [["refresh_token"]]},
            "invalid_client_metadata",
        ),
        (
            {"redirect_uris": ["http://[::1/cb"]},
            "invalid_redirect_uri",
        ),  # urlsplit raises ValueError
        ({"redirect_uris": ["https://[zz]/cb"]}, "invalid_redirect_uri"),
        ("[" * 30_000 + "]" * 30_000, "invalid_client_metadata"),  # too deep for the JSON parser
        (
            '{"redirect_uris": [' + "1" * 5000 + "]}",
            "invalid_client_metadata",
        ),  # a number too long to read
    ],
    ids=[
        "unhashable-grant",
        "list-grant",
        "unclosed-bracket",
        "bad-ipv6",
        "too-deep",
        "long-number",
    ],
)
def test_bad_registrations_are_rfc_7591_errors_never_exceptions(auth_server, body, error):
    data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    answer = requests.post(
        auth_server.url + "/register",
        data=data,
        timeout=WAIT,
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code == 400 and answer.json()["error"] == error, answer.text
    still_serves(auth_server.url)


@pytest.mark.parametrize(
    "client_id",
    [
        "https://[::1/c.json",
        "https://x.example:99999/c.json",
        "https://[zz]/c.json",
        "https://user:pw@127.0.0.1/c.json",
        "https://" + "a" * 3000 + ".example/c",
    ],
)
def test_a_malformed_client_id_url_is_an_invalid_client_answer(auth_server, client_id):
    answer = requests.get(
        auth_server.url + "/authorize",
        allow_redirects=False,
        timeout=WAIT,
        params={
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": "http://127.0.0.1/callback",
            "code_challenge": pkce.challenge(pkce.new_verifier()),
            "code_challenge_method": "S256",
        },
    )
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_client", answer.text
    assert "Location" not in answer.headers
    answer = requests.get(
        auth_server.url + "/authorize",
        allow_redirects=False,
        timeout=WAIT,
        params={
            "response_type": "code",
            "client_id": DEMO_CLIENT_ID,
            "redirect_uri": "http://[::1/callback",
        },
    )
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_request"
    still_serves(auth_server.url)


@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", "/.well-known/oauth-authorization-server"),
        ("GET", "/.well-known/openid-configuration"),
        ("GET", "/authorize"),
        ("POST", "/token"),
        ("POST", "/register"),
        ("POST", "/introspect"),
        ("GET", "/nowhere"),
    ],
)
def test_every_route_checks_the_host_and_never_names_a_rebound_one(auth_server, method, path):
    # 2025-11-25 basic/transports §Security Warning (DNS rebinding): a page on evil.example that
    # resolves to 127.0.0.1 gets 403, and never an issuer (or a redirect's iss) of evil.example.
    for headers in (
        {"Host": "evil.example"},
        {"Host": f"evil.example:{auth_server.port}"},
        {"Host": "127.0.0.1", "Origin": "http://evil.example"},
        {"Host": "a,b"},
    ):
        answer = requests.request(
            method,
            auth_server.url + path,
            headers=headers,
            allow_redirects=False,
            timeout=WAIT,
            params={"client_id": DEMO_CLIENT_ID, "response_type": "code"},
        )
        assert answer.status_code == 403, (headers, answer.status_code, answer.text)
        assert answer.json()["error"] == "invalid_request" and "evil" not in answer.text
        assert "Location" not in answer.headers
    meta = requests.get(
        auth_server.url + "/.well-known/oauth-authorization-server", timeout=WAIT
    ).json()
    assert meta["issuer"] == auth_server.url
    still_serves(auth_server.url)


def test_the_host_check_takes_the_mcp_apps_allowed_hosts():
    from mcp_ref.http.wsgi_server import WsgiServer

    app = DemoAuthorizationServer(allowed_hosts=["auth.example"])
    httpd = WsgiServer(("127.0.0.1", 0), app)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        meta = requests.get(
            httpd.url + "/.well-known/oauth-authorization-server",
            timeout=WAIT,
            headers={"Host": "auth.example"},
        ).json()
        assert meta["issuer"] == "http://auth.example"
        assert (
            requests.get(
                httpd.url + "/.well-known/oauth-authorization-server", timeout=WAIT
            ).status_code
            == 403
        )
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(WAIT)


@pytest.mark.parametrize(
    "client_id",
    [
        "https://100.64.0.1/client.json",  # shared address space (RFC 6598): not private, not global
        "https://192.0.0.1/client.json",  # IETF protocol assignments
        "https://198.18.0.1/client.json",  # benchmarking
        "https://192.0.2.1/client.json",  # documentation
        "https://240.0.0.1/client.json",  # reserved
        "https://0.0.0.0/client.json",
        "https://[::ffff:10.0.0.1]/client.json",  # an IPv4-mapped private address
        "https://[64:ff9b::a00:1]/client.json",  # NAT64 of 10.0.0.1
        "https://[2002:a00:1::1]/client.json",  # 6to4 of 10.0.0.1
        "https://[fe80::1]/client.json",
        "https://[2001:db8::1]/client.json",  # documentation
    ],
)
def test_client_metadata_documents_come_only_from_global_addresses(client_id):
    with pytest.raises(OAuthError) as refused:
        fetch_client_metadata(client_id)
    assert (
        refused.value.error == "invalid_client" and "private network" in refused.value.description
    )


def test_a_client_metadata_document_is_fetched_from_the_address_checked_with_its_own_host(
    auth_server,
):
    """A ``localhost`` document: the name is resolved once, the address checked, the connection made to
    it, and the request still names the URL's host (``Host: localhost:PORT``)."""
    from mcp_ref.http.wsgi_server import WsgiServer

    seen: list[str] = []

    def documents(environ, start_response):
        seen.append(environ.get("HTTP_HOST", ""))
        body = json.dumps(
            {
                "client_id": client_id,
                "client_name": "doc",
                "redirect_uris": ["http://127.0.0.1/callback"],
            }
        ).encode()
        start_response(
            "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        )
        return [body]

    httpd = WsgiServer(("127.0.0.1", 0), documents)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    client_id = f"http://localhost:{httpd.port}/client.json"
    try:
        client, _ = fetch_client_metadata(client_id)
        assert client.client_id == client_id and seen == [f"localhost:{httpd.port}"]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(WAIT)


def test_a_remote_caller_cannot_make_the_authorization_server_fetch_from_its_own_loopback():
    """A ``client_id`` URL naming this machine (``http://127.0.0.1:PORT/...``) is fetched only for a
    caller on this machine: a remote one (here as a fronting proxy reports it, ``REMOTE_ADDR``)
    would otherwise use the server to probe and GET its loopback services (SSRF; was: fetched)."""
    from mcp_ref.http.wsgi_server import WsgiServer

    seen: list[str] = []

    def documents(environ, start_response):
        seen.append(environ.get("PATH_INFO", ""))
        body = json.dumps(
            {
                "client_id": f"http://127.0.0.1:{environ['SERVER_PORT']}/client.json",
                "client_name": "doc",
                "redirect_uris": ["http://127.0.0.1/callback"],
            }
        ).encode()
        start_response(
            "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        )
        return [body]

    authorization = DemoAuthorizationServer()

    def behind_a_proxy(environ, start_response):
        return authorization({**environ, "REMOTE_ADDR": "203.0.113.9"}, start_response)

    servers = [
        WsgiServer(("127.0.0.1", 0), app) for app in (documents, behind_a_proxy, authorization)
    ]
    threads = [
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        for httpd in servers
    ]
    for thread in threads:
        thread.start()
    doc, remote, local = servers
    params = {
        "response_type": "code",
        "client_id": f"http://127.0.0.1:{doc.port}/client.json",
        "redirect_uri": "http://127.0.0.1/callback",
        "code_challenge": pkce.challenge(pkce.new_verifier()),
        "code_challenge_method": "S256",
    }
    try:
        for client_id in (
            params["client_id"],
            f"https://127.0.0.1:{doc.port}/client.json",
            f"http://localhost:{doc.port}/client.json",
        ):
            answer = requests.get(
                remote.url + "/authorize",
                allow_redirects=False,
                timeout=WAIT,
                params={**params, "client_id": client_id},
            )
            assert answer.status_code == 400 and answer.json()["error"] == "invalid_client", (
                answer.text
            )
        assert seen == []  # nothing was sent to the loopback service
        answer = requests.get(
            local.url + "/authorize", allow_redirects=False, timeout=WAIT, params=params
        )
        assert answer.status_code == 302 and seen == ["/client.json"], (
            answer.text
        )  # a local caller: fetched
        still_serves(remote.url)
    finally:
        for httpd, thread in zip(servers, threads, strict=True):
            httpd.shutdown()
            httpd.server_close()
            thread.join(WAIT)


# -- the CLI: a server's strings reach the terminal with their escape sequences shown, not obeyed ------

ESCAPE_SERVER = f'"{sys.executable}" "{SERVERS / "escape_server.py"}"'
#: What a terminal would obey: ESC, BEL, CR, C1 CSI, DEL, a bidi override.
OBEYED = ("\x1b", "\x07", "\r", "\x9b", "\x7f", "\u202e")


@pytest.mark.parametrize(
    "args",
    [
        ["info"],
        ["tools"],
        ["call", "shout"],
        ["call", "slow"],
        ["call", "fail"],
        ["resources"],
        ["read", "esc://text"],
        ["prompts"],
        ["prompt", "hello"],
        ["--json", "tools"],
        ["--json", "call", "fail"],
        ["--trace", "call", "shout"],
        ["--era", "handshake", "info"],
        ["check"],
    ],
    ids=lambda args: " ".join(args),
)
def test_the_cli_shows_a_servers_escape_sequences_instead_of_obeying_them(args):
    flags = [a for a in args if a.startswith("--") or a == "handshake"]
    verb = [a for a in args if a not in flags]
    proc = run_cli(*flags, verb[0], ESCAPE_SERVER, *verb[1:])
    out = proc.stdout + proc.stderr
    for char in OBEYED:
        assert char not in out, (char, out)
    # shown, escaped, where the server's words are printed (OSC 52 would have written the clipboard)
    assert "\\x1b]52;c;" in out or "\\u001b]52;c;" in out, out
    if "--json" in flags:
        json.loads(proc.stdout)  # still JSON, with the same text
    if verb == ["call", "shout"] and "--trace" not in flags:
        assert proc.stdout.endswith("\nsecond line\n")  # a result's own line breaks are kept


def test_the_terminal_helper_escapes_exactly_what_a_terminal_obeys():
    from mcp_ref.workbench.terminal import safe, safe_json

    assert safe("tab\tand émoji 👍, 世界\nkept") == "tab\tand émoji 👍, 世界\nkept"
    assert safe("a\x1b]52;c;eA==\x07b") == "a\\x1b]52;c;eA==\\x07b"
    assert safe("x\ny\rz", newline="\\n") == "x\\ny\\rz"
    assert safe("\x9b\x7f\u202e\ud800\u2028") == "\\x9b\\x7f\\u202e\\ud800\\u2028"
    text = json.dumps({"k": "\x9b\x7f\u202e\ud800 é"}, ensure_ascii=False)
    assert json.loads(safe_json(text)) == json.loads(text) and "\x9b" not in safe_json(text)


def test_the_login_trace_shows_an_authorization_servers_escape_sequences_instead_of_obeying_them():
    """``--trace`` prints each HTTP exchange of the OAuth flow: a hostile server's ``Content-Type`` (or
    ``Location``) is its own words, and reaches the terminal escaped like the rest (was: OSC 52 raw)."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    answer = (
        f'HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer resource_metadata="http://127.0.0.1:{port}/prm"'
        f"\r\nContent-Type: text/x{OBEYED[0]}]52;c;cHduZWQ={OBEYED[1]}\r\nLocation: http://127.0.0.1/{OBEYED[0]}[2J"
        "\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno"
    ).encode()

    def answer_all() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # the listener is closed: the test is over
            with conn:
                conn.settimeout(WAIT)
                try:
                    head = b""
                    while b"\r\n\r\n" not in head and (chunk := conn.recv(65536)):
                        head += chunk
                    conn.sendall(answer)
                except OSError:
                    pass

    thread = threading.Thread(target=answer_all, daemon=True)
    thread.start()
    try:
        proc = run_cli(
            "--trace", "--no-browser", "--timeout", "5", "info", f"http://127.0.0.1:{port}/mcp"
        )
    finally:
        listener.shutdown(
            socket.SHUT_RDWR
        )  # wakes the accept() (close() alone would leave it blocked)
        listener.close()
        thread.join(WAIT)
    assert not thread.is_alive()
    assert "http< 401" in proc.stderr, proc.stderr  # the flow's exchanges were traced
    for char in OBEYED:
        assert char not in proc.stdout + proc.stderr, (char, proc.stderr)
    assert "\\x1b]52;c;" in proc.stderr, proc.stderr


# -- the demo's add_tool: the caller's own, bounded --------------------------------------------------


#: The address another client's requests come from (:func:`from_address`).
OTHER_CLIENT = {"X-Test-Client": "192.0.2.7"}


def from_address(app):
    """A fronting proxy's report of each request's client, as ``REMOTE_ADDR``: ``X-Test-Client``
    when a request carries it, so one test's clients can be of different addresses."""

    def reported(environ, start_response):
        address = environ.get("HTTP_X_TEST_CLIENT")
        if address is not None:
            environ = {**environ, "REMOTE_ADDR": address}
        return app(environ, start_response)

    return reported


def test_add_tool_is_scoped_to_its_caller_and_bounded(serve, monkeypatch):
    from mcp_ref import Client
    from mcp_ref.errors import InvalidParams
    from mcp_ref.workbench import demo

    served = serve(wrap=from_address)
    with (
        Client.http(served.mcp, era="handshake", timeout=WAIT) as alice,
        Client.http(served.mcp, era="handshake", timeout=WAIT, headers=OTHER_CLIENT) as bob,
    ):
        assert alice.call_tool("add_tool", {"name": "mine"}).text == "added mine"
        assert alice.call_tool("mine").text == "I am mine"
        assert "mine" in {t.name for t in alice.list_tools()}
        # Bob neither sees nor calls Alice's tool, and cannot replace it nor a built-in one.
        assert "mine" not in {t.name for t in bob.list_tools()}
        with pytest.raises(InvalidParams):
            bob.call_tool("mine")
        for taken in ("mine", "echo", "admin_report"):
            result = bob.call_tool("add_tool", {"name": taken})
            assert result.is_error and "taken" in result.text, result.text
        assert bob.call_tool("echo", {"text": "still"}).text == "still"
        assert (
            alice.call_tool("add_tool", {"name": "mine"}).text == "added mine"
        )  # her own: replaced
        # Names are bounded and plain.
        for bad in ("", "x" * 65, "a b", "\x1b[2J", "é"):
            result = alice.call_tool("add_tool", {"name": bad})
            assert result.is_error and "1 to 64" in result.text
        # At most MAX_ADDED_PER_CALLER each.
        for n in range(1, demo.MAX_ADDED_PER_CALLER):
            assert not alice.call_tool("add_tool", {"name": f"a{n}"}).is_error
        result = alice.call_tool("add_tool", {"name": "one_too_many"})
        assert (
            result.is_error and f"you have added {demo.MAX_ADDED_PER_CALLER} tools" in result.text
        )
        # All together at most MAX_ADDED_TOOLS: the oldest added tool makes room.
        monkeypatch.setattr(demo, "MAX_ADDED_TOOLS", demo.MAX_ADDED_PER_CALLER)
        assert bob.call_tool("add_tool", {"name": "b1"}).text == "added b1"
        with pytest.raises(InvalidParams):
            alice.call_tool("mine")  # the oldest: gone
        assert alice.call_tool("a1").text == "I am a1" and bob.call_tool("b1").text == "I am b1"


def test_add_tool_counts_a_client_over_its_sessions_and_a_sessions_tools_go_with_it(
    serve, monkeypatch
):
    """The demo's cap of tools per caller counts a client without a token over all its HTTP
    sessions (``ctx.principal.limit_id``): a new session is free to open, and used to bring another
    MAX_ADDED_PER_CALLER with it, until the tools of other callers were pushed out (MAX_ADDED_TOOLS
    in all).  A session's tools are its own (``ctx.principal.id``) and go when it ends, so its
    client's next session has its allowance back."""
    from mcp_ref import Client
    from mcp_ref.workbench import demo

    cap = demo.MAX_ADDED_PER_CALLER
    monkeypatch.setattr(demo, "MAX_ADDED_TOOLS", cap + 1)  # room for one more than one client's
    served = serve(wrap=from_address)
    with Client.http(served.mcp, era="handshake", timeout=WAIT, headers=OTHER_CLIENT) as other:
        assert other.call_tool("add_tool", {"name": "others"}).text == "added others"
        first = Client.http(served.mcp, era="handshake", timeout=WAIT)
        for n in range(cap):
            assert first.call_tool("add_tool", {"name": f"first{n}"}).text == f"added first{n}"
        with Client.http(served.mcp, era="handshake", timeout=WAIT) as second:
            refused = second.call_tool("add_tool", {"name": "second0"})
            assert refused.is_error and f"you have added {cap} tools" in refused.text
            first.close()  # DELETE: the session's tools go with it
            assert all(served.app.server.get_tool(f"first{n}") is None for n in range(cap))
            for n in range(cap):
                added = second.call_tool("add_tool", {"name": f"second{n}"})
                assert added.text == f"added second{n}"
            assert second.call_tool("second0").text == "I am second0"
        assert other.call_tool("others").text == "I am others"  # never pushed out


# -- a 431 answered without a traceback -------------------------------------------------------------


@pytest.mark.parametrize(
    "extra",
    [
        b"X-Long: " + b"v" * 70_000 + b"\r\n",  # a field line too long
        b"".join(b"X-%d: v\r\n" % n for n in range(150)),  # too many fields
    ],
    ids=["too-long", "too-many"],
)
def test_a_431_is_answered_without_a_traceback_and_the_server_goes_on(serve, caplog, extra):
    served = serve()
    with (
        caplog.at_level(logging.DEBUG, logger="mcp_ref.http.wsgi_server"),
        socket.create_connection(("127.0.0.1", served.httpd.port), timeout=WAIT) as sock,
    ):
        sock.sendall(
            b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + extra
            + b"\r\n"
        )
        reader = sock.makefile("rb")
        assert reader.readline().split()[1] == b"431"
        # The server ends the connection once its handler is done (an error would be logged before).
        try:
            while reader.read(65536):
                pass
        except ConnectionResetError:
            pass
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert failures == [], [r.getMessage() for r in failures]
    assert requests.get(
        served.url + "/.well-known/oauth-protected-resource", timeout=WAIT
    ).status_code in (200, 404)
