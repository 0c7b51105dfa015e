"""The package's shape: no import circle among mcp_ref's modules, no module reading another
module's private (underscored) names, the transport contract probed nowhere, and a cheap import.
It also holds the two measures the budgets of tests/project/test_layers.py count in: ``code_tokens`` (a
module's size, whatever its layout) and ``extension_mentions`` (where the code speaks of an extra).

Each checker is also run on a small package written here with the defect, so a checker that
cannot fail would fail its own test.
"""

from __future__ import annotations

import ast
import functools
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "mcp_ref"

#: Underscored names that are public API of the standard library (namedtuple's, os._exit ...).
STDLIB_PUBLIC = {"_exit", "_getframe", "_replace", "_asdict", "_fields", "_make"}

#: The token types that are not code: comments, strings (docstrings included) and layout.
NOT_CODE = frozenset(
    {
        tokenize.COMMENT,
        tokenize.STRING,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
)

#: The extensions, as issue 33 names them: policy, rate limits, tasks, approval, Redis, the bus,
#: OAuth, WSGI.  Matched (``search``) against each name token (``policy``, ``RateLimit``,
#: ``task_store``, ``RedisBus``, ``_bus``, ``WsgiServer`` ...) and each import target written as a
#: string (``"extras.ratelimit"``, ``"mcp_ref.oauth.client"``).  Case-insensitive but for the bus,
#: which must stand as a word (``bus``, ``_bus``, ``SharedBus``; not ``business`` or ``nimbus``).
EXTENSION_WORDS = re.compile(
    r"(?i:polic(?:y|ies)|rate_?limit|task|approv|redis|oauth|wsgi)|(?:(?:^|_)bus|Bus)(?![a-z])"
)

#: A string that is an import target: a dotted module path, maybe relative (``".extras.tasks"``).
IMPORT_TARGET = re.compile(r"\.*\w+(?:\.\w+)+")


def module_name(root: Path, path: Path) -> str:
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package at ``root``: dotted name -> file."""
    return {module_name(root, path): path for path in sorted(root.rglob("*.py"))}


@functools.cache
def syntax_tree(path: Path) -> ast.Module:
    """The parsed source of a module, parsed once per process (the checkers here each walk the
    whole package; parsing it is most of their cost).  Read-only: the checkers never change it."""
    return ast.parse(path.read_text())


def code_tokens(text: str) -> int:
    """The code tokens of a module's source: its Python tokens less comments, strings (docstrings
    included) and layout (NL, NEWLINE, INDENT, DEDENT, ENDMARKER).  Unlike lines, the count does not
    change when ``ruff format`` lays the code out again, so the budgets count in it."""
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return sum(1 for token in tokens if token.type not in NOT_CODE)


def string_value(literal: str) -> str:
    """The value of a plain string literal's token; ``""`` for an f-string or bytes."""
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return ""
    return value if isinstance(value, str) else ""


def extension_mentions(text: str) -> int:
    """How many times a module's source names an extension: each name token matching
    ``EXTENSION_WORDS``, and each string that is an import target (``IMPORT_TARGET``) matching it."""
    count = 0
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.NAME:
            count += bool(EXTENSION_WORDS.search(token.string))
        elif token.type == tokenize.STRING and IMPORT_TARGET.fullmatch(string_value(token.string)):
            count += bool(EXTENSION_WORDS.search(token.string))
    return count


def _type_checking_block(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _imports(tree: ast.AST):
    """Every import node, skipping ``if TYPE_CHECKING:`` blocks (they never run)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if _type_checking_block(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the package's modules it imports (at module level or inside functions)."""
    known = modules(root)
    graph: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        for node in _imports(syntax_tree(path)):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                # "from pkg import sub" imports the submodule; "from mod import name" the module.
                targets = [
                    f"{stem}.{alias.name}" if f"{stem}.{alias.name}" in known else stem
                    for alias in node.names
                ]
            for target in targets:
                while target and target not in known:
                    target = target.rpartition(".")[0]  # "import a.b.c" of a non-module: its module
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph`` (each as a path that returns to its start)."""
    found, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                found.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def private_reads(root: Path) -> list[str]:
    """Reads of another module's underscored names: ``x._name`` where this module defines no
    ``_name`` (``self._name`` / ``cls._name`` are always the module's own), and ``from m import _name``."""
    problems = []
    for name, path in modules(root).items():
        tree = syntax_tree(path)
        own = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                own.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                own.add(node.id)
            elif isinstance(node, ast.arg):
                own.add(node.arg)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                own.add(node.target.id)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    continue
                if node.attr not in own and node.attr not in STDLIB_PUBLIC:
                    problems.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        problems.append(
                            f"{name}:{node.lineno}: from {'.' * node.level}{node.module or ''} import {alias.name}"
                        )
    return problems


# -- the package --------------------------------------------------------------------------------


@pytest.mark.slow
def test_no_import_circle():
    graph = import_graph(PACKAGE)
    assert (
        "mcp_ref.server.connection" in graph["mcp_ref.server.server"]
    )  # the graph is really built
    assert cycles(graph) == []


@pytest.mark.slow
def test_no_module_reads_another_modules_private_names():
    assert private_reads(PACKAGE) == []


@pytest.mark.slow
def test_the_transport_contract_is_never_probed():
    """Every hook is declared on session.Transport: nothing looks one up by name, except the
    HTTP adapters' one optional ``http_hooks`` (see session.py Transport)."""
    offenders = []
    for name, path in modules(PACKAGE).items():
        for node in ast.walk(syntax_tree(path)):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
            ):
                target = ast.unparse(node.args[0]) if node.args else ""
                attribute = (
                    node.args[1].value
                    if len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                    else None
                )
                if "transport" in target and attribute != "http_hooks":
                    offenders.append(f"{name}:{node.lineno}: {ast.unparse(node)}")
    assert offenders == []


def test_every_transport_derives_from_the_base_class():
    from mcp_ref.http.client import HttpClientTransport
    from mcp_ref.http.server import HttpSession
    from mcp_ref.memory import MemoryTransport
    from mcp_ref.session import Transport
    from mcp_ref.stdio import StreamTransport, SubprocessTransport

    for cls in (
        StreamTransport,
        SubprocessTransport,
        HttpClientTransport,
        HttpSession,
        MemoryTransport,
    ):
        assert issubclass(cls, Transport), cls


def test_import_mcp_ref_loads_no_submodule_or_heavy_dependency():
    code = (
        "import sys, mcp_ref; "
        "print(sorted(m for m in sys.modules if m.startswith('mcp_ref.') or m in "
        "('jsonschema', 'requests', 'http.server', 'sseclient')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True
    )
    assert out.stdout.strip() == "[]"


def test_the_benchmark_is_not_part_of_the_package():
    assert not (PACKAGE / "bench.py").exists()


# -- the checkers can fail ------------------------------------------------------------------------


def write_package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_circle_is_found_even_through_a_function_level_import(tmp_path):
    root = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from . import b\n",
            "sub/__init__.py": "from .c import thing\n",
            "sub/c.py": "def thing():\n    from ..a import b\n    return b\n",
            "b.py": "from .sub import c\n",
        },
    )
    assert cycles(import_graph(root)) == [["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]]


def test_a_type_checking_import_is_no_circle(tmp_path):
    root = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from . import b\n",
            "b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n",
        },
    )
    assert cycles(import_graph(root)) == []


def test_a_private_read_across_modules_is_found(tmp_path):
    root = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "class A:\n    def __init__(self):\n        self._items = []\n",
            "b.py": "from .a import A\nfrom .a import _hidden\n\ndef peek(a):\n    return a._items\n",
            "c.py": "class C:\n    def __init__(self, other):\n        self._items = other._items\n",  # its own name
        },
    )
    assert private_reads(root) == ["pkg.b:2: from .a import _hidden", "pkg.b:5: a._items"]


@pytest.mark.parametrize("role", ["server", "client"])
def test_the_lifecycle_table_has_a_row_for_every_phase_of_each_role(role):
    from mcp_ref import lifecycle

    phases = {phase for (r, phase) in lifecycle.RULES if r == role}
    reachable = {lifecycle.Phase.AWAITING_INITIALIZE} | {
        after for (r, _, _), after in lifecycle.TRANSITIONS.items() if r == role
    }
    assert reachable <= phases
    for (r, phase), rules in lifecycle.RULES.items():
        assert rules.spec.startswith("20"), (r, phase)  # every row names its revision and section


def test_every_export_is_typed_for_a_users_checker():
    """Issue 21, part 4: ``from mcp_ref import Client`` is loaded lazily (``__getattr__``), which a type
    checker cannot follow; the stub ``__init__.pyi`` (issue 24: what a checker reads instead of ``__init__.py``)
    must import every exported name from the module ``_EXPORTS`` names, or the user's checker sees ``Any``."""
    import ast

    import mcp_ref

    tree = ast.parse(Path(mcp_ref.__file__).with_suffix(".pyi").read_text())
    typed: dict[str, str] = {}
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom):
            assert statement.level == 1
            for alias in statement.names:
                typed[alias.name] = statement.module or ""
    from mcp_ref.extensions import EXPORTS as from_extras

    assert sorted(from_extras) == sorted(mcp_ref._FROM_EXTRAS)
    assert typed == {**mcp_ref._EXPORTS, **from_extras}
