from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Annotated, Any, Literal, Optional, TypedDict, Union

import pytest

from mcp_ref.media import Image
from mcp_ref.server.docstrings import parse_docstring
from mcp_ref.server.signatures import (
    ArgumentPlan,
    compile_arguments,
    output_schema_for,
    to_jsonable,
    type_schema,
)
from mcp_ref.types import CallToolResult, ImageContent, TextContent


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Mixed(enum.Enum):
    A = 1
    B = "b"


@dataclass
class Point:
    x: int
    y: int = 0


@dataclass
class Shape:
    name: str
    points: list[Point]
    color: Color = Color.RED
    tags: list[str] = field(default_factory=list)
    anchor: Point | None = None


try:
    from typing import NotRequired  # Python 3.11+
except ImportError:  # Python 3.10, which the package supports (setup.cfg python_requires)
    NotRequired = None

#: The tests of ``Movie``, a TypedDict with a NotRequired key.  mcp_ref recognises the wrappers of
#: ``typing`` (compound_types._TD_WRAPPERS), not the backport in typing_extensions, so Python 3.10 skips them.
needs_not_required = pytest.mark.skipif(
    NotRequired is None, reason="typing.NotRequired is new in Python 3.11"
)

if NotRequired is not None:

    class Movie(TypedDict):
        title: str
        year: NotRequired[int]


class Options(TypedDict, total=False):
    verbose: bool
    colors: list[Color]


class Context:
    pass


class SubContext(Context):
    pass


# --------------------------------------------------------------------------- type mapping


@pytest.mark.parametrize(
    "tp, expected",
    [
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (str, {"type": "string"}),
        (bool, {"type": "boolean"}),
        (None, {"type": "null"}),
        (type(None), {"type": "null"}),
        (Any, {}),
        (list, {"type": "array"}),
        (list[int], {"type": "array", "items": {"type": "integer"}}),
        (Sequence[str], {"type": "array", "items": {"type": "string"}}),
        (set[str], {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (
            tuple[int, str],
            {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (dict, {"type": "object"}),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (Mapping[str, Any], {"type": "object"}),
        (Optional[int], {"type": ["integer", "null"]}),  # noqa: UP045 - the spelling under test
        (int | None, {"type": ["integer", "null"]}),
        (
            Optional[list[int]],  # noqa: UP045 - the spelling under test
            {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
        ),
        (Union[int, str], {"anyOf": [{"type": "integer"}, {"type": "string"}]}),  # noqa: UP007 - the spelling under test
        (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
        (Literal[1, 2], {"type": "integer", "enum": [1, 2]}),
        (Literal[1, 2.5], {"type": "number", "enum": [1, 2.5]}),
        (Literal["a", 1], {"enum": ["a", 1]}),
        (Color, {"type": "string", "enum": ["red", "green"]}),
        (Level, {"type": "integer", "enum": [1, 2]}),
        (Mixed, {"enum": [1, "b"]}),
        (Annotated[int, "How many"], {"type": "integer", "description": "How many"}),
    ],
)
def test_type_schema(tp, expected):
    assert type_schema(tp) == expected


def test_dataclass_schema_nested_inline():
    schema = type_schema(Shape)
    point = {
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
        "required": ["x"],
    }
    assert schema == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "points": {"type": "array", "items": point},
            "color": {"type": "string", "enum": ["red", "green"], "default": "red"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "anchor": {"anyOf": [point, {"type": "null"}], "default": None},
        },
        "required": ["name", "points"],
    }
    assert "$defs" not in json.dumps(schema) and "$ref" not in json.dumps(schema)


@needs_not_required
def test_typeddict_schema():
    assert type_schema(Movie) == {
        "type": "object",
        "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
        "required": ["title"],
    }


def test_total_false_typeddict_schema_and_convert():
    assert type_schema(Options) == {
        "type": "object",
        "properties": {
            "verbose": {"type": "boolean"},
            "colors": {"type": "array", "items": {"type": "string", "enum": ["red", "green"]}},
        },
    }

    def f(opts: Options):
        pass

    out = compile_arguments(f).convert({"opts": {"colors": ["green"]}})
    assert out == {"opts": {"colors": [Color.GREEN]}}


def test_recursive_dataclass_rejected():
    @dataclass
    class Node:
        children: list[Node]

    with pytest.raises(TypeError, match="recursive"):
        type_schema(Node)


@pytest.mark.parametrize("tp", [bytes, complex, dict[int, str], object])
def test_unsupported_types(tp):
    with pytest.raises(TypeError):
        type_schema(tp)


def test_unsupported_parameter_named_in_error():
    def f(ok: int, blob: bytes) -> None:
        pass

    with pytest.raises(TypeError, match="blob"):
        compile_arguments(f)


# --------------------------------------------------------------------------- compile_arguments


def test_compile_basic_google_docstring():
    def search(
        query: str, limit: int = 10, exact: bool = False, mode: Color = Color.GREEN
    ) -> list[str]:
        """Search the index
        for documents.

        Args:
            query: The text to look
                for, across lines.
            limit (int): Maximum results.
            mode: Colour mode.

        Returns:
            Matching ids.
        """
        return []

    plan = compile_arguments(search)
    assert isinstance(plan, ArgumentPlan)
    assert plan.name == "search"
    assert plan.description == "Search the index for documents."
    assert plan.context_param is None
    assert plan.schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The text to look for, across lines."},
            "limit": {"type": "integer", "default": 10, "description": "Maximum results."},
            "exact": {"type": "boolean", "default": False},
            "mode": {
                "type": "string",
                "enum": ["red", "green"],
                "default": "green",
                "description": "Colour mode.",
            },
        },
        "required": ["query"],
    }


def test_required_omitted_when_empty_and_no_docstring():
    def f(a: int = 1):
        pass

    plan = compile_arguments(f)
    assert plan.description is None
    assert "required" not in plan.schema
    assert plan.schema["properties"] == {"a": {"type": "integer", "default": 1}}


def test_missing_annotation_is_any_and_non_json_default_dropped():
    sentinel = object()

    def f(a, b=sentinel, c: float = float("nan")):
        pass

    plan = compile_arguments(f)
    assert plan.schema["properties"] == {"a": {}, "b": {}, "c": {"type": "number"}}
    assert plan.schema["required"] == ["a"]


def test_annotated_description_wins_over_docstring():
    def f(n: Annotated[int, "from annotation"]):
        """Do it.

        :param n: from docstring
        """

    assert compile_arguments(f).schema["properties"]["n"]["description"] == "from annotation"


def test_rest_docstring():
    def f(a: int, b: str):
        """Summary line.

        More detail here.

        :param a: first
            value
        :param str b: second
        :returns: nothing
        """

    plan = compile_arguments(f)
    assert plan.description == "Summary line. More detail here."
    assert plan.schema["properties"]["a"]["description"] == "first value"
    assert plan.schema["properties"]["b"]["description"] == "second"


def test_numpy_docstring():
    def f(a: int, b: str, c: float):
        """Compute things.

        Parameters
        ----------
        a : int
            The first
            number.
        b, c : str
            Shared text.

        Returns
        -------
        int
            Not a parameter.
        """

    plan = compile_arguments(f)
    assert plan.description == "Compute things."
    props = plan.schema["properties"]
    assert props["a"]["description"] == "The first number."
    assert props["b"]["description"] == "Shared text."
    assert props["c"]["description"] == "Shared text."


def test_parse_docstring_edge_cases():
    assert parse_docstring(None) == (None, {})
    assert parse_docstring("Args:\n    x: only args") == (None, {"x": "only args"})
    summary, params = parse_docstring("Plain text\n\n   with spaces.  ")
    assert summary == "Plain text with spaces." and params == {}


def test_context_param_skipped_including_subclass_and_optional():
    def f(x: int, ctx: SubContext) -> None:
        pass

    plan = compile_arguments(f, skip_types=(Context,))
    assert plan.context_param == "ctx"
    assert list(plan.schema["properties"]) == ["x"]
    assert plan.schema["required"] == ["x"]

    def g(ctx: Context | None = None) -> None:
        pass

    plan = compile_arguments(g, skip_types=(Context,))
    assert plan.context_param == "ctx"
    assert plan.schema == {"type": "object", "properties": {}}


def test_two_context_params_rejected():
    def f(a: Context, b: Context):
        pass

    with pytest.raises(TypeError, match="context"):
        compile_arguments(f, skip_types=(Context,))


def test_context_type_without_skip_is_unsupported():
    def f(a: Context):
        pass

    with pytest.raises(TypeError, match="'a'"):
        compile_arguments(f)


@pytest.mark.parametrize(
    "src", ["def f(*args: int): pass", "def f(**kw: int): pass", "def f(a: int, /): pass"]
)
def test_variadic_and_positional_only_rejected(src):
    ns: dict = {}
    exec(src, ns)
    with pytest.raises(TypeError):
        compile_arguments(ns["f"])


def test_bound_method_excludes_self():
    class Tools:
        def add(self, a: int, b: int) -> int:
            """Add numbers."""
            return a + b

    plan = compile_arguments(Tools().add)
    assert list(plan.schema["properties"]) == ["a", "b"]
    assert plan.description == "Add numbers."


def test_callable_object():
    class Adder:
        def __call__(self, a: int, b: Color) -> int:
            return a

    plan = compile_arguments(Adder())
    assert plan.schema["properties"]["b"]["enum"] == ["red", "green"]
    assert plan.convert({"a": 1, "b": "red"}) == {"a": 1, "b": Color.RED}


def test_unresolvable_forward_reference():
    def f(a: DoesNotExist):  # noqa: F821
        pass

    with pytest.raises(TypeError, match="DoesNotExist"):
        compile_arguments(f)


# --------------------------------------------------------------------------- convert


def test_convert_plain_params_returns_copy():
    # (an int needs a converter: JSON Schema's "integer" takes 2.0, which arrives as a float)
    def f(a: str, b: list[str], c: dict[str, Any], d: str | None = None):
        pass

    plan = compile_arguments(f)
    assert plan.converters == ()  # nothing to convert: fast path
    args = {"a": "x", "b": ["x"], "c": {"k": 1}}
    out = plan.convert(args)
    assert out == args and out is not args


def test_convert_rich_types():
    def f(
        shape: Shape,
        colors: list[Color],
        pair: tuple[int, int],
        maybe: Point | None = None,
        tags: set[str] = frozenset(),
        by_name: dict[str, Point] | None = None,
        level: Level = Level.LOW,
        plain: int = 0,
    ):
        pass

    plan = compile_arguments(f)
    out = plan.convert(
        {
            "shape": {"name": "tri", "points": [{"x": 1}, {"x": 2, "y": 3}], "color": "green"},
            "colors": ["red", "green"],
            "pair": [1, 2],
            "maybe": {"x": 5},
            "tags": ["a", "b", "a"],
            "by_name": {"o": {"x": 0, "y": 0}},
            "level": 2,
            "plain": 7,
        }
    )
    assert out["shape"] == Shape(name="tri", points=[Point(1), Point(2, 3)], color=Color.GREEN)
    assert out["colors"] == [Color.RED, Color.GREEN]
    assert out["pair"] == (1, 2) and isinstance(out["pair"], tuple)
    assert out["maybe"] == Point(5)
    assert out["tags"] == {"a", "b"}
    assert out["by_name"] == {"o": Point(0, 0)}
    assert out["level"] is Level.HIGH
    assert out["plain"] == 7
    assert plan.schema["properties"]["tags"]["default"] == []
    assert plan.schema["properties"]["level"]["default"] == 1

    assert (
        plan.convert(
            {"shape": {"name": "s", "points": []}, "colors": [], "pair": [0, 0], "maybe": None}
        )["maybe"]
        is None
    )


@dataclass
class Circle:
    radius: float


def test_convert_union_picks_matching_member():
    def f(x: Point | Circle | Color | int):
        pass

    plan = compile_arguments(f)
    assert plan.convert({"x": {"x": 1, "y": 2}})["x"] == Point(1, 2)
    assert plan.convert({"x": {"radius": 2.0}})["x"] == Circle(2.0)
    assert plan.convert({"x": "red"})["x"] is Color.RED
    assert plan.convert({"x": 3})["x"] == 3


def test_convert_literal_of_enum_member():
    def f(c: Literal[Color.RED]):
        pass

    plan = compile_arguments(f)
    assert plan.schema["properties"]["c"] == {"type": "string", "enum": ["red"]}
    assert plan.convert({"c": "red"})["c"] is Color.RED


def test_convert_missing_optional_params_untouched():
    def f(p: Point | None = None):
        pass

    assert compile_arguments(f).convert({}) == {}


# --------------------------------------------------------------------------- output schema / jsonable


@needs_not_required
def test_output_schema_for():
    def a() -> Point: ...
    def b() -> Movie: ...
    def c() -> dict[str, int]: ...
    def d() -> int: ...
    def e(): ...
    def g() -> list[Point]: ...
    def h() -> dict[int, str]: ...

    def wrapped(schema: dict) -> tuple[dict, bool]:
        return {"type": "object", "properties": {"result": schema}, "required": ["result"]}, True

    assert output_schema_for(a) == (type_schema(Point), False)
    assert output_schema_for(b) == (type_schema(Movie), False)
    assert output_schema_for(c) == (
        {"type": "object", "additionalProperties": {"type": "integer"}},
        False,
    )
    assert output_schema_for(d) == wrapped(
        {"type": "integer"}
    )  # not an object: {"result": ...}, as the SDK does
    assert output_schema_for(e) == (None, False)
    assert output_schema_for(g) == wrapped(type_schema(list[Point]))
    assert output_schema_for(h) == (None, False)  # JSON keys are strings: no schema for int keys


def test_no_output_schema_for_text_bytes_content_or_a_bare_list():
    def text() -> str: ...
    def raw() -> bytes: ...
    def image() -> ImageContent: ...
    def helper() -> Image: ...
    def blocks() -> list[TextContent | ImageContent]: ...
    def whole() -> CallToolResult: ...
    def mixed() -> list: ...
    def nothing() -> None: ...

    for func in (text, raw, image, helper, blocks, whole, mixed, nothing):
        assert output_schema_for(func) == (None, False), func.__name__


def test_to_jsonable():
    value = {
        "shape": Shape("s", [Point(1, 2)], tags=["t"]),
        "t": (1, Color.GREEN),
        "s": {3},
        Color.RED: [Level.HIGH, None, 1.5],
    }
    assert to_jsonable(value) == {
        "shape": {
            "name": "s",
            "points": [{"x": 1, "y": 2}],
            "color": "red",
            "tags": ["t"],
            "anchor": None,
        },
        "t": [1, "green"],
        "s": [3],
        "red": [2, None, 1.5],
    }
    json.dumps(to_jsonable(value))
    marker = object()
    assert to_jsonable(marker) is marker
    assert to_jsonable(Point) is Point  # a class is not an instance


# --------------------------------------------------------------------------- schema validity


@needs_not_required
def test_schemas_valid_under_draft7_and_2020_12():
    jsonschema = pytest.importorskip("jsonschema")

    def f(
        shape: Shape,
        movie: Movie,
        pair: tuple[int, str],
        opt: list[Color] | None = None,
        lit: Literal["a", 1] = "a",
        nums: dict[str, float] | None = None,
        anything: Any = None,
    ):
        pass

    schema = compile_arguments(f).schema
    good = {
        "shape": {"name": "s", "points": [{"x": 1}], "color": "red"},
        "movie": {"title": "t"},
        "pair": [1, "x"],
        "opt": ["green"],
        "nums": {"a": 1.5},
        "anything": [1, {"z": None}],
    }
    bad = [
        {**good, "shape": {"name": "s"}},
        {**good, "pair": [1, "x", 3]},
        {**good, "opt": ["blue"]},
        {**good, "lit": "b"},
        {**good, "nums": {"a": "x"}},
    ]
    for cls in (jsonschema.Draft7Validator, jsonschema.Draft202012Validator):
        cls.check_schema(schema)
        validator = cls(schema)
        assert validator.is_valid(good)
        for instance in bad:
            assert not validator.is_valid(instance)


class Size(enum.IntEnum):
    SMALL = 1
    LARGE = 2


@dataclass
class Page:
    size: int
    sizes: list[int] = field(default_factory=list)


class Counts(TypedDict):
    n: int


def test_an_int_parameter_gets_an_int_for_a_whole_float_wherever_an_int_is_expected():
    """JSON Schema's "integer" takes 2.0 and 1e300 (2020-12 validation §6.1.1), which arrive as
    floats: an int is expected, so an int is given, as pydantic gives it."""

    def f(
        n: int,
        ns: list[int],
        page: Page,
        counts: dict[str, int],
        one: Literal[1, 2],
        size: Size,
        either: int | str,
        number: int | float,
        maybe: int | None,
        fixed: tuple[int, ...],
        td: Counts,
        choice: Literal[1, 2] | str,
    ):
        pass

    plan = compile_arguments(f)
    out = plan.convert(
        {
            "n": 1e300,
            "ns": [1.0, 2],
            "page": {"size": 10.0, "sizes": [3.0]},
            "counts": {"a": 4.0},
            "one": 2.0,
            "size": 2.0,
            "either": 5.0,
            "number": 6.0,
            "maybe": 7.0,
            "fixed": [8.0],
            "td": {"n": 9.0},
            "choice": 1.0,
        }
    )
    assert out["n"] == int(1e300) and type(out["n"]) is int
    assert [type(n) for n in out["ns"]] == [int, int]
    assert out["page"] == Page(10, [3]) and type(out["page"].size) is int
    assert type(out["page"].sizes[0]) is int
    assert type(out["counts"]["a"]) is int
    assert out["one"] == 2 and type(out["one"]) is int
    assert out["size"] is Size.LARGE
    assert out["either"] == 5 and type(out["either"]) is int
    assert type(out["number"]) is float  # int | float: a float is a float
    assert type(out["maybe"]) is int
    assert type(out["fixed"][0]) is int
    assert type(out["td"]["n"]) is int
    assert out["choice"] == 1 and type(out["choice"]) is int
    assert plan.convert({"n": 3})["n"] == 3


def test_a_fixed_tuple_checks_each_position():
    """tuple[A, B]: prefixItems says which type each position holds (2020-12), and the converter
    checks it too (a draft-07 reader, a union member), so a swapped pair never reaches the tool."""
    from mcp_ref.schemas import local_validator

    def f(pair: tuple[str, int], when: tuple[date, int] | tuple[int, str]):
        pass

    plan = compile_arguments(f)
    schema = plan.schema["properties"]["pair"]
    assert schema["prefixItems"] == [{"type": "string"}, {"type": "integer"}]
    checker = local_validator(plan.schema)
    assert checker.is_valid({"pair": ["ada", 36], "when": [1, "x"]})
    assert not checker.is_valid({"pair": [36, "ada"], "when": [1, "x"]})
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", **schema}
    assert local_validator(draft7).is_valid(["ada", 36])  # no items: false, which draft-07 misreads
    with pytest.raises(ValueError, match='pair: item 0: 36 is not of type "string"'):
        plan.convert({"pair": [36, "ada"]})
    assert plan.convert({"pair": ["ada", 36.0]})["pair"] == ("ada", 36)
    assert plan.convert({"when": ["2027-01-01", 3]})["when"] == (date(2027, 1, 1), 3)
    assert plan.convert({"when": [3, "2027-01-01"]})["when"] == (3, "2027-01-01")
