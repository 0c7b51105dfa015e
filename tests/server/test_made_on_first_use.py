"""What a server makes on first use, made once when two threads ask at the same moment.

A server makes some of its parts only when first needed (the relay of its changes, the cache of its
extensions' methods).  Two connections' handler threads may need one at once, or an extension may
be added while a request is being dispatched: each test holds that moment open with events (a
bus whose first subscriber waits for a second, an extension whose methods wait to be released) and
checks that nothing is made twice and nothing added meanwhile is lost.
"""

from __future__ import annotations

import threading

from conftest import WAIT

from mcp_ref.extension import Extension
from mcp_ref.memory import memory_pair
from mcp_ref.server import Server
from mcp_ref.state.changes import CHANGES
from mcp_ref.state.stores import MemoryBus, MemoryState

#: How long the first relay's subscription waits for a second one (none comes when they are made
#: one at a time: the wait then ends by this bound, and the test goes on).
HOLD = 1.0


class HeldBus(MemoryBus):
    """A bus shared by the deployment whose first subscriber to the changes channel waits (at most
    :data:`HOLD`) for a second one: the moment two relays could be made at once, held open."""

    def __init__(self) -> None:
        super().__init__()
        self.first_in = threading.Event()
        self.second_in = threading.Event()
        self._count = 0
        self._count_lock = threading.Lock()

    def subscribe(self, channel, callback):
        if channel == CHANGES:
            with self._count_lock:
                self._count += 1
                first = self._count == 1
            if first:
                self.first_in.set()
                self.second_in.wait(HOLD)
            else:
                self.second_in.set()
        return super().subscribe(channel, callback)


class SharedState(MemoryState):
    """A state whose every ``bus()`` is the one bus (as Redis's: one channel for every worker)."""

    shared = True

    def __init__(self) -> None:
        self.one_bus = HeldBus()

    def bus(self) -> HeldBus:
        return self.one_bus


def test_two_connections_arriving_at_once_make_one_relay_of_the_changes():
    state = SharedState()
    server = Server("first-use", state=state)
    ends = []

    def connect() -> None:
        client_end, server_end = memory_pair()
        ends.append(client_end)
        server.connect(server_end)  # the first connection makes the relay: on the shared bus

    first = threading.Thread(target=connect)
    first.start()
    assert state.one_bus.first_in.wait(WAIT)
    second = threading.Thread(target=connect)
    second.start()
    first.join(WAIT)
    second.join(WAIT)
    try:
        assert not first.is_alive() and not second.is_alive()
        # Two relays would each hear every change, and every listener be told it twice.
        assert state.one_bus.subscribers(CHANGES) == 1
    finally:
        for end in ends:
            end.close()


class HeldMethods(Extension):
    """An extension whose first ``methods()`` waits until released: a request being dispatched."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.release = threading.Event()

    def methods(self, version):
        if not self.asked.is_set():
            self.asked.set()
            assert self.release.wait(WAIT)
        return {"held/ping": lambda ctx, params: {}}


class Later(Extension):
    """An extension added while the first one's methods are being asked."""

    def methods(self, version):
        return {"later/ping": lambda ctx, params: {}}


def test_an_extension_added_while_a_request_is_dispatched_keeps_its_methods():
    held = HeldMethods()
    server = Server("first-use", extensions=[held])
    found = []
    dispatch = threading.Thread(
        target=lambda: found.append(server.extension_method("held/ping", "2025-11-25"))
    )
    dispatch.start()
    try:
        assert held.asked.wait(WAIT)
        server.add_extension(Later())
    finally:
        held.release.set()
        dispatch.join(WAIT)
    assert found and found[0] is not None
    # The methods built from the list before Later was added must not stand for the new list.
    assert server.extension_method("later/ping", "2025-11-25") is not None
    assert server.extension_method("held/ping", "2025-11-25") is not None


def test_a_relay_asked_for_by_a_registration_and_a_listen_at_once_is_made_without_deadlock():
    holding = threading.Event()  # the registration holds the server's registry lock
    asked = threading.Event()  # the listen's thread asks for the state
    go = threading.Event()

    class Watched(Server):
        @property
        def shared_state(self):
            if threading.current_thread().name == "listen":
                asked.set()
            return super().shared_state

    class AsksForTheBus(Extension):
        """An extension whose setup (run under the server's registry lock) waits, then asks for
        the bus: a registration that announces a change."""

        def setup(self, host):
            holding.set()
            assert go.wait(WAIT)
            _ = host.bus

    server = Watched("first-use", state=MemoryState())
    server._changes_of()  # where changes go, made (by a first change) but without its relay yet
    # Daemons: deadlocked, they would otherwise keep the test run from ending.
    registering = threading.Thread(
        target=server.add_extension, args=(AsksForTheBus(),), daemon=True
    )
    listening = threading.Thread(target=lambda: server.bus, name="listen", daemon=True)
    registering.start()
    assert holding.wait(WAIT)
    listening.start()
    assert asked.wait(WAIT)
    go.set()
    registering.join(WAIT)
    listening.join(WAIT)
    assert not registering.is_alive() and not listening.is_alive()
