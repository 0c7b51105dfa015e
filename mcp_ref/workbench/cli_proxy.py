"""``mcp-ref proxy TARGET (--http HOST:PORT [--stateless] | --stdio)``: any server, any client.

TARGET is what the other verbs take (a URL, or a server command line in one string).  The proxy
(:mod:`mcp_ref.proxy`) connects to it at once, then serves it on stdio or over HTTP, in both
eras whatever TARGET speaks.  Over HTTP the line ``mcp-ref: proxying TARGET at URL ...`` on
stderr says where (with port 0, the port chosen; TARGET's credentials masked).  The global ``--timeout`` bounds each forwarded
request, ``--connect-timeout`` each connection to TARGET, ``--era`` the era spoken to TARGET,
``--header`` and ``--transport`` an HTTP TARGET; ``--quiet-server`` hides a launched TARGET's
stderr; ``--trace`` shows the messages to and from TARGET on stderr.  The options that make the
command a client of its own (``--root``, ``--sampling-command``, ``--yes``, ``--json``,
``--log-level``) are refused: the proxy's clients answer the target.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConnectionClosed, McpError, RequestTimeout
from .cli_serve import announcer, http_address
from .cli_verbs import (
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    CliError,
    ServerStderr,
    header_options,
    split_command,
)

#: Global options a proxy has no use for (it passes the target's questions to its own clients,
#: and prints nothing on stdout): each refused by name, with its test for "given".
_NOT_FOR_PROXY = {
    "--root": lambda args: bool(args.root),
    "--sampling-command": lambda args: args.sampling_command is not None,
    "--yes": lambda args: args.yes,
    "--json": lambda args: args.json,
    "--log-level": lambda args: args.log_level is not None,
}


def run(args: Any, hooks: Any) -> int:
    """Run ``mcp-ref proxy``: connect to TARGET, then serve until stopped (or stdin ends).
    ``hooks.trace(direction, data)`` sees every message to and from TARGET (``--trace``,
    ``--diagram``)."""
    trace = hooks.trace
    from ..proxy import proxy_server

    for option, given in _NOT_FOR_PROXY.items():
        if given(args):
            raise CliError(
                f"{option} does not apply to proxy: the target's questions go to the proxy's "
                "own clients",
                EXIT_USAGE,
            )
    if args.stateless and not args.http:
        raise CliError("--stateless goes with --http", EXIT_USAGE)
    if args.max_back_connections < 2:
        raise CliError("--max-back-connections must be at least 2", EXIT_USAGE)
    address = http_address(args.http) if args.http else None
    target, options = _target(args)
    from ..inspector.live import shown_target

    # TARGET as messages show it: a URL's userinfo and secret query values, and what reads as a
    # secret in a command line, masked (stderr may reach a log; common rules: no secret in logs)
    shown = shown_target(args.target)
    if trace is not None:
        options["trace"] = trace
    try:
        proxy = proxy_server(
            target, max_back_connections=args.max_back_connections, client_options=options
        )
    except (FileNotFoundError, PermissionError) as exc:
        raise CliError(
            f"cannot launch {shown!r}: {exc.strerror or exc}", EXIT_UNREACHABLE
        ) from None
    except (ConnectionClosed, RequestTimeout, McpError, OSError) as exc:
        raise CliError(f"cannot reach {shown}: {exc}", EXIT_UNREACHABLE) from None
    try:
        if address is None:
            proxy.run_stdio()
            return EXIT_OK
        try:
            proxy.run_http(
                *address, stateless=args.stateless, on_ready=announcer(f"proxying {shown}", args)
            )
        except OSError as exc:  # the port is taken, the address is not ours, ...
            raise CliError(
                f"cannot listen on {args.http}: {exc.strerror or exc}", EXIT_UNREACHABLE
            ) from None
        return EXIT_OK
    finally:
        proxy.close()


def _target(args: Any) -> tuple[Any, dict[str, Any]]:
    """What :func:`~mcp_ref.proxy.proxy_server` connects to, and the back clients' options."""
    options: dict[str, Any] = {
        "timeout": args.timeout,
        "initialize_timeout": args.connect_timeout,
        "era": args.era,
    }
    if args.target.startswith(("http://", "https://")):
        options.update(
            headers=header_options(args.header),
            transport=args.transport,
            connect_timeout=args.connect_timeout,
        )
        return args.target, options
    command = split_command(args.target)
    options["stderr"] = ServerStderr(args.quiet_server)
    return command, options
