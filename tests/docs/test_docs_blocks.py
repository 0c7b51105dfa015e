"""Every code block of the documentation is run or skipped with a reason, and every link holds.

The pages are README.md and docs/*.md (:mod:`doc_blocks`).  For each page with fenced blocks, its
module in tests/docs/ (README.md: ``test_readme.py``; docs/NAME.md: ``test_NAME.py``, dashes made
underscores) holds ``BLOCKS = {marker: "test_name" | "SKIP: reason"}``.  A marker must be found in
exactly one block, each block must hold exactly one marker, and a named test must be defined in that
module; a skip that names ``tests/...py::test_name`` (the test that runs the block elsewhere) must
name a test that exists.  The module is read, not imported, so nothing of it runs twice.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from doc_blocks import FENCE_LINE, FENCED_BLOCK, ROOT, module_for, pages


def _defined_tests(tree: ast.Module) -> set[str]:
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


def _blocks_table(tree: ast.Module) -> dict | None:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        if any(isinstance(target, ast.Name) and target.id == "BLOCKS" for target in targets):
            return ast.literal_eval(node.value)  # type: ignore[arg-type]
    return None


def _skip_reference_problems(reason: str) -> list[str]:
    """A skip reason's ``tests/...py::name`` references that name no test."""
    found = []
    for path, name in re.findall(r"(tests/[\w/.-]+\.py)::(\w+)", reason):
        source = ROOT / path
        if not source.is_file() or name not in _defined_tests(ast.parse(source.read_text())):
            found.append(f"the skip names {path}::{name}, which does not exist")
    return found


def block_problems(page_name: str, text: str, module_source: str | None) -> list[str]:
    """What is wrong with the accounting of one page's blocks (empty: nothing)."""
    found = []
    fences = FENCE_LINE.findall(text)
    if any(fence != "```" for fence in fences):
        found.append(f"{page_name}: an indented fence (put every fence at the start of its line)")
    blocks = FENCED_BLOCK.findall(text)
    if len(fences) != 2 * len(blocks):
        found.append(f"{page_name}: {len(fences)} fence lines for {len(blocks)} blocks")
    if not blocks:
        return found
    if module_source is None:
        return [*found, f"{page_name} has {len(blocks)} blocks and no test module"]
    tree = ast.parse(module_source)
    table = _blocks_table(tree)
    if not isinstance(table, dict):
        return [*found, f"{page_name}: its test module has no BLOCKS dict"]
    tests = _defined_tests(tree)
    for marker, how in table.items():
        holders = sum(marker in block for block in blocks)
        if holders != 1:
            found.append(f"{page_name}: marker {marker!r} is in {holders} blocks, not one")
        if how.startswith("SKIP: "):
            if len(how) < len("SKIP: ") + 10:
                found.append(f"{page_name}: {marker!r} is skipped without a reason")
            found += [f"{page_name}: {p}" for p in _skip_reference_problems(how)]
        elif how not in tests:
            found.append(f"{page_name}: {marker!r} names {how!r}, which its module does not define")
    for block in blocks:
        markers = [marker for marker in table if marker in block]
        if len(markers) != 1:
            found.append(
                f"{page_name}: a block holds {len(markers)} markers, not one: {block[:120]!r}"
            )
    return found


@pytest.mark.parametrize("page", pages(), ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_block_is_run_or_skipped_with_a_reason(page):
    module = module_for(page)
    source = module.read_text() if module.is_file() else None
    assert block_problems(page.relative_to(ROOT).as_posix(), page.read_text(), source) == []


def test_every_page_module_has_its_page():
    """A module here that accounts for blocks names a page that exists (a page renamed, or gone)."""
    modules = {module_for(page).name for page in pages()}
    for module in Path(__file__).parent.glob("test_*.py"):
        if _blocks_table(ast.parse(module.read_text())) is not None:
            assert module.name in modules, f"{module.name} accounts for a page that does not exist"


def test_the_checker_finds_each_kind_of_fault():
    page = "text\n\n```python\nprint('a')\n```\n\n```sh\nmcp-ref demo\n```\n"
    module = 'BLOCKS = {"print": "test_a", "mcp-ref": "SKIP: the demo runs elsewhere"}\n'
    assert block_problems("p.md", page, module + "def test_a(): pass\n") == []
    assert block_problems("p.md", page, None) == ["p.md has 2 blocks and no test module"]
    assert block_problems("p.md", page, module) == [
        "p.md: 'print' names 'test_a', which its module does not define"
    ]
    missing = block_problems("p.md", page + "```\nthird\n```\n", module + "def test_a(): pass\n")
    assert missing == ["p.md: a block holds 0 markers, not one: 'third\\n'"]
    twice = block_problems("p.md", page.replace("demo", "demo print"), module + "def test_a(): 0")
    assert "p.md: marker 'print' is in 2 blocks, not one" in twice
    indented = block_problems("p.md", "- item\n  ```sh\n  mcp-ref demo\n  ```\n", None)
    assert indented[0].startswith("p.md: an indented fence")
    bad_skip = module.replace("elsewhere", "in tests/docs/test_docs_blocks.py::test_nothing")
    assert block_problems("p.md", page, bad_skip + "def test_a(): 0\n") == [
        "p.md: the skip names tests/docs/test_docs_blocks.py::test_nothing, which does not exist"
    ]
    assert block_problems("p.md", page, "X = 1\n") == ["p.md: its test module has no BLOCKS dict"]


# -- links -----------------------------------------------------------------------------------------

LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors for a page's headings (lower case, punctuation dropped, spaces as dashes)."""
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", FENCED_BLOCK.sub("", markdown), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def link_problems(page: Path, root: Path) -> list[str]:
    """Relative links of ``page`` to a file that does not exist, or to an anchor it lacks."""
    text = page.read_text()
    prose = re.sub(r"`[^`\n]*`", "", FENCED_BLOCK.sub("", text))
    found = []
    for target in LINK.findall(prose):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # http:, https:, mailto:
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            found.append(f"{page.name}: {target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked.read_text()):
            found.append(f"{page.name}: {target} (no such heading)")
    return found


@pytest.mark.parametrize("page", pages(), ids=lambda page: page.relative_to(ROOT).as_posix())
def test_every_relative_link_reaches_a_file_and_heading(page):
    assert link_problems(page, ROOT) == []


def test_the_link_check_finds_a_missing_file_and_a_missing_heading(tmp_path):
    (tmp_path / "a.md").write_text("# A title\n\n## Two words\n")
    page = tmp_path / "b.md"
    page.write_text(
        "[ok](a.md) [ok](a.md#two-words) [ok](#here) [web](https://example.com/x)\n"
        "`[code](nowhere.md)`\n\n# Here\n\n[gone](c.md) [bad](a.md#three)\n"
    )
    assert link_problems(page, tmp_path) == [
        "b.md: c.md (no such file)",
        "b.md: a.md#three (no such heading)",
    ]


def test_the_guide_index_links_every_page_of_the_guide():
    """docs/README.md reaches every page of docs/, so that none is found only by chance."""
    index = ROOT / "docs" / "README.md"
    linked = {target.partition("#")[0] for target in LINK.findall(index.read_text())}
    for page in pages():
        if page.parent == index.parent and page != index:
            assert page.name in linked, f"docs/README.md does not link {page.name}"
