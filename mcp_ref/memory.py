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

:func:`open_client` is ``Client.in_memory``'s work: the server's side of the connection, and the
server's lifespan, which the client holds from its start to its ``close()``
(:mod:`mcp_ref.server.lifespan`).
"""

from __future__ import annotations

import collections
import logging
import threading
from collections.abc import Callable
from typing import Any

from .session import Transport

log = logging.getLogger(__name__)

#: Messages one direction holds before its writer waits.
DEFAULT_LIMIT = 1024

#: Seconds ``client.close()`` waits for the server's side to finish its handlers before it leaves
#: the lifespan (a handler that ignores its cancellation: the lifespan is left when it ends).
SERVER_END_WAIT = 5.0


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


def open_client(client_class: Any, server: Any, options: dict) -> tuple[Any, Callable[[], None]]:
    """``Client.in_memory(server, **options)``: a ``client_class`` connected to ``server`` in this
    process, and what its ``close()`` runs last (:meth:`ServerSide.finish`).

    The server's side is ``server.connect()``'s, but for the lifespan: instead of holding it as
    serving does (until ``server.exit_lifespan()``), the client holds it until it closes
    (:meth:`Lifespan.hold <mcp_ref.server.lifespan.Lifespan.hold>`), so that the last in-memory
    client to close exits it.  It is entered here, before the client's first request (a failure
    comes out here, and no server side is left behind).
    """
    lifespan = server.lifespan_state  # None: the server has no lifespan
    hold = None if lifespan is None else lifespan.hold()
    client_end, server_end = memory_pair()
    try:
        connection = server.new_connection(server_end, name=f"{server.name}-memory")
        server.add_connection(connection)
        connection.session.start()
    except BaseException:
        if hold is not None:
            hold.release()
        raise
    server_side = ServerSide(connection, hold)
    try:
        client = client_class(client_end, **options)
    except BaseException:
        client_end.close()  # the server's side sees end of input
        server_side.finish()
        raise
    return client, server_side.finish


class ServerSide:
    """The server's side of an in-memory connection, as its client's ``close()`` ends it."""

    def __init__(self, connection: Any, hold: Any):
        self.connection = connection
        #: The client's :class:`~mcp_ref.server.lifespan.LifespanHold`; None without a lifespan.
        self.hold = hold

    def finish(self) -> None:
        """After the client's end has closed: let go of the lifespan once the server's side has
        finished its handlers (up to :data:`SERVER_END_WAIT` seconds; past that, when they end,
        on a thread of its own that logs what the exit raised).  The last holder's exit raises
        here, so out of ``client.close()``."""
        hold = self.hold
        if hold is None:
            return
        session = self.connection.session
        if session.wait_closed(SERVER_END_WAIT):
            hold.release()
            return
        log.warning(
            "%s: handlers still run %s s after the in-memory client closed; the lifespan is left "
            "when they end",
            session.name,
            SERVER_END_WAIT,
        )
        threading.Thread(
            target=self._release_when_ended, name=f"{session.name}-lifespan", daemon=True
        ).start()

    def _release_when_ended(self) -> None:
        self.connection.session.wait_closed()
        try:
            self.hold.release()
        except Exception:
            log.exception("%s: the lifespan's exit failed", self.connection.session.name)
