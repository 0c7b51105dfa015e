"""A request's cancellation: :class:`Cancellation`, the Event a request's context holds
(:attr:`mcp_ref.request.RequestContext.cancelled`), which calls back when it is set.

A handler's wait for something other than the cancellation (the page's answer to a question, a
proxied call's outcome) hangs a callback on it, so the cancellation ends that wait at once,
whoever sets the Event: the session, when the peer sends ``notifications/cancelled`` (2025-11-25
basic/utilities/cancellation §Behavior Requirements: the receiver "SHOULD: Stop processing the
cancelled request"), or a task that holds it (tasks/cancel, expiry).  Loaded with the first
request whose cancellation is asked for.

And the other way: an answer to a request of ours that is no longer waited for
(:func:`unclaimed_answer`), as a cancellation crossing it leaves.

Progress, the other thing reported about a request under way: a handler's report is sent
(:func:`send_progress`), a peer's is given to the request's ``on_progress``
(:func:`progress_reported`) unless it is malformed (:func:`malformed_progress`).  Loaded with the
first progress report.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from .jsonrpc import ErrorResponse, Response, valid_id
from .lifecycle import PROGRESS_MESSAGE

log = logging.getLogger("mcp_ref.session")  # its messages are the session's

#: The callbacks one request's Event holds at once: each is a wait under way on the request (a
#: parked question, a forwarded call), which removes its own when it ends.  Past it,
#: :meth:`Cancellation.add_callback` raises RuntimeError (a wait that never removes its own).
MAX_CALLBACKS = 1_000


class Cancellation(threading.Event):
    """A request's ``cancelled`` Event (:attr:`RequestContext.cancelled`): set once, when the
    request is cancelled, and then it calls what was hung on it (:meth:`add_callback`), as a
    ``Future`` calls its done callbacks.  So a wait for something else (an answer, a question)
    can end at the cancellation too, woken by it, whoever sets the Event (the session, a task).
    Its callbacks are those of the waits under way on it: each removes its own when it ends."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: list[Callable[[], Any]] = []
        self._callbacks_lock = threading.Lock()

    def add_callback(self, fn: Callable[[], Any]) -> None:
        """Call ``fn()`` when the Event is set, on the thread that sets it; at once, on this thread,
        if it already is.  RuntimeError past :data:`MAX_CALLBACKS`."""
        with self._callbacks_lock:
            if not self.is_set():
                if len(self._callbacks) >= MAX_CALLBACKS:
                    raise RuntimeError(f"a request's cancellation holds {MAX_CALLBACKS} callbacks")
                self._callbacks.append(fn)
                return
        fn()

    def remove_callback(self, fn: Callable[[], Any]) -> None:
        """Forget ``fn`` (added by :meth:`add_callback`) if :meth:`set` has not taken it yet; one
        it has taken may still be running, or about to run, when this returns."""
        with self._callbacks_lock, contextlib.suppress(ValueError):
            self._callbacks.remove(fn)

    #: True when the side serving the request cancelled it itself (at the end of its input), not
    #: the peer: its answer, if the handler still gives one, is sent.
    ours = False

    def set(self, *, ours: bool = False) -> None:
        """Set the Event (``ours``: see :attr:`ours`), then call each callback once (one that
        raises is logged)."""
        with self._callbacks_lock:
            if not self.is_set():
                self.ours = ours
            super().set()
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            try:
                fn()
            except Exception:
                log.exception("a cancellation callback failed")


def send_progress(context: Any, progress: float, total: float | None, message: str | None) -> bool:
    """:meth:`mcp_ref.request.RequestContext.report_progress` of ``context``, which asked for
    progress: False when the request has ended or was cancelled, or the connection has closed (the
    report is dropped).

    2025-11-25 basic/utilities/progress: "The progress value MUST increase
    with each notification, even if the total is unknown."  2026-07-28 basic/transports/stdio
    §Cancellation: servers "MUST NOT send any further messages for" a cancelled request.
    """
    with context.send_lock:
        if context.ended or context.is_cancelled:
            return False
        if context.last_progress is not None and progress <= context.last_progress:
            raise ValueError(f"progress must increase: {progress} after {context.last_progress}")
        context.last_progress = progress
        params: dict[str, Any] = {"progressToken": context.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None and context.session.protocol_version_at_least(PROGRESS_MESSAGE):
            params["message"] = message
        try:
            context.session.notify(
                "notifications/progress", params, related_request_id=context.request_id
            )
        except ConnectionError:  # the connection has closed: nobody is left to hear it
            return False
    return True


def malformed_progress(name: str, params: dict) -> bool:
    """True (and logged at DEBUG) for a ``notifications/progress`` the session must drop before
    it resets a request's timeout or reaches its ``on_progress``: a ``progressToken`` that is not
    a string or an integer (schema ProgressToken), a ``progress`` that is not a number, or a
    ``total`` present and not a number (schema ProgressNotification: ``progress: number``,
    ``total?: number``).  A JSON boolean is no number; nor is null.  Passed on, such a value
    reached the caller's callback, and across a 2026-07-28 call's rounds one string silenced
    every later report (:class:`mcp_ref.client.mrtr.ProgressAcrossRounds` compares them)."""
    numbers = (params.get("progress"), params.get("total", 0))
    if valid_id(params.get("progressToken")) and all(type(n) in (int, float) for n in numbers):
        return False
    log.debug("%s: dropped a progress report whose token, progress or total is malformed", name)
    return True


def progress_reported(
    name: str, params: dict, by_token: dict[Any, Any], call_soon: Callable[..., bool]
) -> None:
    """The peer's ``notifications/progress`` (``params``) for the session ``name``, whose requests
    that asked for progress are ``by_token`` (progress token -> its
    :class:`~mcp_ref.request.PendingRequest`): unless malformed, it restarts the request's timeout
    (``reset_timeout_on_progress``) and is given to its ``on_progress`` on the callback thread
    (``call_soon``).  Progress for a token no request holds is dropped."""
    if malformed_progress(name, params):  # before it resets a timeout or is reported
        return
    pending = by_token.get(params.get("progressToken"))
    if pending is None:
        log.debug("%s: progress for an unknown token dropped", name)
        return
    if pending.reset_on_progress and pending.timeout is not None:
        pending.deadline = time.monotonic() + pending.timeout
    call_soon(
        pending.on_progress, params.get("progress"), params.get("total"), params.get("message")
    )


def cancel_at_end_of_input(pool: Any, contexts: list[Any]) -> None:
    """``pool`` (a :class:`~mcp_ref.request.HandlerPool`) and ``contexts`` (the
    :class:`~mcp_ref.request.RequestContext` of each request not ended): the requests read before the end of input had their grace (``session.ENDING_GRACE``):
    those still running are cancelled, those waiting for a thread never run; then the handlers are
    waited for, also one that ignores its cancellation, whose answer is still sent (the peer did
    not cancel it: :attr:`Cancellation.ours`).

    2026-07-28 basic/transports/stdio §Shutdown: "Servers SHOULD exit promptly when their standard
    input is closed"."""
    pool.stop()
    for context in contexts:
        context.cancelled.set(ours=True)
    pool.executor.shutdown()


def unclaimed_answer(
    name: str,
    answer: Response | ErrorResponse,
    given_up: dict[Any, Callable[[dict], None] | None],
    call_soon: Callable[..., bool],
) -> None:
    """What the session ``name`` does with an ``answer`` no request of its own waits for:
    ``given_up`` holds the ids of those it stopped waiting for, each with its ``late_answer``.

    2025-11-25 basic/utilities/cancellation: "The sender of the cancellation notification SHOULD
    ignore any response to the request that arrives afterward": ignored, but a result is given to
    the request's ``late_answer`` (on the callback thread, ``call_soon``), so that what it started
    on the peer (a task) can be stopped.  An answer to an id never sent, or long given up on, is a
    warning.
    """
    if isinstance(answer, ErrorResponse) and answer.id is None:  # (no request has the id None)
        log.warning("%s: the peer reported an error: %s", name, answer.error.get("message"))
    elif answer.id in given_up:
        late_answer = given_up.pop(answer.id)
        if late_answer is not None and isinstance(answer, Response):
            call_soon(late_answer, answer.result, keep=True)
        log.debug("%s: ignored the answer to request %r, given up", name, answer.id)
    else:
        log.warning("%s: dropped an answer to unknown request id %r", name, answer.id)
