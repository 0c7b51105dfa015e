"""Constraints a tool author declares are enforced before the tool runs (issue 32, item 3).

``Annotated[Decimal, Field(ge=0, le=100)]`` used to take the string ``"-5"``, a datetime bound or a
timedelta bound was never checked, and ``AfterValidator(f)`` never ran ``f``.  Now every constraint
of the annotation is enforced (pydantic's markers by pydantic's own ``TypeAdapter``, annotated_types'
here, without pydantic), or the tool is refused at registration naming what cannot be enforced.

Every call goes through a real client (in memory: the same JSON as stdio), at a revision where a
refusal is -32602 and at one where it is an ``isError`` result; each tool records its calls, so a
test sees that no refused value ever reached it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import inspect
import subprocess
import sys
import textwrap
from decimal import Decimal
from typing import Annotated, Any

import annotated_types as at
import pytest
from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    PlainValidator,
    StringConstraints,
    WrapValidator,
)
from test_rich_types import BEFORE, LATEST, refused

from mcp_ref import Client, InvalidParams, Server

UTC = dt.UTC
START = dt.datetime(2025, 1, 1, tzinfo=UTC)


def no_parent(path: str) -> str:
    """A path check meant to refuse ``..`` (an AfterValidator)."""
    if ".." in path.split("/"):
        raise ValueError("the path must not climb out with '..'")
    return path


def stripped(value: Any) -> Any:
    """A BeforeValidator: it sees the JSON value as it came, before the type's validation."""
    if isinstance(value, str) and value != value.strip():
        raise ValueError("no spaces around the name")
    return value


def even(value: Any) -> int:
    """A PlainValidator: the whole validation of the value."""
    if not isinstance(value, int) or value % 2:
        raise ValueError(f"{value!r} is not an even integer")
    return value


def capped(value: Any, handler: Any) -> int:
    """A WrapValidator: pydantic's own validation, then a cap."""
    number = handler(value)
    if number > 1000:
        raise ValueError("at most 1000")
    return number


def no_parent_segment(path: str) -> bool:
    """An annotated_types Predicate."""
    return ".." not in path.split("/")


@dataclasses.dataclass
class Line:
    """A dataclass whose field carries a constraint."""

    sku: str
    price: Annotated[Decimal, at.Ge(0)]


def constrained_server(ran: list) -> Server:
    """Tools whose parameters declare constraints; each records the values it got in ``ran``."""
    server = Server("declared")

    def tool(func: Any = None, *, loose: bool = False) -> Any:
        """Register ``func`` recording its calls; ``loose``: with the author's own inputSchema, which
        says nothing of the values (so only the annotations can refuse them)."""
        if func is None:
            return functools.partial(tool, loose=loose)

        @functools.wraps(func)
        def record(**kwargs: Any) -> str:
            ran.append((func.__name__, kwargs))
            return repr(func(**kwargs))

        names = inspect.signature(func).parameters
        schema = {"type": "object", "properties": {name: {} for name in names}} if loose else None
        server.add_tool(record, input_schema=schema)
        return func

    # pydantic's markers
    @tool
    def amount(a: Annotated[Decimal, Field(ge=0, le=100)]) -> Any:
        return a

    @tool
    def cents(a: Annotated[Decimal, Field(multiple_of=Decimal("0.01"))]) -> Any:
        return a

    @tool(loose=True)
    def ratio(x: Annotated[float, Field(gt=0, lt=1)]) -> Any:
        return x

    @tool
    def after(when: Annotated[dt.datetime, Field(gt=START)]) -> Any:
        return when

    @tool
    def day(d: Annotated[dt.date, Field(ge=dt.date(2025, 1, 1))]) -> Any:
        return d

    @tool
    def morning(t: Annotated[dt.time, Field(lt=dt.time(12, tzinfo=UTC))]) -> Any:
        return t

    @tool(loose=True)
    def wait(w: Annotated[dt.timedelta, Field(le=3600)]) -> Any:
        return w

    @tool(loose=True)
    def code(s: Annotated[str, Field(min_length=2, max_length=5, pattern=r"^[a-z]+$")]) -> Any:
        return s

    @tool
    def maybe(s: Annotated[str | None, Field(max_length=3)] = None) -> Any:
        return s

    @tool(loose=True)
    def short(s: Annotated[str, StringConstraints(max_length=3)]) -> Any:
        return s

    @tool
    def read(path: Annotated[str, AfterValidator(no_parent)]) -> Any:
        return path

    @tool
    def name(s: Annotated[str, BeforeValidator(stripped)]) -> Any:
        return s

    @tool
    def pair(n: Annotated[int, PlainValidator(even)]) -> Any:
        return n

    @tool
    def cap(n: Annotated[int, WrapValidator(capped)]) -> Any:
        return n

    # annotated_types' markers (checked by mcp_ref itself)
    @tool
    def n_amount(a: Annotated[Decimal, at.Ge(0), at.Le(100)]) -> Any:
        return a

    @tool
    def n_step(a: Annotated[Decimal, at.MultipleOf(Decimal("0.5"))]) -> Any:
        return a

    @tool(loose=True)
    def n_third(n: Annotated[int, at.MultipleOf(3)]) -> Any:
        return n

    @tool(loose=True)
    def n_ratio(x: Annotated[float, at.Interval(gt=0, lt=1)]) -> Any:
        return x

    @tool
    def n_after(when: Annotated[dt.datetime, at.Gt(START)]) -> Any:
        return when

    @tool
    def n_day(d: Annotated[dt.date, at.Lt(dt.date(2030, 1, 1))]) -> Any:
        return d

    @tool
    def n_wait(w: Annotated[dt.timedelta, at.Le(3600)]) -> Any:
        return w

    @tool(loose=True)
    def n_tags(tags: Annotated[list[str], at.MinLen(1), at.MaxLen(3)]) -> Any:
        return tags

    @tool(loose=True)
    def n_word(s: Annotated[str, at.Len(2, 5)]) -> Any:
        return s

    @tool
    def n_read(path: Annotated[str, at.Predicate(no_parent_segment)]) -> Any:
        return path

    @tool
    def n_quiet(s: Annotated[str, at.Not(str.isupper)]) -> Any:
        return s

    @tool
    def n_each(items: list[Annotated[Decimal, at.Ge(0)]]) -> Any:
        return items

    @tool
    def n_line(line: Line) -> Any:
        return line

    @tool(loose=True)
    def n_either(n: Annotated[int, at.Le(5)] | Annotated[int, at.Ge(100)]) -> Any:
        return n

    return server


@pytest.fixture(params=[LATEST, BEFORE])
def calls(request):
    """``(client, ran)``: a client at one revision, and the list of the tool calls that ran."""
    ran: list = []
    with Client.in_memory(constrained_server(ran), protocol_version=request.param) as client:
        yield client, ran


# (tool, arguments, what the refusal says): the argument's name and the constraint
REFUSED = [
    ("amount", {"a": "-5"}, "a: Input should be greater than or equal to 0"),
    ("amount", {"a": "1e999999999"}, "a: Input should be less than or equal to 100"),
    ("amount", {"a": "100.000001"}, "less than or equal to 100"),
    ("cents", {"a": "0.001"}, "a: Input should be a multiple of 0.01"),
    (
        "cents",
        {"a": "1e999999999"},
        # refused, never expanded; pydantic decides how: older releases overflow (mcp_ref's own
        # message), 2.14 says it is no multiple of 0.01
        (
            "a: '1e999999999' is too large to check against its constraints",
            "a: Input should be a multiple of 0.01",
        ),
    ),
    ("ratio", {"x": 1}, "x: Input should be less than 1"),
    (
        "after",
        {"when": "2024-12-31T23:59:59Z"},
        "when: Input should be greater than 2025-01-01T00:00:00Z",
    ),
    ("day", {"d": "2024-12-31"}, "d: Input should be greater than or equal to 2025-01-01"),
    ("morning", {"t": "12:00:00Z"}, "t: Input should be less than 12:00:00Z"),
    ("morning", {"t": "11:00:00"}, "t: '11:00:00' has no UTC offset: expected an RFC 3339 time"),
    ("wait", {"w": "P9999D"}, "w: Input should be less than or equal to 1 hour"),
    ("wait", {"w": 3601}, "w: Input should be less than or equal to 1 hour"),
    ("code", {"s": "a"}, "s: String should have at least 2 characters"),
    ("code", {"s": "abcdef"}, "s: String should have at most 5 characters"),
    ("code", {"s": "ABC"}, "s: String should match pattern '^[a-z]+$'"),
    ("maybe", {"s": "abcd"}, "s: String should have at most 3 characters"),
    ("short", {"s": "abcd"}, "s: String should have at most 3 characters"),
    (
        "read",
        {"path": "../../etc/passwd"},
        "path: Value error, the path must not climb out with '..'",
    ),
    ("name", {"s": " ada "}, "s: Value error, no spaces around the name"),
    ("pair", {"n": 3}, "n: Value error, 3 is not an even integer"),
    ("cap", {"n": 1001}, "n: Value error, at most 1000"),
    ("n_amount", {"a": "-5"}, "a: -5 is not >= 0 (ge=0)"),
    ("n_amount", {"a": "1e999999999"}, "a: 1E+999999999 is not <= 100 (le=100)"),
    ("n_amount", {"a": "-1e999999999"}, "a: -1E+999999999 is not >= 0 (ge=0)"),
    ("n_step", {"a": "1.2"}, "a: 1.2 is not a multiple of 0.5 (multiple_of=0.5)"),
    (
        "n_step",
        {"a": "1e999999999"},
        "a: 1E+999999999 is too large, or not a number, to check multiple_of=0.5",
    ),
    ("n_third", {"n": 10}, "n: 10 is not a multiple of 3 (multiple_of=3)"),
    ("n_ratio", {"x": 0}, "x: 0 is not > 0 (gt=0)"),
    (
        "n_after",
        {"when": "2024-12-31T23:59:59Z"},
        "when: 2024-12-31T23:59:59+00:00 is not > 2025-01-01T00:00:00+00:00",
    ),
    (
        "n_after",
        {"when": "2026-01-01T00:00:00"},
        "when: '2026-01-01T00:00:00' has no UTC offset: expected an RFC 3339 date-time",
    ),
    ("n_day", {"d": "2030-01-01"}, "d: 2030-01-01 is not < 2030-01-01 (lt=2030-01-01)"),
    ("n_wait", {"w": "P9999D"}, "w: P9999D is not <= PT1H (le=PT1H)"),
    ("n_wait", {"w": "PT1H0.5S"}, "w: PT1H0.5S is not <= PT1H"),
    ("n_tags", {"tags": []}, "tags: [] has length 0, not >= 1 (min_length=1)"),
    (
        "n_tags",
        {"tags": ["a", "b", "c", "d"]},
        "tags: ['a', 'b', 'c', 'd'] has length 4, not <= 3 (max_length=3)",
    ),
    ("n_word", {"s": "abcdef"}, "s: 'abcdef' has length 6, not <= 5 (max_length=5)"),
    (
        "n_read",
        {"path": "../../etc/passwd"},
        "path: '../../etc/passwd' fails Predicate(no_parent_segment)",
    ),
    ("n_quiet", {"s": "LOUD"}, "s: 'LOUD' fails Not(str.isupper)"),
    ("n_each", {"items": ["1", "-1"]}, "items: -1 is not >= 0 (ge=0)"),
    ("n_line", {"line": {"sku": "x", "price": "-0.01"}}, "line: -0.01 is not >= 0 (ge=0)"),
    ("n_either", {"n": 50}, "n: 50 is not <= 5 (le=5)"),
]


# tool: (arguments it takes, the repr of the value the tool got)
ACCEPTED = {
    "amount": ({"a": "5"}, "Decimal('5')"),
    "cents": ({"a": "12.34"}, "Decimal('12.34')"),
    "ratio": ({"x": 0.5}, "0.5"),
    "after": (
        {"when": "2025-01-01T00:00:01Z"},
        "datetime.datetime(2025, 1, 1, 0, 0, 1, tzinfo=TzInfo(0))",
    ),
    "day": ({"d": "2025-01-01"}, "datetime.date(2025, 1, 1)"),
    "morning": ({"t": "11:59Z"}, "datetime.time(11, 59, tzinfo=TzInfo(0))"),
    "wait": ({"w": "PT1H"}, "datetime.timedelta(seconds=3600)"),
    "code": ({"s": "abc"}, "'abc'"),
    "maybe": ({}, "None"),
    "short": ({"s": "abc"}, "'abc'"),
    "read": ({"path": "docs/a..b"}, "'docs/a..b'"),
    "name": ({"s": "ada"}, "'ada'"),
    "pair": ({"n": 4}, "4"),
    "cap": ({"n": 1000}, "1000"),
    "n_amount": ({"a": "99.5"}, "Decimal('99.5')"),
    "n_step": ({"a": 2.5}, "Decimal('2.5')"),
    "n_third": ({"n": 9}, "9"),
    "n_ratio": ({"x": 0.5}, "0.5"),
    "n_after": (
        {"when": "2025-06-01T00:00:00+02:00"},
        "datetime.datetime(2025, 6, 1, 0, 0, tzinfo=datetime.timezone(datetime.timedelta(seconds=7200)))",
    ),
    "n_day": ({"d": "2029-12-31"}, "datetime.date(2029, 12, 31)"),
    "n_wait": ({"w": "PT59M"}, "datetime.timedelta(seconds=3540)"),
    "n_tags": ({"tags": ["a"]}, "['a']"),
    "n_word": ({"s": "abcde"}, "'abcde'"),
    "n_read": ({"path": "a/b"}, "'a/b'"),
    "n_quiet": ({"s": "Calm"}, "'Calm'"),
    "n_each": ({"items": ["0", 1]}, "[Decimal('0'), Decimal('1')]"),
    "n_line": ({"line": {"sku": "x", "price": "0"}}, "Line(sku='x', price=Decimal('0'))"),
    "n_either": ({"n": 100}, "100"),  # the first member refuses it, the second takes it
}


@pytest.mark.slow
@pytest.mark.parametrize("tool, arguments, says", REFUSED, ids=[f"{t}-{a}" for t, a, _ in REFUSED])
def test_a_value_its_annotation_refuses_never_reaches_the_tool(calls, tool, arguments, says):
    client, ran = calls
    message = refused(client, tool, arguments)
    assert message.startswith(f"Invalid arguments for tool {tool}: "), message
    assert any(said in message for said in ((says,) if isinstance(says, str) else says)), message
    assert "errors.pydantic.dev" not in message
    assert ran == []
    # and a value it allows arrives, as its type
    good, got = ACCEPTED[tool]
    result = client.call_tool(tool, good)
    assert not result.is_error and result.content[0].text == got, result
    assert len(ran) == 1


def test_a_refusal_leaves_the_session_serving(calls):
    client, ran = calls
    for _ in range(3):
        assert refused(client, "read", {"path": "../x"})
    assert client.call_tool("read", {"path": "x"}).content[0].text == "'x'"
    assert ran == [("read", {"path": "x"})]


class Marker:
    """Metadata of a library mcp_ref does not know."""

    def __repr__(self) -> str:
        return "Marker()"


UNENFORCEABLE = [
    (
        Annotated[int, Marker()],
        r"cannot enforce Marker\(\) \(test_declared_constraints.Marker\) on int",
    ),
    (
        Annotated[float, at.Unit("m")],
        r"cannot enforce Unit\(unit='m'\) \(annotated_types.Unit\) on float",
    ),
    (Annotated[dt.datetime, at.Timezone(None)], r"cannot enforce Timezone\(tz=None\)"),
    (Annotated[dt.datetime, Field(description="When"), Marker()], r"cannot enforce Marker\(\)"),
    (
        Annotated[list[int], at.Ge(0)],
        r"cannot enforce ge=0 on list\[int\]: a bound applies to numbers",
    ),
    (Annotated[list[int], Field(ge=0)], r"cannot enforce ge=0 on list\[int\]"),
    (
        Annotated[dt.date, at.Gt(dt.datetime(2025, 1, 1))],
        r"cannot enforce gt=.* on date: the bound is not a date",
    ),
    (Annotated[dt.date, Field(gt=dt.datetime(2025, 1, 1))], r"cannot enforce gt=.* on date"),
    (
        Annotated[int, at.MinLen(1)],
        r"cannot enforce min_length=1 on int: it applies to strings, arrays and objects",
    ),
    (Annotated[int, at.MultipleOf(0)], r"cannot enforce multiple_of=0 on int"),
    (
        Annotated[int, Field(pattern="a")],
        r"cannot enforce pattern='a' on int: it applies to strings only",
    ),
    (
        Annotated[str, Field(max_digits=3)],
        r"cannot enforce max_digits=3 on str: it applies to Decimals only",
    ),
    (
        Annotated[str, Field(pattern="(")],
        r"cannot enforce the constraints of .*: pydantic refuses them",
    ),
]


@pytest.mark.parametrize(
    "annotation, says", UNENFORCEABLE, ids=[str(i) for i in range(len(UNENFORCEABLE))]
)
def test_a_constraint_that_cannot_be_enforced_refuses_the_tool_at_registration(annotation, says):
    server = Server("refuses")

    def take(x):
        return x

    take.__annotations__ = {"x": annotation}
    with pytest.raises(TypeError, match=f"take: parameter 'x': {says}"):
        server.add_tool(take)
    assert server.get_tool("take") is None
    with pytest.raises(TypeError, match=says):
        server.add_prompt(take)


def test_metadata_that_only_documents_is_accepted_and_any_other_refused():
    server = Server("docs")

    @server.tool
    def doc(a: Annotated[int, Field(description="A count"), at.doc("ignored"), "plain"] = 1) -> int:
        """Field(description=), annotated_types' doc and a string only document."""
        return a

    def other(a: Annotated[int, Field(description="A count"), Marker()] = 1) -> int:
        return a

    with pytest.raises(TypeError, match=r"other: parameter 'a': cannot enforce Marker\(\)"):
        server.add_tool(other)
    with Client.in_memory(server) as client:
        assert [tool.name for tool in client.list_tools()] == ["doc"]
        assert client.call_tool("doc", {"a": -3}).structured_content == {"result": -3}


def test_a_prompt_or_template_variable_its_annotation_refuses_is_invalid_params():
    server = Server("others")
    ran = []

    @server.prompt
    def plan(
        days: Annotated[int, at.Le(30)], start: Annotated[dt.date, at.Ge(dt.date(2025, 1, 1))]
    ) -> str:
        """A prompt with constrained arguments."""
        ran.append(days)
        return f"{days} days from {start}"

    @server.resource("pages://{n}")
    def page(n: Annotated[int, at.Ge(1)]) -> str:
        ran.append(n)
        return f"page {n}"

    with Client.in_memory(server) as client:
        with pytest.raises(
            InvalidParams, match="arguments for prompt plan: start: 2024-12-31 is not >= 2025-01-01"
        ):
            client.get_prompt("plan", {"days": "3", "start": "2024-12-31"})
        with pytest.raises(InvalidParams, match="template variable n: 0 is not >= 1"):
            client.read_resource("pages://0")
        assert ran == []
        assert (
            client.get_prompt("plan", {"days": "3", "start": "2025-01-02"}).messages[0].content.text
            == "3 days from 2025-01-02"
        )


@pytest.mark.slow
def test_annotated_types_constraints_are_enforced_without_loading_pydantic(tmp_path):
    script = tmp_path / "server.py"
    script.write_text(
        textwrap.dedent("""
        import datetime, sys
        from decimal import Decimal
        from typing import Annotated
        import annotated_types as at
        from mcp_ref import Client, Server

        server = Server("no-pydantic")
        ran = []

        @server.tool
        def pay(amount: Annotated[Decimal, at.Ge(0), at.Le(100)],
                wait: Annotated[datetime.timedelta, at.Le(3600)] = datetime.timedelta(0)) -> str:
            ran.append(amount)
            return str(amount)

        with Client.in_memory(server) as client:
            bad = client.call_tool("pay", {"amount": "-5"})
            huge = client.call_tool("pay", {"amount": "1e999999999"})
            long = client.call_tool("pay", {"amount": "1", "wait": "P9999D"})
            good = client.call_tool("pay", {"amount": "5"})
        assert bad.is_error and "amount: -5 is not >= 0" in bad.content[0].text, bad
        assert huge.is_error and "is not <= 100" in huge.content[0].text, huge
        assert long.is_error and "wait: P9999D is not <= PT1H" in long.content[0].text, long
        assert good.content[0].text == "5" and ran == [Decimal("5")], (good, ran)
        print("pydantic" in sys.modules)
    """)
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
