"""MCP payloads as plain standard-library dataclasses.

Every class here maps to one type of the MCP schema (``schema.ts``).  Field
names are the snake_case of the wire's camelCase (``mime_type`` <->
``mimeType``, ``meta`` <-> ``_meta``); ``None`` fields are left off the wire.
Objects built from received JSON keep that JSON in ``.raw``, so a field this
library does not model yet (or a newer revision's extension) is never lost.

``from_wire(dict)`` builds an object; ``to_wire()`` gives the dict back.  Both are one
generic loop over the class's :func:`wire_keys` (its fields and their wire names, read once
from :func:`dataclasses.fields`).

Here: the base, content blocks, tools, and the results of the handshake and discovery — what a
``tools/call`` round trip needs.  Three groups live in modules of their own, so that a plain client
or server does not pay for them: :mod:`mcp_ref.feature_types` (resources, prompts, completion,
roots, a listing's ``Page``), :mod:`mcp_ref.media` (``Image``, ``Audio``, ``media_block`` ...)
and :mod:`mcp_ref.sampling_and_elicitation` (``CreateMessageParams``, ``ElicitResult`` ...).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

_Model = TypeVar("_Model", bound="WireModel")


def _camel(name: str) -> str:
    """The wire key of field ``name``: ``mime_type`` -> ``mimeType``, ``meta`` -> ``_meta``."""
    if name == "meta":
        return "_meta"
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)  # field names are lower case


#: Each payload class's ``(field name, wire key)`` pairs, made on first use by :func:`wire_keys`.
_WIRE_KEYS: dict[type, tuple[tuple[str, str], ...]] = {}


def wire_keys(cls: type) -> tuple[tuple[str, str], ...]:
    """``(field name, wire key)`` for each field of payload class ``cls`` that goes on the wire:
    every dataclass field but ``raw`` and those marked ``metadata={"local": True}``."""
    keys = _WIRE_KEYS.get(cls)
    if keys is None:
        keys = _WIRE_KEYS[cls] = tuple(
            (f.name, _camel(f.name))
            for f in dataclasses.fields(cls)
            if f.name != "raw" and not f.metadata.get("local")
        )
    return keys


@dataclass(kw_only=True)
class WireModel:
    """Base of every payload class (each a dataclass): the camelCase mapping, and ``raw``, the
    received JSON.

    ``_nested`` maps a field to the function that builds it (applied to each item when the wire
    value is a list).  A content block names its ``type`` in a class variable, which
    ``_constant`` puts on the wire (see :meth:`__init_subclass__`).
    """

    _nested: ClassVar[dict[str, Callable[[Any], Any]]] = {}
    _constant: ClassVar[dict[str, Any]] = {}  # wire keys with a fixed value, e.g. {"type": "text"}
    #: the received JSON, out of ``repr`` and ``==``
    raw: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A class setting ``type = "text"`` (a ClassVar, no field) sends ``{"type": "text"}``."""
        super().__init_subclass__(**kwargs)
        block_type = cls.__dict__.get("type")
        if isinstance(block_type, str):
            cls._constant = {"type": block_type}

    @classmethod
    def from_wire(cls: type[_Model], data: dict[str, Any] | _Model) -> _Model:
        """Build an instance from a received JSON object (unknown keys stay in ``.raw``).

        An absent key takes the field's default; a missing required key is ``__init__``'s
        TypeError, and so is a value that is not an array where the field is a list of payloads
        (``"content": "abc"``); a null nested value stays None.  (A client turns that TypeError
        into :class:`~mcp_ref.errors.InvalidResult`.)"""
        if not isinstance(data, dict):
            if isinstance(data, cls):
                return data
            raise TypeError(f"{cls.__name__} expects a JSON object, got {type(data).__name__}")
        arguments: dict[str, Any] = {}
        nested = cls._nested
        for name, wire in wire_keys(cls):
            if wire not in data:
                continue
            value = data[wire]
            build = nested.get(name)
            if build is not None and value is not None:
                if isinstance(value, list):
                    value = [build(item) for item in value]
                elif str(cls.__dataclass_fields__[name].type).startswith("list"):
                    raise TypeError(f"{cls.__name__}.{wire} must be an array")
                else:
                    value = build(value)
            arguments[name] = value
        return cls(**arguments, raw=data)

    def to_wire(self) -> dict[str, Any]:
        """The JSON object for the wire (``None`` fields omitted; extra keys of ``.raw`` kept)."""
        out = dict(self.raw or {})
        out.update(self._constant)
        for name, wire in wire_keys(type(self)):
            value = getattr(self, name)
            if value is None:
                out.pop(wire, None)
            else:
                out[wire] = _wire_value(value)
        return out


def _wire_value(value: Any) -> Any:
    """A field's value as JSON: a payload by its ``to_wire()``, a list item by item."""
    if isinstance(value, WireModel):
        return value.to_wire()
    if isinstance(value, list):
        return [_wire_value(v) for v in value]
    return value


# -- Basics -------------------------------------------------------------------


@dataclass(kw_only=True)
class Implementation(WireModel):
    """``clientInfo`` / ``serverInfo``: who is on the other end."""

    name: str
    version: str
    title: str | None = None
    description: str | None = None
    website_url: str | None = None
    icons: list[dict[str, Any]] | None = None


@dataclass(kw_only=True)
class TextResourceContents(WireModel):
    """The text of a resource (``resources/read`` or an embedded resource)."""

    uri: str
    text: str
    mime_type: str | None = None
    meta: dict[str, Any] | None = None

    @property
    def content(self) -> str:
        """The text: FastMCP's and the official SDK's name (``ctx.read_resource(uri)[0].content``)."""
        return self.text


@dataclass(kw_only=True)
class BlobResourceContents(WireModel):
    """Binary resource contents, base64-encoded in ``blob``."""

    uri: str
    blob: str
    mime_type: str | None = None
    meta: dict[str, Any] | None = None

    @property
    def content(self) -> bytes:
        """The bytes, decoded: FastMCP's and the official SDK's name for them (``.content``)."""
        from base64 import b64decode

        return b64decode(self.blob)


def resource_contents_from_wire(
    data: dict[str, Any],
) -> TextResourceContents | BlobResourceContents:
    """Text or blob contents, told apart by which key is present."""
    return (BlobResourceContents if "blob" in data else TextResourceContents).from_wire(data)


# -- Content blocks -----------------------------------------------------------


@dataclass(kw_only=True)
class TextContent(WireModel):
    """``{"type": "text"}`` content."""

    text: str
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    type: ClassVar[str] = "text"

    def __post_init__(self) -> None:
        """TypeError for a ``text`` that is not a string (schema.ts ``text: string``): received,
        it is a client's :class:`~mcp_ref.errors.InvalidResult`; made by a tool, its mistake."""
        if not isinstance(self.text, str):
            raise TypeError("TextContent.text must be a string")


@dataclass(kw_only=True)
class ImageContent(WireModel):
    """``{"type": "image"}`` content: base64 ``data`` and its ``mime_type``."""

    data: str
    mime_type: str
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    type: ClassVar[str] = "image"


@dataclass(kw_only=True)
class AudioContent(WireModel):
    """``{"type": "audio"}`` content (2025-03-26 and later)."""

    data: str
    mime_type: str
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    type: ClassVar[str] = "audio"


@dataclass(kw_only=True)
class ResourceLink(WireModel):
    """``{"type": "resource_link"}``: a pointer to a resource (2025-06-18 and later)."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    type: ClassVar[str] = "resource_link"


@dataclass(kw_only=True)
class EmbeddedResource(WireModel):
    """``{"type": "resource"}``: resource contents carried inline."""

    resource: TextResourceContents | BlobResourceContents
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    _nested = {"resource": resource_contents_from_wire}
    type: ClassVar[str] = "resource"


@dataclass(kw_only=True)
class UnknownContent(WireModel):
    """A content block of a type this library does not model; see ``.raw``."""

    type: str | None = None


Content = (
    TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource | UnknownContent
)

_CONTENT_TYPES: dict[str | None, type[Content]] = {
    c.type: c for c in (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)
}


def text_block(text: str) -> dict[str, Any]:
    """The wire form of a ``TextContent`` block, built directly (the hot path of tool results)."""
    return {"type": "text", "text": text}


def drop_none(d: dict[str, Any]) -> dict[str, Any]:
    """``d`` without its None values: optional fields are omitted on the wire, never sent as null."""
    return {k: v for k, v in d.items() if v is not None}


def content_from_wire(data: dict[str, Any]) -> Content:
    """Build the content block class named by ``data["type"]`` (:class:`UnknownContent` for
    another type, one that is not a string, and a block that is not a JSON object)."""
    if not isinstance(data, dict):
        return UnknownContent(raw={"value": data})
    block_type = data.get("type")
    known = _CONTENT_TYPES.get(block_type) if isinstance(block_type, str) else None
    return (known or UnknownContent).from_wire(data)


# -- Tools --------------------------------------------------------------------


@dataclass(kw_only=True)
class Tool(WireModel):
    """A tool as ``tools/list`` describes it."""

    name: str
    input_schema: dict[str, Any]
    description: str | None = None
    title: str | None = None
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    execution: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None


@dataclass(kw_only=True)
class CallToolResult(WireModel):
    """The result of ``tools/call``.  ``is_error`` True means the tool itself failed."""

    content: list[Content] = field(default_factory=list)
    is_error: bool = False  # absent on the wire means false (schema: "isError ... default: false")
    structured_content: Any = None
    meta: dict[str, Any] | None = None
    _nested = {"content": content_from_wire}

    def __post_init__(self) -> None:
        """TypeError for an ``is_error`` that is not a boolean (2025-11-25 schema.ts: ``isError?:
        boolean``): a received ``"false"`` would read as a failure (a client reports it as
        :class:`~mcp_ref.errors.InvalidResult`)."""
        if not isinstance(self.is_error, bool):
            raise TypeError("CallToolResult.isError must be a boolean")

    def to_wire(self) -> dict[str, Any]:
        """The JSON object; ``isError`` is left out when false and it was not in the received JSON."""
        out = super().to_wire()
        if out.get("isError") is False and "isError" not in (self.raw or {}):
            del out["isError"]
        return out

    @property
    def text(self) -> str:
        """All text blocks of ``content`` joined by newlines (a convenience)."""
        return "\n".join(c.text for c in self.content if isinstance(c, TextContent))


# -- Lifecycle, logging -------------------------------------------------------


@dataclass(kw_only=True)
class InitializeResult(WireModel):
    """The server's answer to ``initialize``."""

    protocol_version: str
    capabilities: dict[str, Any]
    server_info: Implementation
    instructions: str | None = None
    meta: dict[str, Any] | None = None
    _nested = {"server_info": Implementation.from_wire}

    @classmethod
    def from_wire(cls, data: Any) -> Any:
        """:meth:`WireModel.from_wire`, and a TypeError for ``capabilities`` that are not an object
        (2025-11-25 schema.ts: "capabilities: ServerCapabilities"), which would surface later as
        a capability the server "did not declare"."""
        made = super().from_wire(data)
        if not isinstance(made.capabilities, dict):
            raise TypeError("InitializeResult.capabilities must be an object")
        return made


@dataclass(kw_only=True)
class DiscoverResult(WireModel):
    """The server's answer to ``server/discover`` (2026-07-28 server/discover): the versions it
    speaks, its capabilities and, from the result's ``_meta``, its identity."""

    supported_versions: list[str]
    capabilities: dict[str, Any]
    instructions: str | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None
    meta: dict[str, Any] | None = None

    @property
    def server_info(self) -> Implementation | None:
        """``io.modelcontextprotocol/serverInfo`` from ``_meta`` (or a top-level ``serverInfo``,
        as some servers send), None when the server did not say."""
        info = (self.meta or {}).get("io.modelcontextprotocol/serverInfo") or (self.raw or {}).get(
            "serverInfo"
        )
        try:
            return Implementation.from_wire(info) if isinstance(info, dict) else None
        except TypeError:  # name or version missing: not an Implementation
            return None
