"""The HTTP client's requests on their way, and giving up on one of them.

A request is handed to a worker (:meth:`InFlight.submitted`: it waits for one), taken by it
(:meth:`InFlight.taken`: it is sent), its answer awaited on a socket (:meth:`InFlight.awaiting`:
an :class:`~mcp_ref.http.bounded_reads.Underway`), and at last finished.  The session may give
up on it at any point, its timeout passed or the call cancelled.  That is two steps:

* :meth:`InFlight.cancel`, at once: the request is not sent from now on (waiting for a worker,
  or for a new session before its POST: :meth:`InFlight.check_unsent` raises
  :class:`GivenUp`), nor its stream resumed;
* :meth:`InFlight.give_up`, once the server was told (handshake era) or at once (2026-07-28, where
  closing the stream is the cancellation): the socket of its answer is shut down, now or as soon
  as it is watched, so that its worker stops reading and closes the response.  Until then, what
  the server sends on the stream is read: its last word on the request.

A server that keeps such a stream open (keep-alives, endless notifications) would otherwise hold a
worker and a connection for ever, and after ``max_workers`` of them no request of the client would
be sent again.  Only that request's own socket is touched, while it carries the request; the
response itself is closed by its worker alone.  Closing the transport gives up on every request,
and shuts down every socket watched, a notification's too (:meth:`InFlight.close`): no worker is
left reading.  Each table holds the requests handed to workers and not finished: bounded by the
session's requests.

What the client POSTs with no answer to wait for (a notification, an answer, a cancellation, the
session's DELETE) is sent under a key of its own (:meth:`InFlight.notice`): nobody's timeout
bounds it, so it has a deadline of its own, over the whole exchange (a server that trickles its
answer a byte at a time restarts every read timeout, never this one), kept by one thread,
:class:`Deadlines`, which gives up on it when it passes.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Hashable, Iterator

from .bounded_reads import Underway


class GivenUp(Exception):
    """The session gave up on a request before its POST: it is not sent."""


class InFlight:
    """The client's requests handed to workers, by id (thread-safe; see the module)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handed: set[Hashable] = set()  # request ids handed to a worker, not finished
        self._waiting: set[Hashable] = set()  # of those, not taken by a worker yet
        self._cancelled: set[Hashable] = set()  # of those, cancelled: not sent, not resumed
        self._given_up: set[Hashable] = set()  # of those, their sockets shut down
        # the socket each answer comes on, by request id (or a notification's own key)
        self._underway: dict[Hashable, Underway] = {}
        self._closed = False
        self._deadlines: Deadlines | None = None  # made with the first notice that has one

    @contextlib.contextmanager
    def notice(self, key: Hashable, seconds: float | None) -> Iterator[None]:
        """While the block sends a notice under ``key`` (its own, unique), the socket of its answer
        is shut down once ``seconds`` have passed (None: never) or the transport closes, and
        :meth:`given_up` says so; :class:`GivenUp` (nothing sent) once the transport has closed."""
        self.submitted(key)
        try:
            if not self.taken(key):
                raise GivenUp(key)
            if seconds is not None:
                with self._lock:
                    if self._deadlines is None:
                        self._deadlines = Deadlines(self)
                self._deadlines.keep(key, time.monotonic() + seconds)
            yield
        finally:
            if self._deadlines is not None:
                self._deadlines.drop(key)
            self.finished(key)

    def submitted(self, request_id: Hashable) -> None:
        """``request_id`` waits for a worker."""
        with self._lock:
            self._handed.add(request_id)
            self._waiting.add(request_id)

    def taken(self, request_id: Hashable) -> bool:
        """A worker takes ``request_id``: True to send it, False when it was cancelled while it
        waited (it is not sent)."""
        with self._lock:
            self._waiting.discard(request_id)
            return request_id not in self._cancelled and not self._closed

    def check_unsent(self, request_id: Hashable) -> None:
        """Raise :class:`GivenUp` when ``request_id`` was cancelled: called just before its POST
        (a worker may first wait for a new session)."""
        with self._lock:
            if request_id in self._cancelled or self._closed:
                raise GivenUp(request_id)

    def cancel(self, request_id: Hashable) -> bool:
        """The session cancelled ``request_id``: it is not sent from now on, nor its stream
        resumed (its socket is :meth:`give_up`'s).  True when it still waited for a worker:
        nothing of it was sent."""
        with self._lock:
            if request_id not in self._handed:
                return False
            self._cancelled.add(request_id)
            return request_id in self._waiting

    def is_cancelled(self, request_id: Hashable) -> bool:
        """Whether ``request_id`` was cancelled (its stream is not resumed)."""
        with self._lock:
            return request_id in self._cancelled or self._closed

    def give_up(self, request_id: Hashable) -> None:
        """Shut down the socket of ``request_id``'s answer, now or when it is watched (and cancel
        it, if it was not); nothing for a request not handed to a worker, or finished."""
        with self._lock:
            if request_id not in self._handed:
                return
            self._cancelled.add(request_id)
            self._given_up.add(request_id)
            underway = self._underway.pop(request_id, None)
        if underway is not None:
            underway.abort_now()

    def given_up(self, request_id: Hashable) -> bool:
        """Whether ``request_id``'s socket was shut down on purpose: an error reading it is the end
        of that read, not a failure."""
        with self._lock:
            return request_id in self._given_up or self._closed

    def awaiting(self, key: Hashable, underway: Underway) -> None:
        """A worker waits for the answer to ``key`` (a request id, or a notification's own key) on
        ``underway``'s socket (:func:`~mcp_ref.http.bounded_reads.watch`); shut down at once if the
        session gave up on the request meanwhile, or the transport closed."""
        with self._lock:
            given_up = key in self._given_up or self._closed
            if not given_up:
                self._underway[key] = underway
        if given_up:
            underway.abort_now()

    def finished(self, key: Hashable) -> None:
        """The worker is done with ``key``'s request (or it was never handed over), or with the
        notification ``key`` names: forgotten."""
        with self._lock:
            for table in (self._handed, self._waiting, self._cancelled, self._given_up):
                table.discard(key)
            self._underway.pop(key, None)

    def close(self) -> None:
        """The transport closes: every request is given up on, every socket watched is shut down,
        and so is each one watched from now on."""
        with self._lock:
            self._closed = True
            watched = list(self._underway.values())
            self._underway.clear()
        for underway in watched:
            underway.abort_now()
        if self._deadlines is not None:
            self._deadlines.close()


class Deadlines:
    """The deadlines of the notices being sent (:meth:`InFlight.notice`), and the one thread that
    gives up on each notice whose deadline passed (:meth:`InFlight.give_up`: its socket is shut
    down).  It holds the notices being sent, no more: each is dropped when its POST ends."""

    def __init__(self, in_flight: InFlight) -> None:
        self._in_flight = in_flight
        self._due: dict[Hashable, float] = {}  # key -> its deadline (time.monotonic())
        self._changed = threading.Condition(threading.Lock())
        self._closed = False
        threading.Thread(target=self._run, name="mcp-http-deadlines", daemon=True).start()

    def keep(self, key: Hashable, deadline: float) -> None:
        """Give up on ``key`` at ``deadline`` unless it is dropped before."""
        with self._changed:
            self._due[key] = deadline
            self._changed.notify()

    def drop(self, key: Hashable) -> None:
        """``key``'s POST has ended: no deadline for it any more."""
        with self._changed:
            self._due.pop(key, None)

    def close(self) -> None:
        """The transport closed (every socket shut down already): the thread ends."""
        with self._changed:
            self._closed = True
            self._changed.notify()

    def _run(self) -> None:
        while True:
            with self._changed:
                while True:
                    if self._closed:
                        return
                    now = time.monotonic()
                    passed = [key for key, deadline in self._due.items() if deadline <= now]
                    if passed:
                        break
                    nearest = min(self._due.values(), default=None)
                    self._changed.wait(None if nearest is None else nearest - now)
                for key in passed:
                    del self._due[key]
            for key in passed:
                self._in_flight.give_up(key)
