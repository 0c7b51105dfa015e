"""The ``mcp-ref`` command: a scriptable MCP client, and the demo.

::

    mcp-ref [--json] [--trace] [--timeout SECONDS] VERB ...

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
Exit codes: 0 ok, 1 usage, 4 cannot launch or reach the server, 5 the tool
returned ``isError`` or the server answered with a JSON-RPC error.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any, Sequence

EXIT_OK, EXIT_USAGE, EXIT_UNREACHABLE, EXIT_ERROR = 0, 1, 4, 5


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors exit 1, as documented
        self.print_usage(sys.stderr)
        print(f"mcp-ref: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


class CliError(Exception):
    """A failure to report as one line on stderr with an exit code."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for tests and docs)."""
    from . import __version__

    parser = _Parser(prog="mcp-ref", description="A synchronous MCP client, and a demo of the whole protocol.")
    parser.add_argument("--version", action="version", version=f"mcp-ref {__version__}")
    parser.add_argument("--json", action="store_true", help="print the raw result as JSON")
    parser.add_argument("--trace", action="store_true", help="print every JSON-RPC message on stderr (--> sent, <-- received)")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS", help="per-request timeout (default 60)")
    parser.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                        help="an HTTP header for URL targets (repeatable)")
    parser.add_argument("--transport", choices=("auto", "streamable", "sse"), default="auto",
                        help="for URL targets: Streamable HTTP with fallback (auto), or one of them")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=_Parser)
    verbs.required = True

    def target(sub):
        sub.add_argument("target", metavar="TARGET", help='server command line ("python server.py") or URL')
        return sub

    target(verbs.add_parser("info", help="server info, negotiated version, capabilities, instructions"))
    for listing in ("tools", "resources", "templates", "prompts"):
        target(verbs.add_parser(listing, help=f"list {listing}"))
    call = target(verbs.add_parser("call", help="call a tool"))
    call.add_argument("tool", metavar="TOOL")
    call.add_argument("pairs", nargs="*", metavar="KEY=VALUE", help="arguments; values are JSON if they parse (count=1 is a number)")
    call.add_argument("--args", metavar="JSON", help="arguments as one JSON object (KEY=VALUE pairs override)")
    read = target(verbs.add_parser("read", help="read a resource"))
    read.add_argument("uri", metavar="URI")
    prompt = target(verbs.add_parser("prompt", help="get a prompt"))
    prompt.add_argument("name", metavar="NAME")
    prompt.add_argument("pairs", nargs="*", metavar="KEY=VALUE")
    verbs.add_parser("demo", help="walk through every MCP feature against the bundled demo server")
    serve = verbs.add_parser("serve-demo", help="run the demo server on stdio (or --http)")
    serve.add_argument("--http", metavar="HOST:PORT", help="serve Streamable HTTP at /mcp and HTTP+SSE at /sse instead")
    serve.add_argument("--stateless", action="store_true", help="with --http: no sessions (any worker answers any request)")
    return parser


def parse_pairs(pairs: Sequence[str], *, coerce: bool = True) -> dict[str, Any]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}``: values that parse as JSON are JSON."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliError(f"expected KEY=VALUE, got {pair!r}", EXIT_USAGE)
        if coerce:
            try:
                out[key] = json.loads(value)
            except ValueError:
                out[key] = value
        else:
            out[key] = value
    return out


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
    trace = _trace_to_stderr if args.trace else None
    try:
        if args.verb == "serve-demo":
            return _serve_demo(args)
        if args.verb == "demo":
            return _demo(args, trace)
        return _run_verb(args, trace)
    except CliError as exc:
        print(f"mcp-ref: {exc}", file=sys.stderr)
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of our output has gone (``| head -1``): what it wanted it has; stop quietly.
        # stdout is pointed at /dev/null so that the interpreter's final flush does not fail again.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK


def _demo(args, trace) -> int:
    from .errors import ConnectionClosed, McpError, RequestTimeout
    from .walkthrough import run

    try:
        return run(trace=trace, timeout=args.timeout)
    except (ConnectionClosed, RequestTimeout, McpError, OSError) as exc:
        raise CliError(f"the demo could not run its server: {exc}", EXIT_UNREACHABLE) from None


def _configure_logging(verbose: bool) -> None:
    import logging

    # Errors reach the user as one line from main(); library warnings only with --trace.
    level = logging.WARNING if verbose else logging.ERROR
    logging.basicConfig(level=level, format="mcp-ref: %(levelname)s: %(message)s", stream=sys.stderr)


def _trace_to_stderr(direction: str, data: bytes) -> None:
    sys.stderr.write(f"{direction} {data.decode('utf-8', 'replace')}\n")
    sys.stderr.flush()


def _connect(args, trace):
    from .client import Client
    from .errors import ConnectionClosed, McpError, RequestTimeout, ServerUnreachable, UnsupportedProtocolVersion

    if args.target.startswith(("http://", "https://")):
        headers = {}
        for header in args.header:
            name, sep, value = header.partition(":")
            if not sep or not name.strip():
                raise CliError(f"--header must be 'NAME: VALUE', not {header!r}", EXIT_USAGE)
            headers[name.strip()] = value.strip()
        try:
            return Client.http(args.target, headers=headers, transport=args.transport, timeout=args.timeout, trace=trace)
        except ServerUnreachable as exc:
            raise CliError(str(exc), EXIT_UNREACHABLE) from None
        except (ConnectionClosed, RequestTimeout, OSError) as exc:
            raise CliError(f"cannot reach the server {args.target}: {exc}", EXIT_UNREACHABLE) from None
        except (McpError, UnsupportedProtocolVersion) as exc:
            raise CliError(f"cannot initialize with {args.target}: {exc}", EXIT_UNREACHABLE) from None
    command = shlex.split(args.target)
    if not command:
        raise CliError("TARGET is empty", EXIT_USAGE)
    try:
        return Client.stdio(command, timeout=args.timeout, trace=trace)
    except FileNotFoundError:
        raise CliError(f"cannot launch {command[0]!r}: command not found", EXIT_UNREACHABLE) from None
    except PermissionError:
        raise CliError(f"cannot launch {command[0]!r}: permission denied", EXIT_UNREACHABLE) from None
    except (ConnectionClosed, RequestTimeout, OSError) as exc:
        raise CliError(f"cannot reach the server {args.target!r}: {exc}", EXIT_UNREACHABLE) from None
    except (McpError, UnsupportedProtocolVersion) as exc:
        raise CliError(f"the server refused to initialize: {exc}", EXIT_UNREACHABLE) from None


def _run_verb(args, trace) -> int:
    from .errors import CapabilityError, ConnectionClosed, McpError, RequestTimeout

    client = _connect(args, trace)
    try:
        with client:
            return _VERBS[args.verb](client, args)
    except McpError as exc:
        raise CliError(f"the server answered with an error: {exc}", EXIT_ERROR) from None
    except CapabilityError as exc:
        raise CliError(str(exc), EXIT_ERROR) from None
    except RequestTimeout as exc:
        raise CliError(str(exc), EXIT_UNREACHABLE) from None
    except ConnectionClosed as exc:
        raise CliError(f"the server went away: {exc}", EXIT_UNREACHABLE) from None


def _serve_demo(args) -> int:
    from .demo import build_server

    if args.http is None:
        if args.stateless:
            raise CliError("--stateless goes with --http", EXIT_USAGE)
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
        build_server().run_http(host.strip("[]") or "127.0.0.1", int(port), stateless=args.stateless, on_ready=announce)
    except OSError as exc:  # the port is taken, the address is not ours, ...
        raise CliError(f"cannot listen on {args.http}: {exc.strerror or exc}", EXIT_UNREACHABLE) from None
    return EXIT_OK


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _info(client, args) -> int:
    if args.json:
        _print_json(client.initialize_result.raw)
        return EXIT_OK
    info = client.server_info
    print(f"server:       {info.name} {info.version}" + (f" ({info.title})" if info.title else ""))
    print(f"protocol:     {client.protocol_version}")
    print(f"capabilities: {', '.join(sorted(client.server_capabilities)) or '(none)'}")
    for name, value in sorted(client.server_capabilities.items()):
        if value:
            print(f"  {name}: {json.dumps(value)}")
    if client.instructions:
        print(f"instructions: {client.instructions}")
    return EXIT_OK


def _listing(method_all: str, key: str, describe):
    def verb(client, args) -> int:
        items = getattr(client, method_all)()
        if args.json:
            _print_json({key: [item.to_wire() for item in items]})
            return EXIT_OK
        for item in items:
            print(describe(item))
        if not items:
            print(f"(no {key})")
        return EXIT_OK

    return verb


def _describe_tool(tool) -> str:
    params = ", ".join(tool.input_schema.get("properties", {}))
    line = f"{tool.name}({params})"
    return f"{line}  {tool.description.splitlines()[0]}" if tool.description else line


def _describe_prompt(prompt) -> str:
    args = ", ".join(a.name + ("" if a.required else "?") for a in prompt.arguments or [])
    line = f"{prompt.name}({args})"
    return f"{line}  {prompt.description}" if prompt.description else line


def _print_content(blocks: list) -> None:
    for block in blocks:
        print(describe_content(block))


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
    arguments.update(parse_pairs(args.pairs))
    result = client.call_tool(args.tool, arguments)
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
            sys.stdout.write(contents.text if contents.text.endswith("\n") else contents.text + "\n")
        else:
            print(f"[blob {contents.mime_type or 'application/octet-stream'}, {len(contents.blob) * 3 // 4} bytes: use --json for the data]")
    return EXIT_OK


def _prompt(client, args) -> int:
    result = client.get_prompt(args.name, parse_pairs(args.pairs, coerce=False))
    if args.json:
        _print_json(result.raw)
        return EXIT_OK
    for message in result.messages:
        print(f"[{message.role}] {describe_content(message.content)}")
    return EXIT_OK


_VERBS = {
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
