"""docs/policy.md: its examples build what they say, and run as pasted."""

import pytest
from conftest import ROOT, WAIT
from doc_blocks import block, run_python
from test_first_server import write_server_example

PAGE = ROOT / "docs" / "policy.md"

#: marker -> the test that runs the block holding it, or "SKIP: why it is not run".
BLOCKS = {
    'rate_limit="100/minute"': "test_policy_examples_build_what_they_say",
    "server_request_limit=": "test_approve_example_runs_as_pasted",
}


def _block(marker: str) -> str:
    return block(PAGE, marker)


def test_policy_examples_build_what_they_say():
    server_block = _block('rate_limit="100/minute"')
    client_block = _block("server_request_limit=")
    scope = {}
    exec(compile(server_block, "README policy example", "exec"), scope)
    server = scope["server"]
    assert (
        str(server.policy.rate_limit) == "100/60s"
        and server.get_tool("send_mail").options["rate_limit"].count == 5
    )
    principal = __import__("mcp_ref").Principal
    assert scope["authorize"](principal("p"), "tools/call", "admin_reset") is False
    assert (
        scope["authorize"](principal("p", frozenset({"admin"})), "tools/call", "admin_reset")
        is True
    )
    compile(client_block, "README approve example", "exec")
    approve_source = client_block.split("client = ")[0]
    exec(compile(approve_source, "README approve hook", "exec"), scope)
    from mcp_ref import ServerRequest

    edited = scope["approve"](
        ServerRequest("sampling/createMessage", {"messages": [], "maxTokens": 999})
    )
    assert edited.params["maxTokens"] == 200
    assert scope["approve"](ServerRequest("roots/list", {})) is False


@pytest.mark.slow
def test_approve_example_runs_as_pasted(tmp_path):
    """The approve hook's client, as pasted beside first-server.md's server.py: it connects, and closes."""
    write_server_example(tmp_path, docs=False)
    done = run_python(_block("server_request_limit="), tmp_path, "approve.py", timeout=WAIT * 3)
    assert done.returncode == 0, done.stderr
