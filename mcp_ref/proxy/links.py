"""The connections a proxy holds to its target (:class:`Links`): how many are open, bounded by
``max_back_connections``, and the pool of those leased to 2026 requests (an HTTP target).

One client holds at most ``max_back_connections_per_client`` of them at once (its handshake-era
sessions' and those leased to its requests), so that no client starves the others: the same
client as the HTTP server's shares name (``shares.client_of_connection``: the principal of its
token, else its address), counted as they count theirs (``shares.ClientCounts``).

A pool connection is the lease of one 2026 request at a time; given back, it waits idle for the
next (unless a handshake-era target may still be at work on that request, cancelled or timed out,
and ask for it: then it is closed, ``give_back(reuse=False)``).  An idle one is closed to make room when a connection is needed at the bound (a
handshake-era session's, which would otherwise be refused for as long as the pool stays idle),
and once it has been idle :data:`POOL_IDLE_TIMEOUT` seconds (found at the next lease, return or
connection counted, as the HTTP server finds its expired sessions at its next request): a pool
that grew for a burst of requests does not hold the target's connections, and the bound, after.

Once the proxy closes (:meth:`Links.shut`), no connection is opened or pooled: one leased to a
request in flight is closed with the others, and closed again (not pooled) when given back.  The
proxy closes its connections all at once (:func:`close_all`), within one bound.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from ..errors import InternalError, ServerBusy
from ..http.server.shares import ClientCounts, once
from .back import BackLink

#: Seconds a pool connection may stay idle before it is closed.
POOL_IDLE_TIMEOUT = 60.0
#: Seconds the proxy's close waits, in all, for its connections to close.
CLOSE_TIMEOUT = 10.0


class Links:
    """The connections a proxy holds to its target: how many, in all and by client, and its pool
    of idle ones."""

    def __init__(self, limit: int, per_client: int | None):
        #: Connections held at most (``max_back_connections``).
        self.limit = limit
        #: Connections one client holds at most (``max_back_connections_per_client``; None: no
        #: cap beside ``limit``).
        self.per_client = per_client
        #: Seconds a pool connection may stay idle (:data:`POOL_IDLE_TIMEOUT`).
        self.idle_timeout = POOL_IDLE_TIMEOUT
        #: Connections open now: the watcher, the sessions', the pool's.
        self.open = 1
        self._idle: list[tuple[float, BackLink]] = []  # (given back at, link), oldest first
        self._leased: dict[BackLink, Callable[[], None]] = {}  # -> its client's place's release
        self._kept: dict[BackLink, Callable[[], None]] = {}  # a session's -> its release (take)
        self._clients = ClientCounts()
        #: True once the proxy has closed: nothing is opened or pooled any more.
        self.closed = False
        #: The connections whose close has begun and not ended (a cancelled call's old process,
        #: closed on a thread of its own): the proxy's close waits for them too.
        self.ending: set[BackLink] = set()
        self._lock = threading.Lock()

    def count(self) -> None:
        """Count one more connection, about to be opened.  At the bound, the pool's least recently
        used idle connection is closed to make room; with none idle, -31000 "server busy"."""
        with self._lock:
            if self.closed:
                raise closed_error()
            gone = self._expired()
            if self.open >= self.limit and self._idle:
                gone.append(self._idle.pop(0)[1])
                self.open -= 1
            full = self.open >= self.limit
            if not full:
                self.open += 1
        _close(gone)
        if full:
            raise ServerBusy(
                f"Server busy: this proxy holds {self.limit} connections to its target; "
                "retry later",
                data={"limit": self.limit},
            )

    def uncount(self) -> None:
        """A connection counted is closed, or was never opened."""
        with self._lock:
            self.open -= 1

    def take(self, client: str) -> Callable[[], None]:
        """Room for a connection of ``client``'s own, about to be opened (a session's): counted
        in all (:meth:`count`), then among the client's; its release (idempotent)."""
        self.count()
        try:
            place = self._place(client)
        except BaseException:
            self.uncount()
            raise
        return once(self.uncount, place)

    def keep(self, link: BackLink, release: Callable[[], None]) -> None:
        """``link`` was opened in the room ``release`` (:meth:`take`) gives back at :meth:`drop`."""
        with self._lock:
            self._kept[link] = release

    def drop(self, link: BackLink) -> None:
        """Close a session's connection, giving its room back."""
        with self._lock:
            release = self._kept.pop(link, self.uncount)
        release()
        link.close()

    def lease(self, client: str, open_link: Callable[[], BackLink]) -> BackLink:
        """A pool connection for one request of ``client``'s, held in its place among the
        client's until given back: the most recently used idle one, else a new one
        (``open_link()``, counted)."""
        place = self._place(client)  # first: a client at its share takes no room from others
        try:
            link = self._pooled(open_link)
        except BaseException:
            place()
            raise
        with self._lock:
            self._leased[link] = place
            closed = self.closed
        if closed:  # the proxy closed meanwhile: not left open
            self.give_back(link)
            raise closed_error()
        return link

    def _pooled(self, open_link: Callable[[], BackLink]) -> BackLink:
        with self._lock:
            gone = self._expired()
            link = self._idle.pop()[1] if self._idle else None
        _close(gone)
        if link is not None:
            return link
        self.count()
        try:
            return open_link()
        except BaseException:
            self.uncount()
            raise

    def _place(self, client: str) -> Callable[[], None]:
        place = self._clients.hold(client, self.per_client)
        if place is None:
            # worded as the HTTP server's per-client refusals (shares, share_handlers)
            raise ServerBusy(
                f"Server busy: one client may hold {self.per_client} connections to the server "
                "behind this proxy at once; end a session, or retry when a request has finished",
                data={"limit": self.per_client},
            )
        return place

    def give_back(self, link: BackLink, *, reuse: bool = True) -> None:
        """A leased connection is free again: idle in the pool, or closed if it has ended or is
        not to be used again (``reuse`` False)."""
        with self._lock:
            place = self._leased.pop(link, None)
            gone = self._expired()
            if reuse and link.alive and not self.closed:
                self._idle.append((time.monotonic(), link))
            else:
                self.open -= 1
                gone.append(link)
        if place is not None:
            place()
        _close(gone)

    def shut(self) -> list[BackLink]:
        """The proxy closes: no connection is opened or pooled from now on.  Returns the pool's
        connections, idle and leased, for the caller to close (a leased one is closed again when
        given back)."""
        with self._lock:
            self.closed = True
            idle = [link for _, link in self._idle]
            self._idle.clear()
            self.open -= len(idle)
            return [*idle, *self._leased]

    def _expired(self) -> list[BackLink]:
        """Under the lock: the idle connections idle too long or ended, no longer counted."""
        oldest = time.monotonic() - self.idle_timeout
        gone = [link for since, link in self._idle if since <= oldest or not link.alive]
        if gone:
            self._idle = [(since, link) for since, link in self._idle if link not in gone]
            self.open -= len(gone)
        return gone


def closed_error() -> InternalError:
    """The error of a request that needs the target once the proxy has closed."""
    return InternalError("Internal error: this proxy has closed")


def _close(links: list[BackLink]) -> None:
    for link in links:
        link.close()


def close_all(links: list[BackLink], timeout: float = CLOSE_TIMEOUT) -> None:
    """Close ``links`` at once, each on a short-lived thread, waiting ``timeout`` seconds in all:
    a stalled target (a process that reads nothing, a server that does not answer) holds its own
    connection's close up to that connection's bound, not the others' one after the other.  A
    close not done by then goes on behind (a daemon thread), and the caller goes on."""
    deadline = time.monotonic() + timeout

    def close(link: BackLink) -> None:
        link.close()  # returns at once if its close had begun: its end is waited for then
        link.closed.wait(max(0.0, deadline - time.monotonic()))

    threads = [
        threading.Thread(target=close, args=(link,), name="mcp-proxy-close", daemon=True)
        for link in links
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
