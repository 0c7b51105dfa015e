"""Prompts, client side (2025-11-25 server/prompts): ``prompts/get``.

:meth:`mcp_ref.client.Client.get_prompt` renders a prompt.  Its arguments are sent as strings, as
GetPromptRequest's ``arguments: {[key: string]: string}`` requires, converted as a server writes
each value (:func:`mcp_ref.jsonable.text_arguments`).  Loaded by the first prompt asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..feature_types import GetPromptResult
from ..jsonable import text_arguments
from .connection import built

if TYPE_CHECKING:
    from .interfaces import Connection

__all__ = ["get_prompt"]


def get_prompt(connection: Connection, name: str, arguments: dict | None) -> GetPromptResult:
    """The prompt ``name`` rendered with ``arguments`` (each sent as a string; ValueError naming
    the prompt and the argument for a value with no JSON form)."""
    connection.require_capability("prompts", "prompts/get")
    params: dict[str, Any] = {"name": name}
    if arguments:
        params["arguments"] = text_arguments(f"prompts/get {name!r}", arguments)
    raw = connection.request("prompts/get", params)
    return built(GetPromptResult.from_wire, "prompts/get", raw, connection.protocol_version)
