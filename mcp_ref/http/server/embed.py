"""Run the WSGI application from inside another framework's view (:func:`call_wsgi`): a Django or
Flask view that mounts it under a prefix, with the framework's user in the environ.

A view returns a response object; the application answers through ``start_response``, the WSGI
``write`` callable (an inline handler streams its SSE events through it, PEP 3333 §The
write() Callable) and its body iterable, and may wait on the client meanwhile (an elicitation on
the POST's stream).  So it runs on a thread of its own, and what it sends is handed to the view's
streaming response as it comes: the headers as soon as ``start_response`` is called, then each
chunk.  See spec_notes/deployment.md §Mounting inside Django or Flask.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

log = logging.getLogger(__name__)

_END = object()


class ClientGone(OSError):
    """The view's response was closed (its client went away): the application's next write fails."""


class WsgiResponse:
    """What the application answered: ``status`` (``"200 OK"``), ``status_code``, ``reason``,
    ``headers`` (a list of pairs), and ``body``, an iterator of byte chunks that ends with the
    application's answer; closing it (the framework does when the client goes) ends the answer."""

    def __init__(self, status: str, headers: list[tuple[str, str]], body: Iterator[bytes]):
        self.status = status
        code, _, reason = status.partition(" ")
        self.status_code = int(code)
        self.reason = reason
        self.headers = headers
        self.body = body


class _Pipe:
    """The chunks between the application's thread and the view's response: at most ``backlog``
    waiting; when full, the application's thread waits for the response to take one (its client
    reads too slowly: the same back-pressure a socket gives), or fails once the response is closed."""

    status: str | None = None
    error: BaseException | None = None
    ended = gone = False

    def __init__(self, backlog: int):
        self.items: deque = deque()
        self.backlog = backlog
        self.cond = threading.Condition()
        self.headers: list[tuple[str, str]] = []

    def put(self, item: Any) -> None:
        with self.cond:
            while len(self.items) >= self.backlog and not self.gone:
                self.cond.wait()
            if self.gone:
                raise ClientGone("the response was closed")
            self.items.append(item)
            self.cond.notify_all()

    def take(self) -> Any:
        with self.cond:
            while not self.items:
                self.cond.wait()  # the application's thread always ends with _END
            item = self.items.popleft()
            self.cond.notify_all()
            return item

    def close(self) -> None:
        with self.cond:
            self.gone = True
            self.items.clear()
            self.cond.notify_all()


def call_wsgi(
    app: Callable, environ: dict, *, backlog: int = 64, thread_name: str = "mcp-embedded"
) -> WsgiResponse:
    """Call the WSGI application ``app`` with ``environ`` on a thread of its own; returns once it
    has called ``start_response``, with the rest of its answer still coming in ``body``.

    ``backlog``: chunks held for a slow client before the application waits.  An exception the
    application raises before answering is raised here; after, it ends the body (and is logged).

    A Django view (the environ is the request's, with the body re-readable and the mount prefix
    moved into ``SCRIPT_NAME``)::

        reply = call_wsgi(mcp_app, environ)
        response = StreamingHttpResponse(reply.body, status=reply.status_code, reason=reply.reason)
        for name, value in reply.headers:
            response[name] = value
    """
    pipe = _Pipe(backlog)

    def start_response(status: str, headers: list, exc_info=None) -> Callable[[bytes], None]:
        with pipe.cond:
            if pipe.status is not None and exc_info is None:
                raise AssertionError("start_response called twice without exc_info (PEP 3333)")
            pipe.status, pipe.headers = status, list(headers)
            pipe.cond.notify_all()
        return write

    def write(data: bytes) -> None:
        if data:
            pipe.put(bytes(data))

    def run() -> None:
        try:
            result = app(environ, start_response)
            try:
                for chunk in result:
                    if chunk:
                        pipe.put(bytes(chunk))
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()  # PEP 3333: always, even when the client went away
        except ClientGone:
            log.debug("embedded WSGI application: its client went away")
        except BaseException as exc:
            with pipe.cond:
                answered = pipe.status is not None
                pipe.error = exc
            if answered:
                log.exception("embedded WSGI application failed after it answered")
        finally:
            with pipe.cond:
                pipe.ended = True
                pipe.items.append(_END)  # past the backlog: the end must always get through
                pipe.cond.notify_all()

    threading.Thread(target=run, name=thread_name, daemon=True).start()
    with pipe.cond:
        while pipe.status is None and not pipe.ended:
            pipe.cond.wait()  # every answer calls start_response, or fails (``ended``)
        if pipe.status is None:
            raise pipe.error or RuntimeError("the WSGI application never answered")
        status, headers = pipe.status, pipe.headers

    def body() -> Iterator[bytes]:
        try:
            while True:
                item = pipe.take()
                if item is _END:
                    return
                yield item
        finally:
            pipe.close()  # closed early (its client went away): the application's next write fails

    return WsgiResponse(status, headers, body())
