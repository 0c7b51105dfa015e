"""A server's change notifications carried across the processes of a deployment.

A server tells its own connections and listen streams of a change (a list changed, a resource was
updated) directly, until it has a :class:`Relay`: then it publishes each change on the relay's
:class:`~mcp_ref.state.stores.Bus`, and every process's server hears it there and tells its own
listeners (filtered for their callers on the receiving side).  The shorthand
(:mod:`mcp_ref.server.shorthand`) makes the relay when the state is shared (``Server(state=...)``),
or when a ``subscriptions/listen`` stream asks for the bus.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .stores import Bus, MemoryBus

#: The bus channel of change notifications (list changes, resource updates).
CHANGES = "changes"


class Relay:
    """One server's change notifications on ``bus``: :meth:`publish` sends one on channel
    :data:`CHANGES`; ``hear(message)`` receives every one published there, by any process.
    ``reannounce()`` is called when a shared bus comes back after an outage (what was published
    meanwhile is gone: the listeners should list again)."""

    def __init__(self, hear: Callable[[dict], None], reannounce: Callable[[], None], bus: Bus):
        self.bus = bus
        self._unsubscribe = bus.subscribe(CHANGES, hear)
        on_reconnect = getattr(bus, "on_reconnect", None)
        if (
            on_reconnect is not None
        ):  # a shared bus: what was published while it was cut off is gone
            on_reconnect(reannounce)

    @classmethod
    def on_state(
        cls, hear: Callable[[dict], None], reannounce: Callable[[], None], shared_state: Any
    ) -> Relay:
        """A relay on the shared state's bus, or on one in this process's memory (``shared_state``
        None: the state is not shared)."""
        bus = shared_state.bus() if shared_state is not None else MemoryBus()
        return cls(hear, reannounce, bus)

    def publish(self, message: dict) -> None:
        """Send ``message`` (a change) to every process's server, this one included."""
        self.bus.publish(CHANGES, message)

    def close(self) -> None:
        """Hear no more changes (the server relays through another bus now)."""
        self._unsubscribe()
