"""Listings, written once: ``tools/list``, ``resources/list``, ``resources/templates/list`` and
``prompts/list`` all answer one page of items, stripped to the negotiated revision, with
``nextCursor`` when more follow (2025-11-25 server/utilities/pagination).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InvalidParams
from ..pagination import InvalidCursor

if TYPE_CHECKING:
    from ..request import RequestContext
    from .seams import Caller

#: kind -> (the result's key, whether listed items keep ``annotations`` at every revision).
#: Resource and template annotations exist since 2024-11-05; tool annotations since 2025-03-26.
KINDS = {
    "tools": ("tools", False),
    "resources": ("resources", True),
    "templates": ("resourceTemplates", True),
    "prompts": ("prompts", False),
}


def list_page(connection: Caller, context: RequestContext, params: dict, kind: str) -> dict:
    """One page of the server's ``kind`` listing for the request's revision."""
    key, keep_annotations = KINDS[kind]
    cursor = params.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise InvalidParams("Invalid params: cursor must be a string")
    server = connection.server
    try:
        # Items the caller may not use are left out before paging (the gate an extension sets),
        # so every page and cursor is of the caller's own listing.
        items = server.gate.filter_listing(connection.principal, kind, server.listings(kind))
        page, next_cursor = server.paginator.page(items, cursor, kind=kind)
    except InvalidCursor as exc:
        # 2025-11-25 server/utilities/pagination §Error Handling: "Invalid cursors SHOULD result in an error with code -32602".
        raise InvalidParams(f"Invalid params: invalid cursor ({exc})") from None
    version = connection.version_for(context)
    from ..older_revisions import strip_newer_fields  # loaded by the first listing

    result: dict[str, Any] = {
        key: [strip_newer_fields(item, version, keep_annotations=keep_annotations) for item in page]
    }
    if next_cursor:
        result["nextCursor"] = next_cursor
    return result
