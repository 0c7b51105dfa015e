"""docs/extensions.md: its blocks, run as written."""

from doc_blocks import ROOT, block

PAGE = ROOT / "docs" / "extensions.md"

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run here".
BLOCKS = {
    "server.extensions  ": "test_giving_extensions_to_a_server",
    "def build_server": "SKIP: run over stdio and HTTP in both eras by "
    "tests/extensions/test_extensions.py::test_an_audit_log_and_a_custom_method_over_stdio",
}


def test_giving_extensions_to_a_server():
    """The first block, after the example's classes (the names it uses)."""
    scope: dict = {"__name__": "acme_server"}
    exec(compile(block(PAGE, "def build_server"), "acme_server.py", "exec"), scope)
    exec(compile(block(PAGE, "server.extensions  "), "docs/extensions.md", "exec"), scope)
    kinds = [type(extension).__name__ for extension in scope["server"].extensions]
    assert kinds == ["AuditLog", "Echo"]
