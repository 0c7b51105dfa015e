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
from ..lifecycle import SUPPORTED_VERSIONS, at_least
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

__all__ = ["check_call_result", "check_result", "invalid_result", "problems"]

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
#: The members of ServerCapabilities, each an object, with the revisions that define them (the
#: first, and the last or None): schema.json of each revision, 2024-11-05 to 2026-07-28.  A
#: member the negotiated revision does not define is not read, and may be anything.
CAPABILITY_MEMBERS: dict[str, tuple[str, str | None]] = {
    "experimental": ("2024-11-05", None),
    "logging": ("2024-11-05", None),
    "prompts": ("2024-11-05", None),
    "resources": ("2024-11-05", None),
    "tools": ("2024-11-05", None),
    "completions": ("2025-03-26", None),
    "tasks": ("2025-11-25", "2025-11-25"),  # an extension since 2026-07-28
    "extensions": ("2026-07-28", None),
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
    return _refusal(method, name, version, found or [f"{failure}"])


def _refusal(method: str, name: str, version: str | None, found: list[str]) -> InvalidResult:
    """The :class:`InvalidResult` naming the first :data:`MAX_NAMED` of ``found``."""
    named = "; ".join(found[:MAX_NAMED])
    more = f" (and {len(found) - MAX_NAMED} more)" if len(found) > MAX_NAMED else ""
    revision = f" ({version})" if version else ""
    return InvalidResult(
        f"{method}: the server's result does not have the shape of {name}{revision}: {named}{more}"
    )


def check_result(method: str, result: dict, version: str | None) -> None:
    """InvalidResult for a result built already that does not have its type's shape in what
    building it does not check: a tool result field by field (:func:`check_call_result`), an
    ``initialize`` or ``server/discover`` result's capabilities member by member."""
    if method in ("tools/call", "tasks/result"):
        check_call_result(method, result, version)
        return
    if method == "initialize" and result.get("protocolVersion") in SUPPORTED_VERSIONS:
        version = result["protocolVersion"]  # the revision agreed on, not the one asked for
    name, shape = RESULTS[method]
    found = problems(shape, result, "")
    capabilities = result["capabilities"]
    if isinstance(capabilities, dict):
        # schema.json ServerCapabilities, every revision: each member it defines is an object
        # (``"tools": true`` would be read as one later); a member it does not define is not read
        found += [
            f"/capabilities/{key} is {_json_kind(member)}, not an object"
            for key, member in capabilities.items()
            if _defined_in(key, version) and not isinstance(member, dict)
        ]
    if found:
        raise _refusal(method, name, version, found)


def _defined_in(member: str, version: str | None) -> bool:
    """True when the ServerCapabilities of ``version`` define ``member`` (None: the newest)."""
    revisions = CAPABILITY_MEMBERS.get(member)
    if revisions is None:
        return False
    first, last = revisions
    return at_least(version, first) and (last is None or version is not None and version <= last)


# -- a tool result, field by field ---------------------------------------------------------------
#
# Building a CallToolResult checks only ``isError`` and a text block's ``text``; a result that
# holds more (other blocks, annotations, ``_meta``) is checked here against the JSON types its
# revision's schema gives each field (schema.json: CallToolResult, ContentBlock, Annotations,
# TextResourceContents / BlobResourceContents).  A key the revision does not define, and a block
# of a type it does not define, stay allowed (unknown keys are kept in ``.raw``).

_STRING = (str, "a string")
_OBJECT = (dict, "an object")
_ARRAY = (list, "an array")
_NUMBER = ((int, float), "a number")
_INTEGER = ("integer", "an integer")
#: Each content block type's fields: (wire key, (JSON type, its name), required, the first
#: revision that defines the key).
_MEDIA = [("data", _STRING, True, ""), ("mimeType", _STRING, True, "")]
_BLOCK_FIELDS: dict[str, list[tuple[str, tuple, bool, str]]] = {
    "text": [("text", _STRING, True, "")],
    "image": _MEDIA,
    "audio": _MEDIA,
    "resource_link": [
        ("uri", _STRING, True, ""),
        ("name", _STRING, True, ""),
        ("title", _STRING, False, ""),
        ("description", _STRING, False, ""),
        ("mimeType", _STRING, False, ""),
        ("size", _INTEGER, False, ""),
        ("icons", _ARRAY, False, "2025-11-25"),
    ],
    "resource": [("resource", _OBJECT, True, "")],
}
#: The revision that first defines each block type (2025-03-26 adds audio, 2025-06-18 links).
_BLOCK_SINCE = {"audio": "2025-03-26", "resource_link": "2025-06-18"}
_EVERY_BLOCK = [("annotations", _OBJECT, False, ""), ("_meta", _OBJECT, False, "2025-06-18")]
_CONTENTS = [
    ("uri", _STRING, True, ""),
    ("mimeType", _STRING, False, ""),
    ("_meta", _OBJECT, False, "2025-06-18"),
]
_ANNOTATIONS = [
    ("audience", _ARRAY, False, ""),
    ("priority", _NUMBER, False, ""),
    ("lastModified", _STRING, False, "2025-06-18"),
]
#: schema.json ``Role``: what an annotation's ``audience`` may hold.
_ROLES = ("user", "assistant")


def check_call_result(method: str, result: dict, version: str | None) -> None:
    """InvalidResult when a field of the tool result ``result`` (built already) does not have the
    JSON type its revision (``version``; None: the latest) gives it, naming each such field by its
    JSON Pointer and the type it has (never its value); one pass over the result."""
    revision = version or "9999"
    found: list[str] = []
    # 2025-06-18 and 2025-11-25 schema.json: structuredContent "type": "object"; 2026-07-28:
    # "This can be any JSON value"; before 2025-06-18 it is no key of the result.
    structured = "2025-06-18" <= revision < "2026-07-28"
    fields = [("_meta", _OBJECT, False, ""), ("structuredContent", _OBJECT, False, "")]
    _typed(result, fields if structured else fields[:1], revision, "", found)
    for index, block in enumerate(result.get("content", ())):
        kind = block.get("type") if isinstance(block, dict) else None
        if (
            not isinstance(kind, str)
            or kind not in _BLOCK_FIELDS
            or _BLOCK_SINCE.get(kind, "") > revision
        ):
            continue  # not a block this revision defines: kept as it came (UnknownContent)
        path = f"/content/{index}"
        _typed(block, _BLOCK_FIELDS[kind] + _EVERY_BLOCK, revision, path, found)
        if kind == "resource" and isinstance(block["resource"], dict):
            contents = block["resource"]
            value = ("blob" if "blob" in contents else "text", _STRING, True, "")
            _typed(contents, [*_CONTENTS, value], revision, f"{path}/resource", found)
        if isinstance(block.get("annotations"), dict):
            _annotations(block["annotations"], revision, f"{path}/annotations", found)
    if found:
        raise _refusal(method, "CallToolResult", version, found)


def _typed(value: dict, fields: list, revision: str, path: str, found: list[str]) -> None:
    """Append to ``found`` each of ``fields`` (as in :data:`_BLOCK_FIELDS`) that ``value`` lacks or
    holds with another JSON type."""
    for key, (kind, name), required, since in fields:
        if since > revision:
            continue
        if key not in value:
            if required:
                found.append(f'{_where(path)} has no "{key}"')
            continue
        item = value[key]
        if kind == "integer":
            fits = type(item) is int or (type(item) is float and item.is_integer())
        else:
            fits = isinstance(item, kind) and not isinstance(item, bool)
        if not fits:
            found.append(f"{path}/{key} is {_json_kind(item)}, not {name}")


def _annotations(annotations: dict, revision: str, path: str, found: list[str]) -> None:
    """Append what is wrong with a block's ``annotations`` (schema.json ``Annotations``:
    ``audience`` an array of roles, ``priority`` a number from 0 to 1) to ``found``."""
    _typed(annotations, _ANNOTATIONS, revision, path, found)
    audience = annotations.get("audience")
    if isinstance(audience, list) and not all(role in _ROLES for role in audience):
        found.append(f'{path}/audience holds something other than "user" and "assistant"')
    priority = annotations.get("priority")
    if isinstance(priority, (int, float)) and not 0 <= priority <= 1:
        found.append(f"{path}/priority is not between 0 and 1")


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
