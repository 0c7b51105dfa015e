"""A new session after the server forgot the old one (Streamable HTTP's 404), told again what the
old one held.

2025-11-25 basic/transports §Session Management: "When a client receives HTTP 404 in response to a
request containing an MCP-Session-Id, it MUST start a new session by sending a new
InitializeRequest without a session ID attached."  The HTTP client transport starts it (on a 404
to a request, to a notification or to its GET stream) by calling :func:`renew`, which it was
given once (``ClientHooks.set_reinitialize``).  A server keeps per session what the client asked
of it: the log level (``logging/setLevel``) and the resources subscribed (``resources/subscribe``,
2025-11-25 server/resources §Subscriptions: the client then "receive[s] notifications when they
change"); the new session knows neither, so both are asked again.  It all runs on the thread
starting the new session, whose requests go without waiting for it.  Loaded over HTTP only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .listening import Streams


class Renewed(Protocol):
    """What :func:`renew` uses of a :class:`~mcp_ref.client.connection.ClientConnection`."""

    log_level: str | None

    @property
    def streams(self) -> Streams:
        """The listen streams, and the resources subscribed."""

    def initialize(self) -> None:
        """The handshake."""

    def request(self, method: str, params: dict | None = None, **options: Any) -> dict:
        """Send a request and wait for its result."""


def renew(connection: Renewed) -> None:
    """The handshake again (``initialize``, ``notifications/initialized``), then the log level
    asked of the old session, and its subscriptions (:meth:`~mcp_ref.client.listening.Streams.
    resubscribe`: one refused is logged, not raised)."""
    connection.initialize()
    if connection.log_level is not None:
        connection.request("logging/setLevel", {"level": connection.log_level})
    connection.streams.resubscribe()
