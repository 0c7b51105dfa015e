"""Why an HTTP client found no MCP server at its URL, in words that say what to do.

Every way of not reaching a server ends in one exception, :class:`~mcp_ref.errors.ServerUnreachable`
(a ``ConnectionError``), whichever era or transport the client tried (2026-07-28's
``server/discover``, the handshake's ``initialize``, the 2024-11-05 HTTP+SSE ``GET``):

* nothing answered (:func:`unreachable`): the connection was refused, the host name is unknown,
  TLS failed, or connecting took longer than ``connect_timeout``; ``status`` is None;
* something answered, but not MCP (:func:`not_mcp`): an HTTP 404 or 405 to the first request, an
  HTML page, a JSON body that is no JSON-RPC answer, a 502 from a proxy; ``status`` is the HTTP
  status of that answer.  The message names the URL, what was tried, and a URL to try when one
  is likely (:func:`advice`: ``/mcp`` appended, a trailing slash removed).

An answer that is MCP's own refusal stays what it is: a JSON-RPC error (an
:class:`~mcp_ref.errors.McpError`), a 401 or 403 that asks for authorization, a 429.  Once a session
is established, a 404 is no longer "not here": it says the session expired, and the client starts a
new one (2025-11-25 basic/transports §Session Management; ``HttpClientTransport._renew_session``).
"""

from __future__ import annotations

import json
import re

from ..errors import ServerUnreachable

__all__ = [
    "advice",
    "checked_headers",
    "checked_url",
    "content_kind",
    "elsewhere",
    "failed_because",
    "format_tb",
    "no_answer_within",
    "not_mcp",
    "refusal_of_mcp",
    "shown",
    "unreachable",
]

#: HTTP statuses that are MCP's own refusals, whatever the body: authorization (401, 403: 2025-11-25
#: basic/authorization) and a rate limit (429).  Any other error status to a first request, without
#: a JSON-RPC error in its body, is no MCP answer.
_MCP_STATUSES = frozenset({401, 403, 429})


def shown(url: str) -> str:
    """``url`` as a message shows it: without its userinfo (``***@``) or its query's contents
    (``?...``), either of which may hold a credential; a message may reach a log."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL urllib reads (an unclosed "["): the same, by its text
        scheme, sep, rest = url.rpartition("://")
        rest = f"***@{rest.rpartition('@')[2]}" if "@" in rest else rest
        return f"{scheme}{sep}{rest.split('?')[0]}{'?...' if '?' in rest else ''}"
    host = parts.netloc.rpartition("@")[2]
    netloc = f"***@{host}" if "@" in parts.netloc else host
    return urlunsplit(parts._replace(netloc=netloc, query="..." if parts.query else ""))


#: What urllib3 and http.client refuse in a header (RFC 9110 §5.5: no CR, LF or NUL in a field
#: value; requests refuses leading whitespace too).
_BAD_HEADER_VALUE = re.compile(r"[\r\n\0]|^\s")


def checked_headers(headers: dict | None) -> dict:
    """``headers`` (the caller's ``headers=``), or ValueError naming the header whose value cannot
    be sent: a line break, a NUL or leading whitespace (``"Bearer " + token`` with a token read
    from a file keeps its trailing newline).  The value is never shown: it may be a credential."""
    for name, value in (headers or {}).items():
        if isinstance(value, str) and _BAD_HEADER_VALUE.search(value):
            raise ValueError(
                f"the value of the header {name!r} holds a line break, a NUL or leading whitespace, "
                "which HTTP does not allow (a token read from a file keeps its trailing newline: "
                "strip it); the value is not shown"
            )
    return dict(headers or {})


#: In an exception's text: a URL's query (``?api_key=...``, to the next space or quote) and userinfo.
_QUERY = re.compile(r"\?[^\s'\"()]+")
_USERINFO = re.compile(r"//[^/\s'\"@]*@")


def failed_because(exc: BaseException) -> str:
    """Why an HTTP request failed, for a message or a log: the exception's text with any URL's
    query and userinfo elided; for a header value HTTP cannot carry, what is wrong, never the value
    (requests and http.client quote it whole: ``'Bearer <token>\\n'``, from an auth hook)."""
    text = str(exc)
    if isinstance(exc, ValueError) and "header" in text.lower():
        return (
            f"{type(exc).__name__}: a header's value holds a line break or leading whitespace "
            "(not shown)"
        )
    return _USERINFO.sub("//***@", _QUERY.sub("?...", text)) or type(exc).__name__


def format_tb(exc: BaseException) -> str:
    """Where ``exc`` was raised (its traceback's frames), without its text (:func:`failed_because`)."""
    import traceback

    return "".join(traceback.format_tb(exc.__traceback__))


def checked_url(url: str) -> str:
    """``url``, or ValueError when it cannot name an MCP server over HTTP: a scheme other than
    ``http``/``https`` (or none: ``localhost:8000/mcp``), or no host; the message says what to
    write instead."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        good = parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
        good = good and (parts.port is None or parts.port > 0)  # the port: ValueError past 65535
    except (ValueError, TypeError, AttributeError):  # not a str, an unclosed [, a bad port
        good = False
    if not good:
        schemeless = isinstance(url, str) and "://" not in url
        better = shown(f"http://{url}") if schemeless else None
        written = (
            better[len("http://") :] if better else shown(url) if isinstance(url, str) else url
        )
        hint = f": try {better}" if better else ""
        raise ValueError(
            "the server URL must be http:// or https://, with a host (and a port from 1 to 65535), "
            f"not {written!r}{hint}"
        )
    return url


def refusal_of_mcp(status: int, has_jsonrpc_error: bool) -> bool:
    """Whether an HTTP error ``status`` to a first request is MCP's own refusal (kept as an
    :class:`~mcp_ref.errors.McpError`) rather than a sign that no MCP server is at the URL.

    404 and 405 are "not here" even with a JSON-RPC error body (a server answering for another
    path); 401, 403 and 429 are MCP's whatever the body; any other status is MCP's when its body
    holds a JSON-RPC error (a server refusing the request, e.g. an unsupported version)."""
    if status in (404, 405):
        return False
    return status in _MCP_STATUSES or has_jsonrpc_error


def jsonrpc_error_in(body: bytes | None) -> dict | None:
    """The JSON-RPC error the body of an HTTP error holds (an object with an integer ``code``), or
    None (no body, not JSON, nested too deep, no such error)."""
    try:
        parsed = json.loads(body) if body else None
    except (ValueError, RecursionError):
        return None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    return error if isinstance(error, dict) and isinstance(error.get("code"), int) else None


def http_failure(status_line: str, status: int, error: dict | None, hint: str) -> dict:
    """The JSON-RPC error a request answered with HTTP ``status`` fails with: ``error`` (the
    body's, :func:`jsonrpc_error_in`) with ``status_line`` in front of its message, else an
    internal error saying ``status_line``; then ``hint`` (:func:`advice`), and
    ``data.httpStatus``."""
    if error is None:
        failure: dict = {"code": -32603, "message": status_line}
    else:
        failure = dict(error, message=f"{status_line}: {error.get('message', '')}")
    if hint:
        failure["message"] = f"{failure['message'].rstrip('. ')}. {hint}"
    failure.setdefault("data", {})
    if isinstance(failure["data"], dict):
        failure["data"] = {**failure["data"], "httpStatus": status}
    return failure


def advice(status: int, url: str, headers, *, credentials: bool, usual: str = "/mcp") -> str:
    """What to do about an HTTP ``status`` answered at ``url``, a sentence ("" when there is nothing
    to say).

    404 or 405 at the first request: nothing takes MCP's requests there; the message names the URL
    to try (the same one without its trailing slash, or with ``usual`` — ``/mcp``, ``/sse`` for the
    HTTP+SSE transport — appended).  401: the server wants authorization (2025-11-25
    basic/authorization: a 401 carries ``WWW-Authenticate`` with the ``resource_metadata`` URL,
    named here when present); pass ``auth=OAuth()``, or, when credentials were sent
    (``credentials``), they were refused.
    """
    from urllib.parse import urlsplit, urlunsplit

    if status in (404, 405):
        url = shown(url)
        parts = urlsplit(url)
        path = parts.path or "/"
        if path != "/" and path.endswith("/"):
            better = urlunsplit(parts._replace(path=path.rstrip("/") or "/"))
            return f"Nothing is served at {path}: try {better} (without the trailing slash)"
        return f"Nothing is served at {path}: {elsewhere(url, usual)}"
    if status == 401:
        found = re.search(
            r'resource_metadata="?([^",\s]+)', headers.get("WWW-Authenticate", "") or ""
        )
        where = f" (its resource metadata: {found.group(1)})" if found else ""
        if credentials:
            return (
                f"The server refused the credentials sent (auth= or an Authorization header){where}"
            )
        return (
            "This server needs authorization: pass auth=OAuth() to Client.http (from mcp_ref.oauth import "
            f"OAuth), or a token in headers={{'Authorization': 'Bearer ...'}}{where}"
        )
    return ""


def elsewhere(url: str, usual: str = "/mcp") -> str:
    """Where to look instead of ``url``: ``usual`` (``/mcp``; ``/sse`` for the HTTP+SSE transport)
    appended, unless ``url`` already ends with it."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(shown(url))
    path = parts.path or "/"
    if path.rstrip("/").endswith(usual):
        return "check the URL the server says it serves MCP at"
    better = urlunsplit(parts._replace(path=path.rstrip("/") + usual))
    servers = "HTTP+SSE servers" if usual == "/sse" else "MCP servers"
    return f"{servers} are usually at {usual} — try {better}"


def content_kind(content_type: str) -> str:
    """An answer of ``content_type`` in words: "a text/html page", "an answer of type text/plain"."""
    if not content_type:
        return "an answer without a Content-Type"
    if content_type.lower() == "text/html":
        return "a text/html page"
    return f"an answer of type {content_type}"


def not_mcp(url: str, status: int, answer: str, tried: str, hint: str = "") -> ServerUnreachable:
    """The :class:`ServerUnreachable` of a server that answered ``tried`` (e.g. "initialize") with
    ``answer`` (e.g. "HTTP 404 Not Found", "a text/html page"), which is not MCP; ``hint`` says
    what to do (:func:`advice`), else the message says to check the URL."""
    if not hint and status >= 500:
        hint = "the server (or a proxy in front of it) failed: check that the MCP server runs"
    hint = hint or "check the URL the server says it serves MCP at"
    error = ServerUnreachable(
        f"nothing answers MCP at {shown(url)} ({answer} to {tried}). {_sentence(hint)}"
    )
    error.status = status
    return error


def unreachable(
    url: str, exc: Exception, connect_timeout: float | None = None
) -> ServerUnreachable:
    """A :class:`ServerUnreachable` for a connection to ``url`` that failed with ``exc`` (from
    ``requests``): the reason in a few words, not urllib3's nest, and what to do about it."""
    import requests

    text = str(exc)
    ssl = re.search(r"\[SSL: ([A-Z_]+)\] ([^'\"()]+?)(?: \(_ssl|['\"]|$)", text)
    errno = re.findall(r"\[Errno -?\d+\] ([^'\"\)\]]+)", text)
    if ssl is not None or isinstance(exc, requests.exceptions.SSLError):
        reason = f"TLS failed: [{ssl.group(1)}] {ssl.group(2).strip()}" if ssl else "TLS failed"
        if ssl is not None and ssl.group(1) == "CERTIFICATE_VERIFY_FAILED":
            hint = (
                "pass verify= the path of the CA bundle that signed the server's certificate "
                "(or set REQUESTS_CA_BUNDLE)"
            )
        elif ssl is not None and ssl.group(1) == "WRONG_VERSION_NUMBER":
            hint = "the server may not speak TLS: try the URL with http://"
        else:
            hint = "check the server's TLS setup and the URL's scheme"
    elif isinstance(exc, requests.exceptions.ConnectTimeout) or (
        not errno and "timed out" in text.lower()
    ):
        return no_answer_within(url, connect_timeout)
    elif "NameResolutionError" in text or any(
        "name" in found.lower() or "nodename" in found.lower() for found in errno
    ):
        reason = f"unknown host ({errno[-1].strip().lower()})" if errno else "unknown host"
        hint = "check the host name in the URL"
    elif errno:
        reason = errno[-1].strip().lower()
        hint = (
            "is the server running, and listening on that host and port?"
            if "refused" in reason
            else "check the URL and that the server is running"
        )
    else:  # urllib3's words, a query in them elided as in shown()
        reason = re.sub(r"\?[^\s'\")]*", "?...", text)
        hint = "check the URL and that the server is running"
    return ServerUnreachable(f"cannot reach {shown(url)}: {reason}. {_sentence(hint)}")


def no_answer_within(url: str, seconds: float | None) -> ServerUnreachable:
    """The :class:`ServerUnreachable` of a connection to ``url`` not made within ``seconds``."""
    waited = f" within {seconds:g} s" if seconds is not None else ""
    return ServerUnreachable(
        f"cannot reach {shown(url)}: no answer to connect{waited}. Check the host and port, and "
        "any firewall between; connect_timeout= waits longer"
    )


def _sentence(hint: str) -> str:
    """``hint`` as a sentence: its first letter upper case, no full stop added."""
    if hint.endswith(".") and not hint.endswith("..."):  # (a URL shown ends with "?...")
        hint = hint[:-1]
    return hint[:1].upper() + hint[1:]
