"""The layers (issue 21): what may import what, no import loop even counting ``if TYPE_CHECKING:``
imports, no module over ``MAX_MODULE_TOKENS`` code tokens, and a plain server or client that loads
no extra and little code (issue 33, "Done when").  The budgets count code tokens
(``test_architecture.code_tokens``), not lines: ``ruff format`` changes the lines, not the tokens.

    protocol (the modules at the top: jsonrpc, session, lifecycle, types, stdio ...), schemas
      <  server, client, state  <  http  <  extensions, state.redis, oauth  <  workbench, inspector
      <  mcp_ref (the package's __init__ and __main__)

A module imports from its own layer or lower ones.  Two exceptions, both lazy (inside a function,
so nothing is loaded until the user asks for it): the roles, state and http may load an extension,
Redis or OAuth when the user asked for it (``Server(authorize=...)``, ``server.run_http()``); the
protocol never imports anything above it, even lazily.  Every sub-package has a layer.
The two roles never
import each other.  Each checker also runs on a small package with the defect, so it can fail.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_architecture import PACKAGE, code_tokens, cycles, extension_mentions, modules, syntax_tree

#: The layer of each sub-package (a dotted prefix below mcp_ref); the modules at the top of the package
#: (mcp_ref.jsonrpc, mcp_ref.session ...) are the protocol, rank 0.
LAYERS = {
    "schemas": 0,
    "server": 1,
    "client": 1,
    "state": 1,
    "http": 2,
    "extensions": 3,
    "state.redis": 3,
    "oauth": 3,
    "proxy": 3,
    "workbench": 4,
    "inspector": 4,  # the inspector's record uses the workbench's diagram and checks; the verbs, it
}
PROTOCOL = "protocol"
ROLES = {"server", "client"}
#: The cap on one module's code tokens: the largest module had 4,449 (workbench/demo_auth_server.py,
#: issue 33's review; the next, server/registry.py, now server/server.py, 4,434), with a little
#: room.  A module that grows past it holds more than one idea: split it.
MAX_MODULE_TOKENS = 4_600


def layer_of(module: str) -> tuple[str, int]:
    """``(name, rank)`` of a dotted module name of the package: the sub-package's layer (longest
    prefix in LAYERS), the protocol for a module at the top, the package itself (and ``__main__``)
    highest; ``("?", -1)`` for a sub-package in no layer."""
    parts = module.split(".")
    if len(parts) == 1 or parts[1:] == ["__main__"]:
        return "package", max(LAYERS.values()) + 1
    for cut in range(len(parts) - 1, 0, -1):
        prefix = ".".join(parts[1 : cut + 1])
        if prefix in LAYERS:
            return prefix, LAYERS[prefix]
    return (PROTOCOL, 0) if len(parts) == 2 else ("?", -1)


def imports_of(root: Path) -> list[tuple[str, str, bool]]:
    """Every import edge ``(importer, imported, lazy)`` between the package's modules, counting
    ``if TYPE_CHECKING:`` imports (as eager: a type checker follows them); ``lazy`` when the
    import is inside a function."""
    known = modules(root)
    edges = []
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        tree = syntax_tree(path)
        functions = [
            n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
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
                targets = [
                    f"{stem}.{a.name}" if f"{stem}.{a.name}" in known else stem for a in node.names
                ]
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
        if mine == "?" or theirs == "?":
            problems.append(
                f"{importer if mine == '?' else imported}: its sub-package has no layer (LAYERS)"
            )
            continue
        if mine == "package" or mine == theirs:
            continue
        if mine in ROLES and theirs in ROLES:
            problems.append(f"{importer} imports {imported}: the roles never import each other")
        elif their_rank > rank and (mine == PROTOCOL or not lazy):
            how = "lazily" if lazy else "at module level"
            problems.append(f"{importer} ({mine}) imports {imported} ({theirs}) {how}")
    return problems


def full_graph(root: Path) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules(root)}
    for importer, imported, _lazy in imports_of(root):
        graph[importer].add(imported)
    return graph


# -- the package --------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_module_imports_only_its_own_layer_or_lower_ones():
    assert layer_violations(PACKAGE) == []


@pytest.mark.slow
def test_no_import_loop_even_counting_type_checking_imports():
    graph = full_graph(PACKAGE)
    assert "mcp_ref.session" in graph["mcp_ref.server.connection"]  # the graph is really built
    assert cycles(graph) == []


def modules_over(root: Path, cap: int) -> dict[str, int]:
    """The modules of the package at ``root`` with more than ``cap`` code tokens, and their counts."""
    sizes = {name: code_tokens(path.read_text()) for name, path in modules(root).items()}
    return {name: n for name, n in sizes.items() if n > cap}


@pytest.mark.slow
def test_no_module_is_over_the_token_cap():
    assert modules_over(PACKAGE, MAX_MODULE_TOKENS) == {}


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

#: What a plain run reports at exit: every mcp_ref module it loaded, and the module's file.
LOADED = """
import atexit, json, sys
def loaded():
    names = sorted(m for m in sys.modules if m == "mcp_ref" or m.startswith("mcp_ref."))
    return {name: sys.modules[name].__file__ for name in names}
"""

PLAIN_CLIENT = (
    LOADED
    + """
from mcp_ref import Client
atexit.register(lambda: print(json.dumps(loaded())))
for era in ("handshake", "modern"):
    with Client.stdio([sys.executable, sys.argv[1], sys.argv[2] + "-" + era], era=era) as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
"""
)

SERVER_REPORT = (
    LOADED
    + """
def report():
    with open(sys.argv[1], "w") as out:
        json.dump(loaded(), out)
atexit.register(report)
"""
)

#: What neither a plain server nor a plain client may load: the extras, auth, HTTP, the workbench.
NOT_PLAIN = (
    "mcp_ref.extensions",
    "mcp_ref.state",
    "mcp_ref.oauth",
    "mcp_ref.workbench",
    "mcp_ref.inspector",
    "mcp_ref.http",
)

#: The plain path's budget (issue 33, "Done when"): what a plain stdio server and a plain stdio
#: client, asked one tools/call in each era, load together.  These are the figures measured on
#: the tree at the end of issue 33's second round (formatted, laid out); lower them as the work lands.
#: The issue's targets: 16 modules, 26,000 code tokens, 30 extension mentions in 2 modules.
PLAIN_MAX_MODULES = 16  # target 16 (met)
# target 26_000 (not met).  What moved the figure, and why, is in CHANGELOG.md under "Back to
# the card" and in each commit that changes this line; the last: a malformed answer (+18) or one
# over max_message_size (+6) fails its request at once, a stdio client watches its server's exit
# (+97), a caller's Ctrl-C gives its request up (+53), a stdio server's writes to its stdout are
# bounded like a client's (+85: poll() for room; stdio_pipe.write_bounded, off the plain path,
# writes the rest), and the encoder is made without its check for a value that holds itself
# (+4).  All in modules both sides load: each side's figure below grows as much.  Then the
# methods an input_required answer may come to became one tuple in lifecycle (-6; +3 on the
# server), then the unused ServerConnection.require_client_capability went and a 2026-07-28
# task's error took the answers' -32002 mapping (-32).  Then what no plain call runs went to the
# module of its feature: resuming a shared HTTP session to the shared session table (-131, the
# server), the refusal of a message that cannot be parsed to unparsed.py (-39).  A batch fails
# the request a malformed answer in it answers (+4).  Progress reported after the client has
# gone is dropped (+7), an error message cut ends in "…" (+28), and a late answer is given to its
# request's ``late_answer`` (+25: what the session does with an answer no one waits for went to
# cancellation.py, where a late task handle is given to its call).  A request whose handler pool
# refuses it (shut down: the server is closing) is answered -31000, not left unanswered (+14).
# A number past int()'s digit limit is a parse error in plain words, not Python's (+6: worded
# in unparsed.not_json, off the plain path).  The client's cached request went to cache.py, and
# malformed progress is refused in cancellation.py (-3 net, with the capability checks).  An
# McpError whose code is not an integer or whose message is not a string is still answered (+17),
# and one whose data no JSON carries too (+4).  A call with on_progress made from a callback is
# settled at once, and a wait past its deadline is bounded (+40); a received error's data that is
# no object gives empty typed views (+22); a pinned handshake-era revision is held to (+27); a stdio
# server that exits is named by its status (+39); PendingRequest.cancel gives up as a timeout does
# (-17, with _give_up).  Whether a caller waits on the callback thread is decided where it waits,
# and an answer that came in time is never thrown away behind slow callbacks (+64: the figure
# was 30 above the measure, so it rises by 34).  An answer held behind the callback thread is
# settled with it at the caller's deadline, and at close() or the end of input (+87: the session
# keeps such requests in ``_held``).  A stdio server's own streams (+239, in stdio.py,
# which both sides load): an input whose reader its close() can stop (a server that ends its
# connection gives its client the end of input, and run_stdio() returns), its messages on a copy
# of stdout with descriptor 1 pointed at stderr; what runs only at close is in stdio_end.py, off
# the plain path.  Then a stdio server's stderr whose writes never wait for a pipe no one reads
# (+212, in stdio.py; dropping and counting what finds no room is in stdio_end.py).  Then the
# server's own streams only while they are the process's (a caller's sys.stdin and sys.stdout are
# served as they are), descriptor 1 at /dev/null without a stderr, and all of it restored (the
# descriptors closed, sys.stderr and the logging handlers put back) when run_stdio() returns
# (+186, in stdio.py; waiting for room on stderr and saying what was dropped at exit are in
# stdio_end.py).  Then a run_stdio() that raises closes its descriptors too: its reader is woken
# and never reads again once it has left its read (+52, in stdio.py).  sys.stderr stays the
# dropping one after a run whose stderr was dropped unread, so the exit never waits on it (+2).
# Descriptor 1 is a pipe that a thread passes on to the dropping stderr, so a child process
# writing to its stdout never waits for a client that ignores stderr (+108, in stdio.py: the
# descriptor path runs on every plain POSIX server).  That thread is waited for at the end while
# what it holds moves on, so a slow reader loses none of a child's output (+48).  Then a
# simplification of the plain modules (-1,804): the handler pool is one executor job a request,
# and a timeout, a cancel and an interrupted wait give up through one call (-349, session and
# request); the registration decorators are partials of the add_ methods, and fitting a result to
# an older revision went to older_revisions (-350, server and tools); a signature's scalars are
# described in signatures.py and every other kind in compound_types, loaded at the first such
# annotation (-788); the client's HTTP-only wrappers of the known tools went (-76); the stdio
# client's constructor and close, jsonrpc's batch test and the rate limit's refusal (-241).  A
# registration warning names the user's line in every form (+77, tools.py); the listing handlers
# went beside list_page and the HTTP admission record to the HTTP admission step (-138).  A
# session's ``closed`` event is made when first asked for again (+44): made with every session,
# it cost a one-request HTTP connection about 2 us of the server's CPU.  A restricting gate
# makes a result's cacheScope private even when it says public already (+2).  A modern stdio
# server slower to start than the probe's bound, which then refuses initialize with -32022, is
# asked server/discover again, only after a probe that went unanswered and only when the server
# itself refused, within what is left of initialize's bound (+119, in the client's connection.py).
# Then what a plain call never runs went to the module of its feature, loaded at its first use
# (-1,856): a message JSON cannot carry as it is, progress sent and received, the requests refused
# as they come, an over-long stdio line, a handler's failure raised again (session, request,
# jsonrpc); the Context parameter, a tool's failure results, a default's JSON check, async
# handlers, registration warnings, a resource's own caching hints (server); a 2026-07-28 call's
# later rounds (mrtr), the fallback after a probe (fallback), the capabilities of handlers, roots
# and extensions (client).  A transport may hand over a message it parsed already (+8), and a
# client's extensions are told when its connection ends, as a server's are (+22).  Then an
# extension's request methods are looked up by seams.py and a task-less Context's fallbacks by
# shorthand.py, each loaded at its first use (-66); the fallback handshake runs outside the
# probe's exception handler, its deadline worked out in fallback.py (-4).  A session's end sets
# ``closed`` whatever its dispatcher's end hook raises (-1, session.py), and a client's close()
# that stops waiting for a handler deaf to its cancellation says so in a warning (+27, client.py).
PLAIN_MAX_TOKENS = 28_834
PLAIN_MAX_MENTIONS = 12  # target 30 (met)
PLAIN_MAX_MENTIONING_MODULES = 1  # target 2 (met)


def over_budget(
    loaded: dict[str, str],
    max_modules: int,
    max_tokens: int,
    max_mentions: int,
    max_mentioning_modules: int,
) -> list[str]:
    """What ``loaded`` (module name -> file) spends beyond each budget: modules, code tokens,
    extension mentions (``test_architecture.extension_mentions``) and modules that mention one."""
    texts = {name: Path(file).read_text() for name, file in loaded.items()}
    tokens = sum(code_tokens(text) for text in texts.values())
    mentions = {name: extension_mentions(text) for name, text in texts.items()}
    mentioning = {name: n for name, n in sorted(mentions.items()) if n}
    problems = []
    if len(loaded) > max_modules:
        problems.append(f"{len(loaded)} modules > {max_modules}: {sorted(loaded)}")
    if tokens > max_tokens:
        problems.append(f"{tokens} code tokens > {max_tokens}")
    if sum(mentions.values()) > max_mentions:
        problems.append(
            f"{sum(mentions.values())} extension mentions > {max_mentions}: {mentioning}"
        )
    if len(mentioning) > max_mentioning_modules:
        problems.append(
            f"{len(mentioning)} mentioning modules > {max_mentioning_modules}: {mentioning}"
        )
    return problems


@pytest.fixture(scope="module")
def plain_runs(tmp_path_factory):
    """One plain stdio client calling one tool of a plain stdio server in each era: the modules each
    side loaded (name -> file), as ``client``, ``server-handshake`` and ``server-modern``."""
    client_out, servers = run_plain(tmp_path_factory.mktemp("plain"), PLAIN_CLIENT)
    return {"client": json.loads(client_out.strip().splitlines()[-1]), **servers}


def run_plain(tmp: Path, client_script: str) -> tuple[str, dict[str, dict]]:
    """Run ``client_script`` against the plain server in ``tmp``: the client's output, and the
    modules the server loaded in each era (``server-handshake``, ``server-modern``)."""
    server = tmp / "server.py"
    server.write_text(SERVER_REPORT + PLAIN_SERVER)
    client = tmp / "client.py"
    client.write_text(client_script)
    done = subprocess.run(
        [sys.executable, str(client), str(server), str(tmp / "server")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    eras = ("handshake", "modern")
    return done.stdout, {f"server-{e}": json.loads((tmp / f"server-{e}").read_text()) for e in eras}


@pytest.mark.slow
@pytest.mark.parametrize(
    "run, max_modules, max_tokens",
    [("server-handshake", 13, 23_444), ("server-modern", 13, 23_444), ("client", 20, 18_950)],
)
def test_a_plain_server_or_client_loads_a_small_core_and_no_extra(
    plain_runs, run, max_modules, max_tokens
):
    """Each side alone, within its own share of the budget."""
    loaded = plain_runs[run]
    assert [m for m in loaded if m.startswith(NOT_PLAIN)] == []
    assert (
        over_budget(
            loaded, max_modules, max_tokens, PLAIN_MAX_MENTIONS, PLAIN_MAX_MENTIONING_MODULES
        )
        == []
    )


#: The server modules a plain stdio server loads: the Server, one connection's dispatcher, tools,
#: and the schemas of a function's signature (with their validation).  Serving over HTTP, the
#: shorthand, the seams, principals, Context and where changes go load only when used.
PLAIN_SERVER_MODULES = {
    "mcp_ref.server",
    "mcp_ref.server.server",
    "mcp_ref.server.connection",
    "mcp_ref.server.tools",
    "mcp_ref.server.signatures",
}


@pytest.mark.slow
@pytest.mark.parametrize("run", ["server-handshake", "server-modern"])
def test_a_plain_server_loads_only_its_five_server_modules(plain_runs, run):
    assert {m for m in plain_runs[run] if m.startswith("mcp_ref.server")} == PLAIN_SERVER_MODULES


#: A plain client asking a plain server for a tool it does not have, in each era: the server's
#: handler raises (-32602), which must not load the seams (only an ask of the 2026-07-28 era does).
REFUSED_CLIENT = """
import sys
from mcp_ref import Client, McpError
for era in ("handshake", "modern"):
    with Client.stdio([sys.executable, sys.argv[1], sys.argv[2] + "-" + era], era=era) as client:
        try:
            client.call_tool("no_such_tool", {})
        except McpError as exc:
            assert exc.code == -32602, exc
        else:
            raise AssertionError("an unknown tool was answered")
"""


@pytest.mark.slow
def test_a_plain_server_refusing_a_request_loads_no_more_server_modules(tmp_path):
    _, servers = run_plain(tmp_path, REFUSED_CLIENT)
    for era, loaded in servers.items():
        assert {m for m in loaded if m.startswith("mcp_ref.server")} == PLAIN_SERVER_MODULES, era


@pytest.mark.slow
def test_a_plain_server_and_client_together_load_a_small_core(plain_runs):
    """Issue 33's measure of the protocol readable alone (now: 16 modules, 30,720 code tokens,
    12 extension mentions in 1 module)."""
    together = {name: file for loaded in plain_runs.values() for name, file in loaded.items()}
    assert (
        over_budget(
            together,
            PLAIN_MAX_MODULES,
            PLAIN_MAX_TOKENS,
            PLAIN_MAX_MENTIONS,
            PLAIN_MAX_MENTIONING_MODULES,
        )
        == []
    )


# -- the checkers can fail ----------------------------------------------------------------------


def write_package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_a_protocol_module_importing_a_role_is_found_even_lazily(tmp_path):
    root = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "server/__init__.py": "",
            "session.py": "def f():\n    from .server import tools\n",
            "server/tools.py": "from .. import session\n",
        },
    )
    assert layer_violations(root) == [
        "pkg.session (protocol) imports pkg.server.tools (server) lazily"
    ]


def test_a_role_importing_an_extra_at_module_level_is_found_and_lazily_is_allowed(tmp_path):
    root = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "server/__init__.py": "",
            "extensions/__init__.py": "",
            "client/__init__.py": "",
            "server/registry.py": "from ..extensions import policy\ndef run():\n    from ..extensions import tasks\n",
            "extensions/policy.py": "",
            "extensions/tasks.py": "",
            "client/client.py": "def f():\n    from ..server import registry\n",
        },
    )
    assert sorted(layer_violations(root)) == [
        "pkg.client.client imports pkg.server.registry: the roles never import each other",
        "pkg.server.registry (server) imports pkg.extensions.policy (extensions) at module level",
    ]


def test_a_loop_through_a_type_checking_import_is_found(tmp_path):
    root = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "server/__init__.py": "",
            "server/a.py": "from . import b\n",
            "server/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\n",
        },
    )
    assert cycles(full_graph(root)) == [["pkg.server.a", "pkg.server.b", "pkg.server.a"]]


def test_a_module_over_the_token_cap_is_found_whatever_its_layout(tmp_path):
    root = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "small.py": "x = 1\n",  # 3 code tokens
            "long.py": "# a comment is no code\n" * 50
            + '"""Nor a docstring."""\n'
            + "x = (\n    1\n)\n",  # 5
        },
    )
    assert modules_over(root, 4) == {"pkg.long": 5}
    assert modules_over(root, 5) == {}


def test_a_plain_path_over_each_budget_is_found(tmp_path):
    root = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "session.py": "def read(line):\n    return line\n",  # no extension named
            "registry.py": (
                "import importlib\n"
                "from .extras.policy import Policy\n"  # policy, Policy: 2
                "def run(task_store, business):\n"  # task_store: 1 (business is no bus)
                "    return importlib.import_module('mcp_ref.extensions.ratelimit'), RedisBus, _bus\n"  # 3
                "PLAIN = 'policy and tasks'\n"  # a string, not an import target: 0
            ),
        },
    )
    loaded = {name: str(path) for name, path in modules(root).items()}
    assert extension_mentions((root / "registry.py").read_text()) == 6
    assert over_budget(loaded, 3, 37, 6, 1) == []
    assert over_budget(loaded, 2, 36, 5, 0) == [
        "3 modules > 2: ['pkg', 'pkg.registry', 'pkg.session']",
        "37 code tokens > 36",
        "6 extension mentions > 5: {'pkg.registry': 6}",
        "1 mentioning modules > 0: {'pkg.registry': 6}",
    ]


def test_a_sub_package_in_no_layer_is_found(tmp_path):
    root = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "gadgets/__init__.py": "",
            "gadgets/x.py": "from .. import session\n",
            "session.py": "",
        },
    )
    assert layer_violations(root) == ["pkg.gadgets.x: its sub-package has no layer (LAYERS)"]


#: Modules the protocol and the roles never import, even lazily: what a user's code holds
#: (PerThread, in a lifespan) and what is built on a Server and a Client (the proxy).
NOT_FOR_THE_PROTOCOL = ("mcp_ref.per_thread", "mcp_ref.proxy")


def protocol_mentions(edges: list[tuple[str, str, bool]]) -> list[str]:
    """The imports of ``NOT_FOR_THE_PROTOCOL`` by the protocol modules and the roles."""
    problems = []
    for importer, imported, _lazy in edges:
        mine = layer_of(importer)[0]
        if mine != PROTOCOL and mine not in ROLES:
            continue
        if imported.startswith(NOT_FOR_THE_PROTOCOL):
            problems.append(f"{importer} imports {imported}")
    return problems


@pytest.mark.slow
def test_the_protocol_and_the_roles_import_neither_per_thread_nor_the_proxy():
    assert protocol_mentions(imports_of(PACKAGE)) == []
    # the check can fail: a session that imports PerThread's module lazily is caught
    assert protocol_mentions([("mcp_ref.session", "mcp_ref.per_thread", True)]) != []
