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
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol
from urllib.parse import parse_qs, urlsplit

from ..http.origins import LOCAL_HOSTS
from .errors import AuthorizationTimeout, CallbackError

if TYPE_CHECKING:
    from http.server import HTTPServer

log = logging.getLogger(__name__)

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
    ):
        self.open_browser = open_browser
        self.host = host
        self.path = path
        self.announce = announce
        # the redirect's path and query once it came, and the requests to other paths (the
        # listener's request handler keeps them here)
        self._callback: str | None = None
        self._strays = 0
        self._check: Callable[[str], object] | None = None
        self._server: HTTPServer | None = None

    def redirect_uri(self, registered: Sequence[str] = ()) -> str:
        from http.server import HTTPServer

        self.close()
        handler = _callback_request_class(self)
        ports = [urlsplit(uri).port for uri in registered if urlsplit(uri).hostname == self.host]
        for port in [p for p in ports if p]:
            try:
                server = HTTPServer((self.host, port), handler)
                break
            except OSError:
                continue
        else:  # none registered, or none free: an ephemeral port (its OSError is the caller's)
            server = HTTPServer((self.host, 0), handler)
        self._callback = None
        self._strays = 0
        self._server = server
        return f"http://{self.host}:{server.server_address[1]}{self.path}"

    def authorize(
        self, url: str, timeout: float, *, check: Callable[[str], object] | None = None
    ) -> str:
        """Announce ``url`` and open it in a browser (after :func:`~mcp_ref.oauth.discovery.check_url`:
        never a ``javascript:``, ``file:`` or plain-http remote URL); wait for the redirect.

        ``check(path_and_query)`` raises :class:`CallbackError` for a redirect that does not answer
        this request (:func:`authorization_response`): that one is answered 400 and the wait goes
        on, so another local process or a web page hitting the listener first cannot end the
        user's login.  2025-11-25 basic/authorization §Open Redirection: clients "discard any
        results that do not include or have a mismatch with the original state"."""
        from .discovery import check_url

        check_url(url, "the authorization URL")
        if self._server is None:
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
        server = self._server
        while self._callback is None:
            # Requests to other paths (a favicon ...), answered 404, and redirects for another
            # request, answered 400, never end the flow (whoever sends them): only the login's
            # timeout does; they are one at a time, and nothing of them is kept but their count.
            left = deadline - time.monotonic()
            if left <= 0:
                raise AuthorizationTimeout(
                    f"no redirect from the authorization server within {timeout:g} s"
                    f" ({self._strays} other requests to the listener refused)"
                )
            server.timeout = left
            server.handle_request()
        return f"http://{self.host}:{server.server_address[1]}{self._callback}"

    def close(self) -> None:
        if self._server is not None:
            self._server.server_close()
            self._server = None


def _callback_request_class(browser: LoopbackBrowser):
    """The request handler class of ``browser``'s listener (http.server is imported only then)."""
    from http.server import BaseHTTPRequestHandler

    class CallbackRequest(BaseHTTPRequestHandler):
        """Answers the redirect (and 404 to anything else), remembering the redirect's URL."""

        timeout = 10  # a connection that never sends its request does not hold the listener

        def do_GET(self) -> None:  # the http.server naming
            if urlsplit(self.path).path != browser.path:
                browser._strays += 1
                self.send_error(404)
                return
            if browser._check is not None:
                try:
                    browser._check(self.path)
                except CallbackError as exc:
                    browser._strays += 1
                    log.debug("callback listener: discarded a redirect: %s", exc)
                    self.send_error(400, "Not the awaited authorization response")
                    return
            browser._callback = self.path
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(_DONE_PAGE)))
            self.end_headers()
            self.wfile.write(_DONE_PAGE)

        # never log the query (it holds the code)
        def log_message(self, format: str, *args) -> None:
            log.debug("callback listener: %s", self.command)

    return CallbackRequest


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
    where it redirects.  For tests, the conformance suite and the demo; never a substitute for a
    user's consent on a real server."""
    import requests

    from .discovery import check_url

    check_url(url, "the authorization URL")
    try:
        response = (http or requests).get(url, allow_redirects=False, timeout=timeout)
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
