"""MCP payloads as dataclasses (made ~40x cheaper by this module's own ``dataclass``: :func:`_record`).

Every class here maps to one type of the MCP schema (``schema.ts``).  Field
names are the snake_case of the wire's camelCase (``mime_type`` <->
``mimeType``, ``meta`` <-> ``_meta``); ``None`` fields are left off the wire.
Objects built from received JSON keep that JSON in ``.raw``, so a field this
library does not model yet (or a newer revision's extension) is never lost.

``from_wire(dict)`` builds an object; ``to_wire()`` gives the dict back.

Here: the base, content blocks, tools, and the results of the handshake and discovery — what a
``tools/call`` round trip needs.  Three groups live in modules of their own, loaded on first use
so that a plain client or server does not pay for them: :mod:`mcp_ref.core.feature_types`
(resources, prompts, completion, roots, a listing's ``Page``), :mod:`mcp_ref.core.media`
(``Image``, ``Audio``, ``media_block`` ...) and :mod:`mcp_ref.core.sampling_and_elicitation`
(``CreateMessageParams``, ``ElicitResult`` ...).  Their names import from here too
(``from mcp_ref.core.types import Image``), typed precisely when imported from their module.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

MISSING: Any = object()  # no default (the standard module's MISSING, without loading it)
_KEYS = ("default", "default_factory", "repr", "compare", "metadata")


class _Field:
    """A payload field: ``field()`` of :mod:`dataclasses`, for the records below."""

    __slots__ = ("name", "type", *_KEYS)

    def __init__(self, *, default: Any = MISSING, default_factory: Any = MISSING, repr: bool = True,
                 compare: bool = True, metadata: Any = None):
        self.name, self.default, self.default_factory, self.repr, self.compare = "", default, default_factory, repr, compare
        self.metadata, self.type = metadata or {}, cast(Any, None)


def _record(cls: Any = None, /, *, kw_only: bool) -> Any:
    """``@dataclasses.dataclass(kw_only=True)`` at ~1/40 of its cost, loading neither it nor ``inspect`` (issue 24): the same
    ``__init__``, ``__repr__``, ``__eq__``; ``__dataclass_fields__`` (``fields``, ``asdict``, ``replace``) made on first use."""
    if cls is None:
        return lambda c: _record(c, kw_only=kw_only)
    fields, own = {f.name: f for base in cls.__mro__[:0:-1] for f in base.__dict__.get("__wire_fields__", ())}, cls.__dict__
    for name, annotation in own.get("__annotations__", {}).items():
        if not str(annotation).startswith(("ClassVar", "typing.ClassVar")):
            f = fields[name] = own[name] if isinstance(own.get(name), _Field) else _Field(default=own.get(name, MISSING))
            f.name, f.type = name, annotation
            if f.default is not MISSING:
                setattr(cls, name, f.default)
            elif name in own:
                delattr(cls, name)
    cls.__wire_fields__, cls.__dataclass_fields__ = tuple(fields.values()), _StandardFields()
    cls.__wire_names__ = [(n, _camel(n)) for n, f in fields.items() if n != "raw" and not f.metadata.get("local")]
    cls.__init__, cls.__hash__ = own.get("__init__") or _first_init, None
    cls.__repr__, cls.__eq__ = own.get("__repr__", _repr), own.get("__eq__", _eq)
    if isinstance(own.get("type"), str) and "_constant" not in own:  # a content block's type (a ClassVar)
        cls._constant = {"type": own["type"]}
    return cls


def _first_init(self: Any, **kwargs: Any) -> None:
    owner: Any = next(c for c in type(self).__mro__ if c.__dict__.get("__init__") is _first_init)
    _compile(owner)  # installs the real __init__ on the class it was made for
    owner.__init__(self, **kwargs)


def _compile(cls: Any) -> Callable[[dict[str, Any]], Any]:
    """``cls.__init__`` and ``from_wire`` in straight-line code: ``data.get("wireKey", default)`` for each field (a missing
    required key: ``__init__``'s TypeError; nested values built unless null), the ``__dict__`` set at once."""
    namespace, params, init, lines, wired = {"cls": cls, "MISSING": MISSING, "new": object.__new__}, [], [], [], {}
    wire_names = dict(cls.__wire_names__)
    for i, f in enumerate(cls.__wire_fields__):
        wire, build, factory, required = wire_names.get(f.name), getattr(cls, "_nested", {}).get(f.name), f.default_factory is not MISSING, f.default is f.default_factory is MISSING
        namespace[f"d{i}"], namespace[f"f{i}"], namespace[f"b{i}"], wired[f.name] = f.default, f.default_factory, build, f"v{i}"
        params.append(f.name if required else f"{f.name}=MISSING" if factory else f"{f.name}=d{i}")
        init.append(f"self.{f.name} = f{i}() if {f.name} is MISSING else {f.name}" if factory else f"self.{f.name} = {f.name}")
        if wire is None:  # raw: the JSON; a field not on the wire: its default
            wired[f.name] = "data" if f.name == "raw" else f"f{i}()" if factory else f"d{i}"
            continue
        missing = f"{cls.__name__}.__init__() missing 1 required keyword-only argument: {f.name!r}"
        lines.append(f"if {wire!r} not in data:\n        raise TypeError({missing!r})\n    v{i} = data[{wire!r}]" if required else
                     f"v{i} = data.get({wire!r}, {'MISSING' if factory else f'd{i}'})")
        lines += [f"if v{i} is MISSING:\n        v{i} = f{i}()"] if factory else []
        if build is not None:
            lines.append(f"if v{i} is not None:\n        v{i} = list(map(b{i}, v{i})) if isinstance(v{i}, list) else b{i}(v{i})")
    wired_code = ", ".join(f"{k!r}: {v}" for k, v in wired.items())
    exec(f"def __init__(self, *, {', '.join(params)}):\n    " + "\n    ".join(init) + "\n\ndef from_wire(data):\n    "
         + "\n    ".join([*lines, "o = new(cls)", f"o.__dict__ = {{{wired_code}}}", "return o"]), namespace)
    if cls.__dict__.get("__init__") is _first_init:
        cls.__init__ = namespace["__init__"]
        cls.__init__.__qualname__ = f"{cls.__qualname__}.__init__"
    _BUILDERS[cls] = namespace["from_wire"]
    return namespace["from_wire"]


def _repr(self: Any) -> str:
    return f"{type(self).__qualname__}({', '.join(f'{f.name}={getattr(self, f.name)!r}' for f in self.__wire_fields__ if f.repr)})"


def _eq(self: Any, other: Any) -> Any:
    compared = [f.name for f in self.__wire_fields__ if f.compare]
    return [getattr(self, n) for n in compared] == [getattr(other, n) for n in compared] if other.__class__ is self.__class__ else NotImplemented


class _StandardFields:
    """``__dataclass_fields__``: the standard module's ``Field`` objects, made on first use."""

    def __get__(self, obj: Any, owner: Any) -> dict[str, Any]:
        import dataclasses

        fields = owner.__wire_fields__
        shadow: Any = type(owner.__name__, (), {"__annotations__": {f.name: f.type for f in fields}, **{f.name: dataclasses.field(
            kw_only=True, **{k: getattr(f, k) for k in _KEYS if getattr(f, k) is not MISSING}) for f in fields}})
        standard: dict[str, Any] = dataclasses.dataclass(shadow).__dataclass_fields__
        type.__setattr__(owner, "__dataclass_fields__", standard)
        return standard


if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass, field as field
else:
    dataclass, field = _record, _Field


def _camel(name: str) -> str:
    if name == "meta":
        return "_meta"
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


_Model = TypeVar("_Model", bound="WireModel")
#: Each class's ``from_wire`` body, compiled on its first use (:func:`_compile`).
_BUILDERS: dict[type, Callable[[dict[str, Any]], Any]] = {}


def raw_field() -> Any:
    """The ``raw`` field of a payload dataclass: the received JSON, kept out of ``repr`` and ``==``."""
    return field(default=None, repr=False, compare=False)


@dataclass(kw_only=True)
class WireModel:
    """Base of every payload class (each a dataclass): the camelCase mapping and ``raw``, the received JSON.
    ``_nested`` maps a field to the function that builds it (applied to each item when the wire value is a list)."""

    _nested: ClassVar[dict[str, Callable[[Any], Any]]] = {}
    _constant: ClassVar[dict[str, Any]] = {}  # wire keys with a fixed value, e.g. {"type": "text"}
    __wire_fields__: ClassVar[tuple[Any, ...]]  # set by the decorator: the fields (name, default ...)
    __wire_names__: ClassVar[list[tuple[str, str]]]  # (field, wire key), e.g. ("mime_type", "mimeType")
    raw: dict[str, Any] | None = raw_field()

    @classmethod
    def from_wire(cls: type[_Model], data: dict[str, Any] | _Model) -> _Model:
        """Build an instance from a received JSON object (unknown keys stay in ``.raw``)."""
        if not isinstance(data, dict):
            if isinstance(data, cls):
                return data
            raise TypeError(f"{cls.__name__} expects a JSON object, got {type(data).__name__}")
        return (_BUILDERS.get(cls) or _compile(cls))(data)

    def to_wire(self) -> dict[str, Any]:
        """The JSON object for the wire (``None`` fields omitted; extra keys of ``.raw`` kept)."""
        raw = getattr(self, "raw", None)
        out = dict(raw) if raw else {}
        out.update(self._constant)
        for name, wire in self.__wire_names__:
            if (value := getattr(self, name)) is None:
                out.pop(wire, None)
            else:
                out[wire] = _wire_value(value)
        return out


def _wire_value(value: Any) -> Any:
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


@dataclass(kw_only=True)
class BlobResourceContents(WireModel):
    """Binary resource contents, base64-encoded in ``blob``."""

    uri: str
    blob: str
    mime_type: str | None = None
    meta: dict[str, Any] | None = None


def resource_contents_from_wire(data: dict[str, Any]) -> TextResourceContents | BlobResourceContents:
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


_CONTENT_TYPES: dict[str | None, type[TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource]] = {
    c.type: c for c in (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)}

Content = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource | UnknownContent


def text_block(text: str) -> dict[str, Any]:
    """The wire form of a ``TextContent`` block, built directly (the hot path of tool results)."""
    return {"type": "text", "text": text}


def drop_none(d: dict[str, Any]) -> dict[str, Any]:
    """``d`` without its None values: optional fields are omitted on the wire, never sent as null."""
    return {k: v for k, v in d.items() if v is not None}


def content_from_wire(data: dict[str, Any]) -> Content:
    """Build the content block class named by ``data["type"]``."""
    cls = _CONTENT_TYPES.get(data.get("type")) if isinstance(data, dict) else None
    if cls is None:
        return UnknownContent.from_wire(data) if isinstance(data, dict) else UnknownContent(raw={"value": data})
    return (_BUILDERS.get(cls) or _compile(cls))(data)


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
        info = (self.meta or {}).get("io.modelcontextprotocol/serverInfo") or (self.raw or {}).get("serverInfo")
        try:
            return Implementation.from_wire(info) if isinstance(info, dict) else None
        except TypeError:  # name or version missing: not an Implementation
            return None


#: The names defined in a module of their own, loaded when one of them is first asked for here.
_ELSEWHERE = {
    **dict.fromkeys(("Image", "Audio", "sniff_mime_type", "media_block", "BYTES_RESULT_URI"), "media"),
    **dict.fromkeys(("SamplingMessage", "CreateMessageParams", "CreateMessageResult", "ElicitParams",
                     "ElicitResult"), "sampling_and_elicitation"),
    **dict.fromkeys(("Resource", "ResourceTemplate", "ReadResourceResult", "PromptArgument", "Prompt",
                     "PromptMessage", "GetPromptResult", "Root", "Completion", "Page", "LogMessage"), "feature_types"),
}


def __getattr__(name: str) -> Any:
    """``Image``, ``CreateMessageParams`` ... under this module's name (see the module docstring)."""
    module = _ELSEWHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__package__}.{module}"), name)
