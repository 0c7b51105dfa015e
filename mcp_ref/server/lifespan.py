"""A server's lifespan: ``Server(lifespan=fn)``, what it holds while it serves.

``fn(server)`` returns a context manager (``@contextlib.contextmanager``) or an async one
(``@contextlib.asynccontextmanager``).  Its value is ``ctx.lifespan_context`` in every handler
(and ``server.lifespan_context``).  It is entered once however many connections use it, and exited
when the last that holds it lets go.  Two kinds of holder:

* **serving** (one, uncounted): ``run()`` / ``run_stdio()`` / ``run_http()`` enter it as they
  start (a failure stops the start: the exception comes out of ``run()``) and let go as they
  return; a WSGI app (``server.wsgi_app()`` under gunicorn, Flask, Django ...) has no start, so
  its first request that makes a connection enters it (a failure fails that request, and the next
  request tries again), and ``app.close()`` lets go (gunicorn: ``mcp_ref.http.gunicorn_hooks``
  calls it when a worker stops; each worker process has its own lifespan).  ``server.connect()``,
  the lower-level call you build your own serving from, holds it as serving does, and so does
  ``server.enter_lifespan()``; ``server.exit_lifespan()`` lets go;
* **in-memory clients** (counted): each ``Client.in_memory(server)`` holds it from its start to
  its ``close()``.  Several open at once share one entered lifespan; the last to close exits it,
  after the server's side of its connection has finished its handlers, and an exception the exit
  raises comes out of that ``client.close()`` (out of the ``with`` block); a handler that ignores
  its cancellation past ``mcp_ref.memory.SERVER_END_WAIT`` is waited for on a thread, which exits
  the lifespan when it ends and logs what that raised.  So each test that opens its own in-memory
  client gets a freshly entered lifespan.  (``server.new_connection()`` holds nothing: its callers
  do.)

While serving holds it, an in-memory client closing does not exit it; while an in-memory client
holds it, ``exit_lifespan()`` (the end of ``run()``, ``app.close()``) leaves it to the last client
to close.  After an exit the next holder enters it again.

Handlers do not run on the thread that entered the lifespan: each connection runs them on its own
handler threads (an ``async def`` handler on a loop of its own, on such a thread).  An object that
must stay on the thread that made it (a ``sqlite3`` connection) cannot be made here and used in a
handler: hold a :class:`mcp_ref.PerThread` here instead (``docs/lifespan.md``).

An async context manager runs on an event loop of its own, kept (not running) from the enter to the
exit: what it holds that is tied to that loop cannot be used from an ``async def`` handler, which
runs on a loop of its own per call.
"""

from __future__ import annotations

import threading
from typing import Any


class Lifespan:
    """``fn(server)``'s context manager, entered at most once at a time, with its holders
    (thread-safe: entering and exiting run under one lock, so a holder that comes while another
    leaves waits, and gets a freshly entered lifespan)."""

    def __init__(self, server: Any, fn: Any):
        if not callable(fn):
            raise TypeError(
                f"lifespan must be a callable taking the server, not {type(fn).__name__}"
            )
        self.server = server
        self.fn = fn
        self.entered = False
        #: What the context manager gave (``ctx.lifespan_context``); None until entered.
        self.value: Any = None
        #: True while serving holds it (:meth:`enter` until :meth:`exit`).
        self.serving = False
        #: In-memory clients that hold it now (:meth:`hold`).
        self.holds = 0
        self._manager: Any = None
        self._loop: Any = None
        self._lock = threading.Lock()

    def enter(self) -> Any:
        """Serving holds it (entered unless it is); its value."""
        with self._lock:
            self._enter()
            self.serving = True
            return self.value

    def exit(self) -> None:
        """Serving lets go: exited now unless an in-memory client still holds it (then the last
        one's :meth:`LifespanHold.release` exits it).  Its exception, if it raises, comes out."""
        with self._lock:
            self.serving = False
            if self.holds == 0:
                self._exit()

    def hold(self) -> LifespanHold:
        """One more holder (an in-memory client): entered unless it is (its exception comes out)."""
        with self._lock:
            self._enter()
            self.holds += 1
        return LifespanHold(self)

    def _release(self) -> None:
        """A holder lets go: the last one exits it, unless serving holds it."""
        with self._lock:
            self.holds -= 1
            if self.holds == 0 and not self.serving:
                self._exit()

    def _enter(self) -> None:
        """Under the lock: enter the context manager unless it is entered."""
        if self.entered:
            return
        manager = self.fn(self.server)
        if hasattr(manager, "__aenter__"):
            import asyncio

            loop = asyncio.new_event_loop()
            try:
                self.value = loop.run_until_complete(manager.__aenter__())
            except BaseException:
                loop.close()
                raise
            self._loop = loop
        elif hasattr(manager, "__enter__"):
            self.value = manager.__enter__()
        else:
            raise TypeError(
                f"lifespan(server) must return a context manager, not {type(manager).__name__}"
            )
        self._manager, self.entered = manager, True

    def _exit(self) -> None:
        """Under the lock: exit the context manager if it is entered (a failure still leaves it
        exited: the next holder enters it again)."""
        if not self.entered:
            return
        manager, loop = self._manager, self._loop
        self.entered, self.value, self._manager, self._loop = False, None, None, None
        if loop is None:
            manager.__exit__(None, None, None)
            return
        try:
            loop.run_until_complete(manager.__aexit__(None, None, None))
        finally:
            loop.close()


class LifespanHold:
    """One in-memory client's hold on the lifespan (:meth:`Lifespan.hold`)."""

    def __init__(self, lifespan: Lifespan):
        self.lifespan = lifespan
        self._released = False
        self._lock = threading.Lock()

    def release(self) -> None:
        """Let go, once (later calls do nothing); the last holder's release exits the lifespan
        and raises what its exit raised."""
        with self._lock:
            if self._released:
                return
            self._released = True
        self.lifespan._release()
