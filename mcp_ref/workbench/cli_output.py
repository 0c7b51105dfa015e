"""What the ``mcp-ref`` command prints: a server's results, lists and progress, made safe for a terminal.

Every string a server sends is shown through :func:`mcp_ref.workbench.terminal.safe` (escape
sequences, carriage returns ... shown escaped), every number only as a number.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from .terminal import safe, safe_json


def print_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout.

    Non-ASCII text stays readable; DEL, C1 controls, lone surrogates and bidi overrides (which
    json.dumps leaves raw) become \\uXXXX escapes: the same JSON, safe on a terminal.
    """
    print(safe_json(json.dumps(value, indent=2, ensure_ascii=False)))


def to_stderr(text: str) -> None:
    """Print a line for the user on stderr (what the command says, not what it answers), flushed.

    One write, the line with its end: a server's stderr line relayed from the reading thread is
    never split by a line the main thread writes meanwhile (``--trace``), as print()'s two writes
    could be."""
    sys.stderr.write(f"{text}\n")
    sys.stderr.flush()


def number(value: Any) -> str:
    """A number from the server for the terminal (``12``, ``0.5``), or ``?`` for anything else
    (a string, a bool, an integer too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "?"
    try:
        return f"{float(value):g}"
    except OverflowError:
        return "?"


def one_line(value: Any) -> str:
    """A server's string for one line of output: :func:`mcp_ref.workbench.terminal.safe`, line breaks shown as ``\\n``."""
    return safe(value, newline="\\n")


def describe_content(block) -> str:
    """One content block as readable text (text as is; binary summarised)."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        return f"[{kind} {block.mime_type}, {len(block.data) * 3 // 4} bytes]"
    if kind == "resource_link":
        return f"[link {block.uri}]"
    if kind == "resource":
        res = block.resource
        return getattr(res, "text", None) or f"[resource {res.uri}, binary]"
    return json.dumps(getattr(block, "raw", None))


def print_content(blocks: list) -> None:
    """Print each content block on stdout (the server's text: line breaks kept, escape sequences shown)."""
    for block in blocks:
        print(safe(describe_content(block)))


def describe_tool(tool) -> str:
    """``name(param: type, choice: "a"|"b" = "a", optional?: type)  first line of its description``.

    Each parameter with the type its ``inputSchema`` property gives (:func:`schema_type`); a
    required one plain, an optional one with its default (``= value``) or, without one, ``?``.
    """
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    required = set(schema.get("required") or ())
    properties: dict = schema["properties"] if isinstance(schema.get("properties"), dict) else {}
    params = []
    for name, prop in properties.items():
        kind = schema_type(prop, schema)
        if name in required:
            params.append(f"{name}: {kind}")
        elif isinstance(prop, dict) and "default" in prop:
            params.append(f"{name}: {kind} = {_short_json(prop['default'])}")
        else:
            params.append(f"{name}?: {kind}")
    line = f"{tool.name}({', '.join(params)})"
    return f"{line}  {tool.description.splitlines()[0]}" if tool.description else line


#: Enum values shown at most by :func:`schema_type` (the rest: ``|…``); a value longer than this many characters is cut.
MAX_CHOICES, MAX_VALUE = 8, 30
#: An object's fields shown at most by :func:`schema_type` (the rest: ``…``), and how deep objects
#: in objects are opened (deeper: the object's title, or ``object``).
MAX_FIELDS, MAX_OBJECT_DEPTH = 8, 3


def schema_type(prop: Any, root: dict | None = None, depth: int = 0) -> str:
    """A JSON Schema property as a short type: ``string``, ``integer|null``, ``"celsius"|"fahrenheit"``,
    ``string[]``, ``string<date-time>``, ``{x: number, y: number, label?: string}`` (an object's
    fields: :func:`_object_type`), ``Point`` (a ``$ref`` not followed), or ``any``.

    ``$ref`` to ``#/$defs/NAME`` (or ``#/definitions/NAME``) is followed in ``root``, at most
    4 deep; enum and const values are shown as JSON (a string quoted), at most :data:`MAX_CHOICES`.
    """
    if not isinstance(prop, dict):
        return "any"
    ref = prop.get("$ref")
    if isinstance(ref, str):
        # the last part of a path or a fragment
        name = ref.replace("#", "/").rstrip("/").rsplit("/", 1)[-1]
        section = ref[2:].split("/", 1)[0] if ref.startswith("#/") else None
        defs = (root or {}).get(section) if section in ("$defs", "definitions") else None
        target = defs.get(name) if isinstance(defs, dict) else None
        return (
            schema_type(target, root, depth + 1)
            if isinstance(target, dict) and depth < 4
            else name or "any"
        )
    if isinstance(prop.get("enum"), list) and prop["enum"]:
        shown = [_short_json(value) for value in prop["enum"][:MAX_CHOICES]]
        return "|".join(shown) + ("|…" if len(prop["enum"]) > MAX_CHOICES else "")
    if "const" in prop:
        return _short_json(prop["const"])
    for key in ("anyOf", "oneOf"):
        if isinstance(prop.get(key), list) and prop[key] and depth < 4:
            kinds = dict.fromkeys(schema_type(option, root, depth + 1) for option in prop[key])
            return "|".join(kinds)
    declared = prop.get("type")
    out = []
    for kind in declared if isinstance(declared, list) else [declared]:
        if kind == "array" and isinstance(prop.get("items"), dict) and depth < 4:
            item = schema_type(prop["items"], root, depth + 1)
            out.append(f"({item})[]" if "|" in item else f"{item}[]")
        elif kind == "string" and isinstance(prop.get("format"), str):
            out.append(f"string<{prop['format']}>")
        elif kind == "object":
            out.append(_object_type(prop, root, depth))
        elif isinstance(kind, str):
            out.append(kind)
    return "|".join(out) or "any"


def _object_type(prop: dict, root: dict | None, depth: int) -> str:
    """An object schema's fields: ``{url: string, tags?: {name: string}[], …}`` (``?``: not
    required), at most :data:`MAX_FIELDS` of them, opened :data:`MAX_OBJECT_DEPTH` deep; a map
    (``additionalProperties`` only) as ``{*: integer}``; without either, ``object``."""
    properties = prop.get("properties")
    title = prop.get("title") if isinstance(prop.get("title"), str) else None
    if depth >= MAX_OBJECT_DEPTH:
        return title or "object"
    if isinstance(properties, dict) and properties:
        required = prop["required"] if isinstance(prop.get("required"), list) else []
        fields = [
            f"{name}{'' if name in required else '?'}: {schema_type(field, root, depth + 1)}"
            for name, field in list(properties.items())[:MAX_FIELDS]
        ]
        more = ", …" if len(properties) > MAX_FIELDS else ""
        return "{" + ", ".join(fields) + more + "}"
    values = prop.get("additionalProperties")
    if isinstance(values, dict) and values:
        return "{*: " + schema_type(values, root, depth + 1) + "}"
    return "object"


def _short_json(value: Any) -> str:
    """``value`` as JSON, cut to :data:`MAX_VALUE` characters."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def describe_prompt(prompt) -> str:
    """``name(argument, optional?)  description``."""
    args = ", ".join(a.name + ("" if a.required else "?") for a in prompt.arguments or [])
    line = f"{prompt.name}({args})"
    return f"{line}  {prompt.description}" if prompt.description else line


class Progress:
    """``on_progress`` for ``call``: a bar redrawn in place on a terminal, one line a report otherwise."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.drawn = False

    def __call__(self, progress, total=None, message=None) -> None:
        # Every value is the server's: numbers shown only as numbers, the message escaped.
        said = f" {one_line(message)}" if message else ""
        shown, of = number(progress), number(total) if total else None
        fraction = None
        if of is not None and shown != "?" and of != "?" and float(total) > 0:
            ratio = float(progress) / float(total)
            # json reads "NaN": no bar
            fraction = None if math.isnan(ratio) else min(max(ratio, 0.0), 1.0)
        if self.tty and fraction is not None:
            filled = int(20 * fraction)
            self.stream.write(f"\r[{'#' * filled}{'-' * (20 - filled)}] {shown}/{of}{said}\x1b[K")
            self.drawn = True
        else:
            self.stream.write(f"mcp-ref: progress {shown}{f'/{of}' if of else ''}{said}\n")
        self.stream.flush()

    def done(self) -> None:
        """End the bar's line (if one was drawn)."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
