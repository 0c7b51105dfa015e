"""JSON of any depth, told, read and written without recursing: for a hook that sees messages.

The session reads at most :data:`~mcp_ref.jsonrpc.MAX_NESTING` levels (RFC 8259 §9: "An
implementation may set limits on the maximum depth of nesting") and refuses a message nested
deeper, but the client sends such a message as the caller built it, and a trace hook sees every
message either way.  Python's own ``json`` recurses, a level a frame or more: it raises
RecursionError some 900 levels down, and writing or comparing what it read raises earlier.  A
hook that parsed a message for itself asks :func:`too_deep` first (counted as the session
counts, never recursing); when it is, :func:`loads` reads it and :func:`dumps` writes it with a
stack of their own, at any depth, as ``json.loads`` and a compact ``json.dumps`` would.
"""

from __future__ import annotations

import json
import math
import re
from json.decoder import scanstring  # type: ignore[attr-defined]  # json's own, in C
from typing import Any

from ..jsonrpc import MAX_NESTING
from ..unparsed import nesting

_BLANK = re.compile(r"[ \t\n\r]*")
#: A number as ``json`` reads one (its ``NUMBER_RE``): an int unless it has a fraction or exponent.
_NUMBER = re.compile(r"(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?")
#: The words ``json.loads`` reads as values (``NaN`` and the infinities too, as it does).
_WORDS = {
    "null": None,
    "true": True,
    "false": False,
    "NaN": math.nan,
    "Infinity": math.inf,
    "-Infinity": -math.inf,
}
_WORD = re.compile("|".join(re.escape(word) for word in sorted(_WORDS, key=len, reverse=True)))
#: The closing bracket of each opening one.
_CLOSING = {"{": "}", "[": "]"}


def too_deep(data: bytes | str) -> bool:
    """True when JSON ``data`` nests deeper than :data:`~mcp_ref.jsonrpc.MAX_NESTING`, the most
    the session reads (it refuses such a message it receives).  Counted as the session counts
    (:func:`~mcp_ref.unparsed.nesting`), never recursing; a hook that walks a message it parsed
    for itself asks this first."""
    if isinstance(data, (bytes, bytearray)):
        if data.count(b"[") + data.count(b"{") <= MAX_NESTING:
            return False
        data = bytes(data).decode("utf-8", "replace")
    return data.count("[") + data.count("{") > MAX_NESTING and nesting(data) > MAX_NESTING


def loads(data: bytes | str) -> Any:
    """``json.loads(data)`` at any depth: the same value (NaN and the infinities read as floats,
    a duplicate key's last value kept), read with a stack.  Raises ValueError for what is not
    JSON (bytes that are not UTF-8 included)."""
    text = bytes(data).decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    open_containers: list[Any] = []  # the arrays and objects begun and not yet ended
    keys: list[Any] = []  # for each of those, the key of the member being read (None: an array)
    at = _past_blanks(text, 0)
    while True:
        char = text[at : at + 1]
        if char in _CLOSING:
            at = _past_blanks(text, at + 1)
            if text[at : at + 1] == _CLOSING[char]:  # empty
                value: Any = {} if char == "{" else []
                at += 1
            else:
                open_containers.append({} if char == "{" else [])
                key = None
                if char == "{":
                    key, at = _key(text, at)
                keys.append(key)
                continue
        elif char == '"':
            value, at = scanstring(text, at + 1)
        else:
            value, at = _scalar(text, at)
        while True:  # the value is read: it ends as many containers as close after it
            if not open_containers:
                if _past_blanks(text, at) != len(text):
                    raise ValueError(f"Extra data at {at}")
                return value
            container = open_containers[-1]
            if isinstance(container, dict):
                container[keys[-1]] = value
            else:
                container.append(value)
            at = _past_blanks(text, at)
            char = text[at : at + 1]
            if char == ",":
                at = _past_blanks(text, at + 1)
                if isinstance(container, dict):
                    keys[-1], at = _key(text, at)
                break
            if char != ("}" if isinstance(container, dict) else "]"):
                raise ValueError(f"Expecting ',' or the container's end at {at}")
            at += 1
            value = open_containers.pop()
            keys.pop()


def _past_blanks(text: str, at: int) -> int:
    """Where the blanks from ``at`` end (RFC 8259 §2: space, tab, line feed, carriage return)."""
    blanks = _BLANK.match(text, at)
    return blanks.end() if blanks is not None else at


def _key(text: str, at: int) -> tuple[str, int]:
    """The key starting at ``at`` and where its value starts (past the colon and blanks)."""
    if text[at : at + 1] != '"':
        raise ValueError(f"Expecting a key in double quotes at {at}")
    key, at = scanstring(text, at + 1)
    at = _past_blanks(text, at)
    if text[at : at + 1] != ":":
        raise ValueError(f"Expecting ':' at {at}")
    return key, _past_blanks(text, at + 1)


def _scalar(text: str, at: int) -> tuple[Any, int]:
    """The number or word starting at ``at``, and where it ends."""
    word = _WORD.match(text, at)
    if word is not None:
        return _WORDS[word.group()], word.end()
    number = _NUMBER.match(text, at)
    if number is None:
        raise ValueError(f"Expecting a value at {at}")
    integer, fraction, exponent = number.groups()
    if fraction or exponent:
        return float(integer + (fraction or "") + (exponent or "")), number.end()
    return int(integer), number.end()


class _Written(str):
    """Text already decided (a bracket, a comma, a key and its colon), waiting on the stack
    among the values still to write."""


def dumps(value: Any, *, sort_keys: bool = False, separators: tuple[str, str] = (",", ":")) -> str:
    """``json.dumps(value, separators=separators, ensure_ascii=False, sort_keys=sort_keys,
    default=str)`` at any depth (compact unless told): the same text, written with a stack."""
    comma, colon = separators
    pieces: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if type(item) is _Written:
            pieces.append(item)
            continue
        if isinstance(item, dict):
            members = list(item.items())
            if sort_keys:
                members.sort(key=lambda member: member[0])
            todo: list[Any] = []
            for key, sub in members:
                name = key if isinstance(key, str) else _key_text(key)
                todo += [
                    _Written(
                        (comma if todo else "") + json.dumps(name, ensure_ascii=False) + colon
                    ),
                    sub,
                ]
            pieces.append("{")
            stack.append(_Written("}"))
        elif isinstance(item, (list, tuple)):
            todo = []
            for sub in item:
                todo += [_Written(comma), sub] if todo else [sub]
            pieces.append("[")
            stack.append(_Written("]"))
        else:
            pieces.append(json.dumps(item, ensure_ascii=False, default=str))
            continue
        stack.extend(reversed(todo))
    return "".join(pieces)


def _key_text(key: Any) -> str:
    """A key that is no string, as ``json.dumps`` writes it (``True`` is ``"true"``)."""
    return json.dumps(key) if key is None or isinstance(key, (bool, int, float)) else str(key)
