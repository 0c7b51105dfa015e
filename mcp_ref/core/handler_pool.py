"""The handlers of one connection's incoming requests: :class:`HandlerPool`, a bounded
:class:`concurrent.futures.ThreadPoolExecutor` (made with the first request a handler must run).

The session's reader thread only reads, parses and routes; each request it reads is submitted here,
and one of at most ``max_workers`` threads runs its handler.  So a handler may ask the peer and
wait: the reader reads the answer.  The requests submitted and not yet run are bounded by the
session's ``max_incoming`` (each is in its table of incoming requests, or counted as withdrawn).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

log = logging.getLogger("mcp_ref.core.session")  # its messages are the session's

#: A request to run: (request, context, batch), as the session's handler runner takes them.
Job = tuple[Any, Any, Any]


class HandlerPool:
    """Runs ``run(request, context, batch)`` for each submitted job on at most ``max_workers``
    threads named ``<name>-handler_<n>``; :meth:`stop` (close) and :meth:`drain` (end of input) end it."""

    def __init__(self, name: str, max_workers: int, run: Callable[..., None]):
        self.name = name
        self.run = run
        self.executor = ThreadPoolExecutor(max_workers, thread_name_prefix=f"{name}-handler")
        self.lock = threading.Lock()
        self.idle = threading.Condition(self.lock)  # drain() waits here for jobs to reach 0
        self.jobs = 0  # jobs submitted (or held) whose run has not ended
        self.holding = False  # an initialize handler runs: the jobs submitted meanwhile wait in held
        self.held: deque[Job] = deque()  # bounded as the jobs are (the session's max_incoming)
        self.stopped = False  # close(): the jobs not started yet never run

    def submit(self, job: Job) -> bool:
        """Run ``job`` when a thread is free; False if no thread can take it (the pool is shut down).

        basic/lifecycle: initialize "MUST be the first interaction": the requests read while its
        handler runs wait until it has answered (notifications are still read and handled, and ping
        answered on the reader thread)."""
        with self.lock:
            if self.stopped:
                return False
            self.jobs += 1
            if self.holding:
                self.held.append(job)
                return True
            self.holding = job[0].method == "initialize"
        return self._start(job)

    def _start(self, job: Job) -> bool:
        try:
            self.executor.submit(self._work, job)
        except RuntimeError:  # shut down (the connection closed), or the interpreter is ending
            self._ended(job)
            return False
        return True

    def _work(self, job: Job) -> None:
        try:
            if not self.stopped:
                self.run(*job)
        except BaseException:  # a reply that could not be sent, a handler's SystemExit: the pool goes on
            log.exception("%s: a handler could not finish", self.name)
        finally:
            self._ended(job)

    def _ended(self, job: Job) -> None:
        """A job ended: an ``initialize`` lets the jobs it held start; drain() is told."""
        released = []
        with self.lock:
            if job[0].method == "initialize" and self.holding:
                self.holding = False
                while self.held and not self.holding:
                    next_job = self.held.popleft()
                    self.holding = next_job[0].method == "initialize"
                    released.append(next_job)
            self.jobs -= 1
            self.idle.notify_all()
        for next_job in released:
            if not self._start(next_job):
                log.debug("%s: %s not run, the connection is closing", self.name, next_job[0].method)

    def stop(self) -> None:
        """close(): the held and queued jobs never run (the session cancels their contexts); the
        running handlers finish, then the threads exit."""
        with self.lock:
            self.stopped = True
            self.jobs -= len(self.held)
            self.held.clear()
        self.executor.shutdown(wait=False)

    def drain(self, *, join: bool) -> None:
        """At the end of input: the queued and held jobs still run; returns once every handler has
        ended (``join``: and every thread has exited)."""
        with self.lock:
            while self.jobs > 0:
                self.idle.wait()
        self.executor.shutdown(wait=join)
