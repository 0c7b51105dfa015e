"""The ``mcp-ref`` command: a scriptable MCP client, and the demo.

::

    mcp-ref [--json] [--trace] [--log-level LEVEL] [--timeout SECONDS] [--connect-timeout SECONDS] [--quiet]
            [--quiet-server] [--root PATH] [--sampling-command CMD] [--yes] [--answer-timeout SECONDS] VERB ...

    mcp-ref info TARGET                        serverInfo, protocol version, capabilities, instructions
    mcp-ref tools|resources|templates|prompts TARGET
    mcp-ref call TARGET TOOL [KEY=VALUE ...] [--args JSON|-|@FILE]
    mcp-ref read TARGET URI
    mcp-ref prompt TARGET NAME [KEY=VALUE ...] [--args JSON|-|@FILE]
    mcp-ref install TARGET [--name NAME] [--env KEY=VALUE ...] [--config PATH] [--print] [--force]
                                               add the server to Claude Desktop's MCP configuration
    mcp-ref demo                               walk through every MCP feature against the demo server
    mcp-ref serve-demo [--http HOST:PORT [--stateless]]
                                               run the demo server on stdio, or over HTTP
    mcp-ref proxy TARGET (--http HOST:PORT [--stateless] | --stdio)
                                               serve TARGET to any client, in every era

TARGET is a server command line in one string, e.g. ``"python server.py"``, or
the URL of an HTTP server (``http://127.0.0.1:8000/mcp``; Streamable HTTP,
falling back to the 2024-11-05 HTTP+SSE transport).
The options work before or after the verb.
``--args`` takes the arguments as one JSON object, inline, ``-`` (read from stdin) or ``@FILE``.
``--log-level LEVEL`` (an MCP level: debug, info, notice, warning, error, critical, alert,
emergency): for the client verbs, the server's log messages at LEVEL and above, asked for and shown
on stderr (without it none is asked for); for ``serve-demo``, the level of the server's own log on
stderr (default warning).  ``--trace`` with ``serve-demo`` traces the server's side on stderr.
A server's sampling and elicitation requests (sampling with ``--sampling-command``) are shown
and asked about (``Allow? [y/N]``) when stdin and stderr are a terminal; without one they are
refused (sampling: error -1, elicitation: declined) with a note on stderr, unless ``--yes``
answers them without asking; a question unanswered for ``--answer-timeout`` seconds (default
300) is refused (elicitation: cancelled).
Exit codes: 0 ok, 1 usage, 4 cannot launch or reach the server (or no handshake),
5 the tool returned ``isError`` or the server answered with a JSON-RPC error,
6 a request timed out, 7 authorization failed.

This module is the parser and :func:`main`; the verbs are in
:mod:`~mcp_ref.workbench.cli_verbs`, what they print in :mod:`~mcp_ref.workbench.cli_output`, and
the answers to a server's sampling and elicitation requests in :mod:`~mcp_ref.workbench.cli_answers`.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import logging
import math
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

# The MCP log levels, lowest first: ``--log-level``'s choices; each as a level of Python's logging
# (``serve-demo --log-level``).
from ..lifecycle import LOG_LEVELS
from ..server.settings import PYTHON_LEVELS
from .cli_answers import ANSWER_TIMEOUT
from .cli_output import to_stderr
from .cli_verbs import EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE, CliError, combine_hooks
from .terminal import safe


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors exit 1, as documented
        self.print_usage(sys.stderr)
        to_stderr(f"mcp-ref: error: {message}")
        raise SystemExit(EXIT_USAGE)


def _seconds(text: str) -> float:
    """An argparse type: a positive number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value < math.inf:  # NaN is not between them either
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value


def _global_options(parser: argparse.ArgumentParser, defaults: bool) -> None:
    """The options every verb takes, before or after it (after it, they override)."""

    def option(flag: str, default: object = None, **options: Any) -> None:
        # ("append" copies a list default before adding)
        parser.add_argument(flag, default=default if defaults else argparse.SUPPRESS, **options)

    def switch(flag: str, help: str) -> None:  # argparse's word
        option(flag, False, action="store_true", help=help)

    switch("--json", 'print the raw result as JSON (errors too, as {"error": ...})')
    switch(
        "--trace",
        "print every JSON-RPC message on stderr (--> sent, <-- received; with "
        "serve-demo, as the server sends and receives them)",
    )
    option(
        "--log-level",
        choices=LOG_LEVELS,
        metavar="LEVEL",
        help="client verbs: show the server's log messages at LEVEL and above on stderr; "
        "serve-demo: the server's own log level on stderr (default warning). LEVEL: "
        + ", ".join(LOG_LEVELS),
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
        help="the longest a question on the terminal waits for your answer (default "
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
        "--no-browser", "for a protected server: print the authorization URL, do not open a browser"
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


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    from ..lifecycle import __version__

    parser = _Parser(
        prog="mcp-ref", description="A synchronous MCP client, and a demo of the whole protocol."
    )
    parser.add_argument("--version", action="version", version=f"mcp-ref {__version__}")
    _global_options(parser, defaults=True)
    after_verb = _Parser(add_help=False)
    _global_options(after_verb, defaults=False)
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    verbs.required = True

    def verb(name: str, help: str, *positional: str, needs_target: bool = True):  # argparse's word
        """A verb's parser: TARGET (unless not ``needs_target``), then each ``positional`` (its
        metavar the name in capitals)."""
        sub = verbs.add_parser(name, help=help, parents=[after_verb])
        if needs_target:
            sub.add_argument(
                "target", metavar="TARGET", help='server command line ("python server.py") or URL'
            )
        for dest in positional:
            sub.add_argument(dest, metavar=dest.upper())
        return sub

    verb("info", "server info, negotiated version, capabilities, instructions")
    for listing in ("tools", "resources", "templates", "prompts"):
        verb(listing, f"list {listing}")
    call = verb("call", "call a tool", "tool")
    call.add_argument(
        "pairs",
        nargs="*",
        metavar="KEY=VALUE",
        help="arguments, read as the tool's inputSchema says (text=123 stays a string for a string parameter)",
    )
    args_help = "arguments as one JSON object: inline, - (read from stdin) or @FILE (KEY=VALUE pairs override)"
    call.add_argument("--args", metavar="JSON|-|@FILE", help=args_help)
    verb("read", "read a resource", "uri")
    prompt = verb("prompt", "get a prompt", "name")
    prompt.add_argument("pairs", nargs="*", metavar="KEY=VALUE")
    prompt.add_argument("--args", metavar="JSON|-|@FILE", help=args_help)
    install = verb(
        "install",
        "add the server (a command line) to a desktop client's MCP configuration file "
        "(Claude Desktop's claude_desktop_config.json)",
    )
    install.add_argument(
        "--name", help="the entry's name (default: the server's own name, asked by launching it)"
    )
    install.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an environment variable the client sets for the server (repeatable)",
    )
    install.add_argument(
        "--config",
        metavar="PATH",
        help="the configuration file (default: Claude Desktop's, where this system keeps it)",
    )
    install.add_argument(
        "--print",
        action="store_true",
        dest="print_only",
        help="print the entry as JSON, write nothing",
    )
    install.add_argument(
        "--force", action="store_true", help="replace an entry of the same name that differs"
    )
    check = verb(
        "check",
        "check a server against the official schema and the spec's rules (exit 5 if anything fails)",
    )
    check.add_argument(
        "--call-tools",
        action="store_true",
        help="also call every tool once with arguments built from its inputSchema (tools may have side effects)",
    )
    logout = verb(
        "logout",
        "forget the cached authorization (tokens, registration) for a server URL",
        needs_target=False,
    )
    logout.add_argument("target", metavar="URL")
    verb(
        "demo", "walk through every MCP feature against the bundled demo server", needs_target=False
    )
    serve = verb("serve-demo", "run the demo server on stdio (or --http)", needs_target=False)
    serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve Streamable HTTP at /mcp and HTTP+SSE at /sse instead",
    )
    serve.add_argument(
        "--stateless",
        action="store_true",
        help="with --http: no sessions (any worker answers any request)",
    )
    serve.add_argument(
        "--auth",
        action="store_true",
        help="with --http: an OAuth protected resource, with the demo authorization server on the same port",
    )
    from .cli_proxy import add_verb as add_proxy_verb

    add_proxy_verb(verb)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command (``argv``: its arguments, ``sys.argv[1:]`` by default); returns the exit code.

    It never calls ``sys.exit`` and leaves nothing behind (logging handlers, stdin readers): it can
    run many times in one process, as the tests do.
    """
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:
            # KEY=VALUE pairs may also come after options (``call T tool --args '{...}' b=2``).
            if getattr(args, "pairs", None) is None or any(
                item.startswith("-") or "=" not in item for item in extra
            ):
                parser.error(f"unrecognized arguments: {' '.join(extra)}")
            args.pairs.extend(extra)
    except SystemExit as exc:  # usage errors (exit 1), --help and --version (exit 0)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE if exc.code else EXIT_OK
    if args.verb == "serve-demo":  # the server's own log: warnings by default, or --log-level's
        level = PYTHON_LEVELS[args.log_level or "warning"]
    else:  # a client's: errors reach the user as one line from main(); library warnings only with --trace
        level = logging.WARNING if args.trace else logging.ERROR
    with _logging_to_stderr(level):
        return _run(args, argv)


def _run(args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    tracer = _Trace() if args.trace else None
    recorder = None
    if args.diagram:
        from .diagram import Recorder

        recorder = Recorder()
    trace = combine_hooks(tracer, recorder)
    try:
        if args.verb == "serve-demo":
            return _serve_demo(args, tracer)
        if args.verb == "proxy":
            from .cli_proxy import run as run_proxy

            return run_proxy(args, trace)
        if args.verb == "demo":
            return _demo(args, trace, recorder)
        if args.verb == "logout":
            return _logout(args)
        if args.verb == "install":
            from .install import install

            return install(args)
        from .cli_verbs import run_verb

        return run_verb(args, trace)
    except CliError as exc:
        to_stderr(f"mcp-ref: {safe(exc)}")  # it may quote the server's words
        if args.json and exc.code != EXIT_USAGE:
            # Scripts parse failures too: the JSON-RPC error as the server sent it, or ours.
            from .cli_output import print_json

            error = exc.error or {"message": str(exc)}
            print_json({"error": error, "exitCode": exc.code})
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of our output has gone (``| head -1``): what it wanted it has; stop quietly.
        # stdout is pointed at /dev/null so that the interpreter's final flush does not fail again.
        _silence_stdout()
        return EXIT_OK
    finally:
        if tracer is not None:
            tracer.close()
        if recorder is not None:
            try:
                recorder.write(args.diagram, f"mcp-ref {' '.join(_shown_argv(argv))}")
            except OSError as exc:
                to_stderr(
                    f"mcp-ref: cannot write the diagram to {args.diagram}: {exc.strerror or exc}"
                )


def _silence_stdout() -> None:
    """Point the process's stdout at /dev/null (when it is a real file descriptor)."""
    import os

    try:
        fd = sys.stdout.fileno()
    # not a file (captured): nothing will flush to a pipe (io.UnsupportedOperation is both)
    except (OSError, ValueError):
        return
    os.dup2(os.open(os.devnull, os.O_WRONLY), fd)


def _shown_argv(argv) -> list[str]:
    """The command's arguments for a diagram's title: the verb and what follows, no options' values."""
    words = iter(sys.argv[1:] if argv is None else argv)
    out = []
    for word in words:
        if word in (
            "--diagram",
            "--timeout",
            "--connect-timeout",
            "--header",
            "--sampling-command",
            "--root",
        ):
            next(words, None)  # the option's value
        elif not word.startswith("--"):
            out.append(word if len(word) <= 60 else word[:59] + "…")
    return out


def _demo(args, trace, recorder=None) -> int:
    """``demo``: the walkthrough; with ``--diagram`` (``recorder``), each section a note in the diagram."""
    from ..errors import ConnectionClosed, McpError, RequestTimeout
    from .walkthrough import run

    try:
        return run(
            trace=trace,
            timeout=args.timeout,
            era=args.era,
            on_section=recorder.note if recorder else None,
        )
    except (ConnectionClosed, RequestTimeout, McpError, OSError) as exc:
        raise CliError(f"the demo could not run its server: {exc}", EXIT_UNREACHABLE) from None


@contextlib.contextmanager
def _logging_to_stderr(level: int) -> Iterator[None]:
    """While the command runs: log records at ``level`` and above on stderr, one line each.

    Installed on the root logger for this run only, and removed after it (with the root's level
    put back), so that a second run in the same process starts as the first did.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_SafeFormatter("mcp-ref: %(levelname)s: %(message)s"))
    root = logging.getLogger()
    before = root.level
    root.addHandler(handler)
    root.setLevel(level)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(before)


class _SafeFormatter(logging.Formatter):
    """A library's log line may quote the server (a rejected tool's name, a log message): no escape
    sequence of its reaches the terminal."""

    def format(self, record: logging.LogRecord) -> str:
        return safe(super().format(record))


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
            message = json.loads(text)
            key = direction + shape(message)
        except ValueError:
            message, key = None, direction + text
        with self.lock:
            if not self.look_alikes.admit_message(direction, message, key):
                return
            self._flush()
            self.stream.write(f"{direction} {safe(text)}\n")
            self.stream.flush()

    def _flush(self) -> None:
        hidden = self.look_alikes.take_hidden()
        if hidden:
            self.stream.write(
                f"... {hidden} more message(s) shaped like those above (only ids and values differ)\n"
            )

    def close(self) -> None:
        """Print the count still pending."""
        with self.lock:
            self._flush()
            self.stream.flush()


def _logout(args) -> int:
    """``mcp-ref logout URL``: forget the cached tokens for the server and its registration."""
    from .login import cache_path, logout

    if not args.target.startswith(("http://", "https://")):
        raise CliError(f"logout takes the URL of an HTTP server, not {args.target!r}", EXIT_USAGE)
    to_stderr(
        f"mcp-ref: forgot the authorization for {args.target} (in {cache_path()})"
        if logout(args.target)
        else f"mcp-ref: no cached authorization for {args.target}"
    )
    return EXIT_OK


def _serve_demo(args, tracer: _Trace | None = None) -> int:
    """``serve-demo``: the demo server on stdio, or over HTTP; with ``--trace`` (``tracer``) every
    message each of its connections sends (``-->``) and receives (``<--``) on stderr."""
    from .demo import build_protected_server, build_server

    def traced(server):
        if tracer is not None:
            # What each connection sends (stdio, each HTTP session or request), and on stdio what it reads;
            # over HTTP what it reads is each POST's body, traced by _TracedBodies before the app reads it.
            # (a trace given to new_connection itself wins over the partial's)
            server.new_connection = functools.partial(server.new_connection, trace=tracer)
            plain_app = server.wsgi_app
            server.wsgi_app = lambda **options: _TracedBodies(plain_app(**options), tracer)
        return server

    if args.http is None:
        if args.stateless or args.auth:
            raise CliError(
                f"{'--stateless' if args.stateless else '--auth'} goes with --http", EXIT_USAGE
            )
        traced(build_server()).run_stdio()
        return EXIT_OK
    host, sep, port = args.http.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise CliError(
            f"--http takes HOST:PORT with a port from 0 to 65535, not {args.http!r}", EXIT_USAGE
        )
    mode = "stateless " if args.stateless else ""

    def announce(httpd) -> None:
        to_stderr(
            f"mcp-ref: serving the demo at {httpd.url}/mcp ({mode}Streamable HTTP) and {httpd.url}/sse (HTTP+SSE)"
        )

    address = (host.strip("[]") or "127.0.0.1", int(port))
    try:
        if args.auth:
            _serve_protected_demo(traced(build_protected_server()), *address, args.stateless)
        else:
            traced(build_server()).run_http(*address, stateless=args.stateless, on_ready=announce)
    except OSError as exc:  # the port is taken, the address is not ours, ...
        raise CliError(
            f"cannot listen on {args.http}: {exc.strerror or exc}", EXIT_UNREACHABLE
        ) from None
    return EXIT_OK


@dataclass
class _TracedBodies:
    """``serve-demo --http --trace``: a WSGI middleware handing each POST's body (a JSON-RPC message or a
    batch) to ``trace("<--", body)`` before the app reads it.  Bounded: a body is traced only when its
    Content-Length is given and at most :data:`MAX_TRACED_BODY` (the app's own limit); any other is
    passed on untraced, for the app to read or refuse.  Other attributes are the app's (``close``)."""

    #: The largest body traced (bytes): the app's default ``max_body_size``.
    MAX_TRACED_BODY = 4 * 1024 * 1024

    app: Any
    trace: _Trace

    def __call__(self, environ, start_response):
        import io

        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if environ.get("REQUEST_METHOD") == "POST" and 0 < length <= self.MAX_TRACED_BODY:
            body = environ["wsgi.input"].read(length)
            self.trace("<--", body)
            environ["wsgi.input"] = io.BytesIO(body)
        return self.app(environ, start_response)

    def __getattr__(self, name: str):
        return getattr(self.app, name)


def _serve_protected_demo(server, host: str, port: int, stateless: bool) -> None:
    """``serve-demo --http HOST:PORT --auth``: the demo (``server``) as a protected resource, and the demo
    authorization server on the same port (for teaching and tests, never production)."""
    from ..http.wsgi_server import WsgiServer
    from .demo_auth_server import DEMO_CLIENT_ID, protected_app

    httpd = WsgiServer((host, port), protected_app(server, stateless=stateless))
    to_stderr(
        f"mcp-ref: serving the demo at {httpd.url}/mcp as an OAuth protected resource; its authorization "
        f"server is {httpd.url} (pre-registered public client: {DEMO_CLIENT_ID})"
    )
    # closed on the way out (server_close), as Ctrl-C ends it quietly
    with httpd, contextlib.suppress(KeyboardInterrupt):
        httpd.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
