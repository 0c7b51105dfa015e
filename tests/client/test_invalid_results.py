"""A server's result that does not have the shape of its type is an ``InvalidResult``, an
``MCPRefError`` naming the method and what is wrong in the wire's words; the connection goes on.

docs/first-client.md §The errors a client sees: "Every error mcp_ref raises is an
``mcp_ref.MCPRefError``".  The server is a raw stdio peer (tests/servers/malformed_results_server.py,
no mcp_ref) that sends whatever result a request names, in a real subprocess.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import WAIT

from mcp_ref import Client, InvalidResult, MCPRefError
from mcp_ref.client.invalid_results import invalid_result
from mcp_ref.types import UnknownContent

SERVER = str(Path(__file__).resolve().parents[1] / "servers" / "malformed_results_server.py")

pytestmark = pytest.mark.slow


def connect(era: str, *initialize: str) -> Client:
    return Client.stdio(
        [sys.executable, SERVER, era, *initialize], era=era, timeout=WAIT, stderr="discard"
    )


def still_serves(client: Client) -> None:
    """The connection and the session go on: the next request is answered."""
    assert client.call_tool("echo", {}).text == "ok"
    assert [tool.name for tool in client.list_tools()] == ["echo"]


def refused(call) -> InvalidResult:
    with pytest.raises(InvalidResult) as caught:
        call()
    assert isinstance(caught.value, MCPRefError) and isinstance(caught.value, ValueError)
    return caught.value


def text(result) -> str:
    return json.dumps(result)


CALLS = [
    # (what is sent back, the call that receives it, what the error says)
    (
        "content not an array",
        lambda c: c.call_tool("x", {"result": {"content": "abc"}}),
        "tools/call: the server's result does not have the shape of CallToolResult (2025-11-25): /content is a string, not an array",
    ),
    (
        "content an object",
        lambda c: c.call_tool("x", {"result": {"content": {"type": "text", "text": "a"}}}),
        "/content is an object, not an array",
    ),
    (
        "content block without its text",
        lambda c: c.call_tool("x", {"result": {"content": [{"type": "text"}]}}),
        '/content/0 has no "text"',
    ),
    (
        "isError a string: 'false' would read as true",
        lambda c: c.call_tool("x", {"result": {"content": [], "isError": "false"}}),
        "tools/call: the server's result does not have the shape of CallToolResult (2025-11-25): /isError is a string, not a boolean",
    ),
    (
        "a text block whose text is a number",
        lambda c: c.call_tool("x", {"result": {"content": [{"type": "text", "text": 5}]}}),
        "/content/0/text is a number, not a string",
    ),
    (
        "a text block's text null, and isError a number",
        lambda c: c.call_tool(
            "x", {"result": {"content": [{"type": "text", "text": None}], "isError": 0}}
        ),
        "/content/0/text is null, not a string; /isError is a number, not a boolean",
    ),
    (
        "an image's data a number",
        lambda c: c.call_tool(
            "x", {"result": {"content": [{"type": "image", "data": 5, "mimeType": "image/png"}]}}
        ),
        "tools/call: the server's result does not have the shape of CallToolResult (2025-11-25): /content/0/data is a number, not a string",
    ),
    (
        "an audio block's mimeType null",
        lambda c: c.call_tool(
            "x", {"result": {"content": [{"type": "audio", "data": "AA==", "mimeType": None}]}}
        ),
        "/content/0/mimeType is null, not a string",
    ),
    (
        "a resource link's uri an object and its name a boolean",
        lambda c: c.call_tool(
            "x", {"result": {"content": [{"type": "resource_link", "uri": {}, "name": True}]}}
        ),
        "/content/0/uri is an object, not a string; /content/0/name is a boolean, not a string",
    ),
    (
        "an embedded resource's text a number",
        lambda c: c.call_tool(
            "x",
            {"result": {"content": [{"type": "resource", "resource": {"uri": "a:b", "text": 1}}]}},
        ),
        "/content/0/resource/text is a number, not a string",
    ),
    (
        "an embedded resource's blob an array, and its uri null",
        lambda c: c.call_tool(
            "x",
            {"result": {"content": [{"type": "resource", "resource": {"uri": None, "blob": [1]}}]}},
        ),
        "/content/0/resource/uri is null, not a string; /content/0/resource/blob is an array, not a string",
    ),
    (
        "structuredContent an array, _meta a string",
        lambda c: c.call_tool(
            "x", {"result": {"content": [], "structuredContent": [1], "_meta": "secret-ish"}}
        ),
        "/_meta is a string, not an object; /structuredContent is an array, not an object",
    ),
    (
        "a text block's annotations of the wrong shape, and its _meta an array",
        lambda c: c.call_tool(
            "x",
            {
                "result": {
                    "content": [
                        {
                            "type": "text",
                            "text": "a",
                            "annotations": {"audience": "user", "priority": 2},
                            "_meta": [],
                        }
                    ]
                }
            },
        ),
        "/content/0/_meta is an array, not an object; /content/0/annotations/audience is a string, not an array; /content/0/annotations/priority is not between 0 and 1",
    ),
    (
        "tools not an array",
        lambda c: c.list_tools_page(text({"tools": "abc"})),
        "tools/list: the server's result does not have the shape of ListToolsResult (2025-11-25): /tools is a string, not an array",
    ),
    (
        "a tool that is not an object",
        lambda c: c.list_tools_page(text({"tools": [1]})),
        "/tools/0 is a number, not an object",
    ),
    (
        "a tool without a name: the JSON key, inputSchema's too",
        lambda c: c.list_tools_page(text({"tools": [{"name": "a", "inputSchema": {}}, {}]})),
        '/tools/1 has no "name"; /tools/1 has no "inputSchema"',
    ),
    (
        "prompts not an array",
        lambda c: c.list_prompts_page(text({"prompts": {}})),
        "prompts/list: the server's result does not have the shape of ListPromptsResult (2025-11-25): /prompts is an object, not an array",
    ),
    (
        "a resource without its uri",
        lambda c: c.list_resources_page(text({"resources": [{"name": "n"}]})),
        '/resources/0 has no "uri"',
    ),
    (
        "contents not an array",
        lambda c: c.read_resource("json:" + text({"contents": 7})),
        "resources/read: the server's result does not have the shape of ReadResourceResult (2025-11-25): /contents is a number, not an array",
    ),
    (
        "contents without their text",
        lambda c: c.read_resource("json:" + text({"contents": [{"uri": "a://b"}]})),
        '/contents/0 has no "text"',
    ),
    (
        "a message without content",
        lambda c: c.get_prompt("p", {"result": text({"messages": [{"role": "user"}]})}),
        'prompts/get: the server\'s result does not have the shape of GetPromptResult (2025-11-25): /messages/0 has no "content"',
    ),
    (
        "no completion",
        lambda c: c.complete(argument="a", value=text({}), prompt="p"),
        'completion/complete: the server\'s result does not have the shape of CompleteResult (2025-11-25): the result has no "completion"',
    ),
    (
        "a completion without values",
        lambda c: c.complete(argument="a", value=text({"completion": {"total": 1}}), prompt="p"),
        '/completion has no "values"',
    ),
]


@pytest.fixture(scope="module")
def client():
    with connect("handshake") as client:
        yield client


@pytest.mark.parametrize("what, call, said", CALLS, ids=[c[0] for c in CALLS])
def test_a_malformed_result_is_an_invalid_result_naming_the_method_and_the_key(
    client, what, call, said
):
    error = refused(lambda: call(client))
    assert said in str(error)
    still_serves(client)


def test_an_initialize_result_without_its_keys_is_an_invalid_result_out_of_connecting():
    bad = text({"protocolVersion": "2025-11-25"})
    with pytest.raises(InvalidResult) as caught:
        connect("handshake", bad)
    assert str(caught.value) == (
        "initialize: the server's result does not have the shape of InitializeResult (2025-11-25):"
        ' the result has no "capabilities"; the result has no "serverInfo"'
    )


def test_a_server_info_that_is_not_an_object_is_named_by_its_json_key():
    bad = text({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": "x"})
    with pytest.raises(MCPRefError, match="/serverInfo is a string, not an object"):
        connect("handshake", bad)


@pytest.mark.parametrize(
    "capabilities, kind", [([], "an array"), ("tools", "a string"), (1, "a number")]
)
def test_capabilities_that_are_not_an_object_are_an_invalid_result_out_of_connecting(
    capabilities, kind
):
    info = {"name": "s", "version": "1"}
    bad = text({"protocolVersion": "2025-11-25", "capabilities": capabilities, "serverInfo": info})
    with pytest.raises(InvalidResult) as caught:
        connect("handshake", bad)
    assert str(caught.value).endswith(f"(2025-11-25): /capabilities is {kind}, not an object")


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_a_capability_that_is_not_an_object_is_an_invalid_result_naming_it(era):
    # schema.json ServerCapabilities (every revision): each member it defines is an object.
    # "tools": true used to be read as one later: an AttributeError, no MCPRefError.
    info = {"name": "s", "version": "1"}
    first = (
        {"supportedVersions": ["2026-07-28"], "_meta": {"io.modelcontextprotocol/serverInfo": info}}
        if era == "modern"
        else {"protocolVersion": "2025-11-25", "serverInfo": info}
    )
    capabilities = {"tools": True, "resources": "yes", "logging": {}, "somethingNew": 1}
    with pytest.raises(InvalidResult) as caught:
        connect(era, text({**first, "capabilities": capabilities}))
    method, kind = (
        ("server/discover", "DiscoverResult")
        if era == "modern"
        else ("initialize", "InitializeResult")
    )
    assert str(caught.value) == (
        f"{method}: the server's result does not have the shape of {kind} (20"
        + ("26-07-28" if era == "modern" else "25-11-25")
        + "): /capabilities/tools is a boolean, not an object;"
        " /capabilities/resources is a string, not an object"
    )
    # a member the negotiated revision does not define is not read: it may be anything (tasks is
    # 2025-11-25's alone, extensions 2026-07-28's)
    other = "tasks" if era == "modern" else "extensions"
    lenient = {"tools": {}, "somethingNew": 1, other: True}
    with connect(era, text({**first, "capabilities": lenient})) as client:
        assert client.server_capabilities == lenient
        still_serves(client)


def test_capabilities_are_checked_by_the_revision_agreed_not_the_one_asked_for():
    # The client asks for 2025-11-25; the server answers 2025-06-18, whose ServerCapabilities has
    # no tasks member: "tasks": true is not read, and the client connects at 2025-06-18.
    info = {"name": "s", "version": "1"}
    answer = {
        "protocolVersion": "2025-06-18",
        "serverInfo": info,
        "capabilities": {"tools": {}, "tasks": True},
    }
    with connect("handshake", text(answer)) as client:
        assert client.protocol_version == "2025-06-18"
        still_serves(client)


def test_the_2026_era_reports_a_malformed_tool_result_the_same_way():
    with connect("modern") as client:
        assert client.era == "modern"
        error = refused(lambda: client.call_tool("x", {"result": {"content": 5}}))
        assert str(error).startswith("tools/call: the server's result does not have the shape")
        assert "(2026-07-28): /content is a number, not an array" in str(error)
        still_serves(client)


def test_a_result_the_walk_cannot_explain_is_described_by_the_builders_failure():
    error = invalid_result("no/such", {}, None, TypeError("what from_wire said"))
    assert str(error) == (
        "no/such: the server's result does not have the shape of its type: what from_wire said"
    )


def test_at_most_five_problems_are_named():
    error = invalid_result("tools/list", {"tools": [1] * 7}, "2025-11-25", TypeError())
    assert str(error).count("is a number, not an object") == 5
    assert str(error).endswith("(and 2 more)")


@pytest.mark.parametrize("block_type", [["text"], {"t": 1}, 5], ids=["array", "object", "number"])
def test_a_content_block_whose_type_is_not_a_string_is_an_unknown_block(client, block_type):
    """A ``type`` that names no block (not a string at all) is kept as :class:`UnknownContent`, as
    an unknown name is: the result is built, and nothing raises (a bare TypeError did)."""
    block = {"type": block_type, "text": "a"}
    result = client.call_tool("x", {"result": {"content": [block]}})
    assert isinstance(result.content[0], UnknownContent) and result.content[0].raw == block
    messages = text({"messages": [{"role": "user", "content": block}]})
    prompt = client.get_prompt("p", {"result": messages})
    assert isinstance(prompt.messages[0].content, UnknownContent)
    still_serves(client)


def test_a_well_formed_rich_result_with_unknown_keys_is_built(client):
    """Every kind of block, with annotations, ``_meta``, structured content and keys no revision
    defines: nothing refused (unknown keys stay in ``.raw``)."""
    annotations = {"audience": ["user"], "priority": 0.5, "lastModified": "2027-01-01T00:00:00Z"}
    blocks = [
        {"type": "text", "text": "t", "annotations": annotations, "_meta": {"k": 1}, "x": 1},
        {"type": "image", "data": "AA==", "mimeType": "image/png", "x": 1},
        {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "a:b", "name": "n", "size": 3, "icons": []},
        {"type": "resource", "resource": {"uri": "a:b", "blob": "AA==", "mimeType": "x/y"}},
        {"type": "resource", "resource": {"uri": "a:b", "text": "t", "_meta": {}}},
        {"type": "something_new", "data": 5},
    ]
    got = {"content": blocks, "structuredContent": {"a": 1}, "_meta": {"m": 1}, "extra": 1}
    result = client.call_tool("x", {"result": got})
    assert [type(block).__name__ for block in result.content] == [
        "TextContent",
        "ImageContent",
        "AudioContent",
        "ResourceLink",
        "EmbeddedResource",
        "EmbeddedResource",
        "UnknownContent",
    ]
    assert result.raw == got


def test_each_revision_checks_the_blocks_and_keys_it_defines():
    """2025-03-26 defines no ``resource_link`` block, no ``structuredContent`` and no block
    ``_meta``: there they are unknown, kept as they came; its ``audio`` is checked.  2026-07-28's
    ``structuredContent`` may be any JSON value."""
    old = text(
        {
            "protocolVersion": "2025-03-26",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "s", "version": "1"},
        }
    )
    with connect("handshake", old) as client:
        assert client.protocol_version == "2025-03-26"
        link = {"type": "resource_link", "uri": 5, "name": None}
        loose = {"content": [link], "structuredContent": [1], "_meta": {}}
        assert client.call_tool("x", {"result": loose}).raw == loose
        block = {"type": "text", "text": "a", "_meta": 5}
        assert client.call_tool("x", {"result": {"content": [block]}}).text == "a"
        audio = {"type": "audio", "data": 5, "mimeType": "audio/wav"}
        error = refused(lambda: client.call_tool("x", {"result": {"content": [audio]}}))
        assert str(error).endswith("(2025-03-26): /content/0/data is a number, not a string")
        still_serves(client)
    with connect("modern") as client:
        assert client.call_tool("x", {"result": {"content": [], "structuredContent": [1]}})
        error = refused(lambda: client.call_tool("x", {"result": {"content": [], "_meta": 1}}))
        assert str(error).endswith("(2026-07-28): /_meta is a number, not an object")
        still_serves(client)


def test_a_refusal_echoes_no_value_the_server_sent(client):
    """The message names where and which JSON type, never what the server put there."""
    secret = "sk-live-0123456789"
    block = {"type": "image", "data": {"token": secret}, "mimeType": [secret]}
    error = refused(lambda: client.call_tool("x", {"result": {"content": [block]}}))
    assert secret not in str(error)
    assert "/content/0/data is an object, not a string" in str(error)
