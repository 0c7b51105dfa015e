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


def plain_result(result: dict, *, keep_hints: bool = False) -> dict:
    """A back result without what belongs to the back's era and identity (``resultType``, the
    target's ``serverInfo``; caching hints unless ``keep_hints``)."""
    out = {k: v for k, v in result.items() if k != "resultType"}
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
