"""A server's change notifications, to its listeners and across the processes of a deployment.

A server's :class:`Changes` tells its own connections and listen streams of a change (a list
changed, a resource was updated) directly, until it has a :class:`Relay`: then it publishes each
change on the relay's :class:`~mcp_ref.state.stores.Bus`, and every process's server hears it there
and tells its own listeners (filtered for their callers on the receiving side).  The relay is made
when the state is shared (``Server(state=...)``), or when a ``subscriptions/listen`` stream asks
for the bus (``Server.bus``).  A server loads this module at its first change after it began
serving (what it registers at its start is announced to no one), or its first resource update.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

from .stores import Bus, MemoryBus

#: The bus channel of change notifications (list changes, resource updates).
CHANGES = "changes"


class Relay:
    """One server's change notifications on ``bus``: :meth:`publish` sends one on channel
    :data:`CHANGES`; :meth:`Changes.hear` receives every one published there, by any process.
    :meth:`Changes.reannounce` is called when a shared bus comes back after an outage (what was
    published meanwhile is gone: the listeners should list again)."""

    def __init__(self, changes: Changes, bus: Bus):
        self.bus = bus
        self._unsubscribe = bus.subscribe(CHANGES, changes.hear)
        on_reconnect = getattr(bus, "on_reconnect", None)
        # a shared bus: what was published while it was cut off is gone
        if on_reconnect is not None:
            on_reconnect(changes.reannounce)

    def publish(self, message: dict) -> None:
        """Send ``message`` (a change) to every process's server, this one included."""
        self.bus.publish(CHANGES, message)

    def close(self) -> None:
        """Hear no more changes (the server relays through another bus now)."""
        self._unsubscribe()


class Changes:
    """Where one server's changes go (``Server._listeners``, ``Server._announce``,
    ``Server.notify_resource_updated``, ``Server.bus``): straight to this process's connections
    and listen streams, or, once there is one, through the :class:`Relay`.

    ``streams()`` gives the server's listen streams (:class:`~mcp_ref.server.subscriptions.Subscriptions`),
    or None while none was ever opened (nothing to tell there)."""

    def __init__(self, server: Any, streams: Callable[[], Any]):
        self.server = server
        self.streams = streams
        self.relay: Relay | None = None
        # Made or replaced by one thread at a time: two connections' first listen (or first
        # connection, with a shared state) at once would each subscribe a relay on the bus, and
        # every change would then be heard, and told, twice.
        self._relay_lock = threading.Lock()

    def relay_on_bus(self) -> Relay:
        """The relay (made now if need be: on the shared state's bus, or on one in this process's
        memory when the state is not shared)."""
        relay = self.relay
        if relay is None:
            # The state first, outside this lock: making it takes the server's registry lock, which
            # a registration holds while it asks for the relay (never the two in the other order).
            shared_state = self.server.shared_state
            with self._relay_lock:
                if self.relay is None:
                    bus = shared_state.bus() if shared_state is not None else MemoryBus()
                    self.relay = Relay(self, bus)
                relay = self.relay
        return relay

    def relay_through(self, bus: Bus) -> None:
        """Relay the changes through ``bus`` from now on (``Server.bus = ...``)."""
        with self._relay_lock:
            if self.relay is not None:
                self.relay.close()
            self.relay = Relay(self, bus)

    def relay_in_use(self) -> Relay | None:
        """The relay, if changes go through one: made now when the state is shared (a change made
        here must reach the other processes' listeners even if no listener ever connected here).
        None: changes go to this process's listeners directly."""
        if self.relay is None and self.server.shared_state is not None:
            return self.relay_on_bus()
        return self.relay

    def listeners(self, kind: str, name: str) -> tuple[list, Callable | None, str]:
        """Who is told that item ``name`` of ``kind`` changed (asked before a removal): see
        :meth:`local_listeners`; with a relay, its receivers ask."""
        if self.relay_in_use() is not None:
            return [], None, name
        return (*self.local_listeners(kind, name), name)

    def local_listeners(self, kind: str, name: str) -> tuple[list, Callable | None]:
        """This process's listeners of item ``name`` of ``kind``: ``(connections, which streams)``.

        With a gate (``authorize``, an extension's), only callers who may see that item: a caller
        whose own listing did not change is not told that something changed, which would tell it a
        hidden item exists (2025-11-25 server/tools §List Changed Notification: "When the list of
        available tools changes", the list being the caller's own).  With the open gate, everyone
        (``which`` None).
        """
        from ..server.connection import OPEN

        gate, connections = self.server.gate, self.server.connections()
        if gate is OPEN:
            return connections, None
        from ..server.seams import LISTING_ACTIONS

        action = LISTING_ACTIONS[kind]
        # One question per caller, not per connection or stream: by everything the verdict can
        # depend on (Principal.verdict_key), not the id alone.  Two sessions of one user share an
        # id but may hold different scopes: keyed by the id, whichever was asked first decided for
        # both, telling one of a tool it cannot see or keeping the other from hearing of one it can.
        # A gate that does not restrict (``restricts`` False: every principal sees the same) is
        # asked once for all: what ``restricts`` is for.  It is asked still: it may hide the item
        # from everyone alike.
        verdicts: dict[Hashable, bool] = {}
        shared = not gate.restricts

        def concerned(principal) -> bool:
            key = None if shared else principal.verdict_key
            verdict = verdicts.get(key)
            if verdict is None:
                verdict = verdicts[key] = gate.allows(principal, action, name)
            return verdict

        hub = self.streams()
        streams = set(
            hub.streams(lambda stream: concerned(stream.connection.principal))
            if hub is not None
            else ()
        )
        return [c for c in connections if concerned(c.principal)], streams.__contains__

    def announce(self, kind: str, listeners: tuple) -> None:
        """``notifications/{kind}/list_changed`` to ``listeners`` (:meth:`listeners`), or on the relay."""
        if self.relay is not None:
            self.relay.publish({"kind": "list_changed", "list": kind, "name": listeners[2]})
        else:
            self.deliver(kind, listeners[:2])

    def deliver(self, kind: str, listeners: tuple) -> None:
        """``notifications/{kind}/list_changed`` to ``(connections, which streams)``."""
        connections, which = listeners
        for connection in connections:
            connection.list_changed(kind)
        hub = self.streams()
        if hub is not None:  # no listen stream was ever opened without it
            hub.publish(f"notifications/{kind}/list_changed", which=which)

    def resource_updated(self, uri: str, shorthand: Any) -> None:
        """``Server.notify_resource_updated``: ``notifications/resources/updated`` for ``uri`` now, or
        once per ``resource_update_interval`` when the shorthand's policy sets one
        (``shorthand``: the server's :class:`~mcp_ref.server.shorthand.Shorthand`, or None)."""
        publish = self.publish_resource_updated
        updates = None if shorthand is None else shorthand.update_coalescer(publish)
        if updates is None:
            publish({"uri": uri})
        else:
            updates.announce(uri, {"uri": uri})

    def publish_resource_updated(self, params: dict) -> None:
        """``notifications/resources/updated`` (``params``) to the subscribers of its URI, or on the relay."""
        relay = self.relay_in_use()
        if relay is not None:
            relay.publish({"kind": "resource_updated", "params": params})
        else:
            self.deliver_resource_updated(params)

    def deliver_resource_updated(self, params: dict) -> None:
        """``notifications/resources/updated`` to this process's subscribers of ``params["uri"]``."""
        for connection in self.server.connections():
            if params["uri"] in connection.subscriptions:
                connection.notify("notifications/resources/updated", params)
        hub = self.streams()
        if hub is not None:
            hub.publish("notifications/resources/updated", params)

    def hear(self, message: dict) -> None:
        """A change from the relay, delivered to this process's connections and streams."""
        if message.get("kind") == "list_changed":
            self.deliver(message["list"], self.local_listeners(message["list"], message["name"]))
        elif message.get("kind") == "resource_updated":
            self.deliver_resource_updated(message["params"])

    def reannounce(self) -> None:
        """The relay came back after an outage: tell this process's listeners that every list may
        have changed (a change announced meanwhile on another worker never arrived); they list again."""
        for kind in ("tools", "prompts", "resources"):
            self.deliver(kind, (self.server.connections(), None))
