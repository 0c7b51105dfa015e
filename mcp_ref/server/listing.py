"""Listings, written once: ``tools/list``, ``resources/list``, ``resources/templates/list`` and
``prompts/list`` all answer one page of items, stripped to the negotiated revision, with
``nextCursor`` when more follow (2025-11-25 server/utilities/pagination).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.errors import InvalidParams
from ..core.pagination import InvalidCursor

if TYPE_CHECKING:
    from ..core.requests import RequestContext
    from .seams import Caller

#: kind -> (the result's key, whether listed items keep ``annotations`` at every revision).
#: Resource and template annotations exist since 2024-11-05; tool annotations since 2025-03-26.
KINDS = {
    "tools": ("tools", False),
    "resources": ("resources", True),
    "templates": ("resourceTemplates", True),
    "prompts": ("prompts", False),
}


#: The one revision whose tools carry ``execution.taskSupport`` (its experimental tasks; 2026-07-28 has none).
TASKS_VERSION = "2025-11-25"


def with_task_support(server: Any, item: dict) -> dict:
    """A listed tool with ``execution.taskSupport`` when it is task-capable (2025-11-25 basic/utilities/tasks
    §Tool-Level Negotiation: absent means "forbidden", the default; ``mcp_ref.extras.tasks_2025``)."""
    tool = server.get_tool(item.get("name"))
    mode = getattr(tool, "task", None)
    return item if mode is None else {**item, "execution": {"taskSupport": mode}}


def list_page(connection: Caller, context: RequestContext, params: dict, kind: str) -> dict:
    """One page of the server's ``kind`` listing for the request's revision."""
    key, keep_annotations = KINDS[kind]
    cursor = params.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise InvalidParams("Invalid params: cursor must be a string")
    server = connection.server
    try:
        # Items the caller may not use are left out before paging (the gate: mcp_ref.extras.policy
        # with authorize), so every page and cursor is of the caller's own listing.
        items = server.gate.filter_listing(connection.principal, kind, server.listings(kind))
        page, next_cursor = server.paginator.page(items, cursor, kind=kind)
    except InvalidCursor as exc:
        # 2025-11-25 server/utilities/pagination §Error Handling: "Invalid cursors SHOULD result in an error with code -32602".
        raise InvalidParams(f"Invalid params: invalid cursor ({exc})") from None
    version = connection.version_for(context)
    if kind == "tools" and version == TASKS_VERSION and "tasks" in connection.capabilities:
        page = [with_task_support(server, item) for item in page]
    from ..core.older_revisions import strip_newer_fields  # loaded by the first listing

    result: dict[str, Any] = {key: [strip_newer_fields(item, version, keep_annotations=keep_annotations)
                                    for item in page]}
    if next_cursor:
        result["nextCursor"] = next_cursor
    return result

