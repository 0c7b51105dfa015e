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


#: The values of ``ElicitResult.action`` (the schema's enum, 2025-06-18 to 2026-07-28
#: client/elicitation): the client sends no other, and the server takes no other.
ELICIT_ACTIONS = ("accept", "decline", "cancel")


def elicit_result_problem(result: dict, mode: str, schema: dict | None) -> str | None:
    """What makes ``result`` (an elicitation handler's answer, as sent) no answer to a ``mode``
    elicitation asking for ``schema``, in a few words that quote none of its values; None if fine.

    2025-11-25 client/elicitation §Response Actions: ``action`` is "accept", "decline" or "cancel"
    (the schema's enum); ``content`` is "The submitted form data, only present when action is
    "accept" and mode was "form"" (schema ``ElicitResult``), "values matching the requested
    schema": each a property's restricted primitive type (§Requested Schema), a string, number or
    boolean, or a multi-select's list of strings.
    """
    action = result.get("action")
    if action not in ELICIT_ACTIONS:
        shown = repr(action) if action is None or isinstance(action, str) else type(action).__name__
        return f'its action is {shown[:40]}, not "accept", "decline" or "cancel"'
    content = result.get("content")
    if content is None:
        return None
    if action != "accept" or mode != "form":
        return f"it has content, which only an accepted form has (this is {action}, {mode} mode)"
    if not isinstance(content, dict):
        return "its content is not an object"
    properties = (schema or {}).get("properties") or {}
    for name, value in content.items():
        declared = properties.get(name)
        kind = declared.get("type") if isinstance(declared, dict) else None
        if not fits_form_type(value, kind):
            wanted = _WANTED.get(str(kind), "a string, number, boolean or list of strings")
            return f"its content's {str(name)[:40]!r} is not {wanted}"
    return None


#: What a form's value of each primitive type must be, in words.
_WANTED = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "a list of strings",
}


def fits_form_type(value: Any, kind: Any) -> bool:
    """Whether ``value`` is a form's value of the primitive ``kind`` (any of them when unknown)."""
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    is_strings = isinstance(value, list) and all(isinstance(item, str) for item in value)
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":  # JSON Schema: 2.0 is an integer, 2.5 is not
        return is_number and (isinstance(value, int) or value.is_integer())
    if kind == "number":
        return is_number
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return is_strings
    return isinstance(value, (str, bool)) or is_number or is_strings


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
