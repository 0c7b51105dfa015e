"""gunicorn hooks that end mcp_ref's long-lived streams as soon as a worker is told to stop.

A gunicorn worker told to stop (SIGTERM: graceful; SIGINT or SIGQUIT: quick) waits for the requests
it is serving: gthread up to ``--graceful-timeout`` (30 s by default), and a quick stop's
interpreter exit joins the handler threads.  A 2026-07-28 ``subscriptions/listen`` stream and a
handshake-era GET stream are requests that never end on their own, so every stop took the whole
30 s, after which the arbiter kills the worker (SIGKILL) and the stream's client sees its connection
cut instead of the end the spec asks for.  Measured from the signal to the arbiter's exit, with one
listen stream and one GET stream open (gunicorn 27, gthread, one worker; clients alive, or killed
just before): 30 s for each of SIGTERM, SIGINT and SIGQUIT without these hooks; with them SIGTERM
2.0 s with the clients alive (gunicorn keeps their idle keep-alive connections up to 2 s at a stop)
and 0.3 s with them gone, SIGINT and SIGQUIT 0.4 s.

Use them as gunicorn's configuration::

    gunicorn -c python:mcp_ref.http.gunicorn_hooks -k gthread --threads 8 app:wsgi_app

or, in a ``gunicorn.conf.py`` of your own::

    from mcp_ref.http.gunicorn_hooks import post_worker_init, worker_exit  # noqa: F401

When the worker gets a stop signal, the app's ``close()`` runs (``McpWsgiApp.close``): each listen
stream is answered with its completion result (2026-07-28 subscriptions §Graceful Closure: the
server "SHOULD respond to the original subscriptions/listen request with a completion result before
closing the stream"), and each session this worker holds ends here, so its GET stream ends too (with
a shared state the session lives on: the client's next request reaches another worker, and another
worker becomes its home); then gunicorn stops as it would.  ``close()`` runs on a thread started
beforehand, woken by the signal handler through a pipe: a handler interrupts the main thread
anywhere (its own earlier run included: gunicorn repeats SIGTERM to a retiring worker), and must
take no lock (:class:`StopCloser`).
A worker that leaves its loop waits for ``close()`` to end before it exits (``worker_exit``).

A ``gthread`` worker's ``--threads`` are the most requests it serves at once, and each open stream
holds one: ``post_worker_init`` tells the apps of the process (:func:`tell_threads`), which keep
their long-lived streams to half of them and refuse more with 503, so a client holding quiet
streams cannot leave the rest of the site (or the app's own calls) without a thread.

Why a hook and not the app alone: gunicorn sets the worker's signal handlers after the app is
imported (and ``--preload`` imports it in the arbiter, before the fork), requests are served on
threads that may not set a handler, and ``atexit`` runs only after the interpreter has waited for
the very threads the streams hold.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable, Iterable
from typing import Any

from .server.worker_threads import set_server_threads

log = logging.getLogger(__name__)

#: The signals gunicorn stops a worker with: graceful (SIGTERM), quick (SIGINT, SIGQUIT).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT)


#: Seconds a worker that leaves its loop waits, at most, for its app's ``close()`` to end.
CLOSE_WAIT = 10.0


def post_worker_init(worker: Any) -> None:
    """gunicorn's hook, in each worker once its app is loaded and its signal handlers are set: end
    the app's streams when the worker is told to stop (:func:`close_on_stop`), and tell every
    mcp_ref app of this process how many request threads it has (:func:`tell_threads`)."""
    tell_threads(worker)
    worker.mcp_ref_closer = close_on_stop(worker.wsgi)


def tell_threads(worker: Any) -> None:
    """A ``gthread`` worker serves requests on ``--threads`` threads, each open stream holding one:
    say so (``worker_threads.set_server_threads``), so that the mcp_ref apps of this process, a
    Django or Flask site's mounted one included, keep their streams to half of them (503 past
    it).  Other workers (sync: one request at a time, streams refused already; gevent) say
    nothing."""
    # gunicorn.workers.gthread.ThreadWorker, by name: gunicorn ships no type information
    if any(kind.__name__ == "ThreadWorker" for kind in type(worker).__mro__):
        set_server_threads(worker.cfg.threads)


def worker_exit(server: Any, worker: Any) -> None:
    """gunicorn's hook, in a worker that has left its loop, just before it exits: its app's
    ``close()`` has run (waited for up to :data:`CLOSE_WAIT`), even when no stop signal came (a
    ``--max-requests`` restart): the lifespan is exited, and, with a shared state, the sessions
    this worker held are handed to the others."""
    closer = getattr(worker, "mcp_ref_closer", None)
    if closer is not None:
        closer()
        closer.join(CLOSE_WAIT)


def close_on_stop(app: Any, signals: Iterable[int] = STOP_SIGNALS) -> StopCloser | None:
    """Run ``app.close()`` as soon as this process gets one of ``signals``, then the handler that
    was there before (call it from the main thread).  Returns the :class:`StopCloser`: call it to
    do the same without a signal; or None when ``app`` has no ``close`` (a wrapping middleware:
    pass the mcp_ref app)."""
    close = getattr(app, "close", None)
    if not callable(close):
        log.warning(
            "%r has no close(): its streams end only when gunicorn stops waiting for them", app
        )
        return None
    closer = StopCloser(close)
    for number in signals:
        signal.signal(number, _chained(closer, signal.getsignal(number)))
    return closer


class StopCloser:
    """Runs ``close()`` once, on a thread of its own, when called: a call that a signal handler may
    make any number of times, even while another run of the handler is inside it (a flag and a byte
    written to a pipe, no lock).

    gunicorn sends a retiring worker SIGTERM again on each turn of its arbiter's loop (TTOU, HUP),
    microseconds apart; a handler interrupts the main thread between any two bytecodes, its own run
    included.  A ``threading.Event`` here deadlocked the main thread: the second ``set()`` waited
    for the lock the interrupted first one held, so ``close()`` never ran and the arbiter killed the
    worker at its timeout.
    """

    woken = False

    def __init__(self, close: Callable[[], object]):
        self.close = close
        self._read_end, self._write_end = os.pipe()
        os.set_blocking(self._write_end, False)  # a full pipe already holds a wake-up: never wait
        self.thread = threading.Thread(target=self._run, name="mcp_ref-close-on-stop", daemon=True)
        self.thread.start()

    def __call__(self) -> None:
        """Wake the thread that closes the app (safe in a signal handler, and to call again)."""
        self.woken = True
        try:
            os.write(self._write_end, b"!")
        except OSError:  # full (BlockingIOError: a byte already waits)
            pass

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for ``close()`` to end (never from a signal handler)."""
        self.thread.join(timeout)

    def _run(self) -> None:
        while not self.woken:
            os.read(self._read_end, 1)  # blocked with the GIL released: the handler runs meanwhile
        try:
            self.close()
        except Exception:  # the worker stops anyway: say why its streams may not have ended
            log.exception("closing the app at the worker's stop failed")


def _chained(wake: Callable[[], None], previous: Any) -> Callable[[int, Any], None]:
    """A handler that wakes the closer (no lock taken: see :class:`StopCloser`), then does what
    ``previous`` did."""

    def handler(number: int, frame: Any) -> None:
        wake()
        if callable(previous):
            previous(number, frame)
        elif previous == signal.SIG_DFL:  # the default action (termination), as if never caught
            signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)

    return handler
