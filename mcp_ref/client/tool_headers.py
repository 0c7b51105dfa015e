"""The tools a 2026-07-28 client over HTTP knows, for their ``x-mcp-header`` parameters.

2026-07-28 streamable-http §Schema Extension: a tool's input schema may mark parameters with
``x-mcp-header``; a call sends their values again as ``Mcp-Param-*`` headers
(:mod:`mcp_ref.http.headers`).  The client remembers the schemas of the tools it listed
so that its transport can build those headers, leaves out of a listing the tools whose
declarations are invalid, and lists the tools again when a server refuses a call to a tool it had
not listed, or whose header parameters changed (-32020).  Only a modern connection over HTTP loads this module.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .interfaces import Connection

log = logging.getLogger(__name__)

#: Tool input schemas remembered for their ``x-mcp-header`` parameters; past this many the
#: oldest is forgotten (a call to a forgotten tool lists the tools again if the server asks).
MAX_KNOWN_TOOLS = 4096


class KnownTools:
    """The input schemas of the tools a connection listed, the oldest forgotten past
    :data:`MAX_KNOWN_TOOLS`.  Thread-safe."""

    def __init__(self, connection: Connection, max_tools: int = MAX_KNOWN_TOOLS):
        self.connection = connection
        self.max_tools = max_tools
        self._schemas: dict[str, dict] = {}
        self._lock = threading.Lock()

    def usable(self, tools: list) -> list:
        """The listed tools whose ``x-mcp-header`` declarations are valid; their schemas are remembered.

        2026-07-28 streamable-http §Schema Extension: "Clients using the Streamable HTTP transport
        MUST reject tool definitions" with invalid declarations, and "MUST exclude the invalid
        tool from the result of tools/list".
        """
        from ..http.headers import InvalidHeaderDeclaration, header_params

        usable = []
        for tool in tools:
            try:
                header_params(tool.input_schema)
            except InvalidHeaderDeclaration as exc:
                log.warning("tool %r left out: %s", tool.name, exc)
                continue
            usable.append(tool)
            self.remember(tool.name, tool.input_schema)
        return usable

    def remember(self, name: str, schema: dict) -> None:
        """Keep ``schema`` as the input schema of tool ``name`` (the newest)."""
        with self._lock:
            self._schemas.pop(name, None)
            self._schemas[name] = schema
            while len(self._schemas) > self.max_tools:
                del self._schemas[next(iter(self._schemas))]

    def input_schema(self, tool: str) -> dict | None:
        """The remembered ``inputSchema`` of ``tool`` (for its ``Mcp-Param-*`` headers), or None."""
        with self._lock:
            return self._schemas.get(tool)

    def learn(self, method: str, params: dict | None) -> bool:
        """After -32020 for a ``tools/call``: list the tools again, True when the tool's header
        parameters are now other than the call sent (so a retry can succeed).

        2026-07-28 streamable-http §Client Behavior: on ``HeaderMismatch`` the client "SHOULD call
        ``tools/list`` to check for changes to the tool's ``inputSchema``, then retry the original
        request with the appropriate headers": for a tool not listed yet, and for one listed before
        whose schema the server has changed since.  The listing comes from the server, never from
        the result cache: caching §Time-to-Live: "Clients MAY re-fetch before the TTL expires if
        they have reason to believe the data has changed", and the cached pages are replaced.
        """
        from ..feature_types import Page
        from ..http.headers import header_params
        from ..pagination import follow_cursors
        from ..types import Tool

        name = (params or {}).get("name")
        if method != "tools/call" or not isinstance(name, str):
            return False
        sent = self.input_schema(name)
        connection = self.connection
        # the cached pages may be what is stale: forgotten, so each page below is fetched anew
        connection.cache.invalidate("notifications/tools/list_changed")

        def fetch(cursor: str | None) -> dict:
            result = connection.request(
                "tools/list", {"cursor": cursor} if cursor is not None else None
            )
            try:  # as connection.built does (which this module, imported by it, cannot import)
                page = Page.listing(result, "tools", Tool)
            except TypeError as exc:
                from .invalid_results import invalid_result

                raise invalid_result(
                    "tools/list", result, connection.protocol_version, exc
                ) from None
            self.usable(page.items)
            return result

        for _ in follow_cursors(
            fetch, "tools/list", connection.client.max_pages
        ):  # bounded as Client.list_tools
            pass
        schema = self.input_schema(name)
        if schema is None:
            return False
        declared = header_params(schema)
        # the same declarations as the call was sent with: the same headers again, no retry
        return bool(declared) and (sent is None or declared != header_params(sent))
