"""Why a server's result does not have the shape of its type, said in the wire's words.

The client builds its objects from a result without checking it first
(:func:`mcp_ref.client.connection.built`): a result is checked against the official schema only
when asked (``Client(trace=WireValidator())``).  When building fails, this module (loaded only
then) walks the result along the payload classes of :mod:`mcp_ref.types` and says what is wrong
with the JSON the server sent: the key that is missing, the value that is not an object or not
an array, a scalar of the wrong JSON type (``"isError": "false"``), at its JSON Pointer (``/tools/0 has no "name"``, ``/content is a string, not an
array``).  Each method's result has a type in the revision's schema (``schema.ts``: a
``ListToolsResult`` holds ``tools: Tool[]``, a ``Tool`` a ``name`` and an ``inputSchema``); a
result without that shape is the server's mistake, reported as
:class:`~mcp_ref.errors.InvalidResult` (an ``MCPRefError``), and the connection goes on.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..errors import InvalidResult
from ..feature_types import (
    Completion,
    GetPromptResult,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
)
from ..types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    DiscoverResult,
    EmbeddedResource,
    ImageContent,
    InitializeResult,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
    UnknownContent,
    WireModel,
    content_from_wire,
    resource_contents_from_wire,
    wire_keys,
)

__all__ = ["invalid_result", "problems"]

#: Each method's result: the schema's name for it, and its shape: a payload class, or for a
#: result the client reads one key of, ``{key: class}`` (an object) or ``{key: [class]}`` (an
#: array of them; absent: none).
RESULTS: dict[str, tuple[str, Any]] = {
    "initialize": ("InitializeResult", InitializeResult),
    "server/discover": ("DiscoverResult", DiscoverResult),
    "tools/call": ("CallToolResult", CallToolResult),
    "tasks/result": ("CallToolResult", CallToolResult),
    "resources/read": ("ReadResourceResult", ReadResourceResult),
    "prompts/get": ("GetPromptResult", GetPromptResult),
    "completion/complete": ("CompleteResult", {"completion": Completion}),
    "tools/list": ("ListToolsResult", {"tools": [Tool]}),
    "resources/list": ("ListResourcesResult", {"resources": [Resource]}),
    "resources/templates/list": (
        "ListResourceTemplatesResult",
        {"resourceTemplates": [ResourceTemplate]},
    ),
    "prompts/list": ("ListPromptsResult", {"prompts": [Prompt]}),
}
#: The content block classes by their ``type``, as ``content_from_wire`` picks them.
BLOCKS: dict[Any, type[WireModel]] = {
    block.type: block
    for block in (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)
}
#: The scalar field types whose JSON type is checked (a field's annotation, as written), and
#: what JSON calls the value: ``isError`` is a boolean, a text block's ``text`` a string ...
SCALARS: dict[str, tuple[type, str]] = {"str": (str, "a string"), "bool": (bool, "a boolean")}
#: Problems named in one message at most (a result may be wrong in many places).
MAX_NAMED = 5


def invalid_result(
    method: str, result: dict, version: str | None, failure: Exception
) -> InvalidResult:
    """The :class:`InvalidResult` for ``method``'s ``result``, which could not be built
    (``failure``, the builder's TypeError): what is wrong with it, in the wire's words.

    ``version`` is the revision spoken (the requested one, for ``initialize``); a result of a
    method not known here, or whose fault the walk cannot find, is described by ``failure``."""
    name, shape = RESULTS.get(method, ("its type", None))
    found = problems(shape, result, "") if shape is not None else []
    if not found:
        found = [f"{failure}"]
    named = "; ".join(found[:MAX_NAMED])
    more = f" (and {len(found) - MAX_NAMED} more)" if len(found) > MAX_NAMED else ""
    revision = f" ({version})" if version else ""
    return InvalidResult(
        f"{method}: the server's result does not have the shape of {name}{revision}: {named}{more}"
    )


def problems(shape: Any, value: Any, path: str) -> list[str]:
    """What keeps ``value`` (the JSON at ``path``, a JSON Pointer: ``""`` is the result) from
    having ``shape`` (a payload class, or a ``{key: shape}`` dict as in :data:`RESULTS`)."""
    if not isinstance(value, dict):
        return [f"{_where(path)} is {_json_kind(value)}, not an object"]
    if isinstance(shape, dict):
        found = []
        for key, part in shape.items():
            if isinstance(part, list):
                found += _array(part[0], value.get(key, []), f"{path}/{key}")
            elif key not in value:
                found.append(f'{_where(path)} has no "{key}"')
            else:
                found += problems(part, value[key], f"{path}/{key}")
        return found
    return _payload(shape, value, path)


def _payload(cls: type[WireModel], value: dict, path: str) -> list[str]:
    """What keeps the JSON object ``value`` from being a ``cls`` (as ``cls.from_wire`` reads it)."""
    found = []
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for name, wire in wire_keys(cls):
        spec = fields[name]
        if wire not in value:
            required = spec.default is dataclasses.MISSING
            if required and spec.default_factory is dataclasses.MISSING:
                found.append(f'{_where(path)} has no "{wire}"')
            continue
        build = cls._nested.get(name)
        nested = value[wire]
        if str(spec.type).startswith("dict") and not isinstance(nested, (dict, type(None))):
            found.append(f"{_where(path + '/' + wire)} is {_json_kind(nested)}, not an object")
        scalar = SCALARS.get(str(spec.type))
        if scalar is not None and type(nested) is not scalar[0]:
            found.append(f"{path}/{wire} is {_json_kind(nested)}, not {scalar[1]}")
        if build is None or nested is None:
            continue
        if str(spec.type).startswith("list"):
            found += _array(build, nested, f"{path}/{wire}")
        elif isinstance(nested, list):  # from_wire builds each item of a list it is given
            found += _items(build, nested, f"{path}/{wire}")
        else:
            found += _built(build, nested, f"{path}/{wire}")
    return found


def _array(build: Any, value: Any, path: str) -> list[str]:
    """What keeps ``value`` from being an array whose items ``build`` (a payload class, or a
    payload's builder function) makes."""
    if not isinstance(value, list):
        return [f"{path} is {_json_kind(value)}, not an array"]
    return _items(build, value, path)


def _items(build: Any, items: list, path: str) -> list[str]:
    return [found for i, item in enumerate(items) for found in _built(build, item, f"{path}/{i}")]


def _built(build: Any, value: Any, path: str) -> list[str]:
    """What keeps ``value`` from being made by ``build``: the class it names (``from_wire``'s
    own), the content block class its ``type`` names, or the resource contents its keys name."""
    cls: Any
    if build is content_from_wire:
        if not isinstance(value, dict):  # kept as UnknownContent: not what breaks a result
            return []
        block_type = value.get("type")
        cls = (
            BLOCKS.get(block_type, UnknownContent)
            if isinstance(block_type, str)
            else UnknownContent
        )
    elif build is resource_contents_from_wire:
        is_blob = isinstance(value, dict) and "blob" in value
        cls = BlobResourceContents if is_blob else TextResourceContents
    else:
        cls = build if isinstance(build, type) else getattr(build, "__self__", None)
        if not (isinstance(cls, type) and issubclass(cls, WireModel)):
            return []
    return problems(cls, value, path)


def _where(path: str) -> str:
    return path or "the result"


def _json_kind(value: Any) -> str:
    """What JSON value ``value`` is: ``a string``, ``an array``, ``null`` ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"
