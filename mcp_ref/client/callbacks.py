"""Calling the user's handlers: ``handler(params)``, or ``handler(params, context)`` when it takes
two arguments (the context tells a long-running handler that the server cancelled its request)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..core.session import RequestContext
from ..core.types import WireModel


def call_handler(handler: Callable, params: Any, context: RequestContext) -> Any:
    """Call ``handler(params)``, or ``handler(params, context)`` when it takes two arguments."""
    if _takes_context(handler):
        return handler(params, context)
    return handler(params)


def _takes_context(handler: Callable) -> bool:
    try:
        parameters = inspect.signature(handler).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


#: 2025-11-25 basic/utilities/tasks §Related Task Metadata: the ``_meta`` key tying a message to its task.
RELATED_TASK = "io.modelcontextprotocol/related-task"


def result_dict(value: Any, request: dict | None = None) -> dict:
    """A handler's return value (a result object or a dict) as the wire ``result``; the answer to a
    ``request`` (its params) that belongs to a task carries the task too (2025-11-25 tasks §Related
    Task Metadata: "All requests, notifications, and responses related to a task MUST include" it)."""
    if isinstance(value, WireModel):
        result = value.to_wire()
    elif isinstance(value, dict):
        result = dict(value)
    else:
        raise TypeError(f"a handler must return a result object or dict, not {type(value).__name__}")
    meta = request.get("_meta") if request is not None else None
    if isinstance(meta, dict) and isinstance(meta.get(RELATED_TASK), dict):
        result["_meta"] = {**(result.get("_meta") or {}), RELATED_TASK: meta[RELATED_TASK]}
    return result
