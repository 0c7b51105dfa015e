"""Calling the user's handlers: ``handler(params)``, or ``handler(params, context)`` when it takes
two arguments (the context tells a long-running handler that the server cancelled its request)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ..session import RequestContext
from ..types import WireModel


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


def result_dict(value: Any) -> dict:
    """A handler's return value (a result object or a dict) as the wire ``result`` (a copy)."""
    if isinstance(value, WireModel):
        return value.to_wire()
    if isinstance(value, dict):
        return dict(value)
    raise TypeError(f"a handler must return a result object or dict, not {type(value).__name__}")
