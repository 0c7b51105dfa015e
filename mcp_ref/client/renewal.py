"""A new session after the server forgot the old one (Streamable HTTP's 404), told again what the
old one held.

2025-11-25 basic/transports §Session Management: "When a client receives HTTP 404 in response to a
request containing an MCP-Session-Id, it MUST start a new session by sending a new
InitializeRequest without a session ID attached."  The HTTP client transport starts it (on a 404
to a request, to a notification or to its GET stream) by calling :func:`renew`, which it was
given once (``ClientHooks.set_reinitialize``).  A server keeps per session what the client asked
of it: the log level (``logging/setLevel``) and the resources subscribed (``resources/subscribe``,
2025-11-25 server/resources §Subscriptions: the client then "receive[s] notifications when they
change"); the new session knows neither, so both are asked again, once it is ready (the requests
made meanwhile are not held up by them).  Loaded over HTTP only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import MCPRefError

if TYPE_CHECKING:
    from ..session import Session
    from .listening import Streams

log = logging.getLogger(__name__)


class Renewed(Protocol):
    """What :func:`renew` uses of a :class:`~mcp_ref.client.connection.ClientConnection`."""

    log_level: str | None

    @property
    def session(self) -> Session:
        """The session, closed once the client is."""

    @property
    def streams(self) -> Streams:
        """The listen streams, and the resources subscribed."""

    def initialize(self) -> None:
        """The handshake."""

    def request(self, method: str, params: dict | None = None, **options: Any) -> dict:
        """Send a request and wait for its result."""


def renew(connection: Renewed) -> Callable[[], None]:
    """The handshake again (``initialize``, ``notifications/initialized``); returns its follow-up,
    which the transport runs once the new session is ready, on a thread of its own, holding up no
    request: the log level asked of the old session, then its subscriptions (:meth:`~mcp_ref.
    client.listening.Streams.resubscribe`).  What the new session refuses is logged, not raised;
    a request failing because the client was closed meanwhile is no failure (DEBUG only).

    The subscriptions' turns are taken here, before the session is ready
    (:meth:`~mcp_ref.client.listening.Streams.resubscribe_turns`): a ``Client.subscribe`` or
    ``unsubscribe`` of one of them made from now on goes to the server after it."""
    connection.initialize()
    streams = connection.streams
    turns = streams.resubscribe_turns()

    def follow_up() -> None:
        try:
            if connection.log_level is not None:
                connection.request("logging/setLevel", {"level": connection.log_level})
        except (MCPRefError, OSError) as exc:  # the server's failure, or the client closing
            # a close by the user is no failure (the request failed because the client closed)
            level = logging.DEBUG if connection.session.is_closed else logging.WARNING
            log.log(level, "the new session did not take the log level: %s", exc)
        finally:
            streams.resubscribe(turns)

    return follow_up
