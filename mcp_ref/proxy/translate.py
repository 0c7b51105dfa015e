"""A target's results and errors as the front's: what differs between the eras, translated."""

from __future__ import annotations

import logging
from typing import Any

from .. import lifecycle
from ..errors import InternalError, InvalidParams, McpError, RequestCancelled, ResourceNotFound

log = logging.getLogger(__name__)


# -- results and errors across eras ---------------------------------------------------------------


def back_params(params: dict) -> dict:
    """A front request's params as the back request's: without the front's envelope, progress
    token and MRTR fields (the back client adds its own); the caller's own ``_meta`` keys stay."""
    out = {k: v for k, v in params.items() if k not in ("_meta", "inputResponses", "requestState")}
    meta = params.get("_meta")
    if isinstance(meta, dict):
        own = {
            k: v
            for k, v in meta.items()
            if k != "progressToken" and not k.startswith("io.modelcontextprotocol/")
        }
        if own:
            out["_meta"] = own
    return out


#: The listings: the key of their items, and whether those keep ``annotations`` at every revision
#: (a resource's and a prompt's are as old as they are; a tool's came in 2025-03-26).
LISTED = {
    "tools/list": ("tools", False),
    "resources/list": ("resources", True),
    "resources/templates/list": ("resourceTemplates", True),
    "prompts/list": ("prompts", True),
}


def plain_result(
    result: dict, method: str = "", version: str | None = None, *, keep_hints: bool = False
) -> dict:
    """A back result without what belongs to the back's era and identity (``resultType``, the
    target's ``serverInfo``; caching hints unless ``keep_hints``), fitted to the front's
    ``version`` (the revision the front request speaks; :func:`fitted`)."""
    out = fitted(method, {k: v for k, v in result.items() if k != "resultType"}, version)
    if not keep_hints:
        out.pop("ttlMs", None)
        out.pop("cacheScope", None)
    meta = out.get("_meta")
    if isinstance(meta, dict) and lifecycle.SERVER_INFO in meta:
        meta = {k: v for k, v in meta.items() if k != lifecycle.SERVER_INFO}
        if meta:
            out["_meta"] = meta
        else:
            del out["_meta"]
    return out


def fitted(method: str, result: dict, version: str | None) -> dict:
    """The result of ``method`` as a server speaking ``version`` sends it: a listed item without
    the fields that revision lacks, a tool's ``structuredContent`` only from 2025-06-18, content
    blocks it cannot carry as text (:mod:`mcp_ref.older_revisions`, as mcp_ref's own server fits
    its results; each revision's schema: a 2025-03-26 ``CallToolResult`` has no ``resource_link``
    block, a 2025-03-26 ``Tool`` no ``title`` or ``outputSchema``)."""
    if lifecycle.at_least(version, lifecycle.ICONS):  # the newest handshake revision, or 2026
        return result
    from ..older_revisions import strip_newer_fields

    out = dict(result)
    items = LISTED.get(method)
    if items is not None and isinstance(out.get(items[0]), list):
        key, keep_annotations = items
        out[key] = [
            strip_newer_fields(item, version, keep_annotations=keep_annotations)
            if isinstance(item, dict)
            else item
            for item in out[key]
        ]
    elif method == "tools/call":
        if not lifecycle.at_least(version, lifecycle.STRUCTURED_OUTPUT):
            out.pop("structuredContent", None)
        if isinstance(out.get("content"), list):
            out["content"] = [fitted_block(block, version) for block in out["content"]]
    elif method == "prompts/get" and isinstance(out.get("messages"), list):
        out["messages"] = [
            {**message, "content": fitted_block(message.get("content"), version)}
            if isinstance(message, dict)
            else message
            for message in out["messages"]
        ]
    return out


def fitted_block(block: Any, version: str | None) -> Any:
    """A content block as ``version`` can carry it (one that is no block: as it is)."""
    from ..older_revisions import content_for_revision

    return content_for_revision(block, version) if isinstance(block, dict) else block


def fitted_question(method: str, params: dict | None, version: str | None) -> dict | None:
    """A question of the target's as a server speaking ``version`` asks it: an elicitation
    without the ``mode`` 2025-11-25 added (an older client takes form mode only, and is sent no
    other: ``forward.unmet_need``), sampling messages' content blocks that revision carries."""
    if not isinstance(params, dict) or lifecycle.at_least(version, lifecycle.ICONS):
        return params
    if method == "elicitation/create":
        return {k: v for k, v in params.items() if k != "mode"}
    if method == "sampling/createMessage" and isinstance(params.get("messages"), list):
        messages = [
            {**message, "content": fitted_block(message.get("content"), version)}
            if isinstance(message, dict)
            else message
            for message in params["messages"]
        ]
        return {**params, "messages": messages}
    return params


class errors_of:
    """The target's errors as the front's: its own codes, translated where the eras differ; a
    failure to reach it a plain error naming no internals."""

    def __init__(self, method: str, envelope: Any):
        self.method = method
        self.modern = envelope is not None

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, traceback: Any) -> None:
        if exc is None or isinstance(exc, RequestCancelled):
            return
        if isinstance(exc, McpError):
            data = exc.data
            names_uri = isinstance(data, dict) and "uri" in data
            if self.method == "resources/read" and names_uri:
                # 2026-07-28 changelog 6: "resource not found" is -32602 (was -32002)
                if self.modern and exc.code == ResourceNotFound.code:
                    raise InvalidParams(exc.message, data=data) from None
                if not self.modern and exc.code == InvalidParams.code:
                    raise ResourceNotFound(exc.message, data=data) from None
            raise McpError(exc.message, code=exc.code, data=data) from None
        if isinstance(exc, Exception):
            log.warning("proxy: %s failed at the target: %s", self.method, exc)
            raise InternalError(
                f"Internal error: the server behind this proxy did not answer {self.method}"
            ) from None
