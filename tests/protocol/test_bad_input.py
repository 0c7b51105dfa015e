"""Malformed and hostile input (the issue's section 9), and JSON-RPC batches at each revision.

The section-9 tests share ONE live connection to the demo server (plus a
resource and a prompt that raise, tests/servers/session_demo_failing.py),
initialized at 2025-11-25: every bad message must be answered (or ignored)
and the very next valid request must still be served.  The tests run in file
order; the last one shuts the connection down and checks what was left.
"""

import itertools
import json
import queue
import subprocess
import sys
import threading

import pytest
from conftest import DEMO, SERVERS, WAIT, RawPeer, command_label, schema_errors, watch_stderr

from mcp_ref.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
)

FAILING_DEMO = [sys.executable, str(SERVERS / "session_demo_failing.py")]
SECRET = "secret-detail-in-/srv/private/boom.py"
VERSION = "2025-11-25"
BATCH_VERSIONS = ["2024-11-05", "2025-03-26"]
NO_BATCH_VERSIONS = ["2025-06-18", "2025-11-25"]


class Peer(RawPeer):
    """A RawPeer whose stderr lines can be waited for, and that remembers every reply."""

    def __init__(self, command):
        self.proc = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.lines: queue.Queue = queue.Queue()
        self.stderr_lines: queue.Queue = queue.Queue()
        self.stderr: list[str] = []
        self.all_stderr: list[str] = []  # every line, read or not (shown if a test fails)
        self.replies: list = []
        self.ids = itertools.count(1)
        self.cancelled: set = set()
        self._pumps = [
            threading.Thread(target=self._pump, daemon=True),
            threading.Thread(target=self._pump_stderr, daemon=True),
        ]
        for pump in self._pumps:
            pump.start()

    def _pump_stderr(self) -> None:
        for line in iter(self.proc.stderr.readline, b""):
            text = line.decode("utf-8", "replace")
            self.all_stderr.append(text)
            self.stderr_lines.put(text)

    def recv(self, timeout: float = WAIT):
        reply = super().recv(timeout)
        self.replies.append(reply)
        return reply

    def wait_stderr(self, text: str) -> list[str]:
        """Read stderr until a line contains ``text`` (at most WAIT seconds); the lines read."""
        while True:
            line = self.stderr_lines.get(timeout=WAIT)
            self.stderr.append(line)
            if text in line:
                return self.stderr

    def call(self, method, params=None, request_id=None):
        """Send a request and return the next line, which must be its answer."""
        request_id = next(self.ids) if request_id is None else request_id
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send_json(message)
        reply = self.recv()
        assert isinstance(reply, dict) and reply.get("id") == request_id, reply
        return reply

    def assert_alive(self) -> None:
        """The next valid request is served: a ping, and a tool call."""
        assert self.call("ping")["result"] == {}
        reply = self.call("tools/call", {"name": "echo", "arguments": {"text": "still here"}})
        assert reply["result"]["content"] == [{"type": "text", "text": "still here"}]
        assert schema_errors(VERSION, "JSONRPCResultResponse", reply) == []


@pytest.fixture(scope="module")
def peer():
    peer = Peer(FAILING_DEMO)
    unwatch = watch_stderr(command_label(FAILING_DEMO), lambda: list(peer.all_stderr), keep=True)
    reply = peer.initialize(VERSION)
    assert reply["result"]["protocolVersion"] == VERSION
    yield peer
    try:
        peer.proc.stdin.close()
    except OSError:
        pass
    try:
        peer.proc.wait(WAIT)
    finally:
        if peer.proc.poll() is None:
            peer.proc.kill()
            peer.proc.wait()
        unwatch()


def expect_error(reply, code, request_id):
    assert isinstance(reply, dict), reply
    assert reply["jsonrpc"] == "2.0"
    assert_error_id(reply, request_id, VERSION)
    assert reply["error"]["code"] == code, reply
    assert isinstance(reply["error"]["message"], str) and reply["error"]["message"]
    assert schema_errors(VERSION, "JSONRPCErrorResponse", reply) == []


def assert_error_id(reply, request_id, version):
    """The id of an error answer: the request's, or — when it could not be read —
    no ``id`` at 2025-11-25 (basic §Error Responses: ``id?``) and ``"id": null``
    (JSON-RPC 2.0 §5) for peers on older revisions."""
    if request_id is not None:
        assert reply.get("id") == request_id, reply
    elif version >= "2025-11-25":
        assert "id" not in reply, reply
    else:
        assert "id" in reply and reply["id"] is None, reply


# -- one connection, one bad message at a time --------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "data",
    [
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping"\n',
        b"this is not json\n",
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}}\n',
        b"\xff\xfe\xfd\n",
        b'{"jsonrpc": "2.0", "id": 1, "method": "\xc3\x28"}\n',
    ],
    ids=["truncated", "text", "trailing-brace", "invalid-utf8", "invalid-utf8-in-string"],
)
def test_parse_errors_get_32700_without_an_id(peer, data):
    peer.send(data)
    expect_error(peer.recv(), PARSE_ERROR, None)
    peer.assert_alive()


@pytest.mark.parametrize(
    "message, request_id",
    [
        (42, None),
        ("a string", None),
        (None, None),
        ([], None),  # an empty array is one Invalid Request, not an (empty) batch reply
        ({"jsonrpc": "1.0", "id": "v1", "method": "ping"}, "v1"),
        ({"id": "no-version", "method": "ping"}, "no-version"),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": "m", "method": 7}, "m"),
        ({"jsonrpc": "2.0", "id": "p", "method": "tools/list", "params": [1]}, "p"),
        ({"jsonrpc": "2.0", "id": "nothing"}, "nothing"),
    ],
    ids=[
        "number",
        "string",
        "null",
        "empty-array",
        "jsonrpc-1.0",
        "no-jsonrpc",
        "null-id",
        "bool-id",
        "float-id",
        "method-not-string",
        "params-array",
        "no-method",
    ],
)
def test_invalid_requests_get_32600(peer, message, request_id):
    peer.send_json(message)
    expect_error(peer.recv(), INVALID_REQUEST, request_id)
    peer.assert_alive()


def test_unknown_method_gets_32601(peer):
    expect_error(peer.call("tools/explode", {}, request_id="u1"), METHOD_NOT_FOUND, "u1")
    expect_error(
        peer.call("sampling/createMessage", {"messages": [], "maxTokens": 1}, request_id="u2"),
        METHOD_NOT_FOUND,
        "u2",
    )  # a client method, sent to a server
    peer.assert_alive()


@pytest.mark.parametrize(
    "method, params",
    [
        ("tools/call", {"name": "echo", "arguments": "not an object"}),
        ("tools/call", {"name": "echo", "arguments": [1, 2]}),
        ("tools/call", {"name": 5}),
        ("tools/call", {}),
        ("tools/call", {"name": "no-such-tool"}),
        ("resources/read", {}),
        ("resources/read", {"uri": 5}),
        ("prompts/get", {"name": "greet", "arguments": {"name": 5}}),
        ("prompts/get", {"name": "greet"}),
        ("prompts/get", {"name": "greet", "arguments": "x"}),
        ("tools/list", {"cursor": "not-a-cursor"}),
        ("tools/list", {"cursor": 5}),
        ("logging/setLevel", {"level": "loud"}),
        ("logging/setLevel", {"level": ["debug"]}),
        (
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": ["greet"]},
                "argument": {"name": "a", "value": "v"},
            },
        ),
        (
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": {"u": 1}},
                "argument": {"name": "a", "value": "v"},
            },
        ),
        (
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "greet"},
                "argument": {"name": "name", "value": "A"},
                "context": ["not", "an", "object"],
            },
        ),
        (
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "greet"},
                "argument": {"name": "name", "value": "A"},
                "context": {"arguments": "x"},
            },
        ),
        ("completion/complete", {"ref": "x", "argument": {"name": "a", "value": "v"}}),
        (
            "completion/complete",
            {"ref": {"type": "ref/unknown"}, "argument": {"name": "a", "value": "v"}},
        ),
    ],
)
def test_bad_params_get_32602(peer, method, params):
    reply = peer.call(method, params)
    expect_error(reply, INVALID_PARAMS, reply["id"])
    peer.assert_alive()


@pytest.mark.parametrize("token", [[1], {"t": 1}, 1.5, True, None])
def test_progress_is_not_sent_for_an_invalid_progress_token(peer, token):
    # A ProgressToken is a string or an integer; the call is served, without (schema-invalid) progress.
    reply = peer.call(
        "tools/call",
        {
            "name": "count_slowly",
            "arguments": {"steps": 2, "delay": 0.001},
            "_meta": {"progressToken": token},
        },
    )
    assert reply["result"]["content"] == [{"type": "text", "text": "counted to 2"}]
    peer.assert_alive()


@pytest.mark.parametrize(
    "method, params",
    [
        ("resources/read", {"uri": "test://boom"}),
        ("prompts/get", {"name": "broken"}),
    ],
)
def test_handler_exception_gets_a_generic_32603_and_details_go_to_stderr(peer, method, params):
    reply = peer.call(method, params, request_id=f"boom-{method}")
    expect_error(reply, INTERNAL_ERROR, f"boom-{method}")
    assert reply["error"] == {"code": INTERNAL_ERROR, "message": "Internal error"}
    text = json.dumps(reply)
    for leak in ("secret", "Traceback", ".py", "/srv", "RuntimeError", "KeyError", "line "):
        assert leak not in text
    stderr = "".join(peer.wait_stderr(SECRET))
    assert "Traceback" in stderr
    peer.assert_alive()


@pytest.mark.parametrize("id_first", [True, False], ids=["id-in-the-bytes-read", "id-discarded"])
def test_a_message_over_the_size_limit_is_refused_and_the_next_one_served(peer, id_first):
    """Refused -32600 with its id when the id is in the bytes read before the limit (JSON-RPC 2.0
    §5.1: the id is null only "If there was an error in detecting the id"), without one when it
    was in the discarded bytes."""
    params = b'"params":{"name":"echo","arguments":{"text":"' + b"x" * (5 * 1024 * 1024) + b'"}}'
    members = [b'"id":"huge"', b'"method":"tools/call"', params]
    huge = b'{"jsonrpc":"2.0",' + b",".join(members if id_first else members[::-1]) + b"}\n"
    peer.send(huge)
    reply = peer.recv()
    expect_error(reply, INVALID_REQUEST, "huge" if id_first else None)
    assert "limit" in reply["error"]["message"]
    peer.assert_alive()


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": "nobody-asked", "result": {}},
        {"jsonrpc": "2.0", "id": 123456, "result": {"content": []}},
        {"jsonrpc": "2.0", "id": "nobody-asked", "error": {"code": -32603, "message": "oops"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "your parse error"}},
    ],
    ids=["result", "int-id-result", "error", "null-id-error"],
)
def test_an_answer_to_an_unknown_id_is_dropped(peer, message):
    peer.send_json(message)
    peer.assert_alive()  # the next line read is the ping's answer: nothing was sent back


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "notifications/who_knows"},
        {"jsonrpc": "2.0", "method": "notifications/who_knows", "params": {"a": [1]}},
        {"jsonrpc": "2.0", "method": "tools/list"},  # a request method sent as a notification
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": "never-sent"},
        },
        {
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": {"progressToken": "t", "progress": 1},
        },
    ],
    ids=[
        "unknown",
        "unknown-with-params",
        "request-as-notification",
        "cancel-unknown",
        "progress-unknown",
    ],
)
def test_an_unknown_or_unexpected_notification_is_ignored(peer, message):
    peer.send_json(message)
    peer.assert_alive()


def test_a_duplicate_in_flight_request_id_gets_32600(peer):
    peer.send_json(
        {
            "jsonrpc": "2.0",
            "id": "dup",
            "method": "tools/call",
            "params": {"name": "wait_for_cancel", "arguments": {"seconds": WAIT}},
        }
    )
    expect_error(peer.call("ping", request_id="dup"), INVALID_REQUEST, "dup")
    peer.assert_alive()
    peer.send_json(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "dup"}}
    )
    peer.cancelled.add("dup")
    peer.assert_alive()


@pytest.mark.slow
def test_a_batch_at_2025_11_25_gets_one_32600(peer):
    peer.send_json(
        [
            {"jsonrpc": "2.0", "id": "b1", "method": "ping"},
            {"jsonrpc": "2.0", "id": "b2", "method": "ping"},
        ]
    )
    expect_error(peer.recv(), INVALID_REQUEST, None)
    peer.assert_alive()  # and neither ping in the batch was answered


@pytest.mark.slow
def test_the_connection_survived_everything_and_shuts_down_cleanly(peer):
    peer.assert_alive()
    peer.proc.stdin.close()
    rest = []
    while (line := peer.recv()) is not None:
        rest.append(line)
    assert peer.proc.wait(WAIT) == 0
    assert rest == []  # nothing was pending: every request was answered when it was sent
    answered = [r.get("id") for r in peer.replies if isinstance(r, dict)]
    numbered = [a for a in answered if isinstance(a, int)]
    assert len(numbered) == len(set(numbered))  # no request was answered twice
    for request_id in peer.cancelled:
        # Once: the -32600 for the duplicate; the cancelled original was never answered.
        assert answered.count(request_id) == 1, f"the cancelled request {request_id!r} was answered"


# -- batches, at each revision (one fresh connection per test) --------------------------------------


def batch_peer(raw_peer, version):
    peer = raw_peer(DEMO)
    assert peer.initialize(version)["result"]["protocolVersion"] == version
    return peer


def check_batch_reply(version, reply):
    if version == "2025-03-26":
        assert schema_errors(version, "JSONRPCBatchResponse", reply) == []
    else:
        for item in reply:
            name = "JSONRPCError" if "error" in item else "JSONRPCResponse"
            if item["id"] is not None:
                assert schema_errors(version, name, item) == []


@pytest.mark.slow
@pytest.mark.parametrize("version", BATCH_VERSIONS)
def test_batch_of_requests_gets_an_array_of_answers(raw_peer, version):
    peer = batch_peer(raw_peer, version)
    peer.send_json(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {
                "jsonrpc": "2.0",
                "id": "two",
                "method": "tools/call",
                "params": {"name": "add", "arguments": {"a": 1, "b": 2}},
            },
        ]
    )
    reply = peer.recv()
    assert isinstance(reply, list) and len(reply) == 2
    by_id = {item["id"]: item for item in reply}
    assert by_id[1]["result"] == {}
    assert by_id["two"]["result"]["content"][0]["text"] in ("3", "3.0")
    check_batch_reply(version, reply)


@pytest.mark.slow
@pytest.mark.parametrize("version", BATCH_VERSIONS)
def test_batch_with_notifications_and_bad_items(raw_peer, version):
    peer = batch_peer(raw_peer, version)
    peer.send_json(
        [
            {"jsonrpc": "2.0", "method": "notifications/who_knows"},
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            42,
            {"jsonrpc": "1.0", "id": "old", "method": "ping"},
            {"jsonrpc": "2.0", "id": 2, "method": "no/such/method"},
        ]
    )
    reply = peer.recv()
    assert isinstance(reply, list)
    assert len(reply) == 4  # the notification gets no entry
    by_id = {}
    for item in reply:
        by_id.setdefault(item["id"], []).append(item)
    assert by_id[1][0]["result"] == {}
    assert by_id[None][0]["error"]["code"] == INVALID_REQUEST
    assert by_id["old"][0]["error"]["code"] == INVALID_REQUEST
    assert by_id[2][0]["error"]["code"] == METHOD_NOT_FOUND
    check_batch_reply(version, [item for item in reply if item["id"] is not None])


@pytest.mark.slow
@pytest.mark.parametrize("version", BATCH_VERSIONS)
def test_batch_of_only_notifications_gets_no_reply(raw_peer, version):
    peer = batch_peer(raw_peer, version)
    peer.send_json(
        [
            {"jsonrpc": "2.0", "method": "notifications/who_knows"},
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},
        ]
    )
    peer.send_json({"jsonrpc": "2.0", "id": "after", "method": "ping"})
    assert peer.recv() == {"jsonrpc": "2.0", "id": "after", "result": {}}


@pytest.mark.slow
@pytest.mark.parametrize("version", BATCH_VERSIONS)
def test_initialize_inside_a_batch_is_refused(raw_peer, version):
    peer = batch_peer(raw_peer, version)
    peer.send_json(
        [
            {
                "jsonrpc": "2.0",
                "id": "init-again",
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            },
            {"jsonrpc": "2.0", "id": "p", "method": "ping"},
        ]
    )
    reply = peer.recv()
    assert isinstance(reply, list) and len(reply) == 2
    by_id = {item["id"]: item for item in reply}
    assert by_id["init-again"]["error"]["code"] == INVALID_REQUEST
    assert by_id["p"]["result"] == {}
    check_batch_reply(version, reply)


@pytest.mark.slow
@pytest.mark.parametrize("version", BATCH_VERSIONS)
def test_initialize_in_a_batch_before_initialization_is_refused(raw_peer, version):
    peer = raw_peer(DEMO)
    peer.send_json(
        [
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            }
        ]
    )
    reply = peer.recv()
    errors = reply if isinstance(reply, list) else [reply]
    assert [e["error"]["code"] for e in errors] == [INVALID_REQUEST]
    assert errors[0].get("id") in (1, None)
    # The batched initialize did not initialize the connection.
    peer.send_json({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    assert peer.recv()["error"]["code"] == INVALID_REQUEST
    assert peer.initialize(version)["result"]["protocolVersion"] == version


@pytest.mark.slow
@pytest.mark.parametrize("version", NO_BATCH_VERSIONS)
def test_batches_are_refused_from_2025_06_18(raw_peer, version):
    peer = batch_peer(raw_peer, version)
    peer.send_json(
        [
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        ]
    )
    reply = peer.recv()
    assert isinstance(reply, dict), "a batch must get a single error object, not an array"
    assert_error_id(reply, None, version)
    assert reply["error"]["code"] == INVALID_REQUEST
    if version >= "2025-11-25":
        assert schema_errors(version, "JSONRPCErrorResponse", reply) == []
    # Neither ping inside the batch was served: the next line is this ping's answer.
    peer.send_json({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    assert peer.recv() == {"jsonrpc": "2.0", "id": 3, "result": {}}
    # A batch of notifications is refused the same way.
    peer.send_json([{"jsonrpc": "2.0", "method": "notifications/who_knows"}])
    assert peer.recv()["error"]["code"] == INVALID_REQUEST


# -- unreadable ids before 2025-11-25, and batches the client receives ---------------------------------

BATCH_SERVER = [sys.executable, str(SERVERS / "untested_raw_server.py"), "batch-ping"]


@pytest.mark.slow
@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18"])
@pytest.mark.parametrize(
    "data, code",
    [(b"this is not json\n", PARSE_ERROR), (b"42\n", INVALID_REQUEST)],
    ids=["invalid-json", "not-an-object"],
)
def test_an_unreadable_id_is_answered_with_id_null_before_2025_11_25(raw_peer, version, data, code):
    peer = batch_peer(raw_peer, version)
    peer.send(data)
    reply = peer.recv()
    assert "id" in reply and reply["id"] is None, reply  # JSON-RPC 2.0 §5: "id ... MUST be Null"
    assert reply["error"]["code"] == code
    peer.send_json({"jsonrpc": "2.0", "id": 1, "method": "ping"})
    assert peer.recv() == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.slow
@pytest.mark.parametrize("version", BATCH_VERSIONS + NO_BATCH_VERSIONS)
def test_a_batch_received_by_the_client(connect, wire, version):
    client = connect(BATCH_SERVER, protocol_version=version)
    # The server sent a batch of two pings; it answers this call with the client's reply to them.
    reply = json.loads(client.call_tool("what_did_you_get").content[0].text)
    (batch,) = [m for m in wire.received() if isinstance(m, list)]
    assert [m["id"] for m in batch] == ["s1", "s2"]
    if version in BATCH_VERSIONS:
        assert reply == [
            {"jsonrpc": "2.0", "id": "s1", "result": {}},
            {"jsonrpc": "2.0", "id": "s2", "result": {}},
        ]
        if version == "2025-03-26":
            assert schema_errors(version, "JSONRPCBatchResponse", reply) == []
    else:
        assert isinstance(reply, dict) and reply["error"]["code"] == INVALID_REQUEST, reply
        assert_error_id(reply, None, version)
    answers = [m for m in wire.sent() if isinstance(m, list) or "method" not in m]
    assert answers == [reply]  # one reply for the whole batch
