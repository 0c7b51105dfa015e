"""The inspector's records of HTTP traffic: the observer's reports as JSON-safe, masked records.

:func:`http_record` turns an :class:`~mcp_ref.http.exchange_trace.HttpRequestSeen` or
:class:`~mcp_ref.http.exchange_trace.HttpResponseSeen` into a record of kind ``"http"``,
:func:`sse_record` an :class:`~mcp_ref.http.exchange_trace.SseEventSeen` into one of kind
``"sse"`` (the fields are :mod:`mcp_ref.inspector.conversation`'s; ``seq`` and ``time`` are
added there):

- ``http``: ``exchange``, ``phase`` (``"request"`` or ``"response"``), ``method`` and ``url``
  (a request's; null on a response), ``status`` and ``reason`` (a response's; null on a
  request), ``headers`` (``[[name, value], ...]``, masked; a value longer than
  :data:`MAX_BODY_TEXT` cut there and marked with a final ``…``), ``mcp_headers`` (below), ``body``
  (text, masked; null when there is none), ``truncated`` (true when the body was cut at
  :data:`MAX_BODY_TEXT`), ``sse`` (true for a response that is an event stream);
- ``sse``: ``exchange``, ``event_id``, ``event``, ``data`` (masked, cut as a body), ``retry``.

``mcp_headers`` lists the protocol's own headers, each ``{"name", "raw", "decoded"}``:
``MCP-Protocol-Version`` and ``Mcp-Session-Id`` (decoded as they are), and the 2026-07-28
``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` whose values may be Base64 (``=?base64?...?=``,
2026-07-28 basic/transports/streamable-http §Value Encoding): ``decoded`` is the value they carry
(null when it does not decode; the mask when the value is masked); any other ``Mcp-`` header is listed as it is.

:func:`carried_messages` gives the JSON-RPC messages a body or an event's data holds, so the
conversation can link each message to the exchange that carried it.
"""

from __future__ import annotations

import json
from typing import Any

from ..http.exchange_trace import HttpRequestSeen, HttpResponseSeen, SseEventSeen
from ..http.headers import decode_value
from ..workbench.deep_json import loads as loads_deep, too_deep
from .masking import (
    MASK,
    hidden_strings,
    mask_free_text,
    mask_headers,
    mask_known_shape,
    mask_url,
)

#: A body or an event's data is shown up to this many characters (64 KiB); the rest is cut.
MAX_BODY_TEXT = 64 * 1024
#: Headers of the protocol whose values are shown as they are.
PLAIN_MCP_HEADERS = frozenset({"mcp-protocol-version", "mcp-session-id"})
#: 2026-07-28 headers whose values may be Base64-encoded (§Value Encoding).
ENCODED_MCP_HEADERS = frozenset({"mcp-method", "mcp-name"})


def mcp_headers(headers) -> list[dict[str, Any]]:
    """The protocol's headers among ``headers`` (pairs), each ``{"name", "raw", "decoded"}``."""
    found = []
    for name, value in headers:
        lower = name.lower()
        if lower in PLAIN_MCP_HEADERS:
            found.append({"name": name, "raw": value, "decoded": value})
        elif lower in ENCODED_MCP_HEADERS or lower.startswith("mcp-param-"):
            try:
                decoded: str | None = value if value == MASK else decode_value(value)
            except ValueError:
                decoded = None
            found.append({"name": name, "raw": value, "decoded": decoded})
        elif lower.startswith("mcp-"):  # one of a later revision's, or an extension's
            found.append({"name": name, "raw": value, "decoded": value})
    return found


def body_text(body: bytes | None, content_type: str | None = None) -> tuple[str | None, bool]:
    """``(text, truncated)``: a body decoded (UTF-8, bad bytes replaced), masked and cut at
    :data:`MAX_BODY_TEXT` (:func:`masked_and_cut`); ``(None, False)`` for no body."""
    if body is None:
        return None, False
    text = body.decode("utf-8", errors="replace")
    return masked_and_cut(text, content_type)


def masked_and_cut(text: str, content_type: str | None = None) -> tuple[str, bool]:
    """``(text, truncated)``: a body or an event's data masked and cut at :data:`MAX_BODY_TEXT`.

    JSON or a form is masked whole, then cut (a secret key's value may come after the cut's
    place, its key before it); text of no known shape is cut first, then masked as cut short
    (:func:`~.masking.mask_free_text`): reading free text takes time as its length does, and a
    body of a megabyte is shown as its first 64 KiB are."""
    masked = mask_known_shape(text, content_type)
    if masked is not None:
        return cut(masked)
    kept, truncated = cut(text)
    return mask_free_text(kept, cut_short=truncated), truncated


def cut(text: str) -> tuple[str, bool]:
    """``(text, truncated)``: ``text`` cut at :data:`MAX_BODY_TEXT` characters."""
    if len(text) <= MAX_BODY_TEXT:
        return text, False
    return text[:MAX_BODY_TEXT], True


def _cut_header(value: str) -> str:
    """A header's value as shown: cut as a body is (:func:`cut`), the cut marked with ``…``."""
    shown, truncated = cut(value)
    return shown + "…" if truncated else shown


def _content_type(headers) -> str | None:
    for name, value in headers:
        if name.lower() == "content-type":
            return value
    return None


def masked_headers(seen: HttpRequestSeen | HttpResponseSeen) -> list[list[str]]:
    """The headers of a request or a response, masked (:func:`~.masking.mask_headers`); a
    request's ``Mcp-Param-*`` or ``Mcp-Name`` header is masked as well when the value it carries
    is one the body's masking hides (:func:`~.masking.hidden_strings`: ``Mcp-Name`` mirrors a
    ``resources/read``'s ``params.uri``, whose credentials the body's masking hides).

    The header's name is the tool's choice (``password`` declared ``x-mcp-header: Pw`` sends
    ``Mcp-Param-Pw``), so the value tells, not the name: "Any server that processes the message
    body MUST validate that encoded header values, after decoding if Base64-encoded, match the
    corresponding values in the request body" (2026-07-28 basic/transports/streamable-http
    §Server Behavior for Custom Headers); a header is compared both as sent and decoded
    (§Value Encoding: ``=?base64?...?=``)."""
    headers = mask_headers(seen.headers)
    if not isinstance(seen, HttpRequestSeen):
        return headers
    params = [pair for pair in headers if _carries_body_value(pair[0].lower())]
    if not params:
        return headers
    hidden = hidden_strings(carried_messages(seen.body))
    for pair in params:
        try:
            decoded = decode_value(pair[1])
        except ValueError:
            decoded = pair[1]
        if pair[1] in hidden or decoded in hidden:
            pair[1] = MASK
    return headers


def _carries_body_value(name: str) -> bool:
    """True for a 2026-07-28 header that mirrors a value of the body: ``Mcp-Name``, ``Mcp-Param-*``."""
    return name == "mcp-name" or name.startswith("mcp-param-")


def http_record(seen: HttpRequestSeen | HttpResponseSeen) -> dict[str, Any]:
    """The ``http`` record of a request or a response (without ``seq`` and ``time``)."""
    content_type = _content_type(seen.headers)
    body, truncated = body_text(seen.body, content_type)
    request = isinstance(seen, HttpRequestSeen)
    headers = [[name, _cut_header(value)] for name, value in masked_headers(seen)]
    return {
        "kind": "http",
        "exchange": seen.exchange,
        "phase": "request" if request else "response",
        "method": seen.method if isinstance(seen, HttpRequestSeen) else None,
        "url": mask_url(seen.url) if isinstance(seen, HttpRequestSeen) else None,
        "status": seen.status if isinstance(seen, HttpResponseSeen) else None,
        "reason": seen.reason if isinstance(seen, HttpResponseSeen) else None,
        "headers": headers,
        "mcp_headers": mcp_headers(headers),
        "body": body,
        "truncated": truncated,
        "sse": not request
        and (content_type or "").split(";")[0].strip().lower() == "text/event-stream",
    }


def sse_record(seen: SseEventSeen) -> dict[str, Any]:
    """The ``sse`` record of one event (without ``seq`` and ``time``)."""
    data, truncated = masked_and_cut(seen.data)
    return {
        "kind": "sse",
        "exchange": seen.exchange,
        "event_id": seen.event_id,
        "event": seen.event,
        "data": data,
        "truncated": truncated,
        "retry": seen.retry,
    }


def carried_messages(data: bytes | str | None) -> list[Any]:
    """The JSON-RPC messages a body or an event's data carries (a batch's each), parsed (at any
    depth: one nested deeper than the session reads without recursing); none when it is not JSON."""
    if not data:
        return []
    try:
        parsed = loads_deep(data) if too_deep(data) else json.loads(data)
    except (ValueError, RecursionError):
        return []
    return parsed if isinstance(parsed, list) else [parsed]
