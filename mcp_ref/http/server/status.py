"""What an HTTP refusal answers: its status, by ONE table, and its JSON-RPC error body.

Every refusal of the HTTP layer is an :class:`HttpError` subclass (or a core error the table names,
:class:`~mcp_ref.errors.LimitExceeded`); its status line comes from :data:`STATUS_OF`, never
from the place that raises it.  A 2026-07-28 JSON-RPC error answered by a handler gets its status
from its code (:data:`STATUS_OF_CODE`, :func:`modern_status`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

from ...errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    LimitExceeded,
    McpError,
    concise,
)


class HttpError(Exception):
    """An HTTP error answer with a JSON-RPC error body (its ``id`` omitted unless a request was read).

    Its status is its class's in :data:`STATUS_OF`; ``status=`` overrides it only for a JSON-RPC
    error whose status follows its code (:meth:`modern`).
    """

    def __init__(
        self,
        message: str,
        code: int = INVALID_REQUEST,
        *,
        headers: Iterable = (),
        request_id=None,
        data=None,
        status: str | None = None,
    ):
        super().__init__(message)
        self.message, self.code, self.headers = message, code, list(headers)
        self.request_id, self.data = request_id, data
        self.status = status or status_of(self)

    @classmethod
    def modern(cls, exc: McpError, request_id) -> HttpError:
        """A 2026-07-28 error raised before the request reached its handler, with its HTTP status."""
        return cls(
            exc.message,
            exc.code,
            request_id=request_id,
            data=exc.data,
            status=modern_status(exc.code, before_dispatch=True),
        )


class BadRequest(HttpError):
    """400: a malformed request, a missing or wrong header, a reused id."""


class Unauthorized(HttpError):
    """401: no valid bearer token (the OAuth protected resource; ``WWW-Authenticate`` in ``headers``)."""


class Forbidden(HttpError):
    """403: a Host or Origin that is not allowed (DNS-rebinding protection), or a token refused outright."""


class InsufficientScope(HttpError):
    """403 ``insufficient_scope``: the token lacks a scope this request needs (a step-up can fix it)."""


class NotFound(HttpError):
    """404: no such path, or no such session (ended, expired, another principal's)."""


class MethodNotAllowed(HttpError):
    """405: an HTTP method the endpoint does not serve (``Allow`` in ``headers``)."""


class NotAcceptable(HttpError):
    """406: the Accept header does not list what the answer may be."""


class PayloadTooLarge(HttpError):
    """413: a body over ``max_body_size``."""


class UnsupportedMediaType(HttpError):
    """415: a body that is not ``application/json``."""


class TooManyRequests(HttpError):
    """429: one client over a per-client cap (its open streams); ``Retry-After`` in ``headers``."""


class ServiceUnavailable(HttpError):
    """503: the server is full (its session table, a legacy stream's backlog, the worker's share of
    threads for streams); ``Retry-After`` in ``headers``."""


#: The status of every refusal, by its class (the first class of its MRO found here).
#: RFC 6585 §4: 429 for one client's excess (a rate limit, too many streams), where 503 would say
#: the whole server is unavailable.
STATUS_OF: dict[type[BaseException], str] = {
    BadRequest: "400 Bad Request",
    Unauthorized: "401 Unauthorized",
    Forbidden: "403 Forbidden",
    InsufficientScope: "403 Forbidden",
    NotFound: "404 Not Found",
    MethodNotAllowed: "405 Method Not Allowed",
    NotAcceptable: "406 Not Acceptable",
    PayloadTooLarge: "413 Payload Too Large",
    UnsupportedMediaType: "415 Unsupported Media Type",
    TooManyRequests: "429 Too Many Requests",
    LimitExceeded: "429 Too Many Requests",
    ServiceUnavailable: "503 Service Unavailable",
    HttpError: "400 Bad Request",
}

#: The HTTP status of a 2026-07-28 JSON-RPC error, by its code (streamable-http §Protocol Version
#: Header, §Server Validation; basic/index §_meta): 404 for an unknown method; 400 for a header
#: mismatch, a missing client capability, an unsupported version; any other code: 200.
STATUS_OF_CODE: dict[int, str] = {
    METHOD_NOT_FOUND: "404 Not Found",
    HEADER_MISMATCH: "400 Bad Request",
    MISSING_REQUIRED_CLIENT_CAPABILITY: "400 Bad Request",
    UNSUPPORTED_PROTOCOL_VERSION: "400 Bad Request",
}


def status_of(exc: BaseException) -> str:
    """The status line of refusal ``exc`` (:data:`STATUS_OF`)."""
    for kind in type(exc).__mro__:
        status = STATUS_OF.get(kind)
        if status is not None:
            return status
    raise LookupError(f"no HTTP status for {type(exc).__name__}")


def modern_status(code: int, *, before_dispatch: bool = False) -> str:
    """The HTTP status of a 2026-07-28 JSON-RPC error (:data:`STATUS_OF_CODE`); a malformed
    envelope (-32602, checked before dispatch) is 400 too."""
    if code == INVALID_PARAMS and before_dispatch:
        return "400 Bad Request"
    return STATUS_OF_CODE.get(code, "200 OK")


def refusal(exc: LimitExceeded, request_id) -> HttpError:
    """A request refused over a rate limit before dispatch: 429 Too Many Requests with
    ``Retry-After`` (RFC 6585 §4), its body the JSON-RPC error (-31005, ``data.retryAfter``)."""
    retry = str(max(1, math.ceil(exc.retry_after or 1)))
    return HttpError(
        exc.message,
        exc.code,
        headers=[("Retry-After", retry)],
        request_id=request_id,
        data=exc.data,
        status=status_of(exc),
    )


def error_answer(start_response, exc: HttpError) -> list[bytes]:
    """The WSGI answer of refusal ``exc``: its status, its headers, a JSON-RPC error body.

    Every HTTP refusal is answered here, so its message is cut here as ``McpError.to_error`` cuts
    a handler's (``errors.concise``: at ``errors.MAX_MESSAGE`` characters, the last one "…"): a
    peer's string echoed in it (a ``_meta`` protocol version, a body's method or name a header
    does not match) cannot make the answer grow with it.  JSON-RPC 2.0 §5.1: "The message SHOULD be limited to a concise single
    sentence."
    """
    error = {"code": exc.code, "message": concise(exc.message)}
    if exc.data is not None:
        error["data"] = exc.data
    answer = {"jsonrpc": "2.0", "error": error}
    if exc.request_id is not None:
        answer["id"] = exc.request_id
    body = json.dumps(answer).encode()
    start_response(
        exc.status,
        [("Content-Type", "application/json"), ("Content-Length", str(len(body))), *exc.headers],
    )
    return [body]
