"""mcp_ref's own error codes lie outside the JSON-RPC reserved range, in every era.

2026-07-28 basic/index §Error Codes: "-32000 to -32019 — legacy ... new implementations SHOULD NOT
use codes from this sub-range at all", and "New error codes for purposes not defined by this
specification SHOULD be allocated outside the JSON-RPC reserved range (-32768 to -32000)".  So
``ServerBusy`` is -31000 and ``LimitExceeded`` -31005; what the spec defines (JSON-RPC's codes,
-32002, -32042, -32020 to -32022) is untouched.  The codes mcp_ref used before (-32000, -32005)
mean nothing in particular when a peer sends them: "receivers MUST NOT assume any specific meaning
for these codes".
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SERVERS, WAIT

from mcp_ref import Client, LimitExceeded, McpError
from mcp_ref.errors import LIMIT_EXCEEDED, SERVER_BUSY

#: The codes in the reserved range the specifications define: JSON-RPC 2.0 §5.1's, -32002
#: (resource not found, 2025-11-25 and earlier), -32042 (URL elicitation required, 2025-11-25),
#: -32020 to -32022 (2026-07-28).
SPEC_CODES = {-32700, -32600, -32601, -32602, -32603, -32002, -32042, -32020, -32021, -32022}
RESERVED = range(-32768, -32000 + 1)
#: A JSON-RPC error code written out in a string or bytes literal ('"code":-32000').
CODE_IN_TEXT = re.compile(r'"code"\s*:\s*(-\d+)')


def test_every_error_class_of_mcp_ref_has_a_code_the_spec_defines_or_one_outside_the_range():
    for cls in McpError.__subclasses__():
        assert cls.code in SPEC_CODES or cls.code not in RESERVED, cls
    assert (SERVER_BUSY, LIMIT_EXCEEDED) == (-31000, -31005)


def reserved_codes_written(path: Path) -> list[int]:
    """The codes in the reserved range a module writes that no specification defines: negative
    integer literals, and codes inside JSON written out as a string or bytes literal."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) is int
        ):
            found.append(-node.operand.value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            text = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
            found += [int(code) for code in CODE_IN_TEXT.findall(text)]
    return [code for code in found if code in RESERVED and code not in SPEC_CODES]


def test_no_module_writes_a_code_of_the_reserved_range_the_spec_does_not_define():
    """Nothing emits one (the connection cap's prepared 503 body included)."""
    written = {
        str(path.relative_to(ROOT)): codes
        for path in sorted((ROOT / "mcp_ref").rglob("*.py"))
        if (codes := reserved_codes_written(path))
    }
    assert written == {}


@pytest.mark.slow
@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_a_rate_limit_refusal_carries_mcp_refs_code_in_both_eras(era):
    """tests/servers/policy_server.py's ``limited`` allows 3 calls a minute: the fourth is refused
    with -31005, over stdio, in either era."""
    command = [sys.executable, str(SERVERS / "policy_server.py")]
    with Client.stdio(command, era=era, timeout=WAIT, stderr="discard") as client:
        for _ in range(3):
            client.call_tool("limited")
        with pytest.raises(LimitExceeded) as refused:
            client.call_tool("limited")
        assert refused.value.code == -31005 and refused.value.data["limit"] == "3/60s"
        assert client.call_tool("alpha").content[0].text == "alpha"  # the session goes on


def test_the_legacy_codes_mean_nothing_in_particular_when_received():
    """2026-07-28 basic/index §Error Codes: "Apart from -32002 (see below), receivers MUST NOT
    assume any specific meaning for these codes" (-32000 to -32019): a plain McpError, as sent."""
    limited = McpError.from_error(
        {"code": -32005, "message": "Rate limit exceeded", "data": {"retryAfter": 2.5}}
    )
    busy = McpError.from_error({"code": -32000, "message": "Connection closed"})
    assert type(limited) is McpError and type(busy) is McpError
    assert (limited.code, busy.code) == (-32005, -32000)  # as the peer sent them
    assert limited.data == {"retryAfter": 2.5}


#: Each typed view of a received error's ``data``: (code, property, what it is when ``data`` says
#: nothing usable).
DATA_VIEWS = [
    (-32042, "elicitations", []),
    (-32021, "required_capabilities", {}),
    (-32022, "supported", []),
    (-31005, "retry_after", None),
]


@pytest.mark.parametrize("code, view, empty", DATA_VIEWS)
@pytest.mark.parametrize(
    "data", ["oops", [1], 7, None, True, {"elicitations": "x", "requiredCapabilities": [["a", 1]]}]
)
def test_a_typed_view_of_error_data_that_is_not_an_object_is_empty(code, view, empty, data):
    """JSON-RPC 2.0 §5.1: ``data`` "may be omitted", and is whatever the peer defines: a peer's
    ``data`` that is no object (or whose member is of another type) gives the typed property its
    empty value, never an AttributeError or TypeError."""
    error = McpError.from_error({"code": code, "message": "refused", "data": data})
    assert getattr(error, view) == empty


def test_a_typed_view_of_error_data_keeps_only_the_values_of_its_type():
    asked = McpError.from_error(
        {"code": -32042, "message": "sign in", "data": {"elicitations": [{"mode": "url"}, 3]}}
    )
    assert asked.elicitations == [{"mode": "url"}]
    needing = McpError.from_error(
        {"code": -32021, "message": "needs", "data": {"requiredCapabilities": {"sampling": {}}}}
    )
    assert needing.required_capabilities == {"sampling": {}}


#: An older server that refuses ``server/discover`` with the legacy -32005 (a rate limit), and
#: answers anything else with -32603.  -32005 is no "recognized modern JSON-RPC error"
#: (2026-07-28 basic/versioning §Backward Compatibility) and means nothing in particular: the
#: client takes the server for a legacy one and says ``initialize``.
OLDER_SERVER = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message or "method" not in message:
        continue
    if message["method"] == "server/discover":
        error = {"code": -32005, "message": "Rate limit exceeded", "data": {"retryAfter": 30.0}}
    else:
        error = {"code": -32603, "message": "not asked: " + message["method"]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}) + "\\n")
    sys.stdout.flush()
"""


def test_a_probe_refused_with_a_legacy_code_is_answered_as_a_legacy_server_would_be(tmp_path):
    script = tmp_path / "older_server.py"
    script.write_text(OLDER_SERVER)
    with pytest.raises(McpError) as refused:
        Client.stdio([sys.executable, str(script)], timeout=WAIT, stderr="discard")
    assert (refused.value.code, refused.value.message) == (-32603, "not asked: initialize")
