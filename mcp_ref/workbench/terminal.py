"""Text from a peer, made safe to print on a terminal: :func:`safe`, the one helper every printer uses.

A server's strings (tool names and descriptions, server info, instructions, results, log and
progress messages, elicitation prompts, error messages, its stderr) reach the user's terminal.
Printed raw, an escape sequence in them is obeyed by the terminal, not shown: ``ESC ] 52 ; c ;
... BEL`` (OSC 52) writes the clipboard, ``ESC [ 2 J`` clears the screen, ``ESC [ 1 A`` and a
carriage return redraw lines already printed (a forged ``Allow? [y/N]`` prompt, a hidden
warning), and a title-report sequence can even type into the shell on some terminals.

:func:`safe` shows each such character as a visible escape instead (``\\x1b``, ``\\x07``,
``\\u202e``): every C0 control but tab and line feed, DEL, every C1 control (U+0080-U+009F; an
8-bit terminal reads U+009B as CSI), lone surrogates (which cannot even be encoded for output),
the bidirectional overrides and isolates (U+061C, U+200E-U+200F, U+202A-U+202E, U+2066-U+2069:
they reorder what is shown, "Trojan Source") and the line and paragraph separators
U+2028-U+2029.  Everything else, every other language's text and emoji included, is kept.
"""

from __future__ import annotations

import re

#: What :func:`safe` escapes (tab and line feed are handled by its arguments).
_UNSAFE = re.compile(
    "[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]"
)


def _escaped(char: str) -> str:
    return char.encode("unicode_escape").decode("ascii")  # \r, \x1b, \x9b, \u202e, \ud800


def safe(value: object, *, newline: str = "\n") -> str:
    """``value`` as text fit for a terminal: see the module docstring.

    ``newline`` replaces each line feed: ``"\\n"`` keeps the line breaks (a tool's result, a
    resource's text); ``"\\\\n"`` shows them escaped (a name or other one-line field, so that a
    server cannot start a line of its own making); ``"\\n    "`` indents what follows.  Tabs are
    kept.
    """
    text = value if isinstance(value, str) else str(value)
    if not _UNSAFE.search(text):
        return text  # the common case: nothing to do, one scan
    return _UNSAFE.sub(
        lambda match: newline if match.group() == "\n" else _escaped(match.group()), text
    )


def safe_json(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) with the characters :func:`safe` escapes
    written as JSON ``\\uXXXX`` escapes: still the same JSON, and safe for a terminal.  (Outside
    strings JSON holds no such character; inside one, ``\\u`` escapes mean the same text.)"""
    if not _UNSAFE.search(text):
        return text
    return _UNSAFE.sub(
        lambda match: match.group() if match.group() == "\n" else f"\\u{ord(match.group()):04x}",
        text,
    )
