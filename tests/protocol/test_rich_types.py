"""Rich types as FastMCP users write them (issue 23, item 1): datetime, date, time, UUID, Decimal, Path,
Enum, pydantic models and dataclasses holding them, as parameters and as returns; ``Annotated`` with
pydantic's ``Field``; resource template variables converted to their annotations; return types with
no JSON form refused at registration, values with none an ``isError`` result; a name registered twice.

Everything through the public API, in memory (the same JSON bytes as stdio); pydantic stays unloaded
by a plain server (a subprocess checks ``sys.modules``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import re
import subprocess
import sys
import textwrap
import uuid
import warnings
from decimal import Decimal
from pathlib import Path
from typing import Annotated

import annotated_types as at
import pytest
from pydantic import AnyUrl, BaseModel, Field

from mcp_ref import Client, InvalidParams, McpError, Server

LATEST = "2025-11-25"
MODERN = "2026-07-28"  # an isError result too (server/tools §Error Handling)
BEFORE = "2025-06-18"  # bad arguments are -32602 before 2025-11-25, an isError result from it on

ID = uuid.UUID("12345678-1234-5678-1234-567812345678")
WHEN = dt.datetime(2025, 3, 4, 5, 6, 7, tzinfo=dt.UTC)


class Colour(enum.Enum):
    RED = "red"
    GREEN = "green"


class Address(BaseModel):
    street: str
    city: str = "Paris"


class Person(BaseModel):
    """A person with a pydantic submodel (its schema has $defs)."""

    name: str
    age: int = Field(ge=0, description="Age in years")
    address: Address
    born: dt.date | None = None


@dataclasses.dataclass
class Booking:
    """A dataclass holding rich values, nested."""

    id: uuid.UUID
    at: dt.datetime
    price: Decimal
    colour: Colour
    guest: Person


class Opaque:
    """A class with no JSON form."""


def rich_server() -> Server:
    server = Server("rich")

    @server.tool
    def shift(when: dt.datetime, days: int = 1) -> dt.datetime:
        """A datetime in, a datetime out."""
        return when + dt.timedelta(days=days)

    @server.tool
    def kinds(
        day: dt.date, at: dt.time, ident: uuid.UUID, amount: Decimal, where: Path, colour: Colour
    ) -> dict:
        """Every rich scalar as a parameter: what arrived, by type name."""
        return {
            name: type(value).__name__
            for name, value in {
                "day": day,
                "at": at,
                "ident": ident,
                "amount": amount,
                "where": where,
                "colour": colour,
            }.items()
        }

    @server.tool
    def greet(person: Person) -> Person:
        """A pydantic model in and out."""
        assert isinstance(person, Person) and isinstance(person.address, Address)
        return person.model_copy(update={"name": person.name.upper()})

    @server.tool
    def book(guest: Person, price: Decimal) -> Booking:
        """A dataclass holding rich values and a pydantic model."""
        return Booking(id=ID, at=WHEN, price=price, colour=Colour.GREEN, guest=guest)

    @server.tool
    def total(amounts: list[Decimal]) -> Decimal:
        """A Decimal return: wrapped, as a string (no digit lost)."""
        return sum(amounts, Decimal(0))

    @server.tool
    def ident() -> uuid.UUID:
        """A UUID return: a string, as text."""
        return ID

    @server.tool
    def described(
        city: Annotated[str, Field(description="The city's name", min_length=2, max_length=40)],
        count: Annotated[int, Field(description="How many", ge=1, le=10)] = 3,
        legacy: Annotated[str, "A bare string describes too"] = "x",
    ) -> str:
        """pydantic's Field in Annotated: its description and constraints."""
        return f"{city}:{count}:{legacy}"

    @server.tool
    def site(url: AnyUrl) -> AnyUrl:
        """A type made for pydantic: through its TypeAdapter."""
        assert isinstance(url, AnyUrl)
        return url

    @server.tool
    def liar() -> dict:
        """Annotated as a dict, returns something with no JSON form."""
        return {"thing": Opaque()}

    @server.resource("users://{user_id}/profile")
    def profile(user_id: int) -> dict:
        """A template variable annotated int arrives as an int."""
        return {"id": user_id, "type": type(user_id).__name__}

    @server.resource("days://{day}/{colour}")
    def day_colour(day: dt.date, colour: Colour) -> str:
        """A date and an Enum from the URI."""
        return f"{day.isoformat()} {day.strftime('%A')} {colour.name}"

    return server


@pytest.fixture(params=[LATEST, BEFORE])
def client(request):
    with Client.in_memory(rich_server(), protocol_version=request.param) as client:
        yield client


@pytest.fixture
def latest():
    with Client.in_memory(rich_server(), protocol_version=LATEST) as client:
        yield client


def tool_named(client, name):
    return next(t for t in client.list_tools() if t.name == name)


def refused(client, name: str, arguments: dict) -> str:
    """The message of a call refused for its arguments: -32602 before 2025-11-25, isError from it on."""
    try:
        result = client.call_tool(name, arguments)
    except InvalidParams as exc:
        assert client.protocol_version < LATEST
        return str(exc)
    assert result.is_error and client.protocol_version >= LATEST, result
    return result.content[0].text


# -- parameters --------------------------------------------------------------------------------------


def test_rich_scalars_have_the_schema_their_annotation_implies(latest):
    schema = tool_named(latest, "kinds").input_schema
    props = schema["properties"]
    assert props["day"] == {"type": "string", "format": "date"}
    assert props["at"] == {"type": "string", "format": "time"}
    assert props["ident"] == {"type": "string", "format": "uuid"}
    assert props["amount"] == {"type": ["number", "string"]}
    assert props["where"] == {"type": "string", "format": "path"}
    assert props["colour"] == {"type": "string", "enum": ["red", "green"]}
    assert tool_named(latest, "shift").input_schema["properties"]["when"] == {
        "type": "string",
        "format": "date-time",
    }


def test_rich_arguments_arrive_as_their_python_types(client):
    result = client.call_tool(
        "kinds",
        {
            "day": "2025-03-04",
            "at": "05:06:07Z",
            "ident": str(ID),
            "amount": "1.10",
            "where": "/tmp/x",
            "colour": "green",
        },
    )
    assert not result.is_error, result
    assert result.structured_content == {
        "day": "date",
        "at": "time",
        "ident": "UUID",
        "amount": "Decimal",
        "where": "PosixPath" if sys.platform != "win32" else "WindowsPath",
        "colour": "Colour",
    }
    assert (
        client.call_tool(
            "kinds",
            {
                "day": "2025-03-04",
                "at": "05:06+01:00",
                "ident": str(ID),
                "amount": 2.5,
                "where": "p",
                "colour": "red",
            },
        ).structured_content["amount"]
        == "Decimal"
    )


def test_a_datetime_goes_in_and_comes_out_as_iso_8601(client):
    result = client.call_tool("shift", {"when": "2025-03-04T05:06:07Z", "days": 2})
    assert not result.is_error
    assert result.content[0].text == '"2025-03-06T05:06:07+00:00"'
    if client.protocol_version >= "2025-06-18":  # wrapped, with its format, as FastMCP does
        assert result.structured_content == {"result": "2025-03-06T05:06:07+00:00"}


@pytest.mark.parametrize(
    "arguments, named",
    [
        (
            {"when": "the day after tomorrow"},
            "when: 'the day after tomorrow' is not a valid date-time: expected an RFC 3339 "
            "date-time with an offset, e.g. '2027-01-01T09:00:00Z'",
        ),
        (
            {"when": "2025-02-30T00:00:00Z"},
            "when: '2025-02-30T00:00:00Z' is not a valid date-time",
        ),
    ],
)
def test_a_bad_rich_value_is_refused_as_bad_arguments_naming_it(client, arguments, named):
    assert named in refused(client, "shift", arguments)


def test_bad_uuid_decimal_and_enum_values_are_refused(client):
    good = {
        "day": "2025-03-04",
        "at": "05:06+01:00",
        "ident": str(ID),
        "amount": "1",
        "where": "p",
        "colour": "red",
    }
    assert "ident: 'nope' is not a valid UUID" in refused(
        client, "kinds", {**good, "ident": "nope"}
    )
    assert "amount: 'lots' is not a decimal number" in refused(
        client, "kinds", {**good, "amount": "lots"}
    )
    assert "amount: 'NaN' is not a finite decimal number" in refused(
        client, "kinds", {**good, "amount": "NaN"}
    )
    assert refused(client, "kinds", {**good, "colour": "blue"})  # the schema's enum refuses it


def test_a_pydantic_model_parameter_uses_pydantics_schema_inlined(latest):
    schema = tool_named(latest, "greet").input_schema["properties"]["person"]
    expected = Person.model_json_schema()
    assert "$defs" in expected  # the model really has a submodel: the reference is inlined
    assert "$ref" not in str(schema) and "$defs" not in schema
    assert schema["properties"]["address"] == {**expected["$defs"]["Address"]}
    assert (
        schema["properties"]["age"]
        == expected["properties"]["age"]
        == {"description": "Age in years", "minimum": 0, "title": "Age", "type": "integer"}
    )
    assert schema["required"] == expected["required"]


def test_a_pydantic_model_goes_in_and_comes_out(client):
    person = {"name": "ada", "age": 36, "address": {"street": "1 Rue"}, "born": "1815-12-10"}
    result = client.call_tool("greet", {"person": person})
    assert not result.is_error, result
    out = {
        "name": "ADA",
        "age": 36,
        "address": {"street": "1 Rue", "city": "Paris"},
        "born": "1815-12-10",
    }
    if client.protocol_version >= "2025-06-18":
        assert result.structured_content == out  # an object: not wrapped
    assert (
        tool_named(client, "greet").output_schema["properties"]["address"]["properties"]["city"][
            "default"
        ]
        == "Paris"
    )


def test_a_pydantic_validation_failure_is_refused_as_bad_arguments(client):
    # Valid against the JSON Schema except the constraint, which jsonschema catches: -32602 / isError.
    message = refused(
        client, "greet", {"person": {"name": "x", "age": -1, "address": {"street": "s"}}}
    )
    assert "age" in message
    # A date that does not exist passes the schema (format is not asserted) and fails in pydantic.
    message = refused(
        client,
        "greet",
        {"person": {"name": "x", "age": 1, "address": {"street": "s"}, "born": "2025-02-30"}},
    )
    assert message.startswith("Invalid arguments for tool greet: person:") and "born" in message
    assert "errors.pydantic.dev" not in message


# -- returns -------------------------------------------------------------------------------------------


def test_a_dataclass_holding_rich_values_is_structured_content(client):
    person = {"name": "ada", "age": 36, "address": {"street": "1 Rue"}}
    result = client.call_tool("book", {"guest": person, "price": "12.50"})
    assert not result.is_error, result
    expected = {
        "id": str(ID),
        "at": "2025-03-04T05:06:07+00:00",
        "price": "12.50",
        "colour": "green",
        "guest": {
            "name": "ada",
            "age": 36,
            "address": {"street": "1 Rue", "city": "Paris"},
            "born": None,
        },
    }
    import json

    assert json.loads(result.content[0].text) == expected
    if client.protocol_version >= "2025-06-18":
        assert result.structured_content == expected
        schema = tool_named(client, "book").output_schema
        assert schema["properties"]["at"] == {"type": "string", "format": "date-time"}
        assert schema["properties"]["guest"]["properties"]["address"]["type"] == "object"


def test_decimal_and_uuid_returns(client):
    result = client.call_tool("total", {"amounts": ["0.10", "0.20"]})
    assert result.content[0].text == '"0.30"'  # exact: no float on the way
    if client.protocol_version >= "2025-06-18":
        assert result.structured_content == {"result": "0.30"}
    assert client.call_tool("ident").content[0].text == f'"{ID}"'


def test_a_type_made_for_pydantic_goes_through_its_type_adapter(client):
    assert tool_named(client, "site").input_schema["properties"]["url"]["format"] == "uri"
    assert (
        client.call_tool("site", {"url": "https://example.com/a"}).content[0].text
        == '"https://example.com/a"'
    )
    assert "url:" in refused(client, "site", {"url": "not a url"})


def test_a_value_with_no_json_form_is_an_is_error_result_naming_it(client):
    result = client.call_tool("liar")
    assert result.is_error
    assert result.content[0].text == (
        "Tool liar returned a value that cannot be serialised: "
        "Object of type Opaque is not JSON serializable"
    )


def test_a_return_type_with_no_json_form_is_refused_at_registration():
    server = Server("refuses")

    def opaque() -> Opaque:
        return Opaque()

    with pytest.raises(
        TypeError, match=r"tool opaque: return type .*Opaque.* cannot be serialised"
    ):
        server.add_tool(opaque)

    def opaque_list() -> list[Opaque]:
        return []

    with pytest.raises(TypeError, match="tool opaque_list: return type"):
        server.add_tool(opaque_list)
    assert server.get_tool("opaque") is None

    def raw() -> list[bytes]:  # bytes are content blocks: fine, no schema
        return [b"x"]

    server.add_tool(raw)
    assert server.get_tool("raw").output_schema is None


def test_a_parameter_type_with_no_json_form_is_refused_at_registration():
    def takes(thing: Opaque) -> str:
        return ""

    with pytest.raises(TypeError, match="takes: parameter 'thing': unsupported type annotation"):
        Server("refuses").add_tool(takes)


# -- Annotated and Field ------------------------------------------------------------------------------


def test_annotated_field_gives_description_and_constraints(client):
    props = tool_named(client, "described").input_schema["properties"]
    assert props["city"] == {
        "type": "string",
        "description": "The city's name",
        "minLength": 2,
        "maxLength": 40,
    }
    assert props["count"] == {
        "type": "integer",
        "description": "How many",
        "minimum": 1,
        "maximum": 10,
        "default": 3,
    }
    assert props["legacy"] == {
        "type": "string",
        "description": "A bare string describes too",
        "default": "x",
    }
    assert client.call_tool("described", {"city": "Oslo", "count": 2}).content[0].text == "Oslo:2:x"
    assert refused(client, "described", {"city": "Oslo", "count": 11})
    assert refused(client, "described", {"city": "O"})


# -- resource templates --------------------------------------------------------------------------------


def test_template_variables_arrive_converted_to_their_annotations(client):
    contents = client.read_resource("users://42/profile").contents[0]
    assert contents.text == '{"id": 42, "type": "int"}'
    assert (
        client.read_resource("days://2025-03-04/green").contents[0].text
        == "2025-03-04 Tuesday GREEN"
    )


def test_a_template_variable_that_is_not_its_type_is_invalid_params(client):
    with pytest.raises(InvalidParams, match="template variable user_id: 'abc' is not a integer"):
        client.read_resource("users://abc/profile")
    with pytest.raises(
        InvalidParams,
        match="template variable day: '2025-13-01' is not a valid date: expected an RFC 3339 date",
    ):
        client.read_resource("days://2025-13-01/red")
    with pytest.raises(McpError, match="template variable colour: 'blue' is not one of"):
        client.read_resource("days://2025-03-04/blue")


# -- a name registered twice ----------------------------------------------------------------------------


def test_registering_a_name_twice_warns_and_the_later_one_wins():
    server = Server("twice")

    @server.tool
    def echo(x: int) -> int:
        return x

    with pytest.warns(
        UserWarning, match="tool 'echo' is registered already: this registration replaces it"
    ):

        @server.tool(name="echo")
        def echo2(x: int) -> int:
            return x * 10

    with pytest.warns(UserWarning, match="prompt 'p' is registered already"):
        server.add_prompt(lambda: "one", name="p")
        server.add_prompt(lambda: "two", name="p")
    with pytest.warns(UserWarning, match="resource 'r://x' is registered already"):
        server.add_resource(lambda: "one", "r://x")
        server.add_resource(lambda: "two", "r://x")
    with pytest.warns(UserWarning, match="resource template 'r://{y}' is registered already"):
        server.add_resource(lambda y: "one", "r://{y}")
        server.add_resource(lambda y: "two " + y, "r://{y}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        server.add_tool(lambda x: x, name="other")  # a new name: no warning

    with Client.in_memory(server) as client:
        assert client.call_tool("echo", {"x": 2}).structured_content == {"result": 20}
        assert [t.name for t in client.list_tools()].count("echo") == 1
        assert client.get_prompt("p").messages[0].content.text == "two"
        assert client.read_resource("r://x").contents[0].text == "two"
        assert client.read_resource("r://z").contents[0].text == "two z"
        assert len(client.list_resource_templates()) == 1


def _registrations(server):
    """Each way of registering, as (what, how): each registers its name a second time."""

    def bare_tool():
        @server.tool
        def echo(x: int) -> int:
            return x

    def called_tool():
        @server.tool()
        def echo(x: int) -> int:
            return x

    def bare_prompt():
        @server.prompt
        def hello() -> str:
            return "hi"

    def called_prompt():
        @server.prompt(name="hello")
        def other() -> str:
            return "hi"

    def resource():
        @server.resource("r://x")
        def read() -> str:
            return "x"

    def template():
        @server.resource("r://{y}")
        def read(y: str) -> str:
            return y

    return [
        ("tool", bare_tool),
        ("tool", called_tool),
        ("tool", lambda: server.add_tool(lambda x: x, name="echo")),
        ("prompt", bare_prompt),
        ("prompt", called_prompt),
        ("prompt", lambda: server.add_prompt(lambda: "hi", name="hello")),
        ("resource", resource),
        ("resource", lambda: server.add_resource(lambda: "x", "r://x")),
        ("template", template),
    ]


def test_a_warning_about_a_name_registered_twice_names_the_registering_line_in_every_form():
    server = Server("lines")
    registrations = _registrations(server)
    for _, register in registrations:
        register()
    for what, register in registrations:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            register()
        assert [w.filename for w in caught] == [__file__], (what, [str(w) for w in caught])


def test_a_warning_about_a_tool_name_off_the_spec_names_the_registering_line():
    server = Server("names")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        @server.tool
        def bare(x: int) -> int:
            return x

        @server.tool(name="has space")
        def spaced(x: int) -> int:
            return x

        server.add_tool(lambda: 1, name="also space")
    assert len(caught) == 2, [str(w) for w in caught]
    assert [w.filename for w in caught] == [__file__, __file__]


# -- dates and times are RFC 3339: a datetime or a time carries its offset (issue 34, item 6) ------------

#: A value the server holds, aware (as ``datetime.now(timezone.utc)`` gives).
DEADLINE = dt.datetime(2027, 1, 1, 12, tzinfo=dt.UTC)


def clock_server() -> Server:
    server = Server("clock")

    @server.tool
    def before_deadline(when: dt.datetime) -> bool:
        """Compares the argument with an aware value the server holds."""
        return when < DEADLINE

    @server.tool
    def offset_of(when: dt.datetime) -> str:
        """The offset the argument arrived with, and the value back."""
        return f"{when.utcoffset()} {when.isoformat()}"

    @server.tool
    def opens(at: dt.time) -> str:
        """A time of day, with its offset."""
        return f"{at.utcoffset()} {at.isoformat()}"

    @server.tool
    def on(day: dt.date) -> str:
        """A date."""
        return day.isoformat()

    @server.tool
    def local_nine() -> dt.datetime:
        """A naive datetime out: the local time Python takes it for."""
        return dt.datetime(2027, 1, 1, 9)

    return server


@pytest.fixture(params=[MODERN, LATEST, BEFORE])
def clock(request):
    with Client.in_memory(clock_server(), protocol_version=request.param) as client:
        yield client


@pytest.mark.parametrize(
    "when, why",
    [
        ("2027-01-01", "'2027-01-01' is a date without a time"),
        ("2027-01-01T09:00:00", "'2027-01-01T09:00:00' has no UTC offset"),
        ("2027-01-01T09:00", "'2027-01-01T09:00' has no UTC offset"),
        ("2027-01-01T09:00:00.5", "'2027-01-01T09:00:00.5' has no UTC offset"),
        ("20270101T090000Z", "'20270101T090000Z' is not a valid date-time"),
        ("２０２７-01-01T09:00:00Z", "'２０２７-01-01T09:00:00Z' is not a valid date-time"),
        ("2027-01-01T09:00:00+24:00", "'2027-01-01T09:00:00+24:00' is not a valid date-time"),
        ("2027-01-01T23:59:60Z", "'2027-01-01T23:59:60Z' is not a valid date-time"),
    ],
)
def test_a_datetime_without_a_time_or_an_offset_is_refused_naming_the_format(clock, when, why):
    """The issue's case: before, '2027-01-01' arrived naive and the comparison with an aware value
    raised TypeError, which the client saw as an internal error.  Now the call is refused as bad
    arguments (-32602 before 2025-11-25, an isError result from it on: server/tools §Error Handling),
    naming the parameter, what is wrong and the format to send."""
    message = refused(clock, "before_deadline", {"when": when})
    assert f"when: {why}" in message, message
    assert "expected an RFC 3339 date-time with an offset, e.g. '2027-01-01T09:00:00Z'" in message
    assert "internal error" not in message.lower()
    assert clock.call_tool(
        "before_deadline", {"when": "2026-12-31T23:00:00Z"}
    ).structured_content == {"result": True}  # the session serves on


@pytest.mark.parametrize(
    "when, offset, back",
    [
        ("2027-01-01T09:00:00Z", "0:00:00", "2027-01-01T09:00:00+00:00"),
        ("2027-01-01t09:00:00z", "0:00:00", "2027-01-01T09:00:00+00:00"),
        ("2027-01-01T09:00:00+05:30", "5:30:00", "2027-01-01T09:00:00+05:30"),
        ("2027-01-01 09:00-08:00", "-1 day, 16:00:00", "2027-01-01T09:00:00-08:00"),
        ("2027-01-01T09:00:00.1234567-00:00", "0:00:00", "2027-01-01T09:00:00.123456+00:00"),
    ],
)
def test_a_datetime_arrives_aware_with_the_offset_it_was_sent_with(clock, when, offset, back):
    result = clock.call_tool("offset_of", {"when": when})
    assert not result.is_error, result
    assert result.text == f"{offset} {back}"


def test_a_time_needs_its_offset_too_and_a_date_is_a_full_date(clock):
    """RFC 3339 full-time (JSON Schema's "time") has an offset; full-date is YYYY-MM-DD."""
    assert (
        "at: '09:00' has no UTC offset: expected an RFC 3339 time with an offset, e.g. '09:00:00Z'"
        in (refused(clock, "opens", {"at": "09:00"}))
    )
    assert "at: '9:00Z' is not a valid time" in refused(clock, "opens", {"at": "9:00Z"})
    assert clock.call_tool("opens", {"at": "09:00:00+01:00"}).text == "1:00:00 09:00:00+01:00"
    assert clock.call_tool("opens", {"at": "09:30Z"}).text == "0:00:00 09:30:00+00:00"
    assert clock.call_tool("on", {"day": "2027-01-01"}).text == "2027-01-01"
    for bad in ("20270101", "2027-01-01T00:00:00Z", "2027-W01-1"):
        assert (
            f"day: {bad!r} is not a valid date: expected an RFC 3339 date, e.g. '2027-01-01'"
            in (refused(clock, "on", {"day": bad}))
        )


def test_a_bound_without_a_time_zone_is_refused_at_registration():
    """Every datetime argument arrives aware, and an aware value does not compare with a naive one:
    a naive bound is refused when the tool is registered, not at each call."""
    server = Server("bounds")

    def after(when: Annotated[dt.datetime, at.Gt(dt.datetime(2027, 1, 1))]) -> str:
        return "x"

    def morning(t: Annotated[dt.time, Field(lt=dt.time(12))]) -> str:
        return "x"

    for tool in (after, morning):
        with pytest.raises(TypeError, match="the bound has no time zone"):
            server.add_tool(tool)


#: A zone a parameter declares for values without an offset (fixed: no tz database needed).
CET = dt.timezone(dt.timedelta(hours=1), "CET")


def zone_server() -> Server:
    server = Server("zones")

    @server.tool
    def meet(when: Annotated[dt.datetime, CET, "When to meet"]) -> str:
        """A datetime whose naive values are taken in CET."""
        return f"{when.utcoffset()} {when.isoformat()}"

    return server


@pytest.fixture(params=[MODERN, LATEST, BEFORE])
def zones(request):
    with Client.in_memory(zone_server(), protocol_version=request.param) as client:
        yield client


def test_a_declared_default_zone_takes_a_value_without_an_offset_in_it(zones):
    """``Annotated[datetime, zone]``: a value without an offset is taken in ``zone``; one with an
    offset keeps it; a date alone is still refused.  The schema does not claim ``date-time``
    (which needs the offset) and says what is taken instead."""
    schema = tool_named(zones, "meet").input_schema["properties"]["when"]
    assert schema == {
        "type": "string",
        "description": "When to meet (an RFC 3339 date-time; without an offset, CET time)",
    }
    assert zones.call_tool("meet", {"when": "2027-01-01T09:00"}).text == (
        "1:00:00 2027-01-01T09:00:00+01:00"
    )
    assert zones.call_tool("meet", {"when": "2027-01-01T09:00:00-05:00"}).text == (
        "-1 day, 19:00:00 2027-01-01T09:00:00-05:00"
    )
    message = refused(zones, "meet", {"when": "2027-01-01"})
    assert "when: '2027-01-01' is a date without a time: expected a date and time, e.g. " in message
    assert "'2027-01-01T09:00:00' (CET time) or '2027-01-01T09:00:00Z'" in message


def test_a_default_zone_from_the_tz_database_follows_its_offset_on_that_date():
    zoneinfo = pytest.importorskip("zoneinfo")
    try:
        paris = zoneinfo.ZoneInfo("Europe/Paris")
    except zoneinfo.ZoneInfoNotFoundError:
        pytest.skip("no time zone database on this system")
    server = Server("paris")

    def meet(when: dt.datetime) -> str:
        """A datetime whose naive values are Paris time."""
        return when.isoformat()

    # (the module's annotations are strings, and ``paris`` is local: the hint is given as an object)
    meet.__annotations__["when"] = Annotated[dt.datetime, paris]
    server.add_tool(meet)
    with Client.in_memory(server) as client:
        assert client.call_tool("meet", {"when": "2027-01-01T09:00"}).text == (
            "2027-01-01T09:00:00+01:00"
        )
        assert client.call_tool("meet", {"when": "2027-07-01T09:00"}).text == (
            "2027-07-01T09:00:00+02:00"
        )


def test_a_default_zone_applies_to_a_datetime_only():
    """A time has no date to find a zone's offset on; an optional datetime takes the zone inside;
    pydantic's markers would validate the naive value again, without it."""
    server = Server("bad zones")

    def at_time(t: Annotated[dt.time, CET]) -> str:
        return "x"

    def optional(t: Annotated[dt.datetime | None, CET] = None) -> str:
        return "x"

    def with_pydantic(t: Annotated[dt.datetime, CET, Field(gt=DEADLINE)]) -> str:
        return "x"

    for tool, words in (
        (at_time, "cannot enforce a default zone (CET) on time: it applies to a datetime"),
        (optional, "write Annotated[datetime, zone] | None for an optional one"),
        (with_pydantic, "with pydantic's markers: use annotated_types'"),
    ):
        with pytest.raises(TypeError, match=re.escape(words)):
            server.add_tool(tool)

    def fine(t: Annotated[dt.datetime, CET] | None = None) -> str:
        return "none" if t is None else t.isoformat()

    server.add_tool(fine)
    with Client.in_memory(server) as client:
        assert client.call_tool("fine", {}).text == "none"
        assert (
            client.call_tool("fine", {"t": "2027-01-01T09:00"}).text == "2027-01-01T09:00:00+01:00"
        )


@pytest.mark.slow
def test_over_stdio_a_naive_argument_is_refused_and_a_naive_result_gets_the_local_offset(tmp_path):
    """A real transport: the server in a subprocess whose local zone is Europe/Paris (TZ).  A naive
    argument is refused as bad arguments; a naive datetime returned is the local time Python takes
    it for, written with that zone's offset (RFC 3339 needs one)."""
    import os

    script = tmp_path / "clock.py"
    script.write_text(
        textwrap.dedent("""
        import datetime as dt
        from mcp_ref import Server

        server = Server("clock")

        @server.tool
        def before_deadline(when: dt.datetime) -> bool:
            "Compares with an aware value."
            return when < dt.datetime(2027, 1, 1, 12, tzinfo=dt.timezone.utc)

        @server.tool
        def local_nine() -> dt.datetime:
            "A naive datetime out."
            return dt.datetime(2027, 1, 1, 9)

        server.run_stdio()
    """)
    )
    env = {**os.environ, "TZ": "Europe/Paris"}
    for version in (LATEST, BEFORE):
        with Client.stdio(
            [sys.executable, str(script)], env=env, protocol_version=version
        ) as client:
            message = refused(client, "before_deadline", {"when": "2027-01-01"})
            assert "when: '2027-01-01' is a date without a time" in message, message
            assert "e.g. '2027-01-01T09:00:00Z'" in message
            assert client.call_tool(
                "before_deadline", {"when": "2027-01-01T12:30:00+01:00"}
            ).structured_content == {"result": True}
            result = client.call_tool("local_nine")
            assert result.structured_content == {"result": "2027-01-01T09:00:00+01:00"}, result


# -- pydantic stays optional -----------------------------------------------------------------------------


@pytest.mark.slow
def test_a_server_with_rich_types_but_no_pydantic_never_loads_pydantic(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(
        textwrap.dedent("""
        import datetime, sys, uuid
        from decimal import Decimal
        from mcp_ref import Client, Server

        server = Server("no-pydantic")

        @server.tool
        def later(when: datetime.date, amount: Decimal) -> dict:
            return {"when": when + datetime.timedelta(days=1), "amount": amount, "id": uuid.UUID(int=1)}

        with Client.in_memory(server) as client:
            result = client.call_tool("later", {"when": "2025-01-31", "amount": "1.5"})
        assert result.structured_content == {"when": "2025-02-01", "amount": "1.5",
                                             "id": "00000000-0000-0000-0000-000000000001"}, result
        print("pydantic" in sys.modules)
    """)
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


# -- Field() as a default, timedelta, string-format returns ---------------------------------------------


def field_server() -> Server:
    server = Server("fields")

    @server.tool
    def order(
        item: str = Field(description="What to order"),
        count: int = Field(2, ge=1, description="How many"),
        notes: list[str] = Field(default_factory=list),  # noqa: B008 - pydantic's Field
    ) -> str:
        """pydantic's Field as the default, as FastMCP users write it."""
        return f"{count} x {item} {notes}"

    @server.tool
    def double(wait: dt.timedelta) -> dt.timedelta:
        """A timedelta in (seconds or ISO 8601) and out (ISO 8601)."""
        return wait * 2

    @server.tool
    def today() -> dt.date:
        """A date return: wrapped structured output, as FastMCP gives it."""
        return dt.date(2025, 3, 4)

    return server


@pytest.fixture
def fields():
    with Client.in_memory(field_server(), protocol_version=LATEST) as client:
        yield client


def test_a_field_default_gives_the_schema_and_the_value_when_left_out(fields):
    schema = tool_named(fields, "order").input_schema
    assert schema["required"] == ["item"]
    assert schema["properties"]["item"] == {"type": "string", "description": "What to order"}
    assert schema["properties"]["count"] == {
        "type": "integer",
        "minimum": 1,
        "description": "How many",
        "default": 2,
    }
    assert schema["properties"]["notes"] == {
        "type": "array",
        "items": {"type": "string"},
        "default": [],
    }
    assert fields.call_tool("order", {"item": "tea"}).text == "2 x tea []"
    assert (
        fields.call_tool("order", {"item": "tea", "count": 5, "notes": ["hot"]}).text
        == "5 x tea ['hot']"
    )
    assert refused(fields, "order", {"item": "tea", "count": 0})
    assert refused(fields, "order", {})


@pytest.mark.parametrize(
    "given, doubled",
    [
        ("PT1H30M", "PT3H"),
        (90.5, "PT3M1S"),
        ("P1W", "P14D"),
        ("-PT1S", "-PT2S"),
        (0, "PT0S"),
        ("P1DT0.25S", "P2DT0.5S"),
    ],
)
def test_a_timedelta_goes_in_as_seconds_or_iso_8601_and_comes_out_as_iso_8601(
    fields, given, doubled
):
    result = fields.call_tool("double", {"wait": given})
    assert not result.is_error and result.structured_content == {"result": doubled}


@pytest.mark.parametrize("bad", ["P", "PT", "P1Y", "1 hour", True])
def test_a_bad_duration_is_refused_naming_it(fields, bad):
    assert "wait:" in refused(fields, "double", {"wait": bad})


def test_a_date_return_is_wrapped_structured_output(fields):
    tool = tool_named(fields, "today")
    assert tool.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "string", "format": "date"}},
        "required": ["result"],
    }
    result = fields.call_tool("today")
    assert (
        result.structured_content == {"result": "2025-03-04"}
        and result.content[0].text == '"2025-03-04"'
    )
