"""``workbench.deep_json``: JSON read and written at any depth, without recursing, to the very
value and text Python's own ``json`` gives where it can go."""

from __future__ import annotations

import json

import pytest

from mcp_ref.workbench.deep_json import dumps, loads, too_deep

VALUES = [
    None,
    True,
    0,
    -12345678901234567890,
    1.5,
    -2e-7,
    "",
    'a"b\\c é \n \u2028 \ud83d',
    [],
    {},
    [1, [2, [3, {}]], {"a": []}],
    {"b": 1, "a": {"z": [None, False, "x"], "": {}}, "é": [{"k": "v"}]},
]


@pytest.mark.parametrize("value", VALUES)
def test_what_it_writes_and_reads_is_what_json_writes_and_reads(value):
    for sort_keys in (False, True):
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys)
        assert dumps(value, sort_keys=sort_keys) == text
    spaced = json.dumps(value, ensure_ascii=False)
    assert dumps(value, separators=(", ", ": ")) == spaced
    for text in (
        json.dumps(value),
        json.dumps(value, indent=2),
        json.dumps(value, ensure_ascii=False),
    ):
        read = loads(text)
        assert read == json.loads(text) and json.dumps(read) == json.dumps(json.loads(text))
    assert loads(json.dumps(value).encode()) == value


@pytest.mark.parametrize(
    "text",
    ["NaN", "-Infinity", "[Infinity]", "1E+5", "-0", "-0.0", '"\\ud800"', '{"a":1,"b":2,"a":3}'],
)
def test_what_python_s_parser_reads_beyond_strict_json_it_reads_the_same(text):
    """NaN and the infinities (a server may send them: the inspector shows them as strings), a
    lone surrogate escaped, a duplicate key (its last value, in its first place)."""
    assert repr(loads(text)) == repr(json.loads(text))  # a dict's order too


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "[",
        "[1,]",
        '{"a"}',
        '{"a":1,}',
        "{,}",
        "01",
        "[1 2]",
        '{"a":1}x',
        "nul",
        '"\x01"',
        "[-]",
        '{"a" 1}',
        "1.",
        "[}",
        "{]",
        '{"a":1]',
        "[1]]",
        "{1:2}",
        '"abc',
        b'"\xff"',
    ],
)
def test_what_is_not_json_is_a_value_error(text):
    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        loads(text)


def test_json_nested_far_deeper_than_any_stack_is_read_and_written():
    """100,000 levels: Python's own ``json`` raises RecursionError some 900 down (reading,
    writing or comparing); this reads it to the value and writes it back to the text."""
    text = '{"k":' + "[" * 100_000 + '{"token":"t","n":[1.5,null]}' + "]" * 100_000 + "}"
    value = loads(text)
    inner = value["k"]
    for _ in range(100_000):
        (inner,) = inner
    assert inner == {"token": "t", "n": [1.5, None]}
    assert dumps(value) == text
    sorted_inner = '{"n":[1.5,null],"token":"t"}'
    assert dumps(value, sort_keys=True) == text.replace(
        '{"token":"t","n":[1.5,null]}', sorted_inner
    )


def test_too_deep_counts_as_the_session_counts():
    """Deeper than 64 levels, brackets inside strings not counted; bytes or text."""
    assert not too_deep(b"[" * 64 + b"]" * 64)
    assert too_deep(b"[" * 65 + b"]" * 65) and too_deep("[" * 65 + "]" * 65)
    assert not too_deep('["' + "[" * 100 + '"]')
