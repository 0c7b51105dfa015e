"""Listings, written once: ``tools/list``, ``resources/list``, ``resources/templates/list`` and
``prompts/list`` all answer one page of items, stripped to the negotiated revision, with
``nextCursor`` when more follow (2025-11-25 server/utilities/pagination).  Their four handlers are
here, loaded with the first listing asked for.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
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
    table = server.resource_table if kind == "resources" else None
    try:
        if table is not None and table.lists:  # files listed: read as far as the page goes
            page, next_cursor = _resources_page(server, connection.principal, table, cursor)
        else:
            # Items the caller may not use are left out before paging (the gate an extension
            # sets), so every page and cursor is of the caller's own listing.
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


def list_tools(connection: Caller, context: RequestContext, params: dict) -> dict:
    """``tools/list``: one page of tools."""
    return list_page(connection, context, params, "tools")


def list_resources(connection: Caller, context: RequestContext, params: dict) -> dict:
    """``resources/list``: one page of resources (registered ones, then listed files)."""
    return list_page(connection, context, params, "resources")


def list_templates(connection: Caller, context: RequestContext, params: dict) -> dict:
    """``resources/templates/list``: one page of resource templates."""
    return list_page(connection, context, params, "templates")


def list_prompts(connection: Caller, context: RequestContext, params: dict) -> dict:
    """``prompts/list``: one page of prompts."""
    return list_page(connection, context, params, "prompts")


def _resources_page(server: Any, principal: Any, table: Any, cursor: str | None) -> tuple:
    """``(page, next_cursor)`` of ``resources/list`` for a server whose file roots list files.

    The registered resources come first, paged by offset as every listing is; then each listing's
    items (``ResourceTable.lists``) in its own order, read only as far as the page needs.  A
    cursor there holds the listing's template and, for a listing that ``resumes`` (a file root's
    :class:`~mcp_ref.extensions.files.FileListing`), the last URI the page sent: the next page
    starts after it in that listing's stable order, so it costs about its own size (a page of
    100 files stats about 100 files, not the whole tree), and a file added or removed elsewhere
    moves no other file to another page.  Another listing is skipped into by the count of its
    items the caller saw.  The gate filters each item (a part of the listing at a time) before it
    counts, so every page and cursor is still of the caller's own listing (2025-11-25
    server/utilities/pagination §Pagination Model: the cursor is "an opaque string token, representing
    a position in the result set").
    """
    paginator, gate = server.paginator, server.gate
    position = None if cursor is None else paginator.read_position(cursor, kind="resources")
    registered = gate.filter_listing(
        principal, "resources", [entry.listing for entry in list(table.resources.values())]
    )
    listings = list(table.lists.items())
    start, first, resume = 0, 0, None
    if position is not None and position.isascii() and position.isdigit():
        start = int(position)
        if start > len(registered):
            raise InvalidCursor("cursor points beyond the end of the list")
    elif position is not None:
        try:
            template, resume = json.loads(position)
            first = [listed for listed, _ in listings].index(template)
        except (ValueError, TypeError):
            raise InvalidCursor("cursor names a listing this server no longer has") from None
        start = len(registered)

    def items() -> Iterator[tuple[dict, str]]:
        """Each item from the cursor on, with the position just after it."""
        for index in range(start, len(registered)):
            yield registered[index], str(index + 1)
        after = resume
        for template, list_items in listings[first:]:
            yield from _listed(gate, principal, template, list_items, after, paginator.page_size)
            after = None

    page: list[dict] = []
    last = ""
    for item, after_it in items():
        if len(page) == paginator.page_size:  # one more follows: the page ends here
            return page, paginator.make_position(last, kind="resources")
        page.append(item)
        last = after_it
    return page, None


def _listed(
    gate: Any, principal: Any, template: str, list_items: Any, after: Any, chunk: int
) -> Iterator[tuple[dict, str]]:
    """The items of one listing the caller may see, each with the position just after it, from
    ``after`` (the last URI sent, for a listing that ``resumes``; else how many were sent)."""
    resumes = getattr(list_items, "resumes", False)
    if resumes:
        try:
            source = iter(list_items(after if isinstance(after, str) else None))
        except ValueError:
            raise InvalidCursor("cursor names no item of this listing") from None
    else:
        source = iter(list_items())
    skip = after if isinstance(after, int) and not resumes else 0
    seen = 0
    while True:
        part = [item for _, item in zip(range(chunk + 1), source, strict=False)]
        for item in gate.filter_listing(principal, "resources", part):
            seen += 1
            if seen > skip:
                yield item, json.dumps([template, item["uri"] if resumes else seen])
        if len(part) <= chunk:
            return
