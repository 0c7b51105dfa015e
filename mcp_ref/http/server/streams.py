"""One SSE stream (a POST's, or a session's standalone GET stream), apart from any HTTP connection.

A :class:`Stream` outlives the response that carries it, so a client whose connection dropped can
resume it (``Last-Event-ID``); at most one response consumes it at a time.
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Iterable
from typing import Protocol

from ...jsonrpc import ErrorResponse

log = logging.getLogger(__name__)

#: Queued after a stream's last message: its consumer's response ends.
END = object()
#: Ends the current connection of a stream, not the stream (SSE polling).
CLOSE = object()


class DirectWriter(Protocol):
    """The response of a POST whose handler runs on its thread: writes go straight to it
    (``replies.DirectReply``)."""

    status: str
    #: Its client has gone, or it was closed for polling: the stream no longer goes through it.
    broken: bool

    def send(self, data: bytes, end: bool) -> bool:
        """Write one message; False when it must be queued on the stream instead."""

    def close_connection(self) -> None:
        """End the response for SSE polling (``retry``), keeping the stream."""


class Stream:
    """The messages of one SSE stream (a POST's, or the standalone one), apart from any connection.

    At most one HTTP response consumes it at a time: a newer one (a client
    resuming after a drop) takes over, so no message is sent on two streams.
    """

    ended = False
    consumer: object | None = None
    #: Messages refused since it became full (logged when it starts and when it ends).
    dropped = 0
    #: True once a response carried it and left with no other taking over (see HttpSession.settle).
    orphaned = False
    #: While a POST runs its handler inline: writes go straight to it.
    direct: DirectWriter | None = None
    #: The consumer ended by ``leave(close=True)``.
    closing: object | None = None
    #: Of a JSON answer; a 2026-07-28 error answer sets its own (modern_status).
    status = "200 OK"
    #: Shared sessions: its end is in the event store (HttpSession.mark_end).
    end_stored = False
    #: Its requests came in one JSON-RPC batch (their answer is one array).
    batch = False
    #: The answers to the requests of its batch that were refused before dispatch (over their
    #: client's share of the handler pool), sent in the batch's array.
    refused: tuple[ErrorResponse, ...] = ()

    def __init__(
        self,
        stream_id: str,
        answers: Iterable | None = None,
        limit: int | None = None,
        byte_limit: int | None = None,
    ):
        self.id = stream_id
        self.answers = set(answers) if answers is not None else None  # request ids that end it
        self.limit = limit  # undelivered messages it holds at most (None: no bound of its own)
        #: Undelivered bytes it holds at most (None: no bound): past it a message is refused, as
        #: past ``limit``, unless the stream holds nothing (one message always fits, however long).
        self.byte_limit = byte_limit
        #: The bytes of the messages it holds undelivered (under :attr:`cond`).
        self.held_bytes = 0
        self.items: collections.deque = collections.deque()
        self.cond = threading.Condition()

    def put(self, data: bytes, *, end: bool = False, answer: bool = False) -> bool:
        """Queue one message for the consumer; False (nothing queued) when the stream is full.

        An answer is always queued, full or not, and never dropped: the message that ends the
        stream (a POST's answer), and, with ``answer``, one that does not (2024-11-05 HTTP+SSE:
        the answers to the POSTs it accepted, on its one stream).  Past the bounds, what holds
        new work back is the 503 a legacy POST gets while the stream is full; the answers queued
        past them are those of the handlers already running (at most ``max_handlers_per_client``).
        A stream already ended takes nothing more (dropped, logged).
        """
        with self.cond:
            if self.ended:
                log.debug("stream %s has ended: a late message was dropped", self.id)
                return True
            if not (end or answer) and self._full(len(data)):
                self.dropped += 1
                return False
            if self.dropped:
                log.warning(
                    "stream %s has room again; %d messages were dropped while it was full",
                    self.id,
                    self.dropped,
                )
                self.dropped = 0
            self.items.append(data)
            self.held_bytes += len(data)
            if end:
                self.items.append(END)
                self.ended = True
            self.cond.notify_all()
            return True

    def full(self) -> bool:
        """True while the stream holds as many undelivered messages, or bytes, as it may."""
        with self.cond:
            return self._full(1)  # no room for one byte more

    def _full(self, more: int) -> bool:
        """True when ``more`` bytes (one more message) would take it past its bounds (under
        :attr:`cond`)."""
        if self.limit is not None and len(self.items) >= self.limit:
            return True
        return (
            self.byte_limit is not None
            and bool(self.items)
            and self.held_bytes + more > self.byte_limit
        )

    def clear(self) -> list[bytes]:
        """Take every message it holds undelivered, in order (under :attr:`cond`)."""
        messages = [item for item in self.items if isinstance(item, bytes)]
        self.items.clear()
        self.held_bytes = 0
        return messages

    def close_connection(self) -> bool:
        """End the HTTP response now serving this stream; later messages wait for a resuming GET.
        False when none serves it now, or its end is asked for already: nothing to close (a
        ``CLOSE`` queued for nobody would end the client's next GET as soon as it resumed)."""
        with self.cond:
            if self.consumer is None or CLOSE in self.items:
                return False
            self.items.append(CLOSE)
            self.cond.notify_all()
            return True

    def end(self) -> None:
        """End the stream (its consumer's response ends once it has taken what is queued)."""
        with self.cond:
            if not self.ended:
                self.ended = True
                self.items.append(END)
                self.cond.notify_all()

    def attach(self) -> object:
        """Make a new consumer (an HTTP response) the stream's only one; returns its token."""
        token = object()
        with self.cond:
            self.consumer = token
            self.orphaned = False
            self.cond.notify_all()
        return token

    def detach(self, token: object) -> None:
        """Consumer ``token``'s response has ended (the stream is orphaned unless another took over)."""
        with self.cond:
            if self.consumer is token:
                self.consumer = None
                self.orphaned = True

    def leave(self, token: object, *, close: bool = False) -> None:
        """End consumer ``token``'s response now, from any thread (its client has gone, or room is
        needed): its ``take`` returns ``END`` at once, or ``CLOSE`` with ``close`` (a ``retry``
        event first: SSE polling).  The stream itself goes on, for a resuming GET."""
        with self.cond:
            if self.consumer is token:
                if close:
                    self.closing = token
                self.consumer = None
                self.orphaned = True
                self.cond.notify_all()

    def orphan(self) -> None:
        """The response that carried the stream has gone (or closed for SSE polling) without a successor."""
        with self.cond:
            if self.consumer is None:
                self.orphaned = True

    def take(self, token: object, timeout: float | None):
        """The next item for consumer ``token``: bytes, ``END``, None on timeout, or ``END`` if superseded."""
        with self.cond:
            while True:
                if self.consumer is not token:
                    return CLOSE if self.closing is token else END
                if self.items:
                    item = self.items.popleft()
                    if isinstance(item, bytes):
                        self.held_bytes -= len(item)
                    return item
                if self.ended:
                    # its end was taken by the consumer before (a GET resuming just as the POST's own
                    # response finished): nothing more will come, so this response ends too
                    return END
                if not self.cond.wait(timeout):
                    return None

    def drained_after_end(self) -> bool:
        """True when all the stream still holds is its end (its answer was the one message)."""
        with self.cond:
            return self.ended and len(self.items) == 1 and self.items[0] is END
