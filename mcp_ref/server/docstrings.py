"""Docstrings read for a tool's, prompt's or resource's description: the summary, and each
parameter's description from Google (``Args:``), NumPy (``Parameters`` + dashes) and reST
(``:param x:``) sections.  Loaded only for a docstring of more than one line
(:func:`mcp_ref.server.signatures.describe`).
"""

from __future__ import annotations

import inspect
import re

__all__ = ["parse_docstring"]

_PARAM_SECTIONS = {
    "args",
    "arguments",
    "parameters",
    "params",
    "keyword args",
    "keyword arguments",
    "kwargs",
    "other parameters",
}
_ALL_SECTIONS = _PARAM_SECTIONS | {
    "returns",
    "return",
    "yields",
    "yield",
    "raises",
    "examples",
    "example",
    "notes",
    "note",
    "attributes",
    "see also",
    "references",
    "warnings",
    "warning",
    "todo",
    "methods",
}
_GOOGLE_HEADER = re.compile(r"^([A-Za-z ]+?)\s*:\s*$")
_NUMPY_RULE = re.compile(r"^\s*-{3,}\s*$")
_REST_FIELD = re.compile(
    r"^\s*:(param|parameter|arg|argument|key|keyword|type|returns?|rtype|raises?"
    r"|except|exception|yields?|ytype|var|ivar|cvar|meta)\b"
)
_REST_PARAM = re.compile(
    r"^:(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*\s)?\**([A-Za-z_]\w*)\s*:(.*)$"
)
_GOOGLE_ENTRY = re.compile(r"^\**([A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*:(.*)$")
_NUMPY_ENTRY = re.compile(r"^(\**[A-Za-z_]\w*(?:\s*,\s*\**[A-Za-z_]\w*)*)\s*(?::.*)?$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def parse_docstring(doc: str | None) -> tuple[str | None, dict[str, str]]:
    """Split a docstring into ``(summary, {parameter: description})``.

    The summary is the text before the first section (Google ``Args:``,
    NumPy ``Parameters`` + dashes, reST ``:param``), whitespace-normalised,
    or None when empty. Parameter descriptions are read from Google, reST and
    NumPy style sections.
    """
    if not doc:
        return None, {}
    lines = inspect.cleandoc(doc).splitlines()
    parts: dict[str, list[str]] = {}
    summary_end: int | None = None
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        stripped = line.strip()
        indent = _indent(line)
        if (
            stripped
            and i + 1 < n
            and _NUMPY_RULE.match(lines[i + 1])
            and not _NUMPY_RULE.match(line)
        ):
            summary_end = i if summary_end is None else summary_end
            i += 2
            if stripped.lower() not in _PARAM_SECTIONS:
                continue
            current: list[str] | None = None
            while i < n:  # NumPy entries: "name : type" then indented text
                entry = lines[i]
                text = entry.strip()
                if text and i + 1 < n and _NUMPY_RULE.match(lines[i + 1]):
                    break
                if text and _indent(entry) <= indent:
                    m = _NUMPY_ENTRY.match(text)
                    if m:
                        current = []
                        for name in m.group(1).split(","):
                            parts[name.strip().lstrip("*")] = current
                    else:
                        current = None
                elif text and current is not None:
                    current.append(text)
                i += 1
            continue
        header = _GOOGLE_HEADER.match(stripped)
        if header and header.group(1).lower() in _ALL_SECTIONS:
            summary_end = i if summary_end is None else summary_end
            if i == 0:  # cleandoc loses the first line's indent: accept any entry indent
                indent = -1
            i += 1
            if header.group(1).lower() not in _PARAM_SECTIONS:
                continue
            entry_indent: int | None = None
            current = None
            while i < n:  # Google entries: "name (type): text" + continuation
                entry = lines[i]
                text = entry.strip()
                if text:
                    ind = _indent(entry)
                    if ind <= indent:
                        break
                    if entry_indent is None:
                        entry_indent = ind
                    if ind <= entry_indent:
                        m = _GOOGLE_ENTRY.match(text)
                        if m:
                            current = [m.group(2)]
                            parts[m.group(1)] = current
                        else:
                            current = None
                    elif current is not None:
                        current.append(text)
                i += 1
            continue
        if _REST_FIELD.match(line):
            summary_end = i if summary_end is None else summary_end
            m = _REST_PARAM.match(stripped)
            i += 1
            if m:
                current = [m.group(2)]
                parts[m.group(1)] = current
                while i < n and (not lines[i].strip() or _indent(lines[i]) > indent):
                    if _REST_FIELD.match(lines[i]):
                        break
                    current.append(lines[i].strip())
                    i += 1
            continue
        i += 1

    summary = " ".join(" ".join(lines[:summary_end]).split()) or None
    params = {k: " ".join(" ".join(v).split()) for k, v in parts.items()}
    return summary, {k: v for k, v in params.items() if v}
