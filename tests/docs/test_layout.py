"""docs/layout.md names every module of the package, and only modules that exist.

A row's first cell names modules: a path (``mcp_ref/server/tools.py``), then bare names in the same
folder (``resources.py``), or a whole folder (``mcp_ref/oauth/``: every module under it).  A module
added without a row here, or a row left behind by a module removed, fails.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from doc_blocks import ROOT

PAGE = ROOT / "docs" / "layout.md"


def named_on_the_page(text: str) -> tuple[set[str], set[str]]:
    """The modules and the folders the page's table rows name, as paths from the repository root."""
    modules: set[str] = set()
    folders: set[str] = set()
    for line in text.splitlines():
        if not line.startswith("| `mcp_ref/"):
            continue
        folder = ""
        for name in re.findall(r"`([^`]+)`", line.split("|")[1]):
            if "*" in name:  # a pattern (`mcp_ref/*.py`) introduces the rows after it
                continue
            if name.endswith("/"):
                folders.add(name.rstrip("/"))
                folder = name.rstrip("/")
            elif name.startswith("mcp_ref/"):
                folder = str(PurePosixPath(name).parent)
                if name.endswith(".py"):
                    modules.add(name)
            elif folder and name.endswith(".py"):
                modules.add(f"{folder}/{name}")
    return modules, folders


def package_modules() -> set[str]:
    """Every module of the package but the packages' ``__init__.py``."""
    return {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "mcp_ref").rglob("*.py")
        if path.name != "__init__.py"
    }


def test_every_module_of_the_package_has_its_row():
    modules, folders = named_on_the_page(PAGE.read_text())
    unnamed = {
        module
        for module in package_modules() - modules
        if not any(module.startswith(folder + "/") for folder in folders)
    }
    assert unnamed == set(), "docs/layout.md: add a row (or a name in a row) for each"


def test_every_module_the_page_names_exists():
    modules, folders = named_on_the_page(PAGE.read_text())
    gone = {module for module in modules if not (ROOT / module).is_file()}
    gone |= {folder for folder in folders if not (ROOT / folder).is_dir()}
    assert gone == set()


def test_the_reading_finds_paths_bare_names_and_folders():
    row = "| `mcp_ref/server/tools.py`, `prompts.py` | x |\n| `mcp_ref/oauth/` | y |\n| other | z |"
    assert named_on_the_page(row) == (
        {"mcp_ref/server/tools.py", "mcp_ref/server/prompts.py"},
        {"mcp_ref/oauth"},
    )
