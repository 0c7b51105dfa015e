"""docs/extensions-client.md: its blocks, run as written."""

import pytest
from conftest import ROOT, WAIT
from doc_blocks import block, run_python
from test_first_server import write_server_example

PAGE = ROOT / "docs" / "extensions-client.md"

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run here".
BLOCKS = {
    "client.add_extension(Confirmer())": "test_giving_extensions_to_a_client",
    "class AuditLog(Extension)": "SKIP: run against a real stdio server in both eras by "
    "tests/extensions/test_client_extensions.py::test_the_documented_audit_log_works_as_the_docs_say",
}


@pytest.mark.slow
def test_giving_extensions_to_a_client(tmp_path):
    """The first block, beside first-server.md's server.py, after the page's AuditLog and a
    Confirmer of the reader's own, and the import (the names it uses)."""
    write_server_example(tmp_path, docs=False)
    source = "\n".join(
        [
            block(PAGE, "class AuditLog(Extension)"),
            "from mcp_ref import Client\n\nclass Confirmer(Extension):\n    name = 'confirmer'\n",
            block(PAGE, "client.add_extension(Confirmer())"),
            "print([type(extension).__name__ for extension in client.extensions])",
            "print(client.call_tool('add', {'a': 1, 'b': 2}).text, client.extensions[0].sent)",
            "client.close()",
        ]
    )
    done = run_python(source, tmp_path, "client.py", timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "['AuditLog', 'Confirmer']"
    assert done.stdout.splitlines()[1].startswith("3 [")
    assert "'tools/call'" in done.stdout.splitlines()[1]
