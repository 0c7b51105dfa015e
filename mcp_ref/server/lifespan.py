"""A server's lifespan: ``Server(lifespan=fn)``, what it holds while it serves.

``fn(server)`` returns a context manager (``@contextlib.contextmanager``) or an async one
(``@contextlib.asynccontextmanager``).  It is entered once, before the first connection is served,
and its value is ``ctx.lifespan_context`` in every handler (and ``server.lifespan_context``); it is
exited when serving ends:

* ``run()`` / ``run_stdio()`` / ``run_http()``: entered as they start (a failure stops the start:
  the exception comes out of ``run()``), exited as they return;
* a WSGI app (``server.wsgi_app()`` under gunicorn, Flask, Django ...): a WSGI app has no start, so
  the lifespan is entered at the first request that makes a connection (a failure fails that
  request, and the next request tries again), and exited by ``app.close()`` (gunicorn:
  ``mcp_ref.http.gunicorn_hooks`` calls it when a worker stops).  Each worker process has its
  own lifespan, as it has its own connections;
* ``Client.in_memory(server)`` and ``server.connect(...)``: entered at the first connection, exited
  by ``server.exit_lifespan()``.

After an exit the next connection enters it again.  An async context manager runs on an event loop
of its own, kept (not running) from the enter to the exit: what it holds that is tied to that loop
cannot be used from an ``async def`` handler, which runs on a loop of its own per call.
"""

from __future__ import annotations

import threading
from typing import Any


class Lifespan:
    """``fn(server)``'s context manager, entered at most once at a time (thread-safe)."""

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
        self._manager: Any = None
        self._loop: Any = None
        self._lock = threading.Lock()

    def enter(self) -> Any:
        """Enter the context manager unless it is entered; its value."""
        with self._lock:
            if not self.entered:
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
            return self.value

    def exit(self) -> None:
        """Exit the context manager if it is entered (its exception, if it raises, comes out)."""
        with self._lock:
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
