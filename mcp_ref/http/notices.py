"""What the Streamable HTTP client POSTs with no answer to wait for: notifications, answers to the
server's requests, cancellations, and the session's DELETE at close.

A notification or an answer is POSTed by its caller, in order (the server answers 202, 2025-11-25
basic/transports §Sending Messages); a cancellation by a thread of its own, nobody waiting for it
(:meth:`Notices._tell_cancelled`).  A part of :class:`~mcp_ref.http.client.HttpClientTransport`.

Each POST has a deadline over the whole exchange, its 202 read included (:attr:`Notices.
notice_timeouts`: the client's ``timeout``, and for ``notifications/initialized``, the end of the
handshake, its ``initialize_timeout``), and its socket is watched (:meth:`~mcp_ref.http.in_flight.
InFlight.notice`): a server that never answers, or trickles its answer a byte at a time, holds
the caller until that deadline, no longer (the POST fails: ``OSError``, which the session raises
as :class:`~mcp_ref.errors.ConnectionClosed`), and closing the client ends it at once.

While a new session is being started (a 404), a notification waits for it within that deadline,
as requests do; a 404 to a notice starts a new session, unless the notice was the new session's
own (:meth:`Notices._send_other`); so does a 404 to the GET resuming a request's stream, the request
failing (its answer is lost: :meth:`Notices._resumption_refused`).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from ..errors import AuthorizationError
from ..jsonrpc import ErrorResponse, Response
from ..request import Default
from ..session import DEFAULT_TIMEOUT
from .bounded_reads import carrying, discard_body
from .in_flight import GivenUp
from .not_reached import failed_because, shown

if TYPE_CHECKING:
    from ..jsonrpc import Request
    from .in_flight import InFlight

log = logging.getLogger("mcp_ref.http.client")  # its messages are the transport's

#: Seconds ``close()`` waits for the cancellations queued (those of the session's close) to be
#: sent; the rest are dropped, their requests' sockets shut down.
NOTICES_AT_CLOSE = 2.0
#: Cancellations waiting to be POSTed (:meth:`Notices._tell_cancelled`); past it one is dropped,
#: and its request's stream closed at once.
MAX_WAITING_NOTICES = 64
#: Notices queued behind those waiting to be sent again (:meth:`Notices._send_other`), never
#: refused themselves; past it one is POSTed at once (it may then reach the server first).
MAX_QUEUED_BEHIND = 256
#: Seconds the session's DELETE at close may take in all, connecting included: ``close()`` returns
#: within :data:`NOTICES_AT_CLOSE` and this (and a few milliseconds), whatever the server does.
SESSION_END_TIMEOUT = 5.0
#: Times a notification or an answer refused 503 with ``Retry-After`` is sent again at most (each
#: after its pause, when that is shorter than its deadline).
MAX_RESENDS = 5

#: A number for each notice, to tell them apart in the in-flight table (with what it is).
_numbers = itertools.count()


def notice_timeouts(client_options: dict) -> tuple[float | None, float | None]:
    """:attr:`Notices.notice_timeouts` from the keywords the :class:`~mcp_ref.Client` is made with:
    its ``timeout``, and its ``initialize_timeout`` (default: ``timeout``)."""
    timeout = client_options.get("timeout", DEFAULT_TIMEOUT)
    handshake = client_options.get("initialize_timeout", timeout)
    return timeout, timeout if isinstance(handshake, Default) else handshake


class Notices:
    """The notices part of :class:`~mcp_ref.http.client.HttpClientTransport`."""

    #: Seconds a notice's POST may take in all (None: no bound): any notice's, and that of
    #: ``notifications/initialized``, the handshake's last step (``Client.http`` sets them to the
    #: client's ``timeout`` and ``initialize_timeout``: :func:`notice_timeouts`).
    notice_timeouts: tuple[float | None, float | None] = (DEFAULT_TIMEOUT, DEFAULT_TIMEOUT)

    if TYPE_CHECKING:  # the transport's, which this class is a part of
        url: str
        http: Any
        connect_timeout: float
        session_id: str | None
        in_flight: InFlight
        _closed: threading.Event
        _generation: int
        _renewer: int | None
        _reinitialize: Any
        _session_ready: threading.Event
        _pool: ThreadPoolExecutor
        _notices: ThreadPoolExecutor
        _resends: ThreadPoolExecutor
        _notice_places: threading.BoundedSemaphore
        _resends_lock: threading.Lock
        _resends_waiting: int
        _queued_behind: int
        _follow_ups: set[threading.Thread]

        def _fail(self, request_id, message: str, status: int | None = None) -> None: ...

        def _post(
            self, data: bytes, *, read_timeout: float | None = None, legacy: bool = False
        ) -> Any: ...

        def _target(self, legacy: bool) -> str: ...

        def _headers(self, accept: str = ...) -> dict: ...

        def _renew_session(self, generation: int) -> None: ...

    def _open_notices(self) -> None:
        """Start the thread that POSTs the cancellations, in order, nobody waiting
        (:meth:`_tell_cancelled`), and the one that sends again the notices refused 503, each
        once its pause is over (:meth:`_send_later`), with room for :data:`MAX_WAITING_NOTICES`
        of them.  Two threads: a pause never holds up a cancellation."""
        self._notices = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-http-notice")
        self._resends = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-http-resend")
        self._notice_places = threading.BoundedSemaphore(MAX_WAITING_NOTICES)  # one a notice
        self._resends_lock = threading.Lock()
        self._resends_waiting = 0  # notices queued to be sent again, not yet sent or dropped
        self._queued_behind = 0  # of those, the ones never refused (MAX_QUEUED_BEHIND)

    def _send_due_notices(self) -> None:
        """At close: the notices due (the cancellations the session's close queued) are sent
        first, for :data:`NOTICES_AT_CLOSE` at most; one waiting for its pause is dropped."""
        try:
            self._notices.submit(log.debug, "the cancellations were sent").result(NOTICES_AT_CLOSE)
        except (FutureTimeout, RuntimeError):  # a server slow to take them; closed already
            log.debug("cancellations left unsent at close")

    def _tell_cancelled(self, data: bytes, request_id, legacy: bool) -> None:
        """POST ``notifications/cancelled`` for ``request_id`` (its ``data``) on the notice thread:
        a server slow to take it holds no caller.  The request's stream is read until the server
        took it (:meth:`_cancelled`).  Past :data:`MAX_WAITING_NOTICES` waiting, the stream is
        closed at once and the notice dropped (logged)."""
        if not self._notice_places.acquire(blocking=False):
            log.warning("%d cancellations wait to be sent: one is dropped", MAX_WAITING_NOTICES)
            self.in_flight.give_up(request_id)
            return
        try:
            self._notices.submit(self._cancelled, data, request_id, legacy)
        except RuntimeError:  # shut down: the transport closed, every stream with it
            pass

    def _cancelled(self, data: bytes, request_id, legacy: bool) -> None:
        """Tell the server ``request_id`` is cancelled, then stop reading its stream: what the
        server sent on it until then (its cancellation of the requests it sent for the request) is
        its last word on it (2025-11-25 basic/transports: disconnecting is not cancelling)."""
        try:
            self._send_other(data, legacy, kind="notifications/cancelled")
        except OSError as exc:
            log.debug("notifications/cancelled could not be sent: %s", failed_because(exc))
        finally:
            self._notice_places.release()
            self.in_flight.give_up(request_id)

    def _send_other(
        self, data: bytes, legacy: bool = False, message: Any = None, kind: str = "notice"
    ) -> None:
        """POST a notification or an answer, ``message`` (``legacy``: to the 2024-11-05 endpoint);
        the reply says only "Accepted".  Within its deadline (:attr:`notice_timeouts`), watched
        under a key of its own, ``(kind, number)``: ``kind`` says what it is (``"notifications/
        cancelled"``: a cancellation, for which an auth hook starts no login).  Refused 503 with
        ``Retry-After``, it is sent again after that pause (:meth:`_send_later`).

        While notices wait to be sent again, one that is not a cancellation is queued behind them
        (sent there at once, its caller not waiting): it must not reach the server before a
        progress notice refused earlier (basic/utilities/progress, "The progress value MUST
        increase with each notification").  Those queued so take none of the places of the
        notices refused and of the cancellations; past :data:`MAX_QUEUED_BEHIND` of them, one is
        POSTed at once."""
        if (
            kind != "notifications/cancelled"
            and self._resends_waiting
            and self._send_later(0.0, data, legacy, message, kind, refused=False)
        ):
            return
        pause = self._post_notice(data, legacy, message, kind, resends=0)
        if pause is not None:
            self._send_later(pause, data, legacy, message, kind)

    def _post_notice(
        self, data: bytes, legacy: bool, message: Any, kind: str, resends: int
    ) -> float | None:
        """:meth:`_send_other`'s POST, once: None when it is done with (accepted, or a 404), else
        the pause the server asked for before it is sent again (a 503 with ``Retry-After``, when
        ``resends``, the times it was sent again already, is under :data:`MAX_RESENDS` and the
        pause is shorter than its deadline)."""
        import requests

        timeout, handshake = self.notice_timeouts
        initialized = getattr(message, "method", None) == "notifications/initialized"
        seconds = handshake if initialized else timeout
        renewing = threading.get_ident() == self._renewer  # the new session's own notice
        # the session it was sent for (read before any wait: a notice that waited for a new
        # session and meets a 404 there starts no other)
        generation = self._generation
        if not (legacy or renewing or self._session_ready.is_set()):
            if initialized:  # the old session's handshake: the new one had its own
                log.debug("the forgotten session's notifications/initialized was dropped")
                return None
            if isinstance(message, (Response, ErrorResponse, list)):
                # An answer does not wait (its sender may be the session's reader, which the new
                # session's initialize needs); one to a request of the forgotten session has
                # nowhere to go before the new session's id is known.
                if not self.session_id:
                    log.debug("an answer to a request of the forgotten session was dropped")
                    return None
            elif not self._session_ready.wait(seconds):
                # A notification waits for the new session as requests do, within its deadline:
                # 2025-11-25 basic/transports §Session Management, the client "MUST include it [the
                # session id] in the MCP-Session-Id header on all of their subsequent HTTP requests"
                raise OSError(f"no new session within {seconds:g} s to send it to")
        sent_with = self.session_id
        target = shown(self._target(legacy))
        key = (kind, next(_numbers))
        try:
            with self.in_flight.notice(key, seconds), carrying(self, key):
                try:
                    response = self._post(data, read_timeout=seconds, legacy=legacy)
                    discard_body(response)  # a 202 has none; whatever a server sends is never kept
                except (requests.RequestException, AuthorizationError) as exc:
                    # its deadline, or a read that waited as long (whichever came first)
                    timed_out = isinstance(exc, requests.ReadTimeout)
                    late = (timed_out or self.in_flight.given_up(key)) and not self._closed.is_set()
                    why = f"no answer within {seconds:g} s" if late else failed_because(exc)
                    raise OSError(f"HTTP request to {target} failed: {why}") from None
        except GivenUp:
            raise OSError("the HTTP transport is closed") from None
        # A 503 with Retry-After (a server that could not hand it on yet, e.g. a worker of a shared
        # session reconnecting): sent again after that pause (RFC 9110 §10.2.3), since no caller
        # waits on it to do so; from the notice thread (the sender may be the session's reader).
        pause = retry_after(response) if response.status_code == 503 else None
        if pause is not None and resends < MAX_RESENDS and (seconds is None or pause < seconds):
            return pause
        if response.status_code == 404 and sent_with and not legacy:
            # 2025-11-25 basic/transports §Session Management: a 404 to a message carrying the
            # session's id means the server forgot it; a new session is started on a worker (the
            # caller may be the session's reader).  The notice is not sent again: it was the old
            # session's (its progress, its request's answer).  But none is started for a new
            # session's own notice (checked here, on the thread that sent it: a server forgetting
            # every new session would get one after the other for ever), nor for a session
            # replaced already.
            log.debug("a notice to a forgotten session was dropped")
            if renewing or generation != self._generation:
                return None
            try:
                self._pool.submit(self._renewed, generation)
            except RuntimeError:  # the transport closed
                pass
        elif not response.ok:
            raise OSError(f"HTTP {response.status_code} {response.reason} from {target}")
        return None

    def _send_later(
        self, pause: float, data: bytes, legacy: bool, message: Any, kind: str, refused: bool = True
    ) -> bool:
        """Send a notice refused 503 again after ``pause`` seconds, on the thread of the notices
        sent again, in the order they were refused, its place one of :data:`MAX_WAITING_NOTICES`
        (none left: it is dropped, logged).  Refused again, it waits its new pause there, in the
        same job, up to :data:`MAX_RESENDS` times: it is never queued again behind the notices
        refused after it.  Every pause is dropped at close.

        Its pauses are waited on that thread, not on the cancellations' (:meth:`_tell_cancelled`):
        a cancellation is not held up by another notice's pause (2025-11-25 basic/utilities/
        cancellation, its receiver "SHOULD: Stop processing the cancelled request", which it
        cannot do before it hears of it).  In the order refused: a progress notice sent again
        reaches the server before a later one of the same request sent again, however often
        either is refused (basic/utilities/progress, "The progress value MUST increase with each
        notification").

        Not ``refused``: a notice queued behind them (:meth:`_send_other`), one of
        :data:`MAX_QUEUED_BEHIND` (none left: False, not queued).  True when it was queued."""
        if refused and not self._notice_places.acquire(blocking=False):
            log.warning(
                "%d notices wait to be sent: a refused %s is dropped", MAX_WAITING_NOTICES, kind
            )
            return False
        with self._resends_lock:
            if not refused and self._queued_behind >= MAX_QUEUED_BEHIND:
                return False
            self._resends_waiting += 1
            self._queued_behind += 0 if refused else 1
        due = time.monotonic() + pause

        def send_again() -> None:
            resends = 0
            sent_at = due
            try:
                while not self._closed.wait(sent_at - time.monotonic()):  # dropped at close
                    resends += 1
                    refused_for = self._post_notice(data, legacy, message, kind, resends)
                    if refused_for is None:
                        return
                    sent_at = time.monotonic() + refused_for
            except OSError as exc:
                log.debug("%s could not be sent again: %s", kind, failed_because(exc))
            finally:
                self._resend_over(refused)

        try:
            self._resends.submit(send_again)
        except RuntimeError:  # shut down: the transport closed
            self._resend_over(refused)
        return True

    def _resend_over(self, refused: bool) -> None:
        """One notice queued to be sent again (``refused``, or queued behind those) was sent, or
        dropped: its place is free."""
        with self._resends_lock:
            self._resends_waiting -= 1
            self._queued_behind -= 0 if refused else 1
        if refused:
            self._notice_places.release()

    def _renewed(self, generation: int) -> bool:
        """:meth:`_renew_session` after a 404 nobody waits on (the GET stream's, a notification's, a
        resumption's: :meth:`_resumption_refused`):
        True once the new session is there; a failure is logged (the next request tries again)."""
        if self._reinitialize is None:
            return False  # no client role to start one
        try:
            self._renew_session(generation)
            return True
        except Exception as exc:
            if not self._closed.is_set():
                log.warning("no new session after a 404: %s", failed_because(exc))
            return False

    def _resumption_refused(self, request: Request, response) -> None:
        """Fail ``request``, whose stream's resumption ``response`` (closed here) refused.  A 404 to
        a GET with our session's id: the session expired on the server, and the answer with it; a
        new session is started first (2025-11-25 basic/transports §Session Management: "When a
        client receives HTTP 404 in response to a request containing an Mcp-Session-Id, it MUST
        start a new session"), unless it is a new session's own request (its ``initialize``,
        what it is asked after it: :meth:`_follow`), as for a POST's 404 (no renewal in a loop)."""
        response.close()
        why = f"resuming the stream failed: HTTP {response.status_code}"
        generation = self._generation  # first, then the id (see _renew_session)
        sent_with = response.request.headers.get("Mcp-Session-Id")
        if response.status_code == 404 and sent_with:
            why += ": the session expired on the server, and the answer with it"
            if (
                sent_with == self.session_id
                and request.method != "initialize"
                and not self._follow_ups
            ):
                self._renewed(generation)
        self._fail(request.id, why)

    def _end_session(self) -> None:
        """DELETE the session at close, within :data:`SESSION_END_TIMEOUT` in all (its socket shut
        down then, however slowly the server answers); only its status line and headers are read,
        the connection closed with its body unread: nothing in it is needed.  Never raises.

        2025-11-25 basic/transports §Session Management: clients "SHOULD send an HTTP DELETE to the
        MCP endpoint with the Mcp-Session-Id header, to explicitly terminate the session"."""
        bound = SESSION_END_TIMEOUT
        key = ("DELETE", next(_numbers))  # an auth hook starts no login for it
        try:
            with self.in_flight.notice(key, bound), carrying(self, key):
                ended = self.http.delete(
                    self.url,
                    headers=self._headers(),
                    stream=True,
                    timeout=(min(self.connect_timeout, bound), bound),
                )
                ended.close()
        except Exception as exc:  # closing must not raise (its text may quote the URL's secret)
            log.debug("DELETE of the session failed: %s", failed_because(exc))


def retry_after(response: Any) -> float | None:
    """The seconds a ``Retry-After`` header asks for (RFC 9110 §10.2.3: a number of seconds; a
    date is not taken), or None."""
    value = response.headers.get("Retry-After", "")
    return float(value) if value.isascii() and value.isdigit() and len(value) < 6 else None
