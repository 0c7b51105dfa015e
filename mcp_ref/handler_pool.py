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

log = logging.getLogger("mcp_ref.session")  # its messages are the session's

#: How long a runner waits for the next job before its thread goes back to the executor.  The
#: executor's threads are not daemons: one left waiting here would hold the interpreter at exit
#: (a session never closed), which then waits at most this long.
IDLE_SECONDS = 0.5

#: A request to run: (request, context, batch), as the session's handler runner takes them.
Job = tuple[Any, Any, Any]


class HandlerPool:
    """Runs ``run(request, context, batch)`` for each submitted job on at most ``max_workers``
    threads named ``<name>-handler_<n>``; :meth:`stop` (close) and :meth:`drain` (end of input) end it.

    Jobs wait in ``queue``; each runner given to the executor runs queued jobs one after another, and
    waits for the next while the connection lasts; a runner is submitted only when those running
    cannot take a new job.  So a thread that has just answered takes the next request itself, instead
    of the executor waking (or starting) another thread for every request."""

    def __init__(self, name: str, max_workers: int, run: Callable[..., None]):
        self.name = name
        self.run = run
        self.max_workers = max_workers
        self.executor = ThreadPoolExecutor(max_workers, thread_name_prefix=f"{name}-handler")
        self.lock = threading.Lock()
        self.idle = threading.Condition(self.lock)  # drain() waits here for jobs to reach 0
        self.wakeup = threading.Condition(self.lock)  # runners wait here for a job
        self.queue: deque[Job] = deque()  # jobs waiting for a thread (bounded by max_incoming)
        self.held: deque[Job] = deque()  # jobs waiting for initialize (bounded by max_incoming)
        self.jobs = 0  # jobs submitted (or held) whose run has not ended
        self.runners = 0  # executor runners taking jobs from the queue (at most max_workers)
        self.running = 0  # handlers running now
        self.holding = False  # an initialize handler runs: the jobs submitted meanwhile are held
        self.stopped = False  # close(): the jobs not started yet never run
        self.ending = False  # close() or end of input: a runner with no job left ends

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
            self.queue.append(job)
            start = self._needs_runner()
            self.wakeup.notify()
        if start and not self._start_runner():
            with self.lock:
                if job in self.queue:  # no thread took it: the caller refuses it
                    self.queue.remove(job)
                    self.jobs -= 1
                    return False
        return True

    def _needs_runner(self) -> bool:
        """Under ``lock``: True (and counted) when the queued jobs need one more runner."""
        if self.runners >= self.max_workers or self.runners - self.running >= len(self.queue):
            return False
        self.runners += 1
        return True

    def _start_runner(self) -> bool:
        try:
            self.executor.submit(self._work)
        except RuntimeError:  # shut down (the connection closed), or the interpreter is ending
            with self.lock:
                self.runners -= 1
            return False
        return True

    def _work(self) -> None:
        """One executor runner: run queued jobs one after another, waiting for the next, until the end."""
        while True:
            with self.lock:
                while not self.queue and not self.ending:
                    if not self.wakeup.wait(IDLE_SECONDS) and not self.queue:
                        break  # idle: the thread goes back to the executor
                if not self.queue:
                    self.runners -= 1
                    return
                job = self.queue.popleft()
                self.running += 1
            try:
                if not self.stopped:
                    self.run(*job)
            except BaseException:  # a reply not sent, a handler's SystemExit: the pool goes on
                log.exception("%s: a handler could not finish", self.name)
            finally:
                self._ended(job)

    def _ended(self, job: Job) -> None:
        """A job ended: an ``initialize`` lets the jobs it held into the queue; drain() is told."""
        starts = 0
        with self.lock:
            self.running -= 1
            self.jobs -= 1
            if job[0].method == "initialize" and self.holding:
                self.holding = False
                while self.held and not self.holding:
                    next_job = self.held.popleft()
                    self.holding = next_job[0].method == "initialize"
                    self.queue.append(next_job)
                    starts += self._needs_runner()
                    self.wakeup.notify()
            self.idle.notify_all()
        for _ in range(starts):
            self._start_runner()  # if none can start (closing), this runner's loop takes the jobs

    def stop(self) -> None:
        """close(): the held and queued jobs never run (the session cancels their contexts); the
        running handlers finish, then the threads exit."""
        with self.lock:
            self.stopped = self.ending = True
            self.jobs -= len(self.held) + len(self.queue)
            self.held.clear()
            self.queue.clear()
            self.wakeup.notify_all()
        self.executor.shutdown(wait=False)

    def drain(self, *, join: bool) -> None:
        """At the end of input: the queued and held jobs still run; returns once every handler has
        ended (``join``: and every thread has exited)."""
        with self.lock:
            self.ending = True
            self.wakeup.notify_all()
            while self.jobs > 0:
                self.idle.wait()
        self.executor.shutdown(wait=join)
