"""JSON-RPC 2.0 messages: four plain dataclasses, a parser and a serialiser.

No I/O happens here: ``parse`` takes the bytes of one transport message and
returns a message (or a list of them for a batch); ``serialize`` does the
reverse.  Messages are classified by which keys are present, as JSON-RPC 2.0
§4-§5 define them:

=========================  =====================================
keys present               message
=========================  =====================================
``method`` and ``id``      :class:`Request`
``method``, no ``id``      :class:`Notification`
``id`` and ``result``      :class:`Response`
``id`` and ``error``       :class:`ErrorResponse`
=========================  =====================================
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InvalidRequest, ParseError

RequestId = str | int

#: The deepest nesting of arrays and objects a message may have.  Real MCP messages stay far below
#: it; deeper JSON is a parse error, so nothing downstream (schema validation, encoding) recurses
#: without bound on what a peer sent.
MAX_NESTING = 64
#: The most messages one batch may hold (JSON-RPC 2.0 §6 sets none).  A larger batch is one
#: Invalid Request, answered before any of its items is looked at.
MAX_BATCH = 1000


@dataclass(slots=True)
class Request:
    """A call that expects exactly one answer carrying the same ``id``."""

    id: RequestId
    method: str
    params: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        if self.params is None:
            return {"jsonrpc": "2.0", "id": self.id, "method": self.method}
        return {"jsonrpc": "2.0", "id": self.id, "method": self.method, "params": self.params}


@dataclass(slots=True)
class Notification:
    """A one-way message: it is never answered."""

    method: str
    params: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        if self.params is None:
            return {"jsonrpc": "2.0", "method": self.method}
        return {"jsonrpc": "2.0", "method": self.method, "params": self.params}


@dataclass(slots=True)
class Response:
    """A successful answer to the request with the same ``id``."""

    id: RequestId
    result: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        return {"jsonrpc": "2.0", "id": self.id, "result": self.result}


@dataclass(slots=True)
class ErrorResponse:
    """A failed answer.  ``id`` is None only when the request's id could not be read.

    Such an answer has no ``id`` key (2025-11-25 basic §Error Responses: ``id?``,
    "except in error cases where the ID could not be read"), or ``"id": null``
    when ``null_id`` is set — JSON-RPC 2.0 §5's form, for peers on older revisions.
    """

    id: RequestId | None
    error: dict[str, Any]
    null_id: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The wire form."""
        if self.id is None and not self.null_id:
            return {"jsonrpc": "2.0", "error": self.error}
        return {"jsonrpc": "2.0", "id": self.id, "error": self.error}


Message = Request | Notification | Response | ErrorResponse


def valid_id(value: Any) -> bool:
    """True for an id MCP allows: a string or an integer, never null (MCP basic §Requests).

    ``bool`` is excluded even though it subclasses ``int`` in Python.
    """
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def parse(data: bytes | str) -> Message | list[Message | InvalidRequest]:
    """Parse one transport message.

    Returns a message, or a ``list`` for a batch, whose items are messages or
    :class:`~mcp_ref.errors.InvalidRequest` instances (one per bad item, so
    the good items of a batch are still served).

    Raises :class:`~mcp_ref.errors.ParseError` for bytes that are not UTF-8 JSON (RFC 8259:
    ``NaN`` and ``Infinity`` are not JSON) or that nest deeper than :data:`MAX_NESTING`, and
    :class:`~mcp_ref.errors.InvalidRequest` (``.request_id`` set when an id could be read) for
    JSON that is not a JSON-RPC message, a batch past :data:`MAX_BATCH`, or an answer too deep.
    """
    if isinstance(data, (bytes, bytearray)):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ParseError("Parse error: message is not valid UTF-8") from None
    try:
        obj = _decode(data)
        if data.count("[") + data.count("{") > MAX_NESTING:
            from .unparsed import nesting  # loaded only for a message with that many brackets

            if nesting(data) > MAX_NESTING:
                raise RecursionError  # as the decoder's own guard (far below what a stack takes) does
    except RecursionError:  # an answer whose id can be read is refused as that request's (unparsed)
        from .unparsed import too_deep

        raise too_deep(data, MAX_NESTING) from None
    except ValueError as exc:  # not JSON (its -32700 made where parse errors are handled)
        from .unparsed import not_json

        raise not_json(exc) from None
    if isinstance(obj, list):
        # JSON-RPC 2.0 §6: "If the batch rpc call itself fails to be recognized as
        # an valid JSON or as an Array with at least one value, the response from
        # the Server MUST be a single Response object."
        if not obj:
            raise _invalid("Invalid Request: empty batch")
        if len(obj) > MAX_BATCH:
            raise _invalid(
                f"Invalid Request: a batch of {len(obj)} messages; the limit is {MAX_BATCH}"
            )
        items: list[Message | InvalidRequest] = []
        for item in obj:
            try:
                items.append(from_dict(item))
            except InvalidRequest as exc:
                items.append(exc)
        return items
    return from_dict(obj)


def _refuse_constant(name: str) -> Any:
    raise ParseError(f"Parse error: {name} is not a JSON value")


_decode = json.JSONDecoder(parse_constant=_refuse_constant).decode


def starts_batch(data: bytes) -> bool:
    """True when a transport message is a JSON array (a batch), judged by its first non-blank byte.

    Lets a receiver refuse a batch its revision does not allow before parsing it.
    """
    # (bytes.lstrip copies nothing from a message that starts with "{" or "[", the usual case)
    return data.lstrip(b" \t\r\n")[:1] == b"["


def from_dict(obj: Any) -> Message:
    """Classify one decoded JSON value as a message (raises InvalidRequest)."""
    if not isinstance(obj, dict):
        raise _invalid("Invalid Request: a message must be a JSON object")
    raw_id = obj.get("id")
    # valid_id() of decoded JSON
    usable_id = raw_id if type(raw_id) in (int, str) else None
    if obj.get("jsonrpc") != "2.0":
        raise _invalid('Invalid Request: "jsonrpc" must be "2.0"', usable_id, obj)
    if "method" in obj:
        method = obj["method"]
        if not isinstance(method, str):
            raise _invalid('Invalid Request: "method" must be a string', usable_id)
        params = obj.get("params")
        if params is not None and not isinstance(params, dict):
            raise _invalid('Invalid Request: "params" must be an object', usable_id)
        if "id" not in obj:
            return Notification(method, params)
        if usable_id is None:
            # MCP basic §Requests: "Unlike base JSON-RPC, the ID MUST NOT be null."
            raise _invalid('Invalid Request: "id" must be a string or an integer (not null)')
        return Request(usable_id, method, params)
    has_result, has_error = "result" in obj, "error" in obj
    if has_result == has_error:
        raise _invalid(
            "Invalid Request: a message needs a method, or a result or an error (not both)",
            usable_id,
            obj,
        )
    if has_result:
        if usable_id is None:
            raise _invalid('Invalid Request: a response needs a string or integer "id"', None, obj)
        result = obj["result"]
        if not isinstance(result, dict):
            raise _invalid('Invalid Request: "result" must be an object', usable_id, obj)
        return Response(usable_id, result)
    error = obj["error"]
    if not isinstance(error, dict) or not isinstance(error.get("code"), int):
        raise _invalid(
            'Invalid Request: "error" must be an object with an integer "code"',
            usable_id,
            obj,
        )
    if raw_id is not None and usable_id is None:
        raise _invalid('Invalid Request: bad "id" in error response', None, obj)
    # An error without an id (or with id null) answers a message whose id could not be read.
    return ErrorResponse(usable_id, error)


def _invalid(message: str, request_id: RequestId | None = None, obj: Any = ()) -> InvalidRequest:
    """The refusal of ``obj`` (the decoded message; none by default) as not a JSON-RPC message."""
    exc = InvalidRequest(message)
    exc.request_id = request_id
    # JSON-RPC 2.0 §5: a Response is the reply to a request (it has "result" or "error"); nothing
    # replies to one, however malformed ("id" null included): the session fails the request it
    # answers instead (InvalidRequest.answer).
    exc.answer = "method" not in obj and ("result" in obj or "error" in obj)
    return exc


# No check for a value that holds itself: it raises RecursionError instead of ValueError, which every
# caller of serialize() already takes for "cannot be sent" (the session's writes, a tool's result), and
# no message pays for the bookkeeping of each object it holds.
_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=False, check_circular=False).encode


def serialize(message: Message | list[Message]) -> bytes:
    """The bytes of one message (or a batch list of messages), as compact JSON.

    The output is ASCII with every control character escaped, so it never
    contains a newline: safe for newline-delimited transports (stdio).  A value
    JSON cannot carry (``NaN``, an infinity, an object that is not JSON) raises
    ValueError or TypeError, and one that holds itself (or nests past the interpreter's
    recursion limit) RecursionError: nothing invalid is ever sent.
    """
    if isinstance(message, list):
        return serialize_items(message)
    return _encode(message.to_dict()).encode("ascii")


def serialize_items(messages: Sequence[Message]) -> bytes:
    """The bytes of a batch of messages (see :func:`serialize`)."""
    return _encode([m.to_dict() for m in messages]).encode("ascii")
