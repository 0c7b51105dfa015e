"""The ``mcp-ref`` command: a scriptable MCP client, and the demo.

::

    mcp-ref [--json] [--trace] [--timeout SECONDS] [--connect-timeout SECONDS] [--quiet] [--quiet-server]
            [--root PATH] [--sampling-command CMD] [--yes] [--answer-timeout SECONDS] VERB ...

    mcp-ref info TARGET                        serverInfo, protocol version, capabilities, instructions
    mcp-ref tools|resources|templates|prompts TARGET
    mcp-ref call TARGET TOOL [KEY=VALUE ...] [--args JSON]
    mcp-ref read TARGET URI
    mcp-ref prompt TARGET NAME [KEY=VALUE ...]
    mcp-ref demo                               walk through every MCP feature against the demo server
    mcp-ref serve-demo [--http HOST:PORT [--stateless]]
                                               run the demo server on stdio, or over HTTP

TARGET is a server command line in one string, e.g. ``"python server.py"``, or
the URL of an HTTP server (``http://127.0.0.1:8000/mcp``; Streamable HTTP,
falling back to the 2024-11-05 HTTP+SSE transport).
The options work before or after the verb.
A server's sampling and elicitation requests (sampling with ``--sampling-command``) are shown
and asked about (``Allow? [y/N]``) when stdin and stderr are a terminal; without one they are
refused (sampling: error -1, elicitation: declined) with a note on stderr, unless ``--yes``
answers them without asking; a question unanswered for ``--answer-timeout`` seconds (default
300) is refused (elicitation: cancelled).
Exit codes: 0 ok, 1 usage, 4 cannot launch or reach the server (or no handshake),
5 the tool returned ``isError`` or the server answered with a JSON-RPC error,
6 a request timed out.
"""

from __future__ import annotations

import argparse
import json
import math
import queue
import shlex
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from .terminal import safe, safe_json

EXIT_OK, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_ERROR, EXIT_TIMEOUT, EXIT_AUTH = 0, 1, 4, 5, 6, 7
#: Seconds a question on the terminal waits for an answer (``--answer-timeout``).
ANSWER_TIMEOUT = 300.0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors exit 1, as documented
        self.print_usage(sys.stderr)
        print(f"mcp-ref: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


class CliError(Exception):
    """A failure to report as one line on stderr with an exit code (and, with --json, on stdout as JSON).

    ``error`` is the JSON-RPC error object when the server answered with one.
    """

    def __init__(self, message: str, code: int, error: dict | None = None):
        super().__init__(message)
        self.code = code
        self.error = error


def _seconds(text: str) -> float:
    """An argparse type: a positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value


def _global_options(parser: argparse.ArgumentParser, defaults: bool) -> None:
    """The options every verb takes, before or after it (after it, they override)."""

    def default(value):
        return value if defaults else argparse.SUPPRESS

    parser.add_argument("--json", action="store_true", default=default(False),
                        help="print the raw result as JSON (errors too, as {\"error\": ...})")
    parser.add_argument("--trace", action="store_true", default=default(False),
                        help="print every JSON-RPC message on stderr (--> sent, <-- received)")
    parser.add_argument("--timeout", type=_seconds, default=default(60.0), metavar="SECONDS",
                        help="the longest each request may take (default 60); past it, exit 6")
    parser.add_argument("--connect-timeout", type=_seconds, default=default(30.0), metavar="SECONDS",
                        help="the longest launching or reaching the server and the handshake may take (default 30)")
    parser.add_argument("--quiet", action="store_true", default=default(False), help="no progress display")
    parser.add_argument("--quiet-server", action="store_true", default=default(False),
                        help="hide a launched server's stderr (shown again, its last lines, if it fails)")
    parser.add_argument("--diagram", metavar="FILE.md", default=default(None),
                        help="write the conversation as a Mermaid sequence diagram to FILE.md")
    parser.add_argument("--root", action="append", default=default([]), metavar="PATH",
                        help="declare the roots capability with this directory as a root (repeatable)")
    parser.add_argument("--sampling-command", metavar="CMD", default=default(None),
                        help="answer the server's sampling requests by running CMD: the conversation on its "
                             "stdin, its stdout the model's reply")
    parser.add_argument("--yes", action="store_true", default=default(False),
                        help="answer the server's sampling and elicitation requests without asking (otherwise "
                             "each is shown and asked about on a terminal, and refused without one)")
    parser.add_argument("--answer-timeout", type=_seconds, default=default(ANSWER_TIMEOUT), metavar="SECONDS",
                        help="the longest a question on the terminal waits for your answer (default "
                             f"{ANSWER_TIMEOUT:g}); past it the server's request is refused or cancelled")
    parser.add_argument("--header", action="append", default=default([]), metavar="'NAME: VALUE'",
                        help="an HTTP header for URL targets (repeatable)")
    parser.add_argument("--no-browser", action="store_true", default=default(False),
                        help="for a protected server: print the authorization URL, do not open a browser")
    parser.add_argument("--transport", choices=("auto", "streamable", "sse"), default=default("auto"),
                        help="for URL targets: Streamable HTTP with fallback (auto), or one of them")
    parser.add_argument("--era", choices=("auto", "modern", "handshake"), default=default("auto"),
                        help="the protocol's era: 2026-07-28 when the server speaks it, else the initialize "
                             "handshake (auto); or only one of them")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    from .. import __version__

    parser = _Parser(prog="mcp-ref", description="A synchronous MCP client, and a demo of the whole protocol.")
    parser.add_argument("--version", action="version", version=f"mcp-ref {__version__}")
    _global_options(parser, defaults=True)
    after_verb = _Parser(add_help=False)
    _global_options(after_verb, defaults=False)
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    verbs.required = True

    def verb(name: str, help: str, *, needs_target: bool = True):  # argparse's word
        sub = verbs.add_parser(name, help=help, parents=[after_verb])
        if needs_target:
            sub.add_argument("target", metavar="TARGET", help='server command line ("python server.py") or URL')
        return sub

    verb("info", "server info, negotiated version, capabilities, instructions")
    for listing in ("tools", "resources", "templates", "prompts"):
        verb(listing, f"list {listing}")
    call = verb("call", "call a tool")
    call.add_argument("tool", metavar="TOOL")
    call.add_argument("pairs", nargs="*", metavar="KEY=VALUE",
                      help="arguments, read as the tool's inputSchema says (text=123 stays a string for a string parameter)")
    call.add_argument("--args", metavar="JSON", help="arguments as one JSON object (KEY=VALUE pairs override)")
    read = verb("read", "read a resource")
    read.add_argument("uri", metavar="URI")
    prompt = verb("prompt", "get a prompt")
    prompt.add_argument("name", metavar="NAME")
    prompt.add_argument("pairs", nargs="*", metavar="KEY=VALUE")
    check = verb("check", "check a server against the official schema and the spec's rules (exit 5 if anything fails)")
    check.add_argument("--call-tools", action="store_true",
                       help="also call every tool once with arguments built from its inputSchema (tools may have side effects)")
    logout = verb("logout", "forget the cached authorization (tokens, registration) for a server URL", needs_target=False)
    logout.add_argument("target", metavar="URL")
    verb("demo", "walk through every MCP feature against the bundled demo server", needs_target=False)
    serve = verb("serve-demo", "run the demo server on stdio (or --http)", needs_target=False)
    serve.add_argument("--http", metavar="HOST:PORT", help="serve Streamable HTTP at /mcp and HTTP+SSE at /sse instead")
    serve.add_argument("--stateless", action="store_true", help="with --http: no sessions (any worker answers any request)")
    serve.add_argument("--auth", action="store_true",
                       help="with --http: an OAuth protected resource, with the demo authorization server on the same port")
    return parser


def parse_pairs(pairs: Sequence[str], *, coerce: bool = True, schema: dict | None = None) -> dict[str, Any]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}``.

    With ``schema`` (a tool's ``inputSchema`` properties), each value is read as its property
    says: a string parameter keeps ``123`` as the string "123"; other parameters (and names
    the schema does not list) take the value as JSON when it parses, else as a string.
    Without it, values are JSON when they parse (``coerce``) or strings.
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliError(f"expected KEY=VALUE, got {pair!r}", EXIT_USAGE)
        try:
            parsed = json.loads(value) if coerce else value
        except ValueError:
            parsed = value
        if schema is not None and not isinstance(parsed, str) and _wants_string(schema.get(key)):
            parsed = value  # a string parameter: 123 is the text "123" ("\"42\"" is still the string 42)
        out[key] = parsed
    return out


def _ambiguous(value: str) -> bool:
    """True when a value reads as JSON other than a string (a number, true, null, [...]): it may be meant as text."""
    try:
        return not isinstance(json.loads(value), str)
    except ValueError:
        return False


def _wants_string(prop: Any) -> bool:
    """True when a property's schema takes a string and nothing a JSON literal could be (number, bool, ...)."""
    if not isinstance(prop, dict):
        return False
    kinds = prop.get("type")
    if kinds is None and "enum" in prop:
        return all(isinstance(v, str) for v in prop["enum"])
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    return "string" in kinds and not set(kinds) & {"number", "integer", "boolean", "array", "object"}


class _Progress:
    """``on_progress`` for ``call``: a bar redrawn in place on a terminal, one line a report otherwise."""

    def __init__(self, stream):
        self.stream = stream
        self.tty = stream.isatty()
        self.drawn = False

    def __call__(self, progress, total=None, message=None) -> None:
        # Every value is the server's: numbers shown only as numbers, the message escaped.
        message = _one_line(message) if message else None
        shown, of = _number(progress), _number(total) if total else None
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
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; returns the exit code."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        # KEY=VALUE pairs may also come after options (``call T tool --args '{...}' b=2``).
        if getattr(args, "pairs", None) is None or any(item.startswith("-") or "=" not in item for item in extra):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.pairs.extend(extra)
    _configure_logging(verbose=args.trace)
    tracer = _Trace() if args.trace else None
    recorder = None
    if getattr(args, "diagram", None):
        from .diagram import Recorder

        recorder = Recorder()
    trace = _hooks(tracer, recorder)
    try:
        if args.verb == "serve-demo":
            return _serve_demo(args)
        if args.verb == "demo":
            return _demo(args, trace)
        if args.verb == "logout":
            return _logout(args)
        return _run_verb(args, trace)
    except CliError as exc:
        print(f"mcp-ref: {safe(exc)}", file=sys.stderr)  # it may quote the server's words
        if getattr(args, "json", False) and exc.code != EXIT_USAGE:
            # Scripts parse failures too: the JSON-RPC error as the server sent it, or ours.
            error = exc.error or {"message": str(exc)}
            _print_json({"error": error, "exitCode": exc.code})
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of our output has gone (``| head -1``): what it wanted it has; stop quietly.
        # stdout is pointed at /dev/null so that the interpreter's final flush does not fail again.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    finally:
        if tracer is not None:
            tracer.close()
        if recorder is not None:
            try:
                recorder.write(args.diagram, f"mcp-ref {' '.join(_shown_argv(argv))}")
            except OSError as exc:
                print(f"mcp-ref: cannot write the diagram to {args.diagram}: {exc.strerror or exc}", file=sys.stderr)


def _shown_argv(argv) -> list[str]:
    """The command's arguments for a diagram's title: the verb and what follows, no options' values."""
    words = list(sys.argv[1:] if argv is None else argv)
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
            continue
        if word in ("--diagram", "--timeout", "--connect-timeout", "--header", "--sampling-command", "--root"):
            skip = True
            continue
        if not word.startswith("--"):
            out.append(word if len(word) <= 60 else word[:59] + "…")
    return out


def _demo(args, trace) -> int:
    from ..core.errors import ConnectionClosed, McpError, RequestTimeout
    from .walkthrough import run

    try:
        return run(trace=trace, timeout=args.timeout, era=args.era)
    except (ConnectionClosed, RequestTimeout, McpError, OSError) as exc:
        raise CliError(f"the demo could not run its server: {exc}", EXIT_UNREACHABLE) from None


def _configure_logging(verbose: bool) -> None:
    import logging

    # Errors reach the user as one line from main(); library warnings only with --trace.
    level = logging.WARNING if verbose else logging.ERROR

    class SafeFormatter(logging.Formatter):
        # A library's log line may quote the server (a rejected tool's name, a log message): no
        # escape sequence of its reaches the terminal.
        def format(self, record: logging.LogRecord) -> str:
            return safe(super().format(record))

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(SafeFormatter("mcp-ref: %(levelname)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])


class _Trace:
    """``--trace``: every JSON-RPC message on stderr, with runs of look-alikes summarised.

    Once three messages of one shape (the same method, tool and content types, only ids and
    values differing) have been printed, more of it (the demo's 200 concurrent echo calls, a
    long stream of progress) are counted, not printed (``diagram.LookAlikes``); the count is
    printed, as one line, before the next message printed and at the end.
    """

    def __init__(self, stream=None):
        from .diagram import LookAlikes

        self.stream = stream or sys.stderr
        self.look_alikes = LookAlikes()
        self.lock = threading.Lock()

    def __call__(self, direction: str, data: bytes) -> None:
        from .diagram import shape

        text = data.decode("utf-8", "replace")
        try:
            key = direction + shape(json.loads(text))
        except ValueError:
            key = direction + text
        with self.lock:
            if not self.look_alikes.admit(key):
                return
            self._flush()
            self.stream.write(f"{direction} {safe(text)}\n")
            self.stream.flush()

    def _flush(self) -> None:
        hidden = self.look_alikes.take_hidden()
        if hidden:
            self.stream.write(f"... {hidden} more message(s) shaped like those above (only ids and values differ)\n")

    def close(self) -> None:
        """Print the count still pending."""
        with self.lock:
            self._flush()
            self.stream.flush()


def _hooks(*hooks):
    """One ``trace`` hook calling each of ``hooks`` that is set (None when none is)."""
    hooks = [hook for hook in hooks if hook is not None]
    if not hooks:
        return None
    if len(hooks) == 1:
        return hooks[0]
    return lambda direction, data: [hook(direction, data) for hook in hooks] and None


def _client_options(args, trace) -> dict:
    """What the CLI declares and answers as a client: roots, sampling, elicitation (see the README)."""
    from pathlib import Path

    options: dict[str, Any] = {"timeout": args.timeout, "initialize_timeout": args.connect_timeout, "trace": trace,
                               "era": args.era}
    if args.root:
        options["roots"] = [Path(path).resolve().as_uri() for path in args.root]
    if args.sampling_command:
        options["sampling_handler"] = _SamplingCommand(args.sampling_command, args.timeout)
    # Elicitation is always declared: on a terminal the user is asked; without one it is declined
    # (unless --yes, which reads the answers from stdin).  _Approval decides, before either handler runs.
    options["elicitation_handler"] = _ask_the_user
    _STDIN.timeout = args.answer_timeout  # every question of this command, at the terminal or from stdin
    options["approve"] = _Approval(args.yes, args.target)
    return options


#: Held while the command talks with the user on the terminal (one question at a time).
_TERMINAL = threading.RLock()


class AnswerTimeout(Exception):
    """No answer was typed within ``--answer-timeout`` seconds."""


class _StdinLines:
    """stdin, a line at a time, for questions the server may withdraw while the user thinks.

    One daemon thread reads (started at the first question) and hands each line over, numbered
    in the order read; a question waits for the next line, for its request's cancellation (the
    server cancelled it, or gave up waiting), or for ``timeout`` seconds (then
    :class:`AnswerTimeout`), whichever comes first.  So a withdrawn or unanswered question never
    holds the command.  On a terminal a question takes only a line read after it was asked: a
    late answer to a withdrawn question must not approve the next request.  "Asked" is
    :meth:`mark`, called *before* the prompt is written, so an answer typed the instant the
    prompt appears is never mistaken for an old one.  After the end of input every question
    reads "" (end of input) at once.
    """

    #: How often a waiting question looks at its request's cancellation, in seconds.
    CHECK = 0.1

    def __init__(self, timeout: float | None = ANSWER_TIMEOUT):
        self._lock = threading.Lock()
        # (its number, the line); bounded: the reader waits for questions
        self._lines: queue.Queue = queue.Queue(maxsize=64)
        self._read_so_far = 0  # lines the reader has taken from stdin: the next one's number
        self._reader: threading.Thread | None = None
        self._ended = False  # the end of input was read: every later question gets "" at once
        #: Seconds a question waits for its line (None: as long as it takes).
        self.timeout = timeout

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
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
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
                if deadline is not None and time.monotonic() >= deadline:
                    raise AnswerTimeout(f"no answer within {self.timeout:g} s (--answer-timeout)") from None
                continue
            if line and since is not None and number < since:
                continue  # typed before the question was asked
            return line

    def _start(self) -> None:
        if self._reader is None:
            self._reader = threading.Thread(target=self._read, name="mcp-ref-stdin", daemon=True)
            self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                line = sys.stdin.readline()
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


_STDIN = _StdinLines()


def _no_terminal() -> str | None:
    """Why the user cannot be asked here (stdin or stderr is not a terminal), or None when they can."""
    if not sys.stdin.isatty():
        return "stdin is not a terminal"
    if not sys.stderr.isatty():
        return "stderr is not a terminal"
    return None


class _Approval:
    """``Client(approve=...)`` for the command: before a sampling or elicitation request is answered,
    show it and ask ``Allow? [y/N]`` on the terminal; without a terminal refuse it (saying why on
    stderr), unless ``--yes``.  Roots are the ``--root`` directories: given on the command line, they
    are shared without asking.

    2025-11-25 client/sampling §User Interaction Model: "there **SHOULD** always be a human in the
    loop with the ability to deny sampling requests"; client/elicitation §Security Considerations:
    "Clients **SHOULD** implement user approval controls" and MUST "Provide UI that makes it clear
    which server is requesting information" (§User Interaction Model).
    """

    def __init__(self, yes: bool, server: str):
        self.yes = yes
        #: Who asks, as the prompt names it: the target, then (once connected) the server's own name.
        self.server = server

    def __call__(self, request, context=None) -> bool:
        if request.method == "roots/list" or self.yes:
            return True
        what = "sampling" if request.method == "sampling/createMessage" else "elicitation"
        why = _no_terminal()
        if why is not None:
            print(f"mcp-ref: refused the server's {what} request: {why} to ask you on "
                  f"(--yes answers such requests without asking)", file=sys.stderr, flush=True)
            return False
        with _TERMINAL:
            since = _STDIN.mark()  # asked from here: before the prompt shows, not after
            sys.stderr.write(describe_request(request, self.server))
            sys.stderr.write("Allow? [y/N] ")
            sys.stderr.flush()
            try:
                answer = _STDIN.read(context, since=since)
            except AnswerTimeout as exc:
                sys.stderr.write(f"\nmcp-ref: {exc}: refused the server's {what} request\n")
                return False
            if answer is None:
                sys.stderr.write("\nmcp-ref: the server withdrew its request\n")
                return False
            answer = answer.strip().lower()
        if answer in ("y", "yes"):
            return True
        print(f"mcp-ref: refused the server's {what} request", file=sys.stderr, flush=True)
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
        for message in params.get("messages") or []:
            if isinstance(message, dict):
                lines.append(f"  [{_shown(message.get('role'))}] {_content_text(message.get('content'))}")
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
        return (f"mcp-ref: {who} asks you to open a URL: {message}\n"
                f"  url:  {_shown(url)}\n  host: {_shown(host)}\n")
    requested = params.get("requestedSchema")
    schema: dict = requested if isinstance(requested, dict) else {}
    required = set(schema.get("required") or ())
    fields = []
    for name, prop in (schema.get("properties") or {}).items():
        prop = prop if isinstance(prop, dict) else {}
        choices = prop.get("enum") or [c.get("const") for c in prop.get("oneOf", []) if isinstance(c, dict)]
        notes = ["/".join(map(str, choices)) if choices else str(prop.get("type", "string"))]
        if name in required:
            notes.append("required")
        if "default" in prop:
            notes.append(f"default {json.dumps(prop['default'])}")
        fields.append(f"{_shown(name)} ({_shown(', '.join(notes))})")
    return (f"mcp-ref: {who} asks for your input: {message}\n"
            f"  fields: {', '.join(fields) or '(none)'}\n")


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
            parts.append(f"[tool_use {_shown(block.get('name'))} {_shown(json.dumps(block.get('input')))}]")
        else:
            parts.append(f"[{_shown(kind)}]")
    return " ".join(parts)


def _shown(value) -> str:
    """``value`` as text safe to print on a terminal (:func:`mcp_ref.workbench.terminal.safe`: escape sequences
    that could redraw the prompt, carriage returns ... shown escaped), line breaks indented."""
    return safe(value, newline="\n    ")


class _SamplingCommand:
    """``--sampling-command CMD``: each ``sampling/createMessage`` runs CMD, the conversation on its
    stdin (``[system]``, ``[user]``, ``[assistant]`` lines), its stdout the reply."""

    def __init__(self, command: str, timeout: float):
        self.command = shlex.split(command)
        self.timeout = timeout

    def __call__(self, params):
        import subprocess

        from ..core.errors import InternalError
        from ..core.types import CreateMessageResult, TextContent

        lines = [f"[system] {params.system_prompt}"] if params.system_prompt else []
        for message in params.messages:
            lines.append(f"[{message.role}] {describe_content(message.content)}")
        try:
            done = subprocess.run(self.command, input="\n".join(lines) + "\n", capture_output=True, text=True,
                                  timeout=self.timeout)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise InternalError(f"the sampling command could not answer: {exc}") from None
        if done.returncode != 0:
            raise InternalError(f"the sampling command exited with status {done.returncode}")
        return CreateMessageResult(role="assistant", content=TextContent(text=done.stdout.strip()),
                                   model=self.command[0], stop_reason="endTurn")


def _ask_the_user(params, context=None):
    """Form-mode elicitation: each requested field asked for and checked (end of input: cancel).

    On a terminal once the user allowed the request; with ``--yes`` and no terminal the answers are
    read from stdin, one line a field (an empty line: the default, or left out)."""
    from ..core.types import ElicitResult

    schema = params.requested_schema or {}
    properties = schema.get("properties", {})
    required = set(schema.get("required", ()))
    with _TERMINAL:
        print(f"mcp-ref: the server asks: {_shown(params.message)}", file=sys.stderr)
        answers: dict[str, Any] = {}
        for name, prop in properties.items():
            while True:
                value = _ask_field(name, prop, name in required, context)
                if value is _WITHDRAWN:
                    print("\nmcp-ref: the server withdrew its request", file=sys.stderr)
                    return ElicitResult(action="cancel")
                if isinstance(value, AnswerTimeout):
                    # client/elicitation §Response Actions: "cancel": dismissed without an explicit choice
                    print(f"\nmcp-ref: {value}: the request is cancelled", file=sys.stderr)
                    return ElicitResult(action="cancel")
                if value is _EOF:
                    return ElicitResult(action="cancel")
                if value is _DECLINE:
                    return ElicitResult(action="decline")
                if value is not _INVALID:
                    break
            if value is not None:
                answers[name] = value
    return ElicitResult(action="accept", content=answers)


_EOF, _DECLINE, _INVALID, _WITHDRAWN = object(), object(), object(), object()


def _ask_field(name: str, prop: dict, required: bool, context=None):
    """One field, read from the terminal and checked against its schema: the value, None (left out), a
    marker, or the :class:`AnswerTimeout` that ended the wait."""
    kind = prop.get("type", "string")
    choices = prop.get("enum") or [c.get("const") for c in prop.get("oneOf", []) if isinstance(c, dict)] or None
    hint = "/".join(map(str, choices)) if choices else kind
    default = prop.get("default")
    suffix = f" [{json.dumps(default)}]" if default is not None else ("" if required else " (optional)")
    # the title, the name, the choices and the type are the server's words: shown escaped
    since = None if _no_terminal() else _STDIN.mark()  # asked from here: before the prompt shows
    sys.stderr.write(f"  {_one_line(prop.get('title') or name)} ({_one_line(hint)}){suffix}, or !decline: ")
    sys.stderr.flush()
    try:
        line = _STDIN.read(context, since=since)
    except AnswerTimeout as exc:
        return exc
    if line is None:
        return _WITHDRAWN
    if not line:
        return _EOF
    text = line.strip()
    if text == "!decline":
        return _DECLINE
    if not text:
        if default is not None:
            return default
        if not required:
            return None
        print("    a value is required", file=sys.stderr)
        return _INVALID
    booleans = {"y": True, "yes": True, "true": True, "n": False, "no": False, "false": False}
    readers: dict[str, Any] = {"integer": int, "number": float, "boolean": lambda t: booleans[t.lower()]}
    try:
        value = readers.get(kind, str)(text)
    except (ValueError, KeyError):
        print(f"    not a {_one_line(kind)}: {json.dumps(text)}", file=sys.stderr)
        return _INVALID
    if choices and value not in choices:
        print(f"    must be one of {', '.join(json.dumps(c) for c in choices)}", file=sys.stderr)
        return _INVALID
    return value


def _connect(args, trace):
    from ..client import Client
    from ..core.errors import (
        AuthorizationError,
        ConnectionClosed,
        McpError,
        RequestTimeout,
        ServerUnreachable,
        UnsupportedProtocolVersion,
    )

    if args.target.startswith(("http://", "https://")):
        headers = {}
        for header in args.header:
            name, sep, value = header.partition(":")
            if not sep or not name.strip():
                raise CliError(f"--header must be 'NAME: VALUE', not {header!r}", EXIT_USAGE)
            headers[name.strip()] = value.strip()
        auth = None
        if not any(name.lower() == "authorization" for name in headers):  # an explicit token is the user's choice
            from .login import command_oauth

            auth = command_oauth(open_browser=not args.no_browser, trace=sys.stderr if args.trace else None,
                                 timeout=args.connect_timeout)
        try:
            return Client.http(args.target, headers=headers, auth=auth, transport=args.transport,
                               connect_timeout=args.connect_timeout, **_client_options(args, trace))
        except AuthorizationError as exc:
            raise CliError(f"authorization failed: {exc}", EXIT_AUTH) from None
        except ServerUnreachable as exc:
            raise CliError(str(exc), EXIT_UNREACHABLE) from None
        except McpError as exc:
            if "HTTP 404" in str(exc) and not args.target.rstrip("/").endswith(("/mcp", "/sse")):
                raise CliError(f"{args.target} answered 404 Not Found: MCP servers usually listen at a path such as "
                               f"{args.target.rstrip('/')}/mcp (Streamable HTTP) or /sse", EXIT_UNREACHABLE) from None
            raise CliError(f"cannot initialize with {args.target}: {exc}", EXIT_UNREACHABLE, exc.to_error()) from None
        except (ConnectionClosed, RequestTimeout, OSError) as exc:
            raise CliError(f"cannot reach the server {args.target}: {exc}", EXIT_UNREACHABLE) from None
        except UnsupportedProtocolVersion as exc:
            raise CliError(f"cannot initialize with {args.target}: {exc}", EXIT_UNREACHABLE) from None
    command = shlex.split(args.target)
    if not command:
        raise CliError("TARGET is empty", EXIT_USAGE)
    stderr = _ServerStderr(args.quiet_server)
    try:
        return Client.stdio(command, stderr=stderr, **_client_options(args, trace))
    except FileNotFoundError:
        raise CliError(f"cannot launch {command[0]!r}: command not found", EXIT_UNREACHABLE) from None
    except PermissionError:
        raise CliError(f"cannot launch {command[0]!r}: permission denied", EXIT_UNREACHABLE) from None
    except (ConnectionClosed, RequestTimeout, OSError) as exc:
        raise CliError(f"the server {command[0]!r} did not complete the handshake: {exc}{stderr.last_words()}",
                       EXIT_UNREACHABLE) from None
    except (McpError, UnsupportedProtocolVersion) as exc:
        raise CliError(f"the server refused to initialize: {exc}", EXIT_UNREACHABLE) from None


class _ServerStderr:
    """A launched server's stderr: passed through (unless ``--quiet-server``), its last lines kept
    to explain a server that exits before answering."""

    def __init__(self, quiet: bool):
        import collections

        self.quiet = quiet
        self.lines: collections.deque[str] = collections.deque(maxlen=10)
        self.transport = None

    def __call__(self, line: str) -> None:
        line = safe(line, newline="\\n")  # the server's own output: no escape sequence reaches the terminal
        self.lines.append(line)
        if not self.quiet:
            print(line, file=sys.stderr, flush=True)

    def last_words(self) -> str:
        """`` (its last stderr lines: ...)`` for an error message, or nothing."""
        if not self.lines:
            return ""
        return "; its last stderr lines:\n  " + "\n  ".join(self.lines)


def _run_verb(args, trace) -> int:
    from ..core.errors import AuthorizationError, CapabilityError, ConnectionClosed, McpError, RequestRefused, RequestTimeout

    if args.verb == "check":
        from .wire_check import WireValidator

        args.validator = WireValidator()
        trace = _hooks(trace, args.validator)
    client = _connect(args, trace)
    if isinstance(client.approve, _Approval) and client.server_info is not None and client.server_info.name:
        client.approve.server = client.server_info.name  # who asks, in the words the server chose
    try:
        with client:
            return _VERBS[args.verb](client, args)
    except McpError as exc:
        if isinstance(exc, RequestRefused) and client.era == "modern":
            # 2026-07-28: refused here (no terminal, or the user said no); nothing was sent.  (In the
            # handshake era a -1 comes from the server: its tool failed on our refusal.)
            raise CliError(exc.message, EXIT_ERROR, exc.to_error()) from None
        raise CliError(f"the server answered with an error: {exc}", EXIT_ERROR, exc.to_error()) from None
    except CapabilityError as exc:
        raise CliError(str(exc), EXIT_ERROR) from None
    except AuthorizationError as exc:
        raise CliError(f"authorization failed: {exc}", EXIT_AUTH) from None
    except RequestTimeout as exc:
        raise CliError(f"{exc} (--timeout {args.timeout:g})", EXIT_TIMEOUT) from None
    except ConnectionClosed as exc:
        raise CliError(f"the server went away: {exc}", EXIT_UNREACHABLE) from None


def _logout(args) -> int:
    """``mcp-ref logout URL``: forget the cached tokens for the server and its registration."""
    from .login import cache_path, logout

    if not args.target.startswith(("http://", "https://")):
        raise CliError(f"logout takes the URL of an HTTP server, not {args.target!r}", EXIT_USAGE)
    if logout(args.target):
        print(f"mcp-ref: forgot the authorization for {args.target} (in {cache_path()})", file=sys.stderr)
    else:
        print(f"mcp-ref: no cached authorization for {args.target}", file=sys.stderr)
    return EXIT_OK


def _serve_demo(args) -> int:
    from .demo import build_server

    if args.http is None:
        if args.stateless or args.auth:
            raise CliError(f"{'--stateless' if args.stateless else '--auth'} goes with --http", EXIT_USAGE)
        build_server().run_stdio()
        return EXIT_OK
    host, sep, port = args.http.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise CliError(f"--http takes HOST:PORT with a port from 0 to 65535, not {args.http!r}", EXIT_USAGE)
    mode = "stateless " if args.stateless else ""

    def announce(httpd) -> None:
        print(f"mcp-ref: serving the demo at {httpd.url}/mcp ({mode}Streamable HTTP) and {httpd.url}/sse (HTTP+SSE)",
              file=sys.stderr, flush=True)

    try:
        if args.auth:
            _serve_protected_demo(host.strip("[]") or "127.0.0.1", int(port), args.stateless)
        else:
            build_server().run_http(host.strip("[]") or "127.0.0.1", int(port), stateless=args.stateless, on_ready=announce)
    except OSError as exc:  # the port is taken, the address is not ours, ...
        raise CliError(f"cannot listen on {args.http}: {exc.strerror or exc}", EXIT_UNREACHABLE) from None
    return EXIT_OK


def _serve_protected_demo(host: str, port: int, stateless: bool) -> None:
    """``serve-demo --http HOST:PORT --auth``: the demo as a protected resource, and the demo
    authorization server on the same port (for teaching and tests, never production)."""
    from .demo import build_protected_server
    from .demo_auth_server import DEMO_CLIENT_ID, protected_app
    from .wsgi_server import WsgiServer

    httpd = WsgiServer((host, port), protected_app(build_protected_server(), stateless=stateless))
    print(f"mcp-ref: serving the demo at {httpd.url}/mcp as an OAuth protected resource; its authorization "
          f"server is {httpd.url} (pre-registered public client: {DEMO_CLIENT_ID})", file=sys.stderr, flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()


def _print_json(value: Any) -> None:
    # Non-ASCII text stays readable; DEL, C1 controls, lone surrogates and bidi overrides (which
    # json.dumps leaves raw) become \\uXXXX escapes: the same JSON, safe on a terminal.
    print(safe_json(json.dumps(value, indent=2, ensure_ascii=False)))


def _number(value: Any) -> str:
    """A number from the server for the terminal (``12``, ``0.5``), or ``?`` for anything else
    (a string, a bool, an integer too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "?"
    try:
        return f"{float(value):g}"
    except OverflowError:
        return "?"


def _one_line(value: Any) -> str:
    """A server's string for one line of output: :func:`mcp_ref.workbench.terminal.safe`, line breaks shown as ``\\n``."""
    return safe(value, newline="\\n")


def _info(client, args) -> int:
    if args.json:  # the server's own answer: to server/discover (2026-07-28) or to initialize
        _print_json((client.discover_result or client.initialize_result).raw)
        return EXIT_OK
    # Every string below is the server's: each is shown through mcp_ref.workbench.terminal.safe.
    info = client.server_info
    if info is not None:
        print(f"server:       {_one_line(info.name)} {_one_line(info.version)}"
              + (f" ({_one_line(info.title)})" if info.title else ""))
    print(f"protocol:     {_one_line(client.protocol_version)}")
    if client.era == "modern":
        print(f"era:          modern (no session; server/discover lists "
              f"{_one_line(', '.join(map(str, client.discover_result.supported_versions)))})")
    else:
        print("era:          handshake (initialize)")
    print(f"capabilities: {_one_line(', '.join(sorted(client.server_capabilities))) or '(none)'}")
    for name, value in sorted(client.server_capabilities.items()):
        if value:
            print(f"  {_one_line(name)}: {json.dumps(value)}")
    if client.instructions:
        print(f"instructions: {safe(client.instructions)}")
    return EXIT_OK


def _listing(method_all: str, key: str, describe):
    def verb(client, args) -> int:
        items = getattr(client, method_all)()
        if args.json:
            _print_json({key: [item.to_wire() for item in items]})
            return EXIT_OK
        for item in items:
            print(_one_line(describe(item)))  # names, descriptions, URIs: the server's words
        if not items:
            print(f"(no {key})")
        return EXIT_OK

    return verb


def _describe_tool(tool) -> str:
    required = set(tool.input_schema.get("required", ()))
    params = ", ".join(name + ("" if name in required else "?") for name in tool.input_schema.get("properties", {}))
    line = f"{tool.name}({params})"
    return f"{line}  {tool.description.splitlines()[0]}" if tool.description else line


def _describe_prompt(prompt) -> str:
    args = ", ".join(a.name + ("" if a.required else "?") for a in prompt.arguments or [])
    line = f"{prompt.name}({args})"
    return f"{line}  {prompt.description}" if prompt.description else line


def _print_content(blocks: list) -> None:
    for block in blocks:
        print(safe(describe_content(block)))  # the server's text: line breaks kept, escape sequences shown


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


def _call(client, args) -> int:
    arguments: dict[str, Any] = {}
    if args.args:
        try:
            arguments = json.loads(args.args)
        except ValueError as exc:
            raise CliError(f"--args is not valid JSON: {exc}", EXIT_USAGE) from None
        if not isinstance(arguments, dict):
            raise CliError("--args must be a JSON object", EXIT_USAGE)
    if args.pairs:
        properties: dict | None = None
        if any(_ambiguous(pair.partition("=")[2]) for pair in args.pairs):
            # "123" could be a number or a string: the tool's inputSchema says which (one tools/list).
            properties = next((t.input_schema.get("properties", {}) for t in client.list_tools() if t.name == args.tool), {})
        arguments.update(parse_pairs(args.pairs, schema=properties))
    progress = None if args.quiet else _Progress(sys.stderr)
    try:
        result = client.call_tool(args.tool, arguments, on_progress=progress)
    finally:
        if progress is not None:
            progress.done()
    if args.json:
        _print_json(result.raw)
    else:
        _print_content(result.content)
        if result.structured_content is not None and not result.content:
            _print_json(result.structured_content)
    if result.is_error:
        if not args.json:
            print(f"mcp-ref: tool {args.tool} returned an error", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def _read(client, args) -> int:
    result = client.read_resource(args.uri)
    if args.json:
        _print_json(result.raw)
        return EXIT_OK
    for contents in result.contents:
        if hasattr(contents, "text"):
            text = safe(contents.text)
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
        else:
            print(f"[blob {_one_line(contents.mime_type or 'application/octet-stream')}, {len(contents.blob) * 3 // 4} "
                  f"bytes: use --json for the data]")
    return EXIT_OK


def _prompt(client, args) -> int:
    result = client.get_prompt(args.name, parse_pairs(args.pairs, coerce=False))
    if args.json:
        _print_json(result.raw)
        return EXIT_OK
    for message in result.messages:
        print(f"[{_one_line(message.role)}] {safe(describe_content(message.content))}")
    return EXIT_OK


def _check(client, args) -> int:
    from .check import Checker, report, table

    findings = Checker(client, args.validator, call_tools=args.call_tools).run()
    outcome = report(findings)
    if args.json:
        _print_json(outcome)
    else:
        print(safe(table(findings)))  # findings quote the server
    return EXIT_OK if outcome["ok"] else EXIT_ERROR


_VERBS = {
    "check": _check,
    "info": _info,
    "tools": _listing("list_tools", "tools", _describe_tool),
    "resources": _listing("list_resources", "resources", lambda r: f"{r.uri}  {r.name}" + (f" ({r.mime_type})" if r.mime_type else "")),
    "templates": _listing("list_resource_templates", "resourceTemplates", lambda t: f"{t.uri_template}  {t.name}"),
    "prompts": _listing("list_prompts", "prompts", _describe_prompt),
    "call": _call,
    "read": _read,
    "prompt": _prompt,
}


if __name__ == "__main__":
    sys.exit(main())
