"""The layers (issue 21): what may import what, no import loop even counting ``if TYPE_CHECKING:``
imports, no module over 700 lines, and a plain server or client that loads no extra.

    core  <  server, client  <  transports  <  extras, auth  <  workbench  <  mcp_ref (the package)

A module imports from its own layer or lower ones.  Two exceptions, both lazy (inside a function,
so nothing is loaded until the user asks for it): the roles and transports may load an extra, auth
or the workbench's HTTP server when the user asked for it (``Server(authorize=...)``,
``server.run_http()``); the core never imports anything above it, even lazily.  The two roles never
import each other.  Each checker also runs on a small package with the defect, so it can fail.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_architecture import PACKAGE, cycles, module_name, modules

LAYERS = {"core": 0, "schemas": 0, "server": 1, "client": 1, "transports": 2, "extras": 3, "auth": 3, "workbench": 4}
ROLES = {"server", "client"}
MAX_LINES = 700


def layer_of(module: str) -> tuple[str, int]:
    """``(name, rank)`` of a dotted module name of the package (the package itself ranks highest)."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1] not in LAYERS:
        return "package", max(LAYERS.values()) + 1
    return parts[1], LAYERS[parts[1]]


def imports_of(root: Path) -> list[tuple[str, str, bool]]:
    """Every import edge ``(importer, imported, lazy)`` between the package's modules, counting
    ``if TYPE_CHECKING:`` imports (as eager: a type checker follows them); ``lazy`` when the
    import is inside a function."""
    known = modules(root)
    edges = []
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        tree = ast.parse(path.read_text())
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        inside = {id(n) for f in functions for n in ast.walk(f) if n is not f}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in known else stem for a in node.names]
            for target in targets:
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges.append((name, target, id(node) in inside))
    return edges


def layer_violations(root: Path) -> list[str]:
    problems = []
    for importer, imported, lazy in imports_of(root):
        (mine, rank), (theirs, their_rank) = layer_of(importer), layer_of(imported)
        if mine == "package" or mine == theirs:
            continue
        if mine in ROLES and theirs in ROLES:
            problems.append(f"{importer} imports {imported}: the roles never import each other")
        elif their_rank > rank and (mine == "core" or not lazy):
            how = "lazily" if lazy else "at module level"
            problems.append(f"{importer} ({mine}) imports {imported} ({theirs}) {how}")
    return problems


def full_graph(root: Path) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules(root)}
    for importer, imported, _lazy in imports_of(root):
        graph[importer].add(imported)
    return graph


# -- the package --------------------------------------------------------------------------------


def test_every_module_imports_only_its_own_layer_or_lower_ones():
    assert layer_violations(PACKAGE) == []


def test_no_import_loop_even_counting_type_checking_imports():
    graph = full_graph(PACKAGE)
    assert "mcp_ref.core.session" in graph["mcp_ref.server.connection"]  # the graph is really built
    assert cycles(graph) == []


def test_no_module_is_over_700_lines():
    sizes = {module_name(PACKAGE, p): sum(1 for _ in p.open()) for p in PACKAGE.rglob("*.py")}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


PLAIN_SERVER = """
import sys
from mcp_ref import Server
server = Server("plain")

@server.tool()
def add(a: int, b: int) -> int:
    "Add two numbers."
    return a + b

server.run_stdio()
"""

PLAIN_CLIENT = """
import atexit, json, sys
from mcp_ref import Client

def report():
    names = sorted(m for m in sys.modules if m == "mcp_ref" or m.startswith("mcp_ref."))
    lines = sum(sum(1 for _ in open(sys.modules[m].__file__)) for m in names)
    print(json.dumps({"modules": names, "lines": lines}))

atexit.register(report)
for era in ("handshake", "modern"):
    with Client.stdio([sys.executable, sys.argv[1], sys.argv[2] + "-" + era], era=era) as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
"""

SERVER_REPORT = """
import atexit, json, sys
def report():
    names = sorted(m for m in sys.modules if m == "mcp_ref" or m.startswith("mcp_ref."))
    lines = sum(sum(1 for _ in open(sys.modules[m].__file__)) for m in names)
    with open(sys.argv[1], "w") as out:
        json.dump({"modules": names, "lines": lines}, out)
atexit.register(report)
"""

#: What neither a plain server nor a plain client may load: the extras, auth, HTTP, the workbench.
NOT_PLAIN = ("mcp_ref.extras.", "mcp_ref.auth", "mcp_ref.workbench", "mcp_ref.transports.http", "mcp_ref.transports.sse")


@pytest.fixture(scope="module")
def plain_runs(tmp_path_factory):
    """One plain stdio client calling one tool of a plain stdio server in each era; what each loaded."""
    tmp = tmp_path_factory.mktemp("plain")
    server = tmp / "server.py"
    server.write_text(SERVER_REPORT + PLAIN_SERVER)
    client = tmp / "client.py"
    client.write_text(PLAIN_CLIENT)
    done = subprocess.run([sys.executable, str(client), str(server), str(tmp / "server")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    import json

    runs = {"client": json.loads(done.stdout.strip().splitlines()[-1])}
    for era in ("handshake", "modern"):
        runs[f"server-{era}"] = json.loads((tmp / f"server-{era}").read_text())
    return runs


# (the server's 25th module: server/shorthand.py, the one place the keyword arguments build extensions)
@pytest.mark.parametrize("run, max_modules, max_lines", [("server-handshake", 25, 6500), ("server-modern", 25, 6500),
                                                         ("client", 20, 4500)])
def test_a_plain_server_or_client_loads_a_small_core_and_no_extra(plain_runs, run, max_modules, max_lines):
    loaded = plain_runs[run]
    assert [m for m in loaded["modules"] if m.startswith(NOT_PLAIN)] == []
    assert len(loaded["modules"]) <= max_modules, loaded["modules"]
    assert loaded["lines"] <= max_lines


# -- the checkers can fail ----------------------------------------------------------------------


def write_package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_a_core_module_importing_a_role_is_found_even_lazily(tmp_path):
    root = write_package(tmp_path, {
        "__init__.py": "", "core/__init__.py": "", "server/__init__.py": "",
        "core/session.py": "def f():\n    from ..server import tools\n",
        "server/tools.py": "from ..core import session\n",
    })
    assert layer_violations(root) == ["pkg.core.session (core) imports pkg.server.tools (server) lazily"]


def test_a_role_importing_an_extra_at_module_level_is_found_and_lazily_is_allowed(tmp_path):
    root = write_package(tmp_path, {
        "__init__.py": "", "server/__init__.py": "", "extras/__init__.py": "", "client/__init__.py": "",
        "server/registry.py": "from ..extras import policy\ndef run():\n    from ..extras import tasks\n",
        "extras/policy.py": "", "extras/tasks.py": "",
        "client/client.py": "def f():\n    from ..server import registry\n",
    })
    assert sorted(layer_violations(root)) == [
        "pkg.client.client imports pkg.server.registry: the roles never import each other",
        "pkg.server.registry (server) imports pkg.extras.policy (extras) at module level",
    ]


def test_a_loop_through_a_type_checking_import_is_found(tmp_path):
    root = write_package(tmp_path, {
        "__init__.py": "", "server/__init__.py": "",
        "server/a.py": "from . import b\n",
        "server/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\n",
    })
    assert cycles(full_graph(root)) == [["pkg.server.a", "pkg.server.b", "pkg.server.a"]]
