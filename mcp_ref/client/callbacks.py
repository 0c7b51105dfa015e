"""Calling the user's handlers: ``handler(params)``, or ``handler(params, context)`` when it takes
two arguments (the context tells a long-running handler that the server cancelled its request);
and the change callbacks (``on_list_changed``, ``on_resource_updated``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from ..session import RequestContext
from ..types import WireModel

if TYPE_CHECKING:
    from .interfaces import Connection


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


def concerns(uri: object, subscribed: Iterable[str]) -> bool:
    """Whether an update about ``uri`` concerns a subscription to one of ``subscribed``: that very
    URI, or one below it.  Every revision's schema, ``ResourceUpdatedNotification``'s ``uri``: "The
    URI of the resource that has been updated. This might be a sub-resource of the one that the
    client actually subscribed to" (``file:///dir/a.txt`` for ``file:///dir``)."""
    if not isinstance(uri, str):
        return False
    return any(
        uri == whole or uri.startswith(whole if whole.endswith("/") else whole + "/")
        for whole in subscribed
    )


def notify_callbacks(
    connection: Connection, method: str, params: dict, subscribed: Iterable[str]
) -> None:
    """Hand a change notification to ``on_list_changed`` / ``on_resource_updated`` (callback thread).

    ``on_resource_updated`` gets the updates about the URIs in ``subscribed`` (or below one:
    :func:`concerns`), those the client asked for with ``Client.subscribe`` (and has not
    unsubscribed since), in both eras: a
    handshake-era server sends the session's updates once, whoever on the client subscribed, and
    a listen stream's are that stream's (its ``on_notification``)."""
    client = connection.client
    if method == "notifications/resources/updated":
        callback, argument = client.on_resource_updated, params.get("uri")
        if not concerns(argument, subscribed):
            return
    elif method.startswith("notifications/") and method.endswith("/list_changed"):
        callback, argument = (
            client.on_list_changed,
            method[len("notifications/") : -len("/list_changed")],
        )
    else:
        return
    if callback is not None:
        connection.session.call_soon(callback, argument)
