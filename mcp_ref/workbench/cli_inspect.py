"""The ``inspect`` and ``dev`` verbs: the inspector's page for a server, served on 127.0.0.1.

``mcp-ref inspect TARGET [--port N]`` connects to TARGET (a URL or a command line, with the
options every verb takes: ``--era``, ``--transport``, ``--header``, ``--timeout``, OAuth login),
serves the page (:mod:`mcp_ref.inspector.app`), prints its address on stderr as one line
(``mcp-ref inspector: http://127.0.0.1:PORT/TOKEN/``), opens it in the browser unless
``--no-browser`` (through a file of this user's: :func:`open_in_browser`), and serves until Ctrl-C,
SIGTERM or SIGHUP (exit 0; the client and the launched server are closed).
``mcp-ref dev SERVER[:OBJ] [-- ARGS]`` is ``inspect`` of ``python -m mcp_ref run SERVER -- ARGS``:
your own server's file, served and inspected in one step.

The page is served before the first connect ends, and whatever that connect says (a server that
cannot be launched, a refused login) is shown on the page, which may connect again.
"""

from __future__ import annotations

import os
import shlex
import sys
import threading
from pathlib import Path
from typing import Any

from .cli_output import to_stderr
from .cli_verbs import EXIT_OK, EXIT_UNREACHABLE, CliError, combine_hooks


def inspect(args: Any, hooks: Any) -> int:
    """``mcp-ref inspect TARGET``: serve the inspector until Ctrl-C, SIGTERM or SIGHUP."""
    from ..inspector.app import serve
    from ..inspector.conversation import Conversation
    from ..inspector.live import InspectedServer, shown_target

    conversation = Conversation(
        target=shown_target(args.target), http=args.target.startswith(("http://", "https://"))
    )
    inspected = InspectedServer(
        args, conversation, trace=combine_hooks(conversation.trace, hooks.trace)
    )
    try:
        served = serve(inspected, conversation, port=args.port)
    except OSError as exc:
        raise CliError(
            f"cannot serve the inspector on 127.0.0.1:{args.port}: {exc.strerror or exc}",
            EXIT_UNREACHABLE,
        ) from None
    opener: Path | None = None
    try:
        to_stderr(f"mcp-ref inspector: {served.url}")
        if not args.no_browser:
            opener = open_in_browser(served.url)
        threading.Thread(target=inspected.connect, name="inspector-connect", daemon=True).start()
        forever = threading.Event()
        while not forever.wait(1.0):  # until Ctrl-C (a timed wait: the signal is seen at once)
            pass
    except KeyboardInterrupt:
        pass
    finally:  # a second Ctrl-C or `kill` cuts no closing short (cli.StopSignals)
        served.close()
        inspected.close()
        if opener is not None:
            opener.unlink(missing_ok=True)
    return EXIT_OK


def open_in_browser(url: str) -> Path:
    """Open ``url`` in the browser through a page that redirects to it, written to a file only this
    user may read; the file's path, to remove when done.

    A browser is started with the address on its command line, which every user of the machine
    sees in the process list: the address holds the page's token, so the command line names the
    file instead (as Jupyter does)."""
    import html
    import tempfile
    import webbrowser

    handle, name = tempfile.mkstemp(prefix="mcp-ref-inspector-", suffix=".html")  # mode 0600
    shown = html.escape(url, quote=True)
    with os.fdopen(handle, "w", encoding="utf-8") as page:
        page.write(
            '<!DOCTYPE html>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="refresh" content="0;url={shown}">\n'
            f'<title>mcp-ref inspector</title>\n<p><a href="{shown}">mcp-ref inspector</a></p>\n'
        )
    path = Path(name)
    webbrowser.open(path.as_uri())
    return path


def dev(args: Any, hooks: Any) -> int:
    """``mcp-ref dev SERVER[:OBJ] [-- ARGS]``: inspect ``python -m mcp_ref run SERVER -- ARGS``."""
    command = [sys.executable, "-m", "mcp_ref", "run", args.server]
    if args.server_args:
        command += ["--", *args.server_args]
    args.target = shlex.join(command)
    return inspect(args, hooks)
