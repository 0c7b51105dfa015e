"""The inspector's web application (WSGI) and the server it runs on, for one user on this machine.

Every address is ``http://127.0.0.1:PORT/TOKEN/...``, TOKEN a secret made for this run
(``secrets.token_urlsafe(24)``): a request without it, or with another, is 404 with a plain text
body and nothing else (compared in constant time).  The server listens on 127.0.0.1 only.  A
request's ``Host`` must be ``127.0.0.1:PORT`` or ``localhost:PORT`` (421 otherwise: a page of
another site reached through a re-bound name is not served); a request carrying ``Origin`` must
come from this very address (403); a POST must carry that ``Origin`` and a JSON body
(``Content-Type: application/json``; 415 otherwise), at most :data:`MAX_BODY` bytes (413).  Every
response carries :data:`SECURITY_HEADERS`: a Content-Security-Policy that allows only this
address's own scripts and styles (no inline script, nothing from another host, no framing), no
referrer, no MIME sniffing, no caching.

Routes, relative to ``/TOKEN/``: ``./`` (the page), ``./static/NAME`` (:data:`STATIC_FILES`),
``./events`` (server-sent events: the state, the asks waiting (``asks-waiting``: their ids, so
a page that lost its stream drops the ones that ended meanwhile; then each as ``ask``), the
records after ``after`` or ``Last-Event-ID``, then everything live), ``./api/state``, ``./api/records``, ``./api/export.jsonl``,
``./api/export.md`` and the POST routes of :data:`POST_ROUTES` (each a method of
:class:`~mcp_ref.inspector.live.InspectedServer`).  docs/inspector.md describes them.

Bounds: a request body :data:`MAX_BODY`; at most :data:`MAX_STREAMS` event streams at once (503
past it); each stream's queue :data:`STREAM_QUEUE` events weighing at most the conversation's
``max_bytes`` (records, logs and progress alike), and a stream that falls that far behind is
ended (the page reconnects with ``Last-Event-ID`` and catches up from the record).
"""

from __future__ import annotations

import hmac
import json
import logging
import queue
import secrets
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qs

from .conversation import json_text
from .live import InspectedServer, InspectorError

log = logging.getLogger(__name__)

#: The largest request body taken, in bytes (413 past it).
MAX_BODY = 1024 * 1024
#: Event streams open at once (a page holds one); past it, 503.
MAX_STREAMS = 16
#: Events waiting for one stream; a stream that falls this far behind is ended (the page reconnects).
STREAM_QUEUE = 10_000
#: Seconds between the comment lines that keep an idle event stream open.
KEEPALIVE = 15.0
#: Records sent per page while an event stream catches up, and the most ``api/records`` returns.
RECORDS_PAGE = 1000

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "media-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
#: The headers of every response.
SECURITY_HEADERS = (
    ("Content-Security-Policy", CONTENT_SECURITY_POLICY),
    ("Referrer-Policy", "no-referrer"),
    ("X-Content-Type-Options", "nosniff"),
    ("Cache-Control", "no-store"),
)
#: The files of ``static/`` served, and their types (nothing else is read).
STATIC_FILES = {
    "index.html": "text/html; charset=utf-8",
    "inspector.css": "text/css; charset=utf-8",
    "inspector.js": "text/javascript; charset=utf-8",
}
#: The POST routes: ``api/NAME`` -> the :class:`InspectedServer` method answering it.
POST_ROUTES = {
    "connect": "connect_route",
    "list": "list_page",
    "call": "call",
    "cancel": "cancel",
    "read": "read",
    "subscribe": "subscribe",
    "complete": "complete",
    "prompt": "prompt",
    "log-level": "set_log_level",
    "roots": "set_roots",
    "task": "task",
    "answer": "answer",
    "clear": "clear_route",
}
STATUS = {
    200: "200 OK",
    400: "400 Bad Request",
    403: "403 Forbidden",
    404: "404 Not Found",
    405: "405 Method Not Allowed",
    409: "409 Conflict",
    413: "413 Content Too Large",
    415: "415 Unsupported Media Type",
    421: "421 Misdirected Request",
    500: "500 Internal Server Error",
    503: "503 Service Unavailable",
}


class InspectorApp:
    """The WSGI application of one inspector: ``inspected`` (the live connection), ``conversation``
    (the record), ``token`` (the secret of every address; default: a new one).  ``port`` must be
    set to the port served on (the ``Host`` and ``Origin`` checks need it): :func:`serve` does it.
    """

    def __init__(self, inspected: InspectedServer, conversation: Any, token: str | None = None):
        self.inspected = inspected
        self.conversation = conversation
        self.token = token or secrets.token_urlsafe(24)
        self.port: int | None = None
        self._streams: set[EventStream] = set()
        self._lock = threading.Lock()

    def hosts(self) -> tuple[str, ...]:
        """The ``Host`` values served."""
        return (f"127.0.0.1:{self.port}", f"localhost:{self.port}")

    def origins(self) -> tuple[str, ...]:
        """The ``Origin`` values accepted: this address, by either name."""
        return tuple(f"http://{host}" for host in self.hosts())

    def __call__(self, environ: dict, start_response: Callable) -> Any:
        try:
            return self._route(environ, start_response)
        except Exception:  # never a traceback to the page: the log (our terminal) has it
            # the route, not the path: the path holds the token, and a log line is no place for it
            route = str(environ.get("PATH_INFO", "")).lstrip("/").partition("/")[2]
            log.exception("the inspector failed to answer /TOKEN/%s", route)
            return _json(start_response, 500, _error("the inspector failed: see its terminal"))

    def _route(self, environ: dict, start_response: Callable) -> Any:
        if environ.get("HTTP_HOST") not in self.hosts():
            return _text(start_response, 421, "Misdirected Request")
        path = environ.get("PATH_INFO", "")
        token, slash, route = path[1:].partition("/") if path.startswith("/") else ("", "", "")
        if not slash or not hmac.compare_digest(token.encode(), self.token.encode()):
            return _text(start_response, 404, "Not Found")
        origin = environ.get("HTTP_ORIGIN")
        if origin is not None and origin not in self.origins():
            return _text(start_response, 403, "Forbidden: a request from another origin")
        method = environ.get("REQUEST_METHOD")
        if route.startswith("api/") and route[4:] in POST_ROUTES:
            if method != "POST":
                return _text(start_response, 405, "Method Not Allowed", [("Allow", "POST")])
            return self._post(environ, start_response, route[4:])
        if method != "GET":
            return _text(start_response, 405, "Method Not Allowed", [("Allow", "GET")])
        if route == "":
            return self._static(start_response, "index.html")
        if route.startswith("static/"):
            return self._static(start_response, route[len("static/") :])
        if route == "events":
            return self._events(environ, start_response)
        if route == "api/state":
            return _json(start_response, 200, self.inspected.state())
        if route == "api/records":
            return self._records(environ, start_response)
        if route == "api/export.jsonl":
            return _download(
                start_response,
                self.conversation.export_jsonl(),
                "application/jsonl; charset=utf-8",
                "mcp-conversation.jsonl",
            )
        if route == "api/export.md":
            text = self.conversation.mermaid(f"mcp-ref inspect {self.inspected.target}")
            return _download(
                start_response, text, "text/markdown; charset=utf-8", "mcp-conversation.md"
            )
        return _text(start_response, 404, "Not Found")

    def _static(self, start_response: Callable, name: str) -> Any:
        content_type = STATIC_FILES.get(name)
        if content_type is None:
            return _text(start_response, 404, "Not Found")
        from importlib.resources import files

        data = files(__package__).joinpath("static", name).read_bytes()
        start_response(STATUS[200], [("Content-Type", content_type), *SECURITY_HEADERS])
        return [data]

    def _records(self, environ: dict, start_response: Callable) -> Any:
        query = parse_qs(environ.get("QUERY_STRING", ""))
        after = _number(query.get("after", ["0"])[0])
        limit = _number(query.get("limit", [str(RECORDS_PAGE)])[0])
        if after is None or limit is None or limit < 1:
            return _json(start_response, 400, _error("after and limit must be whole numbers"))
        records = self.conversation.records(after=after, limit=min(limit, RECORDS_PAGE))
        last = records[-1]["seq"] if records else after
        return _json(
            start_response,
            200,
            {"records": records, "dropped": self.conversation.dropped, "last": last},
        )

    def _post(self, environ: dict, start_response: Callable, name: str) -> Any:
        # The page's own requests only: a form or a fetch of another site carries its Origin (or,
        # a simple form, no JSON type), and is refused before anything is read.
        if environ.get("HTTP_ORIGIN") not in self.origins():
            return _text(start_response, 403, "Forbidden: a POST must carry this page's Origin")
        content_type = environ.get("CONTENT_TYPE", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            return _text(start_response, 415, "Unsupported Media Type: send application/json")
        length = _number(environ.get("CONTENT_LENGTH") or "0")
        if length is None:
            return _json(start_response, 400, _error("a bad Content-Length"))
        if length > MAX_BODY:
            return _text(start_response, 413, f"Content Too Large: at most {MAX_BODY} bytes")
        try:
            body = json.loads(environ["wsgi.input"].read(length) or b"{}")
        except (ValueError, RecursionError):
            return _json(start_response, 400, _error("the body is not JSON"))
        if not isinstance(body, dict):
            return _json(start_response, 400, _error("the body must be a JSON object"))
        try:
            answer = getattr(self, POST_ROUTES[name], None)
            if answer is None:
                answer = getattr(self.inspected, POST_ROUTES[name])
            return _json(start_response, 200, answer(body))
        except InspectorError as exc:
            return _json(start_response, exc.status, {"error": exc.error})

    def connect_route(self, body: dict) -> dict:
        """``api/connect``: reconnect in ``era`` (without it: the command line's); the state."""
        return self.inspected.connect(body.get("era"))

    def clear_route(self, body: dict) -> dict:
        """``api/clear``: forget the records."""
        self.conversation.clear()
        return {}

    def _events(self, environ: dict, start_response: Callable) -> Any:
        query = parse_qs(environ.get("QUERY_STRING", ""))
        after = _number(environ.get("HTTP_LAST_EVENT_ID") or query.get("after", ["0"])[0])
        if after is None:
            return _json(start_response, 400, _error("after must be a whole number"))
        with self._lock:
            if len(self._streams) >= MAX_STREAMS:
                return _text(start_response, 503, "Service Unavailable: too many open pages")
            stream = EventStream(self, after)
            self._streams.add(stream)
        on_disconnect = environ.get("mcp_ref.on_disconnect")
        if on_disconnect is not None:
            on_disconnect(stream.stop)  # the browser went: the stream ends
        long_lived = environ.get("mcp_ref.long_lived")
        if long_lived is not None:  # a waiting stream: at the server's connection cap, ended first
            long_lived(environ.get("REMOTE_ADDR", "?"), stream.stop)
        start_response(
            STATUS[200],
            [("Content-Type", "text/event-stream; charset=utf-8"), *SECURITY_HEADERS],
        )
        return stream.run()

    def forget(self, stream: EventStream) -> None:
        """A stream has ended."""
        with self._lock:
            self._streams.discard(stream)

    def close(self) -> None:
        """End every event stream."""
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            stream.stop()


class EventStream:
    """One page's ``events`` stream: the state and the pending asks, the records after ``after``,
    then records and events as they come (a bounded queue; a stream that falls behind ends)."""

    def __init__(self, app: InspectorApp, after: int):
        self.app = app
        self.after = after
        self.queue: queue.Queue = queue.Queue(STREAM_QUEUE)
        self.stopped = threading.Event()
        #: What the events waiting in the queue weigh (bytes, as sent): at most the
        #: conversation's ``max_bytes``, as its own subscribers (past it the stream ends).
        self.waiting_bytes = 0
        self._max_bytes = getattr(app.conversation, "max_bytes", None)
        self._bytes_lock = threading.Lock()

    def stop(self) -> None:
        """End the stream (the browser went, or the server stops); never blocks.  No event is
        taken from now on (its listener is removed at once, not when the page's socket ends)."""
        self.stopped.set()
        self.app.inspected.remove_listener(self._on_event)
        try:
            self.queue.put_nowait(None)
        except queue.Full:
            pass  # the stream sees ``stopped`` before its next event

    def _push(self, event: str, encoded: bytes, seq: int | None) -> None:
        """Queue one encoded event, weighed: the events waiting (records, logs, progress alike)
        weigh at most the conversation's ``max_bytes``, as its own subscribers (one alone always
        fits); past it, or past :data:`STREAM_QUEUE` events, the stream ends (the page reconnects
        and catches up from the records).  Nothing is queued once the stream has stopped."""
        if self.stopped.is_set():
            return
        with self._bytes_lock:
            weight = self.waiting_bytes + len(encoded)
            too_heavy = (
                self._max_bytes is not None and self.waiting_bytes > 0 and weight > self._max_bytes
            )
            if not too_heavy:
                self.waiting_bytes = weight
        if too_heavy:
            self.stop()
            return
        try:
            self.queue.put_nowait((event, encoded, seq))
        except queue.Full:
            with self._bytes_lock:
                self.waiting_bytes -= len(encoded)
            self.stop()  # fallen behind: the page reconnects and catches up

    def _on_event(self, event: str, data: dict) -> None:
        if not self.stopped.is_set():
            self._push(event, _event(event, data), None)

    def _pump(self, subscription: Any) -> None:
        """The conversation's new records into the queue, encoded, until the stream stops."""
        while not self.stopped.is_set():
            record = subscription.get(timeout=1.0)
            if record is not None:
                self._push("record", _event("record", record, record["seq"]), record["seq"])
            elif getattr(subscription, "closed", False):
                self.stop()  # fallen behind the conversation: the page reconnects

    def run(self) -> Iterator[bytes]:
        """The stream's bytes."""
        inspected, conversation = self.app.inspected, self.app.conversation
        # listen first, then catch up: nothing falls between the two (duplicates are skipped by seq)
        inspected.add_listener(self._on_event)
        subscription = conversation.subscribe()
        pump = threading.Thread(
            target=self._pump, args=(subscription,), name="inspector-events", daemon=True
        )
        pump.start()
        last = self.after
        try:
            yield _event("state", inspected.state())
            waiting = inspected.pending_asks()
            # the asks waiting now, by id: a page that lost its stream drops those that ended
            # meanwhile (their ask-done went to no page)
            yield _event("asks-waiting", {"asks": [ask["ask"] for ask in waiting]})
            for ask in waiting:
                yield _event("ask", ask)
            while not self.stopped.is_set():
                records = conversation.records(after=last, limit=RECORDS_PAGE)
                if not records:
                    break
                for record in records:
                    last = record["seq"]
                    yield _event("record", record, last)
            while not self.stopped.is_set():
                try:
                    item = self.queue.get(timeout=KEEPALIVE)
                except queue.Empty:
                    yield b": keep-alive\n\n"
                    continue
                if item is None:
                    break
                event, encoded, seq = item
                with self._bytes_lock:
                    self.waiting_bytes -= len(encoded)
                if event == "record":
                    if seq <= last:
                        continue
                    last = seq
                yield encoded
        finally:
            self.stopped.set()
            inspected.remove_listener(self._on_event)
            subscription.close()
            self.app.forget(self)


def _event(event: str, data: Any, event_id: int | None = None) -> bytes:
    """One server-sent event: its data one line of strict JSON (:func:`json_text`), in UTF-8
    (HTML §9.2.5, parsing an event stream: a stream is always decoded as UTF-8)."""
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json_text(data)}\n\n".encode()


def _number(text: str) -> int | None:
    """A whole number >= 0 from a query or header, or None."""
    text = text.strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None


def _error(message: str) -> dict:
    return {"error": {"code": None, "message": message, "data": None}}


def _json(start_response: Callable, status: int, data: Any) -> list[bytes]:
    body = json_text(data).encode()
    start_response(STATUS[status], [("Content-Type", "application/json"), *SECURITY_HEADERS])
    return [body]


def _text(
    start_response: Callable, status: int, text: str, extra: list | None = None
) -> list[bytes]:
    start_response(
        STATUS[status],
        [("Content-Type", "text/plain; charset=utf-8"), *(extra or []), *SECURITY_HEADERS],
    )
    return [text.encode()]


def _download(start_response: Callable, text: str, content_type: str, name: str) -> list[bytes]:
    start_response(
        STATUS[200],
        [
            ("Content-Type", content_type),
            ("Content-Disposition", f'attachment; filename="{name}"'),
            *SECURITY_HEADERS,
        ],
    )
    return [text.encode()]


class InspectorServer:
    """The inspector served: ``url`` (``http://127.0.0.1:PORT/TOKEN/``), ``app``, and
    :meth:`close`.  Made by :func:`serve`."""

    def __init__(self, app: InspectorApp, server: Any, thread: threading.Thread):
        self.app = app
        self.server = server
        self.thread = thread

    @property
    def url(self) -> str:
        """The page's address, with its token."""
        return f"http://127.0.0.1:{self.app.port}/{self.app.token}/"

    def close(self) -> None:
        """Stop serving: the event streams end, the socket closes."""
        self.app.close()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5.0)


def serve(
    inspected: InspectedServer, conversation: Any, *, port: int = 0, token: str | None = None
) -> InspectorServer:
    """Serve the inspector on 127.0.0.1:``port`` (0: a free one) on a thread; returns it running."""
    from ..http.wsgi_server import WsgiRequestHandler, WsgiServer

    class RequestHandler(WsgiRequestHandler):
        """The server's handler, its debug lines (each request line) without the page's token."""

        def log_message(self, format: str, *args) -> None:  # the base class's name
            super().log_message("%s", (format % args).replace(app.token, "TOKEN"))

    app = InspectorApp(inspected, conversation, token)
    server = WsgiServer(("127.0.0.1", port), app, handler=RequestHandler)
    app.port = server.port
    thread = threading.Thread(
        target=server.serve_forever,
        kwargs={"poll_interval": 0.2},
        name="inspector-http",
        daemon=True,
    )
    thread.start()
    return InspectorServer(app, server, thread)
