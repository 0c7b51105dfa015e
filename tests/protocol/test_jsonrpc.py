"""Unit tests of mcp_ref.jsonrpc: classification, validation, parse errors, serialisation."""

import json

import pytest

from mcp_ref import jsonrpc
from mcp_ref.errors import INVALID_REQUEST, PARSE_ERROR, InvalidRequest, ParseError
from mcp_ref.jsonrpc import ErrorResponse, Notification, Request, Response, parse, serialize


def dumps(obj) -> bytes:
    return json.dumps(obj).encode()


# -- classification by key presence ------------------------------------------------------


def test_method_and_id_is_a_request():
    message = parse(
        dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"cursor": "c"}})
    )
    assert message == Request(1, "tools/list", {"cursor": "c"})


def test_method_without_id_is_a_notification():
    message = parse(dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    assert message == Notification("notifications/initialized", None)


def test_id_and_result_is_a_response():
    assert parse(dumps({"jsonrpc": "2.0", "id": "a", "result": {}})) == Response("a", {})


def test_id_and_error_is_an_error_response():
    message = parse(
        dumps({"jsonrpc": "2.0", "id": 9, "error": {"code": -32601, "message": "nope"}})
    )
    assert message == ErrorResponse(9, {"code": -32601, "message": "nope"})


def test_error_response_with_null_id_is_accepted():
    # JSON-RPC 2.0 §5: id null when the request's id could not be read.
    message = parse(
        dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}})
    )
    assert message == ErrorResponse(None, {"code": -32700, "message": "Parse error"})


def test_classification_is_by_key_presence_not_by_value():
    # "params": null is the same as no params; a falsy id 0 or "" is still an id.
    assert parse(dumps({"jsonrpc": "2.0", "id": 0, "method": "ping", "params": None})) == Request(
        0, "ping", None
    )
    assert parse(dumps({"jsonrpc": "2.0", "id": "", "method": "ping"})) == Request("", "ping", None)
    assert parse(dumps({"jsonrpc": "2.0", "id": 0, "result": {}})) == Response(0, {})


@pytest.mark.parametrize("request_id", ["abc", "", 0, -5, 2**53 + 1, "ünïcode-ид"])
def test_string_and_integer_ids_are_kept_exactly(request_id):
    message = parse(dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}))
    assert isinstance(message, Request)
    assert message.id == request_id and type(message.id) is type(request_id)


# -- invalid requests --------------------------------------------------------------------


@pytest.mark.parametrize("bad_id", [None, True, False, 1.5, 1.0, [1], {"a": 1}])
def test_request_id_must_be_a_string_or_integer(bad_id):
    with pytest.raises(InvalidRequest) as info:
        parse(dumps({"jsonrpc": "2.0", "id": bad_id, "method": "ping"}))
    assert info.value.code == INVALID_REQUEST
    assert info.value.request_id is None  # an unusable id is never echoed back


@pytest.mark.parametrize("bad_id", [True, 1.5, [1]])
def test_response_id_must_be_a_string_or_integer(bad_id):
    with pytest.raises(InvalidRequest):
        parse(dumps({"jsonrpc": "2.0", "id": bad_id, "result": {}}))
    with pytest.raises(InvalidRequest):
        parse(dumps({"jsonrpc": "2.0", "id": bad_id, "error": {"code": 1, "message": "x"}}))


def test_valid_id():
    assert jsonrpc.valid_id("x") and jsonrpc.valid_id(0) and jsonrpc.valid_id(-1)
    for bad in (None, True, False, 1.0, b"x", [], {}):
        assert not jsonrpc.valid_id(bad)


@pytest.mark.parametrize("version", [None, "1.0", "2", 2.0, "2.0 "])
def test_jsonrpc_must_be_2_0_and_a_readable_id_is_kept(version):
    obj = {"id": 7, "method": "ping"}
    if version is not None:
        obj["jsonrpc"] = version
    with pytest.raises(InvalidRequest) as info:
        parse(dumps(obj))
    assert info.value.request_id == 7


@pytest.mark.parametrize(
    "obj, request_id",
    [
        ({"jsonrpc": "2.0", "id": "m", "method": 5}, "m"),  # method not a string
        ({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": [1, 2]}, 3),  # positional params
        ({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": "x"}, 3),
        ({"jsonrpc": "2.0", "method": "note", "params": 1}, None),  # notification with bad params
        ({"jsonrpc": "2.0", "id": 4}, 4),  # no method, result or error
        (
            {"jsonrpc": "2.0", "id": 4, "result": {}, "error": {"code": 1, "message": "x"}},
            4,
        ),  # both
        ({"jsonrpc": "2.0", "id": 5, "result": [1]}, 5),  # result not an object
        ({"jsonrpc": "2.0", "id": 6, "error": "bad"}, 6),  # error not an object
        (
            {"jsonrpc": "2.0", "id": 6, "error": {"code": "x", "message": "m"}},
            6,
        ),  # code not an integer
        ({"jsonrpc": "2.0", "result": {}}, None),  # a response without an id
    ],
)
def test_malformed_messages_are_invalid_requests_with_their_readable_id(obj, request_id):
    with pytest.raises(InvalidRequest) as info:
        parse(dumps(obj))
    assert info.value.code == INVALID_REQUEST
    assert info.value.request_id == request_id


@pytest.mark.parametrize("value", [42, "text", None, True, 1.5])
def test_a_non_object_is_an_invalid_request(value):
    with pytest.raises(InvalidRequest) as info:
        parse(dumps(value))
    assert info.value.request_id is None


def test_an_empty_batch_is_one_invalid_request():
    with pytest.raises(InvalidRequest) as info:
        parse(b"[]")
    assert info.value.request_id is None


def test_batch_items_are_classified_one_by_one_with_per_item_errors():
    items = parse(
        dumps(
            [
                {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                42,
                {"jsonrpc": "1.0", "id": "x", "method": "ping"},
                {"jsonrpc": "2.0", "id": None, "method": "ping"},
                {"jsonrpc": "2.0", "id": 2, "result": {}},
                [],
            ]
        )
    )
    assert isinstance(items, list) and len(items) == 7
    assert items[0] == Request(1, "ping", None)
    assert items[1] == Notification("notifications/initialized", None)
    assert isinstance(items[2], InvalidRequest) and items[2].request_id is None
    assert isinstance(items[3], InvalidRequest) and items[3].request_id == "x"
    assert isinstance(items[4], InvalidRequest) and items[4].request_id is None
    assert items[5] == Response(2, {})
    assert isinstance(items[6], InvalidRequest)  # a nested array is not a message


def test_a_batch_of_one_is_still_a_list():
    assert parse(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]') == [Request(1, "ping", None)]


# -- parse errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping"',  # truncated
        b"{'jsonrpc': '2.0'}",  # single quotes
        b"",
        b"   ",
        b"nul",
        b'{"a": 1} {"b": 2}',  # two documents
        b"[1,]",
    ],
)
def test_invalid_json_is_a_parse_error(data):
    with pytest.raises(ParseError) as info:
        parse(data)
    assert info.value.code == PARSE_ERROR


@pytest.mark.parametrize(
    "data",
    [
        b'{"jsonrpc": "2.0", "method": "\xff"}',
        b"\xc3\x28",  # invalid 2-byte sequence
        b'"\xed\xa0\x80"',  # an encoded surrogate
        b"\xfe\xff",
    ],
)
def test_invalid_utf8_is_a_parse_error(data):
    with pytest.raises(ParseError) as info:
        parse(data)
    assert info.value.code == PARSE_ERROR


@pytest.mark.parametrize(
    "text",
    [
        ' \n{"jsonrpc":"2.0","id":1,"method":"ping"}',
        '{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n\t ',
    ],
)
def test_blanks_around_a_message_are_allowed(text):
    """The scanner is called straight for a message with nothing around it; blanks go to decode()."""
    assert parse(text.encode()) == Request(1, "ping", None)


def _json_says(text: str) -> str:
    def refuse(name):
        raise ValueError(f"{name} is not a JSON value")

    try:
        json.loads(text, parse_constant=refuse)
    except ValueError as exc:
        return f"Parse error: {exc}"
    raise AssertionError(f"{text!r} is JSON")


@pytest.mark.parametrize(
    "text", ['{"a": 1} {"b": 2}', '{"a": 1}x', "", "  ", " x", '{"a": NaN}', "-Infinity", '{"a":']
)
def test_a_parse_error_says_what_json_says(text):
    with pytest.raises(ParseError) as info:
        parse(text.encode())
    assert info.value.message == _json_says(text)


def test_a_number_past_the_int_digit_limit_is_a_parse_error_in_plain_words():
    """Python's own message for it names its internals (``sys.set_int_max_str_digits``): the peer
    is told only what is wrong."""
    with pytest.raises(ParseError) as info:
        parse(b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}')
    assert info.value.message == "Parse error: a number with too many digits"


def test_str_input_is_accepted_too():
    assert parse('{"jsonrpc":"2.0","id":1,"method":"ping"}') == Request(1, "ping", None)


def test_utf8_text_survives_parsing():
    message = parse('{"jsonrpc":"2.0","id":1,"method":"x","params":{"t":"héllo ✓ 😀"}}'.encode())
    assert message.params == {"t": "héllo ✓ 😀"}


# -- serialisation -----------------------------------------------------------------------

NASTY = 'line1\nline2\r\n\u2028\u2029\x00\x1b\t"\\ 😀 é'


@pytest.mark.parametrize(
    "message",
    [
        Request(1, "tools/call", {"name": "echo", "arguments": {"text": NASTY}}),
        Notification("notifications/message", {"level": "info", "data": NASTY}),
        Response("id\n2", {"content": [{"type": "text", "text": NASTY}]}),
        ErrorResponse(None, {"code": -32603, "message": NASTY}),
    ],
)
def test_serialize_never_emits_a_newline_or_raw_control_character(message):
    data = serialize(message)
    assert isinstance(data, bytes)
    assert b"\n" not in data and b"\r" not in data
    assert data.isascii()  # so \u2028/\u2029 and NUL are escaped, never raw
    assert all(byte >= 0x20 for byte in data)
    assert "\u2028".encode() not in data and b"\x00" not in data
    assert parse(data) == message


def test_serialize_a_batch_without_newlines():
    batch = [Response(1, {"t": "a\nb"}), ErrorResponse(2, {"code": -32601, "message": "x\n"})]
    data = serialize(batch)
    assert b"\n" not in data
    assert parse(data) == batch


@pytest.mark.parametrize(
    "message",
    [
        Request("r-1", "ping"),
        Request(0, "tools/list", {}),
        Notification("notifications/initialized"),
        Notification("notifications/progress", {"progressToken": "t", "progress": 0.5, "total": 1}),
        Response(42, {}),
        Response("x", {"nested": {"a": [1, 2.5, None, True, "s"]}}),
        ErrorResponse(3, {"code": -32602, "message": "bad", "data": {"why": [1]}}),
        ErrorResponse(None, {"code": -32700, "message": "Parse error"}),
    ],
)
def test_round_trip(message):
    data = serialize(message)
    assert parse(data) == message
    assert json.loads(data) == message.to_dict()


def test_wire_form_of_each_kind():
    assert json.loads(serialize(Request(1, "ping"))) == {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "ping",
    }
    assert json.loads(serialize(Notification("n"))) == {"jsonrpc": "2.0", "method": "n"}
    assert json.loads(serialize(Response(1, {}))) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    # An unreadable id: omitted (2025-11-25 basic §Error Responses), or null for older peers (JSON-RPC 2.0 §5).
    assert json.loads(serialize(ErrorResponse(None, {"code": 1, "message": "m"}))) == {
        "jsonrpc": "2.0",
        "error": {"code": 1, "message": "m"},
    }
    assert json.loads(
        serialize(ErrorResponse(None, {"code": 1, "message": "m"}, null_id=True))
    ) == {"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": "m"}}
    assert b" " not in serialize(Request(1, "a", {"b": [1, 2]}))  # compact separators
