"""An in-process transport: two ends of one connection, joined by two bounded channels.

``Client.in_memory(server)`` uses it to run a server in the same process, for
tests and for embedding.  Messages cross as the same JSON bytes that stdio
carries (each end's session serialises and parses them), so everything above
the transport — framing aside — behaves exactly as it does over a pipe.

Each direction is a :class:`Channel` of at most ``limit`` messages.  When it
is full the writer waits, as it would on a full pipe (back-pressure, nothing
dropped).  Closing an end is closing both halves of a pipe: the peer reads end
of input once it has read what was already sent, and writing towards an end
that has closed raises ``OSError``, as writing to a pipe whose reader has gone
does.
"""

from __future__ import annotations

import collections
import threading

from .session import Transport

#: Messages one direction holds before its writer waits.
DEFAULT_LIMIT = 1024


class Channel:
    """One direction of the connection: a bounded FIFO of messages with a reader end and a writer end."""

    def __init__(self, limit: int = DEFAULT_LIMIT):
        if limit < 1:
            raise ValueError("a channel holds at least one message")
        self.limit = limit
        self._items: collections.deque[bytes] = collections.deque()
        self._cond = threading.Condition()
        self._writer_closed = False
        self._reader_closed = False

    def put(self, data: bytes) -> None:
        """Append one message, waiting while the channel is full; OSError once either end has closed."""
        with self._cond:
            while len(self._items) >= self.limit and not (
                self._reader_closed or self._writer_closed
            ):
                self._cond.wait()
            if self._reader_closed:
                raise OSError("the other end of the in-memory connection has closed")
            if self._writer_closed:
                raise OSError("this end of the in-memory connection is closed")
            self._items.append(data)
            self._cond.notify_all()

    def get(self) -> bytes | None:
        """The next message, waiting for one; None at end of input (writer closed and drained, or reader closed)."""
        with self._cond:
            while not self._items and not (self._writer_closed or self._reader_closed):
                self._cond.wait()
            if self._reader_closed or not self._items:
                return None
            data = self._items.popleft()
            self._cond.notify_all()
            return data

    def close_writer(self) -> None:
        """No more messages will be put: the reader gets end of input after the ones already here."""
        with self._cond:
            self._writer_closed = True
            self._cond.notify_all()

    def close_reader(self) -> None:
        """Nobody will read any more: what is queued is dropped, and writers get OSError."""
        with self._cond:
            self._reader_closed = True
            self._items.clear()
            self._cond.notify_all()


class MemoryTransport(Transport):
    """One end of an in-memory connection: reads from ``inbox``, writes to ``outbox``."""

    def __init__(self, inbox: Channel, outbox: Channel):
        self.inbox = inbox
        self.outbox = outbox

    def read(self) -> bytes | None:
        """The next message from the other end; None at end of input."""
        return self.inbox.get()

    def write(self, data: bytes, message=None, related=None) -> None:
        """Send one message to the other end (waits while its channel is full)."""
        self.outbox.put(data)

    def close(self) -> None:
        """Close this end: the other end reads end of input, and this end's reader stops."""
        self.outbox.close_writer()
        self.inbox.close_reader()


def memory_pair(limit: int = DEFAULT_LIMIT) -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected ends ``(a, b)``: what ``a`` writes, ``b`` reads, and the other way round."""
    a_to_b, b_to_a = Channel(limit), Channel(limit)
    return MemoryTransport(b_to_a, a_to_b), MemoryTransport(a_to_b, b_to_a)
