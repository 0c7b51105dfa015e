"""Issue 8 §6: what a wheel of mcp_ref carries, built from this tree the way pip builds it."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest
from conftest import ROOT


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    # A copy of the sources, so that building leaves nothing behind in the tree.
    import shutil

    for name in ("setup.cfg", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, build / name)
    shutil.copytree(
        ROOT / "mcp_ref", build / "mcp_ref", ignore=shutil.ignore_patterns("__pycache__")
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(build),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    (path,) = out.glob("mcp_ref-*.whl")
    with zipfile.ZipFile(path) as archive:
        yield archive


@pytest.mark.slow
def test_the_wheel_carries_the_license_the_schemas_and_their_notice(wheel):
    names = wheel.namelist()
    assert any(
        n.endswith(".dist-info/licenses/LICENSE") or n.endswith(".dist-info/LICENSE") for n in names
    ), names
    assert (
        "mcp_ref/py.typed" in names and "mcp_ref/__init__.pyi" in names
    )  # PEP 561; the typed lazy exports
    assert "mcp_ref/schemas/NOTICE" in names
    assert {
        f"mcp_ref/schemas/{v}.json"
        for v in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
    } <= set(names)
    from mcp_ref.inspector.app import STATIC_FILES

    # the inspector's page: served from the package (importlib.resources), so shipped in it
    assert {f"mcp_ref/inspector/static/{name}" for name in STATIC_FILES} <= set(names)


@pytest.mark.slow
def test_the_metadata_says_what_it_is(wheel):
    import mcp_ref

    (metadata,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    text = wheel.read(metadata).decode()
    assert f"Version: {mcp_ref.__version__}" in text  # one source for the version
    for line in (
        "License :: OSI Approved :: MIT License",
        "Typing :: Typed",
        "Programming Language :: Python :: 3.11",
        "Development Status ::",
    ):
        assert f"Classifier: {line}" in text
    assert "Requires-Python: >=3.11" in text  # the masking's expressions need 3.11
    assert "Project-URL: Specification, https://modelcontextprotocol.io/specification" in text


def test_help_opens_with_a_map():
    import pydoc

    import mcp_ref

    text = pydoc.render_doc(mcp_ref, renderer=pydoc.plaintext)
    head = text[: text.index("PACKAGE CONTENTS")]
    for name in (
        "Client",
        "Server",
        "Context",
        "Image(path=...)",
        "ServerUnreachable",
        "mcp-ref demo",
    ):
        assert name in head
