"""mcp_ref is typed for its users: precise field types, a public API a type checker sees, few suppressions.

* No class-level annotation in mcp_ref (dataclass fields, Protocol attributes, class attributes)
  is a bare container (``list``, ``dict``, ``set``, ``tuple``, ``frozenset``, ``Callable``): each
  says what it holds (``list[Tool]``, ``dict[str, Any]``, ``Callable[..., Any]``).
* A user's file that imports ``Client`` and ``Server`` type-checks with mypy (run as a user runs
  it: from another directory, no project configuration) and sees mcp_ref's classes, never ``Any``.
* ``type: ignore`` and ``noqa`` stay rare (at most :data:`MAX_TYPE_IGNORES` / :data:`MAX_NOQA`).
"""

from __future__ import annotations

import ast
import io
import os
import pathlib
import re
import subprocess
import sys
import textwrap
import tokenize

import pytest

import mcp_ref

PACKAGE = pathlib.Path(mcp_ref.__file__).resolve().parent
MAX_TYPE_IGNORES = 20
MAX_NOQA = 30

#: A container name not followed by ``[`` (its parameters): ``dict`` or ``Callable[[dict], Any]``
#: are bare, ``dict[str, Any]`` is not.  ``typing``'s capitalised aliases count too.
BARE = re.compile(
    r"(?<!\w)(list|dict|set|tuple|frozenset|Callable|List|Dict|Set|Tuple|FrozenSet)\b(?!\s*\[)"
)


def bare_annotations(source: str, where: str = "<source>") -> list[str]:
    """``where:line: Class.name: annotation`` for every class-level annotation naming a bare container."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ClassDef):
            continue
        for statement in node.body:
            if isinstance(statement, ast.AnnAssign):
                text = ast.unparse(statement.annotation)
                if BARE.search(text):
                    found.append(
                        f"{where}:{statement.lineno}: {node.name}.{ast.unparse(statement.target)}: {text}"
                    )
    return found


def package_sources() -> list[pathlib.Path]:
    """Every module of mcp_ref."""
    return sorted(PACKAGE.rglob("*.py"))


def test_the_scan_finds_bare_containers():
    source = textwrap.dedent("""
        class A:
            a: dict
            b: list | None = None
            c: Callable[[dict], Any]
            d: Callable
            e: tuple = ()
            f: dict[str, Any]
            g: Callable[..., dict[str, Any]] | None
            h: frozenset[str] = frozenset()
            k: typing.Dict
            listing: Listing
            x = dict()
    """)
    flagged = [line.split(": ", 1)[1].split(":")[0] for line in bare_annotations(source)]
    assert flagged == ["A.a", "A.b", "A.c", "A.d", "A.e", "A.k"]


@pytest.mark.slow
def test_no_bare_container_annotations_in_class_bodies():
    found = []
    for path in package_sources():
        found += bare_annotations(
            path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent))
        )
    assert found == [], "give these their precise types:\n" + "\n".join(found)


def comment_count(pattern: str) -> tuple[int, list[str]]:
    """How many comments in mcp_ref match ``pattern``, and where."""
    where = []
    for path in package_sources():
        source = path.read_text(encoding="utf-8")
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT and re.search(pattern, token.string):
                where.append(f"{path.relative_to(PACKAGE.parent)}:{token.start[0]}")
    return len(where), where


@pytest.mark.slow
def test_few_type_ignores_and_noqa():
    ignores, at = comment_count(r"type:\s*ignore")
    assert ignores <= MAX_TYPE_IGNORES, at
    noqa, at = comment_count(r"(?i)noqa")
    assert noqa <= MAX_NOQA, at


USER_FILE = """
import mcp_ref
from mcp_ref import Client, Server

server = Server("demo")


@server.tool
def add(a: int, b: int) -> int:
    return a + b


@server.tool(title="Greet")
def greet(name: str) -> str:
    return name


@server.resource("res://x")
def read_x() -> bytes:
    return b""


reveal_type(add)
reveal_type(greet)
reveal_type(read_x)
reveal_type(Client)
reveal_type(Server)
reveal_type(mcp_ref.McpError)
with Client.in_memory(server) as client:
    reveal_type(client)
    reveal_type(client.call_tool("x", {}))
    reveal_type(client.list_tools())
"""

#: What mypy must reveal, line by line (a constructor's revealed type ends with what it makes).
EXPECTED = [
    # a decorator hands the function back with its own type
    r"def \(a: (builtins\.)?int, b: (builtins\.)?int\) -> (builtins\.)?int",
    r"def \(name: (builtins\.)?str\) -> (builtins\.)?str",
    r"def \(\) -> (builtins\.)?bytes",
    r"def \(.*\) -> mcp_ref\.client\.client\.Client",
    r"def \(.*\) -> mcp_ref\.server\.server\.Server",
    r"def \(.*\) -> mcp_ref\.errors\.McpError",
    r"mcp_ref\.client\.client\.Client",
    r"mcp_ref\.types\.CallToolResult",
    r"list\[mcp_ref\.types\.Tool\]",
]


def run_mypy(tmp_path: pathlib.Path, source: str) -> subprocess.CompletedProcess:
    """mypy on ``source`` as a user's ``user.py``, run as a user runs it: from another directory,
    with no project configuration."""
    (tmp_path / "user.py").write_text(source, encoding="utf-8")
    env = dict(os.environ)
    # The editable install is an import hook mypy cannot follow: point it at the source tree.
    # --follow-imports=silent checks the user's file only, as for an installed package.
    env["MYPYPATH"] = str(PACKAGE.parent)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-incremental",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--follow-imports=silent",
            "user.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_a_users_code_sees_mcp_ref_types(tmp_path):
    run = run_mypy(tmp_path, USER_FILE)
    revealed = re.findall(
        r'^user\.py:\d+: note: Revealed type is "(.*)"$', run.stdout, re.MULTILINE
    )
    assert run.returncode == 0 and len(revealed) == len(EXPECTED), run.stdout + run.stderr
    for shown, expected in zip(revealed, EXPECTED, strict=True):
        assert shown != "Any" and re.fullmatch(expected, shown), (shown, expected)


#: A user's registrations with a wrong keyword value, each on a line marked ``# wrong``: the
#: registration keywords are typed (the decorators' and ``add_*``'s), so mypy refuses each.
WRONG_KEYWORDS = """
from mcp_ref import Server

server = Server("demo")


def f() -> str:
    return ""


server.tool(title=3)  # wrong
server.tool("name", scopes=7)  # wrong
server.add_tool(f, input_schema="object")  # wrong
server.resource("res://x", mime_type=3)  # wrong
server.resource(3)  # wrong
server.add_resource(f, "res://x", size="big")  # wrong
server.prompt(description=1)  # wrong
server.add_prompt(f, icons=2)  # wrong
server.tool(title="ok", task="optional")(f)
server.resource("res://y", rate_limit="5/minute")(f)
"""


@pytest.mark.slow
def test_a_users_wrong_registration_keyword_is_refused(tmp_path):
    run = run_mypy(tmp_path, WRONG_KEYWORDS)
    refused = {int(line) for line in re.findall(r"^user\.py:(\d+): error:", run.stdout, re.M)}
    wrong = {
        number
        for number, line in enumerate(WRONG_KEYWORDS.splitlines(), start=1)
        if line.endswith("# wrong")
    }
    assert refused == wrong, run.stdout + run.stderr
