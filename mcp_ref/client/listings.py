"""Listings, client side: ``tools/list``, ``resources/list``, ``resources/templates/list`` and
``prompts/list``, one page at a time or every page.

Each page's items are built as the listing's type (:class:`~mcp_ref.types.Tool`,
:class:`~mcp_ref.feature_types.Resource` ...); every page is fetched by following ``nextCursor``
(2025-11-25 server/utilities/pagination), at most ``Client(max_pages=)`` pages, a repeated cursor
an error at once (:func:`mcp_ref.pagination.follow_cursors`), at most ``Client(max_items=)`` items
in all (a server's pages are its own to size, each as large as one message may be).  A cursor the
server refuses halfway makes the listing start again from its first page, once.  Loaded by the first listing: a
client that only calls tools never reads it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from ..errors import LimitExceeded, McpError
from ..feature_types import Page, Prompt, Resource, ResourceTemplate
from ..pagination import follow_cursors
from ..types import Tool
from .connection import built

if TYPE_CHECKING:
    from .interfaces import Connection

__all__ = ["LISTED", "every_item", "page"]

log = logging.getLogger(__name__)

#: Each listing method: its key in the result, and the type of its items.
LISTED: dict[str, tuple[str, Any]] = {
    "tools/list": ("tools", Tool),
    "resources/list": ("resources", Resource),
    "resources/templates/list": ("resourceTemplates", ResourceTemplate),
    "prompts/list": ("prompts", Prompt),
}


def page(connection: Connection, method: str, cursor: str | None = None) -> Page:
    """One page of the listing ``method``, its items built as the listing's type (the capability it
    needs is the method's first word: ``resources`` for ``resources/templates/list``).  A tools
    page holds the tools a caller may use (over 2026-07-28 HTTP: :meth:`~mcp_ref.client.tool_headers.KnownTools.usable`).
    An error answer to a page asked for with a cursor drops the listing's cached pages, so that
    its first page is asked for again (see :func:`every_item`)."""
    key, item = LISTED[method]
    connection.require_capability(method.split("/")[0], method)
    try:
        result = connection.request(method, {"cursor": cursor} if cursor is not None else None)
    except McpError as exc:
        # 2026-07-28 server/utilities/caching §Interaction with Pagination: "If a cursor becomes
        # invalid ... the client SHOULD discard all cached pages" (a limit of this client's,
        # -31005, is no cursor's fault)
        if cursor is not None and connection.modern and not isinstance(exc, LimitExceeded):
            connection.cache.forget(method)
        raise
    listed = built(
        lambda raw: Page.listing(raw, key, item), method, result, connection.protocol_version
    )
    if method == "tools/list" and connection.known_tools is not None:
        listed.items = connection.known_tools.usable(listed.items)
    return listed


class CursorRefused(Exception):
    """The server answered a page asked for with a cursor with an error (the error is its cause)."""


def every_item(connection: Connection, method: str) -> list:
    """Every item of the listing ``method``, following its cursors (at most ``Client(max_pages=)``
    pages; a repeated cursor is an error), at most ``Client(max_items=)`` items: past them
    LimitExceeded (``data.limit``), the items gathered let go.

    A page asked for with a cursor that gets an error answer starts the listing again from its
    first page, once, its cached pages dropped first (the second time the error is raised).
    2026-07-28 server/utilities/caching §Interaction with Pagination: "If a cursor becomes invalid
    (e.g., the server restarts or the underlying data changes significantly), the client SHOULD
    discard all cached pages and re-fetch from the beginning" (a first page kept for minutes may
    hold the cursor of a server since redeployed).  In the handshake era nothing is cached, and a
    server redeployed between two pages is met the same way.
    """
    try:
        return gathered(connection, method, restart=True)
    except CursorRefused:  # its cached pages dropped (page)
        log.debug("%s: the server refused a cursor; listing again from the start", method)
    return gathered(connection, method, restart=False)


def gathered(connection: Connection, method: str, *, restart: bool) -> list:
    """:func:`every_item`'s items, in one pass over the pages; ``restart``: an error answer to a
    page asked for with a cursor raises CursorRefused (not the error) so that the caller may
    start again (a limit of this client's, -31005, is raised as it is: no cursor's fault)."""
    items: list = []
    max_items = connection.client.max_items

    def fetch(cursor: str | None) -> dict:
        try:
            one = page(connection, method, cursor)
        except McpError as exc:
            if not restart or cursor is None or isinstance(exc, LimitExceeded):
                raise
            raise CursorRefused from exc
        items.extend(one.items)
        if len(items) > max_items:
            raise LimitExceeded(
                f"{method}: the server listed more than {max_items} items; this client gathers "
                f"at most {max_items} (max_items)",
                data={"limit": max_items},
            )
        return one.raw or {}

    for _ in follow_cursors(fetch, method, connection.client.max_pages):
        pass
    return items
