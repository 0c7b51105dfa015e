"""Initialization, version negotiation, capability enforcement and what changed between revisions."""

import json
import sys

import pytest
from conftest import DEMO_IN_PROCESS, SERVERS, WAIT, InMemory, handshake_era, schema_errors

from mcp_ref import SUPPORTED_VERSIONS, CapabilityError, Client, UnsupportedProtocolVersionError
from mcp_ref.errors import INVALID_REQUEST, METHOD_NOT_FOUND
from mcp_ref.stdio import SubprocessTransport


@pytest.fixture
def connect(connect):
    """The handshake lifecycle (initialize, version negotiation, capabilities per connection)."""
    return handshake_era(connect)


LIFECYCLE_SERVER = [sys.executable, str(SERVERS / "lifecycle_server.py")]
BAD_VERSION_SERVER = [sys.executable, str(SERVERS / "lifecycle_bad_version.py")]
LATEST = SUPPORTED_VERSIONS[0]
DEMO_INSTRUCTIONS = "A demo of every MCP feature. Start with the echo tool."
OLD = [v for v in SUPPORTED_VERSIONS if v < "2025-06-18"]
NEW = [v for v in SUPPORTED_VERSIONS if v >= "2025-06-18"]


def request(peer, request_id, method, params=None):
    message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    peer.send_json(message)
    reply = peer.recv()
    assert reply is not None and reply["id"] == request_id, reply
    return reply


def check_error(version, reply, code):
    assert reply["error"]["code"] == code, reply
    if reply["id"] is not None or version >= "2025-11-25":
        name = "JSONRPCErrorResponse" if version >= "2025-11-25" else "JSONRPCError"
        assert schema_errors(version, name, reply) == []


def initialize_params(version):
    return {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    }


# -- version negotiation ---------------------------------------------------------------------


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_client_gets_the_version_it_asks_for(connect, wire, version):
    client = connect(DEMO_IN_PROCESS, protocol_version=version)
    assert client.protocol_version == version
    assert client.session.protocol_version == version
    assert wire.sent("initialize")[0]["params"]["protocolVersion"] == version
    init_id = wire.sent("initialize")[0]["id"]
    answer = [m for m in wire.received() if m.get("id") == init_id][0]
    assert answer["result"]["protocolVersion"] == version
    assert answer["result"]["serverInfo"]["name"] == "mcp-ref-demo"
    # notifications/initialized follows the initialize result, before anything else.
    assert [m.get("method") for m in wire.sent()][:2] == ["initialize", "notifications/initialized"]
    client.ping()


@pytest.mark.slow
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_raw_initialize_at_each_version(raw_peer, version):
    peer = raw_peer()
    reply = request(peer, 1, "initialize", initialize_params(version))
    assert reply["result"]["protocolVersion"] == version
    assert schema_errors(version, "InitializeResult", reply["result"]) == []


@pytest.mark.slow
@pytest.mark.parametrize("asked", ["1999-01-01", "2099-12-31", "latest", ""])
def test_unknown_version_gets_the_servers_latest(raw_peer, asked):
    peer = raw_peer()
    reply = request(peer, "init", "initialize", initialize_params(asked))
    assert reply["result"]["protocolVersion"] == LATEST
    assert schema_errors(LATEST, "InitializeResult", reply["result"]) == []
    peer.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert (
        "tools" in request(peer, 2, "tools/list")["result"]
    )  # the connection works at that version


@pytest.mark.slow
def test_initialize_without_a_string_version_is_invalid_params(raw_peer):
    peer = raw_peer()
    reply = request(
        peer,
        1,
        "initialize",
        {
            "protocolVersion": 20250618,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    )
    check_error(LATEST, reply, -32602)
    # It did not count as the initialize: a proper one still works.
    assert (
        request(peer, 2, "initialize", initialize_params(LATEST))["result"]["protocolVersion"]
        == LATEST
    )


def test_client_refuses_an_unsupported_version_and_shuts_the_server_down(wire):
    transport = SubprocessTransport(BAD_VERSION_SERVER, stderr="capture", shutdown_timeout=WAIT)
    with pytest.raises(UnsupportedProtocolVersionError, match="1999-01-01"):
        Client(transport, trace=wire, timeout=WAIT, era="handshake")
    # The client closed the server's stdin and waited: the script exits with 3 only on end of input.
    assert transport.returncode == 3
    assert [m.get("method") for m in wire.sent()] == ["initialize"]  # no notifications/initialized


@pytest.mark.parametrize("pinned", ["2025-06-18", None])
def test_a_client_pinned_to_a_revision_refuses_another_one(wire, pinned):
    """``protocol_version`` pins one revision: a server answering another one it could speak
    (2025-03-26) is refused as one that speaks none would be (basic/lifecycle §Version Negotiation:
    "If the client does not support the version in the server's response, it SHOULD disconnect");
    a client not pinned speaks the version the server chose."""
    command = [*BAD_VERSION_SERVER, "2025-03-26"]
    transport = SubprocessTransport(command, stderr="capture", shutdown_timeout=WAIT)
    options = {"protocol_version": pinned} if pinned else {"era": "handshake"}
    if pinned is None:
        with Client(transport, trace=wire, timeout=WAIT, **options) as client:
            assert client.protocol_version == "2025-03-26"
        return
    with pytest.raises(UnsupportedProtocolVersionError, match="pinned to 2025-06-18"):
        Client(transport, trace=wire, timeout=WAIT, **options)
    assert transport.returncode == 3  # the client closed the server's stdin and waited
    assert [m.get("method") for m in wire.sent()] == ["initialize"]  # no notifications/initialized
    assert wire.sent("initialize")[0]["params"]["protocolVersion"] == "2025-06-18"


# -- before and after initialize -----------------------------------------------------------------


@pytest.mark.slow
def test_requests_before_initialize_are_refused_but_ping_is_answered(raw_peer):
    peer = raw_peer()
    check_error(LATEST, request(peer, 1, "tools/list"), INVALID_REQUEST)
    check_error(
        LATEST,
        request(peer, 2, "tools/call", {"name": "echo", "arguments": {"text": "x"}}),
        INVALID_REQUEST,
    )
    assert request(peer, 3, "ping") == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert (
        request(peer, 4, "initialize", initialize_params(LATEST))["result"]["protocolVersion"]
        == LATEST
    )
    peer.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert request(peer, 5, "tools/list")["result"]["tools"]


@pytest.mark.slow
def test_a_second_initialize_is_refused(raw_peer):
    peer = raw_peer()
    assert peer.initialize("2025-03-26")["result"]["protocolVersion"] == "2025-03-26"
    reply = request(peer, 2, "initialize", initialize_params(LATEST))
    check_error("2025-03-26", reply, INVALID_REQUEST)
    # The first negotiation stands: batches (2025-03-26 only) are still accepted.
    peer.send_json([{"jsonrpc": "2.0", "id": 3, "method": "ping"}])
    assert peer.recv() == [{"jsonrpc": "2.0", "id": 3, "result": {}}]


def test_instructions_are_passed_through(connect, wire):
    client = connect(DEMO_IN_PROCESS)
    assert client.instructions == DEMO_INSTRUCTIONS
    assert wire.received()[0]["result"]["instructions"] == DEMO_INSTRUCTIONS


@pytest.mark.slow
def test_no_instructions_when_the_server_has_none(connect, wire):
    client = connect(LIFECYCLE_SERVER)
    assert client.instructions is None
    assert "instructions" not in wire.received()[0]["result"]


# -- capabilities -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_server_capabilities_follow_what_is_registered(connect):
    client = connect(LIFECYCLE_SERVER)
    assert set(client.server_capabilities) == {"tools", "logging"}
    demo = connect(DEMO_IN_PROCESS)
    assert {"tools", "resources", "prompts", "logging", "completions"} <= set(
        demo.server_capabilities
    )


@pytest.mark.slow
def test_server_without_prompts_answers_prompts_methods_with_method_not_found(raw_peer):
    peer = raw_peer(LIFECYCLE_SERVER)
    peer.initialize()
    check_error(LATEST, request(peer, 1, "prompts/list"), METHOD_NOT_FOUND)
    check_error(LATEST, request(peer, 2, "prompts/get", {"name": "x"}), METHOD_NOT_FOUND)
    check_error(LATEST, request(peer, 3, "resources/list"), METHOD_NOT_FOUND)
    check_error(LATEST, request(peer, 4, "resources/read", {"uri": "x://y"}), METHOD_NOT_FOUND)
    assert [t["name"] for t in request(peer, 5, "tools/list")["result"]["tools"]] == [
        "titled",
        "try_sampling",
        "raw_sampling",
    ]


@pytest.mark.slow
def test_client_does_not_send_what_the_server_did_not_declare(connect, wire):
    client = connect(LIFECYCLE_SERVER)
    written = len(wire.sent())
    with pytest.raises(CapabilityError):
        client.get_prompt("anything")
    with pytest.raises(CapabilityError):
        client.list_prompts()
    with pytest.raises(CapabilityError):
        client.read_resource("x://y")
    with pytest.raises(CapabilityError):
        client.subscribe("x://y")
    with pytest.raises(CapabilityError):
        client.complete(prompt="p", argument="a", value="v")
    assert len(wire.sent()) == written  # nothing was written
    assert wire.sent("prompts/get") == []
    client.ping()


@pytest.mark.slow
def test_server_refuses_to_sample_from_a_client_without_sampling(connect, wire):
    client = connect(LIFECYCLE_SERVER)
    assert "sampling" not in wire.sent("initialize")[0]["params"]["capabilities"]
    text = client.call_tool("try_sampling").content[0].text
    assert text.startswith("CapabilityError:") and "sampling" in text
    assert wire.received("sampling/createMessage") == []  # the server sent nothing


@pytest.mark.slow
def test_client_without_sampling_answers_sampling_with_method_not_found(connect, wire):
    client = connect(LIFECYCLE_SERVER)
    assert client.call_tool("raw_sampling").content[0].text == f"error {METHOD_NOT_FOUND}"
    asked = wire.received("sampling/createMessage")
    assert len(asked) == 1
    answer = [m for m in wire.sent() if m.get("id") == asked[0]["id"] and "method" not in m]
    assert len(answer) == 1 and answer[0]["error"]["code"] == METHOD_NOT_FOUND


@pytest.mark.slow
def test_client_with_sampling_declares_it_and_is_asked(connect, wire):
    client = connect(
        LIFECYCLE_SERVER,
        sampling_handler=lambda params: {
            "role": "assistant",
            "content": {"type": "text", "text": "ok"},
            "model": "m",
        },
    )
    assert wire.sent("initialize")[0]["params"]["capabilities"] == {"sampling": {}}
    assert client.call_tool("try_sampling").content[0].text == "sampling worked"
    assert client.call_tool("raw_sampling").content[0].text == "answered"


# -- behaviour that changed between revisions ------------------------------------------------------


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_structured_content_only_from_2025_06_18(connect, wire, version):
    client = connect(DEMO_IN_PROCESS, protocol_version=version)
    result = client.call_tool("weather", {"city": "Oslo"})
    raw = [m for m in wire.received() if m.get("id") == wire.sent("tools/call")[0]["id"]][0][
        "result"
    ]
    expected = {"city": "Oslo", "temperature": 21.5, "unit": "celsius", "conditions": "sunny"}
    if version >= "2025-06-18":
        assert raw["structuredContent"] == expected
        assert result.structured_content == expected
    else:
        assert "structuredContent" not in raw
        assert result.structured_content is None
    assert result.content[0].text  # the text form is there at every revision


@pytest.mark.slow
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_titles_and_output_schemas_only_from_2025_06_18(connect, wire, version):
    client = connect(LIFECYCLE_SERVER, protocol_version=version)
    client.list_tools()
    titled = wire.received()[-1]["result"]["tools"][0]
    assert titled["name"] == "titled"
    assert ("title" in titled) == (version >= "2025-06-18")
    assert ("outputSchema" in titled) == (version >= "2025-06-18")
    server_info = wire.received()[0]["result"]["serverInfo"]
    assert ("title" in server_info) == (version >= "2025-06-18")
    result = client.call_tool("titled")
    assert (result.structured_content == {"value": 7}) == (version >= "2025-06-18")


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_prompt_titles_only_from_2025_06_18(connect, wire, version):
    client = connect(DEMO_IN_PROCESS, protocol_version=version)
    prompts = client.list_prompts()
    greet = [p for p in prompts if p.name == "greet"][0]
    listed = [
        p
        for m in wire.received()
        if "result" in m and "prompts" in m["result"]
        for p in m["result"]["prompts"]
    ]
    listed_greet = [p for p in listed if p["name"] == "greet"][0]
    if version >= "2025-06-18":
        assert listed_greet["title"] == "Greet someone"
        assert greet.title == "Greet someone"
    else:
        assert "title" not in listed_greet


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_tool_annotations_only_from_2025_03_26(connect, wire, version):
    connect(DEMO_IN_PROCESS, protocol_version=version).list_tools_page()
    echo = wire.received()[-1]["result"]["tools"][0]
    assert echo["name"] == "echo"
    assert ("annotations" in echo) == (version >= "2025-03-26")


@pytest.mark.parametrize(
    "version, declared",
    [
        ("2024-11-05", None),
        ("2025-03-26", None),
        ("2025-06-18", {}),
        ("2025-11-25", {"form": {}}),
    ],
)
def test_elicitation_declared_only_from_2025_06_18(connect, wire, version, declared):
    connect(
        DEMO_IN_PROCESS,
        protocol_version=version,
        elicitation_handler=lambda params: {"action": "decline"},
    )
    capabilities = wire.sent("initialize")[0]["params"]["capabilities"]
    assert capabilities.get("elicitation") == declared


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_progress_message_only_from_2025_03_26(connect, wire, version):
    client = connect(DEMO_IN_PROCESS, protocol_version=version)
    messages = []
    client.call_tool(
        "count_slowly",
        {"steps": 2, "delay": 0.001},
        on_progress=lambda progress, total, message: messages.append(message),
    )
    notes = wire.received("notifications/progress")
    assert len(notes) == 2
    if version >= "2025-03-26":
        assert messages == ["step 1 of 2", "step 2 of 2"]
    else:
        assert messages == [None, None]
        assert all("message" not in n["params"] for n in notes)


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_completions_capability_only_from_2025_03_26(connect, version):
    client = connect(DEMO_IN_PROCESS, protocol_version=version)
    assert ("completions" in client.server_capabilities) == (version >= "2025-03-26")
    # completion/complete itself works at every revision (2024-11-05 had it without a capability).
    assert client.complete(prompt="greet", argument="name", value="A").values == [
        "Ada",
        "Alan",
        "Alonzo",
    ]


# -- behaviour spec_notes listed as untested ------------------------------------------------------

UNTESTED = [sys.executable, str(SERVERS / "untested_server.py")]
RAW_SERVER = [sys.executable, str(SERVERS / "untested_raw_server.py")]


@pytest.mark.slow
@pytest.mark.parametrize(
    "params",
    [
        {"protocolVersion": LATEST, "clientInfo": {"name": "raw", "version": "0"}},
        {"protocolVersion": LATEST, "capabilities": {}},
        {
            "protocolVersion": LATEST,
            "capabilities": [],
            "clientInfo": {"name": "raw", "version": "0"},
        },
        {"protocolVersion": LATEST, "capabilities": {}, "clientInfo": "raw"},
    ],
    ids=["no-capabilities", "no-client-info", "capabilities-not-object", "client-info-not-object"],
)
def test_initialize_without_capabilities_or_client_info_is_invalid_params(raw_peer, params):
    peer = raw_peer()
    check_error(LATEST, request(peer, 1, "initialize", params), -32602)
    # It did not count as the initialize: a proper one still works.
    assert (
        request(peer, 2, "initialize", initialize_params(LATEST))["result"]["protocolVersion"]
        == LATEST
    )


def test_client_refuses_an_unsupported_protocol_version_before_sending_anything(tmp_path):
    record = tmp_path / "received"
    with pytest.raises(ValueError, match="1999-01-01"):
        Client.stdio(
            [*RAW_SERVER, "silent-init", str(record)],
            protocol_version="1999-01-01",
            stderr="capture",
            timeout=WAIT,
            shutdown_timeout=WAIT,
        )
    # Nothing was written, and the server process that had been started was shut down (stdin closed).
    assert record.read_text().splitlines() == ["EOF"]


@pytest.mark.slow
def test_a_cancel_for_initialize_is_ignored(raw_peer):
    peer = raw_peer([*UNTESTED, "slow-init"])
    # The server holds its initialize result until roots/list_changed arrives, so the
    # cancel is certainly read while initialize is in flight.
    init = {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": initialize_params(LATEST),
    }
    cancel = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": "init", "reason": "x"},
    }
    release = {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}
    peer.send(b"".join(json.dumps(m).encode() + b"\n" for m in (init, cancel, release)))
    reply = peer.recv()
    assert reply["id"] == "init" and reply["result"]["protocolVersion"] == LATEST
    peer.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert "tools" in request(peer, 2, "tools/list")["result"]


@pytest.mark.slow
def test_server_may_ping_but_not_ask_the_client_before_initialized(raw_peer):
    peer = raw_peer(UNTESTED)
    params = {
        "protocolVersion": LATEST,
        "capabilities": {"roots": {"listChanged": True}},
        "clientInfo": {"name": "raw", "version": "0"},
    }
    assert request(peer, "init", "initialize", params)["result"]["protocolVersion"] == LATEST
    # No notifications/initialized yet. basic/lifecycle: the server "SHOULD NOT send requests
    # other than pings and logging before receiving the initialized notification".
    peer.send_json(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ping_client"}}
    )
    ping = peer.recv()
    assert ping["method"] == "ping" and "id" in ping, ping
    assert schema_errors(LATEST, "PingRequest", ping) == []
    peer.send_json({"jsonrpc": "2.0", "id": ping["id"], "result": {}})
    reply = peer.recv()
    assert reply["id"] == 1 and reply["result"]["content"] == [{"type": "text", "text": "pong {}"}]
    # request() checks that the next line is the answer: no roots/list was sent.
    text = request(peer, 2, "tools/call", {"name": "roots"})["result"]["content"][0]["text"]
    assert text.startswith("CapabilityError") and "notifications/initialized" in text
    # Once the client is ready, the same tool does ask.
    peer.send_json({"jsonrpc": "2.0", "method": "notifications/initialized"})
    peer.send_json({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "roots"}})
    ask = peer.recv()
    assert ask["method"] == "roots/list", ask
    peer.send_json(
        {"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": [{"uri": "file:///work"}]}}
    )
    reply = peer.recv()
    assert reply["id"] == 3 and json.loads(reply["result"]["content"][0]["text"]) == [
        "file:///work"
    ]


# -- spec_notes items ------------------------------------------------------------------------------

NOTES_SERVER = InMemory("notes_server")


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_server_info_website_url_only_from_2025_11_25(connect, wire, version):
    from servers.notes_server import WEBSITE

    client = connect(NOTES_SERVER, protocol_version=version)
    server_info = wire.received()[0]["result"]["serverInfo"]
    expected = {"name": "notes", "version": "1.0"}
    if version >= "2025-06-18":
        expected["title"] = "Notes server"
    if version >= "2025-11-25":
        expected["websiteUrl"] = WEBSITE
    assert server_info == expected
    assert client.server_info.website_url == expected.get("websiteUrl")
