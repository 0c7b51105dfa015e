"""A client's Python values as arguments: what an mcp_ref server declares as ``when: datetime``,
``id: UUID``, ``amount: Decimal``, an Enum or a dataclass, a client passes as those values, sent as
their JSON form (mcp_ref.jsonable, the converter the server writes its results with), over stdio
and over Streamable HTTP (2026-07-28, where ``x-mcp-header`` parameters carry the same text as the
body).  Prompt arguments and completion values go as strings; elicitation answers may hold dates.
A value with no JSON form is a ValueError naming the tool and the place; the client keeps working.
"""

from __future__ import annotations

import datetime as dt
import enum
import sys
import uuid
from decimal import Decimal

import pytest
from conftest import SERVERS
from http_fixtures import HeaderRecorder, http_client, serve  # noqa: F401 - fixtures

from mcp_ref import ElicitResult

sys.path.insert(0, str(SERVERS))
from python_values_server import Color, Slot, build

SERVER = [sys.executable, str(SERVERS / "python_values_server.py")]
PARIS_WINTER = dt.timezone(dt.timedelta(hours=1))


class Mood(str, enum.Enum):  # noqa: UP042 -- the (str, Enum) form users still write
    """A string Enum: JSON writes its value."""

    OK = "ok"


class Seats(enum.IntEnum):
    """An integer Enum: JSON writes its number."""

    TWO = 2


def booking(when: dt.datetime) -> dict:
    return {
        "when": when,
        "day": dt.date(2027, 1, 2),
        "id": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "amount": Decimal("1234567890.123456789"),
        "color": Color.BLUE,
        "slot": Slot(room="Ada", seats=3),
    }


def arguments_sent(wire, tool: str) -> list[dict]:
    return [
        m["params"]["arguments"] for m in wire.sent("tools/call") if m["params"]["name"] == tool
    ]


@pytest.mark.slow
@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_rich_python_arguments_reach_a_stdio_server_and_come_back_equal(connect, wire, era):
    client = connect(SERVER, era=era)
    assert client.era == era
    when = dt.datetime(2027, 1, 1, 9, 30, 15, 250, tzinfo=PARIS_WINTER)
    given = booking(when)
    result = client.call_tool("book", given)
    assert not result.is_error, result.text
    back = result.structured_content
    assert dt.datetime.fromisoformat(back["when"]) == when and back["offset_seconds"] == 3600
    assert dt.date.fromisoformat(back["day"]) == given["day"]
    assert uuid.UUID(back["id"]) == given["id"]
    assert Decimal(back["amount"]) == given["amount"]  # a string: no digit lost
    assert Color(back["color"]) is Color.BLUE and Slot(**back["slot"]) == given["slot"]
    # on the wire: the JSON form the server writes out (RFC 3339 with the offset kept ...)
    assert arguments_sent(wire, "book")[-1] == {
        "when": "2027-01-01T09:30:15.000250+01:00",
        "day": "2027-01-02",
        "id": "12345678-1234-5678-1234-567812345678",
        "amount": "1234567890.123456789",
        "color": "blue",
        "slot": {"room": "Ada", "seats": 3},
    }
    assert given["when"] is when and given["slot"] == Slot("Ada", 3)  # the caller's dict untouched


@pytest.mark.slow
def test_a_naive_datetime_is_sent_as_the_local_time_with_its_offset(connect, wire):
    client = connect(SERVER)
    naive = dt.datetime(2027, 7, 1, 9, 0)
    result = client.call_tool("book", booking(naive))
    assert not result.is_error, result.text
    local = naive.astimezone()  # what the server writes for a naive datetime too
    assert arguments_sent(wire, "book")[-1]["when"] == local.isoformat()
    assert dt.datetime.fromisoformat(result.structured_content["when"]) == local


@pytest.mark.slow
def test_a_value_with_no_json_form_is_a_clear_error_and_the_client_keeps_working(connect, wire):
    client = connect(SERVER)
    with pytest.raises(ValueError) as refused:
        client.call_tool(
            "book", {**booking(dt.datetime(2027, 1, 1, tzinfo=dt.UTC)), "slot": object()}
        )
    assert str(refused.value) == (
        "tools/call 'book': cannot be sent as JSON: arguments.slot: "
        "a value of type object has no JSON form"
    )
    with pytest.raises(ValueError, match=r"arguments\.slot\.seats\[1\]: nan is not a JSON number"):
        client.call_tool("book", {"slot": {"seats": [1, float("nan")]}})
    assert arguments_sent(wire, "book") == []  # nothing was sent
    when = dt.datetime(2027, 1, 1, 9, tzinfo=dt.UTC)
    assert not client.call_tool("book", booking(when)).is_error  # the next call succeeds


@pytest.mark.slow
def test_a_string_that_looks_like_a_date_stays_a_string(connect, wire):
    client = connect(SERVER)
    result = client.call_tool(
        "routed", {"when": "2027-01-01T09:00:00Z", "id": str(uuid.UUID(int=1))}
    )
    assert result.text == f"2027-01-01T09:00:00+00:00|{uuid.UUID(int=1)}||1"
    assert arguments_sent(wire, "routed")[-1]["when"] == "2027-01-01T09:00:00Z"


def test_http_2026_header_parameters_carry_the_bodys_text(serve, http_client):
    recorder_box = {}

    def wrap(app):
        recorder_box["r"] = HeaderRecorder(app)
        return recorder_box["r"]

    srv = serve(build(), wrap=wrap)
    client = http_client(srv.mcp)
    assert client.era == "modern"
    when = dt.datetime(2027, 1, 1, 9, tzinfo=PARIS_WINTER)
    booking_id = uuid.UUID("12345678-1234-5678-1234-567812345678")
    # called before listing: the server asks for the headers (-32020), the client lists and retries
    # a (str, Enum) and an IntEnum member are JSON as they are: their header is the body's text
    # (their value), not what str() makes of them ("Mood.OK")
    arguments = {"when": when, "id": booking_id, "note": Mood.OK, "seats": Seats.TWO}
    result = client.call_tool("routed", arguments)
    assert result.text == f"2027-01-01T09:00:00+01:00|{booking_id}|ok|2", result.text
    body = arguments_sent(client.wire, "routed")[-1]
    headers = [h for h in recorder_box["r"].seen("POST") if h.get("mcp-name") == "routed"][-1]
    assert headers["mcp-param-when"] == body["when"] == "2027-01-01T09:00:00+01:00"
    assert headers["mcp-param-booking-id"] == body["id"] == str(booking_id)
    assert headers["mcp-param-note"] == body["note"] == "ok"
    assert headers["mcp-param-seats"] == "2" and body["seats"] == 2
    # the same Enum members beside arguments that are all JSON: the message encodes as it is
    # (nothing converted), and the headers are still the body's text
    plain = {"when": body["when"], "id": body["id"], "note": Mood.OK, "seats": Seats.TWO}
    assert client.call_tool("routed", plain).text == result.text
    headers = [h for h in recorder_box["r"].seen("POST") if h.get("mcp-name") == "routed"][-1]
    assert (headers["mcp-param-note"], headers["mcp-param-seats"]) == ("ok", "2")
    back = client.call_tool("book", booking(when)).structured_content
    assert dt.datetime.fromisoformat(back["when"]) == when and Slot(**back["slot"]) == Slot(
        "Ada", 3
    )


@pytest.mark.slow
def test_prompt_arguments_and_completions_are_sent_as_strings(connect, wire):
    client = connect(SERVER)
    got = client.get_prompt("plan", {"day": dt.date(2027, 1, 1), "count": 2, "color": Color.RED})
    assert got.messages[0].content.text == "2027-01-01:3:red"
    assert wire.sent("prompts/get")[-1]["params"]["arguments"] == {
        "day": "2027-01-01",
        "count": "2",
        "color": "red",
    }
    completion = client.complete(
        prompt="plan", argument="day", value=dt.date(2027, 1, 1), context={"count": 3}
    )
    assert completion.values == ["day=2027-01-01", "count=3"]
    with pytest.raises(ValueError, match=r"prompts/get 'plan': .*arguments\.day: a value of type"):
        client.get_prompt("plan", {"day": object()})
    assert client.get_prompt("plan", {"day": "2027-01-02", "count": "1", "color": "x"}).messages


@pytest.mark.slow
def test_an_elicitation_answer_may_hold_dates(connect, wire):
    def answer(request):
        at = dt.datetime(2027, 1, 1, 9, tzinfo=dt.UTC)
        return ElicitResult(action="accept", content={"day": dt.date(2027, 1, 1), "at": at})

    client = connect(SERVER, elicitation_handler=answer)
    result = client.call_tool("ask_day")
    assert result.text == "accept:{'day': '2027-01-01', 'at': '2027-01-01T09:00:00+00:00'}"


@pytest.mark.slow
@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_a_servers_elicitation_may_hold_python_values_in_each_era(connect, wire, era):
    """A handler's ``ctx.elicit`` schema with a ``date`` default: sent as "2027-01-01" as its own
    request (handshake era) and inside an ``input_required`` result (2026-07-28) alike."""

    def answer(request):
        return ElicitResult(
            action="accept",
            content={"day": request.requested_schema["properties"]["day"]["default"]},
        )

    client = connect(SERVER, era=era, elicitation_handler=answer)
    assert client.call_tool("ask_with_default").text == "accept:{'day': '2027-01-01'}"


def test_the_converter_changes_nothing_that_is_json_and_names_the_place():
    from mcp_ref.jsonable import as_text, sendable

    plain = {"a": "2027-01-01", "b": [1, 2.5, True, None], "c": {"d": "x"}}
    assert sendable(plain) == plain
    assert sendable({1: "a"}) == {1: "a"}  # json.dumps writes such keys itself
    with pytest.raises(ValueError, match=r"^x\[0\]\['a b'\]: inf is not a JSON number$"):
        sendable([{"a b": float("inf")}], "x")
    with pytest.raises(ValueError, match=r"a key of type date is not JSON"):
        sendable({dt.date(2027, 1, 1): 1})
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="nested too deeply"):
        sendable(cycle)
    assert as_text("x") == "x" and as_text(Decimal("1.10")) == "1.10" and as_text([1]) == "[1]"
    with pytest.raises(ValueError, match=r"^x: the key nan is not a JSON number$"):
        sendable({float("nan"): 1}, "x")


def test_a_message_that_still_does_not_encode_is_a_value_error_naming_its_method():
    from mcp_ref.jsonable import serialize_answering
    from mcp_ref.jsonrpc import Request

    too_long = 10**5000  # json refuses an integer of more than 4,300 digits
    request = Request(7, "tools/call", {"name": "t", "arguments": {"n": too_long}})
    with pytest.raises(ValueError, match=r"^tools/call 't': cannot be sent as JSON: .*digits"):
        serialize_answering(request)


def test_a_pydantic_model_argument_is_sent_as_its_json_form():
    pydantic = pytest.importorskip("pydantic")
    from mcp_ref import Client, Server

    guest_model = pydantic.create_model("Guest", name=(str, ...), arrives=(dt.datetime, ...))
    server = Server("guests")

    def welcome(guest):
        """Welcome a guest."""
        return f"{guest.name} at {guest.arrives.isoformat()}"

    welcome.__annotations__ = {"guest": guest_model, "return": str}
    server.tool()(welcome)
    arrives = dt.datetime(2027, 1, 1, 9, tzinfo=dt.UTC)
    with Client.in_memory(server) as client:
        result = client.call_tool("welcome", {"guest": guest_model(name="Ada", arrives=arrives)})
    assert result.text == "Ada at 2027-01-01T09:00:00+00:00", result.text


@pytest.mark.slow
def test_a_pydantic_model_argument_names_its_fields_as_the_servers_input_schema_does(connect, wire):
    """A model is sent as the server validates it (validation alias, else the field name), not as
    it serializes (``serialization_alias``, which names the fields of the tool's result)."""
    pytest.importorskip("pydantic")
    sys.path.insert(0, str(SERVERS))
    from aliased_models_server import Filter, Filters, Query

    client = connect([sys.executable, str(SERVERS / "aliased_models_server.py")])
    query = Query(
        user_id=7,
        match="fuzzy",
        Tag="t",
        filters=[Filter(MIN_AGE=3)],
        by_name={"a": Filter(MIN_AGE=4)},
        more=Filters([Filter(MIN_AGE=5)]),
    )
    result = client.call_tool("lookup", {"q": query})
    assert not result.is_error, result.text
    assert arguments_sent(wire, "lookup")[-1] == {
        "q": {
            "user_id": 7,
            "match": "fuzzy",
            "Tag": "t",
            "filters": [{"MIN_AGE": 3}],
            "by_name": {"a": {"MIN_AGE": 4}},
            "more": [{"MIN_AGE": 5}],
        }
    }
    assert result.structured_content == {
        "userId": 7,
        "matchMode": "fuzzy",
        "Tag": "t",
        "filters": [{"minAge": 3}],
        "by_name": {"a": {"minAge": 4}},
        "more": [{"minAge": 5}],
    }


def test_models_in_dataclasses_and_typed_dicts_are_named_as_the_server_validates_them(
    connect, wire
):
    """A model inside a (pydantic or stdlib) dataclass or a TypedDict, and an aliased field of a
    pydantic dataclass or TypedDict, go out by validation alias, as the tool's inputSchema names
    them (2025-06-18 server/tools: arguments conform to the tool's ``inputSchema``).  Before: by
    field name, and the server refused them."""
    pytest.importorskip("pydantic")
    sys.path.insert(0, str(SERVERS))
    from aliased_models_server import Aliased, Boxes, Filter, Plain

    client = connect([sys.executable, str(SERVERS / "aliased_models_server.py")])
    value = Boxes(
        aliased=Aliased(MaxAge=9, inner=Filter(MIN_AGE=1)),
        plain=Plain(Filter(MIN_AGE=2)),
        limits={"AtMost": 3},
        maybe={"AtMost": 4},
        many=[{"AtMost": 5}],
    )
    result = client.call_tool("boxes", {"b": value})
    assert not result.is_error, result.text
    assert arguments_sent(wire, "boxes")[-1] == {
        "b": {
            "aliased": {"MaxAge": 9, "inner": {"MIN_AGE": 1}},
            "plain": {"inner": {"MIN_AGE": 2}},
            "limits": {"AtMost": 3},
            "maybe": {"AtMost": 4},
            "many": [{"AtMost": 5}],
        }
    }


def input_schema_of(client, tool: str) -> dict:
    return next(t.input_schema for t in client.list_tools() if t.name == tool)


@pytest.mark.slow
def test_fields_named_by_an_alias_generator_are_sent_by_the_alias_the_server_validates(
    connect, wire
):
    """pydantic applies a model's ``alias_generator`` to its fields and to those of a TypedDict or
    stdlib dataclass in it that has no pydantic config of its own; a TypedDict with its own
    ``__pydantic_config__`` takes its own generator.  The client sends each key by that alias,
    the keys the tool's inputSchema names (2025-06-18 server/tools: arguments conform to the
    ``inputSchema``).  Before: a TypedDict's or dataclass's keys went by their Python names, and
    the server refused them."""
    pytest.importorskip("pydantic")
    jsonschema = pytest.importorskip("jsonschema")
    sys.path.insert(0, str(SERVERS))
    from aliased_models_server import Card, Filter, Generated

    client = connect([sys.executable, str(SERVERS / "aliased_models_server.py")])
    value = Generated(
        userName="u",
        camel={"firstName": "f", "NICK": "n"},
        shouted={"LAST_NAME": "l"},
        card=Card(1, {"first_name": "a", "nick": "b"}),
        cards=[Card(2, {"first_name": "c", "nick": "d"})],
        inner=Filter(MIN_AGE=3),
    )
    result = client.call_tool("generated", {"g": value})
    assert not result.is_error, result.text
    assert result.text == repr(value)
    sent = arguments_sent(wire, "generated")[-1]
    assert sent == {
        "g": {
            "userName": "u",
            "camel": {"firstName": "f", "NICK": "n"},
            "shouted": {"LAST_NAME": "l"},
            "card": {"cardNumber": 1, "holder": {"firstName": "a", "NICK": "b"}},
            "cards": [{"cardNumber": 2, "holder": {"firstName": "c", "NICK": "d"}}],
            "inner": {"MIN_AGE": 3},
        }
    }
    jsonschema.validate(sent, input_schema_of(client, "generated"))


@pytest.mark.slow
def test_a_field_validated_from_an_alias_path_is_sent_at_the_place_it_names(connect, wire):
    """``validation_alias=AliasPath("address", "lines", 0)`` reads the field from inside nested
    objects and arrays: the client builds that structure (fields sharing a prefix in one object),
    and the server's inputSchema shows the field there too (pydantic's own schema names it by
    its Python name, which its validation refuses).  Alias choices with a plain name go by the
    first plain name, as the schema names them; choices of paths only, at the first path."""
    pytest.importorskip("pydantic")
    jsonschema = pytest.importorskip("jsonschema")
    sys.path.insert(0, str(SERVERS))
    from aliased_models_server import Placed

    client = connect([sys.executable, str(SERVERS / "aliased_models_server.py")])
    value = Placed.model_validate(
        {
            "address": {"city": "Paris", "lines": ["rue", 5]},
            "z": "eu",
            "meta": {"k": "work"},
            "level": {"n": 3},
        }
    )
    result = client.call_tool("placed", {"p": value})
    assert not result.is_error, result.text
    assert result.text == repr(value)
    sent = arguments_sent(wire, "placed")[-1]
    assert sent == {
        "p": {
            "address": {"city": "Paris", "lines": ["rue", 5], "floor": 3},
            "z": "eu",
            "kind_of": "work",
        }
    }
    schema = input_schema_of(client, "placed")
    jsonschema.validate(sent, schema)
    placed = schema["properties"]["p"]
    assert set(placed["properties"]) == {"address", "z", "kind_of"}
    assert placed["properties"]["address"]["required"] == ["city", "lines"]
    with pytest.raises(jsonschema.ValidationError):  # the Python names are not what it takes
        jsonschema.validate(
            {"p": {"city": "Paris", "street": "rue", "number": 5, "z": "eu"}}, schema
        )


def test_an_alias_path_no_value_can_fill_faithfully_is_a_type_error_naming_the_field():
    """An ``AliasPath`` counting from the end of an array, or naming an item after one no field
    fills, has no faithful JSON form: TypeError naming the tool and the field, nothing sent."""
    pydantic = pytest.importorskip("pydantic")
    from mcp_ref.jsonable import UnsendableAlias, sendable_params

    last = pydantic.create_model(
        "Last", x=(int, pydantic.Field(validation_alias=pydantic.AliasPath("items", -1)))
    )
    third = pydantic.create_model(
        "Third", x=(int, pydantic.Field(validation_alias=pydantic.AliasPath("items", 2)))
    )
    for model, why in ((last, r"counts from the end"), (third, r"item 0 no field fills")):
        value = model.model_validate({"items": [0, 0, 5]})
        with pytest.raises(UnsendableAlias, match=rf"tools/call 't'.*field 'x'.*{why}") as caught:
            sendable_params("tools/call", {"name": "t", "arguments": {"m": value}})
        assert isinstance(caught.value, TypeError)
