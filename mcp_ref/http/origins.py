"""Origins (RFC 6454): where credentials and user headers may go.

The rule of this project: a token, a DPoP proof, the caller's ``headers=`` (the command's
``--header``) and every message go only to the origin the user named.  A redirect, a 2024-11-05
``endpoint`` event, or a 401 answered by another origin is refused with
:class:`CrossOriginRefused`, before anything is sent there.  Same-origin redirects (``/mcp`` to
``/mcp/``) are followed: an origin is one trust boundary, and browsers draw it there too; but
not a POST's 301, 302 or 303, which would become a GET without the message
(:class:`RedirectRefused`).  A redirect's body is never read, on any HTTP client path (:func:`close_redirect_unread`).

The server's side of the same idea is here too: which ``Host`` and ``Origin`` may reach a local
server (:func:`host_allowed`, :func:`origin_allowed`, the DNS-rebinding guard shared by the MCP
endpoint and the demo authorization server).

Standard library only: imported by the HTTP client transport, the OAuth code and the HTTP servers.
"""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

from ..errors import MCPRefError

_DEFAULT_PORTS = {"http": 80, "https": 443}


class CrossOriginRefused(MCPRefError, ConnectionError):
    """A server tried to send the client to another origin (a redirect, an SSE ``endpoint`` event);
    the client refused, and sent nothing there.  The message names both origins.

    A ``ConnectionError``: the exchange with the server cannot go on as the server asked.
    """

    def __init__(self, what: str, named: str, elsewhere: str):
        super().__init__(
            f"refused {what} from {origin_text(named)} to another origin, {origin_text(elsewhere)}: "
            f"credentials, headers and messages go only to {origin_text(named)} "
            "(connect to the other URL directly if you trust it)"
        )
        self.named, self.elsewhere = origin_text(named), origin_text(elsewhere)


class RedirectRefused(MCPRefError, ConnectionError):
    """A POST was answered 301, 302 or 303: following it would send a GET without the message (RFC
    9110 §15.4.2 to §15.4.4 let a client change the method; requests does, and drops the body), so
    it is not followed.  The message names the status and the URL to connect to instead."""


def redirect_guard(http, named: str):
    """A response hook for the ``requests`` session ``http``, whose user named ``named``: a
    redirect to another origin raises :class:`CrossOriginRefused` before requests follows it
    (requests would carry the caller's headers, the DPoP proof, the body and, across a port change
    on one host, its cookies there), and one that would turn a POST into a GET
    :class:`RedirectRefused`.  Other same-origin redirects go on, each closed with its body
    unread (:func:`close_redirect_unread`)."""

    def refuse_redirect_elsewhere(response, **kwargs):
        if response.is_redirect:
            target = urljoin(response.url, http.get_redirect_target(response) or "")
            close_redirect_unread(response)
            if not same_origin(target, named):
                raise CrossOriginRefused("a redirect", named, target)
            if response.status_code in (301, 302, 303) and response.request.method == "POST":
                raise RedirectRefused(
                    f"the server answered a POST with HTTP {response.status_code} to "
                    f"{origin_text(target)}{urlsplit(target).path}, which would send a GET without "
                    "the message; connect to that URL instead (307 and 308 redirects are followed)"
                )
        return response

    return refuse_redirect_elsewhere


def close_redirect_unread(response, **kwargs):
    """A ``requests`` response hook: a redirect (``response.is_redirect``) is closed with its body
    unread, its status and headers (the ``Location``) still readable; any other answer is left
    as it is.

    requests reads a redirect's whole body before it goes on (``Session.resolve_redirects``,
    "consume socket so it can be released"): to follow it, and with ``allow_redirects=False``
    to work out ``response.next``, ``stream=True`` or not.  A peer answering 3xx with an endless
    body would have the client hold it all.  Once closed, nothing more is read (the connection
    is closed, never back in the pool).  A redirect's content is at most a note for a person
    (RFC 9110 §15.4.2, §15.4.3, §15.4.8: "a short hypertext note with a hyperlink"), which no
    code here reads.  Installed on each session the project makes, after its other hooks; per request
    with a session a caller gave (:func:`redirects_unread`)."""
    if response.is_redirect:
        response.close()
    return response


def redirects_unread(http) -> dict:
    """The ``hooks=`` of one request sent with ``http`` (a ``requests.Session`` a caller may have
    given, or None / the ``requests`` module): the session's own response hooks first, then
    :func:`close_redirect_unread` (a request's ``hooks=`` replaces the session's in requests)."""
    hooks = getattr(http, "hooks", None)
    response_hooks = list(hooks.get("response", [])) if isinstance(hooks, dict) else []
    if close_redirect_unread not in response_hooks:
        response_hooks.append(close_redirect_unread)
    return {"response": response_hooks}


def origin(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` of ``url``, lowercased, with the scheme's default port filled in.

    A URL whose port cannot be read has port -1 (it matches no real origin).
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1
    return (
        scheme,
        (parts.hostname or "").lower(),
        port if port is not None else _DEFAULT_PORTS.get(scheme),
    )


def same_origin(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` have the same scheme, host and port (RFC 6454 §5); a URL without a
    host, or whose port cannot be read, has no origin and matches nothing."""
    mine, theirs = origin(a), origin(b)
    return mine == theirs and bool(mine[1]) and mine[2] != -1


def origin_text(url: str) -> str:
    """The origin of ``url`` as ``scheme://host[:port]`` (never its path, query or userinfo)."""
    scheme, host, port = origin(url)
    if ":" in host:
        host = f"[{host}]"
    shown = "" if port is None or port == _DEFAULT_PORTS.get(scheme) else f":{port}"
    return f"{scheme}://{host}{shown}" if scheme else "(no origin)"


def is_loopback(host: str | None) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ``::1``: names that never leave the machine."""
    if not host:
        return False
    host = host.lower().strip("[]")
    if host == "localhost":
        return True
    import ipaddress

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


#: A host made only of the characters of a numeric IPv4 spelling (``127.1``, ``0x7f.1``, ``2130706433``).
_NUMERIC_HOST = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}")


def names_this_machine(host: str | None) -> bool:
    """True when ``host`` (a URL's host as urllib reads it) reaches this machine in any spelling that a
    browser, urllib3 or the resolver accepts; broader than :func:`is_loopback` (which decides where
    plain http may go), this decides what a remote party may not point the client at.

    ``localhost`` and ``*.localhost`` (RFC 6761 §6.3), with a trailing dot or not; IPv4 in any form
    ``inet_aton`` and the WHATWG URL parser read (``127.1``, ``0x7f.0.0.1``, ``0177.0.0.1``,
    ``2130706433``, ``0``) in 127.0.0.0/8 or 0.0.0.0/8 (which Linux connects to this machine);
    ``::1``, ``::`` and their IPv4-mapped forms (``::ffff:127.0.0.1``); each percent-decoded first.
    """
    if not host:
        return False
    from urllib.parse import unquote

    # percent-decoded as urllib3 and browsers decode it (``%31%32%37.0.0.1``); an IPv6 zone's
    # ``%25`` becomes the ``%`` that ends the address below
    name = unquote(host).lower().strip("[]").rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    import ipaddress

    try:
        address: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(
            name.split("%", 1)[0]
        )
    except ValueError:
        if not _NUMERIC_HOST.fullmatch(name):
            return False
        import socket

        try:
            address = ipaddress.IPv4Address(socket.inet_aton(name))
        except OSError:
            return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if isinstance(address, ipaddress.IPv4Address):
        return address.is_loopback or address in ipaddress.IPv4Network("0.0.0.0/8")
    return address.is_loopback or address.is_unspecified


# -- the server's side: which Host and Origin may reach a local server (DNS rebinding) -------------

#: The names a local server answers to when ``allowed_hosts`` is not given.
LOCAL_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")

#: RFC 9110 §7.2 / RFC 3986 §3.2.2: a Host is one name or address, with an optional port.  A
#: list (``a,b``: duplicated headers joined) or anything else is refused before it is compared.
_HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-.]+)(:[0-9]{1,5})?")


def host_allowed(host: str, allowed: list | None) -> bool:
    """True when a request's ``Host`` header names this server: one of ``allowed`` (``["*"]``: any),
    or, when ``allowed`` is None, a local name (:data:`LOCAL_HOSTS`).

    The guard against DNS rebinding (2025-11-25 basic/transports §Security Warning): a page on
    ``evil.example`` whose name resolves to 127.0.0.1 still sends ``Host: evil.example``.  A value
    that is not one host with an optional port (a list, userinfo, spaces, empty) is refused.
    """
    if not _HOST.fullmatch(host):
        return False
    if allowed is not None and "*" in allowed:
        return True
    name = host.rsplit(":", 1)[0] if host.count(":") == 1 or host.startswith("[") else host
    if name.startswith("[") and "]" in name:
        name = name[: name.index("]") + 1]
    names = LOCAL_HOSTS if allowed is None else allowed
    return name.lower() in names or host.lower() in names


def origin_allowed(origin: str, allowed: list | None) -> bool:
    """True when a request's ``Origin`` header may use this server: one of ``allowed`` (``["*"]``:
    any), or, when ``allowed`` is None, a page served from this machine (2025-11-25
    basic/transports §Security Warning: servers "MUST validate the Origin header")."""
    if allowed is not None:
        return "*" in allowed or origin in allowed
    host = urlsplit(origin).hostname or ""
    return host in ("localhost", "127.0.0.1", "::1")
