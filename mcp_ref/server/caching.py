"""Caching hints (2026-07-28 server/utilities/caching): ``ttlMs`` and ``cacheScope`` on cacheable results.

"Servers MUST include caching hints on results with resultType: "complete"
returned by" ``server/discover``, the four listings and ``resources/read``;
"Servers MUST provide a ttlMs value that is >= 0".  Interim
``input_required`` results carry none.  The hints come from
``Server(ttl_ms=, cache_scope=)``, and for ``resources/read`` from the
resource itself when it sets its own (``@server.resource(uri, ttl_ms=...)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .seams import Registry as Server

CACHEABLE = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)
SCOPES = ("public", "private")


def check_hints(ttl_ms: int | None, cache_scope: str | None) -> tuple:
    """``(ttl_ms, cache_scope)`` after checking them (a whole number >= 0; "public" or "private")."""
    if ttl_ms is not None and (
        isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms < 0
    ):
        raise ValueError(f"ttl_ms must be a whole number of milliseconds >= 0, not {ttl_ms!r}")
    if cache_scope is not None and cache_scope not in SCOPES:
        raise ValueError(f"cache_scope must be 'public' or 'private', not {cache_scope!r}")
    return ttl_ms, cache_scope


def add_hints(server: Server, method: str, params: dict, result: dict) -> None:
    """Put the caching hints on a complete ``result`` of ``method``, if it is cacheable."""
    if method not in CACHEABLE:
        return
    ttl_ms, scope = server.cache_hints
    if method == "resources/read":
        uri = params.get("uri")
        found = server.find_resource(uri) if isinstance(uri, str) else None
        if found is not None and found[0].cache is not None:
            own_ttl, own_scope = found[0].cache
            ttl_ms = ttl_ms if own_ttl is None else own_ttl
            scope = scope if own_scope is None else own_scope
    if server.gate.restricts and method != "server/discover":
        scope = "private"  # what a caller may see is its own: a shared cache must not keep it
    result.setdefault("ttlMs", ttl_ms)
    result.setdefault("cacheScope", scope)
