"""A result a tool shaped itself: a ``CallToolResult``, or a dict that has the shape of one.

:func:`mcp_ref.server.tools.shape_result` sends such a result as it is, and any other return value
as content (and structured content).  A tool without an output schema may return a dict of its
own data that happens to hold a ``"content"`` list (an article's paragraphs); sent as it is, it
would break the ``CallToolResult`` schema and a client would lose its text.  So a dict is taken
as shaped by the tool only when it is one in every part this module checks
(:func:`self_shaped`); otherwise it is a plain value, sent as JSON text and, with an output
schema, as structured content.  Loaded only when a tool returns one of the two.
"""

from __future__ import annotations

from typing import Any

from ..jsonable import no_json_form
from ..types import CallToolResult

__all__ = ["is_call_tool_result", "self_shaped"]

#: The content block types (2025-11-25 schema ``ContentBlock``) and the keys each requires, with
#: the JSON type of each: ``TextContent`` a ``text``, ``ImageContent`` and ``AudioContent``
#: ``data`` and ``mimeType``, ``ResourceLink`` (a ``Resource``) ``uri`` and ``name``,
#: ``EmbeddedResource`` a ``resource`` object (contents: :func:`_is_resource_contents`).
REQUIRED: dict[str, dict[str, type]] = {
    "text": {"text": str},
    "image": {"data": str, "mimeType": str},
    "audio": {"data": str, "mimeType": str},
    "resource_link": {"uri": str, "name": str},
    "resource": {"resource": dict},
}


def self_shaped(value: Any) -> dict | None:
    """The ``CallToolResult`` dict of ``value`` when the tool shaped it itself (a
    :class:`~mcp_ref.types.CallToolResult`, or a dict :func:`is_call_tool_result` takes); None
    for any other value.  ValueError when it has no JSON form (a NaN, an object of no JSON kind):
    the tool's mistake, found here, before the session encodes the answer and could only make
    it -32603."""
    if isinstance(value, CallToolResult):
        result = value.to_wire()
    elif is_call_tool_result(value):
        result = dict(value)
    else:
        return None
    problem = no_json_form(result, "result")  # walked, not encoded: the session encodes it once
    if problem is not None:
        raise ValueError(problem)
    return result


def is_call_tool_result(value: Any) -> bool:
    """True when ``value`` has the shape of a ``CallToolResult`` (2025-11-25 schema): ``content``
    an array of content blocks (each a known ``type`` with its required keys), ``isError`` a
    boolean and ``structuredContent`` and ``_meta`` objects where present."""
    if not isinstance(value, dict) or not isinstance(value.get("content"), list):
        return False
    if not isinstance(value.get("isError", False), bool):
        return False
    if not all(isinstance(value.get(key, {}), dict) for key in ("structuredContent", "_meta")):
        return False
    return all(_is_block(block) for block in value["content"])


def _is_block(block: Any) -> bool:
    """True when ``block`` is a content block: a known ``type`` and its required keys, each of
    its JSON type."""
    if not isinstance(block, dict):
        return False
    kind = block.get("type")
    required = REQUIRED.get(kind) if isinstance(kind, str) else None
    if required is None:
        return False
    if not all(isinstance(block.get(key), json_type) for key, json_type in required.items()):
        return False
    if not _optional_fields_typed(block):
        return False
    return kind != "resource" or _is_resource_contents(block["resource"])


#: Optional keys of a content block or a resource's contents and their JSON types, where present
#: (2025-11-25 schema: ``mimeType`` a string, ``_meta`` and ``annotations`` objects).
OPTIONAL = {"mimeType": str, "_meta": dict, "annotations": dict}


def _optional_fields_typed(value: dict) -> bool:
    """True when each optional key of :data:`OPTIONAL` that ``value`` has is of its JSON type."""
    return all(isinstance(value[key], kind) for key, kind in OPTIONAL.items() if key in value)


def _is_resource_contents(contents: dict) -> bool:
    """True when ``contents`` (an embedded resource's ``resource``) is one the schema allows: a
    ``TextResourceContents`` (``uri`` and ``text``) or a ``BlobResourceContents`` (``uri`` and
    ``blob``, base64), each a string (2025-11-25 schema ``EmbeddedResource``; 2025-03-26 alike)."""
    if not isinstance(contents.get("uri"), str) or not _optional_fields_typed(contents):
        return False
    return isinstance(contents.get("text"), str) or isinstance(contents.get("blob"), str)
