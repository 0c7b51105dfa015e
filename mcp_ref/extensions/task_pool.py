"""The threads that run the tasks extension's tasks (:mod:`mcp_ref.extensions.tasks`): a bounded pool.

At most ``workers`` tasks *run* at once.  A task waiting for input gives its run slot up while it
waits (another task runs meanwhile) and keeps only its thread; at most ``max_waiting`` tasks wait
so, so the pool never has more than ``workers + max_waiting`` threads (daemon threads: a parked
task never keeps the process alive; an idle one ends after :data:`IDLE_SECONDS`).  A task whose
answers came waits for a free run slot before it goes on, ahead of tasks not yet started.  Work
not yet started waits in a :class:`~mcp_ref.state.stores.TaskQueue` by its task id (bounded: full,
a new task is refused with -31000); the work itself, a function of this process, stays here.  A
task cancelled or expired before it ran leaves the queue at once (:meth:`TaskPool.withdraw`).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..errors import ServerBusy

if TYPE_CHECKING:
    from ..state.stores import TaskQueue

log = logging.getLogger("mcp_ref.extensions.tasks")

#: Seconds an idle task thread waits for work before it ends.
IDLE_SECONDS = 60.0


class TaskPool:
    """The run slots and threads of a task store (its base: see the module docstring)."""

    max_tasks: int

    def __init__(self, workers: int, max_waiting: int, queue: TaskQueue):
        self.workers = workers
        self.max_waiting = max_waiting
        #: The ids of tasks waiting for a run slot (:class:`~mcp_ref.state.stores.TaskQueue`).
        self.queue = queue
        self._numbers = itertools.count(1)
        # Work not yet started (ids in ``queue``, their work here), and how many threads exist, wait
        # for work (idle), hold a run slot (running), wait for input (waiting) or wait for a slot
        # after their input (resuming).
        self._cond = threading.Condition()
        self._work_of: dict[str, Callable[[], None]] = {}
        self._threads = self._idle = self._running = self._waiting = self._resuming = 0
        self._local = threading.local()  # .slot: this thread holds a run slot of this pool

    @property
    def threads(self) -> int:
        """The pool's threads now (at most ``workers + max_waiting``)."""
        return self._threads

    @property
    def waiting(self) -> int:
        """Tasks waiting for input now (at most ``max_waiting``)."""
        return self._waiting

    # -- the pool ---------------------------------------------------------------------------------

    def run(self, work: Callable[[], None], task_id: str | None = None) -> None:
        """Run ``work`` (of task ``task_id``) on a task thread, once a run slot is free.  Waiting work
        is queued by its task id in :attr:`queue`; ServerBusy (-31000) when the queue is full."""
        key = task_id if task_id is not None else f"work-{next(self._numbers)}"
        with self._cond:
            if not self.queue.push(key):
                raise ServerBusy(
                    f"Server busy: {len(self.queue)} tasks wait for a run slot; retry later",
                    data={"maxTasks": self.max_tasks},
                )
            self._work_of[key] = work
            self._dispatch()

    def withdraw(self, task_id: str) -> None:
        """Take the work of task ``task_id`` out of the queue if it has not started (the task was
        cancelled or expired while it waited for a run slot): its place in :attr:`queue` is free for
        another task at once.  The work is then run here, on this thread: a task's work finds its
        task ended and never runs the handler, only ends what it holds (a started one: no-op)."""
        with self._cond:
            work = self._work_of.pop(task_id, None)
            if work is not None:
                self.queue.discard(task_id)
        if work is not None:
            work()

    def _dispatch(self) -> None:
        """(Holding ``_cond``) wake or start a thread if pending work may take a free run slot now."""
        if not self._work_of or self._running >= self.workers or self._resuming:
            return
        if self._idle:
            self._cond.notify_all()
        elif self._threads < self.workers + self.max_waiting:
            self._threads += 1
            threading.Thread(
                target=self._work, name=f"mcp-task-{next(self._numbers)}", daemon=True
            ).start()

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._work_of or self._running >= self.workers or self._resuming:
                    if not self._work_of and self._threads > self.workers:
                        self._threads -= 1  # past the workers' count, an idle thread ends at once
                        return
                    self._idle += 1
                    try:
                        woken = self._cond.wait(IDLE_SECONDS)
                    finally:
                        self._idle -= 1
                    if not woken and not self._work_of:
                        self._threads -= 1
                        return
                work = None
                while work is None:
                    key = self.queue.pop()
                    if (
                        key is None
                    ):  # the queue lost ids (a shared queue): what is left runs in order
                        key = next(iter(self._work_of))
                    work = self._work_of.pop(key, None)
                self._running += 1
                self._dispatch()
            self._local.slot = True
            try:
                work()
            except BaseException:  # a worker never dies
                log.exception("a task's work failed")
            finally:
                self._local.slot = False
                with self._cond:
                    self._running -= 1
                    if self._resuming:
                        self._cond.notify_all()  # a task whose input came goes first

    @contextmanager
    def waiting_for_input(self) -> Iterator[None]:
        """Around a task's wait for input (on its own thread): its run slot is given to another task
        while it waits, and taken back after (once one is free).  ServerBusy (-31000) when
        ``max_waiting`` tasks wait already: the task does not wait (nor hold a slot while it waits)."""
        if not getattr(self._local, "slot", False):
            yield  # not on this store's worker (no slot to give up)
            return
        with self._cond:
            if self._waiting >= self.max_waiting:
                raise ServerBusy(
                    f"Server busy: {self.max_waiting} tasks are waiting for input already; "
                    "this one cannot wait too (try again later)",
                    data={"maxWaiting": self.max_waiting},
                )
            self._waiting += 1
            self._running -= 1
            self._local.slot = False
            self._dispatch()
            if self._resuming:
                self._cond.notify_all()
        try:
            yield
        finally:
            with self._cond:
                self._waiting -= 1
                self._resuming += 1
                try:
                    while self._running >= self.workers:
                        self._cond.wait()
                finally:
                    self._resuming -= 1
                self._running += 1
                self._local.slot = True
                self._dispatch()
