"""``mcp-ref run SERVER``: load the user's own file (or module) and find the Server in it.

SERVER is ``path/to/server.py[:OBJ]`` or a module path ``pkg.mod[:OBJ]``.  A file is loaded the
way ``python server.py`` runs it, with one difference: its directory is first on ``sys.path``
and ``sys.argv`` is ``[file, *ARGS]`` (the words after ``--``), but its ``__name__`` is the
file's stem, not ``"__main__"``, so that its own ``if __name__ == "__main__": server.run()``
does not fire (``mcp-ref run`` serves it, with the transport the command line asks for).  A
module is imported as ``python -m`` finds it: the working directory first on ``sys.path``.

OBJ names the server (an attribute, dotted for one inside another: ``app.server``), or a
function or class called with no arguments that returns one (a factory).  Without OBJ the
module's ``server``, ``mcp`` or ``app`` that is a :class:`~mcp_ref.server.Server` is taken, in
that order, else the only Server among its globals.  Anything else is a :class:`LoadError`
saying what was found.  (The serving itself is :mod:`mcp_ref.workbench.cli_serve`.)
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The names looked for, in this order, when SERVER names no object (FastMCP's files use them).
CONVENTIONAL_NAMES = ("server", "mcp", "app")
#: The most names a "found nothing" message lists (the rest counted).
MAX_NAMES_SHOWN = 12


class LoadError(Exception):
    """SERVER cannot be loaded or holds no Server: the message says why, in one line.

    ``details`` is what the user's own code raised, formatted (its traceback, our frames left
    out), or empty: shown before the one line, as ``python server.py`` would show it.
    """

    def __init__(self, message: str, details: str = ""):
        super().__init__(message)
        self.details = details


@dataclass
class ServerSpec:
    """SERVER as written: a file (``path``) or a module (``module``), and the object (``attribute``)."""

    text: str
    path: Path | None
    module: str | None
    attribute: str | None

    @property
    def shown(self) -> str:
        """The file or module, as the messages name it."""
        return str(self.path) if self.path is not None else str(self.module)


def parse_spec(text: str) -> ServerSpec:
    """``server.py``, ``dir/server.py:build``, ``pkg.mod:app`` as a :class:`ServerSpec`.

    A ``:OBJ`` suffix is taken when what follows the last colon is a dotted name (so a Windows
    path ``C:\\srv\\server.py`` keeps its drive).  The rest is a file when it ends in ``.py``, holds a
    path separator or names an existing file; otherwise a module path.  LoadError when neither.
    """
    location, attribute = text, None
    head, sep, tail = text.rpartition(":")
    if sep and head and _dotted_name(tail):
        location, attribute = head, tail
    elif sep and not tail:
        raise LoadError(f"{text!r}: name the object after the colon (server.py:server), or drop it")
    if not location:
        raise LoadError("SERVER is empty: name a file (server.py) or a module (pkg.server)")
    looks_like_a_file = (
        location.endswith(".py")
        or os.sep in location
        or "/" in location
        or Path(location).is_file()
    )
    if looks_like_a_file:
        return ServerSpec(text, Path(location), None, attribute)
    if not _dotted_name(location):
        raise LoadError(
            f"{location!r} is neither a Python file (server.py) nor a module path (pkg.server)"
        )
    return ServerSpec(text, None, location, attribute)


def _dotted_name(text: str) -> bool:
    """True for ``name`` or ``name.other`` (each part a Python identifier)."""
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def load_server(spec: ServerSpec, server_args: Sequence[str] = ()) -> Any:
    """Import SERVER and return the :class:`~mcp_ref.server.Server` it names or holds.

    What the module prints to stdout while it loads goes to stderr (stdout may be the protocol's:
    ``mcp-ref run`` on stdio).  LoadError for a missing file or module, code that raises while
    it loads (``details``: its traceback), and no Server (or several, and no OBJ to choose).
    """
    module = _import(spec, server_args)
    if spec.attribute is not None:
        return _named(module, spec)
    return _found(module, spec)


def _import(spec: ServerSpec, server_args: Sequence[str]) -> Any:
    """The module of ``spec``, loaded as the module docstring says."""
    if spec.path is not None:
        path = spec.path.resolve()
        if not path.is_file():
            why = "is a directory" if path.is_dir() else "does not exist"
            raise LoadError(f"cannot load {spec.path}: the file {why}")
        # its stem, as an import would name it; a name already taken (json.py, mcp.py with the
        # SDK loaded) is left to what holds it, and the file gets one of its own
        name = path.stem
        if not name.isidentifier() or name in sys.modules:
            name = f"mcp_ref_run_{name}" if name.isidentifier() else "mcp_ref_run_server"
        where = str(path.parent)
        argv = [str(spec.path), *server_args]
    else:
        name, where, argv = str(spec.module), os.getcwd(), [str(spec.module), *server_args]
        if where in sys.path:  # already importable: no second entry
            where = ""
    # 2025-11-25 basic/transports §stdio: "The server **MUST NOT** write anything to its `stdout`
    # that is not a valid MCP message": what the module prints while it loads goes to stderr.
    with _as_python_would(where, argv), contextlib.redirect_stdout(sys.stderr):
        try:
            if spec.path is not None:
                return _exec_file(name, spec.path.resolve())
            return importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if spec.module is not None and exc.name and spec.module.startswith(exc.name):
                raise LoadError(
                    f"cannot import {spec.module}: no module named {exc.name!r} (from the "
                    f"working directory {os.getcwd()}; a file is named with its .py)"
                ) from None
            raise LoadError(_raised(spec, exc), _user_traceback(exc)) from None
        except SyntaxError as exc:
            raise LoadError(
                _raised(spec, exc), "".join(traceback.format_exception_only(exc))
            ) from None
        except (Exception, SystemExit) as exc:  # the user's code: anything at all
            raise LoadError(_raised(spec, exc), _user_traceback(exc)) from None


def _exec_file(name: str, path: Path) -> Any:
    """Run the file ``path`` as the module ``name`` (in ``sys.modules`` while it runs, as an
    import puts it: its own ``from NAME import ...`` and pickling find it)."""
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise LoadError(f"cannot load {path}: not a Python source file")
    module = importlib.util.module_from_spec(module_spec)
    replaced = sys.modules.get(name)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        if replaced is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = replaced
        raise
    return module


@contextlib.contextmanager
def _as_python_would(where: str, argv: list[str]) -> Iterator[None]:
    """``where`` first on ``sys.path`` (kept after: the server imports its own modules as it runs)
    and ``sys.argv`` set to ``argv`` while the module loads (put back after)."""
    if where and where not in sys.path:
        sys.path.insert(0, where)
    saved = sys.argv
    sys.argv = argv
    try:
        yield
    finally:
        sys.argv = saved


def _raised(spec: ServerSpec, exc: BaseException) -> str:
    """The one line for code that raised while loading."""
    if isinstance(exc, SystemExit):
        return f"{spec.shown} called sys.exit({exc.code!r}) while loading; no server to run"
    said = str(exc).splitlines()[0] if str(exc) else ""
    return f"{spec.shown} raised {type(exc).__name__}{': ' + said if said else ''} while loading"


def _user_traceback(exc: BaseException) -> str:
    """``exc``'s traceback, the frames of the import machinery and of this module left out."""
    if isinstance(exc, SystemExit):
        return ""
    frames = [
        frame
        for frame in traceback.extract_tb(exc.__traceback__)
        if "importlib" not in frame.filename and frame.filename != __file__
    ]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames)]
    return "".join(lines + traceback.format_exception_only(exc))


def _is_server(value: Any) -> bool:
    from ..server import Server

    return isinstance(value, Server)


def _named(module: Any, spec: ServerSpec) -> Any:
    """``:OBJ``: the attribute, or what calling it returns."""
    value = module
    for part in str(spec.attribute).split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise LoadError(
                f"{spec.shown} has no {spec.attribute!r}; {_inventory(module)}"
            ) from None
    if _is_server(value):
        return value
    if not callable(value):
        raise LoadError(
            f"{spec.shown}:{spec.attribute} is a {type(value).__name__}, not a mcp_ref Server "
            "(nor a function returning one)"
        )
    try:
        made = value()
    except Exception as exc:
        raise LoadError(
            f"{spec.shown}:{spec.attribute}() raised {type(exc).__name__}: {exc}",
            _user_traceback(exc),
        ) from None
    if not _is_server(made):
        raise LoadError(
            f"{spec.shown}:{spec.attribute}() returned a {type(made).__name__}, not a mcp_ref Server"
        )
    return made


def _found(module: Any, spec: ServerSpec) -> Any:
    """No OBJ: the conventional names first, else the only Server in the module."""
    for name in CONVENTIONAL_NAMES:
        if _is_server(getattr(module, name, None)):
            return getattr(module, name)
    servers = [name for name, value in vars(module).items() if _is_server(value)]
    if len(servers) == 1:
        return getattr(module, servers[0])
    if servers:
        raise LoadError(
            f"{spec.shown} holds {len(servers)} Servers ({', '.join(servers)}): name one, "
            f"e.g. {spec.text}:{servers[0]}"
        )
    raise LoadError(
        f"{spec.shown} holds no mcp_ref Server ({_inventory(module)}); name a factory with "
        f"{spec.text}:FUNCTION, or make one at module level: server = Server(...)"
    )


def _defined_in(value: Any, module: Any) -> bool:
    """False for what ``module`` imported (a module, a function or class of another module)."""
    if isinstance(value, type(sys)):
        return False
    if inspect.isfunction(value) or inspect.isclass(value):
        return value.__module__ == module.__name__
    return True


def _inventory(module: Any) -> str:
    """What the module defines, for a message: its public names and their kinds."""
    own = [
        f"{name} ({type(value).__name__})"
        for name, value in vars(module).items()
        if not name.startswith("_") and _defined_in(value, module)
    ]
    if not own:
        return "it defines nothing public"
    shown = own[:MAX_NAMES_SHOWN]
    more = f" and {len(own) - len(shown)} more" if len(own) > len(shown) else ""
    return "it defines " + ", ".join(shown) + more
