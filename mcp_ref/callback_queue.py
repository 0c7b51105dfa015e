"""The callback thread of a session: user callbacks for the peer's notifications, in arrival order.

A session runs user callbacks (progress, log messages, list changes) on one thread of their own,
started when first needed, so a slow or re-entrant callback cannot stall the reader.  The queue is
bounded: a peer that sends notifications faster than the callbacks run costs a bounded queue.

The thread is a daemon; what is queued still runs after :meth:`CallbackQueue.shutdown`, and at
interpreter exit (an ``atexit`` hook waits for every queue's thread, as a pool's would be joined).
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections import deque
from collections.abc import Callable
from typing import Protocol

from .request import run_logged

log = logging.getLogger("mcp_ref.session")  # its messages are the session's

# queues whose thread has started (for the exit)
_running: weakref.WeakSet[CallbackQueue] = weakref.WeakSet()


class Limits(Protocol):
    """The bounds a queue reads at each submit (a :class:`~mcp_ref.session.Session`)."""

    max_callbacks: int
    max_callback_bytes: int


class CallbackQueue:
    """One thread running callbacks in order, with at most ``limits.max_callbacks`` waiting, or
    ``limits.max_callback_bytes`` of the messages that brought them (see :meth:`submit`)."""

    def __init__(self, name: str, limits: Limits):
        self.name = name
        self.limits = limits
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._items: deque[tuple[Callable, tuple, int]] = deque()
        #: Its thread, once started (a callback runs there).
        self.thread: threading.Thread | None = None
        self._shut = False
        # What waits for the callback thread or runs on it (count, bytes), and how many were dropped.
        self._queued = 0
        self._queued_bytes = 0
        self._dropped = 0

    def submit(self, callback: Callable, args: tuple, cost: int, *, keep: bool = False) -> bool:
        """Queue ``callback(*args)``, charged ``cost`` bytes; False when it was dropped.

        Past ``max_callbacks`` callbacks waiting, or ``max_callback_bytes``, the callback is dropped
        with a warning (logged for the 1st, 2nd, 4th, 8th ... drop); ``keep=True`` never is.  After
        :meth:`shutdown` every callback is dropped.
        """
        with self._lock:
            if self._shut:
                log.debug("%s: dropped a callback after close", self.name)
                return False
            limit, limit_bytes = self.limits.max_callbacks, self.limits.max_callback_bytes
            full = self._queued >= limit or self._queued_bytes + cost > limit_bytes
            if full and not keep:
                self._dropped += 1
                dropped = self._dropped
            else:
                self._queued += 1
                self._queued_bytes += cost
                self._items.append((callback, args, cost))
                if self.thread is None:
                    self.thread = threading.Thread(
                        target=self._run, name=f"{self.name}-callbacks", daemon=True
                    )
                    self.thread.start()
                    _running.add(self)
                else:
                    self._ready.notify()
        if full and not keep:
            if dropped & (dropped - 1) == 0:  # the 1st, 2nd, 4th, 8th ...: no log flood
                log.warning(
                    "%s: %d callback(s) dropped: the peer sends notifications faster than the callbacks "
                    "run (more than %d waiting, or %d bytes; max_callbacks, max_callback_bytes)",
                    self.name,
                    dropped,
                    limit,
                    limit_bytes,
                )
            return False
        return True

    def shutdown(self, *, wait: bool) -> None:
        """Stop the thread once what is queued has run (waiting for that, with ``wait``); later callbacks are dropped."""
        with self._lock:
            self._shut = True
            self._ready.notify()
            thread = self.thread
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        done: int | None = None  # the cost of the callback that has just run
        while True:
            with self._lock:
                if done is not None:
                    self._queued -= 1
                    self._queued_bytes -= done
                while not self._items and not self._shut:
                    self._ready.wait()
                if not self._items:
                    return
                callback, args, done = self._items.popleft()
            run_logged(callback, args)  # errors are logged


@atexit.register
def _drain_at_exit() -> None:
    # As a pool's threads are joined at exit: the callbacks already queued run before the interpreter ends.
    for queue in list(_running):
        queue.shutdown(wait=True)
