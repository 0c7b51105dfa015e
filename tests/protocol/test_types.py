"""from_wire / to_wire round trips for every payload type of mcp_ref.types.

The spec's own example instances (copied into tests/spec_examples/2026-07-28/<Type>/*.json)
are the test vectors where a matching type folder exists; hand-made instances
cover every type as well, including those no example shows.
For each instance: ``to_wire(from_wire(x)) == x``, ``x`` is left untouched, and
the modelled fields alone (without ``.raw``) give back every modelled key.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest

from mcp_ref import feature_types, sampling_and_elicitation, types
from mcp_ref.feature_types import (
    Completion,
    GetPromptResult,
    LogMessage,
    Prompt,
    PromptArgument,
    PromptMessage,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Root,
)
from mcp_ref.sampling_and_elicitation import (
    CreateMessageParams,
    CreateMessageResult,
    ElicitParams,
    ElicitResult,
    SamplingMessage,
)
from mcp_ref.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    DiscoverResult,
    EmbeddedResource,
    ImageContent,
    Implementation,
    InitializeResult,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
    UnknownContent,
    WireModel,
    content_from_wire,
    resource_contents_from_wire,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "spec_examples" / "2026-07-28"

MODELS = sorted(
    # The wire types of the three modules (mcp_ref.media holds only Image and Audio: constructors of
    # ImageContent and AudioContent from a path or bytes, not wire types).
    (
        obj
        for module in (types, feature_types, sampling_and_elicitation)
        for obj in vars(module).values()
        if isinstance(obj, type)
        and issubclass(obj, WireModel)
        and obj is not WireModel
        and obj.__module__ == module.__name__
    ),
    key=lambda cls: cls.__name__,
)


def _each(key):
    return lambda doc: doc[key]


def _nested(outer, inner):
    return lambda doc: [item for parent in doc[outer] for item in parent.get(inner, [])]


# Where a type's instances are found among the examples: (folder, extract); extract
# returns one instance or a list of them.  The folder of the same name comes first.
SOURCES: dict[type, list[tuple[str, object]]] = {
    Tool: [("ListToolsResult", _each("tools"))],
    Resource: [("ListResourcesResult", _each("resources"))],
    ResourceTemplate: [("ListResourceTemplatesResult", _each("resourceTemplates"))],
    TextResourceContents: [("ReadResourceResult", _each("contents"))],
    Prompt: [("ListPromptsResult", _each("prompts"))],
    PromptArgument: [("ListPromptsResult", _nested("prompts", "arguments"))],
    PromptMessage: [("GetPromptResult", _each("messages"))],
    Root: [("ListRootsResult", _each("roots"))],
    SamplingMessage: [("CreateMessageRequestParams", _each("messages"))],
    CreateMessageParams: [("CreateMessageRequestParams", None)],
    ElicitParams: [("ElicitRequestFormParams", None), ("ElicitRequestURLParams", None)],
    LogMessage: [("LoggingMessageNotificationParams", None)],
    Completion: [("CompleteResult", _each("completion"))],
    UnknownContent: [("ToolUseContent", None), ("ToolResultContent", None)],
    Implementation: [
        ("DiscoverResult", lambda doc: doc["_meta"]["io.modelcontextprotocol/serverInfo"])
    ],
}


def example_cases() -> list:
    assert EXAMPLES.is_dir(), (
        f"{EXAMPLES} is missing: the spec's examples are part of the test suite"
    )
    cases = []
    for cls in MODELS:
        for folder, extract in [(cls.__name__, None)] + SOURCES.get(cls, []):
            for path in sorted((EXAMPLES / folder).glob("*.json")):
                found = json.loads(path.read_text())
                found = extract(found) if extract else found
                for i, instance in enumerate(found if isinstance(found, list) else [found]):
                    cases.append(
                        pytest.param(
                            cls, instance, path, id=f"{cls.__name__}-{folder}/{path.stem}#{i}"
                        )
                    )
    return cases


# Hand-made instances: every type, including those with no example folder.
HANDMADE: dict[type, list[dict]] = {
    Implementation: [
        {"name": "srv", "version": "1.0"},
        {
            "name": "srv",
            "version": "1.0",
            "title": "Server",
            "description": "d",
            "websiteUrl": "https://x.test",
            "icons": [{"src": "https://x.test/i.png"}],
        },
    ],
    TextResourceContents: [
        {"uri": "a://b", "text": "t"},
        {"uri": "a://b", "text": "", "mimeType": "text/plain", "_meta": {"k": 1}},
    ],
    BlobResourceContents: [
        {"uri": "a://b", "blob": "AAE=", "mimeType": "application/octet-stream"}
    ],
    TextContent: [
        {"type": "text", "text": "hi"},
        {"type": "text", "text": "hi", "annotations": {"priority": 0.5}, "_meta": {}},
    ],
    ImageContent: [{"type": "image", "data": "iVBO", "mimeType": "image/png"}],
    AudioContent: [
        {
            "type": "audio",
            "data": "UklG",
            "mimeType": "audio/wav",
            "annotations": {"audience": ["user"]},
        }
    ],
    ResourceLink: [
        {
            "type": "resource_link",
            "uri": "file:///a",
            "name": "a",
            "size": 3,
            "mimeType": "text/plain",
        }
    ],
    EmbeddedResource: [
        {"type": "resource", "resource": {"uri": "a://b", "text": "t"}},
        {"type": "resource", "resource": {"uri": "a://b", "blob": "AA=="}},
    ],
    UnknownContent: [{"type": "hologram", "frames": 3}],
    Tool: [
        {"name": "t", "inputSchema": {"type": "object"}},
        {
            "name": "t",
            "title": "T",
            "description": "d",
            "inputSchema": {"type": "object", "properties": {}},
            "outputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": True},
            "execution": {"taskSupport": "optional"},
            "icons": [],
            "_meta": {"m": 1},
        },
    ],
    CallToolResult: [
        {"content": []},
        {"content": [], "isError": False},
        {
            "content": [
                {"type": "text", "text": "x"},
                {"type": "image", "data": "AA==", "mimeType": "image/png"},
            ],
            "isError": True,
        },
        {"content": [], "structuredContent": {"a": [1, 2]}, "_meta": {"k": "v"}},
    ],
    Resource: [
        {
            "uri": "a://b",
            "name": "b",
            "size": 0,
            "annotations": {"lastModified": "2025-01-01T00:00:00Z"},
        }
    ],
    ResourceTemplate: [{"uriTemplate": "a://{x}", "name": "x", "mimeType": "text/plain"}],
    ReadResourceResult: [
        {"contents": [{"uri": "a://b", "text": "t"}, {"uri": "a://c", "blob": "AA=="}]}
    ],
    PromptArgument: [
        {"name": "a"},
        {"name": "a", "title": "A", "description": "d", "required": False},
    ],
    Prompt: [
        {"name": "p"},
        {"name": "p", "arguments": [{"name": "a", "required": True}], "description": "d"},
    ],
    PromptMessage: [
        {
            "role": "assistant",
            "content": {"type": "resource", "resource": {"uri": "a://b", "text": "t"}},
        }
    ],
    GetPromptResult: [
        {
            "messages": [{"role": "user", "content": {"type": "text", "text": "x"}}],
            "description": "d",
        }
    ],
    Root: [{"uri": "file:///r"}, {"uri": "file:///r", "name": "R", "_meta": {}}],
    SamplingMessage: [
        {"role": "user", "content": {"type": "text", "text": "q"}},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    ],
    CreateMessageParams: [
        {
            "messages": [{"role": "user", "content": {"type": "text", "text": "q"}}],
            "maxTokens": 5,
            "systemPrompt": "s",
            "includeContext": "none",
            "temperature": 0.5,
            "stopSequences": ["x"],
            "modelPreferences": {"hints": [{"name": "m"}]},
            "metadata": {},
            "toolChoice": {"mode": "auto"},
        }
    ],
    CreateMessageResult: [
        {
            "role": "assistant",
            "content": {"type": "text", "text": "a"},
            "model": "m",
            "stopReason": "endTurn",
        }
    ],
    ElicitParams: [
        {"message": "m", "requestedSchema": {"type": "object", "properties": {}}},
        {"mode": "url", "message": "m", "url": "https://x.test", "elicitationId": "e1"},
    ],
    ElicitResult: [{"action": "accept", "content": {"a": 1}}, {"action": "decline"}],
    DiscoverResult: [
        {
            "supportedVersions": ["2026-07-28"],
            "capabilities": {},
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "private",
        },
        {
            "supportedVersions": ["2026-07-28", "2025-11-25"],
            "capabilities": {"tools": {}},
            "instructions": "use it",
            "ttlMs": 60000,
            "cacheScope": "public",
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}},
        },
    ],
    InitializeResult: [
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "serverInfo": {"name": "s", "version": "1"},
        },
        {
            "protocolVersion": "2024-11-05",
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "s", "version": "1"},
            "instructions": "use it",
            "_meta": {"x": 1},
        },
    ],
    LogMessage: [
        {"level": "error", "data": {"any": ["json"]}, "logger": "db"},
        {"level": "info", "data": None},
    ],
    Completion: [{"values": ["a", "b"], "total": 10, "hasMore": True}, {"values": []}],
}


def handmade_cases() -> list:
    return [
        pytest.param(cls, instance, None, id=f"{cls.__name__}#{i}")
        for cls, instances in HANDMADE.items()
        for i, instance in enumerate(instances)
    ]


def modelled_keys(cls) -> set[str]:
    return {wire for _, wire in types.wire_keys(cls)} | set(cls._constant)


def check_round_trip(cls, instance) -> None:
    original = copy.deepcopy(instance)
    obj = cls.from_wire(instance)
    assert type(obj) is cls
    assert dataclasses.is_dataclass(obj)
    assert obj.raw is instance
    assert obj.to_wire() == original
    assert json.loads(json.dumps(obj.to_wire())) == original
    assert instance == original, "from_wire/to_wire must not modify the received JSON"

    # Without .raw, the modelled fields alone must give back every modelled key.
    bare = dataclasses.replace(obj)
    bare.raw = None
    expected = {k: v for k, v in original.items() if k in modelled_keys(cls)}
    if cls is CallToolResult and expected.get("isError") is False:
        del expected["isError"]  # absent and false mean the same ("default: false")
    assert bare.to_wire() == expected


@pytest.mark.parametrize("cls, instance, path", example_cases())
def test_spec_example_round_trips(cls, instance, path):
    check_round_trip(cls, instance)


@pytest.mark.parametrize("cls, instance, path", handmade_cases())
def test_handmade_instance_round_trips(cls, instance, path):
    check_round_trip(cls, instance)


def test_every_type_has_handmade_instances():
    assert set(HANDMADE) == set(MODELS)


@pytest.mark.skipif(not EXAMPLES.is_dir(), reason=f"{EXAMPLES} is absent")
def test_every_example_folder_named_like_a_type_is_used():
    cases = {p.values[0] for p in example_cases()}
    named = {cls for cls in MODELS if (EXAMPLES / cls.__name__).is_dir()}
    assert named and named <= cases
    assert len(cases) >= 20


# -- nested types, dispatch, edits -------------------------------------------------------------


@pytest.mark.parametrize(
    "data, cls",
    [
        ({"type": "text", "text": "x"}, TextContent),
        ({"type": "image", "data": "AA==", "mimeType": "image/png"}, ImageContent),
        ({"type": "audio", "data": "AA==", "mimeType": "audio/wav"}, AudioContent),
        ({"type": "resource_link", "uri": "a://b", "name": "b"}, ResourceLink),
        ({"type": "resource", "resource": {"uri": "a://b", "text": "t"}}, EmbeddedResource),
        ({"type": "tool_use", "id": "1", "name": "n", "input": {}}, UnknownContent),
        ({"text": "no type"}, UnknownContent),
    ],
)
def test_content_from_wire_picks_the_class_by_type(data, cls):
    block = content_from_wire(copy.deepcopy(data))
    assert type(block) is cls
    assert block.to_wire() == data


def test_resource_contents_are_told_apart_by_key():
    assert type(resource_contents_from_wire({"uri": "a://b", "text": "t"})) is TextResourceContents
    assert (
        type(resource_contents_from_wire({"uri": "a://b", "blob": "AA=="})) is BlobResourceContents
    )


def test_nested_objects_are_typed():
    result = GetPromptResult.from_wire(
        {
            "messages": [
                {
                    "role": "user",
                    "content": {"type": "resource", "resource": {"uri": "a://b", "blob": "AA=="}},
                },
            ]
        }
    )
    message = result.messages[0]
    assert isinstance(message, PromptMessage) and isinstance(message.content, EmbeddedResource)
    assert isinstance(message.content.resource, BlobResourceContents)
    init = InitializeResult.from_wire(HANDMADE[InitializeResult][1])
    assert isinstance(init.server_info, Implementation) and init.server_info.name == "s"
    assert init.protocol_version == "2024-11-05" and init.meta == {"x": 1}


def test_edits_reach_the_wire_and_none_removes_a_key():
    data = {"name": "t", "description": "old", "inputSchema": {"type": "object"}, "x-extra": 1}
    tool = Tool.from_wire(data)
    tool.description = None
    tool.title = "New"
    out = tool.to_wire()
    assert out == {"name": "t", "title": "New", "inputSchema": {"type": "object"}, "x-extra": 1}
    assert data["description"] == "old"  # the received JSON is untouched


def test_snake_case_fields_map_to_camel_case_and_meta():
    params = CreateMessageParams(
        messages=[SamplingMessage(role="user", content=TextContent(text="q"))],
        max_tokens=3,
        stop_sequences=["s"],
        meta={"progressToken": 1},
    )
    assert params.to_wire() == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "q"}}],
        "maxTokens": 3,
        "stopSequences": ["s"],
        "_meta": {"progressToken": 1},
    }


@pytest.mark.parametrize("cls", [Tool, TextContent, Root])
@pytest.mark.parametrize("value", [[], "text", 3, None])
def test_from_wire_rejects_non_objects(cls, value):
    with pytest.raises(TypeError):
        cls.from_wire(value)


def test_from_wire_returns_an_instance_unchanged():
    root = Root(uri="file:///r")
    assert Root.from_wire(root) is root
