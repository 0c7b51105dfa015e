"""How deeply a message nests, and what can still be read of one nested too deep to parse: its
id, and whether it answers.

:func:`nesting` measures the depth of a message with more brackets than
:data:`~mcp_ref.jsonrpc.MAX_NESTING` (fewer cannot nest that deep), for the parser.  A peer's message nested past :data:`~mcp_ref.jsonrpc.MAX_NESTING` (``{"jsonrpc": "2.0", "id": 7,
"result": [[[[...]]]]}``) is refused, as any JSON that deep is; but the request it answers, or the
peer's request itself, left waiting, would fail only at its timeout.  :func:`top_level_id` reads
the top level of the text alone (the nested values are skipped, never parsed) and :func:`too_deep`
makes the refusal name that id: the session fails the request an answer answers at once (JSON-RPC
2.0 §5: an answer is never answered back), and answers a request -32600 with its id (JSON-RPC 2.0
§5.1: the id is null only "If there was an error in detecting the id").  Loaded only when a
message has that many brackets.

A message longer than the transport's limit is refused the same way
(:func:`refuse_too_large`): its id is read from the top level of its first bytes, the part the
transport read before it discarded the rest (:func:`line_too_large`, for a line-delimited
transport).  Loaded only when one comes.

A message that could not be parsed at all, or is no valid JSON-RPC message, is refused by
:func:`refuse_unparsed`; :func:`not_json` words the parse error of text that is not JSON.  Loaded
only when one comes, too.
"""

from __future__ import annotations

import json
import logging
import re
from itertools import accumulate
from typing import IO

from .errors import INVALID_REQUEST, InvalidRequest, LimitExceeded, MessageTooLarge, ParseError

log = logging.getLogger("mcp_ref.session")  # its messages are the session's

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def nesting(text: str) -> int:
    """How deeply the arrays and objects of ``text`` (valid JSON) nest: ``[[1], {}]`` is 2.

    Linear in the size of ``text``, at C speed: strings are blanked out, then the
    brackets that remain are counted up and down.
    """
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0)


#: The most pieces of text (strings, runs of brackets, what lies between) :func:`answer_id` reads:
#: its cost stays small whatever the message; an answer whose id lies further waits its timeout.
MAX_TOKENS = 100_000
#: A string, a run of opening brackets, a run of closing ones, or anything up to the next of those.
#: A string left open (a message cut at the size limit) runs to the end of the text: once begun, a
#: string never fails to match, so the engine never backtracks through it (an open string of 4 MB
#: cost half a second of CPU), and its brackets are never read as the message's.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[\[{]+|[\]}]+|[^"\[\]{}]+', re.DOTALL)


def answer_id(text: str):
    """The id of the answer ``text`` is (an object with ``id`` and ``result`` or ``error`` at its
    top level, and no ``method``), or None: not an answer, or its id is not a string or an integer."""
    request_id, answer = top_level_id(text)
    return request_id if answer else None


def top_level_id(text: str) -> tuple[str | int | None, bool]:
    """``(id, answer)`` of the message ``text`` is: the string or integer ``id`` at its top level,
    and whether it is an answer (``result`` or ``error``, no ``method``) rather than a request
    (``method``); ``(None, False)`` for neither, or an id of another kind.  It stops once the id and
    what the message is are seen, or after :data:`MAX_TOKENS` pieces."""
    # the top level's keys (as written), each with its value's text ("": a nested value)
    top: dict[str, str] = {}
    depth, key, value_next = 0, None, False
    for seen, match in enumerate(_TOKENS.finditer(text)):
        token = match.group()
        if seen == MAX_TOKENS:
            return None, False
        if token[0] in "[{":
            if depth == 0 and token[0] != "{":
                return None, False  # not an object: a batch, or not a message
            if depth == 1 and key is not None:
                top[key], key, value_next = "", None, False  # a nested value: skipped, never read
            depth += len(token)
        elif token[0] in "]}":
            depth -= len(token)
            if depth < 1:
                break
        elif depth != 1:
            continue
        elif key is None:
            key = token if token[0] == '"' else None  # between members: a comma, blanks
        elif token[0] == '"':
            if value_next:
                top[key], key, value_next = token, None, False
        else:  # a colon, and maybe a number, true, false or null, up to a comma
            before, colon, after = token.partition(":")
            value_next = value_next or bool(colon)
            value = (after if colon else before).split(",", 1)[0].strip()
            if value_next and value:
                top[key], key, value_next = value, None, False
        if '"id"' in top and ('"result"' in top or '"error"' in top or '"method"' in top):
            break
    answer = '"method"' not in top and ('"result"' in top or '"error"' in top)
    if not answer and '"method"' not in top:
        return None, False
    try:
        request_id = json.loads(top.get('"id"') or "null")
    except ValueError:
        return None, False
    valid = isinstance(request_id, str) or (
        isinstance(request_id, int) and not isinstance(request_id, bool)
    )
    return (request_id, answer) if valid else (None, False)


def not_json(refusal: ValueError) -> ParseError:
    """The -32700 for text the JSON decoder refused (JSON-RPC 2.0 §5.1: "Invalid JSON was received
    by the server"): the decoder's own words for a syntax error (what is wrong, and where).  Its other refusal, a number of more digits than ``int()`` takes
    (``sys.get_int_max_str_digits``), is worded by Python for a programmer, naming the function to
    raise the limit with: the peer is told only what is wrong, never the server's internals."""
    if isinstance(refusal, json.JSONDecodeError):
        return ParseError(f"Parse error: {refusal}")
    return ParseError("Parse error: a number with too many digits")


def too_deep(text: str, limit: int) -> ParseError | InvalidRequest:
    """The refusal of ``text``, nested deeper than ``limit``: a parse error, or, for a message whose
    id can be read, an invalid request naming that id: an answer's request fails at once, a request
    is answered -32600 with its id."""
    message = f"JSON nested deeper than the limit of {limit}"
    request_id, answer = top_level_id(text)
    if request_id is None:
        return ParseError(f"Parse error: {message}")
    refusal = InvalidRequest(f"Invalid Request: {message}")
    refusal.request_id = request_id
    refusal.answer = answer
    return refusal


def line_too_large(reader: IO[bytes], head: bytes, limit: int) -> MessageTooLarge:
    """A line-delimited transport's refusal of a line longer than ``limit`` bytes, of which it read
    ``head`` (the limit and one byte more): the rest of the line is read from ``reader`` and
    discarded, so the next line is the next message; ``head`` is kept, for its id."""
    rest = head
    while rest and not rest.endswith(b"\n"):
        rest = reader.readline(65536)
    too_large = MessageTooLarge(f"message larger than the limit of {limit} bytes")
    too_large.head = head  # its first bytes, in which the session looks for its id
    return too_large


def refuse_too_large(too_large: MessageTooLarge, session) -> tuple[dict, str | int | None] | None:
    """Refuse a message ``session`` (a :class:`~mcp_ref.session.Session`) read past its transport's
    size limit (``too_large``, whose ``head`` holds its first bytes), by what they show it to be:
    the error to answer it with and the id to answer (None: nothing is written).

    * An answer: its request fails at once with :class:`~mcp_ref.errors.LimitExceeded`
      (``session.fail_request``), rather than waiting its whole timeout, and nothing is written
      (JSON-RPC 2.0 §5: a Response is the reply to a request; nothing replies to one).
    * A request: answered -32600 with its id (JSON-RPC 2.0 §5.1: the id is null only "If there was
      an error in detecting the id").
    * Anything else (no id in its first bytes): -32600 without an id, as for a line not parsed.
    """
    log.warning("%s: %s", session.name, too_large)
    request_id, answer = top_level_id(too_large.head.decode("utf-8", "replace"))
    if answer:
        limit = len(too_large.head) - 1  # the transport read the limit and one byte more
        session.fail_request(
            request_id,
            LimitExceeded(
                f"the peer's answer is larger than this side's limit of {limit} bytes "
                "(max_message_size)",
                data={"limit": limit},
            ),
        )
        return None
    return {"code": INVALID_REQUEST, "message": f"Invalid Request: {too_large}"}, request_id


def refuse_unparsed(
    exc: ParseError | InvalidRequest, session
) -> tuple[dict, str | int | None] | None:
    """Refuse a message ``session`` (a :class:`~mcp_ref.session.Session`) could not parse, or
    parsed as no valid message (``exc``): the error to answer it with and the id to answer (None:
    nothing is written).

    * A malformed answer: its request fails at once with the reason (``session.fail_request``),
      rather than waiting for its timeout, and nothing is written (JSON-RPC 2.0 §5: an answer is
      never answered back).
    * Anything else: ``exc``'s error, with the message's id when it could be read.
    """
    log.warning("%s: %s", session.name, exc.message)
    if isinstance(exc, InvalidRequest) and exc.answer:
        session.fail_request(
            exc.request_id, InvalidRequest(f"the peer's answer is not valid: {exc.message}")
        )
        return None
    return exc.to_error(), exc.request_id if isinstance(exc, InvalidRequest) else None
