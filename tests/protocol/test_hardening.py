"""Hardening: nothing a peer sends ends a reader, and the work done for a message is bounded.

Each test sends the bad input to a real peer (a stdio subprocess, or the HTTP app on a real
socket), checks the answer (an error, or a logged drop), and then checks that the connection
still serves.  See spec_notes/security.md for every limit and what a peer sees past it.
"""

from __future__ import annotations

import json
import math
import sys
import time

import pytest
from conftest import SERVERS, WAIT
from http_fixtures import notification, raw_session, request, serve  # noqa: F401 - fixtures

from mcp_ref import Client, McpError, ResourceNotFound, Server, jsonrpc
from mcp_ref.errors import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from mcp_ref.jsonable import serialize_answering

HOSTILE = [sys.executable, str(SERVERS / "hostile_raw_server.py")]
DEEP_ARRAY = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a":' * 100_000 + b"1" + b"}" * 100_000


def ping_answered(peer, request_id="after") -> None:
    peer.send_json({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
    assert peer.recv() == {"jsonrpc": "2.0", "id": request_id, "result": {}}


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


# -- class 1: one line never ends the stdio server -------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("version", ["2025-11-25", "2024-11-05"])
def test_unhashable_ids_and_tokens_in_notifications_are_dropped(raw_peer, version):
    peer = raw_peer()
    peer.initialize(version)
    for params in (
        {"requestId": [1, 2]},
        {"requestId": {"a": 1}},
        {"requestId": None},
        {"progressToken": {"a": 1}, "progress": 1},
        {"progressToken": [1], "progress": 2},
    ):
        method = "notifications/cancelled" if "requestId" in params else "notifications/progress"
        peer.send_json({"jsonrpc": "2.0", "method": method, "params": params})
    ping_answered(peer)  # nothing was answered for the notifications, and the server still serves


@pytest.mark.slow
@pytest.mark.parametrize("version", ["2025-11-25", "2024-11-05"])
@pytest.mark.parametrize(
    "line",
    [DEEP_ARRAY, DEEP_OBJECT, b'{"a":' * 65 + b"1" + b"}" * 65],
    ids=["array-100000-deep", "object-100000-deep", "object-65-deep"],
)
def test_json_nested_too_deep_is_an_error_and_the_server_goes_on(raw_peer, version, line):
    peer = raw_peer()
    peer.initialize(version)
    peer.send(line + b"\n")
    error = peer.recv()["error"]
    # At 2025-11-25 an array is refused as a batch before it is parsed; otherwise it is too deep.
    assert error["code"] in (PARSE_ERROR, INVALID_REQUEST)
    if error["code"] == PARSE_ERROR:
        assert "nested deeper than the limit" in error["message"]
    ping_answered(peer)


@pytest.mark.slow
def test_a_request_nested_too_deep_is_answered_with_its_id(raw_peer):
    """JSON-RPC 2.0 §5.1: the id is null only "If there was an error in detecting the id"; a
    request too deep to parse has its id at the top level, read without parsing the rest, so its
    caller is answered at once rather than left to its timeout."""
    peer = raw_peer()
    peer.initialize()
    params = b'{"a":' * 70 + b"1" + b"}" * 70
    peer.send(b'{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":' + params + b"}\n")
    answer = peer.recv()
    assert answer["id"] == "deep"
    assert answer["error"]["code"] == INVALID_REQUEST
    assert "nested deeper than the limit of 64" in answer["error"]["message"]
    ping_answered(peer)


@pytest.mark.slow
def test_nesting_up_to_the_limit_is_served(raw_peer):
    peer = raw_peer()
    peer.initialize()
    deep = {"text": "x"}
    for _ in range(jsonrpc.MAX_NESTING - 6):  # the envelope adds its own levels
        deep = {"n": deep}
    peer.send_json(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hi"}, "_meta": {"deep": deep}},
        }
    )
    assert peer.recv()["result"]["content"][0]["text"] == "hi"


@pytest.mark.slow
@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
def test_non_json_literals_are_parse_errors(raw_peer, literal):
    peer = raw_peer()
    peer.initialize()
    peer.send(
        b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","arguments":{"text":'
        + literal
        + b"}}}\n"
    )
    error = peer.recv()["error"]
    assert error["code"] == PARSE_ERROR and "not a JSON value" in error["message"]
    ping_answered(peer)


@pytest.mark.slow
def test_a_hostile_server_cannot_end_the_clients_connection():
    with Client.stdio(HOSTILE, timeout=WAIT, stderr="capture") as client:
        client.ping()  # preceded by every kind of garbage
        client.ping()  # and the connection is still there
        assert not client.session.is_closed


# -- class 2: the work for a message is bounded by its size ----------------------------------------


@pytest.mark.slow
def test_a_huge_batch_is_refused_before_its_items_are_built(raw_peer):
    peer = raw_peer()
    peer.initialize("2024-11-05")  # a revision with batches
    before = rss_kib(peer.proc.pid)
    started = time.monotonic()
    peer.send(b"[0" + b",0" * 1_500_000 + b"]\n")  # 3 MB: one and a half million items
    error = peer.recv()["error"]
    assert (
        error["code"] == INVALID_REQUEST and f"the limit is {jsonrpc.MAX_BATCH}" in error["message"]
    )
    assert time.monotonic() - started < WAIT / 2
    assert (
        rss_kib(peer.proc.pid) - before < 150_000
    )  # KiB: a small multiple of the 3 MB sent, not 1.4 GB
    ping_answered(peer)


@pytest.mark.slow
def test_a_batch_where_the_revision_has_none_is_refused_unparsed(raw_peer):
    peer = raw_peer()
    peer.initialize("2025-11-25")
    started = time.monotonic()
    peer.send(b"[0" + b",0" * 1_500_000 + b"]\n")
    assert "batches are not supported" in peer.recv()["error"]["message"]
    assert time.monotonic() - started < WAIT / 2
    ping_answered(peer)


@pytest.mark.slow
def test_a_batch_at_the_limit_is_served(raw_peer):
    peer = raw_peer()
    peer.initialize("2025-03-26")
    peer.send_json(
        [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(jsonrpc.MAX_BATCH)]
    )
    answers = peer.recv()
    assert len(answers) == jsonrpc.MAX_BATCH and all(a["result"] == {} for a in answers)


# -- class 8: smaller holes ---------------------------------------------------------------------


def nan_server() -> Server:
    server = Server("nan")

    @server.tool()
    def ratio() -> dict[str, float]:
        """A structured result JSON cannot carry."""
        return {"ratio": math.nan}

    @server.tool()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"hello {name}"

    return server


def test_a_tool_result_json_cannot_carry_is_a_tool_error_and_the_connection_goes_on():
    with Client.in_memory(nan_server(), timeout=WAIT) as client:
        result = client.call_tool("ratio")
        assert result.is_error and result.structured_content is None
        assert result.text.startswith("Tool ratio returned a value that cannot be serialised: ")
        assert client.call_tool("greet", {"name": "Ada"}).content[0].text == "hello Ada"


def test_any_other_answer_json_cannot_carry_is_an_internal_error_never_sent_as_it_is():
    answer = serialize_answering(jsonrpc.Response(7, {"ratio": math.nan}))
    assert json.loads(answer) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {
            "code": INTERNAL_ERROR,
            "message": "Internal error: the result is not valid JSON",
        },
    }


def test_a_value_json_cannot_carry_is_never_sent():
    with pytest.raises(ValueError):
        jsonrpc.serialize(
            jsonrpc.Notification(
                "notifications/progress", {"progressToken": 1, "progress": math.inf}
            )
        )


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18"])
def test_an_unknown_tool_argument_is_an_input_error_not_an_internal_one(version):
    with Client.in_memory(nan_server(), timeout=WAIT, protocol_version=version) as client:
        if version >= "2025-11-25":
            result = client.call_tool("greet", {"name": "Ada", "mood": "happy"})
            assert result.is_error and "unexpected argument(s): mood" in result.content[0].text
        else:
            with pytest.raises(McpError, match="unexpected argument") as caught:
                client.call_tool("greet", {"name": "Ada", "mood": "happy"})
            assert caught.value.code == INVALID_PARAMS
        assert client.call_tool("greet", {"name": "Ada"}).content[0].text == "hello Ada"


def test_an_http_batch_of_only_invalid_items_gets_their_errors(serve, raw_session):
    srv = serve()
    session = raw_session(srv.mcp)
    session.initialize("2025-03-26")
    response = session.post([1, 2, 3], check=False)
    assert response.status_code == 200, response.text
    body = response.json()
    assert [(m["id"], m["error"]["code"]) for m in body] == [(None, INVALID_REQUEST)] * 3
    # Notifications with an invalid item: the notification is taken, the item answered.
    response = session.post([notification("notifications/roots/list_changed"), "x"], check=False)
    assert response.status_code == 200 and [m["error"]["code"] for m in response.json()] == [
        INVALID_REQUEST
    ]
    assert session.result(session.post(request("ping", None, 99)), 99)[0]["result"] == {}


def test_unit_nesting_and_batch_detection():
    from mcp_ref.unparsed import nesting

    assert nesting('[[1], {"a": "[[[[\\"]]"}]') == 2
    assert nesting("1") == 0
    assert jsonrpc.starts_batch(b" \r\n\t[1]") and not jsonrpc.starts_batch(b'{"a": []}')
    with pytest.raises(jsonrpc.InvalidRequest, match="limit"):
        jsonrpc.parse(json.dumps([{"jsonrpc": "2.0", "method": "x"}] * (jsonrpc.MAX_BATCH + 1)))


# -- class 9: every worker of a deployment accepts every worker's cursors --------------------------


def test_a_rotated_secret_accepts_cursors_of_the_old_one():
    from mcp_ref.pagination import InvalidCursor, Paginator

    old, rotated = Paginator(5, secret="old"), Paginator(5, secret="new,old")
    assert rotated.read_cursor(old.make_cursor(5, kind="tools"), kind="tools") == 5
    with pytest.raises(InvalidCursor):
        old.read_cursor(
            rotated.make_cursor(5, kind="tools"), kind="tools"
        )  # signed with the new key
    assert Paginator(5, secret=[b"k1", "k2"]).configured and not Paginator(5).configured
    with pytest.raises(ValueError):
        Paginator(5, secret="")


def page_two_at(first_url: str, second_url: str):
    import requests

    headers = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    first = requests.post(
        first_url, json=request("tools/list", None, 1), headers=headers, timeout=WAIT
    ).json()
    return requests.post(
        second_url,
        json=request("tools/list", {"cursor": first["result"]["nextCursor"]}, 2),
        headers=headers,
        timeout=WAIT,
    ).json()


def test_a_cursor_from_one_instance_is_accepted_by_another_with_the_same_secret(monkeypatch):
    from http_fixtures import serving

    monkeypatch.setenv("MCP_REF_SECRET", "one-secret-for-every-worker")
    with serving(stateless=True) as first, serving(stateless=True) as second:
        page = page_two_at(first.mcp, second.mcp)
    assert page["result"]["tools"], page


def test_without_a_shared_secret_another_instance_refuses_the_cursor_and_a_warning_says_why(
    monkeypatch, caplog
):
    from http_fixtures import serving

    monkeypatch.delenv("MCP_REF_SECRET", raising=False)
    with caplog.at_level("WARNING"):
        with serving(stateless=True) as first, serving(stateless=True) as second:
            page = page_two_at(first.mcp, second.mcp)
    assert page["error"]["code"] == INVALID_PARAMS and "cursor" in page["error"]["message"]
    assert "no configured secret" in caplog.text


def test_no_warning_with_a_secret_or_with_sessions(monkeypatch, caplog):
    monkeypatch.delenv("MCP_REF_SECRET", raising=False)
    with caplog.at_level("WARNING"):
        Server("with-secret", secret="s").wsgi_app(stateless=True)
        Server("with-sessions").wsgi_app()
    assert "no configured secret" not in caplog.text


# -- class 7: add_file_root -------------------------------------------------------------------------


def file_root_server(root, **options) -> Server:
    server = Server("files")
    server.add_file_root(str(root), uri_prefix="files://", **options)
    return server


def test_a_file_over_the_size_cap_is_refused_without_being_read(tmp_path):
    import resource

    with open(tmp_path / "big.bin", "wb") as big:
        big.truncate(256 * 1024 * 1024)  # sparse: 256 MB that cost no disk
    (tmp_path / "small.txt").write_text("small")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with Client.in_memory(file_root_server(tmp_path), timeout=WAIT) as client:
        with pytest.raises(McpError, match="Resource too large: files://big.bin") as caught:
            client.read_resource("files://big.bin")
        assert caught.value.code == INVALID_PARAMS and str(tmp_path) not in caught.value.message
        assert client.read_resource("files://small.txt").contents[0].text == "small"
    assert (
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000
    )  # KiB: never read whole


def test_the_size_cap_is_a_setting(tmp_path):
    (tmp_path / "five.txt").write_text("12345")
    with Client.in_memory(file_root_server(tmp_path, max_file_size=4), timeout=WAIT) as client:
        with pytest.raises(McpError, match="limit of 4 bytes"):
            client.read_resource("files://five.txt")


def test_hidden_files_are_neither_listed_nor_readable_unless_allowed(tmp_path):
    (tmp_path / ".env").write_text("SECRET=1")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]")
    (tmp_path / "visible.txt").write_text("ok")
    with Client.in_memory(file_root_server(tmp_path), timeout=WAIT) as client:
        assert [r.uri for r in client.list_resources() if r.uri.startswith("files://")] == [
            "files://visible.txt"
        ]
        for uri in ("files://.env", "files://.git/config", "files://./.env", "files://sub/../.env"):
            with pytest.raises(ResourceNotFound):  # not found: existence does not leak
                client.read_resource(uri)
    with Client.in_memory(file_root_server(tmp_path, allow_hidden=True), timeout=WAIT) as client:
        assert client.read_resource("files://.env").contents[0].text == "SECRET=1"


def test_unreadable_and_impossible_paths_are_not_found_not_internal_errors(tmp_path):
    import os

    secret = tmp_path / "locked.txt"
    secret.write_text("x")
    secret.chmod(0)
    names = ["files://" + "a" * 5000, "files://" + "/".join(["d"] * 3000), "files://locked.txt"]
    with Client.in_memory(file_root_server(tmp_path), timeout=WAIT) as client:
        for uri in names:
            if uri.endswith("locked.txt") and os.geteuid() == 0:
                continue  # root reads any file: nothing to refuse
            with pytest.raises(ResourceNotFound):
                client.read_resource(uri)


def test_a_fifo_in_the_root_never_blocks_a_handler(tmp_path):
    import os

    os.mkfifo(tmp_path / "pipe")
    with Client.in_memory(file_root_server(tmp_path), timeout=WAIT) as client:
        with pytest.raises(ResourceNotFound):
            client.read_resource("files://pipe")
        assert "files://pipe" not in [r.uri for r in client.list_resources()]


def test_a_file_swapped_for_a_fifo_after_resolving_is_refused_unread(tmp_path, monkeypatch):
    import os
    import threading

    from mcp_ref.extensions.files import FileRoot

    root = FileRoot(tmp_path)
    (tmp_path / "swap").write_text("regular")
    resolved = root.resolve("swap")  # checked: a regular file ...
    os.unlink(resolved)
    os.mkfifo(resolved)  # ... then swapped for a FIFO before it is opened
    monkeypatch.setattr(
        FileRoot, "resolve", lambda self, relative: resolved
    )  # the check already passed
    outcome = []
    thread = threading.Thread(
        target=lambda: outcome.append(_read_or_error(root, "swap")), daemon=True
    )
    thread.start()
    thread.join(WAIT)
    assert not thread.is_alive() and outcome == ["PermissionError"]


def _read_or_error(root, relative):
    try:
        root.read(relative)
        return "read"
    except Exception as exc:
        return type(exc).__name__


# -- class 8: headers ---------------------------------------------------------------------------------


def raw_http(port: int, head: bytes) -> bytes:
    """Send ``head`` (a whole request, CRLF line ends) on a fresh socket; the status line that comes back."""
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as sock:
        sock.sendall(head)
        return sock.makefile("rb").readline()


def ping_request(host_lines: bytes, extra: bytes = b"") -> bytes:
    body = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
    return (
        b"POST /mcp HTTP/1.1\r\n" + host_lines + extra + b"Content-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"
        b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


@pytest.mark.parametrize(
    "host_lines, status",
    [
        (b"Host: 127.0.0.1:1,evil.com\r\n", b"403"),
        # RFC 9112 §3.2: two Host field lines are a 400, from the request's parser
        (b"Host: 127.0.0.1\r\nHost: evil.com\r\n", b"400"),
        (b"Host: evil.com@127.0.0.1\r\n", b"403"),
        (b"Host: 127.0.0.1 evil.com\r\n", b"403"),
        (b"Host: \r\n", b"403"),
    ],
    ids=["list", "duplicated", "userinfo", "space", "empty"],
)
def test_a_malformed_host_is_refused_by_the_rebinding_guard(serve, host_lines, status):
    srv = serve(stateless=True)
    assert raw_http(srv.port, ping_request(host_lines)).split()[1] == status
    assert (
        raw_http(srv.port, ping_request(b"Host: 127.0.0.1\r\n")).split()[1] == b"200"
    )  # a good one still passes


def test_a_bare_cr_in_a_header_value_is_refused(serve):
    srv = serve(stateless=True)
    status = raw_http(srv.port, ping_request(b"Host: 127.0.0.1\r\n", b"X-Note: a\rb\r\n"))
    assert status.split()[1] == b"400"
    assert raw_http(srv.port, ping_request(b"Host: 127.0.0.1\r\n")).split()[1] == b"200"


# -- class 4: bounded queues ----------------------------------------------------------------------


def thread_count(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("Threads:"))


@pytest.mark.slow
def test_a_flood_of_requests_is_refused_past_the_limit_not_queued_without_bound(raw_peer):
    from mcp_ref.errors import SERVER_BUSY
    from mcp_ref.session import DEFAULT_MAX_INCOMING

    peer = raw_peer()
    peer.initialize()
    before = rss_kib(peer.proc.pid)
    flood = DEFAULT_MAX_INCOMING + 500
    call = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"wait_for_cancel","arguments":{"seconds":30}}}'
    peer.send(("\n".join(call % i for i in range(flood)) + "\n").encode())
    refused = [
        peer.recv() for _ in range(flood - DEFAULT_MAX_INCOMING)
    ]  # only the refusals come back now
    assert all(
        m["error"]["code"] == SERVER_BUSY and "Server busy" in m["error"]["message"]
        for m in refused
    )
    assert sorted(m["id"] for m in refused) == list(range(DEFAULT_MAX_INCOMING, flood))
    ping_answered(peer)  # answered on the reader, whatever the handlers are doing
    assert (
        thread_count(peer.proc.pid) < 32 + 10
    )  # the handler pool's bound, not one thread a request
    assert rss_kib(peer.proc.pid) - before < 100_000
    for i in range(
        DEFAULT_MAX_INCOMING
    ):  # let them go: the held requests end, and there is room again
        peer.send_json(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": i}}
        )
    peer.send_json(
        {
            "jsonrpc": "2.0",
            "id": "echo",
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "room"}},
        }
    )
    while True:
        message = peer.recv()
        if message.get("id") == "echo":
            assert message["result"]["content"][0]["text"] == "room"
            break


def test_a_client_sees_server_busy_as_its_own_class():
    import threading

    from mcp_ref import ServerBusy
    from mcp_ref.memory import memory_pair

    server = Server("small")
    release = threading.Event()

    @server.tool()
    def hold() -> str:
        """Hold a slot until released."""
        release.wait(WAIT)
        return "released"

    client_end, server_end = memory_pair()
    server.connect(server_end, max_incoming=2)
    with Client(client_end, timeout=WAIT) as client:
        held = [client.start_tool_call("hold") for _ in range(2)]
        with pytest.raises(ServerBusy, match="Server busy"):
            client.call_tool("hold")
        release.set()
        assert [call.result().content[0].text for call in held] == ["released", "released"]
        assert client.call_tool("hold").content[0].text == "released"


@pytest.mark.slow
def test_http_sessions_share_one_handler_pool(serve, raw_session):
    srv = serve(inline_handlers=False)
    sessions = [raw_session(srv.mcp) for _ in range(20)]
    for session in sessions:
        session.initialize()
        request_id, response = session.call(
            "tools/call", {"name": "echo", "arguments": {"text": "x"}}
        )
        assert session.result(response, request_id)[0]["result"]["content"][0]["text"] == "x"
    import threading

    handler_threads = [
        t for t in threading.enumerate() if t.name.startswith(("mcp-http-handler", "http-"))
    ]
    assert len(handler_threads) <= srv.app.handler_threads  # not a pool of its own per session


# -- class 6: one client cannot lock the others out ---------------------------------------------------


@pytest.mark.slow
def test_a_flood_of_bare_initializes_cannot_lock_out_a_real_client(serve, raw_session):
    import requests
    from http_fixtures import init_params

    srv = serve(max_sessions=10, max_sessions_per_client=None)  # one address: the table's cap
    established = raw_session(srv.mcp)
    established.initialize()  # comes back after initialize: it keeps its place
    headers = {"Accept": "application/json, text/event-stream"}
    for n in range(200):  # 20 times the table, never coming back
        response = requests.post(
            srv.mcp, json=request("initialize", init_params(), n), headers=headers, timeout=WAIT
        )
        assert response.status_code == 200, response.text
    assert len(srv.app.sessions) <= 10
    with Client.http(srv.mcp, timeout=WAIT) as client:  # a real client still gets in
        assert client.call_tool("echo", {"text": "in"}).content[0].text == "in"
    request_id, response = established.call("ping")
    assert established.result(response, request_id)[0]["result"] == {}


def test_when_every_session_is_established_a_newcomer_gets_503(serve, raw_session):
    srv = serve(max_sessions=2, max_sessions_per_client=None)  # one address: the table's cap
    for session in (raw_session(srv.mcp), raw_session(srv.mcp)):
        session.initialize()
    response = raw_session(srv.mcp).post(
        request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "late", "version": "1"},
            },
        ),
        version=False,
    )
    assert response.status_code == 503 and response.headers.get("Retry-After")


def test_a_session_that_never_came_back_expires_after_the_handshake_timeout(serve, raw_session):
    """A session whose client never came back after ``initialize`` is swept once the handshake
    timeout has passed.  Before, the test slept 1.1 s for it; now the table's clock is moved past
    the timeout and the sweep's once-a-second pace is lifted (``run_sweep_now``)."""
    import requests
    from http_fixtures import init_params
    from test_http_state import Clock
    from test_session_bounds import run_sweep_now

    from mcp_ref.http.server import MemorySessionTable

    clock = Clock()
    srv = serve(session_table=MemorySessionTable(handshake_timeout=5, clock=clock))
    response = requests.post(
        srv.mcp,
        json=request("initialize", init_params(), 1),
        headers={"Accept": "application/json, text/event-stream"},
        timeout=WAIT,
    )
    stale = response.headers["Mcp-Session-Id"]
    run_sweep_now(srv.app)
    raw_session(srv.mcp).initialize()  # a sweep before the timeout: both stay
    assert stale in srv.app.sessions and len(srv.app.sessions) == 2
    clock.now += 6  # past the handshake timeout
    run_sweep_now(srv.app)
    # an initialize sweeps; this session comes back at once, so it stays
    raw_session(srv.mcp).initialize()
    assert stale not in srv.app.sessions and len(srv.app.sessions) == 2


@pytest.mark.slow
def test_requests_cancelled_while_queued_are_bounded_too(raw_peer):
    """A request cancelled before a thread took it leaves the table at once, but its queued job stays
    until a thread is free: those are bounded by max_incoming as well, not queued without end."""
    from mcp_ref.errors import SERVER_BUSY
    from mcp_ref.session import DEFAULT_MAX_INCOMING

    peer = raw_peer()
    peer.initialize()
    held = '{"jsonrpc":"2.0","id":"held-%d","method":"tools/call","params":{"name":"wait_for_cancel","arguments":{"seconds":30}}}'
    call = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"wait_for_cancel","arguments":{"seconds":30}}}'
    cancel = '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}'
    pairs = DEFAULT_MAX_INCOMING + 300
    lines = [
        held % n for n in range(32)
    ]  # every handler thread busy: what follows waits in the queue
    for n in range(pairs):
        lines += [call % n, cancel % n]
    peer.send(("\n".join(lines) + "\n").encode())
    refused = [peer.recv() for _ in range(pairs - DEFAULT_MAX_INCOMING)]
    assert all(m["error"]["code"] == SERVER_BUSY for m in refused)
    assert sorted(m["id"] for m in refused) == list(range(DEFAULT_MAX_INCOMING, pairs))
    ping_answered(peer)
    assert thread_count(peer.proc.pid) < 32 + 10
    for n in range(32):  # let the held ones go: the server can then end when its input does
        peer.send_json(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": f"held-{n}"},
            }
        )
