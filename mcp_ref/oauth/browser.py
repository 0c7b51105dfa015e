"""The user's part of the authorization code flow: sending them to the authorization URL, and
receiving the redirect back.

- :class:`LoopbackBrowser` (the default) opens the URL with :mod:`webbrowser` (so ``BROWSER``
  picks the browser) and waits, up to a timeout, for the redirect on a listener on 127.0.0.1
  (RFC 8252 §7.3, "Loopback Interface Redirection").
- :class:`CallbackHandler` wraps a function of your own: it gets the authorization URL and
  returns the URL the authorization server redirected to (a GUI, a test, a device flow ...).
- :func:`follow_redirect` is such a function for servers that approve at once (the demo
  authorization server, the conformance suite's): it GETs the URL and returns its redirect,
  playing the browser's part.
"""

from __future__ import annotations

import logging
import secrets
import selectors
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from http import HTTPStatus
from typing import Protocol
from urllib.parse import parse_qs, urlsplit

from ..http.origins import LOCAL_HOSTS, redirects_unread
from .errors import AuthorizationTimeout, CallbackError

log = logging.getLogger(__name__)

#: The listener reads each connection's request line and headers within this many seconds in all,
#: however slowly its bytes come (a stray trickling bytes is closed then) ...
REQUEST_TIMEOUT = 10.0
#: ... and within this many bytes (more is answered 431, and closed).
MAX_REQUEST_BYTES = 64 * 1024
#: Connections the listener reads at once; one more is closed unread.
MAX_CONNECTIONS = 32
_CHUNK = 4096

_DONE_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>mcp-ref</title>"
    b"<p>Authorization complete. You may close this window and return to the application.</p>"
)


class AuthorizationHandler(Protocol):
    """Gets the user through the authorization endpoint and brings back the redirect."""

    def redirect_uri(self, registered: Sequence[str] = ()) -> str:
        """The redirect URI to use, ready to receive (``registered``: the URIs already registered, to reuse)."""
        ...

    def authorize(self, url: str, timeout: float) -> str:
        """Send the user to ``url``; return the URL the authorization server redirected back to."""
        ...

    def close(self) -> None:
        """Stop receiving (after :meth:`authorize`, or when the flow failed)."""
        ...


def _announce(url: str) -> None:
    print(
        f"mcp-ref: to authorize, open this URL in a browser:\n  {url}", file=sys.stderr, flush=True
    )


class LoopbackBrowser:
    """Open the authorization URL in a browser; receive the redirect on ``http://127.0.0.1:PORT/callback``.

    ``open_browser=False`` only announces the URL (``announce(url)``, by default a line on stderr).
    ``request_timeout`` bounds the time each connection to the listener has to send its request
    line and headers, in all (:data:`REQUEST_TIMEOUT`).
    The port is the one of an already registered loopback redirect URI when it is free (so strict
    authorization servers see the same URI), else an ephemeral one: RFC 8252 §7.3 says the
    authorization server "MUST allow any port to be specified at the time of the request for
    loopback IP redirect URIs".
    """

    def __init__(
        self,
        *,
        open_browser: bool = True,
        host: str = "127.0.0.1",
        path: str = "/callback",
        announce: Callable[[str], None] | None = _announce,
        request_timeout: float = REQUEST_TIMEOUT,
    ):
        self.open_browser = open_browser
        self.request_timeout = request_timeout
        self.host = host
        self.path = path
        self.announce = announce
        # the redirect's path and query once it came, and the requests to other paths (the
        # listener's request handler keeps them here)
        self._callback: str | None = None
        self._strays = 0
        self._check: Callable[[str], object] | None = None
        self._listener: socket.socket | None = None

    def redirect_uri(self, registered: Sequence[str] = ()) -> str:
        self.close()
        ports = [urlsplit(uri).port for uri in registered if urlsplit(uri).hostname == self.host]
        for port in [p for p in ports if p]:
            try:
                listener = socket.create_server((self.host, port), backlog=MAX_CONNECTIONS)
                break
            except OSError:
                continue
        else:  # none registered, or none free: an ephemeral port (its OSError is the caller's)
            listener = socket.create_server((self.host, 0), backlog=MAX_CONNECTIONS)
        listener.setblocking(False)
        self._callback = None
        self._strays = 0
        self._listener = listener
        return f"http://{self.host}:{listener.getsockname()[1]}{self.path}"

    def authorize(
        self, url: str, timeout: float, *, check: Callable[[str], object] | None = None
    ) -> str:
        """Announce ``url`` and open it in a browser (after :func:`~mcp_ref.oauth.discovery.check_url`:
        never a ``javascript:``, ``file:`` or plain-http remote URL); wait for the redirect.

        ``check(path_and_query)`` raises :class:`CallbackError` for a redirect that does not answer
        this request (:func:`authorization_response`): that one is answered 400 and the wait goes
        on, so another local process or a web page hitting the listener first cannot end the
        user's login.  2025-11-25 basic/authorization §Open Redirection: clients "discard any
        results that do not include or have a mismatch with the original state".

        The wait ends at ``timeout`` (:class:`AuthorizationTimeout`), whatever other connections
        do: they are read side by side, never one blocking the next, each bounded in time
        (``request_timeout`` in all, however slowly its bytes come) and size
        (:data:`MAX_REQUEST_BYTES`), and every one still open is closed when the wait ends."""
        from .discovery import check_url

        check_url(url, "the authorization URL")
        if self._listener is None:
            raise RuntimeError("redirect_uri() starts the listener before authorize()")
        self._check = check
        if self.announce is not None:
            self.announce(url)
        if self.open_browser:
            import webbrowser

            threading.Thread(
                target=webbrowser.open, args=(url,), name="mcp-ref-browser", daemon=True
            ).start()
        deadline = time.monotonic() + timeout
        listener = self._listener
        with selectors.DefaultSelector() as selector:
            selector.register(listener, selectors.EVENT_READ)
            try:
                # Requests to other paths (a favicon ...), answered 404, and redirects for another
                # request, answered 400, never end the flow (whoever sends them): only the login's
                # timeout does; nothing of them is kept but their count.
                while self._callback is None:
                    now = time.monotonic()
                    if now >= deadline:
                        raise AuthorizationTimeout(
                            f"no redirect from the authorization server within {timeout:g} s"
                            f" ({self._strays} other requests to the listener refused)"
                        )
                    for key in list(selector.get_map().values()):
                        if key.fileobj is not listener and key.data.deadline <= now:
                            self._drop(selector, key, stray=bool(key.data.received))
                    soonest = min(
                        [deadline]
                        + [k.data.deadline for k in selector.get_map().values() if k.data]
                    )
                    for key, _ in selector.select(soonest - now):
                        if key.fileobj is listener:
                            until = min(time.monotonic() + self.request_timeout, deadline)
                            self._accept(selector, listener, until)
                        elif self._callback is None:
                            self._read(selector, key)
            finally:
                for key in list(selector.get_map().values()):
                    if key.fileobj is not listener:
                        self._drop(selector, key, stray=False)
        return f"http://{self.host}:{listener.getsockname()[1]}{self._callback}"

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None

    # -- the listener's connections ------------------------------------------------------------

    def _accept(
        self, selector: selectors.BaseSelector, listener: socket.socket, until: float
    ) -> None:
        """Take a waiting connection, read from then on until ``until`` (one more than
        :data:`MAX_CONNECTIONS` is closed unread)."""
        try:
            connection, _ = listener.accept()
        except OSError:  # gone before it was taken (BlockingIOError, ConnectionAbortedError)
            return
        if len(selector.get_map()) > MAX_CONNECTIONS:
            connection.close()
            return
        connection.setblocking(False)
        selector.register(connection, selectors.EVENT_READ, _Reading(connection, until))

    def _read(self, selector: selectors.BaseSelector, key: selectors.SelectorKey) -> None:
        """Read what came on a connection; answer once its request line and headers are in."""
        reading: _Reading = key.data
        connection = reading.connection
        try:
            chunk = connection.recv(_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:  # closed by the other side (a browser's unused pre-connection ...)
            self._drop(selector, key, stray=bool(reading.received))
            return
        searched = max(len(reading.received) - 3, 0)
        reading.received += chunk
        end = reading.received.find(b"\r\n\r\n", searched)
        if end < 0:
            end = reading.received.find(b"\n\n", searched)
        if end < 0 or end > MAX_REQUEST_BYTES:
            if len(reading.received) > MAX_REQUEST_BYTES:
                self._answer(reading, 431, b"")
                self._drop(selector, key, stray=True)
            return
        selector.unregister(connection)
        try:
            request_line = reading.received.split(b"\n", 1)[0].decode("latin-1").split()
            try:
                status, body = self._respond(request_line)
            except Exception as exc:
                # Whatever fails in answering one connection (a ``check`` of the caller's raising
                # something else than CallbackError ...) refuses that one, never the login: only
                # its timeout ends the wait.  Its type only: the text may quote the query (the code).
                self._strays += 1
                log.debug("callback listener: answered 400 (%s)", type(exc).__name__)
                status, body = 400, b""
            self._answer(reading, status, body)
        finally:
            connection.close()

    def _respond(self, request_line: list[str]) -> tuple[int, bytes]:
        """The status and page answering the request line (method, target, version): 200 for the
        awaited redirect (kept), 404 for another path, 400 for a redirect ``check`` refuses or a
        target that is not this listener's."""
        target = self._origin_form(request_line[1]) if len(request_line) == 3 else None
        if target is None:
            status = 400
        elif request_line[0] != "GET":
            status = 405
        elif target.partition("?")[0] != self.path:
            status = 404
        else:
            try:
                if self._check is not None:
                    self._check(target)
            except CallbackError as exc:
                log.debug("callback listener: discarded a redirect: %s", exc)
                status = 400
            else:
                self._callback = target
                return 200, _DONE_PAGE
        self._strays += 1
        log.debug("callback listener: answered %d", status)  # never the query (it holds the code)
        return status, b""

    def _origin_form(self, target: str) -> str | None:
        """The request target as path and query, or None when it is not one for this listener.

        RFC 9112 §3.2.1: the origin-form, ``/path?query``, is taken as it is (its path is what
        comes before the first ``?``: never parsed as a URL, so ``//host`` is a path too).
        §3.2.2: "A server MUST accept the absolute-form in requests"; it is reduced to its path
        and query when its authority is this listener's own ``host:port`` (``http``, no user
        information), and any other one is not for this listener (400)."""
        if target.startswith("/"):
            return target
        try:
            parts = urlsplit(target)
            port = parts.port or 80
        except ValueError:  # a port that is no number, a broken IPv6 literal ...
            return None
        listening = self._listener.getsockname()[1] if self._listener is not None else None
        if (
            parts.scheme != "http"
            or parts.username is not None
            or (parts.hostname or "").lower() != self.host.lower()
            or port != listening
            or parts.fragment
        ):
            return None
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    def _answer(self, reading: _Reading, status: int, page: bytes) -> None:
        """Send the answer, within what is left of the connection's time (a few hundred bytes:
        the socket's buffer takes them at once)."""
        head = (
            f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
            "Content-Type: text/html; charset=utf-8\r\n"
            f"Content-Length: {len(page)}\r\nConnection: close\r\n\r\n"
        )
        left = reading.deadline - time.monotonic()
        if left <= 0:
            return
        try:
            reading.connection.settimeout(left)
            reading.connection.sendall(head.encode("latin-1") + page)
        except OSError:
            pass  # gone: nothing more to tell it

    def _drop(self, selector: selectors.BaseSelector, key: selectors.SelectorKey, *, stray: bool):
        """Stop reading a connection and close it (out of time or size, closed by its other side,
        or the wait is over); ``stray``: count it as a request refused."""
        selector.unregister(key.fileobj)
        key.data.connection.close()
        if stray:
            self._strays += 1


class _Reading:
    """A connection to the listener being read: the socket, its deadline (the whole request line
    and headers must come by then), and the bytes come so far."""

    def __init__(self, connection: socket.socket, deadline: float):
        self.connection = connection
        self.deadline = deadline
        self.received = bytearray()


def authorization_response(
    callback: str, state: str, issuer: str, iss_promised: bool = False
) -> dict[str, str]:
    """The parameters of the redirect ``callback`` when it is the response to the authorization
    request sent with ``state`` to ``issuer``; else raise :class:`CallbackError` (it is discarded).

    2026-07-28 basic/authorization §Authorization Response Validation (RFC 9207 §2.4): a present
    ``iss`` must equal the recorded issuer (simple string comparison), and an absent one is
    refused when the server advertises ``authorization_response_iss_parameter_supported``
    (``iss_promised``); "on mismatch the client MUST NOT act on or display error".  2025-11-25
    §Open Redirection: clients "SHOULD use and verify state parameters ... and discard any results
    that do not include or have a mismatch with the original state".
    """
    values = parse_qs(urlsplit(callback).query, keep_blank_values=True)
    if any(len(v) != 1 for v in values.values()):
        raise CallbackError("the authorization response repeats a parameter; discarded")
    params = {k: v[0] for k, v in values.items()}
    if "iss" in params:
        if params["iss"] != issuer:
            raise CallbackError(
                f"the authorization response came from issuer {params['iss']!r}, not {issuer!r}; "
                "discarded (RFC 9207)"
            )
    elif iss_promised:
        raise CallbackError(
            f"the authorization response lacks the iss that {issuer} promises; discarded (RFC 9207)"
        )
    if not secrets.compare_digest(params.get("state", "").encode(), state.encode()):
        raise CallbackError(
            "the authorization response's state does not match the request's; discarded"
        )
    return params


class CallbackHandler:
    """An :class:`AuthorizationHandler` from a function: ``authorize(url) -> redirected URL``, with a
    fixed ``redirect_uri`` (which must be registered with the authorization server, or be loopback)."""

    def __init__(self, redirect_uri: str, authorize: Callable[[str], str]):
        self._redirect_uri = redirect_uri
        self._authorize = authorize

    def redirect_uri(self, registered: Sequence[str] = ()) -> str:
        return self._redirect_uri

    def authorize(self, url: str, timeout: float) -> str:
        return self._authorize(url)

    def close(self) -> None:
        pass


def redirect_uri_matches(given: str, registered: str) -> bool:
    """Whether the redirect URI ``given`` is the ``registered`` one: the same string, except that a
    loopback ``http`` URI matches on any port (RFC 8252 §7.3).  The authorization server's check
    (the demo's), and the client's when it reuses a stored registration."""
    if given == registered:
        return True
    try:
        a, b = urlsplit(given), urlsplit(registered)
    except ValueError:
        return False
    return (
        a.scheme == b.scheme == "http"
        and a.hostname == b.hostname
        and a.hostname in LOCAL_HOSTS
        and a.path == b.path
        and a.query == b.query
        and not a.fragment
    )


def follow_redirect(url: str, *, timeout: float = 10.0, http=None) -> str:
    """Play the browser for an authorization server that approves at once: GET ``url`` and return
    where it redirects (read from the answer's headers; its body is never read).  For tests, the
    conformance suite and the demo; never a substitute for a user's consent on a real server."""
    import requests

    from .discovery import check_url

    check_url(url, "the authorization URL")
    try:
        # the status line and headers only: the body (a page for a person, as large as the server
        # likes) is never read, the connection closed with it unread (redirects_unread: requests
        # reads a redirect's whole body before it returns, even with allow_redirects=False)
        response = (http or requests).get(
            url,
            allow_redirects=False,
            timeout=timeout,
            stream=True,
            hooks=redirects_unread(http),
        )
    except requests.RequestException as exc:
        raise CallbackError(
            f"cannot reach the authorization endpoint: {type(exc).__name__}"
        ) from None
    location = response.headers.get("Location")
    response.close()
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        raise CallbackError(
            f"the authorization endpoint answered HTTP {response.status_code} instead of a redirect "
            "(it needs a person at a browser)"
        )
    return location
