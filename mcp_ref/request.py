"""A request as one side of a session sees it: :class:`RequestContext` (one the peer sent, being
served) and :class:`PendingRequest` (one we sent, waiting for its answer); :class:`Dispatcher`,
the role that gives incoming requests their meaning; and :class:`HandlerPool`, the threads that run
the handlers of one connection's incoming requests.  Their engine is
:class:`mcp_ref.session.Session`, which re-exports the first three.

The handlers run on :class:`HandlerPool`, a plain bounded
:class:`concurrent.futures.ThreadPoolExecutor` (its threads made as requests need them).
The session's reader thread only reads, parses and routes; each request it reads is submitted
there, and one of at most ``max_workers`` threads runs its handler.  So a handler may ask the peer
and wait: the reader reads the answer.  The requests submitted and not yet run are bounded by the
session's ``max_incoming`` (each is in its table of incoming requests, or counted as withdrawn).
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import (
    Future,
    InvalidStateError,
    ThreadPoolExecutor,
    TimeoutError as FutureTimeout,
    wait,
)
from typing import TYPE_CHECKING, Any, Final, Protocol

from . import jsonrpc
from .errors import RequestCancelled, RequestTimeout

if TYPE_CHECKING:
    from .cancellation import Cancellation
    from .lifecycle import Envelope

log = logging.getLogger("mcp_ref.session")  # its messages are the session's

#: Guards the Events made on first use (a request's ``cancelled``, a session's ``closed``).
EVENTS_LOCK = threading.Lock()


class Default(enum.Enum):
    """The type of :data:`DEFAULT`, "use the default": where ``None`` already means something (no
    timeout), a parameter left out is ``DEFAULT`` (``timeout: float | None | Default = DEFAULT``)."""

    DEFAULT = "DEFAULT"

    def __repr__(self) -> str:
        return "DEFAULT"


#: "Use the default" (see :class:`Default`).
DEFAULT: Final = Default.DEFAULT

ProgressCallback = Callable[[float, "float | None", "str | None"], None]


class Channel(Protocol):
    """What a request needs of its session (:class:`~mcp_ref.session.Session` is one): to
    send a notification, and to know the negotiated revision."""

    def notify(
        self, method: str, params: dict | None = None, *, related_request_id=None
    ) -> None: ...

    def protocol_version_at_least(self, revision: str) -> bool: ...


class Dispatcher(Protocol):
    """The role (server or client) that gives methods their meaning.  A
    :class:`~mcp_ref.session.Session` calls all three methods, so each is required, ``ended`` too
    (what it raises is logged; a missing one is the reader thread's error; the connection ends and
    ``closed`` is set all the same)."""

    def handle_request(self, context: RequestContext, method: str, params: dict) -> dict: ...

    def handle_notification(self, method: str, params: dict) -> None: ...

    def ended(self) -> None:
        """The connection ended for good: its reader's last act, once its input ended (or it was
        closed) and every handler has finished.  No message comes on it again."""


class RequestContext:
    """What a handler knows about the request it serves, and what it may do.

    ``cancelled`` is an Event set when the peer cancels the request; a handler
    that runs long should check ``is_cancelled`` (or call
    ``check_cancelled()``) and stop.  ``report_progress`` sends progress only
    when the requester asked for it, and only until the request has ended (:meth:`end`).
    ``send_lock`` orders a message about the request (its progress, a 2026-07-28 log message)
    against its end: a sender that finds ``ended`` False under it writes before the answer.
    """

    __slots__ = (
        "session",
        "request_id",
        "method",
        "params",
        "progress_token",
        "_cancelled",
        "last_progress",
        "envelope",
        "role_state",
        "deferred",
        "_on_end",
        "started",
        "ended",
        "send_lock",
    )

    def __init__(self, session: Channel, request_id: jsonrpc.RequestId, method: str, params: dict):
        self.session = session
        self.request_id = request_id
        self.method = method
        self.params = params
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        # A ProgressToken is a string or an integer (schema); progress for any other token would be invalid.
        self.progress_token = token if jsonrpc.valid_id(token) else None
        # made when first needed: most requests never are
        self._cancelled: Cancellation | None = None  # mcp_ref.cancellation: loaded with the first
        #: The progress last reported (:meth:`report_progress`), None before the first report.
        self.last_progress: float | None = None
        #: A 2026-07-28 request's own protocol fields (``mcp_ref.lifecycle.Envelope``), set by the
        #: dispatcher; None in the handshake era.
        self.envelope: Envelope | None = None
        #: What the role (the dispatcher) keeps about this request while it serves it: the server
        #: keeps its per-request state here (``mcp_ref.server.seams.RequestState``).  None until set.
        self.role_state: Any = None
        #: True once the handler kept the request open past its return (:meth:`defer`).
        self.deferred = False
        self._on_end: Callable[[], None] | None = None
        #: True once a handler thread took the request (it may wait in the queue of requests before).
        self.started = False
        self.ended = False  # True once the request has ended (:meth:`end`)
        #: Held to send a message about this request (:meth:`report_progress`, a 2026-07-28
        #: ``ctx.log``) and by :meth:`end`: one sent under it after checking ``ended`` is written
        #: before the answer.  Every request has one: a lock is cheap to make, and one taken only
        #: when present would let a sender that made it late miss an end that found none.
        self.send_lock = threading.Lock()

    def defer(self, on_end: Callable[[], None]) -> None:
        """Keep the request open after the handler returns: its answer comes later, from
        :meth:`Session.answer_deferred`, or never.

        For a request whose work is waiting, not computing (a 2026-07-28 ``subscriptions/listen``
        stream): no handler thread is held while it stays open.  It still counts against the
        connection's ``max_incoming``.  ``on_end`` is called once if the request ends without
        that answer: the peer cancelled it, or the connection ended.  What the handler returns
        is then ignored.
        """
        self._on_end = on_end
        self.deferred = True

    @property
    def cancelled(self) -> Cancellation:
        """The Event set when the request is cancelled (wait on it, hang a callback on it, or set
        it to cancel)."""
        if self._cancelled is None:
            from .cancellation import Cancellation

            with EVENTS_LOCK:
                if self._cancelled is None:
                    self._cancelled = Cancellation()
        return self._cancelled

    @cancelled.setter
    def cancelled(self, event: Cancellation) -> None:
        from .cancellation import Cancellation

        if not isinstance(event, Cancellation):  # a wait hangs its callback on it
            raise TypeError(f"a request's cancelled Event is a Cancellation, not {event!r}")
        self._cancelled = event

    @property
    def is_cancelled(self) -> bool:
        """True once the peer has sent ``notifications/cancelled`` for this request."""
        event = self._cancelled
        return event is not None and event.is_set()

    def check_cancelled(self) -> None:
        """Raise :class:`RequestCancelled` if the peer cancelled this request."""
        if self.is_cancelled:
            raise RequestCancelled(f"request {self.request_id!r} was cancelled by the peer")

    def end(self) -> Callable[[], None] | None:
        """The request has ended (answered, or unanswered): its progress stops, on any transport
        and from any thread (2025-11-25 basic/utilities/progress: "MUST stop after completion").
        Returns, once, the ``on_end`` given to :meth:`defer` (called if it ended unanswered)."""
        with self.send_lock:  # a message being written about the request is written first
            self.ended = True
            on_end, self._on_end = self._on_end, None
        return on_end

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> bool:
        """Send ``notifications/progress`` for this request; False when no progress was asked for,
        the request has ended (:meth:`end`) or was cancelled, or the connection has closed: the
        report is dropped.

        2025-11-25 basic/utilities/progress: "The progress value MUST increase
        with each notification, even if the total is unknown."  2026-07-28 basic/transports/stdio
        §Cancellation: servers "MUST NOT send any further messages for" a cancelled request.
        """
        if self.progress_token is None:  # none asked for (or a task took it over)
            return False
        from .cancellation import send_progress  # loaded with the first report

        return send_progress(self, progress, total, message)


class PendingRequest(Future):
    """An outgoing request in flight: a :class:`concurrent.futures.Future` that the session's reader
    thread settles with the answer.  Wait for it with ``result()``, or ``cancel()`` it.

    ``result()`` waits on the future for at most the time left before the request's deadline; on
    timeout the request leaves the session's table, the peer is sent ``notifications/cancelled``
    and :class:`RequestTimeout` is raised.  ``set_result``/``set_exception`` return False (rather
    than raise) when the request was settled already: the first one wins."""

    #: The peer's request on whose behalf this one was sent (``Session.send_request``'s
    #: ``related_request_id``): cancelling that one cancels this one, unless ``outlives_related``;
    #: its own cancellation travels with that one's messages.
    related_request_id: Any = None
    outlives_related = False
    #: Its ``on_progress`` is called after the answer too, until ``Session.end_progress``
    #: (``Session.send_request``'s ``progress_outlives_answer``).
    progress_outlives_answer = False
    #: Given the result of an answer that comes after the session gave up on this request
    #: (``Session.send_request``'s ``late_answer``), or None.
    late_answer: Callable[[dict[str, Any]], None] | None = None
    #: The answer held for the callback queue that is to settle the request with it, after the
    #: callbacks queued there before it: (that queue, result, error), or None (see :meth:`hold`).
    _held: Any = None

    def __init__(
        self,
        forget: Callable[[Any], Any],
        send_cancel: Callable[..., None],
        request_id,
        method,
        timeout,
        on_progress,
        reset_on_progress,
        max_total_timeout,
    ):
        """``forget(id)`` takes the request out of its session's table (None if the answer won the
        race); ``send_cancel(id, reason, related=...)`` tells the peer it is cancelled."""
        super().__init__()
        now = time.monotonic()
        self._forget = forget
        self._send_cancel = send_cancel
        self.id = request_id
        self.method = method
        self.timeout = timeout
        self.deadline = None if timeout is None else now + timeout
        self.hard_deadline = None if max_total_timeout is None else now + max_total_timeout
        self.on_progress = on_progress
        self.reset_on_progress = reset_on_progress

    @property
    def first_deadline(self) -> float | None:
        """The earlier of ``deadline`` and ``hard_deadline`` (None: neither is set)."""
        deadline, hard = self.deadline, self.hard_deadline
        return deadline if hard is None or (deadline is not None and deadline < hard) else hard

    def set_result(self, result: Any) -> bool:  # type: ignore[override]
        """Settle the request with its result; False if it was settled already."""
        try:
            super().set_result(result)
        except InvalidStateError:
            return False
        return True

    def set_exception(self, exception: BaseException | None) -> bool:  # type: ignore[override]
        """Settle the request with an error (``result()`` raises it); False if it was settled already."""
        try:
            super().set_exception(exception)
        except InvalidStateError:
            return False
        return True

    def settle(self, result: Any, error: BaseException | None) -> bool:
        """Settle with ``error`` if there is one, else with ``result`` (the reader's one call)."""
        return self.set_result(result) if error is None else self.set_exception(error)

    def hold(self, settler, result, error) -> None:
        """The answer came, and ``settler`` (the session's callback queue) is to settle the request
        with it after the callbacks queued there before it (its progress reports).  A caller who
        waits on that queue's thread would wait behind itself, and one past its deadline waits no
        longer: :meth:`result` settles it at once (:meth:`settle_held`), as the session's end
        does."""
        with self._condition:
            self._held = (settler, result, error)
            self._condition.notify_all()  # wakes such a caller

    def settle_held(self) -> bool:
        """Settle now with the answer :meth:`hold` holds; False if it was settled already."""
        return self.settle(*self._held[1:])

    def result(self, timeout: float | None = None) -> dict:
        """Wait for the answer: the ``result`` dict, or raise.

        Raises :class:`McpError` for an error answer, :class:`RequestTimeout`
        when the timeout (possibly reset by progress) or the total cap
        expires — the peer is then sent ``notifications/cancelled`` — and
        :class:`ConnectionClosed` / :class:`RequestCancelled`.  An answer that is
        itself a TimeoutError is the request's outcome, raised as it is.
        ``timeout`` is accepted for the Future interface; the request's own deadlines apply.

        An answer that came before the caller gave up is the caller's: one held for the callbacks
        queued before it (:meth:`hold`) is settled at once on the thread that runs them, and at the
        deadline elsewhere.  So progress reports come before the result within the timeout only:
        those still queued at the deadline (behind any request's slow callback) come after it.
        """
        # Past the deadline, with the answer come: it is settled here once held, not behind the
        # callbacks (2025-11-25 basic/lifecycle §Timeouts: "stop waiting for a response").
        overdue = False
        try:
            while True:
                with self._condition:  # reentrant: no hold() comes between this look and the wait
                    held = self._held
                    if held and (overdue or held[0].thread is threading.current_thread()):
                        break  # not to wait behind the callbacks (on their thread: behind itself)
                    wait = self.first_deadline  # cleared once the answer came (below)
                    try:
                        return super().result(
                            None if wait is None else max(wait - time.monotonic(), 0.0)
                        )
                    except (TimeoutError, FutureTimeout):  # one class from Python 3.11, two in 3.10
                        # the outcome itself is a TimeoutError (or came just now): it is ours
                        if self.done():
                            return super().result(0)
                now = time.monotonic()
                hard_expired = self.hard_deadline is not None and now >= self.hard_deadline
                if not hard_expired and (self.deadline is None or now < self.deadline):
                    continue  # progress moved the deadline, or the answer came, while we waited
                limit = "total time limit" if hard_expired else f"timeout of {self.timeout:g} s"
                expired = RequestTimeout(f"{self.method}: no answer within the {limit}")
                if not self._give_up("timeout", expired):
                    # The answer won the race: it is ours; settled, or held and then settled here.
                    self.deadline = self.hard_deadline = None
                    overdue = True
        except BaseException:
            # Ctrl-C (KeyboardInterrupt), or any exception raised in this thread as it waits (not
            # the request's outcome: it is not done): given up on, as at its timeout.
            if not self.done():
                self._give_up(
                    "interrupted", RequestCancelled(f"{self.method}: its wait was interrupted")
                )
            raise
        # Settled here, then (outside the lock: a done callback may wait for another thread); its
        # progress reports still queued come after the caller returns.
        self.settle_held()
        return super().result(0)

    def _give_up(self, reason: str | None, error: BaseException) -> bool:
        """Stop waiting for the answer: take the request out of its session's table, tell the
        peer it is cancelled and fail it with ``error``; False when the answer came first (it is
        being settled)."""
        if self._forget(self.id) is None:
            return False
        if self.method not in ("initialize", "server/discover"):
            # cancellation §Behavior Requirements: "The initialize request MUST NOT be cancelled by
            # clients"; nor is the 2026-07-28 era probe: a server that does not answer it is taken
            # for a handshake-era server, which never began any work for it.
            self._send_cancel(self.id, reason, related=self.related_request_id)
        self.set_exception(error)
        return True

    def cancel(self, reason: str | None = None) -> bool:  # type: ignore[override]
        """Cancel the request: the peer gets ``notifications/cancelled`` (as at a timeout: not for the
        2026-07-28 probe, ``server/discover``); ``result()`` raises RequestCancelled.

        Returns False if the answer had already arrived.
        2025-11-25 basic/utilities/cancellation: "The initialize request MUST NOT be cancelled by clients".
        """
        if self.method == "initialize":
            raise ValueError("the initialize request must not be cancelled")
        return self._give_up(
            reason,
            RequestCancelled(f"{self.method} was cancelled" + (f": {reason}" if reason else "")),
        )


def run_logged(callback: Callable, args: tuple) -> None:
    """``callback(*args)``; an exception is logged, never raised."""
    try:
        callback(*args)
    except Exception:
        log.exception("callback %r failed", callback)


# -- the handlers of incoming requests -----------------------------------------------------


class HandlerPool:
    """Runs the handlers of one connection's incoming requests on a
    :class:`~concurrent.futures.ThreadPoolExecutor` of at most ``max_workers`` threads named
    ``<name>-handler_<n>``; :meth:`stop` (close) and :meth:`drain` (end of input) end it.

    Each request is one ``executor.submit``; the requests waiting for a thread wait in the
    executor's queue (bounded by the session's ``max_incoming``).  The only scheme of the pool's
    own is the wait for ``initialize`` (:meth:`submit`)."""

    def __init__(self, name: str, max_workers: int):
        self.name = name
        #: Its threads (a handler on one must not wait for the connection's end: it waits for them).
        self.threads: set[threading.Thread] = set()
        self.executor = ThreadPoolExecutor(
            max_workers,
            thread_name_prefix=f"{name}-handler",
            initializer=lambda: self.threads.add(threading.current_thread()),
        )
        self.lock = threading.Lock()
        self.jobs: set[Future] = set()  # submitted and not ended (run, or skipped) yet
        self.initialize: Future | None = None  # the last ``initialize`` submitted
        self.stopped = False  # stop() was called: the jobs still queued end without running

    def submit(self, run: Callable[..., None], request: Any, *args: Any) -> None:
        """Call ``run(request, *args)`` when a thread is free; RuntimeError if the pool is shut down
        (as :meth:`concurrent.futures.Executor.submit`).

        basic/lifecycle: initialize "MUST be the first interaction": a request read while its
        handler runs waits until it has answered (notifications are still read and handled, and
        ping answered on the reader thread)."""
        with self.lock:
            job = self.executor.submit(self._work, self.initialize, run, request, *args)
            self.jobs.add(job)
            job.add_done_callback(self.jobs.discard)
            if request.method == "initialize":
                self.initialize = job

    def _work(self, initialize: Future | None, run: Callable[..., None], *args: Any) -> None:
        try:
            if initialize is not None:
                initialize.result()  # submitted first, it runs or has run: no deadlock
            if not self.stopped:  # a job queued when stop() came never runs
                run(*args)
        except BaseException:  # a reply not sent, a handler's SystemExit: the pool goes on
            log.exception("%s: a handler could not finish", self.name)

    def stop(self) -> None:
        """close(): the queued jobs never run (the session cancels their contexts); the running
        handlers finish, then the threads exit."""
        self.stopped = True
        self.executor.shutdown(wait=False)

    def drain(self, grace: float) -> bool:
        """At the end of input: the queued jobs still run, and every job may end, for ``grace``
        seconds; True when all ended in time (every thread then exits)."""
        ended = not wait(list(self.jobs), grace).not_done
        self.executor.shutdown(wait=ended)
        return ended
