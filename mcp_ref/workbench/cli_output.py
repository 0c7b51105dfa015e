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
    """``name(param, optional?)  first line of its description``."""
    required = set(tool.input_schema.get("required", ()))
    params = ", ".join(name + ("" if name in required else "?") for name in tool.input_schema.get("properties", {}))
    line = f"{tool.name}({params})"
    return f"{line}  {tool.description.splitlines()[0]}" if tool.description else line


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
        message = one_line(message) if message else None
        shown, of = number(progress), number(total) if total else None
        fraction = None
        if of is not None and shown != "?" and of != "?" and float(total) > 0:
            ratio = float(progress) / float(total)
            fraction = None if math.isnan(ratio) else min(max(ratio, 0.0), 1.0)  # json reads "NaN": no bar
        if self.tty and fraction is not None:
            filled = int(20 * fraction)
            text = f"\r[{'#' * filled}{'-' * (20 - filled)}] {shown}/{of}" + (f" {message}" if message else "")
            self.stream.write(text + "\x1b[K")
            self.drawn = True
        else:
            self.stream.write(f"mcp-ref: progress {shown}" + (f"/{of}" if of else "") + (f" {message}" if message else "")
                              + "\n")
        self.stream.flush()

    def done(self) -> None:
        """End the bar's line (if one was drawn)."""
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
