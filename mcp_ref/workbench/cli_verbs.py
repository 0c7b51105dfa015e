"""The client verbs of the ``mcp-ref`` command: connect to TARGET, run ``info``, ``tools``,
``call``, ``read``, ``prompt``, ``check`` ..., and turn each failure into a :class:`CliError`
(one line on stderr, an exit code).

Exit codes: 0 ok, 2 usage, 4 cannot launch or reach the server (or no handshake), 5 the tool
returned ``isError`` or the server answered with a JSON-RPC error, 6 a request timed out,
7 authorization failed.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import (
    AuthorizationError,
    CapabilityError,
    ConnectionClosed,
    InvalidResult,
    McpError,
    RequestRefused,
    RequestTimeout,
    ServerUnreachable,
)
from .cli_output import (
    Progress,
    describe_content,
    describe_prompt,
    describe_tool,
    one_line,
    print_content,
    print_json,
    to_stderr,
)
from .terminal import safe

# Usage errors are 2, as argparse and the shell's own commands make them.
EXIT_OK, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_ERROR, EXIT_TIMEOUT, EXIT_AUTH = 0, 2, 4, 5, 6, 7
#: The most characters ``--args`` reads (inline, from stdin or from a file); past it, a usage error (exit 2).
MAX_ARGUMENTS = 16 * 1024 * 1024


class CliError(Exception):
    """A failure to report as one line on stderr with an exit code (and, with --json, on stdout as JSON).

    ``error`` is the JSON-RPC error object when the server answered with one.
    """

    def __init__(self, message: str, code: int, error: dict | None = None):
        super().__init__(message)
        self.code = code
        self.error = error


def parse_pairs(
    pairs: Sequence[str], *, coerce: bool = True, schema: dict | None = None
) -> dict[str, Any]:
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
        wants_text = schema is not None and _wants_string(schema.get(key))
        try:
            parsed = strict_json(value) if coerce else value
        except NotJsonNumber as exc:  # 1e999, NaN: text only if the parameter takes text
            if not wants_text:
                raise CliError(
                    f"{key}={value}: {exc} (for the text, write {key}='\"{value}\"')", EXIT_USAGE
                ) from None
            parsed = value
        except (
            RecursionError
        ):  # brackets past the parser's depth: text only if the parameter takes text
            if not wants_text:
                raise CliError(f"{key}=...: the value is nested too deeply", EXIT_USAGE) from None
            parsed = value
        except ValueError:
            parsed = value
        # a string parameter: 123 is the text "123" ("\"42\"" is still the string 42)
        out[key] = value if wants_text and not isinstance(parsed, str) else parsed
    return out


class NotJsonNumber(ValueError):
    """A number JSON cannot carry, read from the command line: ``NaN``, ``Infinity``, or one too
    large for a double (``1e999``)."""


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise NotJsonNumber(f"{text} is too large for a JSON number (a double)")
    return number


def _no_constant(name: str) -> float:
    raise NotJsonNumber(f"{name} is no JSON value (RFC 8259 §6: no NaN or Infinity)")


def strict_json(text: str | bytes) -> Any:
    """``text`` parsed as JSON, RFC 8259 strictly: ``NaN``, ``Infinity`` and a number too large for
    a double raise :class:`NotJsonNumber` (Python's parser takes them, and the request could not
    be sent); anything else that is no JSON, ValueError."""
    return json.loads(text, parse_float=_finite, parse_constant=_no_constant)


def split_command(command_line: str, label: str = "TARGET") -> list[str]:
    """A command line split into words as a POSIX shell would (:func:`shlex.split`); a usage
    error (exit 2) when it is empty or a quote in it does not close."""
    try:
        words = shlex.split(command_line)
    except ValueError as exc:  # "No closing quotation", "No escaped character"
        raise CliError(
            f"{label} cannot be split into words ({str(exc).lower()}): {command_line!r}",
            EXIT_USAGE,
        ) from None
    if not words:
        raise CliError(f"{label} is empty", EXIT_USAGE)
    return words


def read_arguments(text: str | None) -> dict[str, Any]:
    """``--args``: a JSON object given inline, ``-`` (read from stdin to its end) or ``@FILE``
    (read from FILE, UTF-8); ``{}`` without it.  At most :data:`MAX_ARGUMENTS` characters.

    Reading stdin uses it up: with ``--args -``, a server's elicitation answered with ``--yes``
    (which reads stdin) finds the end of input and is cancelled.
    """
    if text is None:
        return {}
    label = "--args"
    if text == "-":
        label, data = "--args - (stdin)", sys.stdin.read(MAX_ARGUMENTS + 1)
    elif text.startswith("@"):
        label = f"--args {text}"
        try:
            with open(text[1:], encoding="utf-8") as file:
                data = file.read(MAX_ARGUMENTS + 1)
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise CliError(f"{label}: cannot read {text[1:]!r}: {reason}", EXIT_USAGE) from None
    else:
        data = text
    if len(data) > MAX_ARGUMENTS:
        raise CliError(f"{label} is longer than {MAX_ARGUMENTS:,} characters", EXIT_USAGE)
    try:
        arguments = strict_json(data)
    except (ValueError, RecursionError) as exc:
        raise CliError(f"{label} is not valid JSON: {exc}", EXIT_USAGE) from None
    if not isinstance(arguments, dict):
        raise CliError(f"{label} must be a JSON object", EXIT_USAGE)
    return arguments


def _ambiguous(value: str) -> bool:
    """True when a value reads as JSON other than a string (a number, true, null, [...]): it may be meant as text."""
    try:
        return not isinstance(json.loads(value), str)
    except RecursionError:  # brackets nested past the parser's depth: no string either
        return True
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
    return "string" in kinds and not set(kinds) & {
        "number",
        "integer",
        "boolean",
        "array",
        "object",
    }


def combine_hooks(*hooks: Callable | None) -> Callable | None:
    """One ``trace`` hook calling each of ``hooks`` that is set (None when none is)."""
    live = [hook for hook in hooks if hook is not None]
    if len(live) > 1:
        return lambda direction, data: [hook(direction, data) for hook in live] and None
    return live[0] if live else None


# -- connecting -----------------------------------------------------------------------------------


def client_options(args, trace) -> dict:
    """What the CLI declares and answers as a client: roots, sampling, elicitation (see docs/command-line.md)."""
    from pathlib import Path

    from .cli_answers import Approval, AskTheUser, SamplingCommand, User

    # Elicitation is always declared: on a terminal the user is asked; without one it is declined
    # (unless --yes, which reads the answers from stdin).  Approval decides, before either handler runs.
    # One User: every question of this command, at the terminal or from stdin.
    if args.sampling_command:
        split_command(args.sampling_command, "--sampling-command")  # a usage error, before any
    user = User(args.answer_timeout)
    args.approval = Approval(args.yes, args.target, user)
    return {
        "timeout": args.timeout,
        "initialize_timeout": args.connect_timeout,
        "trace": trace,
        "era": args.era,
        "roots": [Path(path).resolve().as_uri() for path in args.root] or None,
        "sampling_handler": (
            SamplingCommand(args.sampling_command, args.timeout) if args.sampling_command else None
        ),
        # asked for at --log-level once connected: see run_verb
        "on_log": show_server_log if args.log_level else None,
        "elicitation_handler": AskTheUser(user),
        "approve": args.approval,
    }


def header_options(given: list[str]) -> dict[str, str]:
    """``--header 'NAME: VALUE'`` options as a dict of headers, or a usage :class:`CliError`."""
    headers = {}
    for header in given:
        name, sep, value = header.partition(":")
        if not sep or not name.strip():
            # its value is not shown: a header often carries a secret (Authorization ...)
            shown = header.split(None, 1)[0] + (" ..." if " " in header.strip() else "")
            raise CliError(f"--header must be 'NAME: VALUE', not {shown!r}", EXIT_USAGE)
        headers[name.strip()] = value.strip()
    return headers


def connect(args, trace, *, options: dict | None = None, on_stderr=None, http_trace=None):
    """An initialized Client of ``args.target`` (a URL, or a command line to launch), or a :class:`CliError`.

    Every verb that connects comes here (``mcp-ref inspect`` too): the same launch, the same OAuth
    login, the same messages for each failure.  ``options``: the :class:`~mcp_ref.client.Client`
    keywords to use instead of the command line's own (:func:`client_options`); ``on_stderr(line)``
    sees each stderr line of a launched server besides its usual handling; ``http_trace`` is the
    HTTP observer of a URL target (``Client.http(http_trace=)``).
    """
    from ..client import Client

    if options is None:
        options = client_options(args, trace)
    if args.target.startswith(("http://", "https://")):
        headers = header_options(args.header)
        auth = None
        # an explicit token is the user's choice
        if not any(name.lower() == "authorization" for name in headers):
            from .login import command_oauth

            auth = command_oauth(
                open_browser=not args.no_browser,
                trace=sys.stderr if args.trace else None,
                timeout=args.connect_timeout,
            )
        try:
            return Client.http(
                args.target,
                headers=headers,
                auth=auth,
                transport=args.transport,
                connect_timeout=args.connect_timeout,
                **({} if http_trace is None else {"http_trace": http_trace}),
                **options,
            )
        except AuthorizationError as exc:
            raise CliError(f"authorization failed: {exc}", EXIT_AUTH) from None
        except ServerUnreachable as exc:
            raise CliError(str(exc), EXIT_UNREACHABLE) from None
        except ValueError as exc:  # a URL that names no server (no host, a port past 65535)
            raise CliError(str(exc), EXIT_USAGE) from None
        except McpError as exc:
            refused = _http_refusal(exc)
            if refused is not None:
                given = (
                    "the Authorization header given with --header"
                    if auth is None
                    else "the authorization"
                )
                raise CliError(
                    f"authorization failed: the server refused {given}: {refused.message}",
                    EXIT_AUTH,
                    refused.to_error(),
                ) from None
            if "HTTP 404" in str(exc) and not args.target.rstrip("/").endswith(("/mcp", "/sse")):
                raise CliError(
                    f"{args.target} answered 404 Not Found: MCP servers usually listen at a path such as "
                    f"{args.target.rstrip('/')}/mcp (Streamable HTTP) or /sse",
                    EXIT_UNREACHABLE,
                ) from None
            raise CliError(
                f"cannot initialize with {args.target}: {exc}", EXIT_UNREACHABLE, exc.to_error()
            ) from None
        except (ConnectionClosed, RequestTimeout, OSError) as exc:
            raise CliError(
                f"cannot reach the server {args.target}: {exc}", EXIT_UNREACHABLE
            ) from None
    command = split_command(args.target)
    stderr = ServerStderr(args.quiet_server, on_stderr)
    try:
        # getattr: install's --env, set for the launch that asks the server's name
        return Client.stdio(
            command,
            stderr=stderr,
            env=getattr(args, "server_env", None),
            **options,
        )
    except (FileNotFoundError, PermissionError) as exc:
        why = "command not found" if isinstance(exc, FileNotFoundError) else "permission denied"
        raise CliError(
            f"cannot launch {command[0]!r}: {why}{_read_as(args)}{_url_meant(command)}",
            EXIT_UNREACHABLE,
        ) from None
    except (ConnectionClosed, RequestTimeout, OSError) as exc:
        raise CliError(
            f"the server {command[0]!r} did not complete the handshake: {exc}{_read_as(args)}"
            f"{stderr.last_words()}",
            EXIT_UNREACHABLE,
        ) from None
    except McpError as exc:  # UnsupportedProtocolVersionError too
        raise CliError(f"the server refused to initialize: {exc}", EXIT_UNREACHABLE) from None


def _url_meant(command: list[str]) -> str:
    """A hint when a command that was not found looks like a URL without its scheme
    (``localhost:8000/mcp``, ``127.0.0.1:8000``): a TARGET is a URL only with ``http(s)://``."""
    word = command[0]
    if len(command) == 1 and re.fullmatch(r"[\w.-]+:\d{1,5}(/\S*)?", word):
        return f" (a URL starts with http:// or https://: did you mean http://{word}?)"
    return ""


def _read_as(args) -> str:
    """A launch that failed after ``call`` split an unquoted command by guessing (no KEY=VALUE
    words: the last word taken as the TOOL): how the words were read, and how to say otherwise."""
    read_as = getattr(args, "read_as", None)
    if not read_as:
        return ""
    return (
        f" (the words were read as {read_as}; if the tool's name is not the last word, quote "
        "the server's command or put it last, after --)"
    )


def _http_refusal(exc: BaseException) -> McpError | None:
    """The :class:`~mcp_ref.errors.McpError` for an HTTP 401 or 403 behind ``exc`` (``exc`` itself,
    or one it was raised from or while handling: the probe of the 2026-07-28 era answers "not a modern
    server" for it), or None."""
    seen: BaseException | None = exc
    for _ in range(8):  # bounded: a chain is short
        if seen is None:
            return None
        if isinstance(seen, McpError) and isinstance(seen.data, dict):
            if seen.data.get("httpStatus") in (401, 403):
                return seen
        seen = seen.__cause__ or seen.__context__
    return None


def show_server_log(message) -> None:
    """``Client(on_log=...)`` for ``--log-level``: each log message the server sends, one line on stderr
    (``mcp-ref: server log LEVEL [LOGGER]: DATA``; the server's words shown escaped)."""
    data = (
        message.data
        if isinstance(message.data, str)
        else json.dumps(message.data, ensure_ascii=False)
    )
    logger = f" [{one_line(message.logger)}]" if message.logger else ""
    to_stderr(f"mcp-ref: server log {one_line(message.level)}{logger}: {one_line(data)}")


class ServerStderr:
    """A launched server's stderr: passed through (unless ``--quiet-server``), its last lines kept
    to explain a server that exits before answering."""

    def __init__(self, quiet: bool, also: Callable[[str], None] | None = None):
        import collections

        self.quiet = quiet
        #: Called with each line as the server wrote it, before anything else (the inspector's record).
        self.also = also
        self.lines: collections.deque[str] = collections.deque(maxlen=10)

    def __call__(self, line: str) -> None:
        if self.also is not None:
            self.also(line)
        line = one_line(line)  # the server's own output: no escape sequence reaches the terminal
        self.lines.append(line)
        if not self.quiet:
            to_stderr(line)

    def last_words(self) -> str:
        """``; its last stderr lines: ...`` for an error message, or nothing: nothing when the lines
        were passed through as they came (shown once, not twice)."""
        if not self.lines or not self.quiet:
            return ""
        return "; its last stderr lines:\n  " + "\n  ".join(self.lines)


def run_verb(args, hooks) -> int:
    """Connect, run ``args.verb``, close; the exit code (failures raised as :class:`CliError`).
    ``hooks``: the command's :class:`~mcp_ref.workbench.cli.Hooks` (its ``trace`` sees every message)."""
    trace = hooks.trace
    http_trace = None  # an HTTP target's observer (``check``: what its POSTs were answered with)
    if args.verb == "check":
        from .check import PostAnswers
        from .wire_check import WireValidator

        args.validator = WireValidator()
        trace = combine_hooks(trace, args.validator)
        args.post_answers = http_trace = PostAnswers()
    if args.verb in ("call", "prompt"):
        # before launching anything: a usage error costs nothing
        if args.verb == "call" and args.tool is None and (args.pairs or args.args is not None):
            raise CliError(
                "arguments but no TOOL: name the tool before them (mcp-ref call TARGET TOOL "
                "KEY=VALUE ...)",
                EXIT_USAGE,
            )
        args.arguments = read_arguments(args.args)
        bad = sorted(name for name, value in args.arguments.items() if not isinstance(value, str))
        # 2025-11-25 server/prompts: a prompt's arguments are strings
        if args.verb == "prompt" and bad:
            raise CliError(
                f"prompt arguments must be strings; --args gives other JSON for: {', '.join(bad)}",
                EXIT_USAGE,
            )
    client = connect(args, trace, http_trace=http_trace)
    if client.server_info is not None and client.server_info.name:
        args.approval.server = client.server_info.name  # who asks, in the words the server chose
    try:
        with client:
            if args.log_level:
                _ask_for_logs(client, args.log_level)
            return _VERBS[args.verb](client, args)
    except McpError as exc:
        refused = _http_refusal(exc)
        if refused is not None:
            raise CliError(
                f"authorization failed: {refused.message}", EXIT_AUTH, refused.to_error()
            ) from None
        if isinstance(exc, RequestRefused) and client.era == "modern":
            # 2026-07-28: refused here (no terminal, or the user said no); nothing was sent.  (In the
            # handshake era a -1 comes from the server: its tool failed on our refusal.)
            raise CliError(exc.message, EXIT_ERROR, exc.to_error()) from None
        raise CliError(
            f"the server answered with an error: {exc}", EXIT_ERROR, exc.to_error()
        ) from None
    except CapabilityError as exc:
        raise CliError(str(exc), EXIT_ERROR) from None
    except AuthorizationError as exc:
        raise CliError(f"authorization failed: {exc}", EXIT_AUTH) from None
    except RequestTimeout as exc:
        raise CliError(f"{exc} (--timeout {args.timeout:g})", EXIT_TIMEOUT) from None
    except ConnectionClosed as exc:
        raise CliError(f"the server went away: {exc}", EXIT_UNREACHABLE) from None
    except InvalidResult as exc:  # the server answered, wrongly: its error, as one line
        raise CliError(str(exc), EXIT_ERROR) from None


def _ask_for_logs(client, level: str) -> None:
    """``--log-level``: ask for the server's log messages at ``level`` and above (2026-07-28: the
    ``logLevel`` of each request's ``_meta``; the handshake era: ``logging/setLevel``)."""
    if "logging" not in client.server_capabilities:
        to_stderr("mcp-ref: the server does not declare logging: --log-level has nothing to show")
        return
    client.set_logging_level(level)


# -- the verbs ------------------------------------------------------------------------------------


def _info(client, args) -> int:
    if args.json:
        # The server's own answer, to server/discover (2026-07-28) or to initialize, with protocolVersion
        # the version negotiated in both eras (initialize's answer has it; server/discover's lists them).
        print_json(
            {
                **(client.discover_result or client.initialize_result).raw,
                "protocolVersion": client.protocol_version,
            }
        )
        return EXIT_OK
    # Every string below is the server's: each is shown through mcp_ref.workbench.terminal.safe.
    info = client.server_info
    if info is not None:
        print(
            f"server:       {one_line(info.name)} {one_line(info.version)}"
            + (f" ({one_line(info.title)})" if info.title else "")
        )
    print(f"protocol:     {one_line(client.protocol_version)}")
    if client.era == "modern":
        print(
            f"era:          modern (no session; server/discover lists "
            f"{one_line(', '.join(map(str, client.discover_result.supported_versions)))})"
        )
    else:
        print("era:          handshake (initialize)")
    print(f"capabilities: {one_line(', '.join(sorted(client.server_capabilities))) or '(none)'}")
    for name, value in sorted(client.server_capabilities.items()):
        if value:
            print(f"  {one_line(name)}: {json.dumps(value)}")
    if client.instructions:
        print(f"instructions: {safe(client.instructions)}")
    return EXIT_OK


def _listing(method_all: str, key: str, describe):
    def verb(client, args) -> int:
        items = getattr(client, method_all)()
        if args.json:
            print_json({key: [item.to_wire() for item in items]})
            return EXIT_OK
        for item in items:
            print(one_line(describe(item)))  # names, descriptions, URIs: the server's words
        if not items:
            print(f"(no {key})")
        return EXIT_OK

    return verb


def _call(client, args) -> int:
    if args.tool is None:
        return _name_a_tool(client, args)
    properties: dict | None = None
    if any(_ambiguous(pair.partition("=")[2]) for pair in args.pairs):
        # "123" could be a number or a string: the tool's inputSchema says which (one tools/list).
        properties = next(
            (
                t.input_schema.get("properties", {})
                for t in client.list_tools()
                if t.name == args.tool
            ),
            {},
        )
    # --args, then KEY=VALUE pairs over them
    arguments = {**args.arguments, **parse_pairs(args.pairs, schema=properties)}
    progress = None if args.quiet else Progress(sys.stderr)
    try:
        result = client.call_tool(args.tool, arguments, on_progress=progress)
    finally:
        if progress is not None:
            progress.done()
    if args.json:
        print_json(result.raw)
    else:
        print_content(result.content)
        if result.structured_content is not None and not result.content:
            print_json(result.structured_content)
    if result.is_error:
        if not args.json:
            to_stderr(f"mcp-ref: tool {args.tool} returned an error")
        return EXIT_ERROR
    return EXIT_OK


def _name_a_tool(client, args) -> int:
    """``call TARGET`` without a TOOL: the tools listed (as ``tools`` lists them) and a usage error
    saying to name one."""
    tools = client.list_tools()
    if args.json:
        print_json({"tools": [tool.to_wire() for tool in tools]})
    else:
        for tool in tools:
            print(one_line(describe_tool(tool)))
    if not tools:
        raise CliError("name a tool: this server has none", EXIT_USAGE)
    raise CliError(
        f"name a tool: mcp-ref call TARGET TOOL [KEY=VALUE ...] (the server has {len(tools)}, "
        "listed above)",
        EXIT_USAGE,
    )


def _read(client, args) -> int:
    result = client.read_resource(args.uri)
    if args.json:
        print_json(result.raw)
        return EXIT_OK
    for contents in result.contents:
        if hasattr(contents, "text"):
            text = safe(contents.text)
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
        else:
            print(
                f"[blob {one_line(contents.mime_type or 'application/octet-stream')}, {len(contents.blob) * 3 // 4} "
                f"bytes: use --json for the data]"
            )
    return EXIT_OK


def _prompt(client, args) -> int:
    # --args, then KEY=VALUE pairs over them
    arguments = {**args.arguments, **parse_pairs(args.pairs, coerce=False)}
    result = client.get_prompt(args.name, arguments)
    if args.json:
        print_json(result.raw)
        return EXIT_OK
    for message in result.messages:
        print(f"[{one_line(message.role)}] {safe(describe_content(message.content))}")
    return EXIT_OK


def _check(client, args) -> int:
    from .check import Checker, report, table

    findings = Checker(
        client,
        args.validator,
        call_tools=args.call_tools,
        call_timeout=args.call_timeout,
        answers=args.post_answers,
    ).run()
    outcome = report(findings)
    if args.json:
        print_json(outcome)
    else:
        print(safe(table(findings)))  # findings quote the server
    return EXIT_OK if outcome["ok"] else EXIT_ERROR


_VERBS = {
    "check": _check,
    "info": _info,
    "tools": _listing("list_tools", "tools", describe_tool),
    "resources": _listing(
        "list_resources",
        "resources",
        lambda r: f"{r.uri}  {r.name}" + (f" ({r.mime_type})" if r.mime_type else ""),
    ),
    "templates": _listing(
        "list_resource_templates", "resourceTemplates", lambda t: f"{t.uri_template}  {t.name}"
    ),
    "prompts": _listing("list_prompts", "prompts", describe_prompt),
    "call": _call,
    "read": _read,
    "prompt": _prompt,
}
