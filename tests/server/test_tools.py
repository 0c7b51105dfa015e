"""Tools over real stdio: listing and pagination, schemas from hints, validation, errors,
structured output, annotations and list_changed — at every protocol revision where they differ.

Every message is validated against the negotiated revision's official schema.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import functools
import json
import sys
from typing import Any, Literal, Optional

import pytest
from conftest import SERVERS, InMemory, client_pool
from pydantic import BaseModel, ConfigDict, computed_field
from pydantic.alias_generators import to_camel
from servers.untested_server import AUDIO_DATA, ICONS

from mcp_ref import (
    SUPPORTED_VERSIONS,
    Audio,
    AudioContent,
    CallToolResult,
    Client,
    Context,
    ElicitResult,
    Image,
    ImageContent,
    InvalidParams,
    McpError,
    ResourceLink,
    Server,
    TextContent,
    Tool,
)

TOOLS = [sys.executable, str(SERVERS / "feature_tools.py")]
PAGED = [sys.executable, str(SERVERS / "feature_tools.py"), "paged"]
DRAFT7 = "http://json-schema.org/draft-07/schema#"
LATEST, OLDEST = SUPPORTED_VERSIONS[0], SUPPORTED_VERSIONS[-1]

#: A server without task-capable tools (the demo has one: it declares the 2025-11-25 tasks).
TASKLESS = InMemory("modern_server")


pool = client_pool(TOOLS)  # module-scoped fixtures; each test's messages must be schema-valid
paged_pool = client_pool(PAGED)


def tool_named(client, name: str) -> Tool:
    return next(t for t in client.list_tools() if t.name == name)


def rejected(client, name: str, arguments: dict) -> bool:
    """True when the server refused ``arguments`` before running the tool.

    2025-11-25 (SEP-1303) reports that as an isError result; older revisions as -32602.
    """
    try:
        result = client.call_tool(name, arguments)
    except InvalidParams as exc:
        assert client.protocol_version < "2025-11-25", (
            "2025-11-25 must report bad arguments as a tool error"
        )
        assert exc.code == -32602
        return True
    if result.is_error:
        assert client.protocol_version >= "2025-11-25", (
            "before 2025-11-25 bad arguments are a -32602 error"
        )
        return True
    return False


# -- listing and pagination ---------------------------------------------------------------


def test_list_tools_follows_every_page(paged_pool):
    peer = paged_pool.peer()
    before = len(peer.wire.sent("tools/list"))
    tools = peer.client.list_tools()
    assert [t.name for t in tools] == ["t1", "t2", "t3", "t4", "t5"]
    assert all(isinstance(t, Tool) and t.description == f"Tool number {t.name[1]}" for t in tools)
    assert len(peer.wire.sent("tools/list")) - before == 3  # pages of 2, 2 and 1


def test_list_tools_page_gives_two_and_a_cursor(paged_pool):
    client = paged_pool.client()
    first = client.list_tools_page()
    assert [t.name for t in first.items] == ["t1", "t2"]
    assert isinstance(first.next_cursor, str) and first.next_cursor
    second = client.list_tools_page(first.next_cursor)
    assert [t.name for t in second.items] == ["t3", "t4"]
    last = client.list_tools_page(second.next_cursor)
    assert [t.name for t in last.items] == ["t5"]
    assert last.next_cursor is None and "nextCursor" not in last.raw


def _tampered(cursor: str) -> str:
    """The same cursor with its offset changed but its signature kept."""
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    assert raw.startswith(b"2:"), raw
    return base64.urlsafe_b64encode(b"0" + raw[1:]).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "forge",
    [
        lambda good: "not-a-cursor",
        lambda good: "",
        _tampered,
        lambda good: good[:-3],
        lambda good: base64.urlsafe_b64encode(b"2:tools").decode(),
    ],
    ids=["garbage", "empty", "tampered-offset", "truncated", "unsigned"],
)
def test_forged_cursor_is_invalid_params(paged_pool, forge):
    client = paged_pool.client()
    good = client.list_tools_page().next_cursor
    with pytest.raises(InvalidParams) as caught:
        client.list_tools_page(forge(good))
    assert caught.value.code == -32602


def test_tools_cursor_is_refused_by_prompts_list(paged_pool):
    client = paged_pool.client()
    cursor = client.list_tools_page().next_cursor
    assert [p.name for p in client.list_prompts()] == ["p1", "p2", "p3", "p4", "p5"]
    assert [
        p.name for p in client.list_prompts_page(client.list_prompts_page().next_cursor).items
    ] == ["p3", "p4"]
    with pytest.raises(InvalidParams) as caught:
        client.list_prompts_page(cursor)
    assert caught.value.code == -32602


# -- input schemas ------------------------------------------------------------------------


def test_input_schema_is_derived_from_hints_and_docstring(pool):
    tool = tool_named(pool.client(), "hints")
    assert tool.description == "Report the Python types the arguments arrived as."
    assert tool.input_schema == {
        "type": "object",
        "properties": {
            "i": {"type": "integer", "description": "An integer."},
            "f": {"type": "number", "description": "A float."},
            "s": {"type": "string", "description": "A string."},
            "b": {"type": "boolean", "description": "A boolean."},
            "items": {
                "type": "array",
                "items": {"type": "integer"},
                "description": "Some integers.",
            },
            "mapping": {
                "type": "object",
                "additionalProperties": {"type": "number"},
                "description": "Names to numbers.",
            },
            "color": {"type": "string", "enum": ["red", "green"], "description": "A colour."},
            "point": {
                "type": "object",
                "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
                "required": ["x"],
                "description": "A point.",
            },
            "mode": {
                "type": "string",
                "enum": ["fast", "slow"],
                "description": "How fast.",
                "default": "fast",
            },
            "maybe": {
                "type": ["string", "null"],
                "description": "Perhaps a string.",
                "default": None,
            },
        },
        "required": ["i", "f", "s", "b", "items", "mapping", "color", "point"],
    }


def test_explicit_schema_and_description_are_listed_and_enforced(pool):
    client = pool.client()
    tool = tool_named(client, "explicit")
    assert tool.description == "A tool with a hand-written schema."
    assert tool.input_schema == {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 10}},
        "required": ["n"],
    }
    assert client.call_tool("explicit", {"n": 12}).content[0].text == "n=12"
    assert rejected(client, "explicit", {"n": 9})  # the explicit "minimum", which no hint gave


def test_enum_and_dataclass_arguments_arrive_as_python_objects(pool):
    client = pool.client()
    result = client.call_tool(
        "hints",
        {
            "i": 3,
            "f": 2.5,
            "s": "x",
            "b": True,
            "items": [1, 2],
            "mapping": {"k": 1.5},
            "color": "green",
            "point": {"x": 3},
        },
    )
    assert not result.is_error
    assert json.loads(result.content[0].text) == {
        "i": "int",
        "f": "float",
        "s": "str",
        "b": "bool",
        "items": ["int", "int"],
        "mapping": "dict",
        "color": "Color.GREEN",
        "point": "Point(3,0)",
        "mode": "fast",
        "maybe": None,
    }


# -- validation and errors ------------------------------------------------------------------


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
@pytest.mark.parametrize(
    "arguments",
    [{"n": "seven"}, {}, {"n": 1, "label": 5}],
    ids=["wrong-type", "missing", "wrong-optional"],
)
def test_invalid_arguments_never_reach_the_handler(pool, version, arguments):
    client = pool.client(version)
    count = int(client.call_tool("recorded").content[0].text)
    if version >= "2025-11-25":
        result = client.call_tool("record", arguments)
        assert result.is_error is True
        assert "record" in result.content[0].text  # the model is told which call was wrong
    else:
        with pytest.raises(InvalidParams) as caught:
            client.call_tool("record", arguments)
        assert caught.value.code == -32602
    assert int(client.call_tool("recorded").content[0].text) == count
    assert client.call_tool("record", {"n": 1}).content[0].text == "recorded"
    assert int(client.call_tool("recorded").content[0].text) == count + 1


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_unknown_tool_is_invalid_params(pool, version):
    with pytest.raises(InvalidParams) as caught:
        pool.client(version).call_tool("no_such_tool", {})
    assert caught.value.code == -32602


def test_internal_exception_becomes_an_opaque_tool_error(pool):
    peer = pool.peer()
    mark = peer.stderr.mark()
    result = peer.client.call_tool("crash")
    assert result.is_error is True
    wire_text = json.dumps(peer.wire.received()[-1])
    for leak in (
        "secret-detail-7f3a",
        "/srv/private",
        "Traceback",
        "RuntimeError",
        "feature_tools.py",
        'File "',
    ):
        assert leak not in result.text and leak not in wire_text
    # The details went to the server's log (its stderr) instead.
    peer.stderr.wait_until(
        lambda lines: any("secret-detail-7f3a" in line for line in lines), since=mark
    )


def test_tool_error_message_is_shown(pool):
    result = pool.client().call_tool("refuse")
    assert result.is_error is True
    assert [c.text for c in result.content] == ["The moon is not available today"]


# -- structured output ----------------------------------------------------------------------

REPORT_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "temperature": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["city", "temperature", "tags"],
}


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_output_schema_and_structured_content(pool, version):
    client = pool.client(version)
    tool = tool_named(client, "report")
    result = client.call_tool("report", {"city": "Oslo"})
    expected = {"city": "Oslo", "temperature": 21.5, "tags": ["sunny", "calm"]}
    assert not result.is_error
    assert json.loads(result.content[0].text) == expected  # unstructured text, for older clients
    if version >= "2025-06-18":
        assert tool.output_schema == REPORT_SCHEMA
        assert result.structured_content == expected
    else:
        assert tool.output_schema is None and "outputSchema" not in tool.raw
        assert result.structured_content is None and "structuredContent" not in result.raw


@pytest.mark.slow
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_output_breaking_its_schema_is_a_tool_error(pool, version):
    result = pool.client(version).call_tool("broken_output")
    assert result.is_error is True
    assert result.structured_content is None
    assert "many" not in json.dumps(result.raw)


# -- annotations, list_changed, dialects ---------------------------------------------------------


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_annotations_are_listed_from_2025_03_26(pool, version):
    tool = tool_named(pool.client(version), "annotated")
    if version >= "2025-03-26":
        assert tool.annotations == {
            "title": "Careful",
            "readOnlyHint": True,
            "destructiveHint": False,
            "openWorldHint": False,
        }
    else:
        assert tool.annotations is None and "annotations" not in tool.raw


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_list_changed_after_add_and_remove(pool, version):
    peer = pool.peer(version)
    client = peer.client
    name = "gadget_" + version.replace("-", "_")
    mark = peer.changes.mark()
    notes = len(peer.wire.received("notifications/tools/list_changed"))

    assert not client.call_tool("mutate", {"action": "add", "name": name}).is_error
    peer.changes.wait_until(lambda kinds: kinds == ["tools"], since=mark)
    assert name in [t.name for t in client.list_tools()]
    assert client.call_tool(name).content[0].text == f"I am {name}"

    assert not client.call_tool("mutate", {"action": "remove", "name": name}).is_error
    peer.changes.wait_until(lambda kinds: kinds == ["tools", "tools"], since=mark)
    assert name not in [t.name for t in client.list_tools()]
    with pytest.raises(InvalidParams):
        client.call_tool(name)
    assert len(peer.wire.received("notifications/tools/list_changed")) - notes == 2


@pytest.mark.parametrize("version", [LATEST, "2025-06-18"])
def test_declared_draft07_schema_is_validated_as_draft07(pool, version):
    client = pool.client(version)
    assert tool_named(client, "draft7").input_schema["$schema"] == DRAFT7
    # draft-07's "dependencies" applies; 2020-12's "dependentRequired" does not.
    assert rejected(client, "draft7", {"a": 1})
    assert not rejected(client, "draft7", {"a": 1, "b": 2})
    assert not rejected(client, "draft7", {"c": 1})
    # Without $schema the same keywords are read as 2020-12: the other way round.
    assert not rejected(client, "default_dialect", {"a": 1})
    assert rejected(client, "default_dialect", {"c": 1})
    assert not rejected(client, "default_dialect", {"c": 1, "d": 2})


@pytest.mark.parametrize(
    "schema",
    [
        {"$schema": "https://example.com/my-own-dialect", "type": "object"},
        {"type": "object", "properties": {"a": {"type": "no-such-type"}}},
        # plain-looking: refused by the meta-schema all the same (the quick path skips no check)
        {"type": "object", "properties": {"a": {"type": None}}},
        {"type": "object", "properties": {"a": {"type": "string", "title": 5}}},
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "a"]},
    ],
    ids=["unsupported-dialect", "invalid-schema", "type-null", "title-number", "required-twice"],
)
def test_a_schema_that_cannot_be_validated_is_refused_at_registration(schema):
    # 2025-11-25 basic §JSON Schema Usage: unsupported dialects MUST be handled "by returning an
    # appropriate error" — here, before the tool is ever listed.
    import jsonschema

    from mcp_ref import Server

    def tool() -> str:
        return "x"

    server = Server("dialects")
    with pytest.raises((ValueError, jsonschema.SchemaError)) as caught:
        server.add_tool(tool, input_schema=schema)
    if "$schema" in schema:
        assert "unsupported JSON Schema dialect" in str(caught.value)
    assert server.capabilities().get("tools") is None


def test_results_are_dataclasses(pool):
    result = pool.client().call_tool("refuse")
    assert isinstance(result, CallToolResult)
    assert isinstance(result.content[0], TextContent)
    assert result.raw["isError"] is True and result.raw["content"][0]["type"] == "text"


# -- behaviour spec_notes listed as untested ------------------------------------------------------

UNTESTED = [sys.executable, str(SERVERS / "untested_server.py")]


@pytest.mark.slow
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_audio_and_resource_links_in_results_follow_the_revision(connect, wire, version):
    # The wire fixture checks every result against this revision's schema: an audio block at
    # 2024-11-05, or a resource_link before 2025-06-18, would fail it.
    client = connect(UNTESTED, protocol_version=version)
    (audio,) = client.call_tool("audio").content
    (link,) = client.call_tool("link").content
    if version >= "2025-03-26":
        assert isinstance(audio, AudioContent) and (audio.data, audio.mime_type) == (
            AUDIO_DATA,
            "audio/wav",
        )
    else:
        assert isinstance(audio, TextContent)
        assert (
            audio.text
            == f"[audio content (audio/wav) cannot be sent with protocol version {version}]"
        )
    if version >= "2025-06-18":
        assert isinstance(link, ResourceLink)
        assert (link.uri, link.name, link.mime_type) == (
            "file:///srv/notes.txt",
            "notes",
            "text/plain",
        )
    else:
        assert (
            isinstance(link, TextContent) and link.text == "Resource notes: file:///srv/notes.txt"
        )


@pytest.mark.slow
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_tool_icons_are_listed_only_from_2025_11_25(connect, version):
    tool = tool_named(connect(UNTESTED, protocol_version=version), "iconic")
    if version >= "2025-11-25":
        assert tool.icons == ICONS
    else:
        assert tool.icons is None and "icons" not in tool.raw
        assert tool.description == "A tool with icons."  # the rest of the listing is there


@pytest.mark.slow
def test_mcp_error_raised_in_a_tool_is_the_json_rpc_error(connect, wire):
    client = connect(UNTESTED)
    with pytest.raises(McpError) as caught:
        client.call_tool("fail_custom")
    assert (caught.value.code, caught.value.message, caught.value.data) == (
        -32001,
        "custom failure",
        {"why": "testing"},
    )
    call_id = wire.sent("tools/call")[-1]["id"]
    (answer,) = [m for m in wire.received() if m.get("id") == call_id]
    assert answer == {
        "jsonrpc": "2.0",
        "id": call_id,
        "error": {"code": -32001, "message": "custom failure", "data": {"why": "testing"}},
    }


# -- tasks (2025-11-25) are not implemented: what a peer that uses them gets --------------------------


def test_a_task_param_in_tools_call_is_ignored(connect, wire):
    # basic/utilities/tasks §Task Support and Handling: a receiver that did not declare task support
    # "MUST process the request normally, ignoring the task field".  (A server with a task-capable
    # tool, as the demo, declares it: tests/extensions/test_tasks_2025.py.)
    client = connect(TASKLESS, protocol_version="2025-11-25")
    assert "tasks" not in client.server_capabilities
    params = {"name": "echo", "arguments": {"text": "hi"}, "task": {"ttl": 1000}}
    assert client.request("tools/call", params) == {
        "content": [{"type": "text", "text": "hi"}]
    }  # no CreateTaskResult
    assert wire.sent("tools/call")[0]["params"]["task"] == {"ttl": 1000}


@pytest.mark.slow
@pytest.mark.parametrize(
    "method, params",
    [
        ("tasks/get", {"taskId": "t-1"}),
        ("tasks/result", {"taskId": "t-1"}),
        ("tasks/list", {}),
        ("tasks/cancel", {"taskId": "t-1"}),
    ],
)
def test_tasks_methods_are_method_not_found_by_the_server(connect, wire, method, params):
    client = connect(TASKLESS, protocol_version="2025-11-25")
    with pytest.raises(McpError) as caught:
        client.request(method, params)
    assert caught.value.code == -32601
    client.ping()  # the connection goes on


# -- checks at registration --------------------------------------------------------------------------


def test_tool_names_outside_the_2025_11_25_guidance_are_warned_about():
    import warnings

    from mcp_ref import Server

    def tool() -> str:
        return "x"

    server = Server("names")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in ("ok", "a.b-c_1", "x" * 128):
            server.add_tool(tool, name=name)
    for name in ("bad name, with spaces", "x" * 129, "naïve"):
        with pytest.warns(UserWarning, match="guidance"):
            server.add_tool(tool, name=name)
    assert server.get_tool(name) is not None  # a warning, not a refusal


@pytest.mark.parametrize("option", ["input_schema", "output_schema"])
@pytest.mark.parametrize("schema", [{"type": "string"}, {"properties": {}}, "object"])
def test_an_explicit_schema_must_be_an_object_schema(option, schema):
    from mcp_ref import Server

    def tool() -> dict:
        return {}

    server = Server("schemas")
    with pytest.raises(ValueError, match="must be a JSON Schema object"):
        server.add_tool(tool, **{option: schema})
    assert server.capabilities().get("tools") is None


# -- issue 8: what a user of FastMCP expects ---------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(16)


def habits_server():
    server = Server("habits")

    @server.tool
    def bare(x: int) -> str:
        """Registered without parentheses."""
        return f"bare {x}"

    @server.tool
    async def later(x: int) -> int:
        """An async def: run to completion on the handler thread."""
        import asyncio

        await asyncio.sleep(0)
        return x * 2

    @server.tool
    def numbers() -> list[int]:
        """A list of numbers: structured as {"result": [...]}."""
        return [1, 2, 3]

    @server.tool
    def picture() -> ImageContent:
        """An image: content, never a structured result."""
        return Image(data=PNG)

    @server.tool
    def sound() -> Audio:
        """Audio from bytes, its format told by its first bytes."""
        return Audio(data=WAV)

    @server.tool
    def raw_png() -> bytes:
        """bytes that are a PNG: an image block."""
        return PNG

    @server.tool
    def raw_other() -> bytes:
        """bytes of no known format: an embedded blob, never text full of U+FFFD."""
        return b"\x00\xff\xfe"

    @server.tool
    def mixed() -> list:
        """A string and an image: two blocks."""
        return ["look:", Image(data=PNG, format="png")]

    @server.prompt
    def bare_prompt(topic: str) -> str:
        """A prompt registered without parentheses."""
        return f"talk about {topic}"

    return server


@pytest.fixture
def habits():
    from conftest import WireChecker

    checker = WireChecker()
    with Client.in_memory(habits_server(), trace=checker) as client:
        yield client
    assert not checker.errors, checker.errors


def test_decorators_work_without_parentheses(habits):
    assert habits.call_tool("bare", {"x": 1}).content[0].text == "bare 1"
    assert (
        habits.get_prompt("bare_prompt", {"topic": "tea"}).messages[0].content.text
        == "talk about tea"
    )


def test_an_async_tool_runs_to_completion(habits):
    result = habits.call_tool("later", {"x": 21})
    assert result.structured_content == {"result": 42} and result.content[0].text == "42"


@pytest.mark.slow
def test_non_object_returns_are_wrapped_as_the_sdk_does(habits):
    tools = {t.name: t for t in habits.list_tools()}
    assert tools["numbers"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
        "required": ["result"],
    }
    assert habits.call_tool("numbers").structured_content == {"result": [1, 2, 3]}
    assert tools["bare"].output_schema is None  # str: text content says it all


@pytest.mark.slow
def test_media_returns_are_content_not_structured_output(habits):
    tools = {t.name: t for t in habits.list_tools()}
    for name in ("picture", "sound", "raw_png", "raw_other", "mixed"):
        assert tools[name].output_schema is None, name
    picture = habits.call_tool("picture")
    assert picture.structured_content is None
    assert (
        picture.content[0].mime_type == "image/png"
        and base64.b64decode(picture.content[0].data) == PNG
    )
    assert habits.call_tool("sound").content[0].mime_type == "audio/wav"
    assert habits.call_tool("raw_png").content[0].mime_type == "image/png"
    blob = habits.call_tool("raw_other").content[0]
    assert blob.type == "resource" and base64.b64decode(blob.resource.blob) == b"\x00\xff\xfe"
    mixed = habits.call_tool("mixed").content
    assert [block.type for block in mixed] == ["text", "image"] and mixed[0].text == "look:"


def test_media_helpers_read_files_and_refuse_what_they_cannot_tell(tmp_path):
    (tmp_path / "chart.png").write_bytes(PNG)
    assert Image(tmp_path / "chart.png").mime_type == "image/png"
    with pytest.raises(ValueError, match="format"):
        Image(data=b"\x00\x01")
    with pytest.raises(ValueError, match="not an image"):
        Image(data=WAV)
    with pytest.raises(ValueError, match="path or data"):
        Image()


class Mood(enum.Enum):
    HAPPY = "happy"
    TIRED = "tired"


@dataclasses.dataclass
class Person:
    name: str
    mood: Mood = Mood.HAPPY


@pytest.mark.slow
def test_elicit_with_a_dataclass_gives_an_instance_and_read_resource_reads_our_own():
    server = Server("context-habits")

    @server.resource("notes://today")
    def today() -> str:
        return "rain"

    @server.tool
    def ask(ctx: Context) -> str:
        """Ask who is there, and look at today's note."""
        answer = ctx.elicit("Who are you?", schema=Person)
        note = ctx.read_resource("notes://today")[0].text
        return f"{type(answer.data).__name__} {answer.data.name} {answer.data.mood.name} {note}"

    asked = []

    def handler(params):
        asked.append(params.requested_schema)
        return ElicitResult(action="accept", content={"name": "Ada", "mood": "tired"})

    with Client.in_memory(server, elicitation_handler=handler) as client:
        assert client.call_tool("ask").content[0].text == "Person Ada TIRED rain"
    assert asked[0]["properties"]["mood"] == {
        "type": "string",
        "enum": ["happy", "tired"],
        "default": "happy",
    }
    assert "data" not in ElicitResult(action="accept", content={}, data=1).to_wire()  # never sent


@dataclasses.dataclass
class Signup:
    name: str
    age: int | None
    nickname: str | None = None
    size: Literal["S", "M"] | None = "M"


def test_elicit_with_optional_fields_asks_each_as_its_type_not_required():
    """2025-11-25 client/elicitation §Requested Schema: "flat objects with primitive properties
    only", a PrimitiveSchemaDefinition having one ``type``: an Optional field is sent as its type
    (no ``"null"``, no default of null), not required.  Left out, it is None when it has no
    default, else its default.  A tool's inputSchema keeps ``[T, "null"]`` (any JSON Schema is
    allowed there)."""
    server = Server("optional")

    @server.tool
    def ask(ctx: Context) -> str:
        """Ask for a signup."""
        return repr(ctx.elicit("Sign up", schema=Signup).data)

    @server.tool
    def take(nickname: str | None = None) -> str:
        """Take a nickname."""
        return repr(nickname)

    asked, answers = [], iter([{"name": "Ada"}, {"name": "Ada", "age": 36, "size": "S"}])

    def handler(params):
        asked.append(params.requested_schema)
        return ElicitResult(action="accept", content=next(answers))

    with Client.in_memory(server, elicitation_handler=handler) as client:
        assert (
            client.call_tool("ask").text == "Signup(name='Ada', age=None, nickname=None, size='M')"
        )
        assert client.call_tool("ask").text == "Signup(name='Ada', age=36, nickname=None, size='S')"
        taken = tool_named(client, "take").input_schema["properties"]["nickname"]
    assert asked[0] == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "nickname": {"type": "string"},
            "size": {"type": "string", "enum": ["S", "M"], "default": "M"},
        },
        "required": ["name"],
    }
    assert taken == {"type": ["string", "null"], "default": None}


@dataclasses.dataclass
class Order:
    item: str
    size: Literal["S", "M", None]
    color: Optional[Literal["red", "blue", None]] = None  # noqa: UP045 - the form users write
    count: Literal[1, 2, None] = 1


def test_elicit_with_a_literal_holding_none_asks_its_other_values_not_required():
    """2025-11-25 client/elicitation §Requested Schema: an EnumSchema is ``"type": "string"`` with
    string values.  ``Literal["S", "M", None]`` is Optional: sent as its other values, with their
    type, not required, no default of null; left out, it is None (or its default).  It used to be
    sent as ``{"enum": ["S", "M", null]}``, no type, required."""
    server = Server("literal")

    @server.tool
    def ask(ctx: Context) -> str:
        """Ask for an order."""
        return repr(ctx.elicit("Order", schema=Order).data)

    asked, answers = [], iter([{"item": "tea"}, {"item": "tea", "size": "S", "color": "red"}])

    def handler(params):
        asked.append(params.requested_schema)
        return ElicitResult(action="accept", content=next(answers))

    with Client.in_memory(server, elicitation_handler=handler) as client:
        assert client.call_tool("ask").text == "Order(item='tea', size=None, color=None, count=1)"
        assert client.call_tool("ask").text == "Order(item='tea', size='S', color='red', count=1)"
    assert asked[0] == {
        "type": "object",
        "properties": {
            "item": {"type": "string"},
            "size": {"type": "string", "enum": ["S", "M"]},
            "color": {"type": "string", "enum": ["red", "blue"]},
            "count": {"type": "integer", "enum": [1, 2], "default": 1},
        },
        "required": ["item"],
    }


@pytest.mark.slow
def test_validation_messages_speak_json_not_python():
    server = Server("strict")

    @server.tool
    def add(a: float, b: float = 0, mode: Literal["fast", "exact"] = "fast") -> float:
        """Add."""
        return a + b

    with Client.in_memory(server) as client:

        def message(arguments):
            result = client.call_tool("add", arguments)
            assert result.is_error
            return result.content[0].text

        assert message({"a": "x"}).endswith('a: "x" is not of type "number"')
        assert message({"a": True}).endswith('a: true is not of type "number"')
        assert message({"a": None}).endswith('a: null is not of type "number"')
        assert message({"b": 1}).endswith('"a" is a required property')
        assert message({"a": 1, "mode": "slow"}).endswith(
            'mode: "slow" is not one of ["fast", "exact"]'
        )


class Labels(BaseModel):
    """A pydantic model with a set field (its schema has uniqueItems)."""

    names: set[str]


def test_a_set_parameter_refuses_repeated_items_clearly_wherever_uniqueitems_is():
    """uniqueItems stays in the published schema (it is true of a set) and is checked in one pass
    over the items, in a set's schema, a pydantic model's or a schema the tool gives."""
    server = Server("sets")

    @server.tool
    def count(tags: set[str], ids: frozenset[int | str] = frozenset()) -> int:
        """Count distinct tags."""
        return len(tags) + len(ids)

    @server.tool
    def label(labels: Labels) -> int:
        """Count labels."""
        return len(labels.names)

    given = {
        "type": "object",
        "properties": {"x": {"anyOf": [{"type": "array", "uniqueItems": True}, {"type": "null"}]}},
    }

    @server.tool(input_schema=given)
    def raw(x: Any = None) -> str:
        """Take anything."""
        return "ok"

    with Client.in_memory(server) as client:
        schema = tool_named(client, "count").input_schema["properties"]["tags"]
        assert schema == {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
        assert client.call_tool("count", {"tags": ["a", "b"], "ids": [1, "1"]}).text == "4"

        def message(name, arguments):
            result = client.call_tool(name, arguments)
            assert result.is_error
            return result.text

        assert message("count", {"tags": ["a", "b", "a"]}) == (
            "Invalid arguments for tool count: "
            'tags: items 0 and 2 are equal ("a"): uniqueItems requires distinct items'
        )
        assert message("count", {"tags": [], "ids": [1, "2", 1.0]}).endswith(
            "ids: items 0 and 2 are equal (1.0): uniqueItems requires distinct items"
        )
        assert message("label", {"labels": {"names": ["x", "x"]}}).endswith(
            'labels/names: items 0 and 1 are equal ("x"): uniqueItems requires distinct items'
        )
        assert "uniqueItems" in message("raw", {"x": [{"a": 1, "b": 2}, {"b": 2, "a": 1}]})


class Account(BaseModel):
    """A pydantic model speaking camelCase JSON, with a computed field."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    user_name: str
    is_admin: bool = False

    @computed_field  # type: ignore[prop-decorator]
    @property
    def display(self) -> str:
        """What a screen shows."""
        return self.user_name.title()


def test_a_pydantic_model_with_aliases_passes_its_own_output_check():
    """The output schema is the model's serialization schema (aliases, computed fields) and the
    structured result is what it describes: ``model_dump(mode="json", by_alias=True)``; arguments
    are still taken by alias (the validation schema) and made into the model."""
    server = Server("aliases")

    @server.tool
    def whoami() -> Account:
        """The current account."""
        return Account(user_name="ada")

    @server.tool
    def accounts() -> list[Account]:
        """Every account."""
        return [Account(user_name="ada", is_admin=True)]

    @server.tool
    def echo(account: Account) -> str:
        """The account's name."""
        return f"{account.user_name} {account.is_admin}"

    with Client.in_memory(server) as client:
        result = client.call_tool("whoami", {})
        assert not result.is_error, result.text
        assert result.structured_content == {"userName": "ada", "isAdmin": False, "display": "Ada"}
        listed = tool_named(client, "whoami").output_schema
        assert set(listed["properties"]) == {"userName", "isAdmin", "display"}
        result = client.call_tool("accounts", {})
        assert not result.is_error, result.text
        assert result.structured_content == {
            "result": [{"userName": "ada", "isAdmin": True, "display": "Ada"}]
        }
        schema = tool_named(client, "echo").input_schema["properties"]["account"]
        assert set(schema["properties"]) == {"userName", "isAdmin"}
        assert client.call_tool("echo", {"account": {"userName": "bo"}}).text == "bo False"


def test_a_dict_is_a_result_the_tool_shaped_only_when_it_has_that_shape_in_every_part():
    """A tool's dict with a "content" list is sent as its CallToolResult only when the list holds
    content blocks and isError, structuredContent and _meta have their kinds; any other dict is
    the tool's data, sent as JSON text like any value."""
    server = Server("shaped")
    returns = {
        "article": {"title": "Notes", "content": ["First.", "Second."]},
        "flagged": {"content": [{"type": "text", "text": "x"}], "isError": "no"},
        "structured": {"content": [], "structuredContent": 5},
        "unknown_block": {"content": [{"type": "video", "url": "v"}]},
        "text_not_string": {"content": [{"type": "text", "text": 5}]},
        "image_without_type": {"content": [{"type": "image", "data": "AA=="}]},
        # an embedded resource's contents: a uri and a text or a blob, strings
        "resource_empty": {"content": [{"type": "resource", "resource": {}}]},
        "resource_without_text": {"content": [{"type": "resource", "resource": {"uri": "a:b"}}]},
        "resource_text_not_string": {
            "content": [{"type": "resource", "resource": {"uri": "a:b", "text": 5}}]
        },
        "resource_uri_not_string": {
            "content": [{"type": "resource", "resource": {"uri": 5, "blob": "AA=="}}]
        },
        # optional keys of their JSON type where present: mimeType a string, _meta and
        # annotations objects (in a block and in a resource's contents alike)
        "resource_mime_type_not_string": {
            "content": [
                {"type": "resource", "resource": {"uri": "a:b", "text": "t", "mimeType": 5}}
            ]
        },
        "resource_meta_not_object": {
            "content": [
                {"type": "resource", "resource": {"uri": "a:b", "blob": "AA==", "_meta": 1}}
            ]
        },
        "text_annotations_not_object": {
            "content": [{"type": "text", "text": "t", "annotations": [1]}]
        },
        "link_mime_type_not_string": {
            "content": [{"type": "resource_link", "uri": "a:b", "name": "a", "mimeType": False}]
        },
        "shaped": {
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "AA==", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "file:///a", "name": "a"},
                {"type": "resource", "resource": {"uri": "file:///a", "text": "a"}},
                {
                    "type": "resource",
                    "resource": {
                        "uri": "file:///b",
                        "blob": "AA==",
                        "mimeType": "x/y",
                        "_meta": {},
                    },
                    "annotations": {"priority": 1},
                },
            ],
            "isError": True,
        },
    }

    def returning(value):
        def tool():  # no return annotation: no output schema
            """Return the value."""
            return value

        return tool

    for name, value in returns.items():
        server.add_tool(returning(value), name=name)

    with Client.in_memory(server) as client:
        for name, value in returns.items():
            result = client.call_tool(name, {})
            if name == "shaped":
                assert result.is_error is True
                assert [block.type for block in result.content] == [
                    "text",
                    "image",
                    "resource_link",
                    "resource",
                    "resource",
                ]
            else:
                assert result.is_error is False, name
                assert json.loads(result.text) == value, name


def test_an_int_parameter_sent_a_whole_float_gets_an_int_and_a_boolean_is_still_refused():
    server = Server("ints")

    @server.tool
    def repeat(text: str, times: int) -> str:
        """Repeat the text."""
        return text * times

    with Client.in_memory(server) as client:
        assert client.call_tool("repeat", {"text": "ab", "times": 2.0}).text == "abab"
        assert rejected(client, "repeat", {"text": "ab", "times": 2.5})
        assert rejected(client, "repeat", {"text": "ab", "times": True})


def test_a_swapped_pair_for_a_fixed_tuple_is_refused_as_bad_arguments():
    server = Server("tuples")

    @server.tool
    def greet(person: tuple[str, int]) -> str:
        """Greet (name, age)."""
        name, age = person
        return f"{name.title()} is {age + 1} next year"

    with Client.in_memory(server) as client:
        assert client.call_tool("greet", {"person": ["ada", 36]}).text == "Ada is 37 next year"
        result = client.call_tool("greet", {"person": [36, "ada"]})
        assert result.is_error
        assert result.text.startswith("Invalid arguments for tool greet: person/")


def test_a_partial_registered_as_a_tool_is_described_by_its_function_less_what_it_binds():
    """functools.partial: the schema, name, description and output schema are its function's;
    a parameter it binds by keyword (or by position) is not the caller's."""

    def weather(city: str, days: int, unit: str, verbose: bool = False) -> dict[str, str]:
        """Forecast for a city."""
        return {"forecast": f"{city.upper()} {days + 1} {unit} {verbose}"}

    server = Server("partials")
    server.add_tool(functools.partial(weather, unit="c"))
    server.add_tool(functools.partial(weather, "Paris"), name="paris")

    with Client.in_memory(server) as client:
        tool = tool_named(client, "weather")
        assert tool.description == "Forecast for a city."
        assert tool.input_schema == {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "verbose": {"type": "boolean", "default": False},
            },
            "required": ["city", "days"],
        }
        assert tool.output_schema is not None
        result = client.call_tool("weather", {"city": "oslo", "days": 2})
        assert result.structured_content == {"forecast": "OSLO 3 c False"}
        assert rejected(client, "weather", {"city": 5, "days": "x"})
        assert rejected(client, "weather", {"city": "oslo", "days": 2, "unit": "f"})
        assert set(tool_named(client, "paris").input_schema["properties"]) == {
            "days",
            "unit",
            "verbose",
        }


def test_an_async_partial_registered_as_a_tool_is_described_by_its_function_and_called():
    """An ``async def`` under functools.partial is run on the handler thread like any async tool,
    and described as any partial is: its function's hints, name and docstring, less what it binds."""

    async def scale(text: str, times: int, sep: str = " ") -> str:
        """Repeat a text."""
        return sep.join([text] * times)

    server = Server("async-partials")
    server.add_tool(functools.partial(scale, sep="-"))
    server.add_tool(functools.partial(scale, "ab"), name="ab")

    with Client.in_memory(server) as client:
        tool = tool_named(client, "scale")
        assert tool.description == "Repeat a text."
        assert tool.input_schema == {
            "type": "object",
            "properties": {"text": {"type": "string"}, "times": {"type": "integer"}},
            "required": ["text", "times"],
        }
        assert client.call_tool("scale", {"text": "ab", "times": 3}).text == "ab-ab-ab"
        assert rejected(client, "scale", {"text": "ab", "times": "3"})
        assert set(tool_named(client, "ab").input_schema["properties"]) == {"times", "sep"}
        assert client.call_tool("ab", {"times": 2, "sep": "+"}).text == "ab+ab"


def test_a_partial_registered_as_a_prompt_or_a_resource_is_named_by_its_function():
    def greet(name: str, greeting: str) -> str:
        """Greet someone."""
        return f"{greeting}, {name}"

    def note(id: str, shelf: str) -> str:
        """A note on a shelf."""
        return f"{shelf}/{id}"

    server = Server("partials")
    server.add_prompt(functools.partial(greet, greeting="Hello"))
    server.add_resource(functools.partial(note, shelf="top"), "note://{id}")
    with Client.in_memory(server) as client:
        (prompt,) = client.list_prompts()
        assert prompt.name == "greet"
        assert [argument.name for argument in prompt.arguments] == ["name"]
        assert client.get_prompt("greet", {"name": "Ada"}).messages[0].content.text == "Hello, Ada"
        (template,) = client.list_resource_templates()
        assert template.name == "note"
        assert client.read_resource("note://7").contents[0].text == "top/7"
