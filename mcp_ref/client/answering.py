"""What the server sends the client: its requests answered, its notifications routed.

:class:`~mcp_ref.client.connection.ClientConnection` is the session's dispatcher; it hands each
request of the server's and each notification here, and this module loads with the first of them:
a plain client, which is sent neither, never reads it.

A request (in both eras: a 2026-07-28 ``inputRequests`` entry comes here too, from
:class:`~mcp_ref.client.connection.ModernCall`) is answered with a method of one of the client's
extensions, else by the module of this package that answers it (:data:`ANSWERED`: sampling,
elicitation, roots), after every extension's ``intercept_request``.  A notification goes to the
listen stream that asked for it, or to the client's callbacks on the callback thread.
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

from .. import lifecycle
from ..errors import MethodNotFound
from ..session import RequestContext
from .callbacks import notify_callbacks

if TYPE_CHECKING:
    from .cache import ResultCache
    from .interfaces import Connection
    from .listening import Streams

log = logging.getLogger(__name__)

#: Every request a client answers (``ping``:
#: :meth:`~mcp_ref.client.connection.ClientConnection.answer_at_once`), and the module of this
#: package that answers it (:func:`answering_module`), loaded with the first such request.
ANSWERED = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}


class AnsweringModule(Protocol):
    """A module answering some of the server's requests (sampling, elicitation, roots)."""

    HANDLERS: dict[str, Callable[..., dict[str, Any]]]
    OFFERED: dict[str, Callable[..., None]]


def answering_module(method: str) -> AnsweringModule:
    """The module that answers ``method`` (one of :data:`ANSWERED`)."""
    return cast(AnsweringModule, importlib.import_module(f"{__package__}.{ANSWERED[method]}"))


@dataclass
class IncomingRequest:
    """A request of the server's as the client's extensions' ``intercept_request`` see it (the
    ``call``): an interceptor may replace ``params`` (an edited request) or ``context`` (the request
    then runs under another one, e.g. a task's) before it calls ``proceed()``."""

    #: The connection it came on (``connection.modern``: the era; ``connection.client``: the client).
    connection: Connection
    #: Its context: its id, whether the server cancelled it, its progress.
    context: RequestContext
    method: str
    params: dict[str, Any]


def answer_request(
    connection: Connection, context: RequestContext, method: str, params: dict
) -> dict:
    """Answer a request of the server's: with a method of one of the client's extensions
    (``methods(version)``), else sampling, elicitation or roots.

    A request the client answers (what it does not offer is -32601 and reaches no extension)
    then passes every extension's ``intercept_request``, the first given outermost, before its
    handler: they may refuse it, edit it, or answer it otherwise.
    """
    version = connection.session.protocol_version
    extensions = connection.client.extensions
    handler = next(
        (found for extension in extensions if (found := extension.methods(version).get(method))),
        None,
    )
    if handler is None and method not in ANSWERED:
        raise MethodNotFound(f"Method not found: {method}")
    connection.lifecycle.check_receive(method)
    if handler is None:
        module = answering_module(method)
        module.OFFERED[method](connection)
        handler = module.HANDLERS[method]
    call = IncomingRequest(connection, context, method, params)

    def answer() -> dict:
        return handler(connection, call.context, call.params)

    proceed = answer
    for extension in reversed(extensions):
        proceed = functools.partial(extension.intercept_request, call, proceed)
    return proceed()


def route_notification(
    connection: Connection,
    method: str,
    params: dict,
    cache: ResultCache | None,
    streams: Streams | None,
) -> None:
    """Route a notification of the server's: a listen stream's to that stream (by its
    ``subscriptionId``), the rest to the client's callbacks (on the callback thread).  ``cache``
    and ``streams``: the connection's, if made."""
    client = connection.client
    if cache is not None:
        # caching §Interaction with Notifications: a change notification "invalidates the cached response".
        cache.invalidate(method, params)
    meta = params.get("_meta")
    subscription = meta.get(lifecycle.SUBSCRIPTION_ID) if isinstance(meta, dict) else None
    if subscription is not None:
        # subscriptions §Receiving Notifications: "clients MUST use this field to correlate
        # notifications with their originating subscription".
        if streams is None:
            log.debug("dropped %s for unknown subscription %r", method, subscription)
        else:
            streams.deliver(subscription, method, params)
        return
    if method == "notifications/message":
        if client.on_log is not None:
            from ..feature_types import LogMessage

            connection.session.call_soon(client.on_log, LogMessage.from_wire(params))
    elif method == "notifications/elicitation/complete":
        # client/elicitation: clients MUST ignore ids they do not know; the callback decides.
        if client.on_elicitation_complete is not None:
            connection.session.call_soon(
                client.on_elicitation_complete, params.get("elicitationId")
            )
    elif method == "notifications/resources/updated" or method.endswith("/list_changed"):
        connection.tools_changed += 1 if method == "notifications/tools/list_changed" else 0
        notify_callbacks(connection, method, params)
        if streams is not None:
            streams.deliver_local(method, params)
    else:
        log.debug("ignored notification %s", method)
