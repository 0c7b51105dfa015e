"""How the ``mcp-ref`` command answers a server's sampling and elicitation requests.

Each request is shown and asked about (``Allow? [y/N]``) when stdin and stderr are a terminal;
without one it is refused (saying why on stderr) unless ``--yes``.  Sampling runs
``--sampling-command``; a form-mode elicitation asks each field in turn.  A question waits at most
``--answer-timeout`` seconds, and ends when the server withdraws its request.

Every command run has its own :class:`User` (its stdin reader and its terminal lock): nothing is
shared between two runs of :func:`mcp_ref.workbench.cli.main` in one process.
"""

from __future__ import annotations

import json
import math
import queue
import shlex
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, NoReturn

from ..sampling_and_elicitation import CreateMessageResult, ElicitResult
from .check import schema_number
from .cli_output import describe_content, one_line, to_stderr
from .terminal import safe

#: Seconds a question on the terminal waits for an answer (``--answer-timeout``).
ANSWER_TIMEOUT = 300.0


class AnswerTimeout(Exception):
    """No answer was typed within ``--answer-timeout`` seconds."""


class StdinLines:
    """stdin, a line at a time, for questions the server may withdraw while the user thinks.

    One daemon thread reads (started at the first question) and hands each line over, numbered
    in the order read; a question waits for the next line, for its request's cancellation (the
    server cancelled it, or gave up waiting), or for ``timeout`` seconds (then
    :class:`AnswerTimeout`), whichever comes first.  So a withdrawn or unanswered question never
    holds the command.  On a terminal a question takes only a line read after it was asked: a
    late answer to a withdrawn question must not approve the next request.  "Asked" is
    :meth:`mark`, called *before* the prompt is written, so an answer typed the instant the
    prompt appears is never mistaken for an old one.  After the end of input every question
    reads "" (end of input) at once.  ``clock`` (seconds, monotonic) measures the timeout.
    """

    #: How often a waiting question looks at its request's cancellation, in seconds.
    CHECK = 0.1

    def __init__(
        self, timeout: float | None = ANSWER_TIMEOUT, *, clock: Callable[[], float] = time.monotonic
    ):
        self._lock = threading.Lock()
        # (its number, the line); bounded: the reader waits for questions
        self._lines: queue.Queue = queue.Queue(maxsize=64)
        self._read_so_far = 0  # lines the reader has taken from stdin: the next one's number
        self._reader: threading.Thread | None = None
        self._ended = False  # the end of input was read: every later question gets "" at once
        #: Seconds a question waits for its line (None: as long as it takes).
        self.timeout = timeout
        self.clock = clock

    def mark(self) -> int:
        """Call just before asking (before the prompt is written): the number of the first line
        that answers the question; give it to :meth:`read` as ``since``."""
        with self._lock:
            self._start()
            return self._read_so_far

    def read(self, context=None, *, since: int | None = None) -> str | None:
        """The next line ("" at the end of input), or None if ``context``'s request was cancelled
        first.  ``since`` (from :meth:`mark`): skip lines read before the question was asked (a
        terminal's late answers).  Raises :class:`AnswerTimeout` past ``timeout`` seconds."""
        deadline = None if self.timeout is None else self.clock() + self.timeout
        with self._lock:
            self._start()
        while True:
            try:
                number, line = self._lines.get(timeout=self.CHECK)
            except queue.Empty:
                if self._ended and self._lines.empty():
                    return ""
                if context is not None and context.is_cancelled:
                    return None
                if deadline is not None and self.clock() >= deadline:
                    raise AnswerTimeout(
                        f"no answer within {self.timeout:g} s (--answer-timeout)"
                    ) from None
                continue
            if line and since is not None and number < since:
                continue  # typed before the question was asked
            return line

    def _start(self) -> None:
        if self._reader is None:
            # sys.stdin as it is at the first question (a test's in-process run swaps it)
            self._reader = threading.Thread(
                target=self._read, args=(sys.stdin,), name="mcp-ref-stdin", daemon=True
            )
            self._reader.start()

    def _read(self, stream) -> None:
        while True:
            try:
                line = stream.readline()
            except (OSError, ValueError):
                line = ""
            if not line:
                self._ended = True
            with self._lock:
                number = self._read_so_far
                self._read_so_far += 1
            self._lines.put((number, line))
            if not line:
                return


class User:
    """The person running one command: the lines they type (:class:`StdinLines`, each question waiting
    ``answer_timeout`` seconds) and the terminal, held while one question is asked (one at a time)."""

    def __init__(self, answer_timeout: float | None = ANSWER_TIMEOUT):
        self.lines = StdinLines(answer_timeout)
        #: Held while the command talks with the user on the terminal.
        self.terminal = threading.RLock()

    def ask(self, prompt: str, context=None, *, timed_out: str = "") -> str | None:
        """Write ``prompt`` on stderr and read the answer: a line, "" at the end of input, or None
        when none comes (said on stderr): the server withdrew its request (``context`` cancelled)
        or ``--answer-timeout`` passed (then ``timed_out`` says what follows).  On a terminal only
        a line typed after the question counts: "asked" is marked before the prompt shows."""
        since = None if no_terminal() else self.lines.mark()
        sys.stderr.write(prompt)
        sys.stderr.flush()
        try:
            line = self.lines.read(context, since=since)
        except AnswerTimeout as exc:
            to_stderr(f"\nmcp-ref: {exc}: {timed_out}")
            return None
        if line is None:
            to_stderr("\nmcp-ref: the server withdrew its request")
        return line


def no_terminal() -> str | None:
    """Why the user cannot be asked here (stdin or stderr is not a terminal), or None when they can."""
    if not sys.stdin.isatty():
        return "stdin is not a terminal"
    if not sys.stderr.isatty():
        return "stderr is not a terminal"
    return None


class Approval:
    """``Client(approve=...)`` for the command: before a sampling or elicitation request is answered,
    show it and ask ``Allow? [y/N]`` on the terminal; without a terminal refuse it (saying why on
    stderr), unless ``--yes``.  Roots are the ``--root`` directories: given on the command line, they
    are shared without asking.

    2025-11-25 client/sampling §User Interaction Model: "there **SHOULD** always be a human in the
    loop with the ability to deny sampling requests"; client/elicitation §Security Considerations:
    "Clients **SHOULD** implement user approval controls" and MUST "Provide UI that makes it clear
    which server is requesting information" (§User Interaction Model).
    """

    def __init__(self, yes: bool, server: str, user: User | None = None):
        self.yes = yes
        #: Who asks, as the prompt names it: the target, then (once connected) the server's own name.
        self.server = server
        self.user = user or User()

    def __call__(self, request, context=None) -> bool:
        if request.method == "roots/list" or self.yes:
            return True
        what = "sampling" if request.method == "sampling/createMessage" else "elicitation"
        why = no_terminal()
        if why is not None:
            to_stderr(
                f"mcp-ref: refused the server's {what} request: {why} to ask you on "
                f"(--yes answers such requests without asking)"
            )
            return False
        with self.user.terminal:
            answer = self.user.ask(
                describe_request(request, self.server) + "Allow? [y/N] ",
                context,
                timed_out=f"refused the server's {what} request",
            )
        if answer is None:
            return False
        if answer.strip().lower() in ("y", "yes"):
            return True
        to_stderr(f"mcp-ref: refused the server's {what} request")
        return False


def describe_request(request, server: str | None = None) -> str:
    """What a server's sampling or elicitation request asks for, as lines for the terminal
    (``server``: its name, shown as who asks).

    Sampling: the messages' text, the system prompt, maxTokens (and the tools offered).
    Elicitation: the message and the requested fields, or the full URL and its host (2025-11-25
    client/elicitation §Safe URL Handling: clients "MUST show the full URL to the user for
    examination before consent").  The server's text is shown with control characters escaped.
    """
    params = request.params if isinstance(request.params, dict) else {}
    who = f'the server "{_shown(server)}"' if server else "the server"
    if request.method == "sampling/createMessage":
        lines = [f"mcp-ref: {who} asks to sample your model (--sampling-command):"]
        if params.get("systemPrompt"):
            lines.append(f"  [system] {_shown(params['systemPrompt'])}")
        lines += [
            f"  [{_shown(message.get('role'))}] {_content_text(message.get('content'))}"
            for message in params.get("messages") or []
            if isinstance(message, dict)
        ]
        lines.append(f"  maxTokens: {_shown(params.get('maxTokens'))}")
        tools = [t.get("name") for t in params.get("tools") or [] if isinstance(t, dict)]
        if tools:
            lines.append(f"  tools the model may use: {', '.join(_shown(name) for name in tools)}")
        return "\n".join(lines) + "\n"
    message = _shown(params.get("message"))
    if params.get("mode") == "url":
        from urllib.parse import urlsplit

        url = str(params.get("url"))
        try:
            host = urlsplit(url).hostname or "?"
        except ValueError:  # e.g. an unclosed "[": shown as it is, the host unknown
            host = "?"
        return (
            f"mcp-ref: {who} asks you to open a URL: {message}\n"
            f"  url:  {_shown(url)}\n  host: {_shown(host)}\n"
        )
    requested = params.get("requestedSchema")
    schema: dict = requested if isinstance(requested, dict) else {}
    required = set(schema.get("required") or ())
    fields = []
    for name, prop in (schema.get("properties") or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        choices = _choices(prop)
        notes = ["/".join(map(str, choices)) if choices else str(prop.get("type", "string"))]
        if name in required:
            notes.append("required")
        if "default" in prop:
            notes.append(f"default {json.dumps(prop['default'])}")
        fields.append(f"{_shown(name)} ({_shown(', '.join(notes))})")
    return (
        f"mcp-ref: {who} asks for your input: {message}\n"
        f"  fields: {', '.join(fields) or '(none)'}\n"
    )


def _choices(prop: dict) -> list:
    """The values a requested field allows: its ``enum``, or the ``const`` of each ``oneOf`` option;
    a multi-select field's (``type: array``), those of its ``items`` (``enum``, or the ``const``
    of each ``anyOf`` option).  Empty: any value of its type."""
    if prop.get("type") == "array":
        items = prop.get("items")
        if not isinstance(items, dict):
            return []
        listed = items.get("enum")
        options = items.get("anyOf")
    else:
        listed = prop.get("enum")
        options = prop.get("oneOf")
    if isinstance(listed, list) and listed:
        return listed
    options = options if isinstance(options, list) else []
    return [option.get("const") for option in options if isinstance(option, dict)]


def _content_text(content) -> str:
    """A sampling message's content (a block or a list of blocks, as on the wire) as one line of text."""
    blocks = content if isinstance(content, list) else [content]
    parts = []
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            parts.append(_shown(block.get("text")))
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {_shown(block.get('mimeType'))}]")
        elif kind == "tool_use":
            parts.append(
                f"[tool_use {_shown(block.get('name'))} {_shown(json.dumps(block.get('input')))}]"
            )
        else:
            parts.append(f"[{_shown(kind)}]")
    return " ".join(parts)


def _shown(value) -> str:
    """``value`` as text safe to print on a terminal (:func:`mcp_ref.workbench.terminal.safe`: escape sequences
    that could redraw the prompt, carriage returns ... shown escaped), line breaks indented."""
    return safe(value, newline="\n    ")


class SamplingCommand:
    """``--sampling-command CMD``: each ``sampling/createMessage`` runs CMD, the conversation on its
    stdin (``[system]``, ``[user]``, ``[assistant]`` lines), its stdout the reply."""

    def __init__(self, command: str, timeout: float):
        self.command = shlex.split(command)
        self.timeout = timeout

    def __call__(self, params):
        import subprocess

        from ..types import TextContent

        lines = [f"[system] {params.system_prompt}"] if params.system_prompt else []
        lines += [
            f"[{message.role}] {describe_content(message.content)}" for message in params.messages
        ]
        try:
            done = subprocess.run(
                self.command,
                input="\n".join(lines) + "\n",
                capture_output=True,
                text=True,
                timeout=self.timeout,
            )
        except OSError as exc:
            self._failed(f"could not be started ({exc.strerror or type(exc).__name__})")
        except subprocess.TimeoutExpired:
            self._failed(f"did not answer within {self.timeout:g} s")
        if done.returncode != 0:
            self._failed(f"exited with status {done.returncode}")
        return CreateMessageResult(
            role="assistant",
            content=TextContent(text=done.stdout.strip()),
            model=self.command[0],
            stop_reason="endTurn",
        )

    def _failed(self, why: str) -> NoReturn:
        """Say on stderr why the command failed, naming its program but not its arguments (an API
        key is often one); the server is told only that it failed: the details are the user's
        (a local path, the command line), no business of the peer's."""
        from ..errors import InternalError

        to_stderr(f"mcp-ref: the sampling command {one_line(self.command[0])} {why}")
        raise InternalError("the sampling command failed")


#: What :meth:`AskTheUser._ask_field` returns for an answer that does not do: the field is asked again.
_INVALID = object()


class AskTheUser:
    """The command's elicitation handler: a form-mode request, each requested field asked for and
    checked against its schema (end of input: cancel).

    On a terminal once the user allowed the request (:class:`Approval`); with ``--yes`` and no
    terminal the answers are read from stdin, one line a field (an empty line: the default, or
    left out; a multi-select field's choices separated by commas).  A requested schema the
    command cannot ask (a field of no type it knows) is declined, said in one line on stderr."""

    def __init__(self, user: User):
        self.user = user

    def __call__(self, params, context=None):
        schema = params.requested_schema
        properties = schema.get("properties", {}) if isinstance(schema, dict) else None
        required = schema.get("required", ()) if isinstance(schema, dict) else ()
        why = unaskable(properties)
        if why is None and not isinstance(required, (list, tuple)):
            why = "its required list is not a list"
        if why is not None:
            to_stderr(f"mcp-ref: declined the server's request: cannot ask for {why}")
            return ElicitResult(action="decline")
        assert isinstance(properties, dict)  # unaskable() said so
        with self.user.terminal:
            to_stderr(f"mcp-ref: the server asks: {_shown(params.message)}")
            answers: dict[str, Any] = {}
            for name, prop in properties.items():
                value = _INVALID
                while value is _INVALID:
                    value = self._ask_field(name, _without_null(prop), name in required, context)
                if isinstance(value, ElicitResult):  # the form ends here
                    return value
                if value is not None:
                    answers[name] = value
        return ElicitResult(action="accept", content=answers)

    def _ask_field(self, name: str, prop: dict, required: bool, context=None):
        """One field, read from the terminal and checked against its schema: the value, None (left out),
        ``_INVALID`` (ask again), or the :class:`ElicitResult` that ends the form (the user declined,
        the input ended, the wait timed out, the server withdrew its request)."""
        kind = prop.get("type", "string")
        choices = _choices(prop)
        hint = "/".join(map(str, choices)) if choices else kind
        if kind == "array":
            hint = f"{hint}, separated by commas"
        default = prop.get("default")
        suffix = (
            f" [{json.dumps(default)}]"
            if default is not None
            else ("" if required else " (optional)")
        )
        # the title, the name, the choices and the type are the server's words: shown escaped
        prompt = (
            f"  {one_line(prop.get('title') or name)} ({one_line(hint)}){suffix}, or !decline: "
        )
        line = self.user.ask(prompt, context, timed_out="the request is cancelled")
        if not line:  # withdrawn, timed out, or the end of input
            # client/elicitation §Response Actions: "cancel": dismissed without an explicit choice
            return ElicitResult(action="cancel")
        text = line.strip()
        if text == "!decline":
            return ElicitResult(action="decline")
        if not text and default is None:
            if required:
                to_stderr("    a value is required")
                return _INVALID
            return None  # left out
        try:
            value = default if not text else _read_value(kind, text)
            _check_value(prop, value)
        except ValueError as exc:
            to_stderr(f"    {exc}")
            return _INVALID
        return value


#: Values of a requested field of each type, read from the text typed for it.
_BOOLEANS = {"y": True, "yes": True, "true": True, "n": False, "no": False, "false": False}
#: The types a requested field may have (2025-11-25 client/elicitation §Requested Schema).
_ASKABLE = ("string", "number", "integer", "boolean", "array")


def unaskable(properties: Any) -> str | None:
    """What of a requested schema's ``properties`` the command cannot ask for, or None: each field
    must have one of the types of 2025-11-25 client/elicitation §Requested Schema ("flat objects
    with primitive properties only"; ``string`` when it names none), an array being a
    multi-select enum (``items`` with ``enum`` or ``anyOf`` choices)."""
    if not isinstance(properties, dict):
        return "its fields (properties is not an object)"
    for name, given in properties.items():
        prop = _without_null(given)
        kind = prop.get("type", "string") if isinstance(prop, dict) else None
        if kind not in _ASKABLE:
            return f"the field {one_line(name)} (of type {one_line(json.dumps(kind))[:60]})"
        if kind == "array" and not _choices(prop):
            return f"the field {one_line(name)} (an array that is not a multi-select enum)"
    return None


def _without_null(prop: Any) -> Any:
    """A field's schema asked as its one type when it is ``{"type": [T, "null"]}`` (a form other
    servers send for an optional field; the spec's PrimitiveSchemaDefinition has one type), else
    as it is.  Optional or not as the schema's ``required`` says: an answer holds no null (2025-11-25
    ElicitResult: each value a string, number, boolean or list of strings)."""
    kind = prop.get("type") if isinstance(prop, dict) else None
    if not isinstance(kind, list) or len(kind) != 2:
        return prop
    others = [name for name in kind if name != "null"]
    return {**prop, "type": others[0]} if len(others) == 1 else prop


def _read_value(kind: str, text: str) -> Any:
    """The value of a field of type ``kind`` typed as ``text``; ValueError, saying why, if none."""
    if kind == "array":  # a multi-select enum: its choices separated by commas
        chosen = [word.strip() for word in text.split(",") if word.strip()]
        return list(dict.fromkeys(chosen))  # each once, in the order typed
    try:
        if kind == "boolean":
            return _BOOLEANS[text.lower()]
        if kind == "integer":
            return int(text)
        if kind == "number":
            number = float(text)
            if not math.isfinite(number):  # JSON has no NaN or Infinity (RFC 8259 §6)
                raise ValueError
            return number
    except (ValueError, KeyError):
        article = "an" if kind == "integer" else "a"
        raise ValueError(f"not {article} {kind}: {one_line(json.dumps(text))}") from None
    return text


def _check_value(prop: dict, value: Any) -> None:
    """ValueError, saying why in one line, when ``value`` breaks ``prop``, a requested field's
    schema (2025-11-25 client/elicitation §Security: "Clients SHOULD validate all responses
    against the provided schema"): its choices, minimum/maximum, minLength/maxLength, format
    (email, uri, date, date-time) and minItems/maxItems.  A ``pattern`` is not run: it is not a
    keyword of the spec's PrimitiveSchemaDefinition, and a server's regular expression can take
    exponential time."""
    choices = _choices(prop)
    quoted = ", ".join(json.dumps(choice) for choice in choices)
    chosen = value if isinstance(value, list) else [value]
    if choices and any(choice not in choices for choice in chosen):
        raise ValueError(
            one_line(f"must be {'among' if isinstance(value, list) else 'one of'} {quoted}")
        )
    if isinstance(value, list):
        _within(len(value), prop, "minItems", "maxItems", "choices")
    elif isinstance(value, str):
        _within(len(value), prop, "minLength", "maxLength", "characters")
        form = prop.get("format")
        if form in _FORMATS and not _FORMATS[form](value):
            raise ValueError(f"not {'an' if form == 'email' else 'a'} {form}")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _within(value, prop, "minimum", "maximum", "")


def _within(size: float, prop: dict, lowest: str, highest: str, unit: str) -> None:
    """ValueError unless ``size`` is within ``prop``'s keywords ``lowest`` and ``highest`` (a
    keyword absent or not a finite number: no bound); ``unit``: what ``size`` counts
    ("characters", "choices"; "": a number)."""
    low = schema_number(prop, lowest)
    high = schema_number(prop, highest)
    if low is not None and size < low:
        raise ValueError(f"must be at least {_counted(low, unit)}")
    if high is not None and size > high:
        raise ValueError(f"must be at most {_counted(high, unit)}")


def _counted(bound: float, unit: str) -> str:
    """``bound`` and its ``unit`` ("1 choice", "2 choices", "10"); an integer in all its digits
    (``:g`` would make it a float, which one beyond every float cannot be)."""
    shown = str(bound) if isinstance(bound, int) else f"{bound:g}"
    if not unit:
        return shown
    return f"{shown} {unit.removesuffix('s') if bound == 1 else unit}"


def _is_date(text: str) -> bool:
    """RFC 3339 full-date: YYYY-MM-DD, a real day."""
    import datetime

    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


def _is_date_time(text: str) -> bool:
    """RFC 3339 date-time: a full-date, ``T``, a time and its offset (``Z`` or ``+hh:mm``)."""
    import datetime
    import re

    shape = r"\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)"
    if not re.fullmatch(shape, text):
        return False
    try:
        datetime.datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _is_email(text: str) -> bool:
    """An address of RFC 5321's shape: a local part, ``@``, a domain with a dot; no spaces."""
    local, at, domain = text.rpartition("@")
    return bool(at and local and "." in domain.strip(".")) and not any(c.isspace() for c in text)


def _is_uri(text: str) -> bool:
    """An absolute URI (RFC 3986 §4.3): a scheme, ``:``, and more; no spaces."""
    scheme, colon, rest = text.partition(":")
    return (
        bool(colon and rest and scheme[:1].isascii() and scheme[:1].isalpha())
        and all(c.isascii() and (c.isalnum() or c in "+-.") for c in scheme)
        and not any(c.isspace() for c in text)
    )


#: The string formats of 2025-11-25 client/elicitation §Requested Schema, and their checks.
_FORMATS: dict[str, Callable[[str], bool]] = {
    "email": _is_email,
    "uri": _is_uri,
    "date": _is_date,
    "date-time": _is_date_time,
}
