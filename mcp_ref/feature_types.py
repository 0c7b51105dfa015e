"""The payloads of the features beside tools: resources, prompts, completion, roots and log
messages, and one page of a paginated listing.

Loaded when first needed (a client that lists or reads them, a server with prompts); the names are
also importable from :mod:`mcp_ref.types` and ``mcp_ref``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .types import (
    BlobResourceContents,
    Content,
    TextResourceContents,
    WireModel,
    content_from_wire,
    resource_contents_from_wire,
)

__all__ = [
    "Resource",
    "ResourceTemplate",
    "ReadResourceResult",
    "PromptArgument",
    "Prompt",
    "PromptMessage",
    "GetPromptResult",
    "Root",
    "Completion",
    "Page",
]


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
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None


@dataclass(kw_only=True)
class ResourceTemplate(WireModel):
    """A parameterised resource (an RFC 6570 URI template)."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None


@dataclass(kw_only=True)
class ReadResourceResult(WireModel):
    """The result of ``resources/read``: one or more contents."""

    contents: list[TextResourceContents | BlobResourceContents] = field(default_factory=list)
    meta: dict[str, Any] | None = None
    _nested = {"contents": resource_contents_from_wire}


# -- Prompts ------------------------------------------------------------------


@dataclass(kw_only=True)
class PromptArgument(WireModel):
    """One argument a prompt takes."""

    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None


@dataclass(kw_only=True)
class Prompt(WireModel):
    """A prompt template as ``prompts/list`` describes it."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[dict[str, Any]] | None = None
    meta: dict[str, Any] | None = None
    _nested = {"arguments": PromptArgument.from_wire}


@dataclass(kw_only=True)
class PromptMessage(WireModel):
    """One message of a prompt: a ``role`` and one content block."""

    role: str
    content: Content
    _nested = {"content": content_from_wire}


@dataclass(kw_only=True)
class GetPromptResult(WireModel):
    """The result of ``prompts/get``."""

    messages: list[PromptMessage] = field(default_factory=list)
    description: str | None = None
    meta: dict[str, Any] | None = None
    _nested = {"messages": PromptMessage.from_wire}


# -- Client features ----------------------------------------------------------


@dataclass(kw_only=True)
class Root(WireModel):
    """A filesystem root the client exposes (``file://`` URI)."""

    uri: str
    name: str | None = None
    meta: dict[str, Any] | None = None


@dataclass(kw_only=True)
class Completion(WireModel):
    """The ``completion`` of a ``completion/complete`` result."""

    values: list[str]
    total: int | None = None
    has_more: bool | None = None


@dataclass(kw_only=True)
class Page:
    """One page of a paginated listing: ``items`` and the ``next_cursor`` (None on the last)."""

    items: list[Any]
    next_cursor: str | None = None
    raw: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def listing(cls, result: dict[str, Any], key: str, item: type[WireModel]) -> Page:
        """The page a listing's ``result`` holds: its array ``key`` (``tools`` ...; absent: no
        items), each item built as an ``item``.  TypeError when it is not an array, or an item is
        not an ``item`` (:meth:`WireModel.from_wire`)."""
        listed = result.get(key, [])
        if not isinstance(listed, list):
            raise TypeError(f"{key} must be an array")
        items = [item.from_wire(data) for data in listed]
        return cls(items=items, next_cursor=result.get("nextCursor"), raw=result)


@dataclass(kw_only=True)
class LogMessage(WireModel):
    """A ``notifications/message`` log entry from the server."""

    level: str
    data: Any
    logger: str | None = None
    meta: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        """The JSON object; ``data`` is required and may be any JSON value, so None is sent as null."""
        out = super().to_wire()
        out.setdefault("data", None)
        return out
