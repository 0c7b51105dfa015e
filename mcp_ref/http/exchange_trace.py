"""What the HTTP client transport reports to an observer: each request, response and SSE event.

``Client.http(url, http_trace=observer)`` (and ``HttpClientTransport(..., http_trace=...)``,
both eras and the 2024-11-05 HTTP+SSE transport) calls ``observer(seen)`` on the transport's own
threads with one of three frozen dataclasses:

- :class:`HttpRequestSeen` before each HTTP request goes out (the POSTs, the GET streams and
  their resumptions with ``Last-Event-ID``, the DELETE at close, the 2024-11-05 ``GET`` of the
  SSE endpoint and its POSTs), with the headers as sent (the auth hook's included);
- :class:`HttpResponseSeen` once per response: for an SSE stream as soon as its head arrives
  (``body`` None: its events follow), for any other when its body has been read (JSON, an
  error's text; None when the transport did not read it, e.g. past ``max_message_size``);
- :class:`SseEventSeen` for each event of a stream, as parsed.

``exchange`` numbers one request and its response within the transport (1, 2, ...).  Values are
raw, secrets included: an observer that shows them masks them (``mcp_ref.inspector.masking``).
An observer that raises is logged once and ignored: it never breaks the transport.  Without an
observer nothing here runs.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

#: Header pairs, in the order sent or received: ((name, value), ...).
Headers = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class HttpRequestSeen:
    """One HTTP request, as it goes out: method, URL, headers and body (None: no body)."""

    exchange: int
    method: str
    url: str
    headers: Headers
    body: bytes | None


@dataclass(frozen=True)
class HttpResponseSeen:
    """The response of ``exchange``: status line, headers, and the body as read (None: an SSE
    stream, whose events are reported one by one, or a body the transport did not read)."""

    exchange: int
    status: int
    reason: str
    headers: Headers
    body: bytes | None


@dataclass(frozen=True)
class SseEventSeen:
    """One server-sent event of ``exchange``'s stream: its id, event type, data and retry."""

    exchange: int
    event_id: str | None
    event: str
    data: str
    retry: int | None


#: What an observer is called with.
Seen = HttpRequestSeen | HttpResponseSeen | SseEventSeen


class ExchangeTracer:
    """Reports one transport's HTTP traffic to ``observer``: numbers the exchanges, and keeps a
    failing observer from reaching the transport (logged once, then ignored).

    :meth:`install` puts it between a ``requests.Session`` and its adapters: every request (a
    redirect's, an auth hook's retry) is reported before it goes, and its response's head when it comes; the
    transport reports the body it reads (:func:`body_read`) and each SSE event (:meth:`event`).
    """

    def __init__(self, observer: Callable[[Seen], Any]):
        self.observer = observer
        self._numbers = itertools.count(1)
        self._failed = False
        self._lock = threading.Lock()

    def report(self, seen: Seen) -> None:
        """Call the observer; what it raises is logged once and otherwise ignored."""
        try:
            self.observer(seen)
        except Exception:
            with self._lock:
                first, self._failed = not self._failed, True
            if first:
                log.exception("the http_trace observer failed; its failures are ignored")

    def install(self, session: Any) -> None:
        """Wrap the ``send`` of each transport adapter mounted on ``session`` (a
        ``requests.Session``), so that each request is reported as it goes on the wire: a
        redirect's, and one an auth hook sends again from its response hook (``OAuth``'s retry
        with a new token goes through ``response.connection``, the adapter, never the session's
        ``send``), with the 401 it answers."""
        adapters = {id(adapter): adapter for adapter in session.adapters.values()}
        for adapter in adapters.values():
            adapter.send = self._traced(adapter.send)

    def _traced(self, send: Callable[..., Any]) -> Callable[..., Any]:
        """``send`` (an adapter's), reporting the request before it goes and its response's head."""

        def traced_send(request, **kwargs):
            exchange = next(self._numbers)
            body = request.body
            if isinstance(body, str):
                body = body.encode("utf-8")
            self.report(
                HttpRequestSeen(
                    exchange,
                    str(request.method),
                    str(request.url),
                    tuple((str(k), str(v)) for k, v in request.headers.items()),
                    body if isinstance(body, bytes) else None,
                )
            )
            response = send(request, **kwargs)
            self._head(exchange, response)
            return response

        return traced_send

    def _head(self, exchange: int, response: Any) -> None:
        """A response's head: reported now for an SSE stream or a redirect (whose body nobody
        reads), else when ``read_body`` reads its body or it is closed unread."""
        headers = tuple((str(k), str(v)) for k, v in response.headers.items())
        content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        seen = HttpResponseSeen(
            exchange, response.status_code, str(response.reason or ""), headers, None
        )
        response.mcp_exchange = exchange
        if content_type == "text/event-stream" or response.is_redirect:
            self.report(seen)
            return
        reported = [False]

        def report_body(body: bytes | None) -> None:
            if not reported[0]:
                reported[0] = True
                self.report(
                    HttpResponseSeen(seen.exchange, seen.status, seen.reason, headers, body)
                )

        response.mcp_report_body = report_body  # read_body reports the body it read
        close = response.close

        def close_reported() -> None:  # a response closed unread: its head, no body
            report_body(None)
            close()

        response.close = close_reported

    def event(self, response: Any, event: Any) -> None:
        """One event of ``response``'s stream (an :class:`~mcp_ref.http.sse.SseEvent`)."""
        self.report(
            SseEventSeen(
                getattr(response, "mcp_exchange", 0),
                event.id,
                event.event or "message",
                event.data,
                event.retry,
            )
        )
