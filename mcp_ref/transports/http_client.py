"""MCP over HTTP, client side: Streamable HTTP, and the 2024-11-05 HTTP+SSE transport.

The session reads whole messages from :meth:`HttpClientTransport.read`.  Every
source of messages feeds one queue behind it: JSON replies to POSTs, the SSE
streams those POSTs may open, and the standalone GET stream.  Writing a request
POSTs it on a worker thread and returns at once, so the session's timeouts,
progress and cancellation work as they do over stdio.  Notifications and
answers are POSTed by the caller, in order (the server answers 202).

What the spec asks of a client, and where it happens here:

* ``Accept: application/json, text/event-stream`` on every POST; either reply
  type is handled (``_deliver``);
* the ``Mcp-Session-Id`` from the initialize reply, and the
  ``MCP-Protocol-Version`` header, on every later request (``_headers``);
* the standalone GET stream, when the server offers one (``_listen``);
* ``retry`` honoured and ``Last-Event-ID`` sent to resume a dropped or closed
  stream (``_read_stream``);
* HTTP 404 for an established session: a new session is started once,
  transparently, and the request is sent again (``_renew_session``);
* DELETE of the session on close;
* the backwards-compatible fallback: an initialize POST answered 400, 404 or
  405 means an HTTP+SSE server, reached through GET and its ``endpoint`` event.

A request whose ``_meta`` names a protocol version is a 2026-07-28 (modern)
request, and travels as that revision's transport says (``_send_modern``): no
session and no GET stream; the ``MCP-Protocol-Version`` header from its
``_meta``, ``Mcp-Method`` and ``Mcp-Name`` from its body, and ``Mcp-Param-*``
from the arguments its tool's ``x-mcp-header`` declarations name
(:mod:`mcp_ref.transports.http_headers`); a broken response stream is not
resumed but reported (:class:`~mcp_ref.errors.ResponseStreamLost`: the client
re-issues the request); cancelling closes the request's response stream
instead of sending ``notifications/cancelled``, and no other notification is
sent.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable
from urllib.parse import urljoin

from .. import envelope
from ..errors import AuthorizationError, ResponseStreamLost, ServerUnreachable
from ..jsonrpc import Notification, Request
from .base import RequestFailed, RequestHeld, Transport

log = logging.getLogger(__name__)

#: The request a worker thread is sending (so that an auth hook can say it waits for the user).
_sending = threading.local()


def hold_current_request(seconds: float) -> None:
    """Extend the timeout of the request this thread is sending by ``seconds`` (see
    :class:`~mcp_ref.transports.base.RequestHeld`); nothing when this is not a transport's worker."""
    transport, request_id = getattr(_sending, "request", (None, None))
    if transport is not None:
        transport._incoming.put(RequestHeld(request_id, seconds))

DEFAULT_RETRY_MS = 1000
MAX_RESUMES = 10  # attempts to resume one stream before giving up on it


class HttpTransportError(ConnectionError):
    """The HTTP exchange itself failed (the server is unreachable, or answered with an HTTP error)."""


class HttpClientTransport(Transport):
    """A client transport over HTTP.

    ``mode``: ``"auto"`` (Streamable HTTP, falling back to HTTP+SSE),
    ``"streamable"`` or ``"sse"``.  ``headers`` go on every HTTP request;
    ``auth`` is a requests auth hook (e.g. a bearer token).  ``connect_timeout``
    bounds connecting; waiting for answers is governed by the session's
    request timeouts.
    """

    concurrent_writes = True
    mirrors_headers = True

    def __init__(
        self,
        url: str,
        *,
        headers: dict | None = None,
        auth=None,
        mode: str = "auto",
        connect_timeout: float = 10.0,
        max_workers: int = 64,
        verify=True,
    ):
        import requests  # heavy: loaded only for HTTP

        if mode not in ("auto", "streamable", "sse"):
            raise ValueError(f"mode must be 'auto', 'streamable' or 'sse', not {mode!r}")
        self.url = url
        self.mode = mode
        self.http = requests.Session()
        # One keep-alive connection per worker (and the GET stream): urllib3's default pool of 10
        # would drop connections as soon as more requests than that are in flight.
        adapter = requests.adapters.HTTPAdapter(pool_connections=2, pool_maxsize=max_workers + 2)
        self.http.mount("http://", adapter)
        self.http.mount("https://", adapter)
        self.http.headers.update(headers or {})
        self.http.auth = auth
        self.http.verify = verify
        self.connect_timeout = connect_timeout
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._reinitialize: Callable[[], None] | None = None  # see set_reinitialize
        self.legacy_endpoint: str | None = None
        self._incoming: queue.SimpleQueue = queue.SimpleQueue()
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="mcp-http-client")
        self._closed = threading.Event()
        self._renew_lock = threading.Lock()
        self._generation = 0
        self._session_ready = threading.Event()  # cleared while a new session is being started
        self._session_ready.set()
        self._listener: threading.Thread | None = None
        self._open_responses: set = set()
        self._responses_lock = threading.Lock()
        #: 2026-07-28: no session; each request's open response, by id (closing it cancels the request).
        self._stateless = False
        self._input_schema: Callable[[str], dict | None] | None = None
        self._modern_responses: dict = {}

    # -- the Transport protocol ----------------------------------------------------------

    def read(self) -> bytes | None:
        """The next message from any of the streams; None once closed."""
        return self._incoming.get()

    def write(self, data: bytes, message=None, related=None) -> None:
        """POST one message (requests on a worker thread; the rest in order, here)."""
        if self._closed.is_set():
            raise OSError("the HTTP transport is closed")
        if self.mode == "sse" and self.legacy_endpoint is not None:
            self._legacy_post(data)
        elif isinstance(message, Request):
            if envelope.is_modern(message.params):
                self._pool.submit(self._send_modern, data, message)
            else:
                self._pool.submit(self._send_request, data, message)
        elif self._stateless:
            self._modern_notification(message)
        else:
            self._send_other(data)

    def stateless(self, input_schema: Callable[[str], "dict | None"]) -> None:
        """The client speaks 2026-07-28: no session, no GET stream; ``input_schema`` gives the
        ``x-mcp-header`` declarations of a tool's parameters."""
        self._stateless = True
        self._input_schema = input_schema
        if self.mode == "auto":
            self.mode = "streamable"  # no fallback to HTTP+SSE from here on

    def set_reinitialize(self, reinitialize: Callable[[], None]) -> None:
        """The client role's handshake, run again to start a new session after a 404 (``_renew_session``)."""
        self._reinitialize = reinitialize

    def initialized(self, protocol_version: str) -> None:
        """Called by the Client after initialize: remember the version and open the GET stream.

        Waits (at most ``connect_timeout``) until the server has answered the GET,
        so the client is listening before its first request: a message the
        server sends on that stream right away is not raced by the caller.
        """
        self.protocol_version = protocol_version
        if self.mode != "sse" and (self._listener is None or not self._listener.is_alive()):
            answered = threading.Event()
            self._listener = threading.Thread(target=self._listen, args=(answered,), name="mcp-http-listen", daemon=True)
            self._listener.start()
            answered.wait(self.connect_timeout)

    def close(self) -> None:
        """DELETE the session (Streamable HTTP), stop every stream, and end ``read()``."""
        if self._closed.is_set():
            return
        self._closed.set()
        if self.session_id and self.mode != "sse":
            # basic/transports §Session Management: clients "SHOULD send an HTTP DELETE to the
            # MCP endpoint with the Mcp-Session-Id header, to explicitly terminate the session".
            try:
                self.http.delete(self.url, headers=self._headers(), timeout=(self.connect_timeout, 5))
            except Exception:  # noqa: BLE001 - closing must not raise
                log.debug("DELETE of the session failed", exc_info=True)
        with self._responses_lock:
            responses = list(self._open_responses)
        for response in responses:
            _abort(response)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.http.close()
        self._incoming.put(None)

    # -- POST ----------------------------------------------------------------------------

    def _headers(self, accept: str = "application/json, text/event-stream") -> dict:
        headers = {"Accept": accept}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version:
            # 2025-06-18 basic/transports: "the client MUST include the MCP-Protocol-Version:
            # <protocol-version> HTTP header on all subsequent requests to the MCP server".
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def _post(self, data: bytes, *, stream: bool):
        headers = self._headers()
        headers["Content-Type"] = "application/json"
        return self.http.post(self.url, data=data, headers=headers, stream=stream,
                              timeout=(self.connect_timeout, None if stream else 60))

    def _send_request(self, data: bytes, request: Request) -> None:
        import requests

        _sending.request = (self, request.id)
        try:
            if request.method != "initialize" and not self._session_ready.wait(self.connect_timeout * 3):
                raise HttpTransportError("timed out waiting for a new session")
            generation, sent_with = self._generation, self.session_id
            response = self._post(data, stream=True)
            if request.method == "initialize":
                if response.status_code in (400, 404, 405) and self.mode == "auto":
                    # basic/transports §Backwards Compatibility: on such an answer the client
                    # "should assume this is a server supporting the old HTTP+SSE transport".
                    response.close()
                    self.start_legacy()
                    self._legacy_post(data)
                    return
                if response.ok:
                    self.session_id = response.headers.get("Mcp-Session-Id") or self.session_id
                    if self.mode == "auto":
                        self.mode = "streamable"
            elif response.status_code == 404 and sent_with and self._reinitialize is not None:
                response.close()
                self._renew_session(generation)
                response = self._post(data, stream=True)
            self._deliver(response, request)
        except (requests.ConnectionError, requests.exceptions.ConnectTimeout) as exc:
            self._incoming.put(RequestFailed(request.id, unreachable(self.url, exc)))
        except requests.RequestException as exc:
            self._fail(request.id, f"HTTP request to {self.url} failed: {exc}")
        except HttpTransportError as exc:
            self._fail(request.id, str(exc))
        except AuthorizationError as exc:  # the auth hook (mcp_ref.auth.OAuth) could not authorize
            self._incoming.put(RequestFailed(request.id, exc))
        except Exception as exc:  # noqa: BLE001 - a worker must never die silently
            log.exception("HTTP request failed")
            self._fail(request.id, f"HTTP request failed: {exc}")
        finally:
            _sending.request = (None, None)

    def _deliver(self, response, request: Request, *, resumable: bool = True) -> None:
        if response.status_code == 202:
            response.close()  # accepted; no answer on this response (e.g. a cancelled request)
            return
        if not response.ok:
            self._fail_http(request.id, response)
            return
        content_type = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if content_type == "application/json":
            self._incoming.put(response.content)
        elif content_type == "text/event-stream":
            self._read_stream(response, {request.id}, resumable=resumable)
        else:
            response.close()
            self._fail(request.id, f"unexpected Content-Type {content_type!r} in the answer to {request.method}")

    def _send_other(self, data: bytes) -> None:
        import requests

        try:
            response = self._post(data, stream=False)
        except (requests.RequestException, AuthorizationError) as exc:
            raise OSError(f"HTTP request to {self.url} failed: {exc}") from None
        if response.status_code == 404 and self.session_id:
            log.debug("notification for an expired session dropped")
        elif not response.ok:
            raise OSError(f"HTTP {response.status_code} {response.reason} from {self.url}")

    def _renew_session(self, generation: int) -> None:
        """After a 404 for our session: start a new one, once, whoever saw the 404 first.

        2025-11-25 basic/transports §Session Management: "When a client receives HTTP 404 in
        response to a request containing an Mcp-Session-Id, it MUST start a new session by
        sending a new InitializeRequest without a session ID attached."
        """
        with self._renew_lock:
            if generation != self._generation:
                self._session_ready.wait(self.connect_timeout * 3)
                return  # another request already renewed it
            self._generation += 1
            self._session_ready.clear()  # requests wait for the new session instead of failing
            self.session_id = None
            try:
                log.info("the server forgot our session; starting a new one")
                self._reinitialize()
            finally:
                self._session_ready.set()

    # -- 2026-07-28 -------------------------------------------------------------------------

    def _modern_headers(self, request: Request) -> dict:
        """The headers of a modern request (2026-07-28 streamable-http §Request Metadata)."""
        from .http_headers import InvalidHeaderDeclaration, request_headers

        params = request.params if isinstance(request.params, dict) else {}
        # "MCP-Protocol-Version ... MUST match the protocolVersion in the request's _meta".
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "MCP-Protocol-Version": str(envelope.meta_of(params)[envelope.PROTOCOL_VERSION])}
        schema = None
        if request.method == "tools/call" and self._input_schema is not None and isinstance(params.get("name"), str):
            schema = self._input_schema(params["name"])
        try:
            headers.update(request_headers(request.method, params, schema))
        except InvalidHeaderDeclaration:  # never remembered (usable_tools leaves such tools out)
            headers.update(request_headers(request.method, params))
        return headers

    def _send_modern(self, data: bytes, request: Request) -> None:
        """POST one modern request and deliver its answer (JSON, or an SSE stream read to the end)."""
        import requests

        _sending.request = (self, request.id)
        try:
            response = self.http.post(self.url, data=data, headers=self._modern_headers(request), stream=True,
                                      timeout=(self.connect_timeout, None))
            with self._responses_lock:
                self._modern_responses[request.id] = response
            try:
                self._deliver(response, request, resumable=False)
            finally:
                with self._responses_lock:
                    self._modern_responses.pop(request.id, None)
        except (requests.ConnectionError, requests.exceptions.ConnectTimeout) as exc:
            self._incoming.put(RequestFailed(request.id, unreachable(self.url, exc)))
        except requests.RequestException as exc:
            self._fail(request.id, f"HTTP request to {self.url} failed: {exc}")
        except AuthorizationError as exc:
            self._incoming.put(RequestFailed(request.id, exc))
        except Exception as exc:  # noqa: BLE001 - a worker must never die silently
            log.exception("HTTP request failed")
            self._fail(request.id, f"HTTP request failed: {exc}")
        finally:
            _sending.request = (None, None)

    def _modern_notification(self, message) -> None:
        """A notification in the modern era: a cancellation closes the request's stream; no other is sent.

        2026-07-28 streamable-http §Cancellation: "Closing the SSE response stream MUST be treated
        by the server as cancellation of that request"; the Note under §Sending Messages: "This
        revision of the core protocol defines no client-to-server notifications over Streamable HTTP".
        """
        if isinstance(message, Notification) and message.method == "notifications/cancelled":
            request_id = (message.params or {}).get("requestId")
            with self._responses_lock:
                response = self._modern_responses.pop(request_id, None)
            if response is not None:
                _abort(response)
        else:
            log.debug("notification %s not sent: 2026-07-28 HTTP has no client notifications",
                      getattr(message, "method", "?"))

    # -- SSE streams -----------------------------------------------------------------------

    def _events(self, response):
        import sseclient

        with self._responses_lock:
            self._open_responses.add(response)
        try:
            yield from sseclient.SSEClient(response.iter_content(chunk_size=None)).events()
        except Exception:
            if not self._closed.is_set():
                raise
            # close() closed this response under a blocked reader: a normal end, whatever urllib3 raised
        finally:
            with self._responses_lock:
                self._open_responses.discard(response)
            response.close()

    def _relay(self, response, cursor: "_Cursor"):
        """Put every message of an SSE response on the incoming queue (and yield it), keeping
        the stream's last event id and ``retry`` in ``cursor`` for resuming it."""
        for event in self._events(response):
            if event.id:
                cursor.last_id = event.id
            if event.retry:
                cursor.retry_ms = int(event.retry)
            if event.data and event.event in ("message", None, ""):
                self._incoming.put(event.data.encode("utf-8"))
                yield event.data

    def _read_stream(self, response, awaiting: set, *, resumable: bool = True) -> None:
        """Read a POST's SSE stream until every answer in ``awaiting`` arrived, resuming it if it ends
        early (``resumable``; 2026-07-28 has no resumption: the request is reported lost instead)."""
        import requests

        cursor, resumes = _Cursor(), 0
        while True:
            try:
                for data in self._relay(response, cursor):
                    _note_answers(data, awaiting)
                    if not awaiting:
                        return
            except requests.RequestException as exc:
                log.debug("SSE stream dropped: %s", exc)
            if not awaiting or self._closed.is_set():
                return
            if not resumable:
                for request_id in awaiting:
                    self._incoming.put(RequestFailed(request_id, ResponseStreamLost(
                        f"the response stream from {self.url} broke before the answer")))
                return
            # 2025-11-25 basic/transports §Resumability: the client resumes with GET and
            # Last-Event-ID, after waiting the server's retry interval.
            if cursor.last_id is None or resumes >= MAX_RESUMES:
                for request_id in awaiting:
                    self._fail(request_id, "the server closed the stream before answering")
                return
            resumes += 1
            if self._closed.wait(cursor.retry_ms / 1000):
                return
            try:
                headers = self._headers("text/event-stream")
                headers["Last-Event-ID"] = cursor.last_id
                response = self.http.get(self.url, headers=headers, stream=True, timeout=(self.connect_timeout, None))
            except requests.RequestException as exc:
                log.debug("resuming the stream failed: %s", exc)
                continue
            if not response.ok:
                response.close()
                for request_id in awaiting:
                    self._fail(request_id, f"resuming the stream failed: HTTP {response.status_code}")
                return

    def _listen(self, answered: threading.Event) -> None:
        """The standalone GET stream: server-to-client messages outside any request.

        ``answered`` is set once the first GET has an answer (whatever it is) or failed.
        """
        import requests

        cursor = _Cursor()
        while not self._closed.is_set():
            try:
                headers = self._headers("text/event-stream")
                if cursor.last_id:
                    headers["Last-Event-ID"] = cursor.last_id
                try:
                    response = self.http.get(self.url, headers=headers, stream=True, timeout=(self.connect_timeout, None))
                finally:
                    answered.set()
                if response.status_code == 405:
                    response.close()
                    return  # "the server does not offer an SSE stream at this endpoint"
                if not response.ok:
                    response.close()
                    if response.status_code == 404:
                        return  # the session is gone; a new one opens its own stream
                else:
                    for _ in self._relay(response, cursor):
                        pass
            except requests.RequestException as exc:
                log.debug("standalone stream dropped: %s", exc)
            except AuthorizationError as exc:
                log.warning("the standalone stream could not be authorized: %s", exc)
                return
            except Exception:  # noqa: BLE001
                log.exception("standalone stream failed")
            self._closed.wait(cursor.retry_ms / 1000)

    # -- HTTP+SSE (2024-11-05) ---------------------------------------------------------------

    def start_legacy(self, timeout: float = 10.0) -> None:
        """Connect with the 2024-11-05 HTTP+SSE transport: GET the SSE stream at ``url`` and wait for
        its ``endpoint`` event (the URL to POST to).  Done by itself in ``"auto"`` mode on fallback;
        call it before the first message in ``"sse"`` mode."""
        ready = threading.Event()
        failure: list = []

        def run() -> None:
            import requests

            try:
                response = self.http.get(self.url, headers={"Accept": "text/event-stream"}, stream=True,
                                         timeout=(self.connect_timeout, None))
                if not response.ok:
                    failure.append(f"HTTP {response.status_code} {response.reason}")
                    response.close()
                    return
                for event in self._events(response):
                    if event.event == "endpoint":
                        self.legacy_endpoint = urljoin(self.url, event.data.strip())
                        ready.set()
                    elif event.event in ("message", None, "") and event.data:
                        self._incoming.put(event.data.encode("utf-8"))
            except requests.RequestException as exc:
                failure.append(str(exc))
            except AuthorizationError as exc:
                failure.append(exc)
            finally:
                ready.set()
                if self.legacy_endpoint is not None and not self._closed.is_set():
                    self._incoming.put(None)  # the stream is the connection: it ended

        self.mode = "sse"
        threading.Thread(target=run, name="mcp-sse-listen", daemon=True).start()
        ready.wait(timeout)
        if failure and isinstance(failure[0], AuthorizationError):
            raise failure[0]
        if not ready.is_set() or self.legacy_endpoint is None:
            raise HttpTransportError(f"no endpoint event from {self.url}: {failure[0] if failure else 'timed out'}")

    def _legacy_post(self, data: bytes) -> None:
        import requests

        try:
            response = self.http.post(self.legacy_endpoint, data=data, headers={"Content-Type": "application/json"},
                                      timeout=(self.connect_timeout, 60))
        except (requests.RequestException, AuthorizationError) as exc:
            raise OSError(f"HTTP request to {self.legacy_endpoint} failed: {exc}") from None
        if not response.ok:
            raise OSError(f"HTTP {response.status_code} {response.reason} from {self.legacy_endpoint}")

    # -- failures ----------------------------------------------------------------------------

    def _fail(self, request_id, message: str) -> None:
        """Answer a request locally with an error, so its caller does not wait for a timeout."""
        error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": message}}
        self._incoming.put(json.dumps(error).encode())

    def _fail_http(self, request_id, response) -> None:
        try:
            body = response.json()
            error = body.get("error") if isinstance(body, dict) else None
        except ValueError:
            error = None
        finally:
            response.close()
        status = f"HTTP {response.status_code} {response.reason}"
        if isinstance(error, dict) and isinstance(error.get("code"), int):
            error = dict(error, message=f"{status}: {error.get('message', '')}")
        else:
            error = {"code": -32603, "message": status}
        error.setdefault("data", {})
        if isinstance(error["data"], dict):
            error["data"]["httpStatus"] = response.status_code
        self._incoming.put(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode())


def unreachable(url: str, exc: Exception) -> ServerUnreachable:
    """A :class:`ServerUnreachable` naming ``url`` and the reason in a few words, not urllib3's nest."""
    import re

    text = str(exc)
    reason = re.findall(r"\[Errno -?\d+\] ([^'\"\)\]]+)", text)
    if reason:
        text = reason[-1].strip().lower()
    elif "timed out" in text.lower():
        text = "timed out while connecting"
    return ServerUnreachable(f"cannot reach {url}: {text}")


class _Cursor:
    """Where an SSE stream stands: the last event id seen, and the server's ``retry`` (ms)."""

    __slots__ = ("last_id", "retry_ms")

    def __init__(self):
        self.last_id: str | None = None
        self.retry_ms = DEFAULT_RETRY_MS


def _abort(response) -> None:
    """Close a streaming response even while another thread is blocked reading it.

    ``response.close()`` waits for that reader; shutting the socket down first
    wakes it at once (the reader then sees the end of the stream).
    """
    import socket

    connection = getattr(response.raw, "_connection", None)
    sock = getattr(connection, "sock", None)
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    response.close()


def _note_answers(data: str, awaiting: set) -> None:
    """Strike from ``awaiting`` the ids this SSE message answers."""
    try:
        message = json.loads(data)
    except ValueError:
        return
    for item in message if isinstance(message, list) else [message]:
        if isinstance(item, dict) and "method" not in item and ("result" in item or "error" in item):
            awaiting.discard(item.get("id"))
