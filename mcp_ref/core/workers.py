"""The threads of one connection, leader/follower (loaded with the first request a handler must run).

The threads take turns at reading.  The one that read a request hands the reading role to a parked
follower (or a new thread) when a handler slot is free, and runs the handler itself; then it takes the
next queued request or parks.  So a handler may ask the peer and wait (another thread reads the answer),
a cancellation reaches a running handler, and only one thread reads at a time.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

log = logging.getLogger("mcp_ref.core.session")  # its messages are the session's

READ = "read"  #: the task of a thread that takes the reading role (any other task is a job for ``run``)


class Workers:
    """A connection's threads (daemons): ``lead(thread)`` reads until a job can run on that thread (returned, once
    :meth:`take` handed the role on) or the input ends (None); ``run(*job)`` runs a handler; ``lock`` is the session's.
    At most ``max_workers`` handlers run at once, and ``max_workers + 1`` threads live (one starts only when none is parked)."""

    def __init__(self, name: str, max_workers: int, lock: Any, lead: Callable, run: Callable):
        self.name, self.max_workers, self.lock, self.lead, self.run = name, max_workers, lock, lead, run
        #: Requests waiting for a handler slot (appended under ``lock``): each is in the session's table of
        #: incoming requests or counted as withdrawn, so they are bounded by its ``max_incoming``.
        self.jobs: deque = deque()
        self.running = 0  # handlers running on our threads
        self.holding = 0  # initialize handlers running: no other job starts meanwhile (see claim)
        self.ended = False  # the connection is ending: a thread with nothing to do exits
        self.idle: list[list[Any]] = []  # parked followers, [wake lock, task]
        self.drained = threading.Condition(lock)  # the end of input waits here for the handlers

    def work(self, task: Any) -> None:
        """A thread's life: read or run jobs, park in between (threads are kept, as a pool keeps its threads: starting one
        costs more than a call); exit when the connection ends."""
        me, wake = threading.current_thread(), threading.Lock()
        slot: list[Any] = [wake, None]
        wake.acquire()
        while task is not None:
            if task is READ:
                task = self.lead(me)
                continue
            try:
                self.run(*task)
            except BaseException:  # a reply that could not be sent, a handler's SystemExit: the thread goes on
                log.exception("%s: a handler could not finish", self.name)
            lifted = task[0].method == "initialize"
            with self.lock:
                self.holding -= lifted
                task = self.claim()  # the next queued request takes the slot this one frees
                if task is None:
                    self.running -= 1
                    if self.ended or len(self.idle) >= self.max_workers:
                        return self.drained.notify_all()
                    self.idle.append(slot)
            if lifted:
                self.pump()  # what waited behind initialize starts
            if task is None:
                wake.acquire()  # parked until hand() gives it a task (None: exit)
                task, slot[1] = slot[1], None

    def claim(self) -> Any:
        """The next queued job, if one may start (called under ``lock``).  basic/lifecycle: initialize "MUST be the
        first interaction": the requests read while its handler runs wait until it has answered (notifications are
        still read and handled, and ping answered)."""
        if not self.jobs or self.holding:
            return None
        job = self.jobs.popleft()
        self.holding += job[0].method == "initialize"
        return job

    def hand(self, follower: list | None, task: Any) -> None:
        """Give ``task`` to a parked follower, or else to a new thread."""
        if follower is None:
            threading.Thread(target=self.work, args=(task,), name=f"{self.name}-worker", daemon=True).start()
        else:
            follower[1] = task
            follower[0].release()

    def take(self, read: bool) -> Any:
        """A queued job if a slot is free (else None).  ``read``: the caller's reading role goes to a follower and the
        caller runs the job; else the job goes to the follower."""
        with self.lock:
            if self.running >= self.max_workers or (job := self.claim()) is None:
                return None
            self.running += 1
            follower = self.idle.pop() if self.idle else None
        try:
            self.hand(follower, READ if read else job)
        except RuntimeError:  # no thread can start (interpreter shutdown): the job waits, the caller reads on
            with self.lock:
                self.jobs.appendleft(job)
                self.running -= 1
                self.holding -= job[0].method == "initialize"
            return None
        return job

    def pump(self) -> None:
        """Start queued jobs on other threads while slots are free (dispatched by a thread not reading; the end)."""
        while self.take(False) is not None:
            pass

    def stop(self, drop: bool = False) -> None:
        """Parked followers exit, and each thread once it has nothing to do; ``drop``: queued jobs never run (close)."""
        with self.lock:
            self.ended = True
            self.jobs.clear() if drop else None
            idle, self.idle = self.idle, []
        for follower in idle:
            self.hand(follower, None)

    def drain(self) -> None:
        """At the end of input: the queued jobs still run; returns once every handler has ended."""
        self.stop()
        self.pump()
        with self.lock:
            while self.running or self.jobs:
                self.drained.wait()
