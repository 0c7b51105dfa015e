"""Values JSON has no room for, on the way into a tool and out of it: each is the caller's or the
tool's mistake, answered as one (an ``isError`` result from 2025-11-25, -32602 for bad arguments
before), never -32603 "Internal error", and the connection goes on.

* a key a dataclass argument does not declare (``{"p": {"x": 1, "y": 2, "z": 3}}``) is refused and
  named, as an argument the tool does not declare is;
* a float argument too large for a float (``1e400``: the JSON parser reads it as infinity) is
  refused as not a finite number, not computed with;
* a result holding NaN or an infinity (RFC 8259 §6: "Numeric values that cannot be represented in
  the grammar below (such as Infinity and NaN) are not permitted") is the ``isError`` result
  ``tools.tool_result`` promises, naming the problem; so is one holding itself, nested past the
  recursion limit, or a dataclass whose ``init=False`` field was never set.

The server is a real stdio subprocess (tests/servers/odd_values_server.py) driven with raw JSON
lines, so that ``1e400`` reaches it as written.
"""

from __future__ import annotations

import sys
from itertools import count

import pytest
from conftest import SERVERS

SERVER = [sys.executable, str(SERVERS / "odd_values_server.py")]
MODERN_INPUT_ERRORS = "2025-11-25"

pytestmark = pytest.mark.slow
ids = count(1)


def call(peer, name: str, arguments: str = "{}") -> dict:
    """``tools/call`` of ``name`` with ``arguments`` written as JSON text, as sent; its answer."""
    request_id = next(ids)
    peer.send(
        b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "%s", '
        b'"arguments": %s}}\n' % (request_id, name.encode(), arguments.encode())
    )
    answer = peer.recv()
    assert answer["id"] == request_id
    return answer


def error_text(answer: dict) -> str:
    """The text of an ``isError`` result."""
    result = answer["result"]
    assert result["isError"] is True, answer
    assert "structuredContent" not in result
    return result["content"][0]["text"]


def goes_on(peer) -> None:
    assert call(peer, "greet", '{"name": "Ada"}')["result"]["content"][0]["text"] == "hello Ada"


@pytest.fixture
def peer(raw_peer):
    peer = raw_peer(SERVER)
    peer.initialize(MODERN_INPUT_ERRORS)
    return peer


@pytest.fixture
def old_peer(raw_peer):
    peer = raw_peer(SERVER)
    peer.initialize("2025-06-18")
    return peer


# -- a dataclass argument's unknown key --------------------------------------------------------


def test_a_key_a_dataclass_argument_does_not_declare_is_refused_and_named(peer):
    answer = call(peer, "place", '{"p": {"x": 1, "y": 2, "z": 3}}')
    assert error_text(answer) == 'Invalid arguments for tool place: p: unexpected property "z"'
    answer = call(peer, "place", '{"p": {"x": 1, "y": 2, "z": 3, "w": 4}}')
    assert error_text(answer).endswith('p: unexpected properties "z", "w"')
    assert call(peer, "place", '{"p": {"x": 1, "y": 2}}')["result"]["content"][0]["text"] == "1,2"
    goes_on(peer)


def test_an_unknown_key_of_a_nested_dataclass_is_refused_too(peer):
    answer = call(
        peer, "measure", '{"segment": {"start": {"x": 1, "y": 2}, "end": {"x": 4, "y": 0, "z": 1}}}'
    )
    assert (
        error_text(answer) == 'Invalid arguments for tool measure: segment: unexpected property "z"'
    )
    ok = '{"segment": {"start": {"x": 1, "y": 2}, "end": {"x": 4, "y": 0}}}'
    assert call(peer, "measure", ok)["result"]["content"][0]["text"] == "3"
    goes_on(peer)


def test_an_unknown_key_is_refused_in_a_union_of_dataclasses_too(peer):
    answer = call(peer, "shape", '{"s": {"x": 1, "y": 2, "z": 3}}')
    assert error_text(answer) == 'Invalid arguments for tool shape: s: unexpected property "z"'
    answer = call(peer, "shape", '{"s": {"r": 1, "z": 3}}')
    assert error_text(answer).endswith('unexpected property "z"')
    assert call(peer, "shape", '{"s": {"x": 1, "y": 2}}')["result"]["content"][0]["text"] == "Point"
    assert call(peer, "shape", '{"s": {"r": 1}}')["result"]["content"][0]["text"] == "Circle"
    goes_on(peer)


def test_a_typed_dict_later_in_the_union_still_takes_an_object_with_other_keys(peer):
    """A TypedDict keeps keys it does not name: ``Point | Tagged`` given a point with a ``tag``
    is no Point (``tag`` is no field of it) but is a Tagged, as the listed schema says."""
    answer = call(peer, "mark", '{"m": {"x": 1, "y": 2, "tag": "t"}}')
    assert answer["result"]["content"][0]["text"] == "dict"
    assert call(peer, "mark", '{"m": {"x": 1, "y": 2}}')["result"]["content"][0]["text"] == "Point"
    goes_on(peer)


def test_before_2025_11_25_an_unknown_dataclass_key_is_invalid_params(old_peer):
    answer = call(old_peer, "place", '{"p": {"x": 1, "y": 2, "z": 3}}')
    assert answer["error"]["code"] == -32602
    assert (
        answer["error"]["message"] == 'Invalid arguments for tool place: p: unexpected property "z"'
    )
    goes_on(old_peer)


def test_the_listed_schema_of_a_dataclass_stays_as_pydantic_writes_it(peer):
    peer.send_json({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
    tools = {tool["name"]: tool for tool in peer.recv()["result"]["tools"]}
    assert tools["place"]["inputSchema"]["properties"]["p"] == {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"],
    }


# -- a float argument too large for a float ----------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    ['{"x": 1e400}', '{"x": -1e400}', '{"x": 1%s}' % ("0" * 400), '{"x": 1, "xs": [2, 1e999]}'],
    ids=["1e400", "-1e400", "an integer of 401 digits", "in a list"],
)
def test_a_float_argument_a_float_cannot_hold_is_refused_as_not_finite(peer, arguments):
    answer = call(peer, "half", arguments)
    assert error_text(answer).startswith("Invalid arguments for tool half: x")
    assert error_text(answer).endswith("not a finite number: beyond the range of a float")
    assert call(peer, "half", '{"x": 3, "xs": [1.5e308]}')["result"]["content"][0]["text"] == (
        "[1.5, 7.5e+307]"
    )
    goes_on(peer)


def test_before_2025_11_25_a_float_a_float_cannot_hold_is_invalid_params(old_peer):
    answer = call(old_peer, "half", '{"x": 1e400}')
    assert answer["error"]["code"] == -32602
    assert answer["error"]["message"].endswith(
        "x: not a finite number: beyond the range of a float"
    )
    goes_on(old_peer)


# -- a result holding NaN or an infinity -------------------------------------------------------


@pytest.mark.parametrize("tool", ["ratio", "forever", "text_of", "shaped"])
@pytest.mark.parametrize("version", [MODERN_INPUT_ERRORS, "2025-06-18", "2024-11-05"])
def test_a_result_holding_nan_or_infinity_is_a_tool_error_naming_the_problem(
    raw_peer, tool, version
):
    peer = raw_peer(SERVER)
    peer.initialize(version)
    answer = call(peer, tool)
    why = (
        "result.structuredContent.v: nan is not a JSON number"  # walked: the place is named
        if tool == "shaped"
        else "Out of range float values are not JSON compliant"  # (3.13 adds ": nan")
    )
    assert error_text(answer).startswith(
        f"Tool {tool} returned a value that cannot be serialised: {why}"
    )
    goes_on(peer)


@pytest.mark.parametrize(
    ("tool", "arguments", "why"),
    [
        ("graph", "{}", "nested too deeply (or holds itself)"),
        ("chain", '{"depth": 5000}', "nested too deeply (or holds itself)"),
        ("unset", "{}", "'Counter' object has no attribute 'count'"),
    ],
)
def test_a_result_holding_itself_nested_too_deeply_or_unset_is_a_tool_error(
    peer, tool, arguments, why
):
    """Not the -32603 the session would make of the RecursionError (or AttributeError)."""
    answer = call(peer, tool, arguments)
    assert error_text(answer) == f"Tool {tool} returned a value that cannot be serialised: {why}"
    goes_on(peer)
