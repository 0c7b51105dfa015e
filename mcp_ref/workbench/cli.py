"""The ``mcp-ref`` command: a scriptable MCP client, a server runner, and the demo.

::

    mcp-ref [OPTIONS] VERB ...                 (the options work before or after the verb)

    mcp-ref info TARGET                        serverInfo, protocol version, capabilities, instructions
    mcp-ref tools|resources|templates|prompts TARGET
    mcp-ref call TARGET [TOOL [KEY=VALUE ...]] [--args JSON|-|@FILE]
    mcp-ref read TARGET URI
    mcp-ref prompt TARGET NAME [KEY=VALUE ...] [--args JSON|-|@FILE]
    mcp-ref check TARGET [--call-tools]
    mcp-ref install TARGET [--name NAME] [--env KEY=VALUE ...] [--config PATH] [--print] [--force]
    mcp-ref run SERVER[:OBJ] [--http HOST:PORT [--stateless] ...] [-- ARGS ...]
    mcp-ref demo
    mcp-ref serve-demo [--http HOST:PORT [--stateless] [--auth]]
    mcp-ref proxy TARGET (--http HOST:PORT [--stateless] | --stdio)
    mcp-ref inspect TARGET [--port N] [--no-browser]   the inspector: a web page showing the protocol
    mcp-ref dev SERVER[:OBJ] [--port N] [-- ARGS ...]  your server, served and inspected
    mcp-ref logout URL

TARGET is the URL of an HTTP server (Streamable HTTP, falling back to the 2024-11-05 HTTP+SSE
transport) or a server command line: quoted as one word, unquoted, or last after ``--``.  The
verbs, their words and options are one table, :data:`mcp_ref.workbench.cli_grammar.VERBS`;
``mcp-ref VERB --help`` describes each, with examples; ``docs/command-line.md`` is the guide.

Exit codes: 0 ok, 2 usage (one line: what is wrong, and which ``--help`` to read), 4 cannot launch
or reach the server (or no handshake; ``run``: SERVER cannot be loaded), 5 the tool returned
``isError`` or the server answered with a JSON-RPC error, 6 a request timed out, 7 authorization
failed.

This module is :func:`main`: it reads the command line (:mod:`~mcp_ref.workbench.cli_grammar`)
and runs the verb's handler: the client verbs are in :mod:`~mcp_ref.workbench.cli_verbs`, what
they print in :mod:`~mcp_ref.workbench.cli_output`, the answers to a server's sampling and
elicitation requests in :mod:`~mcp_ref.workbench.cli_answers`, serving in
:mod:`~mcp_ref.workbench.cli_serve`, loading your own server in :mod:`~mcp_ref.workbench.cli_run`,
the proxy in :mod:`~mcp_ref.workbench.cli_proxy`, and the inspector's verbs in
:mod:`~mcp_ref.workbench.cli_inspect`.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ..server.settings import PYTHON_LEVELS, log_level_from_environment
from .cli_grammar import VERB_NAMES, UsageError, build_parser, parse, verb_named_in
from .cli_output import to_stderr
from .cli_verbs import EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE, CliError, combine_hooks
from .terminal import safe

__all__ = ["Hooks", "build_parser", "main"]

#: The verbs that serve (their --log-level is the server's own log, their --trace the server's side).
SERVING_VERBS = ("serve-demo", "run")


@dataclass
class Hooks:
    """What a verb's handler is given besides its arguments: ``tracer`` (``--trace``: every message
    on stderr), ``recorder`` (``--diagram``), and ``trace``, the hook calling both (None when neither)."""

    tracer: Any = None
    recorder: Any = None
    trace: Any = None


class StopSignals:
    """SIGTERM (``kill PID``) and SIGHUP (the terminal closed) stop a verb as Ctrl-C does, raising
    ``KeyboardInterrupt`` in the main thread, so that the client and a launched server (and the
    inspector's output check's child) are closed: the signal's default action ended the command
    at once and left a server busy with a request running.

    The first of them (or Ctrl-C) makes all three do nothing from then on (:meth:`hold`), so the
    closing runs to its end: a second signal (Ctrl-C pressed twice, ``kill`` sent again, a
    terminal closing after a ``kill``) raised ``KeyboardInterrupt`` in the middle of it and left
    the launched server running.  :meth:`restore` puts back the handlers each had before.  Off
    the main thread (no signal handler can be set there): nothing changes."""

    def __init__(self) -> None:
        self._on_main_thread = threading.current_thread() is threading.main_thread()
        #: Each signal changed (by name) and its handler before the first change.
        self._before: dict[str, Any] = {}
        if not self._on_main_thread:
            return
        for name in ("SIGTERM", "SIGHUP"):
            self._set(name, self._stop)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not one ignored
            self._set("SIGINT", self._stop)

    def _stop(self, signal_number: int, frame: Any) -> None:
        """The handler of the first stop signal: the others held, ``KeyboardInterrupt``."""
        self.hold()
        raise KeyboardInterrupt

    def hold(self) -> None:
        """Make SIGINT, SIGTERM and SIGHUP do nothing until :meth:`restore`.

        A handler that does nothing, not ``SIG_IGN``: a signal ignored stays ignored across
        ``exec`` (POSIX ``execve``: "Signals set to be ignored by the calling process image shall
        be set to be ignored by the new process image"), so a server launched by a connect still
        under way would start deaf to Ctrl-C and ``kill``; a caught signal is set back to its
        default action in the new program."""
        if self._on_main_thread:
            for name in ("SIGINT", "SIGTERM", "SIGHUP"):
                self._set(name, _do_nothing)

    def restore(self) -> None:
        """Put back each handler as it was before this object changed it."""
        for name, handler in self._before.items():
            if handler is not None:  # None: set outside Python, which cannot be put back
                signal.signal(getattr(signal, name), handler)

    def _set(self, name: str, handler: Any) -> None:
        number = getattr(signal, name, None)
        # no such signal here (SIGHUP on Windows), or one the command was started ignoring
        # (``nohup``, a background job): it stays ignored
        if number is None or signal.getsignal(number) is signal.SIG_IGN:
            return
        previous = signal.signal(number, handler)
        self._before.setdefault(name, previous)


def _do_nothing(signal_number: int, frame: Any) -> None:
    """A stop signal's handler while a verb closes (:meth:`StopSignals.hold`)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command (``argv``: its arguments, ``sys.argv[1:]`` by default); returns the exit code.

    A usage error is one line on stderr (what is wrong, and ``see `mcp-ref VERB --help```), exit 2.
    It never calls ``sys.exit`` and leaves nothing behind (logging handlers, stdin readers): it can
    run many times in one process, as the tests do.
    """
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse(words)
    except UsageError as exc:
        verb = exc.verb or verb_named_in(words)
        see = f"mcp-ref {verb} --help" if verb else "mcp-ref --help"
        to_stderr(f"mcp-ref: error: {safe(exc)} (see `{see}`)")
        return EXIT_USAGE
    except SystemExit as exc:  # --help and --version (exit 0)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE if exc.code else EXIT_OK
    if args.verb in SERVING_VERBS:
        # the server's own log: --log-level's, else MCP_REF_LOG_LEVEL's (as Server.run() reads it),
        # else warnings and above
        if args.log_level:
            level = PYTHON_LEVELS[args.log_level]
        else:
            try:
                from_environment = log_level_from_environment()
            except ValueError as exc:
                to_stderr(f"mcp-ref: error: {safe(exc)}")
                return EXIT_USAGE
            level = logging.WARNING if from_environment is None else from_environment
    else:  # a client's: errors reach the user as one line from main(); library warnings only with --trace
        level = logging.WARNING if args.trace else logging.ERROR
    with _logging_to_stderr(level):
        return _run(args, argv)


def _run(args: Any, argv: Sequence[str] | None) -> int:
    """Run the verb's handler (:data:`~mcp_ref.workbench.cli_grammar.VERBS`); its failures as one
    line.  A ``--diagram`` that cannot be written makes a verb that went well exit 2."""
    hooks = Hooks(tracer=_Trace() if args.trace else None)
    if args.diagram:
        from .diagram import Recorder

        hooks.recorder = Recorder()
    hooks.trace = combine_hooks(hooks.tracer, hooks.recorder)
    written = True
    try:
        code = _run_handler(args, hooks)
    finally:
        if hooks.tracer is not None:
            hooks.tracer.close()
        if hooks.recorder is not None:
            try:
                hooks.recorder.write(args.diagram, f"mcp-ref {' '.join(_shown_argv(argv))}")
            except OSError as exc:
                written = False
                to_stderr(
                    f"mcp-ref: cannot write the diagram to {args.diagram}: {exc.strerror or exc}"
                )
    return EXIT_USAGE if code == EXIT_OK and not written else code


def _run_handler(args: Any, hooks: Hooks) -> int:
    """The verb's handler, called; a :class:`CliError` as one line (and its JSON with ``--json``)."""
    module, _, function = VERB_NAMES[args.verb].handler.partition(":")
    # a serving verb has no server of its own to close: SIGTERM's default action ends it at once
    stop_signals = StopSignals() if args.verb not in SERVING_VERBS else None
    try:
        return getattr(importlib.import_module(module), function)(args, hooks)
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
        if stop_signals is not None:
            stop_signals.restore()


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
    """The command's arguments for a diagram's title: the verb and what follows, no options' values
    (nor a server's secret-named option's, ``-- --api-key KEY``), secrets masked before a long
    word is cut (``password=••••••``, a URL's userinfo: :func:`~mcp_ref.workbench.diagram.masked`)."""
    from ..inspector.masking import secret_key
    from .diagram import masked

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
        ) or (word.startswith("-") and secret_key(word.lstrip("-"))):
            next(words, None)  # the option's value
        elif not word.startswith("--"):
            shown = masked(word)
            out.append(shown if len(shown) <= 60 else shown[:59] + "…")
    return out


def demo_verb(args: Any, hooks: Hooks) -> int:
    """``demo``: the walkthrough; with ``--diagram`` (``hooks.recorder``), each section a note in the diagram."""
    from ..errors import ConnectionClosed, McpError, RequestTimeout
    from .walkthrough import run

    try:
        return run(
            trace=hooks.trace,
            timeout=args.timeout,
            era=args.era,
            on_section=hooks.recorder.note if hooks.recorder else None,
        )
    except BrokenPipeError:  # our own stdout's reader has gone (| head -1): not the server
        raise
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
    """``--trace``: every JSON-RPC message on stderr, with runs of look-alikes summarised, and
    secrets masked as the inspector masks them (:mod:`mcp_ref.inspector.masking`: a ``password``
    argument, an ``access_token``, a URL's userinfo and secret query values; a line that is no
    JSON as free text): stderr often goes to a log, and secrets never reach one.

    Once three messages of one shape (the same method, tool and content types, only ids and
    values differing) have been printed, more of it (the demo's 200 concurrent echo calls, a
    long stream of progress) are counted, not printed (``diagram.LookAlikes``); the count is
    printed, as one line, before the next message printed and at the end.
    """

    def __init__(self, stream=None):
        from .diagram import LookAlikes

        self._stream = stream
        self.look_alikes = LookAlikes()
        self.lock = threading.Lock()

    @property
    def stream(self):
        """Where the trace goes: the stream given, else ``sys.stderr`` as it is when written to
        (a stdio server's, whose writes never wait for a client that does not read it, once
        ``run()`` has put it in place: :func:`mcp_ref.stdio.server_streams`)."""
        return self._stream or sys.stderr

    def __call__(self, direction: str, data: bytes) -> None:
        # the masking module alone (the inspector's package loads nothing else)
        from ..inspector.masking import mask_json, mask_text
        from .deep_json import too_deep
        from .diagram import shape

        text = data.decode("utf-8", "replace")
        try:
            message = json.loads(text)
            key = direction + shape(message)
        except (ValueError, RecursionError):  # no JSON, or too deep for Python's parser: as text
            message, key = None, direction + text
        with self.lock:
            if not self.look_alikes.admit_message(direction, message, key):
                return
            self._flush()
            if isinstance(message, (dict, list)) and not too_deep(text):
                masked = mask_json(message)  # written compact again, as it came, when masked
                if masked != message:
                    text = json.dumps(masked, ensure_ascii=False, separators=(",", ":"))
            else:  # deeper than the session reads, a JSON scalar, or no JSON
                text = mask_text(text)
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


def logout_verb(args: Any, hooks: Hooks) -> int:
    """``mcp-ref logout URL``: forget the cached tokens for the server and its registration."""
    from .login import cache_path, logout

    if not args.target.startswith(("http://", "https://")):
        raise CliError(f"logout takes the URL of an HTTP server, not {args.target!r}", EXIT_USAGE)
    try:
        forgot = logout(args.target)
    except OSError as exc:  # the store's lock cannot be opened, or another holds it (TimeoutError)
        raise CliError(
            f"cannot forget the authorization in {cache_path()}: {exc.strerror or exc}", EXIT_USAGE
        ) from None
    to_stderr(
        f"mcp-ref: forgot the authorization for {args.target} (in {cache_path()})"
        if forgot
        else f"mcp-ref: no cached authorization for {args.target}"
    )
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
