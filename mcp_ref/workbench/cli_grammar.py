"""How the ``mcp-ref`` command line is read: the table of verbs, their options, TARGET's words.

Every verb is one :class:`Verb` in :data:`VERBS`: its name, what ``mcp-ref --help`` says of it,
its usage line, description and examples (``mcp-ref VERB --help``), how the words after it are
read (``shape``), its own options, and the function that runs it (``handler``, imported only
when the verb runs).  A new verb is one more entry.

TARGET, the server, is a URL, or a command line: quoted as one word (``"python server.py"``),
unquoted (``python server.py``), or after ``--`` (``-- python server.py --db x``, where it may
hold options of its own).  Unquoted, the words are read by the verb's ``shape``:

* ``target`` (``info``, ``tools``, ``check`` ...): every word is the command's.
* ``call``: trailing ``KEY=VALUE`` words are the arguments; the word before them the TOOL
  (unless it names a file: ``mcp-ref call python server.py`` lists the tools); the rest the command.
* ``prompt``: as ``call``, the NAME required.  ``read``: the last word is the URI.

A word holding a space (a quoted command line) or a URL is the whole TARGET, as before.  A usage
error is one line (:class:`UsageError`: what is wrong, and ``see `mcp-ref VERB --help```), exit 2.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import math
import os
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..lifecycle import LOG_LEVELS
from .check import CALL_TIMEOUT
from .cli_answers import ANSWER_TIMEOUT


class UsageError(Exception):
    """The command line is wrong: the message says what, in one line; ``verb`` is the verb it was
    read for, when known."""

    verb: str | None = None


@dataclass(frozen=True)
class Verb:
    """One verb of the command: what ``mcp-ref --help`` and ``mcp-ref VERB --help`` say, how its
    words are read, its options, and ``handler`` (``"module:function"``, called with the parsed
    arguments and the :class:`~mcp_ref.workbench.cli.Hooks`; returns the exit code)."""

    name: str
    summary: str
    usage: str
    description: str
    examples: tuple[str, ...]
    handler: str
    #: How the words after the verb are read: "target", "call", "prompt", "read", "url",
    #: "server" (``run``'s SERVER), or "none".
    shape: str = "target"
    options: Callable[[argparse.ArgumentParser], None] | None = None


#: The shapes whose words begin with TARGET, the server (a URL or a command line).
TARGET_SHAPES = ("target", "call", "prompt", "read")

# -- the verbs' own options -----------------------------------------------------------------------

ARGS_HELP = (
    "the arguments as one JSON object: inline, - (read from stdin) or @FILE "
    "(KEY=VALUE words override it)"
)


def _arguments_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--args", metavar="JSON|-|@FILE", help=ARGS_HELP)


def _check_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--call-tools",
        action="store_true",
        help="also call every tool once with arguments built from its inputSchema "
        "(tools may have side effects)",
    )
    parser.add_argument(
        "--call-timeout",
        type=_seconds,
        default=CALL_TIMEOUT,
        metavar="SECONDS",
        help=f"with --call-tools: how long each tool call may take before it is cancelled and "
        f"warned about (default {CALL_TIMEOUT:g})",
    )


def _install_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--name", help="the entry's name (default: the server's own name, asked by launching it)"
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an environment variable the client sets for the server (repeatable)",
    )
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="the configuration file (default: Claude Desktop's, where this system keeps it)",
    )
    parser.add_argument(
        "--print",
        action="store_true",
        dest="print_only",
        help="print the entry as JSON, write nothing",
    )
    parser.add_argument(
        "--force", action="store_true", help="replace an entry of the same name that differs"
    )


def http_options(parser: argparse.ArgumentParser) -> None:
    """``--http HOST:PORT`` and ``--stateless``: serving over HTTP (``serve-demo``, ``run``)."""
    parser.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve over HTTP instead of stdio: Streamable HTTP at /mcp and HTTP+SSE at /sse "
        "(port 0: a free one; the address is printed on stderr)",
    )
    parser.add_argument(
        "--stateless",
        action="store_true",
        help="with --http: no sessions (any worker answers any request)",
    )


def _serve_demo_options(parser: argparse.ArgumentParser) -> None:
    http_options(parser)
    parser.add_argument(
        "--auth",
        action="store_true",
        help="with --http: an OAuth protected resource, with the demo authorization server on "
        "the same port",
    )


def _run_options(parser: argparse.ArgumentParser) -> None:
    http_options(parser)
    parser.add_argument(
        "--path",
        default="/mcp",
        help="with --http: where Streamable HTTP is served (default /mcp)",
    )
    parser.add_argument(
        "--sse-path",
        default="/sse",
        metavar="PATH",
        help="with --http: where the 2024-11-05 HTTP+SSE transport is served (default /sse; "
        "its messages at /messages)",
    )
    parser.add_argument(
        "--no-sse",
        action="store_true",
        help="with --http: serve Streamable HTTP only, not the 2024-11-05 HTTP+SSE transport",
    )
    parser.add_argument(
        "--allowed-host",
        action="append",
        default=None,
        metavar="HOST",
        help="with --http: a Host header to accept besides localhost's (repeatable; '*' any): "
        "for a server reached by another name than 127.0.0.1/localhost",
    )


def _inspect_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--port",
        type=_port,
        default=0,
        metavar="N",
        help="serve the page on 127.0.0.1:N (default 0: a free port; the address is printed)",
    )


def _proxy_options(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve Streamable HTTP at /mcp (and HTTP+SSE at /sse); port 0: a free one, the "
        "address printed on stderr",
    )
    where.add_argument("--stdio", action="store_true", help="serve one client on stdin/stdout")
    parser.add_argument(
        "--stateless",
        action="store_true",
        help="with --http: no sessions (any worker answers any request)",
    )
    parser.add_argument(
        "--max-back-connections",
        type=int,
        default=16,
        metavar="N",
        help="connections to TARGET at most (default 16); past it, clients are told to retry",
    )


# -- the table --------------------------------------------------------------------------------------

CLIENT = "mcp_ref.workbench.cli_verbs:run_verb"

VERBS: tuple[Verb, ...] = (
    Verb(
        "info",
        "server info, negotiated version, capabilities, instructions",
        "mcp-ref info TARGET",
        "Connect to the server and print what it says of itself: its name and version, the "
        "protocol version agreed on and the era, its capabilities and instructions.",
        (
            'mcp-ref info "python server.py"',
            "mcp-ref info python server.py",
            "mcp-ref info http://127.0.0.1:8000/mcp",
            "mcp-ref --json info python server.py",
        ),
        CLIENT,
    ),
    Verb(
        "tools",
        "list the tools, each with its parameters' types",
        "mcp-ref tools TARGET",
        "List the server's tools: name(parameter: type, optional?: type, ...) and the first "
        "line of each description.  An object parameter shows its fields: "
        "point: {x: number, y: number, label?: string}.",
        (
            "mcp-ref tools python server.py",
            "mcp-ref tools -- python server.py --db data.sqlite",
            "mcp-ref --json tools http://127.0.0.1:8000/mcp",
        ),
        CLIENT,
    ),
    Verb(
        "resources",
        "list the resources",
        "mcp-ref resources TARGET",
        "List the server's resources: URI, name and MIME type.",
        ("mcp-ref resources python server.py",),
        CLIENT,
    ),
    Verb(
        "templates",
        "list the resource templates",
        "mcp-ref templates TARGET",
        "List the server's resource templates: URI template and name.",
        ("mcp-ref templates python server.py",),
        CLIENT,
    ),
    Verb(
        "prompts",
        "list the prompts",
        "mcp-ref prompts TARGET",
        "List the server's prompts: name(argument, optional?) and description.",
        ("mcp-ref prompts python server.py",),
        CLIENT,
    ),
    Verb(
        "call",
        "call a tool (without TOOL: list the tools)",
        "mcp-ref call TARGET [TOOL [KEY=VALUE ...]] [--args JSON|-|@FILE]",
        "Call TOOL with the arguments given as KEY=VALUE words (each value read as the tool's "
        'inputSchema says: a=1 is a number, text=123 the string "123" for a string parameter) '
        "and/or --args.  Prints the tool's content; exit 5 when it returns isError.  Without "
        "TOOL, lists the tools.  An unquoted server command is read up to the word before the "
        "KEY=VALUE words (that word is TOOL); or put the command last, after --.",
        (
            'mcp-ref call "python server.py" add a=1 b=2',
            "mcp-ref call python server.py add a=1 b=2",
            "mcp-ref call add a=1 b=2 -- python server.py --db data.sqlite",
            'mcp-ref call python server.py echo --args \'{"text": "hi"}\'',
            'echo \'{"a": 1, "b": 2}\' | mcp-ref call python server.py add --args -',
        ),
        CLIENT,
        shape="call",
        options=_arguments_option,
    ),
    Verb(
        "read",
        "read a resource",
        "mcp-ref read TARGET URI",
        "Read the resource at URI and print its text (a binary resource: its size; --json "
        "gives the data).  The last word is the URI, the words before it TARGET.",
        (
            "mcp-ref read python server.py docs://readme",
            "mcp-ref read docs://readme -- python server.py",
        ),
        CLIENT,
        shape="read",
    ),
    Verb(
        "prompt",
        "get a prompt",
        "mcp-ref prompt TARGET NAME [KEY=VALUE ...] [--args JSON|-|@FILE]",
        "Get the prompt NAME with its arguments (strings) and print its messages.  The word "
        "before the KEY=VALUE words is NAME, the words before it TARGET.",
        (
            "mcp-ref prompt python server.py greet name=Ada",
            "mcp-ref prompt greet name=Ada -- python server.py",
        ),
        CLIENT,
        shape="prompt",
        options=_arguments_option,
    ),
    Verb(
        "check",
        "check a server against the official schema and the spec's rules (exit 5 if any fails)",
        "mcp-ref check TARGET [--call-tools [--call-timeout SECONDS]]",
        "Exercise the server without side effects (every listing, reads, prompts without "
        "arguments, an unknown method, invalid params, an invalid cursor), validating each "
        "message against the official JSON Schema of the negotiated revision.  Prints PASS / "
        "WARN / FAIL with the spec section of each; exit 5 when anything failed.",
        (
            "mcp-ref check python server.py",
            "mcp-ref check python server.py --call-tools",
            "mcp-ref --json check http://127.0.0.1:8000/mcp",
        ),
        CLIENT,
        options=_check_options,
    ),
    Verb(
        "install",
        "add the server to Claude Desktop's configuration (claude_desktop_config.json)",
        "mcp-ref install TARGET [--name NAME] [--env KEY=VALUE ...] [--config PATH] [--print] [--force]",
        "Add a stdio server (a command line) to a desktop client's MCP configuration file, "
        "Claude Desktop's claude_desktop_config.json by default; the old file is kept as "
        "FILE.bak.",
        (
            "mcp-ref install python server.py --print",
            "mcp-ref install python server.py --name notes",
            "mcp-ref install -- python server.py --db data.sqlite",
        ),
        "mcp_ref.workbench.install:install",
        options=_install_options,
    ),
    Verb(
        "run",
        "serve your own server (server.py[:OBJ] or pkg.module[:OBJ]) on stdio or HTTP",
        "mcp-ref run SERVER [--http HOST:PORT [--stateless] [--path PATH] [--sse-path PATH | "
        "--no-sse] [--allowed-host HOST]] [-- ARGS ...]",
        "Load SERVER, a file (server.py, dir/server.py) or a module (pkg.server), and serve the "
        "mcp_ref Server in it: on stdio, or with --http over HTTP.  :OBJ names the server, or a "
        "function returning one; without it, the module's server, mcp or app, else its only "
        "Server.  The file is loaded as `python server.py` runs it (its folder first on "
        "sys.path, sys.argv its name and the ARGS after --), but not as __main__: its own "
        '`if __name__ == "__main__": server.run()` does not fire.  --log-level sets the '
        "server's own log on stderr (default: MCP_REF_LOG_LEVEL's, else warning); --trace shows "
        "every message.",
        (
            "mcp-ref run server.py",
            "mcp-ref run server.py:build_server",
            "mcp-ref run server.py --http 127.0.0.1:8000",
            "mcp-ref run myproject.server:mcp --http 127.0.0.1:0 --stateless",
            "mcp-ref run server.py -- --db data.sqlite",
        ),
        "mcp_ref.workbench.cli_serve:run_user_server",
        shape="server",
        options=_run_options,
    ),
    Verb(
        "proxy",
        "serve TARGET to any client on stdio or over HTTP, in every protocol era",
        "mcp-ref proxy TARGET (--http HOST:PORT [--stateless] | --stdio) [--max-back-connections N]",
        "Connect to TARGET (a URL, or a server command line) and serve it again: on stdio, or "
        "with --http over Streamable HTTP and HTTP+SSE, in both eras whatever TARGET speaks "
        "(a 2025 client may use a 2026-only server, and the reverse).  --timeout bounds each "
        "forwarded request, --connect-timeout each connection to TARGET; --trace shows the "
        "messages to and from TARGET.",
        (
            'mcp-ref proxy "python server.py" --http 127.0.0.1:8000',
            "mcp-ref proxy http://127.0.0.1:8000/mcp --stdio",
            "mcp-ref proxy --http 127.0.0.1:0 --stateless -- python server.py --db data.sqlite",
        ),
        "mcp_ref.workbench.cli_proxy:run",
        options=_proxy_options,
    ),
    Verb(
        "inspect",
        "a web page showing the protocol with TARGET: every message, checked, as a sequence diagram",
        "mcp-ref inspect TARGET [--port N] [--no-browser]",
        "Connect to TARGET and serve the inspector on 127.0.0.1: a page that drives the server "
        "(tools, resources, prompts; it answers the server's sampling, elicitation and roots "
        "requests) and shows every message as it flies, checked against the official JSON Schema "
        "of the negotiated revision and linked to its spec section, with the HTTP exchanges or "
        "the server's stderr under it.  The address, with its secret token, is printed on stderr "
        "and opened in the browser (--no-browser: printed only).  --era, --transport, --header, "
        "--timeout and OAuth login are as for the other verbs; --answer-timeout bounds how long a "
        "server's request waits for an answer on the page.  Ctrl-C stops it.",
        (
            'mcp-ref inspect "mcp-ref serve-demo"',
            "mcp-ref inspect python server.py --no-browser",
            "mcp-ref inspect http://127.0.0.1:8000/mcp --era handshake",
            "mcp-ref inspect --port 6274 -- python server.py --db data.sqlite",
        ),
        "mcp_ref.workbench.cli_inspect:inspect",
        options=_inspect_options,
    ),
    Verb(
        "dev",
        "serve your own server (server.py[:OBJ]) and inspect it in one step",
        "mcp-ref dev SERVER[:OBJ] [--port N] [--no-browser] [-- ARGS ...]",
        "Inspect `python -m mcp_ref run SERVER -- ARGS`: SERVER is loaded as `mcp-ref run` loads "
        "it (a file or a module, :OBJ naming the server), launched over stdio, and shown on the "
        "inspector's page (see `mcp-ref inspect --help`).  Connect again on the page after "
        "editing the file.",
        (
            "mcp-ref dev server.py",
            "mcp-ref dev server.py:build_server --no-browser",
            "mcp-ref dev server.py -- --db data.sqlite",
        ),
        "mcp_ref.workbench.cli_inspect:dev",
        shape="server",
        options=_inspect_options,
    ),
    Verb(
        "serve-demo",
        "run the demo server on stdio (or --http)",
        "mcp-ref serve-demo [--http HOST:PORT [--stateless] [--auth]]",
        "Run the bundled demo server (every MCP feature) on stdio for any client, or over HTTP.  "
        "--log-level sets the server's own log on stderr (default: MCP_REF_LOG_LEVEL's, else "
        "warning); --trace shows every message.",
        (
            "mcp-ref serve-demo",
            "mcp-ref serve-demo --http 127.0.0.1:8000",
            "mcp-ref serve-demo --http 127.0.0.1:8000 --auth",
        ),
        "mcp_ref.workbench.cli_serve:serve_demo",
        shape="none",
        options=_serve_demo_options,
    ),
    Verb(
        "demo",
        "walk through every MCP feature against the bundled demo server",
        "mcp-ref demo",
        "Launch the demo server and walk through every feature of the protocol, explaining "
        "each step.",
        ("mcp-ref demo", "mcp-ref demo --diagram conversation.md"),
        "mcp_ref.workbench.cli:demo_verb",
        shape="none",
    ),
    Verb(
        "logout",
        "forget the cached authorization (tokens, registration) for a server URL",
        "mcp-ref logout URL",
        "Forget the tokens and the client registration cached for the server at URL.",
        ("mcp-ref logout http://127.0.0.1:8000/mcp",),
        "mcp_ref.workbench.cli:logout_verb",
        shape="url",
    ),
)

#: The verbs by name.
VERB_NAMES = {verb.name: verb for verb in VERBS}


# -- the options of every verb ----------------------------------------------------------------------


#: The longest time an option takes (a year, in seconds): far less than the longest wait a lock
#: can hold (``threading.TIMEOUT_MAX``, some 292 years), even added to another.
MAX_SECONDS = 365 * 24 * 3600


def _seconds(text: str) -> float:
    """An argparse type: a positive number of seconds, at most :data:`MAX_SECONDS`."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < math.inf:  # NaN is not between them either
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    if value > MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_SECONDS} seconds (a year), not {text}"
        )
    return value


def _port(text: str) -> int:
    """An argparse type: a TCP port, 0 to 65535 (0: a free one)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port from 0 to 65535, not {text}")
    return port


def global_options(parser: argparse.ArgumentParser, defaults: bool) -> None:
    """The options every verb takes, before or after it (after it, they override)."""
    group = parser.add_argument_group("options of every verb (before or after it)")

    def option(flag: str, default: object = None, **options: Any) -> None:
        # ("append" copies a list default before adding)
        group.add_argument(flag, default=default if defaults else argparse.SUPPRESS, **options)

    def switch(flag: str, help: str) -> None:  # argparse's word
        option(flag, False, action="store_true", help=help)

    switch("--json", 'print the raw result as JSON (errors too, as {"error": ...})')
    switch(
        "--trace",
        "print every JSON-RPC message on stderr (--> sent, <-- received; with "
        "serve-demo and run, as the server sends and receives them; secrets masked)",
    )
    option(
        "--log-level",
        choices=LOG_LEVELS,
        metavar="LEVEL",
        help="client verbs: show the server's log messages at LEVEL and above on stderr; "
        "serve-demo and run: the server's own log level on stderr (default: MCP_REF_LOG_LEVEL's, "
        "else warning). LEVEL: " + ", ".join(LOG_LEVELS),
    )
    option(
        "--timeout",
        60.0,
        type=_seconds,
        metavar="SECONDS",
        help="the longest each request may take (default 60); past it, exit 6",
    )
    option(
        "--connect-timeout",
        30.0,
        type=_seconds,
        metavar="SECONDS",
        help="the longest launching or reaching the server and the handshake may take (default 30)",
    )
    switch("--quiet", "no progress display")
    switch(
        "--quiet-server",
        "hide a launched server's stderr (shown again, its last lines, if it fails)",
    )
    option(
        "--diagram",
        metavar="FILE.md",
        help="write the conversation as a Mermaid sequence diagram to FILE.md",
    )
    option(
        "--root",
        [],
        action="append",
        metavar="PATH",
        help="declare the roots capability with this directory as a root (repeatable)",
    )
    option(
        "--sampling-command",
        metavar="CMD",
        help="answer the server's sampling requests by running CMD: the conversation on "
        "its stdin, its stdout the model's reply",
    )
    switch(
        "--yes",
        "answer the server's sampling and elicitation requests without asking "
        "(otherwise each is shown and asked about on a terminal, and refused without one)",
    )
    option(
        "--answer-timeout",
        ANSWER_TIMEOUT,
        type=_seconds,
        metavar="SECONDS",
        help="the longest a question waits for your answer, on the terminal or on the "
        "inspector's page (default "
        f"{ANSWER_TIMEOUT:g}); past it the server's request is refused or cancelled",
    )
    option(
        "--header",
        [],
        action="append",
        metavar="'NAME: VALUE'",
        help="an HTTP header for URL targets (repeatable)",
    )
    switch(
        "--no-browser",
        "open no browser: for a protected server, print the authorization URL; for inspect "
        "and dev, print the page's address",
    )
    option(
        "--transport",
        "auto",
        choices=("auto", "streamable", "sse"),
        help="for URL targets: Streamable HTTP with fallback (auto), or one of them",
    )
    option(
        "--era",
        "auto",
        choices=("auto", "modern", "handshake"),
        help="the protocol's era: 2026-07-28 when the server speaks it, else the initialize "
        "handshake (auto); or only one of them",
    )


class _Parser(argparse.ArgumentParser):
    """argparse, its errors raised as :class:`UsageError` (one line, not the whole usage), and no
    abbreviated options (a server's ``--conn`` is not our ``--connect-timeout``)."""

    def __init__(self, *args: Any, **options: Any):
        options.setdefault("allow_abbrev", False)
        super().__init__(*args, **options)

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(message)


TARGET_HELP = (
    "TARGET, the server: a URL (http://127.0.0.1:8000/mcp), or a command line: quoted "
    '("python server.py"), unquoted (python server.py), or last after -- (-- python server.py '
    "--db x, where it may hold options of its own)."
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs): a sub-parser per verb of :data:`VERBS`,
    its words in ``words`` (read by :func:`parse`)."""
    from ..lifecycle import __version__

    parser = _Parser(
        prog="mcp-ref",
        usage="mcp-ref [OPTIONS] VERB ...",
        description="A synchronous MCP client, a server runner, and a demo of the whole protocol.",
        epilog=TARGET_HELP + "\n\nSee `mcp-ref VERB --help` for each verb, with examples.",
        formatter_class=_Wrapped,
    )
    parser.add_argument("--version", action="version", version=f"mcp-ref {__version__}")
    global_options(parser, defaults=True)
    after_verb = _Parser(add_help=False)
    global_options(after_verb, defaults=False)
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    for verb in VERBS:
        notes = TARGET_HELP + "\n\n" if verb.shape in TARGET_SHAPES else ""
        sub = verbs.add_parser(
            verb.name,
            help=verb.summary,
            parents=[after_verb],
            usage=verb.usage,
            description=verb.description,
            epilog=notes + "examples:\n" + "\n".join(f"  {line}" for line in verb.examples),
            formatter_class=_Wrapped,
        )
        if verb.shape == "none":
            sub.set_defaults(words=[])
        else:
            sub.add_argument("words", nargs="*", metavar="WORD", help=argparse.SUPPRESS)
        if verb.options is not None:
            verb.options(sub)
    return parser


class _Wrapped(argparse.RawDescriptionHelpFormatter):
    """The description and notes wrapped to the terminal, the examples' lines kept as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        return "\n\n".join(
            paragraph
            if paragraph.startswith("examples:")
            else textwrap.fill(
                " ".join(paragraph.split()), width, initial_indent=indent, subsequent_indent=indent
            )
            for paragraph in text.split("\n\n")
        )


def verb_named_in(argv: Sequence[str]) -> str | None:
    """The first word of ``argv`` that is a verb (for "see `mcp-ref VERB --help`"), or None."""
    return next((word for word in argv if word in VERB_NAMES), None)


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """Read the command line: the options, the verb, and its words (TARGET, TOOL, pairs, ...)
    as attributes.  UsageError, one line, for anything wrong."""
    argv = list(argv)
    tail: list[str] | None = None
    verb_at = next((i for i, word in enumerate(argv) if word in VERB_NAMES), None)
    if "--" in argv and verb_at is not None and argv.index("--") > verb_at:
        cut = argv.index("--")
        argv, tail = argv[:cut], argv[cut + 1 :]
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
    except UsageError as exc:
        misplaced = _value_read_as_verb(parser, argv, verb_at, str(exc))
        raise UsageError(misplaced or _reworded(str(exc))) from None
    if args.verb is None:  # options only
        unknown = [word for word in extra if _is_option(word)]
        raise UsageError(
            f"unknown option {unknown[0]}" if unknown else "name a verb: " + ", ".join(VERB_NAMES)
        )
    # What argparse did not take, in order after the words it did: more words, and options that
    # are not ours (an unquoted server command's own: see _unknown_options).
    after_verb = argv[argv.index(args.verb) + 1 :] if args.verb in argv else argv
    words = _in_order(after_verb, [*args.words, *extra])
    verb = VERB_NAMES[args.verb]
    before_verb = collections.Counter([*args.words, *extra]) - collections.Counter(words)
    try:
        if before_verb:  # left by argparse before the verb: never dropped silently
            raise UsageError(_before_verb(parser, verb.name, next(iter(before_verb))))
        _unknown_options(verb, words, unquoted_command=tail is None and _unquoted(verb, words))
        _read_words(args, verb, words, tail)
    except UsageError as exc:
        exc.verb = verb.name
        raise
    return args


def _in_order(after_verb: Sequence[str], words: Sequence[str]) -> list[str]:
    """``words`` (argparse's and the rest it left) in the order the command line gives them
    (argparse keeps the words it took apart from those it left)."""
    left = collections.Counter(words)
    ordered = []
    for word in after_verb:
        if left[word] > 0:
            left[word] -= 1
            ordered.append(word)
    return ordered


def _is_option(word: str) -> bool:
    return word.startswith("-") and word != "-"


def _unquoted(verb: Verb, words: Sequence[str]) -> bool:
    """True when ``words`` begin an unquoted server command (a first word that is not an option,
    a URL or a quoted command line)."""
    return (
        verb.shape in TARGET_SHAPES
        and bool(words)
        and not _is_option(words[0])
        and not _whole_target(words[0])
    )


def _whole_target(word: str) -> bool:
    """True for a word that is TARGET by itself: a URL, or a command line quoted as one word."""
    return word.startswith(("http://", "https://")) or any(c.isspace() for c in word.strip())


def _unknown_options(verb: Verb, words: Sequence[str], unquoted_command: bool) -> None:
    """UsageError for an option that is not ours, unless it is part of an unquoted server command
    (``mcp-ref tools python -m my_server``: after the command's first word, options we do not
    know are the command's)."""
    unknown = [word for word in words if _is_option(word)]
    if unknown and not unquoted_command:
        raise UsageError(_unknown_option(verb.name, unknown[0]))


def _value_read_as_verb(
    parser: argparse.ArgumentParser, argv: Sequence[str], verb_at: int | None, message: str
) -> str | None:
    """The message for ``mcp-ref --name foo install``: an option that is not one of every verb's,
    before the verb, whose value argparse read as the verb (``foo``: "invalid choice"); None
    when that is not what happened (a word that is no verb, not after such an option)."""
    if verb_at is None or not message.startswith("argument VERB: invalid choice:"):
        return None
    given = message.split("'")[1] if "'" in message else ""
    before = list(argv[:verb_at])
    if given not in before or before.index(given) == 0:
        return None
    option = before[before.index(given) - 1]
    if not _is_option(option) or "=" in option:
        return None
    _, left = parser.parse_known_args([option])  # one of every verb's takes its value itself
    if option not in left:
        return None
    return _before_verb(parser, argv[verb_at], option, value=given)


def _before_verb(
    parser: argparse.ArgumentParser, verb: str, word: str, value: str | None = None
) -> str:
    """The message for ``word``, an option argparse left before the verb (``value``, the word
    after it, when argparse read that as the verb): the verb's own (which goes after it), or one
    no part of mcp-ref knows."""
    option = word.partition("=")[0]
    try:
        _, left = parser.parse_known_args([verb, option])
        the_verbs = option not in left
        wants_value = False
    except UsageError:  # taken, and wanting a value: the verb's
        the_verbs = True
        wants_value = True
    if the_verbs:
        moved = f"{option} {shlex.quote(value)}" if wants_value and value is not None else word
        return f"{option} is an option of {verb}: put it after the verb: mcp-ref {verb} {moved} ..."
    known = sorted(set(re.findall(r"--[a-z][a-z0-9-]*", parser.format_help())))
    close = difflib.get_close_matches(option, known, n=1)
    return f"unknown option {option}" + (f" (did you mean {close[0]}?)" if close else "")


def _reworded(message: str) -> str:
    """argparse's messages in the command's words."""
    if message.startswith("argument VERB: invalid choice:"):
        given = message.split("'")[1] if "'" in message else "?"
        close = difflib.get_close_matches(given, list(VERB_NAMES), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return f"unknown verb {given!r}{hint}; the verbs: {', '.join(VERB_NAMES)}"
    if message == "the following arguments are required: VERB":
        return "name a verb: " + ", ".join(VERB_NAMES)
    return message


def _unknown_option(verb: str, option: str) -> str:
    """The message for an option the verb does not know."""
    shape = VERB_NAMES[verb].shape
    if shape in TARGET_SHAPES:
        return (
            f"unknown option {option}; if it is the server's, put the server's command "
            f"last, after --: mcp-ref {verb} ... -- python server.py {option}"
        )
    if shape == "server":
        return (
            f"unknown option {option}; the server's own arguments go last, after --: "
            f"mcp-ref {verb} server.py -- {option}"
        )
    return f"unknown option {option}"


def _is_pair(word: str) -> bool:
    """True for ``KEY=VALUE`` (KEY not empty, without a space or a slash: not a path or option)."""
    key, sep, _ = word.partition("=")
    return bool(sep and key) and not key.startswith("-") and not any(c in key for c in " /\\")


def _target_of(words: Sequence[str]) -> str:
    """TARGET as one string: one word as given (a command line read by shlex later, or a URL),
    several (an unquoted command) quoted back into one command line."""
    return words[0] if len(words) == 1 else shlex.join(words)


def _read_words(
    args: argparse.Namespace, verb: Verb, words: list[str], tail: list[str] | None
) -> None:
    """Set TARGET and the verb's other words on ``args`` from ``words`` (and the ``--`` ``tail``)."""
    shape = verb.shape
    if shape == "none":
        if words or tail:
            raise UsageError(f"{verb.name} takes no words, not {' '.join(words or tail or [])!r}")
        return
    if shape == "url":
        if tail or len(words) != 1:
            raise UsageError(f"{verb.name} takes one URL")
        args.target = words[0]
        return
    if shape == "server":
        if not words:
            raise UsageError(
                "name the server to run: a file (server.py[:OBJ]) or a module (pkg.server[:OBJ])"
            )
        if len(words) > 1:
            raise UsageError(
                f"{verb.name} takes one SERVER, not {' '.join(words)!r}; the server's own "
                f"arguments go after --: mcp-ref {verb.name} {words[0]} -- {' '.join(words[1:])}"
            )
        args.server, args.server_args = words[0], tail or []
        return
    if tail is not None:  # the command is after --: every word before it is the verb's
        if not tail:
            raise UsageError("-- is followed by nothing: put the server's command after it")
        target, rest = _target_of(tail), words
    else:
        if not words:
            raise UsageError(f"{verb.name} needs TARGET, the server: a command line or a URL")
        target, rest = _split_target(verb, words)
    if not target:
        raise UsageError("TARGET is empty")
    args.target = target
    if shape == "target":
        if rest:
            raise UsageError(f"{verb.name} takes only TARGET, not {' '.join(rest)!r} as well")
        return
    if shape == "read":
        if len(rest) != 1:
            raise UsageError("read takes TARGET and one URI" + ("" if rest else ": name the URI"))
        args.uri = rest[0]
        return
    name, pairs = (rest[0], rest[1:]) if rest else (None, [])
    if shape == "prompt" and name is None:
        raise UsageError("name the prompt: mcp-ref prompt TARGET NAME [KEY=VALUE ...]")
    if shape == "call":
        if name is not None and _is_pair(name):  # `call a=1 -- command`: pairs, no TOOL
            name, pairs = None, rest
        args.tool, args.pairs = name, pairs
        if tail is None and name is not None and not pairs and len(words) > 2:
            # unquoted, no KEY=VALUE: the last word taken as TOOL is a guess, said if launching fails
            args.read_as = f"TARGET {target!r} and TOOL {name!r}"
    else:
        args.name, args.pairs = name, pairs


def _split_target(verb: Verb, words: list[str]) -> tuple[str, list[str]]:
    """TARGET and the verb's other words, from the words after the verb (no ``--``)."""
    first = words[0]
    if len(words) == 1:
        return first, []
    if _whole_target(first):
        return first, words[1:]  # a URL, or a quoted command line: the rest are the verb's
    if verb.shape == "target":
        return _target_of(words), []
    if verb.shape == "read":
        return _target_of(words[:-1]), words[-1:]
    pairs_from = len(words)
    while pairs_from > 1 and _is_pair(words[pairs_from - 1]):
        pairs_from -= 1
    head, pairs = words[:pairs_from], words[pairs_from:]
    if len(head) == 1:  # TARGET, then pairs: a NAME is missing
        return head[0], pairs
    name = head[-1]
    if verb.shape == "call" and not pairs and (_names_a_file(name) or _is_option(name)):
        return _target_of(head), []  # `call python server.py`: the command, no TOOL
    return _target_of(head[:-1]), [name, *pairs]


def _names_a_file(word: str) -> bool:
    """True for a word that reads as a file, not a tool's name: a path, or an existing file."""
    return "/" in word or os.sep in word or os.path.isfile(word)
