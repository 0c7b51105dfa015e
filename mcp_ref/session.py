"""One JSON-RPC endpoint over one connection: the engine under Client and Server.

Threads, and what each one does:

* the **reader** (one per connection, for its whole life) reads messages, parses them and routes them
  in arrival order: an answer settles its future, a notification is handled, a request is handed to
* the **handler pool**, a :class:`concurrent.futures.ThreadPoolExecutor` of at most ``max_workers``
  threads (or the ``executor`` given), which runs the handlers of incoming requests; so a handler
  may ask the peer and wait while the reader reads the answer;
* the **callback thread** (one, started when first needed) runs user callbacks for notifications
  (progress, log messages, list changes) in the order they arrived, so a slow or re-entrant callback
  cannot stall the reader;
* any number of **caller** threads send requests and wait on their futures.

Outgoing requests live in ``_pending``, a dict of ``Future``s (:class:`PendingRequest`) keyed by
request id under ``_lock``; a
request is registered *before* it is written, so an answer can never arrive for an id we do not know.
``close()`` (or end of input) fails every pending future with :class:`ConnectionClosed`, and
settles one whose answer is held for the callback thread (``_held``) with that answer.

The session knows JSON-RPC, timeouts, cancellation and progress; what a method *means* is the business
of a *dispatcher* (the server or client role), which provides
``handle_request(context, method, params)``, ``handle_notification(method, params)`` and
``ended()`` (the reader's last act, once the connection has ended); a
handshake-era ``ping`` the session answers itself (:func:`mcp_ref.lifecycle.answered_at_once`).  Whether
a batch is allowed is the negotiated revision's (:func:`mcp_ref.lifecycle.batches_allowed`).  What
it asks of the connection is :class:`Transport`, the transport contract (below).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from . import jsonrpc
from .errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    ConnectionClosed,
    InvalidRequest,
    McpError,
    MessageTooLarge,
    ParseError,
    RequestCancelled,
    RequestTimeout,
)
from .jsonrpc import ErrorResponse, Notification, Request, Response
from .lifecycle import OPTIONAL_ERROR_ID, answered_at_once, at_least, batches_allowed
from .request import (
    DEFAULT,
    EVENTS_LOCK,
    Default,
    Dispatcher,
    HandlerPool,
    PendingRequest,
    ProgressCallback,
    RequestContext,
    run_logged,
)

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from .batch import Batch
    from .callback_queue import CallbackQueue

__all__ = [
    "Session",
    "Transport",
    "OutgoingRequests",
    "RequestContext",
    "PendingRequest",
    "Dispatcher",
    "ProgressCallback",
    "DEFAULT_TIMEOUT",
    "DEFAULT_MAX_INCOMING",
    "DEFAULT_MAX_TOTAL_FACTOR",
    "DEFAULT_MAX_CALLBACKS",
    "DEFAULT_MAX_CALLBACK_BYTES",
]

log = logging.getLogger(__name__)


# -- the transport contract ----------------------------------------------------------------


class OutgoingRequests(Protocol):
    """What a transport may do to the requests its session sent and waits on (see
    :meth:`Transport.attach`).

    A transport that sends each request on its own (HTTP) learns some things about one itself:
    the server could not be reached, refused it, or the user is being asked to authorize it.
    """

    def request_deadline(self, request_id: jsonrpc.RequestId) -> float | None:
        """The ``time.monotonic()`` at which the session stops waiting for ``request_id``'s answer
        (None: it waits forever, or the request is not in flight)."""
        ...

    def write_deadline(self, message: Any) -> float | None:
        """The ``time.monotonic()`` until which a transport that must wait to write ``message`` (its
        pipe is full) may wait: a request's own deadline, any other message's a short bound (asked
        again after each part written); None: no limit."""
        ...

    def fail_request(self, request_id: jsonrpc.RequestId, error: Exception) -> None:
        """Fail ``request_id`` here with ``error`` (what its caller gets); nothing once it is answered."""
        ...

    def hold_request(self, request_id: jsonrpc.RequestId, seconds: float) -> None:
        """``request_id`` waits on this side for up to ``seconds`` (a person authorizing in a browser):
        its timeout is extended by that much, as the wait is not the peer's delay."""
        ...


class Transport:
    """The transport contract, and the base class of every transport: everything the session asks
    of a connection, in five members.

    A transport moves whole messages.  Three methods are the core, as in ``requests``' adapters
    (``send`` / ``close``): :meth:`Transport.read`, :meth:`Transport.write` and
    :meth:`Transport.close`.  Two hooks have defaults that do nothing, so a stream transport (stdio,
    in-memory, a socket) overrides only the core:

    =====================  ===========================  ==========================================
    member                 called by                    overridden by
    =====================  ===========================  ==========================================
    ``read``               the session's reader thread  every transport (HTTP server: never read,
                                                        fed through ``Session.dispatch``)
    ``write``              the session, from any thread every transport
    ``close``              the session                  every transport
    ``attach``             the session, once, at start  a transport that fails or delays our
                                                        requests itself (the HTTP client)
    ``request_finished``   the session                  a transport with a stream per request
                                                        (the HTTP server ends that stream)
    =====================  ===========================  ==========================================

    ``write`` may be called from several threads at once: a transport whose messages share one byte
    stream serialises them itself (stdio holds a lock), one that sends each on its own (HTTP) does not
    need to.

    **What only HTTP needs is not here.**  The HTTP adapters offer it through one optional attribute,
    ``http_hooks``, which the roles look up with ``getattr(transport, "http_hooks", None)`` (None on
    every other transport):

    * the HTTP client transport's (:class:`mcp_ref.http.bounded_reads.ClientHooks`): the client
      role tells it how to start a new session after a 404 (``set_reinitialize``), the negotiated
      version (``initialized``), and that there is no session any more (2026-07-28, ``stateless``);
      with them it also knows each request gets an HTTP status and mirrors its body in headers;
    * the HTTP server transports' (:class:`mcp_ref.http.server.request.ServerHooks`):
      the server's ``Context`` asks for the HTTP request a request came in on (``http_request``) and
      closes a request's SSE stream for polling (``close_stream``).

    Nothing else is looked up on a transport, and nothing is patched onto one.
    """

    def read(self) -> bytes | None:
        """Block until one whole message arrives and return its bytes; None at end of input.

        May raise :class:`~mcp_ref.errors.MessageTooLarge` for a message over the
        transport's limit (already discarded; its ``head``, the bytes read of it, names its id
        when it can); any other exception ends the connection.  A transport that parsed the
        message already may return bytes that carry it as ``parsed`` (the session then takes that).
        """
        raise NotImplementedError

    def write(
        self, data: bytes, message: Any = None, related: jsonrpc.RequestId | None = None
    ) -> None:
        """Send one message: ``data`` is its bytes, ``message`` the object they encode.

        ``related`` is the id of the incoming request this message belongs to (a
        response's own id, or the request whose handler sent it); None for
        messages that belong to no request.  Stream transports ignore both; HTTP
        uses them to choose the request or stream a message travels on.  Raise
        ``OSError`` (or ``ValueError``) when the connection is gone.  May be called
        from several threads at once.
        """
        raise NotImplementedError

    def close(self) -> None:
        """Close the connection (for a subprocess: end it).  Must be idempotent."""
        raise NotImplementedError

    # -- hooks: each has a default that does nothing -----------------------------------

    def attach(self, requests: OutgoingRequests) -> None:
        """Called once by the session before it reads: ``requests`` are the ones it sends.

        A transport that sends each request on its own bounds its reads by a request's deadline
        and fails or holds one it learnt about (the HTTP client).  Default: ignored."""

    def request_finished(self, request_id: jsonrpc.RequestId) -> None:
        """The handler of incoming request ``request_id`` ended without an answer (it was cancelled).

        HTTP ends the stream that waited for that answer.  Default: nothing."""


DEFAULT_TIMEOUT = 60.0
#: The ``closed`` event of every session that ended before anyone asked for its own: set, for good.
ENDED = threading.Event()
ENDED.set()
#: Incoming requests one connection holds at once (running or waiting for a handler thread). Past it a
#: request is answered at once with -31000 (:class:`~mcp_ref.errors.ServerBusy`), never queued without bound.
DEFAULT_MAX_INCOMING = 1024

#: User callbacks for the peer's notifications (progress, log messages, list changes) waiting at
#: once for the callback thread, and the bytes of the messages that brought them.  Past either a
#: notification's callback is dropped with a warning: a peer that sends faster than the callbacks
#: run must not grow this side without bound.  A callback that settles a request is never dropped.
DEFAULT_MAX_CALLBACKS = 1024
DEFAULT_MAX_CALLBACK_BYTES = 16 * 1024 * 1024

#: Seconds that a message other than a request (a cancellation, an answer) may wait to be written
#: without a byte going out, and that what close() still sends may wait, together: a peer that does
#: not read its input must not hold up a caller, the reader, or the end of the connection.
CLOSING_WRITES = 1.0

#: Seconds the requests read before the end of input have, after it, to be answered (the peer may
#: still read): then they are cancelled, and those not started never run.
ENDING_GRACE = 1.0

#: With ``reset_timeout_on_progress`` and no ``max_total_timeout``, the total is capped at this many timeouts.
DEFAULT_MAX_TOTAL_FACTOR = 10

#: The ids of our last requests we stopped waiting for (cancelled, timed out, failed on this side),
#: whose answer may still come (the peer sent it before it read the cancellation): such an answer
#: is ignored quietly, or given to the request's ``late_answer``.  Older ones fall out (then an
#: answer to one is logged as unknown).
GIVEN_UP_IDS_KEPT = 64


class Session:
    """A JSON-RPC endpoint over one transport (see the module docstring).

    ``default_timeout`` applies to every outgoing request that does not pass
    its own; ``max_workers`` bounds concurrently running incoming handlers, and
    ``max_incoming`` the incoming requests held at once (running or queued for a
    handler), and separately the queued ones cancelled before a thread took them: past
    either a request is refused with -31000 (``ServerBusy``).
    ``trace``, when set, is called as ``trace("-->", data)`` for every message
    written and ``trace("<--", data)`` for every message read; what it raises is logged, and
    the message goes on (written, or read) as if there were no hook.  ``executor``
    runs the handlers instead of a pool of the session's own.  ``max_callbacks`` and
    ``max_callback_bytes`` bound the notification callbacks waiting for the callback thread
    (see :meth:`call_soon`).  ``ids`` numbers our requests (default 1, 2, 3, ...).
    """

    def __init__(
        self,
        transport: Transport,
        dispatcher: Dispatcher,
        *,
        default_timeout: float | None = DEFAULT_TIMEOUT,
        max_workers: int = 32,
        max_incoming: int = DEFAULT_MAX_INCOMING,
        name: str = "mcp",
        trace: Callable[[str, bytes], None] | None = None,
        executor: Executor | None = None,
        max_callbacks: int = DEFAULT_MAX_CALLBACKS,
        max_callback_bytes: int = DEFAULT_MAX_CALLBACK_BYTES,
        ids: Iterator[jsonrpc.RequestId] | None = None,
    ):
        self.transport = transport
        self.dispatcher = dispatcher
        self.default_timeout = default_timeout
        self.max_incoming = max_incoming
        self.name = name
        self.trace = trace
        self._ids: Iterator[jsonrpc.RequestId] = ids if ids is not None else itertools.count(1)
        self._lock = threading.Lock()
        self._pending: dict[Any, PendingRequest] = {}
        self._progress: dict[Any, PendingRequest] = {}
        self._incoming: dict[Any, RequestContext] = {}
        # answered requests whose answer is held for the callback thread (PendingRequest.hold)
        self._held: set[PendingRequest] = set()
        # id -> the request's late_answer (or None), oldest first
        self._given_up: dict[jsonrpc.RequestId, Callable[[dict], None] | None] = {}
        # its view of our requests (OutgoingRequests): deadlines, failures, holds
        transport.attach(self)
        # What runs the handlers: a shared pool (HTTP: every session's), or threads of our own (made
        # as requests come; a ThreadPoolExecutor refuses max_workers below 1).
        self._executor = executor or HandlerPool(name, max_workers)
        self._pool = self._executor if isinstance(self._executor, HandlerPool) else None
        #: Callbacks that may wait for the callback thread at once, and the bytes of the messages that brought them (see :meth:`call_soon`).
        self.max_callbacks = max_callbacks
        self.max_callback_bytes = max_callback_bytes

    # Where it stands: starting values, each set on the instance when it changes (an HTTP POST's session changes few).
    #: The negotiated revision; set by the role once ``initialize`` completes.
    protocol_version: str | None = None
    _withdrawn = 0  # requests cancelled while queued for a thread (their jobs end when taken); bounded by max_incoming
    _callbacks: CallbackQueue | None = None  # made on the first callback: most sessions have none
    _callbacks_ended = False
    # the size of the message the reader handles now: a callback it queues is charged
    _receiving = 0
    _reader: threading.Thread | None = None  # made by start()
    _closing = False  # close() called, or the connection is fully finished
    _close_began = 0.0  # when close() was called (time.monotonic())
    _input_ended = False  # the peer can no longer answer requests
    #: False on a side that never writes a JSON-RPC response: a 2026-07-28 client (2026-07-28
    #: basic/transports/stdio §Sending Messages: "The client MUST NOT write JSON-RPC responses").
    #: The peer's requests and unreadable lines are then logged and dropped, never answered.
    answers = True

    # -- lifecycle --------------------------------------------------------------

    def start(self) -> None:
        """Start reading (once)."""
        if self._reader is None:
            self._reader = threading.Thread(
                target=self._read, name=f"{self.name}-reader", daemon=True
            )
            self._reader.start()

    def close(self) -> None:
        """Close the connection; every pending request fails with ConnectionClosed. Idempotent."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
            self._close_began = time.monotonic()
            # none once the input ended: the peer can answer nothing more
            pending_ids = [
                p.id
                for p in self._pending.values()
                if not self._input_ended and p.method != "initialize"
            ]
        if self._pool is not None:
            self._pool.stop()  # queued requests never run (their contexts are cancelled below)
        # Tell the peer to stop work on what we will no longer wait for, so it can
        # finish promptly (a stdio server answers what it received before exiting).
        for request_id in pending_ids:
            self._send_cancel(request_id, "the connection is closing", while_closing=True)
        self._fail_pending("connection closed")
        self._close_transport()
        self._end_all_deferred()
        for context in list(self._incoming.values()):
            context.cancelled.set()
        self._end_callbacks(wait=False)
        # else the end of input sets it
        if self._reader is None or self._reader is threading.current_thread():
            closed = vars(self).setdefault("_closed", ENDED)
            # asked for already; ENDED is set (setting it again costs a lock on every HTTP POST)
            if closed is not ENDED:
                closed.set()

    def _close_transport(self) -> None:
        try:
            self.transport.close()
        except Exception:  # closing must not raise
            log.debug("error while closing transport", exc_info=True)

    @property
    def closed(self) -> threading.Event:
        """Set when the connection has ended and every handler has finished.  Made when first asked
        for (a one-request HTTP connection never is); a connection that ended before that is given
        :data:`ENDED`, set already.  One ``setdefault`` on each side, so the two cannot miss each other."""
        return vars(self).setdefault("_closed", threading.Event())

    def wait_closed(self, timeout: float | None = None) -> bool:
        """Block until the connection has ended; False on timeout.  On one of the session's own
        threads (the reader, the callback thread, a handler's), whose end the connection's end
        waits for, it does not wait: it says whether the connection has ended already."""
        current = threading.current_thread()
        queue = self._callbacks
        pool = self._pool
        if (
            current is self._reader
            or (queue is not None and current is queue.thread)
            or (pool is not None and current in pool.threads)
        ):
            return self.closed.is_set()
        return self.closed.wait(timeout)

    @property
    def is_closed(self) -> bool:
        """True once ``close()`` was called or the input ended."""
        return self._closing or self._input_ended

    def protocol_version_at_least(self, revision: str) -> bool:
        """True when the negotiated revision is ``revision`` or newer (or none is negotiated yet)."""
        return at_least(self.protocol_version, revision)

    # -- sending ----------------------------------------------------------------

    def send_request(
        self,
        method: str,
        params: dict | None = None,
        *,
        timeout: float | None | Default = DEFAULT,
        on_progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
        related_request_id: jsonrpc.RequestId | None = None,
        before_write: Callable[[jsonrpc.RequestId], None] | None = None,
        progress_outlives_answer: bool = False,
        outlives_related: bool = False,
        late_answer: Callable[[dict], None] | None = None,
    ) -> PendingRequest:
        """Send a request without waiting; returns its :class:`PendingRequest`.

        ``timeout=...`` means the session's default; ``None`` waits forever.  With ``on_progress``, the
        request carries ``_meta.progressToken`` and each ``notifications/progress`` for it calls
        ``on_progress(progress, total, message)`` on the callback thread.  ``reset_timeout_on_progress``
        restarts the timeout at each progress report; ``max_total_timeout`` caps the total (by default,
        with reset, ``DEFAULT_MAX_TOTAL_FACTOR`` times the timeout).  ``related_request_id`` names the
        incoming request on whose behalf this one is sent (see :meth:`Transport.write`): cancelling
        that one cancels this one, unless ``outlives_related`` (it only travels with that one's
        messages).
        ``before_write(request_id)`` runs once the id is chosen and before the request is written, so a
        caller can route what the peer sends about it (a listen stream's notifications) from the start.
        ``progress_outlives_answer`` keeps calling ``on_progress`` after the answer, until
        :meth:`end_progress` (the answer only starts the work the progress is about).
        ``late_answer(result)`` runs on the callback thread when the result comes after the request
        was given up on (cancelled, timed out) and is still remembered (:data:`GIVEN_UP_IDS_KEPT`):
        what such a result started on the peer (a task) can be stopped.
        """
        timeout = self.default_timeout if timeout is DEFAULT else timeout
        if reset_timeout_on_progress and max_total_timeout is None and timeout is not None:
            # 2025-11-25 basic/lifecycle §Timeouts: "SHOULD always enforce a maximum timeout, regardless of progress notifications".
            max_total_timeout = timeout * DEFAULT_MAX_TOTAL_FACTOR
        with self._lock:
            if self.is_closed:
                raise ConnectionClosed(f"{method}: the connection is closed")
            request_id = next(self._ids)
            pending = self._pending[request_id] = PendingRequest(
                self._forget,
                self._send_cancel,
                request_id,
                method,
                timeout,
                on_progress,
                reset_timeout_on_progress,
                max_total_timeout,
            )
            pending.related_request_id = related_request_id
            pending.outlives_related = outlives_related
            pending.late_answer = late_answer
            pending.progress_outlives_answer = progress_outlives_answer
            if on_progress is not None:
                params = dict(params or {})
                params["_meta"] = {**(params.get("_meta") or {}), "progressToken": request_id}
                self._progress[request_id] = pending
        try:
            if before_write is not None:
                before_write(request_id)
            self._write(Request(request_id, method, params), related=related_request_id)
        except Exception:
            self._forget(request_id)
            raise
        return pending

    def request(self, method: str, params: dict | None = None, **options) -> dict:
        """Send a request and wait for its result (see :meth:`send_request` for the options)."""
        return self.send_request(method, params, **options).result()

    def notify(self, method: str, params: dict | None = None, *, related_request_id=None) -> None:
        """Send a notification (``related_request_id``: see :meth:`send_request`)."""
        self._write(Notification(method, params), related=related_request_id)

    def _write(self, message, *, while_closing: bool = False, related=None) -> None:
        if isinstance(message, (Response, ErrorResponse)):
            related = message.id
        elif isinstance(message, list):
            # a batch's answers travel together, with the first request whose id was readable
            related = next((m.id for m in message if m.id is not None), None)
        elif self._closing and not while_closing:  # answers still go out while closing
            raise ConnectionClosed("the connection is closed")
        try:
            data = jsonrpc.serialize(message)
        # a value JSON cannot carry: converted or refused
        except (ValueError, TypeError, RecursionError):
            from .jsonable import serialize_answering

            data = serialize_answering(message, self.name)
        if self.trace is not None:  # what the hook raises is logged: the message still goes
            run_logged(self.trace, ("-->", data))
        try:
            self.transport.write(data, message, related)
        except RequestTimeout:  # a request not written before its deadline (stdio_pipe)
            raise
        except (OSError, ValueError) as exc:
            raise ConnectionClosed(f"cannot write to the connection: {exc}") from None

    def _unreadable_id_error(self, error: dict, request_id=None) -> ErrorResponse:
        """An error answer to a message whose id may not have been readable (see ErrorResponse)."""
        null_id = not at_least(self.protocol_version, OPTIONAL_ERROR_ID)
        return ErrorResponse(request_id, error, null_id=null_id)

    def _reply(self, reply: Response | ErrorResponse | None, batch: Batch | None = None) -> None:
        """Send ``reply`` (None: no answer), or give it to the batch the request came in."""
        if batch is not None:
            batch.add(reply)
        elif reply is not None and self.answers:  # (a parse error's, when it never answers)
            try:
                self._write(reply)
            except ConnectionClosed:
                log.debug("%s: dropped a reply, the connection is closed", self.name)

    def holds(self, request_id, *, ours: bool) -> bool:
        """True while ``request_id`` is open here: one of ours awaiting its answer (``ours``), or
        one of the peer's being served (HTTP with shared state asks before forwarding a message)."""
        with self._lock:
            return request_id in (self._pending if ours else self._incoming)

    def end_progress(self, pending: PendingRequest) -> None:
        """Stop calling ``pending``'s ``on_progress``, sent with ``progress_outlives_answer``: it was
        called after the answer too, until now."""
        with self._lock:
            self._progress.pop(pending.id, None)

    def _forget(self, request_id, answered: bool = False) -> PendingRequest | None:
        """Take our request ``request_id`` out of the table (None: it was not there).  Unless its
        answer came, remember that we gave up on it (see :data:`GIVEN_UP_IDS_KEPT`)."""
        with self._lock:
            pending = self._pending.pop(request_id, None)
            if pending is not None and not pending.progress_outlives_answer:
                self._progress.pop(request_id, None)  # (one whose progress lasts: end_progress)
            if pending is not None and not answered:
                self._given_up[request_id] = pending.late_answer
                if len(self._given_up) > GIVEN_UP_IDS_KEPT:
                    del self._given_up[next(iter(self._given_up))]
            return pending

    def _send_cancel(
        self, request_id, reason: str | None, *, related=None, while_closing: bool = False
    ) -> None:
        """``notifications/cancelled`` for our request ``request_id`` (sent for the peer's request
        ``related``, if it was: the cancellation goes where that one's messages go)."""
        params: dict[str, Any] = {"requestId": request_id}
        if reason:
            params["reason"] = reason
        with contextlib.suppress(ConnectionClosed):
            self._write(
                Notification("notifications/cancelled", params),
                while_closing=while_closing,
                related=related,
            )

    # -- what a transport may do to our requests (OutgoingRequests, above) ----------

    def request_deadline(self, request_id) -> float | None:
        """When we stop waiting for ``request_id``'s answer (``time.monotonic()``): its timeout, or with
        ``reset_timeout_on_progress`` its total cap; None: never, or it is not in flight."""
        request = self._pending.get(request_id)
        if request is None:
            return None
        return request.hard_deadline if request.reset_on_progress else request.deadline

    def write_deadline(self, message) -> float | None:
        """How long a transport may wait to write ``message`` (see :class:`OutgoingRequests`): a
        request's first deadline (its timeout, never reset: no progress comes before it is sent); any other message (a cancellation, an answer) :data:`CLOSING_WRITES`
        from now; once closing, what close() still sends, CLOSING_WRITES in all."""
        if self._closing:
            return self._close_began + CLOSING_WRITES
        if isinstance(message, Request):  # no progress moves the timeout of one not yet sent
            request = self._pending.get(message.id)
            return None if request is None else request.first_deadline
        return time.monotonic() + CLOSING_WRITES

    def fail_request(self, request_id, error: Exception) -> None:
        """One request of ours failed on this side (the transport says so): its caller gets ``error``."""
        if (request := self._forget(request_id)) is not None:
            request.set_exception(error)  # the first settle wins

    def hold_request(self, request_id, seconds: float) -> None:
        """One request of ours waits on this side (the transport says so): its deadline moves on by ``seconds``."""
        with self._lock:
            request = self._pending.get(request_id)
            if request is not None and request.deadline is not None:
                request.deadline = max(
                    request.deadline, time.monotonic() + seconds + (request.timeout or 0)
                )

    def _fail_pending(self, why: str) -> None:
        if not (self._pending or self._progress or self._held):  # none is added once closing
            return
        with self._lock:
            pending = list(self._pending.values())
            held = list(self._held)
            self._pending.clear()
            self._progress.clear()
        for request in held:  # no caller waits past the end for the callbacks queued before it
            request.settle_held()
        for request in pending:
            request.set_exception(
                ConnectionClosed(f"{request.method}: {why} before an answer arrived")
            )

    def call_soon(self, callback: Callable, *args, keep: bool = False) -> bool:
        """Run a user callback on the callback thread, in arrival order; errors are logged.

        Bounded (:class:`~mcp_ref.callback_queue.CallbackQueue`): the message the reader thread
        is handling is charged; ``keep=True`` (a callback that settles a request, or ends a stream,
        once) is never dropped.  False when it was dropped.
        """
        cost = self._receiving if threading.current_thread() is self._reader else 0
        if self._callbacks is None:
            from .callback_queue import CallbackQueue

            with EVENTS_LOCK:
                if self._callbacks is None and not self._callbacks_ended:
                    self._callbacks = CallbackQueue(self.name, self)
        queue = self._callbacks
        return False if queue is None else queue.submit(callback, args, cost, keep=keep)

    def _end_callbacks(self, *, wait: bool) -> None:
        with EVENTS_LOCK:
            self._callbacks_ended = True
            queue = self._callbacks
        if queue is not None:
            queue.shutdown(wait=wait)

    # -- receiving --------------------------------------------------------------

    def _read(self) -> None:
        """The reader thread's life: read, parse and route in arrival order until the input ends."""
        try:
            while True:
                try:
                    data = self.transport.read()
                except MessageTooLarge as exc:
                    from .unparsed import refuse_too_large  # its id, read from its first bytes

                    if refusal := refuse_too_large(exc, self):
                        self._reply(self._unreadable_id_error(*refusal))
                    continue
                if data is None:
                    break
                try:
                    self.receive(data)
                except Exception:  # nothing a peer sends may end the reader
                    log.exception("%s: a message could not be handled and was dropped", self.name)
        except Exception as exc:  # the transport itself failed: the connection ends
            if not self._closing:
                log.warning("%s: connection failed: %s", self.name, exc)
            self._fail_pending(f"the connection failed ({exc})")
        finally:
            self._end_of_input()

    def _end_of_input(self) -> None:
        # The peer can no longer answer: fail what waits on it, then let the handlers running finish
        # and reply, for ENDING_GRACE at most.
        with self._lock:
            self._input_ended = True
        try:
            self._fail_pending("the connection ended")
            self._end_all_deferred()
            if self._pool is not None and not self._pool.drain(ENDING_GRACE):
                from .cancellation import cancel_at_end_of_input

                cancel_at_end_of_input(self._pool, list(self._incoming.values()))
            self._end_callbacks(wait=True)
            self._close_transport()
            self._closing = True  # (no lock: send_request refuses already, as _input_ended)
            # what it raises is logged: the connection has ended all the same
            run_logged(self.dispatcher.ended, ())
        finally:  # whatever a step raised (a dispatcher without ended()): no one waits for ever
            vars(self).setdefault("_closed", ENDED).set()

    def receive(self, data: bytes) -> None:
        """Handle one transport message (a message or a batch), on the reader thread."""
        if self.trace is not None:  # what the hook raises is logged: the message is still read
            run_logged(self.trace, ("<--", data))
        # what a callback queued for this message is charged (call_soon)
        self._receiving = len(data)
        if jsonrpc.starts_batch(data) and not batches_allowed(self.protocol_version):
            # Refused before it is parsed: a batch costs nothing where the revision has none.
            self._refuse_batch()
            return
        try:
            # parsed already by a transport that looked into it (see Transport.read)
            message = getattr(data, "parsed", None) or jsonrpc.parse(data)
        except (ParseError, InvalidRequest) as exc:
            # a malformed answer fails its request at once; anything else is answered an error
            from .unparsed import refuse_unparsed

            if refusal := refuse_unparsed(exc, self):
                self._reply(self._unreadable_id_error(*refusal))
            return
        self.dispatch(message)

    def dispatch(self, message, *, inline: bool = False) -> None:
        """Handle one already-parsed message, or a batch list (see :func:`jsonrpc.parse`).

        Transports that parse for themselves (HTTP validates the body before
        routing it) call this instead of :meth:`receive`; it is thread-safe.
        ``inline=True`` runs a request's handler in the calling thread and
        returns when it has answered — for a transport that has a thread per
        request anyway (an HTTP POST) and must never be the reader thread.
        """
        if isinstance(message, list):
            self._receive_batch(message)
        else:
            self._route(message, None, inline)

    def _refuse_batch(self) -> None:
        # 2025-06-18 changelog: "Remove support for JSON-RPC batching".
        self._reply(
            self._unreadable_id_error(
                {
                    "code": INVALID_REQUEST,
                    "message": "Invalid Request: JSON-RPC batches are not supported by the negotiated protocol version",
                }
            )
        )

    def _receive_batch(self, items: list) -> None:
        if not batches_allowed(self.protocol_version):
            self._refuse_batch()
            return
        from .batch import receive_batch

        receive_batch(items, self._route, self._unreadable_id_error, self._write, self.fail_request)

    def _route(self, message, batch: Batch | None, inline: bool = False) -> None:
        if isinstance(message, Request):
            self._start_handler(message, batch, inline)
        elif isinstance(message, Notification):
            self._receive_notification(message)
        else:
            self._receive_answer(message)

    def _start_handler(self, request: Request, batch: Batch | None, inline: bool = False) -> None:
        if not self.answers:  # 2026-07-28 stdio: "The server MUST NOT write JSON-RPC requests"
            log.warning("%s: dropped a %s request: it is never answered", self.name, request.method)
            return
        # a handshake-era ping, answered here on the reader thread, never queued behind busy handlers
        at_once = answered_at_once(request.method, request.params)
        context = RequestContext(self, request.id, request.method, request.params or {})
        with self._lock:
            duplicate = request.id in self._incoming
            busy = not (duplicate or at_once) and (
                max(len(self._incoming), self._withdrawn) >= self.max_incoming
            )
            refused = duplicate or busy or at_once
            if not refused:
                self._incoming[request.id] = context
        if refused:  # a ping is answered {} (an id in use, or past max_incoming: refused)
            reply: Response | ErrorResponse = Response(request.id, {})
            if duplicate or busy:
                from .refusals import id_in_use, too_many

                reply = id_in_use(request) if duplicate else too_many(request, self)
            self._reply(reply, batch)
            return
        if inline:
            self._run_handler(request, context, batch)
            return
        with contextlib.suppress(RuntimeError):  # the pool is shut down: the connection is closing
            self._executor.submit(self._run_handler, request, context, batch)
            return
        self._leave(request.id, context)
        from .refusals import shutting_down  # answered all the same (JSON-RPC 2.0 §5)

        self._reply(shutting_down(request), batch)

    def _run_handler(self, request: Request, context: RequestContext, batch: Batch | None) -> None:
        with self._lock:
            withdrawn = self._incoming.get(request.id) is not context
            context.started = True
            if withdrawn:
                self._withdrawn -= 1
        # cancelled while it waited for a thread (cancel_incoming): its handler never runs
        if withdrawn:
            self._reply(None, batch)
            self.transport.request_finished(request.id)
            return
        reply: Response | ErrorResponse | None
        fatal = None  # a handler's sys.exit() or Ctrl-C: answered, then (on the main thread only) raised again
        try:
            result = self.dispatcher.handle_request(context, request.method, context.params)
            if context.deferred:
                if context.is_cancelled:  # cancelled before it was deferred: it ends here
                    self._leave(request.id, context)
                    self._end_deferred(context)
                return  # the answer comes later (answer_deferred), or the request ends unanswered
            reply = Response(request.id, result)
        except McpError as exc:
            reply = ErrorResponse(request.id, exc.to_error())
        except RequestCancelled:
            reply = None
        # never leak internals to the peer (nor leave the request unanswered)
        except BaseException as exc:
            from .handler_failures import log_failure, raised_again  # sqlite3: a known cause

            log_failure(log, "%s: handler for %s failed", self.name, request.method)
            reply = ErrorResponse(request.id, {"code": INTERNAL_ERROR, "message": "Internal error"})
            fatal = raised_again(exc)
        context.end()  # no progress after the answer, from a thread the handler left behind either
        self._leave(request.id, context)
        if context.is_cancelled and not context.cancelled.ours:
            # 2025-11-25 basic/utilities/cancellation: receivers "SHOULD NOT send a response for the
            # cancelled request" (the peer's cancellation, not ours at the end of input).
            reply = None
        self._reply(reply, batch)
        if reply is None:  # e.g. HTTP: end the stream that waited for this answer
            self.transport.request_finished(request.id)
        if fatal is not None:
            raise fatal

    def _leave(self, request_id, context: RequestContext) -> None:
        """Take a request out of the table of incoming ones, if it is still there (and is this one)."""
        with self._lock:
            if self._incoming.get(request_id) is context:
                del self._incoming[request_id]

    def cancel_incoming(self, request_id) -> bool:
        """Cancel a request the peer sent, as its ``notifications/cancelled`` would (False: none in progress).

        The handler's context reports ``is_cancelled``, and no answer is sent.  Transports use it
        when no one can receive the answer any more (an HTTP client gone with nothing to resume).
        2025-11-25 basic/utilities/cancellation: "The initialize request MUST NOT be cancelled".
        """
        with self._lock:
            context = self._incoming.get(request_id)
            if context is None or context.method == "initialize":
                return False
            if context.deferred or not context.started:
                # No handler is running to take it out of the table: a deferred request, or one still waiting for
                # a thread (its handler will not run), leaves it now, so cancelling a flood of queued requests
                # makes room at once; the queued jobs left behind are counted (_withdrawn), bounded like the table.
                del self._incoming[request_id]
                if not context.deferred:
                    self._withdrawn += 1
        context.cancelled.set()
        if context.deferred:
            self._end_deferred(context)
        # 2025-11-25 basic/utilities/cancellation: receivers SHOULD "Stop processing the cancelled
        # request" and "Free associated resources": what its handler asked the peer meanwhile (an
        # elicitation, a sampling request) is cancelled too, so the handler waits for it no longer.
        with self._lock:
            asked = [
                p
                for p in self._pending.values()
                if p.related_request_id == request_id and not p.outlives_related
            ]
        for pending in asked:
            pending.cancel("the request it was sent for was cancelled")
        return True

    def answer_deferred(self, request_id, result: dict) -> bool:
        """Send the answer of a request whose handler deferred it (:meth:`RequestContext.defer`);
        False if it is no longer open (cancelled, or the connection ended)."""
        with self._lock:
            context = self._incoming.get(request_id)
            if context is None or not context.deferred:
                return False
            del self._incoming[request_id]
        context.end()  # no progress after the answer
        self._reply(Response(request_id, result))
        return True

    def _end_deferred(self, context: RequestContext) -> None:
        """A deferred request ended with no answer: tell its owner, and the transport."""
        on_end = context.end()
        if on_end is not None:
            run_logged(on_end, ())
        try:
            self.transport.request_finished(context.request_id)
        except Exception:  # a closing transport may refuse; nothing is left to end
            log.debug("%s: request_finished failed", self.name, exc_info=True)

    def _end_all_deferred(self) -> None:
        if not self._incoming:
            return
        with self._lock:
            deferred = [c for c in self._incoming.values() if c.deferred]
            for context in deferred:
                del self._incoming[context.request_id]
        for context in deferred:
            context.cancelled.set()
            self._end_deferred(context)

    def _receive_notification(self, note: Notification) -> None:
        params = note.params or {}
        method = note.method
        if method == "notifications/cancelled":
            request_id = params.get("requestId")
            if not jsonrpc.valid_id(request_id):
                log.debug(
                    "%s: dropped a cancellation whose requestId is not a string or integer",
                    self.name,
                )
                return
            if not self.cancel_incoming(request_id):
                # Not one of the peer's requests to us.  2026-07-28 cancellation: a server "MUST send
                # notifications/cancelled referencing a subscriptions/listen request ID when it tears
                # down that subscription stream": the role decides what it means.
                self._handle_notification(method, params)
            return  # unknown or finished requests: "MAY ignore" (cancellation §Behavior Requirements)
        if method == "notifications/progress":
            from .cancellation import progress_reported  # loaded with the first progress report

            progress_reported(self.name, params, self._progress, self.call_soon)
            return
        self._handle_notification(method, params)

    def _handle_notification(self, method: str, params: dict) -> None:
        try:
            self.dispatcher.handle_notification(method, params)
        except Exception:  # a bad notification must not end the connection
            log.exception("%s: handling %s failed", self.name, method)

    def _receive_answer(self, answer) -> None:
        # (no request of ours has the id None)
        if (pending := self._forget(answer.id, answered=True)) is None:
            from .cancellation import unclaimed_answer  # loaded with the first such answer

            unclaimed_answer(self.name, answer, self._given_up, self.call_soon)
            return
        result, error = (
            (answer.result, None)
            if isinstance(answer, Response)
            else (None, McpError.from_error(answer.error))
        )
        # With progress: after the progress callbacks queued, so a caller sees every report before
        # its result; a caller waiting on the callback thread itself, or past its deadline, or
        # the end of the connection settles it at once (hold).
        if pending.on_progress is None or not self.call_soon(
            pending.settle, result, error, keep=True
        ):
            pending.settle(result, error)
            return
        pending.hold(self._callbacks, result, error)
        self._held.add(pending)
        pending.add_done_callback(self._held.discard)
        if self._closing:  # close() may have looked at _held before the add
            pending.settle_held()
