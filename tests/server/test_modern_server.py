"""The 2026-07-28 (modern) era on the server: one Server serving both eras, over stdio and HTTP.

Every modern message is checked against the official 2026-07-28 schema.  Over stdio the server
is a real subprocess (tests/servers/modern_server.py) driven with raw JSON lines; over HTTP a
real socket on 127.0.0.1, driven with raw POSTs.  See spec_notes/modern.md.
"""

from __future__ import annotations

import base64
import json
import sys

import pytest
import requests
from conftest import SERVERS, InMemory, schema_errors
from http_fixtures import TIMEOUT, serve  # noqa: F401 - a fixture

VERSION = "2026-07-28"
SERVER = [sys.executable, str(SERVERS / "modern_server.py")]
MODERN = InMemory("modern_server")
ALL_CAPS = {"elicitation": {}, "sampling": {}, "roots": {}}


def meta(capabilities=None, **extra) -> dict:
    return {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {} if capabilities is None else capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
        **extra,
    }


def call(name: str, arguments=None, capabilities=None, **params) -> dict:
    return {"name": name, "arguments": arguments or {}, "_meta": meta(capabilities), **params}


def check_answer(answer: dict, method: str) -> dict:
    """The answer, after checking it against the 2026-07-28 schema (result or error by code)."""
    if "error" in answer:
        kind = {
            -32020: "HeaderMismatchError",
            -32021: "MissingRequiredClientCapabilityError",
            -32022: "UnsupportedProtocolVersionError",
        }.get(answer["error"]["code"], "JSONRPCErrorResponse")
        assert schema_errors(VERSION, kind, answer) == []
        return answer
    result = answer["result"]
    if result.get("resultType") == "input_required":
        assert schema_errors(VERSION, "InputRequiredResult", result) == []
    elif result.get("resultType") == "task":  # the tasks extension: not in the core schema
        from mcp_ref.workbench.wire_check import task_errors

        assert task_errors(result) == []
    else:
        kind = {
            "server/discover": "DiscoverResult",
            "tools/list": "ListToolsResult",
            "tools/call": "CallToolResult",
            "prompts/get": "GetPromptResult",
            "resources/read": "ReadResourceResult",
            "prompts/list": "ListPromptsResult",
            "resources/list": "ListResourcesResult",
            "resources/templates/list": "ListResourceTemplatesResult",
        }[method]
        assert schema_errors(VERSION, kind, result) == []
    return answer


# -- the two transports, one interface ----------------------------------------------------------


class StdioPeer:
    """The test server as a subprocess; ``ask(method, params)`` -> the answer (dict)."""

    def __init__(self, raw_peer):
        self.peer = raw_peer(SERVER)
        self.next_id = 0

    def ask(self, method: str, params: dict, **_headers) -> dict:
        self.next_id += 1
        self.peer.send_json(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        )
        while True:
            message = self.peer.recv()
            assert message is not None, "the server ended its output"
            if message.get("id") == self.next_id:
                return check_answer(message, method)


class HttpPeer:
    """The test server over Streamable HTTP; ``ask`` POSTs with the 2026-07-28 headers."""

    def __init__(self, served):
        self.url = served.mcp
        self.next_id = 0
        self.last_status = None

    def ask(self, method: str, params: dict, **headers) -> dict:
        from mcp_ref.http.headers import request_headers

        self.next_id += 1
        sent = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": VERSION,
            **request_headers(method, params),
        }
        sent.update(headers)
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        reply = requests.post(
            self.url,
            json=body,
            headers={k: v for k, v in sent.items() if v is not None},
            timeout=TIMEOUT,
        )
        self.last_status = reply.status_code
        assert (
            "Mcp-Session-Id" not in reply.headers
        )  # streamable-http: "do not mint or echo session IDs"
        if reply.headers.get("Content-Type", "").startswith("text/event-stream"):
            answers = [
                json.loads(line[5:]) for line in reply.text.splitlines() if line.startswith("data:")
            ]
            return check_answer(answers[-1], method)
        return check_answer(reply.json(), method)


@pytest.fixture(params=["stdio", "http"])
def peer(request, raw_peer, serve):
    if request.param == "stdio":
        return StdioPeer(raw_peer)
    return HttpPeer(serve(MODERN.build()))


# -- discover, the envelope, the result fields ------------------------------------------------------


@pytest.mark.slow
def test_discover_names_every_version_the_capabilities_and_the_server(peer):
    result = peer.ask("server/discover", {"_meta": meta()})["result"]
    assert result["supportedVersions"][0] == VERSION and "2025-11-25" in result["supportedVersions"]
    assert {"tools", "resources", "prompts"} <= result["capabilities"].keys()
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"] == {
        "name": "modern",
        "version": "2.0",
    }
    assert result["instructions"] == "Tests the 2026-07-28 era."
    assert (result["resultType"], result["ttlMs"], result["cacheScope"]) == (
        "complete",
        60000,
        "public",
    )


@pytest.mark.slow
def test_every_result_carries_its_type_and_the_server_and_listings_their_cache_hints(peer):
    for method in ("tools/list", "prompts/list", "resources/list", "resources/templates/list"):
        result = peer.ask(method, {"_meta": meta()})["result"]
        assert result["resultType"] == "complete" and (result["ttlMs"], result["cacheScope"]) == (
            60000,
            "public",
        )
        assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "modern"
    called = peer.ask("tools/call", call("echo", {"text": "hi"}))["result"]
    assert (
        called["content"][0]["text"] == "hi"
        and called["resultType"] == "complete"
        and "ttlMs" not in called
    )


@pytest.mark.slow
def test_a_resource_overrides_the_servers_cache_hints(peer):
    fresh = peer.ask("resources/read", {"uri": "test://fresh", "_meta": meta()})["result"]
    stable = peer.ask("resources/read", {"uri": "test://stable", "_meta": meta()})["result"]
    assert (fresh["ttlMs"], fresh["cacheScope"]) == (0, "private")
    assert (stable["ttlMs"], stable["cacheScope"]) == (60000, "public")


@pytest.mark.slow
def test_tools_are_listed_in_the_same_order_every_time(peer):
    names = [
        [t["name"] for t in peer.ask("tools/list", {"_meta": meta()})["result"]["tools"]]
        for _ in range(3)
    ]
    assert names[0] == names[1] == names[2] and names[0][0] == "echo"


@pytest.mark.slow
@pytest.mark.parametrize(
    "broken",
    [
        {},
        {"io.modelcontextprotocol/clientCapabilities": {}},
        {"io.modelcontextprotocol/protocolVersion": VERSION},
        {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": [],
        },
        {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/logLevel": "loud",
        },
    ],
    ids=["empty", "no-version", "no-capabilities", "capabilities-not-object", "bad-log-level"],
)
def test_a_malformed_envelope_is_invalid_params_and_the_server_goes_on(peer, broken):
    answer = peer.ask("tools/list", {"_meta": broken}, **{"MCP-Protocol-Version": VERSION})
    if isinstance(peer, StdioPeer) and "io.modelcontextprotocol/protocolVersion" not in broken:
        # over stdio there is no header: without a version in _meta it is a handshake-era request
        assert answer["error"]["code"] == -32600  # not initialized
    else:
        assert answer["error"]["code"] == -32602
        if isinstance(peer, HttpPeer):
            assert peer.last_status == 400
    assert peer.ask("tools/list", {"_meta": meta()})["result"]["tools"]


@pytest.mark.slow
def test_an_unsupported_version_lists_the_supported_ones(peer):
    answer = peer.ask(
        "server/discover",
        {"_meta": {**meta(), "io.modelcontextprotocol/protocolVersion": "1900-01-01"}},
        **{"MCP-Protocol-Version": "1900-01-01"},
    )
    assert answer["error"]["code"] == -32022
    assert (
        answer["error"]["data"]["requested"] == "1900-01-01"
        and VERSION in answer["error"]["data"]["supported"]
    )
    if isinstance(peer, HttpPeer):
        assert peer.last_status == 400


@pytest.mark.slow
@pytest.mark.parametrize(
    "method",
    [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "no/such/method",
    ],
)
def test_methods_removed_in_2026_are_not_found(peer, method):
    answer = peer.ask(
        method,
        {
            "_meta": meta(),
            "uri": "test://stable",
            "level": "info",
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "x", "version": "0"},
        },
    )
    assert answer["error"]["code"] == -32601
    if isinstance(peer, HttpPeer):
        assert peer.last_status == 404


@pytest.mark.slow
def test_resource_not_found_is_invalid_params_naming_the_uri(peer):
    answer = peer.ask("resources/read", {"uri": "test://missing", "_meta": meta()})
    assert answer["error"]["code"] == -32602 and answer["error"]["data"] == {
        "uri": "test://missing"
    }


# -- logging per request -----------------------------------------------------------------------------


@pytest.mark.slow
def test_log_messages_only_for_a_request_that_asks_and_at_its_level(raw_peer):
    peer = raw_peer(SERVER)
    peer.send_json({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call("chatty")})
    assert peer.recv()["id"] == 1  # the answer comes first: no log line without a logLevel
    params = call("chatty")
    params["_meta"]["io.modelcontextprotocol/logLevel"] = "info"
    peer.send_json({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
    logged = peer.recv()
    assert (
        logged["method"] == "notifications/message" and logged["params"]["data"] == "an info line"
    )
    assert schema_errors(VERSION, "LoggingMessageNotification", logged) == []
    assert peer.recv()["id"] == 2  # the debug line stayed below the level


# -- MRTR: asks answered by the retry ------------------------------------------------------------------


@pytest.mark.slow
def test_an_ask_ends_in_input_required_and_the_retry_completes(peer):
    first = peer.ask("tools/call", call("greet", capabilities=ALL_CAPS))["result"]
    assert first["resultType"] == "input_required"
    assert first["inputRequests"]["user_name"]["method"] == "elicitation/create"
    assert first["inputRequests"]["user_name"]["params"]["requestedSchema"]["required"] == ["name"]
    retry = call(
        "greet",
        capabilities=ALL_CAPS,
        requestState=first["requestState"],
        inputResponses={"user_name": {"action": "accept", "content": {"name": "Ada"}}},
    )
    assert peer.ask("tools/call", retry)["result"]["content"][0]["text"] == "Hello, Ada!"


@pytest.mark.slow
def test_two_rounds_carry_the_first_answer_in_the_state(peer):
    r1 = peer.ask("tools/call", call("two_rounds", capabilities=ALL_CAPS))["result"]
    assert list(r1["inputRequests"]) == ["elicitation-1"]
    r2 = peer.ask(
        "tools/call",
        call(
            "two_rounds",
            capabilities=ALL_CAPS,
            requestState=r1["requestState"],
            inputResponses={"elicitation-1": {"action": "accept", "content": {"name": "Ada"}}},
        ),
    )
    r2 = r2["result"]
    assert (
        list(r2["inputRequests"]) == ["elicitation-2"] and r2["requestState"] != r1["requestState"]
    )
    # only the new answer is sent: the first rides in the state
    r3 = peer.ask(
        "tools/call",
        call(
            "two_rounds",
            capabilities=ALL_CAPS,
            requestState=r2["requestState"],
            inputResponses={"elicitation-2": {"action": "accept", "content": {"color": "red"}}},
        ),
    )
    assert r3["result"]["content"][0]["text"] == "Ada likes red"


@pytest.mark.slow
def test_several_asks_come_in_one_round(peer):
    first = peer.ask("tools/call", call("everything", capabilities=ALL_CAPS))["result"]
    assert {k: v["method"] for k, v in first["inputRequests"].items()} == {
        "name": "elicitation/create",
        "hi": "sampling/createMessage",
        "roots": "roots/list",
    }
    answers = {
        "name": {"action": "accept", "content": {"name": "Ada"}},
        "hi": {"role": "assistant", "content": {"type": "text", "text": "hi!"}, "model": "m"},
        "roots": {"roots": [{"uri": "file:///a"}]},
    }
    retry = call(
        "everything",
        capabilities=ALL_CAPS,
        requestState=first["requestState"],
        inputResponses=answers,
    )
    assert peer.ask("tools/call", retry)["result"]["content"][0]["text"] == "Ada|hi!|file:///a"


@pytest.mark.slow
def test_a_missing_answer_is_asked_again_and_extra_answers_are_ignored(peer):
    wrong = call(
        "greet",
        capabilities=ALL_CAPS,
        inputResponses={"other": {"action": "accept", "content": {}}},
    )
    assert peer.ask("tools/call", wrong)["result"]["inputRequests"].keys() == {"user_name"}
    extra = call(
        "greet",
        capabilities=ALL_CAPS,
        inputResponses={
            "user_name": {"action": "accept", "content": {"name": "Bo"}},
            "junk": {"x": 1},
        },
    )
    assert peer.ask("tools/call", extra)["result"]["content"][0]["text"] == "Hello, Bo!"


@pytest.mark.slow
@pytest.mark.parametrize("change", ["tamper", "other-request", "garbage", "not-a-string"])
def test_a_forged_or_misplaced_request_state_is_refused(peer, change):
    first = peer.ask("tools/call", call("two_rounds", capabilities=ALL_CAPS))["result"]
    state = first["requestState"]
    params = call("two_rounds", capabilities=ALL_CAPS, inputResponses={})
    if change == "tamper":
        params["requestState"] = state + "-TAMPERED"
    elif change == "other-request":  # a state minted for two_rounds, presented with other arguments
        params["requestState"], params["arguments"] = state, {"x": 1}
    elif change == "garbage":
        params["requestState"] = base64.urlsafe_b64encode(b'{"a":{}}').decode() + ".AAAA"
    else:
        params["requestState"] = 42
    answer = peer.ask("tools/call", params)
    assert answer["error"]["code"] == -32602
    assert (
        peer.ask("tools/call", call("echo", {"text": "still here"}))["result"]["content"][0]["text"]
        == "still here"
    )


@pytest.mark.slow
def test_a_lone_surrogate_in_a_request_or_an_answer_is_sealed_like_any_other_text(peer):
    """RFC 8259 §8.2 lets a JSON string hold a lone surrogate ("\\ud800"), which strict UTF-8
    cannot encode: the request's digest and the sealed state encode it too (``surrogatepass``),
    so it is judged as any other text instead of failing the request with -32603."""
    lone = "\ud800"
    # a state presented with it in the arguments: not ours, like any forged state
    forged = call("echo", {"text": lone}, requestState="abc.def")
    assert peer.ask("tools/call", forged)["error"]["code"] == -32602
    # an answer holding it rides in the state to the next round, and reaches the handler as sent
    r1 = peer.ask("tools/call", call("two_rounds", capabilities=ALL_CAPS))["result"]
    answer = {"action": "accept", "content": {"name": lone}}
    r2 = peer.ask(
        "tools/call",
        call(
            "two_rounds",
            capabilities=ALL_CAPS,
            requestState=r1["requestState"],
            inputResponses={"elicitation-1": answer},
        ),
    )["result"]
    r3 = peer.ask(
        "tools/call",
        call(
            "two_rounds",
            capabilities=ALL_CAPS,
            requestState=r2["requestState"],
            inputResponses={"elicitation-2": {"action": "accept", "content": {"color": "red"}}},
        ),
    )
    assert r3["result"]["content"][0]["text"] == f"{lone} likes red"


@pytest.mark.slow
@pytest.mark.parametrize("responses", [{"user_name": 12345}, None, ["user_name"]])
def test_malformed_input_responses_are_invalid_params(peer, responses):
    answer = peer.ask("tools/call", call("greet", capabilities=ALL_CAPS, inputResponses=responses))
    assert answer["error"]["code"] == -32602


@pytest.mark.slow
def test_an_ask_the_client_cannot_answer_is_missing_capability_naming_it(peer):
    answer = peer.ask("tools/call", call("needs_sampling", capabilities={"elicitation": {}}))
    assert answer["error"]["code"] == -32021
    assert answer["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
    if isinstance(peer, HttpPeer):
        assert peer.last_status == 400


@pytest.mark.slow
def test_a_prompt_can_ask_too(peer):
    first = peer.ask("prompts/get", {"name": "with_context", "_meta": meta(ALL_CAPS)})["result"]
    assert first["inputRequests"]["ctx"]["method"] == "elicitation/create"
    retry = {
        "name": "with_context",
        "_meta": meta(ALL_CAPS),
        "requestState": first["requestState"],
        "inputResponses": {"ctx": {"action": "accept", "content": {"context": "tests"}}},
    }
    assert (
        peer.ask("prompts/get", retry)["result"]["messages"][0]["content"]["text"] == "Use: tests"
    )


def test_the_state_is_accepted_by_another_instance_with_the_same_secret(serve):
    one, two = HttpPeer(serve(MODERN.build())), HttpPeer(serve(MODERN.build()))
    first = one.ask("tools/call", call("greet", capabilities=ALL_CAPS))["result"]
    retry = call(
        "greet",
        capabilities=ALL_CAPS,
        requestState=first["requestState"],
        inputResponses={"user_name": {"action": "accept", "content": {"name": "Cy"}}},
    )
    assert two.ask("tools/call", retry)["result"]["content"][0]["text"] == "Hello, Cy!"
    other = HttpPeer(serve(InMemory("modern_server", "build", "another-secret").build()))
    assert other.ask("tools/call", retry)["error"]["code"] == -32602


# -- HTTP headers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers, code",
    [
        ({"Mcp-Method": "tools/list"}, -32020),
        ({"Mcp-Method": None}, -32020),
        ({"Mcp-Name": "other"}, -32020),
        ({"Mcp-Name": None}, -32020),
        ({"MCP-Protocol-Version": "2025-11-25"}, -32020),
        ({"MCP-Protocol-Version": None}, -32020),
        ({"Mcp-Param-Region": "eu"}, -32020),
        ({"Mcp-Param-Region": None}, -32020),
        ({"Mcp-Param-Count": "3"}, -32020),
        ({"Mcp-Param-Region": "=?base64?dXM=?="}, None),  # "us", encoded
        ({"Mcp-Param-Region": "=?base64?dXM?="}, -32020),  # unpadded Base64 is not valid
        ({"Mcp-Param-Count": "2.0"}, None),  # integers compare as numbers
        ({"mcp-param-dry-run": "true"}, -32020),  # a header for a value the body does not have
        # a name with "_" is another header: never taken for the hyphenated one it resembles
        ({"Mcp-Param-Region": None, "Mcp_Param_Region": "us"}, -32020),
        ({"Mcp-Method": None, "Mcp_Method": "tools/call"}, -32020),
        ({"Mcp-Name": None, "Mcp_Name": "routed"}, -32020),
    ],
    ids=lambda v: repr(v),
)
def test_headers_that_disagree_with_the_body_are_a_header_mismatch(serve, headers, code):
    from mcp_ref.http.headers import request_headers

    server = MODERN.build()
    peer = HttpPeer(serve(server))
    params = call("routed", {"region": "us", "count": 2})
    correct = request_headers(
        "tools/call", params, server.get_tool("routed").listing["inputSchema"]
    )
    assert (
        correct["Mcp-Param-Count"] == "2" and "Mcp-Param-Dry-Run" not in correct
    )  # absent values: no header
    answer = peer.ask("tools/call", params, **{**correct, **headers})
    if code is None:
        assert answer["result"]["content"][0]["text"] == "us:2:False:"
    else:
        assert answer["error"]["code"] == code and peer.last_status == 400
        assert answer["id"] == peer.next_id


@pytest.mark.parametrize(
    "answer",
    [{"result": {}}, {"error": {"code": -32603, "message": "no"}}],
    ids=["result", "error"],
)
def test_a_response_posted_by_a_2026_client_is_a_bad_request_and_the_server_goes_on(serve, answer):
    # 2026-07-28 streamable-http §Sending Messages: "The body of the HTTP POST MUST be a single
    # JSON-RPC request or notification. The client MUST NOT send JSON-RPC responses."  Refused
    # with 400 and -32600, no id (none of the server's requests is answered); a notification is
    # still taken (202), and the next request is served.
    peer = HttpPeer(serve(MODERN.build()))
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": VERSION,
    }
    posted = requests.post(
        peer.url, json={"jsonrpc": "2.0", "id": 5, **answer}, headers=headers, timeout=TIMEOUT
    )
    assert posted.status_code == 400
    assert posted.json()["error"]["code"] == -32600 and "id" not in posted.json()
    notification = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}
    assert (
        requests.post(peer.url, json=notification, headers=headers, timeout=TIMEOUT).status_code
        == 202
    )
    assert "tools" in peer.ask("tools/list", {"_meta": meta()})["result"]


def test_an_x_mcp_header_with_an_underscore_is_checked_by_its_exact_name(serve):
    """An ``x-mcp-header`` may hold ``_`` (a ``tchar``): ``Mcp-Param-Run_Mode`` is its header,
    and ``Mcp-Param-Run-Mode``, the same WSGI key, is another one (2026-07-28 streamable-http
    §Server Behavior for Custom Headers: a header the client omits is rejected)."""
    from mcp_ref import Server
    from mcp_ref.http.headers import request_headers

    server = Server("underscored")

    @server.tool(headers={"mode": "Run_Mode"})
    def run(mode: str) -> str:
        """Run in a mode that travels in a header too."""
        return f"ran {mode}"

    peer = HttpPeer(serve(server))
    params = call("run", {"mode": "fast"})
    correct = request_headers("tools/call", params, server.get_tool("run").listing["inputSchema"])
    assert correct["Mcp-Param-Run_Mode"] == "fast"
    answer = peer.ask("tools/call", params, **correct)
    assert answer["result"]["content"][0]["text"] == "ran fast"
    lookalike = {"Mcp-Param-Run_Mode": None, "Mcp-Param-Run-Mode": "fast"}
    answer = peer.ask("tools/call", params, **{**correct, **lookalike})
    assert answer["error"]["code"] == -32020 and peer.last_status == 400
    assert answer["error"]["message"] == "Header mismatch: the Mcp-Param-Run_Mode header is missing"


def test_the_client_side_header_rules():
    from mcp_ref.http.headers import (
        InvalidHeaderDeclaration,
        decode_value,
        encode_value,
        header_params,
        request_headers,
    )

    assert (
        encode_value("us-west1") == "us-west1"
        and encode_value(True) == "true"
        and encode_value(-7) == "-7"
    )
    for value in ("Hello, 世界", " padded ", "line1\nline2", "=?base64?literal?="):
        assert (
            encode_value(value).startswith("=?base64?")
            and decode_value(encode_value(value)) == value
        )
    assert (
        encode_value("Hello, 世界") == "=?base64?SGVsbG8sIOS4lueVjA==?="
    )  # the spec's own example
    headers = request_headers(
        "tools/call",
        {"name": "routed", "arguments": {"region": "eu", "count": None}},
        MODERN.build().get_tool("routed").listing["inputSchema"],
    )
    assert headers == {"Mcp-Method": "tools/call", "Mcp-Name": "routed", "Mcp-Param-Region": "eu"}
    for bad in (
        {"type": "object", "properties": {"x": {"type": "number", "x-mcp-header": "X"}}},
        {"type": "object", "properties": {"x": {"type": "string", "x-mcp-header": "A B"}}},
        {"type": "object", "properties": {"x": {"type": "string", "x-mcp-header": ""}}},
        {
            "type": "object",
            "properties": {
                "a": {"type": "string", "x-mcp-header": "X"},
                "b": {"type": "string", "x-mcp-header": "x"},
            },
        },
        {
            "type": "object",
            "properties": {
                "a": {"type": "array", "items": {"type": "string", "x-mcp-header": "X"}}
            },
        },
        {
            "type": "object",
            "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "X"}}}],
        },
    ):
        with pytest.raises(InvalidHeaderDeclaration):
            header_params(bad)
    nested = {
        "type": "object",
        "properties": {
            "o": {"type": "object", "properties": {"k": {"type": "integer", "x-mcp-header": "K"}}}
        },
    }
    assert header_params(nested) == [(("o", "k"), "K")]


def test_a_tool_whose_header_declaration_breaks_the_rules_is_refused_at_registration():
    from mcp_ref import Server

    def scale(factor: float) -> str:
        return str(factor)

    server = Server("s")
    with pytest.raises(ValueError, match="string, integer or boolean"):
        server.tool(headers={"factor": "Factor"})(scale)  # a number may not travel in a header
    with pytest.raises(ValueError, match="not one of its parameters"):
        server.tool(headers={"nope": "X"})(scale)
    with pytest.raises(ValueError, match="token"):
        server.tool(headers={"factor": "Bad Name"})(scale)


# -- both eras on one server ---------------------------------------------------------------------------


@pytest.mark.slow
def test_a_handshake_client_and_a_modern_request_share_one_stdio_process(raw_peer):
    peer = raw_peer(SERVER)
    reply = peer.initialize("2025-06-18")
    assert reply["result"]["protocolVersion"] == "2025-06-18"
    peer.send_json({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"_meta": meta()}})
    modern = peer.recv()
    assert modern["result"]["resultType"] == "complete"
    peer.send_json({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {}})
    legacy = peer.recv()
    assert "resultType" not in legacy["result"] and "ttlMs" not in legacy["result"]
    peer.send_json({"jsonrpc": "2.0", "id": 9, "method": "ping"})
    assert peer.recv() == {"jsonrpc": "2.0", "id": 9, "result": {}}
