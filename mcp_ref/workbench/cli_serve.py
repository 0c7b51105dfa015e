"""Serving from the command line: ``mcp-ref serve-demo`` (the demo) and ``mcp-ref run`` (your own).

Both serve on stdio, or with ``--http HOST:PORT`` over HTTP (Streamable HTTP at ``/mcp`` and the
2024-11-05 HTTP+SSE transport at ``/sse``; port 0 picks a free one), announcing the address in
one line on stderr::

    mcp-ref: serving NAME at http://127.0.0.1:PORT/mcp (Streamable HTTP) and http://127.0.0.1:PORT/sse (HTTP+SSE)

With ``--trace`` every message each connection sends (``-->``) and receives (``<--``) is shown on
stderr.  Loading the user's file is :mod:`mcp_ref.workbench.cli_run`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from dataclasses import dataclass
from typing import Any

from .cli_output import to_stderr
from .cli_verbs import EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE, CliError


def traced(server: Any, tracer: Any) -> Any:
    """``server``, each of its connections traced by ``tracer`` (``--trace``), or as it is."""
    if tracer is not None:
        # What each connection sends (stdio, each HTTP session or request), and on stdio what it reads;
        # over HTTP what it reads is each POST's body, traced by TracedBodies before the app reads it.
        # (a trace given to new_connection itself wins over the partial's)
        server.new_connection = functools.partial(server.new_connection, trace=tracer)
        plain_app = server.wsgi_app
        server.wsgi_app = lambda **options: TracedBodies(plain_app(**options), tracer)
    return server


def http_address(text: str) -> tuple[str, int]:
    """``--http HOST:PORT`` as ``(host, port)`` (an empty host: 127.0.0.1; ``[::1]:8000`` for IPv6)."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise CliError(
            f"--http takes HOST:PORT with a port from 0 to 65535, not {text!r}", EXIT_USAGE
        )
    return host.strip("[]") or "127.0.0.1", int(port)


def _only_with_http(args: Any, *flags: str) -> None:
    """A usage error when one of ``flags`` (set) is given without ``--http``."""
    for flag in flags:
        if getattr(args, flag.lstrip("-").replace("-", "_")):
            raise CliError(f"{flag} goes with --http", EXIT_USAGE)


def announcer(
    what: str,
    args: Any,
    path: str = "/mcp",
    sse_path: str | None = "/sse",
    *,
    host_note: bool = False,
):
    """``on_ready`` for run_http: the line saying where ``what`` (``serving NAME``, ``proxying
    TARGET``) is served; ``host_note``: then a note that, bound beyond this machine, it accepts
    only local Host names."""
    mode = "stateless " if args.stateless else ""

    def announce(httpd) -> None:
        legacy = f" and {httpd.url}{sse_path} (HTTP+SSE)" if sse_path else ""
        to_stderr(f"mcp-ref: {what} at {httpd.url}{path} ({mode}Streamable HTTP){legacy}")
        if host_note:
            to_stderr(
                "mcp-ref: note: requests are accepted only with Host localhost or 127.0.0.1 "
                "(DNS-rebinding protection); add --allowed-host NAME for each name clients reach "
                "this server by"
            )

    return announce


def serve_demo(args: Any, hooks: Any) -> int:
    """``serve-demo``: the demo server on stdio, or over HTTP (``--auth``: as an OAuth protected
    resource, with the demo authorization server on the same port)."""
    from .demo import build_protected_server, build_server

    if args.http is None:
        _only_with_http(args, "--stateless", "--auth")
        traced(build_server(), hooks.tracer).run_stdio()
        return EXIT_OK
    address = http_address(args.http)
    try:
        if args.auth:
            _serve_protected_demo(
                traced(build_protected_server(), hooks.tracer), *address, args.stateless
            )
        else:
            traced(build_server(), hooks.tracer).run_http(
                *address, stateless=args.stateless, on_ready=announcer("serving the demo", args)
            )
    except OSError as exc:  # the port is taken, the address is not ours, ...
        raise CliError(
            f"cannot listen on {args.http}: {exc.strerror or exc}", EXIT_UNREACHABLE
        ) from None
    return EXIT_OK


def run_user_server(args: Any, hooks: Any) -> int:
    """``run SERVER``: load the user's server (:mod:`.cli_run`) and serve it on stdio, or over HTTP
    with the options given (``--stateless``, ``--path``, ``--sse-path``, ``--no-sse``,
    ``--allowed-host``).  A SERVER that cannot be loaded is exit 4 (what its code raised shown
    first, as Python shows it)."""
    from .cli_run import LoadError, load_server, parse_spec

    if args.http is None:
        _only_with_http(args, "--stateless", "--no-sse", "--allowed-host")
        if (args.path, args.sse_path) != ("/mcp", "/sse"):
            raise CliError("--path and --sse-path go with --http", EXIT_USAGE)
    else:
        address = http_address(args.http)
        for flag, path in (("--path", args.path), ("--sse-path", args.sse_path)):
            if not path.startswith("/"):
                raise CliError(f"{flag} must start with /, not {path!r}", EXIT_USAGE)
        if args.path == args.sse_path:
            raise CliError("--path and --sse-path must differ", EXIT_USAGE)
    try:
        server = load_server(parse_spec(args.server), args.server_args)
    except LoadError as exc:
        if exc.details:
            sys.stderr.write(exc.details if exc.details.endswith("\n") else exc.details + "\n")
        raise CliError(str(exc), EXIT_UNREACHABLE) from None
    server = traced(server, hooks.tracer)
    if args.http is None:
        server.run_stdio()
        return EXIT_OK
    options: dict[str, Any] = {"stateless": args.stateless, "path": args.path}
    if args.no_sse:
        options["legacy_sse"] = False
    else:
        options["sse_path"] = args.sse_path
    if args.allowed_host:  # besides the local names allowed by default (DNS-rebinding protection)
        from ..http.origins import LOCAL_HOSTS

        options["allowed_hosts"] = [*LOCAL_HOSTS, *args.allowed_host]
    name = repr(server.name) if server.name else "the server"
    announce = announcer(
        f"serving {name}",
        args,
        args.path,
        None if args.no_sse else args.sse_path,
        host_note=address[0] not in ("127.0.0.1", "localhost", "::1") and not args.allowed_host,
    )
    try:
        server.run_http(*address, on_ready=announce, **options)
    except OSError as exc:
        raise CliError(
            f"cannot listen on {args.http}: {exc.strerror or exc}", EXIT_UNREACHABLE
        ) from None
    return EXIT_OK


@dataclass
class TracedBodies:
    """``--http --trace``: a WSGI middleware handing each POST's body (a JSON-RPC message or a
    batch) to ``trace("<--", body)`` before the app reads it.  Bounded: a body is traced only when its
    Content-Length is given and at most :data:`MAX_TRACED_BODY` (the app's own limit); any other is
    passed on untraced, for the app to read or refuse.  Other attributes are the app's (``close``)."""

    #: The largest body traced (bytes): the app's default ``max_body_size``.
    MAX_TRACED_BODY = 4 * 1024 * 1024

    app: Any
    trace: Any

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
    from .demo import RESOURCE_ENV
    from .demo_auth_server import DEMO_CLIENT_ID, protected_app

    # the URL clients reach, when a proxy or a port mapping stands between (else the server's own)
    resource = os.environ.get(RESOURCE_ENV) or None
    app = protected_app(server, stateless=stateless, resource=resource)
    httpd = WsgiServer((host, port), app)
    to_stderr(
        f"mcp-ref: serving the demo at {httpd.url}/mcp as an OAuth protected resource; its authorization "
        f"server is {httpd.url} (pre-registered public client: {DEMO_CLIENT_ID})"
    )
    # closed on the way out (server_close), as Ctrl-C ends it quietly
    with httpd, contextlib.suppress(KeyboardInterrupt):
        httpd.serve_forever()
