"""The callback thread of a session: user callbacks for the peer's notifications, in arrival order.

A session runs user callbacks (progress, log messages, list changes) on one thread of their own,
started when first needed, so a slow or re-entrant callback cannot stall the reader.  The queue is
bounded: a peer that sends notifications faster than the callbacks run costs a bounded queue.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from .requests import run_logged

log = logging.getLogger("mcp_ref.core.session")  # its messages are the session's


class Limits(Protocol):
    """The bounds a queue reads at each submit (a :class:`~mcp_ref.core.session.Session`)."""

    max_callbacks: int
    max_callback_bytes: int


class CallbackQueue:
    """One thread running callbacks in order, with at most ``limits.max_callbacks`` waiting, or
    ``limits.max_callback_bytes`` of the messages that brought them (see :meth:`submit`)."""

    def __init__(self, name: str, limits: Limits):
        self.name = name
        self.limits = limits
        self._lock = threading.Lock()
        self._executor: ThreadPoolExecutor | None = None
        # What waits for the callback thread (count, bytes), and how many were dropped.
        self._queued = 0
        self._queued_bytes = 0
        self._dropped = 0

    def submit(self, callback: Callable, args: tuple, cost: int, *, keep: bool = False) -> bool:
        """Queue ``callback(*args)``, charged ``cost`` bytes; False when it was dropped.

        Past ``max_callbacks`` callbacks waiting, or ``max_callback_bytes``, the callback is dropped
        with a warning (logged for the 1st, 2nd, 4th, 8th ... drop); ``keep=True`` never is.
        """
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"{self.name}-callbacks")
            executor = self._executor
            limit, limit_bytes = self.limits.max_callbacks, self.limits.max_callback_bytes
            full = self._queued >= limit or self._queued_bytes + cost > limit_bytes
            if full and not keep:
                self._dropped += 1
                dropped = self._dropped
            else:
                self._queued += 1
                self._queued_bytes += cost
        if full and not keep:
            if dropped & (dropped - 1) == 0:  # the 1st, 2nd, 4th, 8th ...: no log flood
                log.warning("%s: %d callback(s) dropped: the peer sends notifications faster than the callbacks "
                            "run (more than %d waiting, or %d bytes; max_callbacks, max_callback_bytes)",
                            self.name, dropped, limit, limit_bytes)
            return False
        try:
            executor.submit(self._run, callback, args, cost)
        except RuntimeError:
            self._done(cost)
            log.debug("%s: dropped a callback after close", self.name)
            return False
        return True

    def shutdown(self, *, wait: bool) -> None:
        """Stop the thread (after what is queued, with ``wait``); later callbacks are dropped."""
        with self._lock:
            executor = self._executor
        if executor is not None:
            executor.shutdown(wait=wait)

    def _run(self, callback: Callable, args: tuple, cost: int) -> None:
        try:
            run_logged(callback, args)
        finally:
            self._done(cost)

    def _done(self, cost: int) -> None:
        with self._lock:
            self._queued -= 1
            self._queued_bytes -= cost

