"""Objects that must stay on the thread that made them: one per thread, :class:`PerThread`.

A server's handlers do not run on the thread that entered its lifespan: each connection runs them
on handler threads of its own (an ``async def`` handler too, on a loop of its own on such a
thread; :mod:`mcp_ref.server.lifespan`).  Some objects refuse to be used from a thread other than
the one that made them: a ``sqlite3`` connection raises ``ProgrammingError: SQLite objects created
in a thread can only be used in that same thread``.  Such an object is made per thread: the
lifespan holds a ``PerThread(factory)``, and each handler asks it for its thread's object::

    @contextlib.contextmanager
    def lifespan(server):
        with PerThread(lambda: sqlite3.connect(path)) as db:
            yield db                      # a handler: ctx.lifespan_context.get().execute(...)

It holds at most one object per live thread that asked for one: an object is closed when its thread
ends (on that thread, as ``threading.local`` releases what the thread held), and the rest when the
``with`` block ends (:meth:`PerThread.close`).  When a handler fails on such an object anyway, the
server's log line says why and what to do (:mod:`mcp_ref.handler_failures`).
"""

from __future__ import annotations

import itertools
import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class _Slot:
    """What one thread holds (in the ``threading.local``): its object.  When the thread ends the
    slot is released, and its finalizer closes the object on that thread."""

    __slots__ = ("value", "__weakref__")

    def __init__(self, value: Any):
        self.value = value


class PerThread(Generic[T]):
    """One object per thread, made by ``factory()`` the first time a thread calls :meth:`get`.

    ``close(obj)`` closes one (default None: the object's own ``close()``, if it has one).  An object
    is closed when the thread that made it ends, on that thread; :meth:`close` (the end of the
    ``with`` block) closes the others from the thread that calls it.  One of another thread whose
    close raises there (``sqlite3.connect(path)`` without ``check_same_thread=False``: its
    ``close()`` checks the thread) is dropped instead: neither PerThread nor the thread that made
    it keeps a reference to it, so it is freed when nothing else refers to it (a ``sqlite3``
    connection closes its database then, from any thread), and a DEBUG record of
    ``mcp_ref.per_thread`` says so.  A failure to close one of the calling thread's is raised by
    :meth:`close`, after every object was tried.  Thread-safe.
    """

    def __init__(self, factory: Callable[[], T], close: Callable[[T], Any] | None = None):
        if not callable(factory):
            raise TypeError(f"PerThread needs a callable factory, not {type(factory).__name__}")
        if close is not None and not callable(close):
            raise TypeError(
                f"PerThread's close must be callable or None, not {type(close).__name__}"
            )
        self.factory = factory
        self._close_one = close
        self._local = threading.local()
        self._lock = threading.Lock()
        self._keys = itertools.count()
        # key -> (the finalizer of a thread's slot, the id of that thread): one per live thread
        self._made: dict[int, tuple[weakref.finalize, int]] = {}
        self._closed = False

    def get(self) -> T:
        """This thread's object, made by ``factory()`` on its first call here (its exception comes
        out, and the next call tries again).  RuntimeError once :meth:`close` has run."""
        slot = getattr(self._local, "slot", None)
        if slot is not None:
            return slot.value
        if self._closed:
            raise RuntimeError("PerThread.get(): it was closed (its with block has ended)")
        value = self.factory()
        slot = _Slot(value)
        with self._lock:
            closed = self._closed
            if not closed:
                key = next(self._keys)
                finalizer = weakref.finalize(slot, self._thread_ended, key, value)
                # not at interpreter exit, from the main thread: the process's end frees it
                finalizer.atexit = False
                self._made[key] = (finalizer, threading.get_ident())
        if closed:  # closed while the factory ran
            self._close_value(value)
            raise RuntimeError("PerThread.get(): it was closed (its with block has ended)")
        self._local.slot = slot
        return value

    def __len__(self) -> int:
        """How many objects it holds now (at most one per live thread that asked)."""
        with self._lock:
            return len(self._made)

    def close(self) -> None:
        """Close every object it holds (see the class) and make no more: :meth:`get` raises from now
        on.  Idempotent."""
        with self._lock:
            self._closed = True
            made, self._made = self._made, {}
        here = threading.get_ident()
        failures = []
        for finalizer, thread in made.values():
            detached = finalizer.detach()  # the thread's slot no longer closes it
            if detached is None:
                continue  # its thread ended meanwhile, and closed it
            value = detached[2][1]  # (slot, func, (key, value), kwargs)
            try:
                self._close_value(value)
            except Exception as exc:
                if thread == here:
                    failures.append(exc)
                else:  # sqlite3: "SQLite objects created in a thread can only be used in that same thread"
                    log.debug(
                        "PerThread: the object made on thread %s cannot be closed from thread %s "
                        "(%s): dropped, it is freed when nothing refers to it",
                        thread,
                        here,
                        exc,
                    )
        self._local = threading.local()  # the threads' slots are dropped with it
        if failures:
            raise failures[0]

    def __enter__(self) -> PerThread[T]:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def _close_value(self, value: Any) -> None:
        if self._close_one is not None:
            self._close_one(value)
            return
        close = getattr(value, "close", None)
        if callable(close):
            close()

    def _thread_ended(self, key: int, value: Any) -> None:
        """A thread's slot was released (the thread ended): close its object, on that thread.

        Runs as the thread's state is torn down: a failure is reported by ``weakref.finalize``
        (Python's "Exception ignored in" on stderr); nothing is logged here."""
        with self._lock:
            self._made.pop(key, None)
        self._close_value(value)
