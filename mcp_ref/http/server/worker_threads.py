"""The share of a WSGI worker's threads that long-lived streams may hold (:class:`StreamShare`).

Under a WSGI server with a fixed pool of request threads (gunicorn's ``gthread`` worker, a2wsgi's
pool), each open stream (a handshake-era GET, a 2024-11-05 session, a 2026-07-28
``subscriptions/listen``) holds one of them until it ends.  A client that opened as many streams
as the worker has threads held all of them: every other request waited, the site around a mounted
app (a Django or Flask view) included.  So when the threads are known, the streams of an app are
bounded to :data:`STREAM_SHARE` of them, and one past that is refused with 503 and ``Retry-After``.

The threads are known from ``McpWsgiApp(worker_threads=...)``, or from the WSGI server itself:
``mcp_ref.http.gunicorn_hooks`` tells this module gunicorn's ``--threads`` when a gthread
worker starts (:func:`set_server_threads`).  mcp_ref's own server (``Server.run_http``) has a
thread per connection and a connection cap of its own, so it sets nothing here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import LIMIT_EXCEEDED
from .shares import ClientCounts
from .status import ServiceUnavailable

#: The share of the worker's threads that an app's long-lived streams may hold together: the other
#: half stays free for requests (the app's own calls, and the rest of a site that mounts it).
STREAM_SHARE = 0.5

#: The request threads of the WSGI server in this process, when it said so (None: not known).
_server_threads: int | None = None


def set_server_threads(count: int | None) -> None:
    """Say how many threads this process's WSGI server serves requests on (gunicorn's hooks do)."""
    global _server_threads
    _server_threads = count


def server_threads() -> int | None:
    """The request threads this process's WSGI server said it has, or None."""
    return _server_threads


def share_of(threads: int) -> int:
    """The long-lived streams ``threads`` request threads may carry: :data:`STREAM_SHARE` of
    them, at least one."""
    return max(1, int(threads * STREAM_SHARE))


class StreamShare:
    """The long-lived streams of one app, bounded when the worker's threads are known.

    ``max_streams``: an explicit bound (None: :func:`share_of` the threads); ``worker_threads``:
    the threads, when the app was told (None: :func:`server_threads`, read at each stream, since
    gunicorn's hooks run after the app is made).  Neither known: no bound here.
    """

    def __init__(self, max_streams: int | None = None, worker_threads: int | None = None):
        self.max_streams = max_streams
        self.worker_threads = worker_threads
        self._held = ClientCounts()  # one count: every client's streams together

    def limit(self) -> tuple[int | None, int | None]:
        """``(bound, threads)``: the streams allowed (None: no bound), the threads it comes from."""
        threads = self.worker_threads if self.worker_threads is not None else server_threads()
        if self.max_streams is not None:
            return self.max_streams, threads
        return (None if threads is None else share_of(threads)), threads

    def hold(self, request_id: Any = None) -> Callable[[], None]:
        """Count one stream; returns its release (idempotent).  Past the bound: 503 Service
        Unavailable with ``Retry-After`` (RFC 9110 §15.6.4: the server cannot handle the request
        now, "due to a temporary overload") and a JSON-RPC error -31005 with ``data.limit``; for a
        2026-07-28 ``subscriptions/listen``, the error answers its request id."""
        bound, threads = self.limit()
        release = self._held.hold("streams", bound)
        if release is None:
            why = (
                "max_streams"
                if self.max_streams is not None
                else f"half of this worker's {threads} threads"
            )
            raise ServiceUnavailable(
                f"Service Unavailable: this server holds as many long-lived streams as it "
                f"may ({bound}: {why}, so that other requests keep threads to run on); "
                "retry later",
                LIMIT_EXCEEDED,
                headers=[("Retry-After", "5")],
                request_id=request_id,
                data={"limit": bound},
            )
        return release
