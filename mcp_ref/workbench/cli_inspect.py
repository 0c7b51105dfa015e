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
    stop_signals = StopSignals()
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
    finally:
        stop_signals.hold()  # a second Ctrl-C or `kill` cuts no closing short
        try:
            served.close()
            inspected.close()
            if opener is not None:
                opener.unlink(missing_ok=True)
        finally:
            stop_signals.restore()
    return EXIT_OK


class StopSignals:
    """SIGTERM (``kill PID``) and SIGHUP (the terminal closed) stop the inspector as Ctrl-C does,
    raising ``KeyboardInterrupt`` in the main thread, so that the client, a launched server and
    the output check's child are closed.

    The first of them (or Ctrl-C) makes all three do nothing from then on (:meth:`hold`), so the
    closing runs to its end: a second signal (Ctrl-C pressed twice, ``kill`` sent again, a
    terminal closing after a ``kill``) raised ``KeyboardInterrupt`` in the middle of it and left
    the launched server running.  :meth:`restore` puts back the handlers each had before.  Off
    the main thread (no signal handler can be set there): nothing changes."""

    def __init__(self) -> None:
        import signal

        self._signal = signal
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
                self._signal.signal(getattr(self._signal, name), handler)

    def _set(self, name: str, handler: Any) -> None:
        number = getattr(self._signal, name, None)
        if number is None:  # no such signal here (SIGHUP on Windows)
            return
        previous = self._signal.signal(number, handler)
        self._before.setdefault(name, previous)


def _do_nothing(signal_number: int, frame: Any) -> None:
    """A stop signal's handler while the inspector closes (:meth:`StopSignals.hold`)."""


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
