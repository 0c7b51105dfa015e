"""Listings, client side: ``tools/list``, ``resources/list``, ``resources/templates/list`` and
``prompts/list``, one page at a time or every page.

Each page's items are built as the listing's type (:class:`~mcp_ref.types.Tool`,
:class:`~mcp_ref.feature_types.Resource` ...); every page is fetched by following ``nextCursor``
(2025-11-25 server/utilities/pagination), at most ``Client(max_pages=)`` pages, a repeated cursor
an error at once (:func:`mcp_ref.pagination.follow_cursors`), at most ``Client(max_items=)`` items
in all (a server's pages are its own to size, each as large as one message may be).  Loaded by the first listing: a
client that only calls tools never reads it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import LimitExceeded
from ..feature_types import Page, Prompt, Resource, ResourceTemplate
from ..pagination import follow_cursors
from ..types import Tool
from .connection import built

if TYPE_CHECKING:
    from .interfaces import Connection

__all__ = ["LISTED", "every_item", "page"]

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
    page holds the tools a caller may use (:meth:`~mcp_ref.client.connection.ClientConnection.usable_tools`)."""
    key, item = LISTED[method]
    connection.require_capability(method.split("/")[0], method)
    result = connection.request(method, {"cursor": cursor} if cursor is not None else None)
    listed = built(
        lambda raw: Page.listing(raw, key, item), method, result, connection.protocol_version
    )
    if method == "tools/list":
        listed.items = connection.usable_tools(listed.items)
    return listed


def every_item(connection: Connection, method: str) -> list:
    """Every item of the listing ``method``, following its cursors (at most ``Client(max_pages=)``
    pages; a repeated cursor is an error), at most ``Client(max_items=)`` items: past them
    LimitExceeded (``data.limit``), the items gathered let go."""
    items: list = []
    max_items = connection.client.max_items

    def fetch(cursor: str | None) -> dict:
        one = page(connection, method, cursor)
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
