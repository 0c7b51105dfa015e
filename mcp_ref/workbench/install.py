"""``mcp-ref install TARGET``: add a server to a desktop client's MCP configuration file.

The file is Claude Desktop's ``claude_desktop_config.json``, whose ``mcpServers`` object maps a
name to how the client launches that server on stdio::

    {"mcpServers": {"weather": {"command": "/usr/bin/python3", "args": ["/home/me/weather.py"],
                                "env": {"API_KEY": "..."}}}}

Where the file is (``--config PATH`` names another; other clients read the same shape):

- macOS: ``~/Library/Application Support/Claude/claude_desktop_config.json``
- Windows: ``%APPDATA%\\Claude\\claude_desktop_config.json``
- Linux and others: ``$XDG_CONFIG_HOME/Claude/claude_desktop_config.json`` (``~/.config`` by default)

What it writes, and what it never does:

- The client launches the server from a working directory of its own, with a short ``PATH``: the
  command is written as an absolute path (found on ``PATH`` as the shell would), and each argument
  naming a file or folder that exists here is made absolute.
- The entry's name is ``--name``, or the server's own name (``serverInfo.name``): then the server
  is launched once, which also shows that it starts.
- Every other entry, and every other key of the file, is kept as it was.  An entry of the same
  name that differs is replaced only with ``--force``; an identical one is left alone.
- Reading the file, changing it and writing it happen under an exclusive lock on ``FILE.lock``
  beside it (:func:`locked`): installs run at once each keep the others' entries.
- The file as it was is copied to ``FILE.bak`` before the new one is written; the new one is
  written to a temporary file beside it and moved into place, so the file is never half written.
- The file holds ``--env`` values (secrets, often): a new one, and a new ``.bak``, is readable by
  its owner only (0600) from the moment it exists; an existing one keeps its mode (never widened).
- A file that is not a JSON object (or whose ``mcpServers`` is not one) is not touched: exit 2;
  nor is one that holds ``NaN``, ``Infinity`` or a number too large for a double (``1e999``),
  which JSON cannot carry (RFC 8259 §6) and which could not be written back as it was.
- ``--print`` prints the entry, as a ``{"mcpServers": {...}}`` object, and writes nothing.
- What is printed, and the file written, show control and bidirectional characters escaped
  (:func:`~mcp_ref.workbench.terminal.safe`; in JSON as ``\\uXXXX``, the same JSON); a server
  whose own name holds one is not installed under it (``--name`` names the entry).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..file_lock import exclusive_lock, lock_path
from .cli_output import one_line, print_json, to_stderr
from .cli_verbs import EXIT_OK, EXIT_USAGE, CliError, split_command, strict_json
from .terminal import safe, safe_json

__all__ = ["config_path", "install", "server_entry", "add_entry", "locked"]

#: The largest configuration file read (bytes); a larger one is refused, untouched.
MAX_CONFIG_SIZE = 4 * 1024 * 1024
#: The mode of a configuration file (and of its backup) this command creates: its owner's only.
NEW_FILE_MODE = 0o600
#: How long an install waits for another's lock on the configuration (seconds), at most.
LOCK_TIMEOUT = 30.0


def config_path(
    platform: str | None = None, env: Mapping[str, str] | None = None, home: Path | None = None
) -> Path:
    """Where Claude Desktop keeps ``claude_desktop_config.json`` on ``platform`` (``sys.platform`` by default;
    ``env``: the environment, ``os.environ`` by default; ``home``: the user's home folder)."""
    platform = platform or sys.platform
    environ: Mapping[str, str] = os.environ if env is None else env
    home = home or Path.home()
    if platform == "darwin":
        base = home / "Library" / "Application Support"
    elif platform == "win32":
        base = Path(environ.get("APPDATA") or home / "AppData" / "Roaming")
    else:
        base = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    return base / "Claude" / "claude_desktop_config.json"


def server_entry(command_line: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The ``mcpServers`` entry that launches ``command_line``: ``command`` (absolute), ``args``
    (those naming an existing file or folder made absolute) and ``env`` (when given)."""
    words = split_command(command_line)
    command = words[0]
    found = shutil.which(command)
    if found is None:
        raise CliError(
            f"cannot install {command!r}: command not found (on PATH or as a path)", EXIT_USAGE
        )
    # Absolute, but symbolic links kept: a virtual environment's python is a link to the base one.
    args = [
        os.path.abspath(word) if not word.startswith("-") and os.path.exists(word) else word
        for word in words[1:]
    ]
    entry: dict[str, Any] = {"command": os.path.abspath(found), "args": args}
    if env:
        entry["env"] = dict(env)
    return entry


def add_entry(config: Any, name: str, entry: dict, *, force: bool) -> tuple[dict, str]:
    """``config`` with ``entry`` as ``mcpServers[name]``, and what happened: ``"added"``,
    ``"replaced"`` (only with ``force``) or ``"unchanged"``.  ``config`` itself is not modified."""
    if not isinstance(config, dict):
        raise CliError("the configuration file is not a JSON object: not touched", EXIT_USAGE)
    servers = config.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise CliError(
            'the configuration file\'s "mcpServers" is not a JSON object: not touched', EXIT_USAGE
        )
    old = servers.get(name)
    if old == entry:
        return config, "unchanged"
    if old is not None and not force:
        raise CliError(
            f"the configuration already has a server named {name!r}, launched otherwise "
            f"({safe(json.dumps(masked(old)))}): --force replaces it, --name NAME adds another",
            EXIT_USAGE,
        )
    return {
        **config,
        "mcpServers": {**servers, name: entry},
    }, "added" if old is None else "replaced"


def install(args, hooks: object = None) -> int:
    """``mcp-ref install``: print (``--print``) or write the entry; the exit code (``hooks``, the
    command's tracing, is not used: nothing is traced)."""
    if args.target.startswith(("http://", "https://")):
        raise CliError(
            "Claude Desktop's configuration file launches servers on stdio: install takes a server "
            "command line, not a URL (add a remote server in the client's own settings)",
            EXIT_USAGE,
        )
    env = {}
    for pair in args.env:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliError(f"--env takes KEY=VALUE, not {pair!r}", EXIT_USAGE)
        env[key] = value
    entry = server_entry(args.target, env)
    name = args.name or _server_name(args, env)
    if args.print_only:
        print_json({"mcpServers": {name: entry}})  # control and bidi characters as \uXXXX
        return EXIT_OK
    path = Path(args.config).expanduser() if args.config else config_path()
    shown = one_line(path)
    with locked(path):  # read, changed and written as one: another install's entry is kept
        config = _read(path)
        updated, what = add_entry(config, name, entry, force=args.force)
        if what == "unchanged":
            to_stderr(
                f"mcp-ref: {one_line(name)} is already in {shown}, as given: nothing to change"
            )
            return EXIT_OK
        backup = _write(path, updated)
    kept = len(updated["mcpServers"]) - 1
    to_stderr(
        f"mcp-ref: {what} the server {one_line(name)} in {shown} ({kept} other server(s) kept"
        + (f"; the previous file is {one_line(backup)}" if backup else "")
        + "); restart the client to load it"
    )
    return EXIT_OK


def _server_name(args, env: dict[str, str]) -> str:
    """The server's own name (``serverInfo.name``), asked by launching it (with ``env``) once."""
    from .cli_verbs import connect

    args.server_env = env or None  # the entry's env, for this launch too
    client = connect(args, None)
    with client:
        name = client.server_info.name if client.server_info is not None else None
    if not isinstance(name, str) or not name.strip():
        raise CliError(
            "the server gave no name (serverInfo.name): name the entry with --name", EXIT_USAGE
        )
    if one_line(name) != name:  # it would show in the desktop client as it pleases (U+202E ...)
        raise CliError(
            f"the server's name (serverInfo.name) {one_line(name)} holds control or "
            "bidirectional characters: name the entry with --name",
            EXIT_USAGE,
        )
    return name


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the exclusive lock of the configuration ``path``: ``FILE.lock`` beside it
    (:func:`~mcp_ref.file_lock.exclusive_lock`).  Another ``mcp-ref install`` waits for it, at most
    :data:`LOCK_TIMEOUT` seconds (then exit 2, nothing written).  Only installs take it: a desktop
    client writing the file itself does not (what it wrote before the install read the file is
    kept; what it writes during those milliseconds may be lost)."""
    lock = lock_path(path)
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(exclusive_lock(path, LOCK_TIMEOUT))
        except TimeoutError:
            raise CliError(
                f"{one_line(lock)} is still locked after {LOCK_TIMEOUT:g} s (another "
                "mcp-ref install is writing the file): nothing written; try again",
                EXIT_USAGE,
            ) from None
        except OSError as exc:
            message = f"cannot lock {one_line(lock)}: {exc.strerror or exc}"
            raise CliError(message, EXIT_USAGE) from None
        yield


def _read(path: Path) -> Any:
    """The configuration in ``path`` (``{}`` when there is no file yet)."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_CONFIG_SIZE + 1)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}", EXIT_USAGE) from None
    if len(data) > MAX_CONFIG_SIZE:
        raise CliError(f"{path} is larger than {MAX_CONFIG_SIZE:,} bytes: not touched", EXIT_USAGE)
    if not data.strip():
        return {}
    try:
        # RFC 8259 §6: no NaN or Infinity, and "1e999" read as inf would be written back as
        # Infinity, making the other entries' file one no client can read.
        return strict_json(data)
    except (ValueError, RecursionError) as exc:
        raise CliError(
            f"{path} is not valid JSON ({exc}): not touched; fix it or name another with --config",
            EXIT_USAGE,
        ) from None


def _write(path: Path, config: dict) -> Path | None:
    """Write ``config`` to ``path``: the old file copied to ``path.bak`` first (returned; None when
    there was none), each written beside its place and moved into it (:func:`_replace`).  A new
    file is 0600 from its creation (it holds ``--env`` secrets); one that existed keeps its mode,
    as does its copy."""
    text = safe_json(json.dumps(config, indent=2, ensure_ascii=False, allow_nan=False)) + "\n"
    backup = None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        mode = os.stat(path).st_mode & 0o7777 if path.exists() else None
        if mode is not None:
            backup = path.with_name(path.name + ".bak")
            _replace(backup, path.read_bytes(), mode)
        _replace(path, text.encode("utf-8"), mode)
    except OSError as exc:
        raise CliError(
            f"cannot write {one_line(path)}: {exc.strerror or exc}", EXIT_USAGE
        ) from None
    return backup


def _replace(path: Path, data: bytes, mode: int | None) -> None:
    """Put ``data`` in ``path`` whole: written to a new file beside it (``tempfile.mkstemp``: a name
    of its own, created 0600, readable by its owner only while it is written), given ``mode``
    (None: :data:`NEW_FILE_MODE`), then moved into place (a link at ``path`` is replaced, never followed)."""
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
        os.chmod(temporary, NEW_FILE_MODE if mode is None else mode)
        os.replace(temporary, path)
    except OSError:
        os.unlink(temporary)
        raise


def masked(entry: Any) -> Any:
    """A configuration entry as a message may show it: the values of its ``env`` and ``headers``
    (API keys, tokens) as ``***``."""
    if not isinstance(entry, dict):
        return entry
    shown = dict(entry)
    for secret in ("env", "headers"):
        if isinstance(shown.get(secret), dict):
            shown[secret] = {name: "***" for name in shown[secret]}
    return shown
