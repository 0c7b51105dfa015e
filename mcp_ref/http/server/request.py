"""The HTTP request a handler's call came in on (:class:`HttpRequest`), as ``Context.http`` gives it.

Over HTTP every request of the client arrives on an HTTP request of its own (a POST; a handshake
session's requests on different ones), so this is per MCP request, not per session.  The
transports note it for the request ids a POST carries (:meth:`RequestNotes.note`) and forget it
with the answer.  Over stdio and in memory there is none: ``Context.http`` is None.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

#: The environ key a framework around the application (a Django or Flask view, a WSGI middleware)
#: sets to the user it authenticated: :attr:`HttpRequest.user` reads it.
USER_KEY = "mcp_ref.user"

#: Requests noted per session at once.  An entry lives while its request is served (the session
#: bounds those by ``max_incoming``); past this, the oldest is forgotten (its handler then sees
#: ``Context.http`` None) rather than let a session's table grow.
NOTES_KEPT = 4096


class Headers(Mapping[str, str]):
    """The request's headers, read from the WSGI environ: a read-only mapping whose lookups ignore
    case (``headers["user-agent"]`` is ``headers["User-Agent"]``).  Names are listed in the
    ``Title-Case`` form; repeated headers arrive joined by the WSGI server (RFC 9110 §5.3)."""

    def __init__(self, environ: Mapping[str, Any]):
        found: dict[str, tuple[str, str]] = {}
        for key, value in environ.items():
            if key.startswith("HTTP_"):
                name = key[5:]
            elif key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
                # PEP 3333 keeps these two without the prefix
                name = key
            else:
                continue
            if not isinstance(value, str) or (name.startswith("CONTENT_") and not value):
                continue
            title = "-".join(part.capitalize() for part in name.split("_"))
            found[title.lower()] = (title, value)
        self._found = found

    def __getitem__(self, name: str) -> str:
        return self._found[name.lower()][1]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._found

    def __iter__(self) -> Iterator[str]:
        return (title for title, _ in self._found.values())

    def __len__(self) -> int:
        return len(self._found)

    def __repr__(self) -> str:
        return f"Headers({dict(self.items())!r})"


def parse_cookies(header: str) -> dict[str, str]:
    """The ``Cookie`` header's pairs (RFC 6265 §5.4: ``name=value`` joined by ``"; "``).  A pair
    without ``=`` is skipped; a name sent twice keeps its first value (the more specific path comes
    first, §5.4 step 2); a double-quoted value loses its quotes (§4.1.1)."""
    cookies: dict[str, str] = {}
    for pair in header.split(";"):
        name, equals, value = pair.partition("=")
        name, value = name.strip(), value.strip()
        if not equals or not name:
            continue
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        cookies.setdefault(name, value)
    return cookies


class HttpRequest:
    """The HTTP request an MCP request came in on: ``Context.http`` (None over stdio and in memory).

    ``environ`` is the WSGI environ itself (PEP 3333), with whatever the server and the framework
    around the application put there; the rest are read from it: ``method``, ``path`` (the
    mount prefix, ``SCRIPT_NAME``, then ``PATH_INFO``), ``query_string``, ``scheme``,
    ``remote_addr`` (the peer's address as the WSGI server saw it: behind a proxy, the proxy's,
    unless a middleware such as werkzeug's ``ProxyFix`` rewrote it), ``headers`` (a
    case-insensitive mapping), ``cookies`` and ``user``.
    """

    __slots__ = ("environ", "_headers", "_cookies")

    def __init__(self, environ: dict):
        self.environ = environ
        self._headers: Headers | None = None
        self._cookies: dict[str, str] | None = None

    @property
    def method(self) -> str:
        """The HTTP method (``POST``; ``GET`` for none of a handler's calls today)."""
        return self.environ.get("REQUEST_METHOD", "")

    @property
    def path(self) -> str:
        """The path the client asked for: the mount prefix (``SCRIPT_NAME``) and ``PATH_INFO``."""
        return self.environ.get("SCRIPT_NAME", "") + self.environ.get("PATH_INFO", "")

    @property
    def query_string(self) -> str:
        """What follows ``?`` in the URL (``""`` when nothing does)."""
        return self.environ.get("QUERY_STRING", "")

    @property
    def scheme(self) -> str:
        """``http`` or ``https`` (``wsgi.url_scheme``)."""
        return self.environ.get("wsgi.url_scheme", "http")

    @property
    def remote_addr(self) -> str | None:
        """The peer's address (``REMOTE_ADDR``), None when the WSGI server gave none."""
        return self.environ.get("REMOTE_ADDR") or None

    @property
    def headers(self) -> Headers:
        """The request's headers, case-insensitive (:class:`Headers`)."""
        if self._headers is None:
            self._headers = Headers(self.environ)
        return self._headers

    @property
    def cookies(self) -> dict[str, str]:
        """The request's cookies, by name (:func:`parse_cookies`)."""
        if self._cookies is None:
            self._cookies = parse_cookies(self.environ.get("HTTP_COOKIE", ""))
        return self._cookies

    @property
    def user(self) -> Any:
        """The user the web application around this one authenticated: ``environ["mcp_ref.user"]``,
        set by the view or middleware that mounts the application (a Django view passes
        ``request.user``, a Flask one ``flask_login.current_user``); else the WSGI server's
        ``REMOTE_USER`` (HTTP authentication done by the server); else None.  Not the OAuth caller:
        that is ``Context.auth``."""
        user = self.environ.get(USER_KEY)
        return user if user is not None else self.environ.get("REMOTE_USER") or None

    def __repr__(self) -> str:
        return f"<HttpRequest {self.method} {self.path} from {self.remote_addr}>"


class ServerHooks(Protocol):
    """What the HTTP server transports offer beyond the transport contract, as their ``http_hooks``
    (:class:`mcp_ref.session.Transport`): the server's ``Context`` finds them with
    ``getattr(transport, "http_hooks", None)``, None off HTTP."""

    def http_request(self, request_id) -> HttpRequest | None:
        """The HTTP request ``request_id`` came in on (``Context.http``), while it is served."""
        ...

    def close_stream(self, request_id) -> bool:
        """Close the connection carrying ``request_id``'s SSE stream but keep the stream (polling);
        False when it has no such stream (a JSON reply, a stateless or legacy session)."""
        ...


class RequestNotes:
    """The HTTP request of each request id in progress on one transport (a session's POSTs).

    Bounded by :data:`NOTES_KEPT` (the oldest forgotten past it); an entry goes with its request's
    answer (:meth:`forget`).
    """

    def __init__(self) -> None:
        self._by_id: dict[Any, HttpRequest] = {}
        self._lock = threading.Lock()

    def note(self, request_ids: list, environ: dict) -> None:
        """``request_ids`` came in on the request ``environ`` describes."""
        request = HttpRequest(environ)
        with self._lock:
            for request_id in request_ids:
                self._by_id[request_id] = request
            while len(self._by_id) > NOTES_KEPT:
                self._by_id.pop(next(iter(self._by_id)))

    def forget(self, request_ids) -> None:
        """These requests were answered (or ended unanswered)."""
        if self._by_id:
            with self._lock:
                for request_id in request_ids:
                    self._by_id.pop(request_id, None)

    def get(self, request_id) -> HttpRequest | None:
        """The HTTP request ``request_id`` came in on, while it is in progress."""
        return self._by_id.get(request_id)
