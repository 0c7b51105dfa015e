"""A picture of the conversation: the JSON-RPC exchange as a Mermaid sequence diagram.

``mcp-ref --diagram FILE.md VERB ...`` (and ``mcp-ref demo --diagram FILE.md``) records every
message through the client's ``trace`` hook and writes a Markdown file holding one
``sequenceDiagram``, the form the specification uses for its own examples:

- a request is a solid arrow labelled with its method and id (``tools/call #3 echo``);
- its answer a dashed arrow back (``#3 result`` or ``#3 error -32602``);
- a notification a dashed open arrow (``notifications/progress``);
- long values are elided: labels name methods, tools, URIs and error codes, never payloads;
  a URI's secrets, and the title's (the command line's), are masked (:func:`masked`);
- runs of look-alike messages (the demo's 200 concurrent echo calls) are summarised by
  :class:`LookAlikes`, the same rule ``--trace`` follows;
- the demo's sections are notes across both lifelines (``Note over C,S: 3. Tools``: :meth:`Recorder.note`).

Everything is bounded: at most ``MAX_ARROWS`` arrows are drawn, the rest counted.
"""

from __future__ import annotations

import collections
import json
import re
import threading
from typing import Any

from ..jsonrpc import MAX_NESTING
from .deep_json import loads as loads_deep, too_deep

#: Arrows drawn at most; past it, a note says how many more messages there were.
MAX_ARROWS = 400
#: Keys whose values are part of a message's shape; other values are not.
SHAPE_KEYS = frozenset({"jsonrpc", "method", "name", "type", "level", "protocolVersion", "code"})


def shape(message: Any) -> str:
    """A message's structure: its keys, and the values of :data:`SHAPE_KEYS` (ids and other values
    left out), down to :data:`~mcp_ref.jsonrpc.MAX_NESTING` levels: what lies deeper (in a message
    the client sends nested deeper than a peer reads) is ``"..."``, never walked."""

    def walk(value, key=None, depth=0):
        if depth > MAX_NESTING and isinstance(value, (dict, list)):
            return "..."
        if isinstance(value, dict):
            return {k: walk(v, k, depth + 1) for k, v in value.items() if k != "id"}
        if isinstance(value, list):
            return [walk(v, None, depth + 1) for v in value]
        return value if key in SHAPE_KEYS else type(value).__name__

    return json.dumps(walk(message), sort_keys=True)


class LookAlikes:
    """Decides which messages to show: up to :attr:`SHOWN` of one shape among the last
    :attr:`RECENT` shapes.

    ``admit(key)`` is True for a message to show, False for one to count instead;
    ``take_hidden()`` returns (and resets) how many were counted since the last call.
    """

    #: Hidden requests whose answers are awaited (to hide those too); past it, the oldest is forgotten.
    MAX_HIDDEN_REQUESTS = 4096

    #: Messages of one shape shown before more of it are counted instead.
    SHOWN = 3
    #: Shapes remembered (the most recent); a shape not among them is shown again.
    RECENT = 4

    def __init__(self):
        self.recent: collections.OrderedDict[str, int] = collections.OrderedDict()
        self.hidden = 0
        self.hidden_requests: collections.OrderedDict[tuple[str, str | int], None] = (
            collections.OrderedDict()
        )

    def admit_message(self, direction: str, message: Any, key: str) -> bool:
        """:meth:`admit` for one JSON-RPC message, keeping a request and its answer together: the
        answer to a hidden request is hidden too.  Concurrent requests are answered in any order,
        so "the first three answers" need not answer "the first three requests"; a reader (or a
        schema check of the trace) must never see an answer whose request it was not shown."""
        request_id = message.get("id") if isinstance(message, dict) else None
        if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
            return self.admit(key)
        if "method" not in message:  # an answer: to a request sent the other way
            asked = ("<--" if direction == "-->" else "-->", request_id)
            if asked in self.hidden_requests:
                del self.hidden_requests[asked]
                self.hidden += 1
                return False
            return self.admit(key)
        shown = self.admit(key)
        if not shown:
            self.hidden_requests[(direction, request_id)] = None
            if len(self.hidden_requests) > self.MAX_HIDDEN_REQUESTS:
                self.hidden_requests.popitem(last=False)
        return shown

    def admit(self, key: str) -> bool:
        seen = self.recent.pop(key, 0)
        self.recent[key] = seen + 1
        if len(self.recent) > self.RECENT:
            self.recent.popitem(last=False)
        if seen >= self.SHOWN:
            self.hidden += 1
            return False
        return True

    def take_hidden(self) -> int:
        hidden, self.hidden = self.hidden, 0
        return hidden


class Recorder:
    """A client ``trace`` hook that keeps the conversation (bounded) and writes it as Mermaid."""

    def __init__(self):
        self.lock = threading.Lock()
        self.lines: list[str] = []
        self.look_alikes = LookAlikes()
        self.methods: dict[tuple[str, Any], str] = {}  # (direction, id) -> method, to label answers
        self.server = "Server"
        self.arrows = 0
        self.unshown = 0

    def __call__(self, direction: str, data: bytes) -> None:
        deep = too_deep(data)
        try:
            if deep and direction == "<--":  # the session refuses it: drawn as no message
                message = None
            else:  # one the client sends nested that deep is read without recursing
                message = loads_deep(data) if deep else json.loads(data)
        except (ValueError, RecursionError):
            message = None
        self.record(direction, message)

    def record(self, direction: str, message: Any) -> None:
        """Record one parsed message (a batch: each of its messages), as the trace hook does with
        the bytes: the inspector's conversation feeds it its masked messages so."""
        with self.lock:
            for item in message if isinstance(message, list) else [message]:
                self._record(direction, item)

    def _record(self, direction: str, message: Any) -> None:
        if isinstance(message, dict) and "method" in message and _scalar_id(message):
            if len(self.methods) < 10_000:  # bounded: the rest are labelled without their method
                self.methods[(direction, message["id"])] = message["method"]
        if isinstance(message, dict) and message.get("method") is None and "result" in message:
            info = (
                message["result"].get("serverInfo") if isinstance(message["result"], dict) else None
            )
            if isinstance(info, dict) and isinstance(info.get("name"), str):
                self.server = info["name"]
        if not self.look_alikes.admit_message(direction, message, direction + shape(message)):
            return
        if self.arrows >= MAX_ARROWS:
            self.unshown += 1
            return
        self._note_hidden()
        self.lines.append(self._arrow(direction, message))
        self.arrows += 1

    def note(self, text: str) -> None:
        """A note across both lifelines (``Note over C,S: TEXT``) at this point of the conversation:
        ``mcp-ref demo --diagram`` marks each section of the walkthrough so.  Counted among the arrows."""
        with self.lock:
            if self.arrows >= MAX_ARROWS:
                return
            self._note_hidden()
            self.lines.append(f"    Note over C,S: {short(text, 100)}")
            self.arrows += 1

    def _note_hidden(self) -> None:
        hidden = self.look_alikes.take_hidden()
        if hidden:
            self.lines.append(f"    Note over C,S: ... {hidden} more message(s) like those above")

    def _arrow(self, direction: str, message: Any) -> str:
        sender, receiver = ("C", "S") if direction == "-->" else ("S", "C")
        if not isinstance(message, dict):
            return f"    {sender}-x{receiver}: (not a JSON-RPC message)"
        method = message.get("method")
        if method is not None and "id" in message:
            return f"    {sender}->>{receiver}: {method_label(method, message)} #{short(message['id'])}"
        if method is not None:
            return f"    {sender}--){receiver}: {method_label(method, message)}"
        asked_way = "<--" if direction == "-->" else "-->"
        answered = self.methods.get((asked_way, message["id"]), "") if _scalar_id(message) else ""
        if "error" in message:
            error = message["error"] if isinstance(message["error"], dict) else {}
            return f"    {sender}-->>{receiver}: #{short(message.get('id'))} error {short(error.get('code'))}"
        answered = f"{short(answered, 64)} " if answered else ""
        return f"    {sender}-->>{receiver}: #{short(message.get('id'))} {answered}result"

    def mermaid(self, title: str) -> str:
        """The Markdown text: a heading and the ``sequenceDiagram``."""
        with self.lock:
            self._note_hidden()
            lines = list(self.lines)
            if self.unshown:
                lines.append(
                    f"    Note over C,S: ... and {self.unshown} more message(s), not drawn"
                )
        head = [
            "sequenceDiagram",
            "    participant C as Client (mcp-ref)",
            f"    participant S as {short(self.server, 40)}",
        ]
        return f"# {title}\n\n```mermaid\n" + "\n".join(head + lines) + "\n```\n"

    def write(self, path: str, title: str) -> None:
        """Write the diagram to ``path`` (a Markdown file)."""
        with open(path, "w", encoding="utf-8") as out:
            out.write(self.mermaid(title))


def method_label(method: str, message: dict) -> str:
    """The method, and what names the request's subject (a tool or prompt, a URI, a log level),
    each :func:`short`: a peer's method is its own text, and may hold anything.

    The inspector's rows (``mcp_ref.inspector.conversation``) are labelled with it too."""
    subject = subject_label(message)
    return f"{short(method, 64)} {subject}" if subject else short(method, 64)


def subject_label(message: dict) -> str:
    """What names a request's subject (its ``name``, ``uri`` or ``level``), :func:`masked` then
    :func:`short` (no cut leaves part of a secret); "" when it has none."""
    params = message.get("params")
    if not isinstance(params, dict):
        return ""
    subject = params.get("name") or params.get("uri") or params.get("level")
    return short(masked(subject)) if isinstance(subject, str) else ""


def masked(text: str) -> str:
    """``text`` with its secrets masked by the inspector's rules (:mod:`mcp_ref.inspector.masking`):
    a ``KEY=VALUE`` of a secret key whole (``password=••••••``); else a URL whole as a URL
    (``https://••••••@host/x?token=••••••``), then all as free text, and the word after a
    secret-named option (a server's ``--api-key KEY``).  Masked again, it stays as it is: the
    inspector labels its rows from messages masked already."""
    # the masking module alone (the inspector's package loads nothing else)
    from ..inspector.masking import MASK, mask_free_text, secret_key

    key, equals, _value = text.partition("=")
    if equals and re.fullmatch(r"[\w.-]+", key) and secret_key(key):
        return f"{key}={MASK}"
    text = mask_free_text(text)
    return _OPTION_VALUE.sub(
        lambda m: f"{m.group(1)}{MASK}" if secret_key(m.group(2)) else m.group(0), text
    )


#: An option and the word after it in a command line (``--api-key KEY``; a quoted word whole).
_OPTION_VALUE = re.compile(r"""((?<!\S)--?([\w.-]+)\s+)(?!-)("[^"]*"|'[^']*'|\S+)""")


#: What must not reach a label: line breaks (a line starting with a backtick fence would end the
#: Markdown's ```mermaid block) and every other control character, and the line and paragraph
#: separators.
_NOT_ON_ONE_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
#: A lone surrogate (a JSON string may escape one; UTF-8 cannot write it).
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def short(value: Any, limit: int = 32) -> str:
    """A value for a label: short, on one line, and free of what Mermaid or the Markdown around
    the diagram reads as syntax: ``;`` (a statement's end) becomes ``,``; ``#`` (an entity code)
    goes; ``%%`` (a comment) is one ``%``; a backtick (a code fence) becomes ``'``; line breaks
    and other control characters become spaces; a lone surrogate U+FFFD.  A peer's text is
    drawn so, whatever it holds.  The inspector's rows use it too."""
    text = _NOT_ON_ONE_LINE.sub(" ", str(value))
    text = _LONE_SURROGATE.sub("\ufffd", text)
    for bad, good in ((";", ","), ("#", ""), ("`", "'")):
        text = text.replace(bad, good)
    text = re.sub("%%+", "%", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _scalar_id(message: dict) -> bool:
    """Whether ``message`` has an id that can key the requests remembered: a JSON scalar.  An
    object or an array (no JSON-RPC id: 2025-06-18 basic/index §Requests, "Requests MUST include
    a string or integer ID") is drawn, never remembered (it would not hash)."""
    if "id" not in message:
        return False
    return isinstance(message["id"], (str, int, float)) or message["id"] is None
