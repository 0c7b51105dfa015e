"""The 2026-07-28 request headers of Streamable HTTP: ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*``.

2026-07-28 basic/transports/streamable-http §Request Metadata: the transport
"mirrors selected JSON-RPC body fields into HTTP headers so that
intermediaries ... can route and inspect requests without parsing the body";
a server that reads the body "MUST reject requests where the values specified
in the headers do not match" with 400 and ``HeaderMismatch`` (-32020).

Both roles use this module: the client to write the headers
(:func:`request_headers`) and to refuse tools whose ``x-mcp-header``
declarations break the rules (:func:`header_params`), the server to declare a tool's
(:func:`with_header_params`, at registration) and to check them (:func:`check_request_headers`).
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from collections.abc import Callable
from typing import cast

from ..errors import HeaderMismatchError
from ..lifecycle import PROTOCOL_VERSION, meta_of

#: §Standard Request Headers: the body field ``Mcp-Name`` mirrors, by method.
NAME_SOURCE = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # the tasks extension (SEP-2663 §Streamable HTTP: Routing Headers): "the client MUST set the
    # Mcp-Name header ... to the value of params.taskId".
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
PARAM_PREFIX = "Mcp-Param-"
#: RFC 9110 §5.6.2 ``tchar``: what a header name (and so an ``x-mcp-header`` value) may hold.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
#: §Value Encoding: "visible ASCII characters (0x21-0x7E), space (0x20), and horizontal tab (0x09)".
_FIELD_VALUE = re.compile(r"[\x20-\x7e\t]*\Z")
_SAFE_PLAIN = re.compile(r"[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?\Z")
_SENTINEL_PREFIX, _SENTINEL_SUFFIX = "=?base64?", "?="
#: §Schema Extension: integers "MUST be within the safe range for JavaScript".
MAX_SAFE_INTEGER = 2**53 - 1


#: The names clients send are few: each is turned into its key once (a flood of new ones is not
#: kept past the bound, the names seen most recently are).
@functools.lru_cache(maxsize=512)
def cgi_name(header: str) -> str:
    """The WSGI environ key of an HTTP header (``Mcp-Name`` -> ``HTTP_MCP_NAME``)."""
    return "HTTP_" + header.upper().replace("-", "_")


def header_reader(environ: dict) -> Callable[[str], str | None]:
    """How the request's header fields are read: ``header(name)`` is the field ``name`` (any case;
    several joined by commas), or None.  Chosen once per request, not once per field.

    Under mcp_ref's own server, looked up by its exact name in ``environ["mcp_ref.headers"]``
    (``Headers.joined``): ``Mcp-Param-dry_run`` (an ``x-mcp-header`` may hold ``_``, a ``tchar``)
    and ``Mcp-Param-dry-run`` are two names, though both would be ``HTTP_MCP_PARAM_DRY_RUN``.
    Elsewhere, the WSGI key: there a server that drops names with ``_`` (gunicorn, Werkzeug)
    never passes the first (docs/deploying.md).
    """
    fields = environ.get("mcp_ref.headers")
    if fields is None:
        return lambda name: environ.get(cgi_name(name))
    return fields.joined


class InvalidHeaderDeclaration(ValueError):
    """A tool's ``x-mcp-header`` annotations break the rules: a client MUST leave the tool out."""


# -- values -------------------------------------------------------------------------------------


def encode_value(value: str | int | bool) -> str:
    """A body value as a header value: as-is when plain ASCII is safe, else ``=?base64?...?=``.

    §Value Encoding: booleans are ``true``/``false``, integers decimal; a value with non-ASCII or
    control characters, leading or trailing whitespace, or the look of the sentinel itself, is
    Base64 of its UTF-8.
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    # The text JSON gives the body's value, whatever its class says of itself: an IntEnum or a
    # (str, Enum) member goes into the body as its number or string, not as ``Booking.ONE``.
    if isinstance(value, int):
        return int.__repr__(value)
    text = str.__str__(value)
    looks_encoded = text.startswith(_SENTINEL_PREFIX) and text.endswith(_SENTINEL_SUFFIX)
    if text == "" or (_SAFE_PLAIN.match(text) and not looks_encoded):
        return text
    return (
        _SENTINEL_PREFIX + base64.b64encode(text.encode("utf-8")).decode("ascii") + _SENTINEL_SUFFIX
    )


def decode_value(text: str) -> str:
    """A header value as the body value it carries; ValueError for invalid characters or Base64.

    Servers "MUST decode an encoded Mcp-Name or Mcp-Param-{Name} value before comparing it".
    Only a value with both the prefix and the suffix is encoded; its Base64 must be strict
    (standard alphabet, padded) and its bytes UTF-8.
    """
    if not _FIELD_VALUE.match(text):
        raise ValueError("the header value holds characters a header may not carry")
    text = text.strip(" \t")
    if not (
        text.startswith(_SENTINEL_PREFIX) and text.endswith(_SENTINEL_SUFFIX) and len(text) >= 11
    ):
        return text
    encoded = text[len(_SENTINEL_PREFIX) : -len(_SENTINEL_SUFFIX)]
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise ValueError("the header value is not valid Base64 of UTF-8") from None


# -- x-mcp-header declarations -------------------------------------------------------------------


def header_params(input_schema: object) -> list[tuple[tuple[str, ...], str]]:
    """The ``(property path, header name)`` of every ``x-mcp-header`` in a tool's ``inputSchema``.

    Raises InvalidHeaderDeclaration when a declaration breaks §Schema Extension: an empty or
    non-token name, a name used twice (case-insensitively), a property that is not an
    integer, string or boolean, or one not reachable from the root through ``properties``
    alone.  The walk is bounded by the schema's size.
    """
    found: list[tuple[tuple[str, ...], str]] = []
    if not isinstance(input_schema, dict):
        return found
    _collect(input_schema, (), True, found)
    seen: set[str] = set()
    for _path, name in found:
        if name.lower() in seen:
            raise InvalidHeaderDeclaration(f"x-mcp-header {name!r} is declared twice")
        seen.add(name.lower())
    return found


def with_header_params(tool: str, schema: dict, headers: dict[str, str]) -> dict:
    """``schema`` with ``x-mcp-header`` on the named parameters (2026-07-28 server/tools §x-mcp-header):
    over Streamable HTTP their values are mirrored into ``Mcp-Param-{name}`` headers, so a gateway
    can route on them.  Refused here when the declaration breaks the spec's rules."""
    schema = json.loads(json.dumps(schema))  # a copy: the caller's dict stays as given
    properties = schema.get("properties", {})
    for param, header in headers.items():
        if param not in properties:
            raise ValueError(
                f"tool {tool}: headers names {param!r}, which is not one of its parameters"
            )
        properties[param]["x-mcp-header"] = header
    try:
        header_params(schema)
    except InvalidHeaderDeclaration as exc:
        raise ValueError(f"tool {tool}: {exc}") from None
    return schema


def _collect(schema: dict, path: tuple, reachable: bool, found: list, depth: int = 0) -> None:
    if depth > 64:
        raise InvalidHeaderDeclaration(
            "the inputSchema is nested too deeply to check its x-mcp-header declarations"
        )
    if "x-mcp-header" in schema and path:
        name = schema["x-mcp-header"]
        where = ".".join(path)
        if not reachable:
            raise InvalidHeaderDeclaration(
                f"x-mcp-header on {where} is not reachable through properties alone"
            )
        if not isinstance(name, str) or not name or not _TOKEN.match(name):
            raise InvalidHeaderDeclaration(
                f"x-mcp-header on {where} must be a non-empty header-name token, not {name!r}"
            )
        if schema.get("type") not in ("string", "integer", "boolean"):
            raise InvalidHeaderDeclaration(
                f"x-mcp-header on {where} needs a string, integer or boolean property"
            )
        found.append((path, name))
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            for prop, sub in value.items():
                if isinstance(sub, dict):
                    _collect(sub, path + (str(prop),), reachable, found, depth + 1)
        elif isinstance(value, dict) and key not in (
            "x-mcp-header",
            "const",
            "default",
            "enum",
            "examples",
        ):
            _collect(value, path + (f"<{key}>",), False, found, depth + 1)
        elif isinstance(value, list) and key not in ("enum", "examples", "required", "type"):
            for item in value:
                if isinstance(item, dict):
                    _collect(item, path + (f"<{key}>",), False, found, depth + 1)


def _value_at(arguments: object, path: tuple[str, ...]):
    for part in path:
        if not isinstance(arguments, dict) or part not in arguments:
            return None
        arguments = arguments[part]
    return arguments


# -- the client's headers, the server's check ------------------------------------------------------


def request_headers(
    method: str, params: dict | None, input_schema: dict | None = None
) -> dict[str, str]:
    """The ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*`` headers of one request (client side)."""
    headers = {"Mcp-Method": method}
    source = NAME_SOURCE.get(method)
    if source is not None and isinstance(params, dict) and isinstance(params.get(source), str):
        headers["Mcp-Name"] = encode_value(params[source])
    if method == "tools/call" and input_schema is not None and isinstance(params, dict):
        for path, name in header_params(input_schema):
            value = _value_at(params.get("arguments"), path)
            # A whole float (``42.0``: a JSON Schema integer) is the integer's text, which the
            # server compares numerically (:func:`_same_integer`); §Client Behavior: a value given
            # gets its header.  A fraction or one past the safe range gets none: the server's to refuse.
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            # §Server Behavior: a null or absent value: "Client MUST omit the header".
            if isinstance(value, (str, bool)) or (
                isinstance(value, int) and abs(value) <= MAX_SAFE_INTEGER
            ):
                headers[PARAM_PREFIX + name] = encode_value(value)
    return headers


def modern_request_headers(
    method: str, params: object, input_schema: Callable[[str], dict | None] | None
) -> dict[str, str]:
    """Every header of a 2026-07-28 request over Streamable HTTP (§Request Metadata): ``Accept``,
    ``Content-Type``, ``MCP-Protocol-Version`` (from the request's ``_meta``, lifecycle.is_modern
    says it has one), and those of :func:`request_headers`; ``input_schema(name)`` gives the
    input schema of a tool called (its ``x-mcp-header`` declarations), None when unknown."""
    body = params if isinstance(params, dict) else {}
    meta = cast(dict, meta_of(body))
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        # "MCP-Protocol-Version ... MUST match the protocolVersion in the request's _meta"
        "MCP-Protocol-Version": str(meta[PROTOCOL_VERSION]),
    }
    schema = None
    if method == "tools/call" and input_schema is not None and isinstance(body.get("name"), str):
        schema = input_schema(body["name"])
    try:
        headers.update(request_headers(method, body, schema))
    except InvalidHeaderDeclaration:  # never remembered (KnownTools.usable leaves such tools out)
        headers.update(request_headers(method, body))
    return headers


def check_request_headers(
    header: Callable[[str], str | None],
    method: str,
    params: dict,
    input_schema: dict | None = None,
    *,
    declared: list | None = None,
) -> None:
    """Raise HeaderMismatchError unless the request's headers match its body (server side).

    ``header(name)`` returns a request header or None.  §Server Validation: "A required
    standard header (MCP-Protocol-Version, Mcp-Method, Mcp-Name) is missing", "A header value
    does not match the corresponding request body value", "A header value contains invalid
    characters".  Names compare case-insensitively (the caller's lookup), values exactly.
    ``declared``: the tool's :func:`header_params`, when the caller keeps them (else they are
    read from ``input_schema``).
    """
    sent = header("Mcp-Method")
    if sent is None:
        raise HeaderMismatchError("Header mismatch: the Mcp-Method header is missing")
    if sent.strip(" \t") != method:
        raise HeaderMismatchError(
            f"Header mismatch: Mcp-Method {sent.strip()!r} does not match the body's method {method!r}"
        )
    source = NAME_SOURCE.get(method)
    if source is not None:
        _check_one(header("Mcp-Name"), params.get(source), "Mcp-Name")
    if method == "tools/call" and declared is None and input_schema is not None:
        try:
            declared = header_params(input_schema)
        except InvalidHeaderDeclaration:
            return  # the server's own tool: its clients leave it out; nothing to check against
    if method == "tools/call" and declared:
        for path, name in declared:
            value = _value_at(params.get("arguments"), path)
            _check_one(header(PARAM_PREFIX + name), value, PARAM_PREFIX + name)


def _check_one(sent: str | None, value: object, label: str) -> None:
    # nothing in the body: the handler answers a missing name; a parameter's header is unexpected
    if value is None:
        if sent is not None and label != "Mcp-Name":
            raise HeaderMismatchError(
                f"Header mismatch: {label} is sent but the body has no value for it"
            )
        return
    if sent is None:
        raise HeaderMismatchError(f"Header mismatch: the {label} header is missing")
    if (
        sent == value
        and sent.isascii()
        and sent.isprintable()
        and not sent.startswith((" ", _SENTINEL_PREFIX))
        and not sent.endswith(" ")
    ):
        return  # the common case: a plain value, sent as it is in the body
    try:
        decoded = decode_value(sent)
    except ValueError as exc:
        raise HeaderMismatchError(f"Header mismatch: {label}: {exc}") from None
    if isinstance(value, bool):
        matches = decoded == ("true" if value else "false")
    elif isinstance(value, (int, float)):
        matches = _same_integer(decoded, value, label)
    else:
        matches = decoded == value
    if not matches:
        raise HeaderMismatchError(f"Header mismatch: {label} does not match the body's value")


#: A header's integer: optional minus, digits, and a fraction of zeros only (``42.0`` is 42).  No
#: exponent, no ``+``: the client writes integers in decimal (§Value Encoding).
_INTEGER_TEXT = re.compile(r"(-?[0-9]+)(?:\.0*)?\Z")
#: The longest header text read as an integer: the safe range needs 17 characters; past this many
#: the value cannot be one that matches (and no digit string is ever long enough to be costly).
_MAX_INTEGER_TEXT = 64


def _same_integer(decoded: str, value: float, label: str) -> bool:
    """Whether the header's text is the body's integer, compared exactly (never through float).

    2026-07-28 basic/transports/streamable-http §Server Validation: servers "SHOULD compare the
    header value and the body value numerically rather than as strings (e.g., ``42.0`` and ``42``
    are considered equal)"; so ``1``, ``1.0`` and ``1.00`` all match a body ``1`` (or ``1.0``), and
    ``9007199254740992`` never matches ``9007199254740993``.  §Schema Extension: integer values
    "MUST be within the safe range for JavaScript (-2^53+1 to 2^53-1)": a body value outside it
    (``10**400``, ``1e400``, a fraction) is refused with HeaderMismatch, whatever the header says.
    """
    if isinstance(value, float):
        # NaN and infinities are not integers
        if not (value.is_integer() and abs(value) <= MAX_SAFE_INTEGER):
            raise HeaderMismatchError(
                f"Header mismatch: {label}: the body's value is not an integer "
                f"within the safe range (-(2**53-1) to 2**53-1)"
            )
        value = int(value)
    elif abs(value) > MAX_SAFE_INTEGER:
        raise HeaderMismatchError(
            f"Header mismatch: {label}: the body's integer is outside the safe range "
            f"(-(2**53-1) to 2**53-1)"
        )
    if len(decoded) > _MAX_INTEGER_TEXT:
        return False
    number = _INTEGER_TEXT.match(decoded)
    return number is not None and int(number.group(1)) == value
