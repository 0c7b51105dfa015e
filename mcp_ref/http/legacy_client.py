"""The 2024-11-05 HTTP+SSE transport, client side: one GET stream, POSTs to the endpoint it names.

The client GETs an SSE stream whose first event, ``endpoint``, names the URL to POST every message
to; every answer comes on the stream (:meth:`LegacySseClient.start_legacy`).  Streamable HTTP falls
back to it when a server answers the initialize POST with 400, 404 or 405 (2025-11-25
basic/transports §Backwards Compatibility).  A part of
:class:`~mcp_ref.http.client.HttpClientTransport`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urljoin, urlsplit

from ..errors import AuthorizationError
from .bounded_reads import (
    LEGACY_STREAM,
    Cursor,
    HttpTransportError,
    Inbox,
    RequestFailed,
    abort,
    discard_body,
    watching,
)
from .not_reached import (
    advice,
    content_kind,
    elsewhere,
    no_answer_within,
    not_mcp,
    refusal_of_mcp,
    shown,
    unreachable,
)
from .notices import MAX_RESENDS, retry_after
from .origins import CrossOriginRefused, same_origin

if TYPE_CHECKING:
    from ..jsonrpc import Request
    from ..session import OutgoingRequests

log = logging.getLogger(__name__)


class LegacySseClient:
    """The HTTP+SSE part of :class:`~mcp_ref.http.client.HttpClientTransport`."""

    if TYPE_CHECKING:  # the transport's, which this class is a part of
        url: str
        mode: str
        http: Any
        connect_timeout: float
        legacy_endpoint: str | None
        _incoming: Inbox
        _closed: threading.Event
        _requests: OutgoingRequests | None

        def _events(
            self, response, cursor: Cursor | None = None, *, strict: bool = False
        ) -> Iterator[Any]: ...

        def _post_request(self, data: bytes, request: Request, legacy: bool = False) -> Any: ...

        def _fail(self, request_id, message: str, status: int | None = None) -> None: ...

    def start_legacy(self, timeout: float | None = None) -> None:
        """Connect with the 2024-11-05 HTTP+SSE transport: GET the SSE stream at ``url`` and wait
        (``timeout`` seconds, default ``connect_timeout``) for its ``endpoint`` event (the URL to
        POST to).  Done by itself in ``"auto"`` mode on fallback; call it before the first message
        in ``"sse"`` mode.

        No server there raises :class:`~mcp_ref.errors.ServerUnreachable`, naming what was tried:
        nothing answered, or the GET was answered with an HTTP error (but a 401, 403 or 429:
        :class:`HttpTransportError`), with something else than an SSE stream, or with a stream
        that named no endpoint in time.  An ``endpoint`` the client refuses
        (:meth:`_checked_endpoint`) raises :class:`~mcp_ref.http.origins.CrossOriginRefused`
        (another origin) or :class:`HttpTransportError` (user credentials in its URL).  Through
        ``Client.http`` these are raised as they are here, in ``"auto"`` mode too
        (:meth:`_fall_back`)."""
        timeout = self.connect_timeout if timeout is None else timeout
        ready = threading.Event()
        failure: list = []
        answered: list[int] = []  # the GET's HTTP status, once it has one
        fallback = self.mode == "auto"  # the initialize POST was answered 400, 404 or 405
        tried = "a Streamable HTTP POST and an HTTP+SSE GET" if fallback else "an HTTP+SSE GET"

        def run() -> None:
            # Watched (as a request's POST is): close() shuts the GET's socket down even while it
            # waits for headers that never come (no read timeout bounds a stream); start_legacy has
            # given up on it by then, and its thread and connection would otherwise stay for ever.
            with watching(self, LEGACY_STREAM):
                listen()

        def listen() -> None:
            import requests

            response = None
            try:
                response = self.http.get(
                    self.url,
                    headers={"Accept": "text/event-stream"},
                    stream=True,
                    timeout=(self.connect_timeout, None),
                )
                answered.append(response.status_code)
                if not response.ok:
                    failure.append(self._refused(response, fallback))
                    response.close()
                    return
                content_type = response.headers.get("Content-Type", "").split(";")[0].strip()
                if content_type.lower() != "text/event-stream":
                    answer = content_kind(content_type)
                    hint = elsewhere(self.url, "/mcp" if fallback else "/sse")
                    failure.append(not_mcp(self.url, response.status_code, answer, tried, hint))
                    response.close()
                    return
                for event in self._events(response):
                    if event.event == "endpoint":
                        self.legacy_endpoint = self._checked_endpoint(event.data)
                        ready.set()
                    elif event.event in ("message", None, "") and event.data:
                        if not self._incoming.put_streamed(event.data.encode("utf-8")):
                            return  # closed while it waited for room
            except requests.RequestException as exc:
                failure.append(unreachable(self.url, exc, self.connect_timeout))
            except (AuthorizationError, HttpTransportError, CrossOriginRefused) as exc:
                if self.legacy_endpoint is not None:
                    log.warning("the HTTP+SSE connection to %s ends: %s", shown(self.url), exc)
                if response is not None:
                    # the stream ends now, not when the exception's frames are collected
                    abort(response)
                failure.append(exc.with_traceback(None))
            finally:
                ready.set()
                if self.legacy_endpoint is not None and not self._closed.is_set():
                    self._incoming.put(None)  # the stream is the connection: it ended

        self.mode = "sse"
        threading.Thread(target=run, name="mcp-sse-listen", daemon=True).start()
        ready.wait(timeout)
        if failure:
            raise failure[0]
        if self.legacy_endpoint is None and not answered:
            raise no_answer_within(self.url, timeout)  # still connecting, or no headers yet
        if self.legacy_endpoint is None:
            raise not_mcp(
                self.url,
                answered[0],
                f"an SSE stream that named no endpoint within {timeout:g} s",
                tried,
                "an HTTP+SSE server names the URL to POST to at once: check the URL",
            )

    def _fall_back(self, data: bytes, request: Request) -> None:
        """``"auto"`` mode, the initialize POST answered 400, 404 or 405: connect with HTTP+SSE
        (:meth:`start_legacy`) and send ``request`` (the initialize) there; its answer comes on the
        new SSE stream.  On a worker (``_work``).

        What :meth:`start_legacy` raises fails the request as itself, as with ``"sse"`` mode: an
        :class:`HttpTransportError` (a 401, 403 or 429 to the GET, an ``endpoint`` with user
        credentials in its URL) is not turned into a JSON-RPC error (-32603) made of its text."""
        try:
            self.start_legacy()
        except HttpTransportError as exc:
            self._incoming.put(RequestFailed(request.id, exc.with_traceback(None)))
            return
        self._send_legacy(data, request)

    def _send_legacy(self, data: bytes, request: Request) -> None:
        """POST ``request`` to the 2024-11-05 endpoint (on a worker: ``_work``); its answer comes
        on the SSE stream, the POST's reply only says "Accepted".

        Refused 503 with ``Retry-After``, it is sent again after that pause (RFC 9110 §15.6.4: the
        server "MAY send a Retry-After header field (Section 10.2.3) to suggest an appropriate
        amount of time for the client to wait before retrying the request"), as a notice refused
        so is (:mod:`~mcp_ref.http.notices`): at most
        :data:`~mcp_ref.http.notices.MAX_RESENDS` times, and only when the pause ends before the
        request's deadline.  mcp_ref's own server refuses so a message for a shared session whose
        stream's worker it cannot reach now, and has not run it
        (:meth:`~mcp_ref.http.server.shared.SharedSessions.forward_legacy`).  Otherwise, and for
        any other HTTP error, the request fails at once.  Cancelled or closed during a pause, it
        is not sent again (``_post_request`` raises ``GivenUp``)."""
        resends = 0
        while True:
            response = self._post_request(data, request, legacy=True)
            discard_body(response)
            if response.ok:
                return
            pause = retry_after(response) if response.status_code == 503 else None
            if pause is None or resends >= MAX_RESENDS or not self._ends_in_time(request, pause):
                break
            resends += 1
            log.debug("%s refused 503: sent again in %g s", request.method, pause)
            self._closed.wait(pause)
        where = shown(cast(str, self.legacy_endpoint))  # its query may hold the session
        failure = f"HTTP {response.status_code} {response.reason} from {where}"
        self._fail(request.id, failure, response.status_code)

    def _ends_in_time(self, request: Request, pause: float) -> bool:
        """Whether a pause of ``pause`` seconds ends before the session stops waiting for
        ``request`` (no deadline: it does)."""
        deadline = self._requests.request_deadline(request.id) if self._requests else None
        return deadline is None or time.monotonic() + pause < deadline

    def _refused(self, response, fallback: bool) -> Exception:
        """The error of a GET for the SSE stream answered with an HTTP error, saying what to do
        about a 404 or a 401 (:func:`~mcp_ref.http.not_reached.advice`): ServerUnreachable but
        for MCP's own refusals (401, 403, 429: :class:`HttpTransportError`)."""
        tried = "a Streamable HTTP POST and an HTTP+SSE GET" if fallback else "an HTTP+SSE GET"
        status = response.status_code
        hint = advice(
            status,
            self.url,
            response.headers,
            usual="/mcp" if fallback else "/sse",
            credentials=self._credentials(),
        )
        if not refusal_of_mcp(status, False):
            return not_mcp(self.url, status, f"HTTP {status} {response.reason}", tried, hint)
        error = HttpTransportError(
            f"HTTP {response.status_code} {response.reason} from {shown(self.url)} "
            f"(to {tried}){'. ' + hint if hint else ''}"
        )
        error.status = response.status_code
        return error

    def _credentials(self) -> bool:
        """Whether this client sends credentials of its own: an ``auth`` hook or an Authorization
        header (the transport's, as every part of it asks)."""
        return self.http.auth is not None or "Authorization" in self.http.headers

    def _checked_endpoint(self, data: str) -> str:
        """The URL an ``endpoint`` event names, resolved against ``url``; refused unless it is on the
        origin of ``url`` and carries no credentials of its own.

        Every message and the caller's headers (an ``Authorization`` among them) go to this URL, so
        a server must not be able to send them elsewhere; the official SDKs refuse it too.
        """
        endpoint = urljoin(self.url, data.strip())
        if not same_origin(endpoint, self.url):
            raise CrossOriginRefused("the HTTP+SSE endpoint event", self.url, endpoint)
        if "@" in urlsplit(endpoint).netloc:
            raise HttpTransportError(
                f"the HTTP+SSE endpoint event from {shown(self.url)} names a URL with user "
                "credentials in it; refused"
            )
        return endpoint
