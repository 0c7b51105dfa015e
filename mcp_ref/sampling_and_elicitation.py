"""The payloads of the two requests a server sends for its user or model: ``sampling/createMessage``
(:class:`CreateMessageParams`, answered with :class:`CreateMessageResult`) and ``elicitation/create``
(:class:`ElicitParams`, answered with :class:`ElicitResult`).

Loaded when first needed (a client with a sampling or elicitation handler, a tool that asks); the
names are also importable from :mod:`mcp_ref.types` and ``mcp_ref``.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .types import WireModel, content_from_wire

_R = TypeVar("_R", bound="Awaitable")

__all__ = [
    "SamplingMessage",
    "CreateMessageParams",
    "CreateMessageResult",
    "ElicitParams",
    "ElicitResult",
]


class Awaitable:
    """A result that awaits to itself: ``result = await ctx.sample(...)`` in an ``async def`` handler
    (the answer is already here when the Context call returns; see :mod:`mcp_ref.server.asking`)."""

    def __await__(self: _R) -> Generator[Any, None, _R]:
        yield from ()
        return self


@dataclass(kw_only=True)
class SamplingMessage(WireModel):
    """One message of a sampling conversation."""

    role: str
    content: Any
    meta: dict[str, Any] | None = None
    _nested = {"content": content_from_wire}


@dataclass(kw_only=True)
class CreateMessageParams(WireModel):
    """The params of ``sampling/createMessage``, as a sampling handler receives them."""

    messages: list[SamplingMessage]
    max_tokens: int
    system_prompt: str | None = None
    include_context: str | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None
    model_preferences: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    _nested = {"messages": SamplingMessage.from_wire}


@dataclass(kw_only=True)
class CreateMessageResult(WireModel, Awaitable):
    """What a sampling handler returns: the model's message."""

    role: str
    content: Any
    model: str
    stop_reason: str | None = None
    meta: dict[str, Any] | None = None
    _nested = {"content": content_from_wire}

    @property
    def text(self) -> str | None:
        """The text of the message, when its content is text (else None)."""
        return (
            getattr(self.content, "text", None)
            if not isinstance(self.content, dict)
            else self.content.get("text")
        )


@dataclass(kw_only=True)
class ElicitParams(WireModel):
    """The params of ``elicitation/create``, as an elicitation handler receives them."""

    message: str
    requested_schema: dict[str, Any] | None = None
    mode: str | None = None
    url: str | None = None
    elicitation_id: str | None = None
    meta: dict[str, Any] | None = None


@dataclass(kw_only=True)
class ElicitResult(WireModel, Awaitable):
    """The user's answer: ``action`` is "accept", "decline" or "cancel".

    ``data`` (never sent) is the accepted ``content`` as an instance of the dataclass given to
    ``Context.elicit(schema=SomeDataclass)``; None otherwise.
    """

    action: str
    content: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    data: Any = field(default=None, compare=False, metadata={"local": True})
