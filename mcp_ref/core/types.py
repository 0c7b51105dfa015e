"""MCP payloads as plain dataclasses.

Every class here maps to one type of the MCP schema (``schema.ts``).  Field
names are the snake_case of the wire's camelCase (``mime_type`` <->
``mimeType``, ``meta`` <-> ``_meta``); ``None`` fields are left off the wire.
Objects built from received JSON keep that JSON in ``.raw``, so a field this
library does not model yet (or a newer revision's extension) is never lost.

``from_wire(dict)`` builds an object; ``to_wire()`` gives the dict back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, cast


def _camel(name: str) -> str:
    if name == "meta":
        return "_meta"
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class WireModel:
    """Base of every payload class: the camelCase mapping and ``raw``.

    Subclasses are dataclasses; ``_nested`` maps a field to the function that
    builds it (applied to each item when the wire value is a list).
    """

    _nested: ClassVar[dict[str, Callable[[Any], Any]]] = {}
    _constant: ClassVar[dict[str, Any]] = {}  # wire keys with a fixed value, e.g. {"type": "text"}
    _fields_cache: ClassVar[dict[type, list[tuple[str, str]]]] = {}
    raw: dict | None  # declared by each dataclass subclass; annotation only, so no field here

    @classmethod
    def _wire_fields(cls) -> list[tuple[str, str]]:
        cached = WireModel._fields_cache.get(cls)
        if cached is None:
            cached = [(f.name, _camel(f.name)) for f in dataclasses.fields(cast(Any, cls))
                      if f.name != "raw" and not f.metadata.get("local")]
            WireModel._fields_cache[cls] = cached
        return cached

    @classmethod
    def from_wire(cls, data: dict):
        """Build an instance from a received JSON object (unknown keys stay in ``.raw``)."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__} expects a JSON object, got {type(data).__name__}")
        kwargs = {}
        nested = cls._nested
        for name, wire in cls._wire_fields():
            if wire in data:
                value = data[wire]
                build = nested.get(name)
                if build is not None and value is not None:
                    value = [build(v) for v in value] if isinstance(value, list) else build(value)
                kwargs[name] = value
        obj = cls(**kwargs)
        obj.raw = data
        return obj

    def to_wire(self) -> dict:
        """The JSON object for the wire (``None`` fields omitted; extra keys of ``.raw`` kept)."""
        raw = getattr(self, "raw", None)
        out = dict(raw) if raw else {}
        out.update(self._constant)
        for name, wire in self._wire_fields():
            value = getattr(self, name)
            if value is None:
                out.pop(wire, None)
                continue
            out[wire] = _wire_value(value)
        return out


def _wire_value(value: Any) -> Any:
    if isinstance(value, WireModel):
        return value.to_wire()
    if isinstance(value, list):
        return [_wire_value(v) for v in value]
    return value


def _raw_field():
    return field(default=None, repr=False, compare=False)


# -- Basics -------------------------------------------------------------------


@dataclass(kw_only=True)
class Implementation(WireModel):
    """``clientInfo`` / ``serverInfo``: who is on the other end."""

    name: str
    version: str
    title: str | None = None
    description: str | None = None
    website_url: str | None = None
    icons: list | None = None
    raw: dict | None = _raw_field()


@dataclass(kw_only=True)
class TextResourceContents(WireModel):
    """The text of a resource (``resources/read`` or an embedded resource)."""

    uri: str
    text: str
    mime_type: str | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()


@dataclass(kw_only=True)
class BlobResourceContents(WireModel):
    """Binary resource contents, base64-encoded in ``blob``."""

    uri: str
    blob: str
    mime_type: str | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()


def resource_contents_from_wire(data: dict) -> TextResourceContents | BlobResourceContents:
    """Text or blob contents, told apart by which key is present."""
    if "blob" in data:
        return BlobResourceContents.from_wire(data)
    return TextResourceContents.from_wire(data)


# -- Content blocks -----------------------------------------------------------


@dataclass(kw_only=True)
class TextContent(WireModel):
    """``{"type": "text"}`` content."""

    text: str
    annotations: dict | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()
    _constant = {"type": "text"}
    type: ClassVar[str] = "text"


@dataclass(kw_only=True)
class ImageContent(WireModel):
    """``{"type": "image"}`` content: base64 ``data`` and its ``mime_type``."""

    data: str
    mime_type: str
    annotations: dict | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()
    _constant = {"type": "image"}
    type: ClassVar[str] = "image"


@dataclass(kw_only=True)
class AudioContent(WireModel):
    """``{"type": "audio"}`` content (2025-03-26 and later)."""

    data: str
    mime_type: str
    annotations: dict | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()
    _constant = {"type": "audio"}
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
    annotations: dict | None = None
    icons: list | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()
    _constant = {"type": "resource_link"}
    type: ClassVar[str] = "resource_link"


@dataclass(kw_only=True)
class EmbeddedResource(WireModel):
    """``{"type": "resource"}``: resource contents carried inline."""

    resource: TextResourceContents | BlobResourceContents
    annotations: dict | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()
    _constant = {"type": "resource"}
    _nested = {"resource": resource_contents_from_wire}
    type: ClassVar[str] = "resource"


@dataclass(kw_only=True)
class UnknownContent(WireModel):
    """A content block of a type this library does not model; see ``.raw``."""

    type: str | None = None
    raw: dict | None = _raw_field()


_CONTENT_TYPES: dict[str | None, type[WireModel]] = {
    "text": TextContent,
    "image": ImageContent,
    "audio": AudioContent,
    "resource_link": ResourceLink,
    "resource": EmbeddedResource,
}

Content = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource | UnknownContent


def text_block(text: str) -> dict:
    """The wire form of a ``TextContent`` block, built directly (the hot path of tool results)."""
    return {"type": "text", "text": text}


#: The first bytes of the media formats a tool's ``bytes`` result is recognised as.
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"), (b"OggS", "audio/ogg"), (b"fLaC", "audio/flac"), (b"ID3", "audio/mpeg"),
    (b"\xff\xfb", "audio/mpeg"), (b"\xff\xf3", "audio/mpeg"), (b"\xff\xf2", "audio/mpeg"),
)
_FORMATS = {
    "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
    "svg": "image/svg+xml", "bmp": "image/bmp", "wav": "audio/wav", "mp3": "audio/mpeg", "ogg": "audio/ogg",
    "flac": "audio/flac", "m4a": "audio/mp4", "aac": "audio/aac", "webm": "audio/webm",
}
#: The URI of a tool's ``bytes`` result of no recognised format, sent as an embedded blob.
BYTES_RESULT_URI = "mcp-ref:tool-result"


def sniff_mime_type(data: bytes) -> str | None:
    """The MIME type the first bytes of ``data`` name (PNG, JPEG, GIF, WebP, WAV, MP3, Ogg, FLAC), or None."""
    if data[:4] == b"RIFF" and data[8:12] in (b"WEBP", b"WAVE"):
        return "image/webp" if data[8:12] == b"WEBP" else "audio/wav"
    return next((mime for magic, mime in _SIGNATURES if data.startswith(magic)), None)


def media_block(data: bytes) -> dict:
    """``bytes`` as a content block: image or audio when the format is recognised, else an embedded blob."""
    import base64

    encoded = base64.b64encode(data).decode("ascii")
    mime = sniff_mime_type(data)
    if mime is None:
        return {"type": "resource", "resource": {"uri": BYTES_RESULT_URI, "mimeType": "application/octet-stream",
                                                 "blob": encoded}}
    return {"type": mime.partition("/")[0], "data": encoded, "mimeType": mime}


def _media(kind: str, path: Any, data: bytes | None, format: str | None) -> tuple[str, str]:
    """(base64 data, MIME type) for :class:`Image` and :class:`Audio`."""
    import base64

    if (path is None) == (data is None):
        raise ValueError(f"{kind.title()}() takes a path or data=, not both or neither")
    if path is not None:
        from pathlib import Path

        path = Path(path)
        data = path.read_bytes()
        format = format or path.suffix.lstrip(".")
    data = cast(bytes, data)  # exactly one of path / data was given (checked above)
    mime = _FORMATS.get((format or "").lower()) or sniff_mime_type(data)
    if mime is None and format:
        mime = f"{kind}/{format.lower()}"
    if mime is None or not mime.startswith(kind + "/"):
        raise ValueError(f"{kind.title()}(): cannot tell the {kind} format; pass format= (e.g. 'png')"
                         if mime is None else f"{kind.title()}(): this is {mime}, not an {kind}")
    return base64.b64encode(data).decode("ascii"), mime


class Image(ImageContent):
    """An image in a tool's result: ``Image(path="chart.png")`` or ``Image(data=png_bytes, format="png")``.

    The format comes from ``format``, else the file's suffix, else the data's first bytes.
    It is an :class:`ImageContent`, so it goes anywhere one does.
    """

    def __init__(self, path: Any = None, *, data: bytes | None = None, format: str | None = None,
                 annotations: dict | None = None):
        encoded, mime = _media("image", path, data, format)
        super().__init__(data=encoded, mime_type=mime, annotations=annotations)


class Audio(AudioContent):
    """Audio in a tool's result: ``Audio(path="note.wav")`` or ``Audio(data=wav_bytes, format="wav")`` (2025-03-26 on)."""

    def __init__(self, path: Any = None, *, data: bytes | None = None, format: str | None = None,
                 annotations: dict | None = None):
        encoded, mime = _media("audio", path, data, format)
        super().__init__(data=encoded, mime_type=mime, annotations=annotations)


def drop_none(d: dict) -> dict:
    """``d`` without its None values: optional fields are omitted on the wire, never sent as null."""
    return {k: v for k, v in d.items() if v is not None}


def content_from_wire(data: dict) -> Content:
    """Build the content block class named by ``data["type"]``."""
    cls = _CONTENT_TYPES.get(data.get("type")) if isinstance(data, dict) else None
    if cls is None:
        return UnknownContent.from_wire(data) if isinstance(data, dict) else UnknownContent(raw={"value": data})
    return cls.from_wire(data)


# -- Tools --------------------------------------------------------------------


@dataclass(kw_only=True)
class Tool(WireModel):
    """A tool as ``tools/list`` describes it."""

    name: str
    input_schema: dict
    description: str | None = None
    title: str | None = None
    output_schema: dict | None = None
    annotations: dict | None = None
    icons: list | None = None
    execution: dict | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()


@dataclass(kw_only=True)
class CallToolResult(WireModel):
    """The result of ``tools/call``.  ``is_error`` True means the tool itself failed."""

    content: list = field(default_factory=list)
    is_error: bool = False  # absent on the wire means false (schema: "isError ... default: false")
    structured_content: Any = None
    meta: dict | None = None
    raw: dict | None = _raw_field()
    _nested = {"content": content_from_wire}

    def to_wire(self) -> dict:
        """The JSON object; ``isError`` is left out when false and it was not in the received JSON."""
        out = super().to_wire()
        if out.get("isError") is False and "isError" not in (self.raw or {}):
            del out["isError"]
        return out

    @property
    def text(self) -> str:
        """All text blocks of ``content`` joined by newlines (a convenience)."""
        return "\n".join(c.text for c in self.content if isinstance(c, TextContent))


# -- Resources ----------------------------------------------------------------


@dataclass(kw_only=True)
class Resource(WireModel):
    """A concrete resource as ``resources/list`` describes it."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict | None = None
    icons: list | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()


@dataclass(kw_only=True)
class ResourceTemplate(WireModel):
    """A parameterised resource (an RFC 6570 URI template)."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: dict | None = None
    icons: list | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()


@dataclass(kw_only=True)
class ReadResourceResult(WireModel):
    """The result of ``resources/read``: one or more contents."""

    contents: list = field(default_factory=list)
    meta: dict | None = None
    raw: dict | None = _raw_field()
    _nested = {"contents": resource_contents_from_wire}


# -- Prompts ------------------------------------------------------------------


@dataclass(kw_only=True)
class PromptArgument(WireModel):
    """One argument a prompt takes."""

    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None
    raw: dict | None = _raw_field()


@dataclass(kw_only=True)
class Prompt(WireModel):
    """A prompt template as ``prompts/list`` describes it."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: list | None = None
    icons: list | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()
    _nested = {"arguments": PromptArgument.from_wire}


@dataclass(kw_only=True)
class PromptMessage(WireModel):
    """One message of a prompt: a ``role`` and one content block."""

    role: str
    content: Content
    raw: dict | None = _raw_field()
    _nested = {"content": content_from_wire}


@dataclass(kw_only=True)
class GetPromptResult(WireModel):
    """The result of ``prompts/get``."""

    messages: list = field(default_factory=list)
    description: str | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()
    _nested = {"messages": PromptMessage.from_wire}


# -- Client features ----------------------------------------------------------


@dataclass(kw_only=True)
class Root(WireModel):
    """A filesystem root the client exposes (``file://`` URI)."""

    uri: str
    name: str | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()


@dataclass(kw_only=True)
class SamplingMessage(WireModel):
    """One message of a sampling conversation."""

    role: str
    content: Any
    meta: dict | None = None
    raw: dict | None = _raw_field()
    _nested = {"content": content_from_wire}


@dataclass(kw_only=True)
class CreateMessageParams(WireModel):
    """The params of ``sampling/createMessage``, as a sampling handler receives them."""

    messages: list
    max_tokens: int
    system_prompt: str | None = None
    include_context: str | None = None
    temperature: float | None = None
    stop_sequences: list | None = None
    model_preferences: dict | None = None
    metadata: dict | None = None
    tools: list | None = None
    tool_choice: dict | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()
    _nested = {"messages": SamplingMessage.from_wire}


@dataclass(kw_only=True)
class CreateMessageResult(WireModel):
    """What a sampling handler returns: the model's message."""

    role: str
    content: Any
    model: str
    stop_reason: str | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()
    _nested = {"content": content_from_wire}


@dataclass(kw_only=True)
class ElicitParams(WireModel):
    """The params of ``elicitation/create``, as an elicitation handler receives them."""

    message: str
    requested_schema: dict | None = None
    mode: str | None = None
    url: str | None = None
    elicitation_id: str | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()


@dataclass(kw_only=True)
class ElicitResult(WireModel):
    """The user's answer: ``action`` is "accept", "decline" or "cancel".

    ``data`` (never sent) is the accepted ``content`` as an instance of the dataclass given to
    ``Context.elicit(schema=SomeDataclass)``; None otherwise.
    """

    action: str
    content: dict | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()
    data: Any = field(default=None, compare=False, metadata={"local": True})


# -- Lifecycle, logging, completion, pages ------------------------------------


@dataclass(kw_only=True)
class InitializeResult(WireModel):
    """The server's answer to ``initialize``."""

    protocol_version: str
    capabilities: dict
    server_info: Implementation
    instructions: str | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()
    _nested = {"server_info": Implementation.from_wire}


@dataclass(kw_only=True)
class DiscoverResult(WireModel):
    """The server's answer to ``server/discover`` (2026-07-28 server/discover): the versions it
    speaks, its capabilities and, from the result's ``_meta``, its identity."""

    supported_versions: list
    capabilities: dict
    instructions: str | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()

    @property
    def server_info(self) -> Implementation | None:
        """``io.modelcontextprotocol/serverInfo`` from ``_meta`` (or a top-level ``serverInfo``,
        as some servers send), None when the server did not say."""
        info = (self.meta or {}).get("io.modelcontextprotocol/serverInfo") or (self.raw or {}).get("serverInfo")
        try:
            return Implementation.from_wire(info) if isinstance(info, dict) else None
        except TypeError:  # name or version missing: not an Implementation
            return None


@dataclass(kw_only=True)
class LogMessage(WireModel):
    """A ``notifications/message`` log entry from the server."""

    level: str
    data: Any
    logger: str | None = None
    meta: dict | None = None
    raw: dict | None = _raw_field()

    def to_wire(self) -> dict:
        """The JSON object; ``data`` is required and may be any JSON value, so None is sent as null."""
        out = super().to_wire()
        out.setdefault("data", None)
        return out


@dataclass(kw_only=True)
class Completion(WireModel):
    """The ``completion`` of a ``completion/complete`` result."""

    values: list
    total: int | None = None
    has_more: bool | None = None
    raw: dict | None = _raw_field()


@dataclass(kw_only=True)
class Page:
    """One page of a paginated listing: ``items`` and the ``next_cursor`` (None on the last)."""

    items: list
    next_cursor: str | None = None
    raw: dict | None = field(default=None, repr=False, compare=False)
