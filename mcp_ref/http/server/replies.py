"""How an answer reaches its client: the SSE events of a stream, the response of a POST whose
handler runs on its own thread (:class:`DirectReply`), the body of a long-lived stream
(:class:`HeldStream`), and the small helpers of WSGI answers (Accept, header names).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol

from ... import lifecycle
from ..sse import sse_event
from .http_session import HttpSession
from .streams import Stream

log = logging.getLogger(__name__)


class ReplyOwner(Protocol):
    """What a reply asks of its application (``McpWsgiApp``)."""

    json_response: bool | None
    retry_ms: int


SSE_HEADERS = [
    ("Content-Type", "text/event-stream"),
    ("Cache-Control", "no-cache, no-transform"),
    ("X-Accel-Buffering", "no"),
]


def priming_event(app: ReplyOwner, session: HttpSession, stream: Stream) -> bytes:
    """2025-11-25 basic/transports: the server "SHOULD immediately send an SSE event consisting
    of an event ID and an empty data field in order to prime the client to reconnect"."""
    if session.kind == "stateless" or not lifecycle.at_least(session.version, lifecycle.ICONS):
        return b""
    return retry_event(app, session, stream.id)


def retry_event(app: ReplyOwner, session: HttpSession, stream_id: str) -> bytes:
    """An event of ``stream_id`` with an id, no data and the ``retry`` hint, kept in the event
    store: where its client resumes from, and how soon (a priming event; the last event before a
    connection is closed for SSE polling)."""
    return sse_event(event_id=session.store_event(stream_id, b""), retry=app.retry_ms)


def message_event(app: ReplyOwner, session: HttpSession, stream: Stream, data: bytes) -> bytes:
    """One message as an SSE event, kept in the event store (stateless streams cannot be resumed)."""
    if session.kind == "stateless":
        return sse_event(data)
    return sse_event(data, event_id=session.store_event(stream.id, data))


def on_client_gone(environ: dict | None, callback: Callable[[], None]) -> None:
    """Have ``callback()`` called if the client closes the connection while the response runs,
    when the WSGI server can tell (its ``mcp_ref.on_disconnect``; see :mod:`.peers` for gunicorn);
    otherwise a gone client is noticed at the response's next write."""
    hook = None if environ is None else environ.get("mcp_ref.on_disconnect")
    if hook is not None:
        hook(callback)


class InlineReply:
    """The response of a POST whose handler runs on the POST's thread: the answer alone is a JSON
    reply, sent by :meth:`finish` once the handler returns; a message before it makes the response
    an SSE stream, written as the handler goes (``write_sse``)."""

    answer: bytes | None = None
    #: The WSGI write callable, once streaming.
    write_sse: Callable[[bytes], object] | None = None
    #: Of a JSON answer; a 2026-07-28 error answer sets its own (modern_status).
    status = "200 OK"
    #: ``done``: finish() was called, the response belongs to the WSGI server now; ``broken``:
    #: its client has gone (or, inline, resumed elsewhere).
    done = broken = False

    def __init__(self, app: ReplyOwner, start_response):
        self.app = app
        self.start_response = start_response
        self.lock = threading.Lock()

    def finish(self) -> list:
        """The WSGI body once the handler has returned."""
        with self.lock:
            self.done = True
            if self.write_sse is not None:
                return []  # streamed, answer included
            return json_body(self.start_response, self.status, self.answer)

    def client_gone(self) -> None:
        """The client closed the connection while the handler runs (the WSGI server noticed it;
        called from its watchdog thread, so nothing here blocks or takes ``self.lock``, which a
        write holds): as when a write fails (:meth:`lost`), unless the response is over."""
        if not (self.done or self.broken):
            self.lost("its client closed the connection")

    def lost(self, why: object) -> None:
        """Its client has gone (``why``: how that was noticed); each reply says what follows."""
        raise NotImplementedError


class DirectReply(InlineReply):
    """The response of a POST whose handler runs inline (see ``StreamableHttp.answer_inline``)."""

    def __init__(self, app: ReplyOwner, session: HttpSession, stream: Stream, start_response):
        super().__init__(app, start_response)
        self.session, self.stream = session, stream

    def send(self, data: bytes, end: bool) -> bool:
        """Deliver one message of the stream; False once the client has gone or resumed
        elsewhere (the message is then queued for the resuming GET instead)."""
        with self.lock:
            # atomic with a resuming GET's take-over (see StreamableHttp.get)
            with self.stream.cond:
                if self.done:
                    return False  # late: a thread the handler started; never write into a finished response
                if self.broken or self.stream.consumer is not None:
                    self.broken = True
                    return False
                chunk = b""
                if self.write_sse is None:
                    if end and self.app.json_response is not False:
                        self.answer = data  # the answer alone: a JSON reply, sent by finish()
                        return True
                    self.write_sse = self.start_response("200 OK", SSE_HEADERS)
                    chunk = priming_event(self.app, self.session, self.stream)
                chunk += message_event(self.app, self.session, self.stream, data)
                if end and self.session.shared:
                    # after its answer: a follower elsewhere stops there
                    self.session.mark_end(self.stream)
            try:
                self.write_sse(chunk)
            except Exception as exc:  # the client went away; the event is in the store
                self.lost(exc)
            return True

    def lost(self, why: object) -> None:
        """Its client has gone: what follows is queued for a resuming GET (basic/transports:
        "Disconnection SHOULD NOT be interpreted as the client cancelling its request");
        stateless, nothing can resume it, so the handler is cancelled (``settle``)."""
        log.debug("POST stream %s: %s", self.stream.id, why)
        self.broken = True
        self.stream.orphan()
        if self.session.kind == "stateless":
            self.session.settle(self.stream)

    def close_connection(self) -> None:
        """SSE polling while the handler runs inline: send an event with ``retry``, then stop
        using this response; what follows is queued for the client's resuming GET.  (The
        response itself ends when the handler returns: a running WSGI call cannot end it.)"""
        with self.lock:
            with self.stream.cond:
                if self.broken:
                    return
                self.broken = True
                # under its lock: queued from here on, for the resuming GET
                self.stream.orphaned = True
                if self.write_sse is None:
                    self.write_sse = self.start_response("200 OK", SSE_HEADERS)
                # SSE polling is for stateful streams only (close_stream): the session has an id
                chunk = retry_event(self.app, self.session, self.stream.id)
            try:
                self.write_sse(chunk)
            except Exception:  # already gone: the client resumes all the same
                pass


def json_body(start_response: Callable, status: str, answer: bytes | None) -> list:
    """The WSGI body of a POST answered at once: ``answer`` (JSON) with ``status``, or 202 and no
    body when there is none (a request cancelled, so no answer is sent; only notifications and
    answers were POSTed)."""
    if answer is None:
        start_response("202 Accepted", [("Content-Length", "0")])
        return [b""]
    start_response(
        status, [("Content-Type", "application/json"), ("Content-Length", str(len(answer)))]
    )
    return [answer]


class HeldStream:
    """The WSGI body of a long-lived stream: when the response ends (PEP 3333: the server calls
    ``close``, started or not), its client's count is released and ``cleanup`` runs."""

    def __init__(
        self, body, release: Callable[[], None], cleanup: Callable[[], None] | None = None
    ):
        self.body, self.release, self.cleanup = body, release, cleanup

    def __iter__(self):
        """The body's chunks."""
        return iter(self.body)

    def close(self) -> None:
        """The response has ended: close the body, clean up, release the client's count."""
        try:
            close = getattr(self.body, "close", None)
            if close is not None:
                close()
            if self.cleanup is not None:
                self.cleanup()
        finally:
            self.release()


def held(body, release: Callable[[], None], cleanup: Callable[[], None] | None = None):
    """``body`` as a long-lived stream's (see :class:`HeldStream`); a finished answer releases at once."""
    if isinstance(body, list):
        release()
        return body
    return HeldStream(body, release, cleanup)


def nothing() -> None:
    """Nothing to release."""


def close_for_polling(stream: Stream) -> Callable[[object], None]:
    """How a GET stream is ended to make room: a ``retry`` event, then the connection closes;
    the stream goes on for the client's next GET (2025-11-25 basic/transports §Listening)."""
    return lambda token: stream.leave(token, close=True)


#: How many Accept (and, per application, Host) values are remembered with their verdicts:
#: clients send the same ones on every request; past the bound, new ones are judged each time.
VERDICTS_KEPT = 256
_ACCEPT_VERDICTS: dict[str, bool] = {}


def accepts_json_and_sse(accept: str) -> bool:
    """The Accept header of a POST lists both application/json and text/event-stream."""
    verdict = _ACCEPT_VERDICTS.get(accept)
    if verdict is None:
        verdict = accepts(accept, "application/json") and accepts(accept, "text/event-stream")
        if len(_ACCEPT_VERDICTS) < VERDICTS_KEPT:
            _ACCEPT_VERDICTS[accept] = verdict
    return verdict


def accepts(accept: str, media_type: str) -> bool:
    """The Accept header lists ``media_type`` (or a wildcard covering it)."""
    kind = media_type.split("/")[0]
    for part in accept.split(","):
        value = part.split(";")[0].strip().lower()
        if value in (media_type, f"{kind}/*", "*/*"):
            return True
    return False
