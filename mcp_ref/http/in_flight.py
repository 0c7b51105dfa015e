"""The HTTP client's requests on their way, and giving up on one of them.

A request is handed to a worker (:meth:`InFlight.submitted`: it waits for one), taken by it
(:meth:`InFlight.taken`: it is sent), its answer awaited on a socket (:meth:`InFlight.awaiting`:
an :class:`~mcp_ref.http.bounded_reads.Underway`), and at last finished.  The session may give
up on it at any point, its timeout passed or the call cancelled (:meth:`InFlight.give_up`):

* waiting for a worker, it is never sent;
* sent, the socket of its answer is shut down, now or as soon as it is watched, so that its
  worker stops reading and closes the response, and its stream is not resumed.

A server that keeps such a stream open (keep-alives, endless notifications) would otherwise hold a
worker and a connection for ever, and after ``max_workers`` of them no request of the client would
be sent again.  Only that request's own socket is touched, while it carries the request; the
response itself is closed by its worker alone.  Each table holds the requests handed to workers
and not finished: bounded by the session's requests.
"""

from __future__ import annotations

import threading

from ..jsonrpc import RequestId
from .bounded_reads import Underway


class InFlight:
    """The client's requests handed to workers, by id (thread-safe; see the module)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._handed: set[RequestId] = set()  # handed to a worker, not finished
        self._waiting: set[RequestId] = set()  # of those, not taken by a worker yet
        self._given_up: set[RequestId] = set()  # of those, given up on by the session
        self._underway: dict[RequestId, Underway] = {}  # the socket each answer comes on

    def submitted(self, request_id: RequestId) -> None:
        """``request_id`` waits for a worker."""
        with self._lock:
            self._handed.add(request_id)
            self._waiting.add(request_id)

    def taken(self, request_id: RequestId) -> bool:
        """A worker takes ``request_id``: True to send it, False when it was given up on while it
        waited (it is not sent)."""
        with self._lock:
            self._waiting.discard(request_id)
            return request_id not in self._given_up

    def drop_unsent(self, request_id: RequestId) -> bool:
        """Give up on ``request_id`` if it still waits for a worker: True when it is not sent at
        all (its worker skips it)."""
        with self._lock:
            unsent = request_id in self._waiting
            if unsent:
                self._given_up.add(request_id)
            return unsent

    def awaiting(self, request_id: RequestId, underway: Underway) -> None:
        """A worker waits for ``request_id``'s answer on ``underway``'s socket
        (:func:`~mcp_ref.http.bounded_reads.watch`); shut down at once if the session gave up on
        the request meanwhile."""
        with self._lock:
            given_up = request_id in self._given_up
            if not given_up:
                self._underway[request_id] = underway
        if given_up:
            underway.abort_now()

    def given_up(self, request_id: RequestId) -> bool:
        """Whether the session gave up on ``request_id``: its socket was shut down on purpose, so an
        error reading it is the end of that read, not a failure."""
        with self._lock:
            return request_id in self._given_up

    def give_up(self, request_id: RequestId) -> None:
        """The session no longer waits for ``request_id``: not sent if it waits for a worker, its
        answer's socket shut down if it is sent (now, or when it is watched); nothing for a request
        not handed to a worker, or finished."""
        with self._lock:
            if request_id not in self._handed:
                return
            self._given_up.add(request_id)
            underway = self._underway.pop(request_id, None)
        if underway is not None:
            underway.abort_now()

    def finished(self, request_id: RequestId) -> None:
        """``request_id``'s worker is done with it (or it was never handed over): forgotten."""
        with self._lock:
            self._handed.discard(request_id)
            self._waiting.discard(request_id)
            self._given_up.discard(request_id)
            self._underway.pop(request_id, None)
