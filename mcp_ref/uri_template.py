"""RFC 6570 URI templates: level 1 ``{var}`` and level 2 reserved ``{+var}``.

Used for MCP resource templates: :meth:`UriTemplate.expand` builds a URI from
values and :meth:`UriTemplate.match` recovers the values from a URI.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote, unquote

__all__ = ["MAX_URI_LENGTH", "UriTemplate", "is_template", "within_bound"]

#: The longest resource URI a caller may read or subscribe to (``resources/read``,
#: ``resources/subscribe``, a ``subscriptions/listen``'s), in characters: no longer one is matched
#: against a template (``mcp_ref.server.resources.check_uri_length``, ``ResourceTable.find``).
MAX_URI_LENGTH = 8192


def within_bound(uri: str) -> bool:
    """True when ``uri`` has 1 to :data:`MAX_URI_LENGTH` characters."""
    return 0 < len(uri) <= MAX_URI_LENGTH


# RFC 3986 reserved characters (gen-delims + sub-delims); unreserved ones are
# always left alone by urllib.parse.quote.
_RESERVED = ":/?#[]@!$&'()*+,;="
_PCT_TRIPLET = re.compile(r"(%[0-9A-Fa-f]{2})")
_VARNAME = re.compile(r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+(?:\.(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+)*")
_LEVEL3_OPERATORS = "#./;?&"
_RESERVED_OPERATORS = "=,!@|"
#: The characters an expression's value may not hold: ``{var}`` none of ``/ ? #``, ``{+var}``
#: any (each value is a non-empty run).
_STOPS = {"+": None, "": re.compile("[/?#]")}


def _encode_reserved(text: str) -> str:
    """Percent-encode ``text`` keeping reserved, unreserved and existing %XX triplets."""
    pieces = _PCT_TRIPLET.split(text)
    return "".join(p if i % 2 else quote(p, safe=_RESERVED) for i, p in enumerate(pieces))


def _parse(template: str) -> list[tuple[str, str] | str]:
    """Split ``template`` into literal strings and ``(operator, name)`` expressions."""
    parts: list[tuple[str, str] | str] = []
    pos = 0
    while pos < len(template):
        start = template.find("{", pos)
        close = template.find("}", pos)
        if close != -1 and (start == -1 or close < start):
            raise ValueError(f"unmatched '}}' at position {close} in URI template {template!r}")
        if start == -1:
            parts.append(template[pos:])
            break
        if start > pos:
            parts.append(template[pos:start])
        end = template.find("}", start)
        if end == -1:
            raise ValueError(f"unclosed '{{' at position {start} in URI template {template!r}")
        body = template[start + 1 : end]
        if "{" in body:
            raise ValueError(f"nested '{{' at position {start} in URI template {template!r}")
        operator = ""
        if body[:1] == "+":
            operator, body = "+", body[1:]
        elif body[:1] and body[0] in _LEVEL3_OPERATORS + _RESERVED_OPERATORS:
            raise ValueError(
                f"operator {body[0]!r} in {template[start : end + 1]!r} is not supported "
                "(only level 1 '{var}' and level 2 '{+var}')"
            )
        if not body:
            raise ValueError(
                f"empty variable name at position {start} in URI template {template!r}"
            )
        if "," in body or body.endswith("*") or ":" in body:
            raise ValueError(
                f"{template[start : end + 1]!r} uses level 3/4 syntax (lists, prefixes or explode), "
                "which is not supported"
            )
        if not _VARNAME.fullmatch(body):
            raise ValueError(f"invalid variable name {body!r} in URI template {template!r}")
        parts.append((operator, body))
        pos = end + 1
    return parts


class UriTemplate:
    """A parsed RFC 6570 level 1-2 URI template (``{var}`` and ``{+var}``).

    Raises ValueError for malformed templates or unsupported (level 3+) syntax.
    """

    __slots__ = ("template", "variables", "_parts", "_groups")

    def __init__(self, template: str) -> None:
        """Parse ``template``."""
        if not isinstance(template, str):
            raise TypeError(f"URI template must be a str, not {type(template).__name__}")
        self.template = template
        self._parts: list[tuple[str, str] | str] = [
            _encode_reserved(part) if isinstance(part, str) else part for part in _parse(template)
        ]
        self._groups = tuple(part[1] for part in self._parts if not isinstance(part, str))
        self.variables: tuple[str, ...] = tuple(dict.fromkeys(self._groups))

    @classmethod
    def is_template(cls, s: str) -> bool:
        """True when ``s`` uses template syntax (contains ``{`` or ``}``).

        Such a string cannot be a concrete URI (braces are not allowed in
        URIs); it does not check well-formedness: construct a UriTemplate for
        that (it raises ValueError).
        """
        return "{" in s or "}" in s

    def expand(self, **values: Any) -> str:
        """Expand the template; undefined (missing or None) variables expand to ''.

        Values are converted with ``str``; lists and dicts (level 4) raise TypeError.
        """
        out: list[str] = []
        for part in self._parts:
            if isinstance(part, str):
                out.append(part)
                continue
            operator, name = part
            value = values.get(name)
            if value is None:
                continue
            if isinstance(value, (list, tuple, dict, set)):
                raise TypeError(f"variable {name!r}: composite values are not supported")
            text = str(value)
            out.append(_encode_reserved(text) if operator == "+" else quote(text, safe=""))
        return "".join(out)

    def match(self, uri: str) -> dict[str, str] | None:
        """Return the percent-decoded variable values if ``uri`` matches, else None.

        ``{var}`` matches a non-empty run without ``/ ? #``; ``{+var}`` matches
        any non-empty run. The whole URI must match.  Where a URI can be split more than one way,
        each value is the longest that lets the rest match, left to right (a backtracking regex's
        greedy choice), found in steps linear in ``len(uri)`` (:func:`_split`).
        """
        raw_values = _split(self._parts, uri)
        if raw_values is None:
            return None
        result: dict[str, str] = {}
        for name, raw in zip(self._groups, raw_values, strict=True):
            value = unquote(raw)
            if result.setdefault(name, value) != value:
                return None  # a repeated variable captured different values
        return result

    def match_canonical(self, uri: str) -> dict[str, str] | None:
        """:meth:`match`, but only for the one spelling of the values this template writes.

        ``uri`` must be exactly what :meth:`expand` makes of the values it matched: so no
        percent-escape of a character the expansion writes as itself (``%74`` for ``t``,
        ``%2F`` for the ``/`` a ``{+var}`` keeps), none in lower case (``%c3``: RFC 3986 §6.2.2.1
        "should use uppercase"), and no raw character it would escape.  And no value may hold a
        ``.`` or ``..`` segment: RFC 3986 §5.2.4 removes dot-segments, so ``a/./b`` and ``a/b``
        would be one resource under two names.  Every other spelling gives None, so that whoever
        judges the URI (an ``authorize`` policy) and whoever serves it judge the same string.
        """
        values = self.match(uri)
        if values is None:
            return None
        for value in values.values():
            if "." in value and any(segment in (".", "..") for segment in value.split("/")):
                return None
        try:
            canonical = self.expand(**values)
        except UnicodeEncodeError:
            # a lone surrogate (a JSON string may carry one, as \udcff) is no character: it has no
            # UTF-8 octets to percent-encode (RFC 3986 §2.5), so no URI spells it
            return None
        return values if canonical == uri else None

    def __str__(self) -> str:
        """The template string."""
        return self.template

    def __repr__(self) -> str:
        """Debugging representation."""
        return f"UriTemplate({self.template!r})"

    def __eq__(self, other: object) -> bool:
        """Templates are equal when their template strings are equal."""
        if isinstance(other, UriTemplate):
            return self.template == other.template
        return NotImplemented

    def __hash__(self) -> int:
        """Hash of the template string."""
        return hash(self.template)


def _split(parts: list[tuple[str, str] | str], uri: str) -> list[str] | None:
    """The raw (still percent-encoded) value of each expression of ``parts`` in ``uri``, or None
    when ``uri`` does not match.

    No backtracking: a regex with one group per expression tries every split of the URI (quadratic
    or worse in its length, and holding the GIL throughout: one long URI stalled every client). Here
    ``fits[i]`` marks, for every position ``p``, whether ``parts[i:]`` matches ``uri[p:]``: built
    from the last part back, each table from the one after it in one pass over the URI.  Then each
    expression takes the longest value after which the rest fits.  Steps: ``len(uri)`` per part.
    2025-11-25 server/resources §Security Considerations: "Servers MUST validate all resource URIs".
    """
    head, tail = parts[0] if parts else "", parts[-1] if parts else ""
    if isinstance(head, str) and not uri.startswith(head):
        return None  # the common miss (another template's scheme), answered at once
    if isinstance(tail, str) and not uri.endswith(tail):
        return None
    size = len(uri)
    fits = [bytearray(size + 1) for _ in range(len(parts) + 1)]
    fits[-1][size] = 1  # nothing left matches the empty rest
    for index in range(len(parts) - 1, -1, -1):
        part, here, after = parts[index], fits[index], fits[index + 1]
        if isinstance(part, str):
            _fit_literal(part, uri, here, after)
        else:
            _fit_expression(_STOPS[part[0]], uri, here, after)
    if not fits[0][0]:
        return None
    values = []
    at = 0
    for index, part in enumerate(parts):
        if isinstance(part, str):
            at += len(part)
            continue
        stops = _STOPS[part[0]]
        stop = stops.search(uri, at) if stops is not None else None
        limit = stop.start() if stop is not None else size
        end = fits[index + 1].rfind(1, at + 1, limit + 1)  # the longest value the rest allows
        values.append(uri[at:end])
        at = end
    return values


def _fit_literal(literal: str, uri: str, here: bytearray, after: bytearray) -> None:
    """Mark in ``here`` each position where ``literal`` starts and the rest (``after``) fits."""
    at = uri.find(literal)
    while at != -1:
        here[at] = after[at + len(literal)]
        at = uri.find(literal, at + 1)


def _fit_expression(
    stops: re.Pattern[str] | None, uri: str, here: bytearray, after: bytearray
) -> None:
    """Mark in ``here`` each position where a value (a non-empty run without ``stops``) can start
    with the rest (``after``) fitting after it.  The URI is cut at each stop character: within
    one run, a value may start anywhere before the last position in it (or just past it) where
    the rest fits."""
    ends = [stop.start() for stop in stops.finditer(uri)] if stops is not None else []
    start = 0
    for end in [*ends, len(uri)]:
        last = after.rfind(1, start + 1, end + 1)
        if last != -1:
            here[start:last] = b"\x01" * (last - start)
        start = end + 1


def is_template(s: str) -> bool:
    """True when ``s`` uses URI template syntax; see :meth:`UriTemplate.is_template`."""
    return UriTemplate.is_template(s)
