"""A payload fitted to an older revision: fields and content blocks the negotiated revision lacks.

A server speaking an older revision strips a listed object's newer fields and turns content
blocks that revision cannot carry into text, so each message matches that revision's schema (the
revisions come from :mod:`mcp_ref.lifecycle`).  A server imports it when it first needs it, so
a plain one speaking the newest revision never loads it.
"""

from __future__ import annotations

from typing import Any

from .lifecycle import (
    AUDIO_CONTENT,
    ICONS,
    RESOURCE_LINKS,
    STRUCTURED_OUTPUT,
    TITLES,
    TOOL_ANNOTATIONS,
    at_least,
)

__all__ = ["strip_newer_fields", "content_for_revision", "tool_result_for_revision"]

# Fields of listed objects that first appeared in a revision; a server
# strips them when it speaks an older one, so each message matches the
# negotiated revision's schema.
_NEWER_FIELDS = {
    "title": TITLES,
    "outputSchema": STRUCTURED_OUTPUT,
    "annotations": TOOL_ANNOTATIONS,
    "icons": ICONS,
    "execution": ICONS,
}


def strip_newer_fields(
    obj: dict[str, Any], version: str | None, *, keep_annotations: bool = False
) -> dict[str, Any]:
    """A copy of a listed tool/resource/prompt without the fields ``version`` lacks.

    Resource and content ``annotations`` exist since 2024-11-05, only tool
    annotations are newer: pass ``keep_annotations=True`` for non-tools.
    """
    if version is None or version >= ICONS:
        return obj
    return {
        key: value
        for key, value in obj.items()
        # a field of every revision is newer than "" (kept by all)
        if version >= _NEWER_FIELDS.get(key, "") or (keep_annotations and key == "annotations")
    }


def content_for_revision(block: dict[str, Any], version: str | None) -> dict[str, Any]:
    """A content block the negotiated revision can carry.

    Audio content exists from 2025-03-26 and resource links from 2025-06-18;
    for an older peer they become a text block that says what was there, so
    the message stays valid for that revision's schema and nothing is lost
    silently.
    """
    kind = block.get("type")
    if kind == "audio" and not at_least(version, AUDIO_CONTENT):
        return {
            "type": "text",
            "text": f"[audio content ({block.get('mimeType', 'unknown type')}) "
            f"cannot be sent with protocol version {version}]",
        }
    if kind == "resource_link" and not at_least(version, RESOURCE_LINKS):
        name = block.get("name") or block.get("uri")
        return {"type": "text", "text": f"Resource {name}: {block.get('uri')}"}
    return block


def tool_result_for_revision(result: dict[str, Any], version: str | None) -> dict[str, Any]:
    """``result`` (a ``CallToolResult``) as the negotiated revision can carry it: without
    ``structuredContent`` before 2025-06-18, and its content blocks as :func:`content_for_revision`
    makes them."""
    if not at_least(version, STRUCTURED_OUTPUT):
        result.pop("structuredContent", None)
    result["content"] = [
        content_for_revision(block, version) for block in result.get("content", [])
    ]
    return result
