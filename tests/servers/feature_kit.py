"""Test-side helpers for the feature test modules (imported by tests; not a server).

``ClientPool`` keeps one stdio client per protocol revision for a whole test
module, each with its own ``WireChecker`` (every message validated against the
negotiated revision's official schema) and an ``Inbox`` per client callback.
``Inbox`` collects callback arguments; tests wait on its Condition, bounded by
``WAIT`` — never sleep-and-retry.
"""

from __future__ import annotations

import threading

from conftest import WAIT, WireChecker

from mcp_ref import LATEST_VERSION, Client


class Inbox:
    """A callable that records what it is called with; ``wait_for`` blocks (bounded) on a predicate."""

    def __init__(self):
        self.items: list = []
        self._cond = threading.Condition()

    def __call__(self, *args):
        with self._cond:
            self.items.append(args[0] if len(args) == 1 else args)
            self._cond.notify_all()

    def mark(self) -> int:
        """The number of items so far: pass it as ``since`` to look only at later ones."""
        with self._cond:
            return len(self.items)

    def since(self, mark: int) -> list:
        with self._cond:
            return list(self.items[mark:])

    def wait_for(self, predicate, since: int = 0, timeout: float = WAIT) -> list:
        """Wait until ``predicate(items[since:])`` holds; return those items (fail after ``timeout``)."""
        with self._cond:
            ok = self._cond.wait_for(lambda: predicate(self.items[since:]), timeout)
            got = list(self.items[since:])
        assert ok, f"condition not met within {timeout} s; received {got!r}"
        return got


class Peer:
    """One client connection of a pool, with its wire checker and callback inboxes."""

    def __init__(self, command, version: str, **options):
        self.wire = WireChecker()
        self.logs = Inbox()
        self.updates = Inbox()
        self.changes = Inbox()
        self.stderr = Inbox()
        options.setdefault("timeout", WAIT)
        self.client = Client.stdio(
            command, protocol_version=version, trace=self.wire, stderr=self.stderr,
            on_log=self.logs, on_resource_updated=self.updates, on_list_changed=self.changes, **options,
        )


class ClientPool:
    """Module-scoped clients of one server command, one per (revision, label)."""

    def __init__(self, command):
        self.command = command
        self.peers: dict[tuple, Peer] = {}
        self._lock = threading.Lock()

    def peer(self, version: str = LATEST_VERSION, label: str = "", **options) -> Peer:
        """The pool's connection for ``version`` (started on first use; ``label`` keeps variants apart)."""
        key = (version, label)
        with self._lock:
            if key not in self.peers:
                self.peers[key] = Peer(self.command, version, **options)
            return self.peers[key]

    def client(self, version: str = LATEST_VERSION, **options) -> Client:
        return self.peer(version, **options).client

    def snapshot(self) -> dict:
        """How many schema errors each connection has seen so far."""
        with self._lock:
            return {key: len(p.wire.errors) for key, p in self.peers.items()}

    def assert_valid_since(self, snapshot: dict) -> None:
        """Fail if any message since ``snapshot`` broke the official schema."""
        with self._lock:
            new = [e for key, p in self.peers.items() for e in p.wire.errors[snapshot.get(key, 0):]]
        assert not new, "messages not valid against the official schema:\n" + "\n".join(new[:20])

    def close(self) -> None:
        """Close every client, then fail if any message of any of them broke the schema."""
        for p in self.peers.values():
            p.client.close()
        for p in self.peers.values():
            p.wire.assert_valid()
