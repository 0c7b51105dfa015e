"""Resources, client side (2025-11-25 server/resources): ``resources/read``.

:meth:`mcp_ref.client.Client.read_resource` reads one resource's contents.  A resource that is not
found is :class:`~mcp_ref.errors.ResourceNotFound` in either era: -32002 before 2026-07-28, and
from it -32602 with the URI in ``data`` (2026-07-28 server/resources §Error Handling), the
exception keeping the code it came with.  (Subscribing to a resource's updates is the listen
streams', :mod:`mcp_ref.client.listening`.)  Loaded by the first read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InvalidParams, ResourceNotFound
from ..feature_types import ReadResourceResult
from .connection import built

if TYPE_CHECKING:
    from ..request import Default
    from .interfaces import Connection

__all__ = ["read_resource"]


def read_resource(
    connection: Connection, uri: str, timeout: float | None | Default
) -> ReadResourceResult:
    """The contents of the resource at ``uri`` (``timeout``: the request's, as the caller gave it);
    ResourceNotFound for an unknown URI, in either era."""
    connection.require_capability("resources", "resources/read")
    try:
        raw = connection.request("resources/read", {"uri": uri}, timeout=timeout)
    except InvalidParams as exc:
        if connection.modern and isinstance(exc.data, dict) and exc.data.get("uri") == uri:
            raise ResourceNotFound(exc.message, code=exc.code, data=exc.data) from None
        raise
    return built(ReadResourceResult.from_wire, "resources/read", raw, connection.protocol_version)
