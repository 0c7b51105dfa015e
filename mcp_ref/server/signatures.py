"""Describe plain Python functions as MCP tools and prompts, and validate what they are given.

:func:`compile_arguments` reads a function's signature, type hints and
docstring once and produces an :class:`ArgumentPlan`: a JSON Schema for the
arguments (valid under both draft-07 and draft 2020-12), a description, and a
fast ``convert`` step that turns validated JSON arguments into Python keyword
arguments (Enum members, dataclass instances, tuples, sets).

The last section validates what arrives against the schemas users give (tool input and output,
prompt arguments, elicitation replies) with jsonschema, in the schema's declared dialect.

jsonschema is heavy, so it is imported only when it is needed, never at ``import mcp_ref``.
(The official MCP schemas, used to check whole messages, are :mod:`mcp_ref.schemas`.)

Most tool schemas are plain: an object of named properties, each of one JSON type, some of them
required.  For those, :func:`quick_check` compiles a direct test that accepts what is certainly
valid in about a microsecond; anything it does not accept (and every other schema) goes to
jsonschema, which decides, and words the error.  So the quick test can only save time: it never
accepts what jsonschema would refuse (``tests/protocol/test_validation.py`` checks the two agree).
A plain schema is also valid by its shape, so it skips jsonschema's check against the
meta-schema, which costs about a millisecond a schema: registering a plain tool loads no
jsonschema at all.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
import typing
from collections.abc import Callable
from typing import Any

__all__ = [
    "ArgumentPlan",
    "compile_arguments",
    "output_schema_for",
    "schema_and_converter",
    "describe",
    "to_jsonable",
    "type_schema",
    "context_types",
    "validator_for",
    "Validator",
    "quick_check",
    "first_error",
]

_NONE = type(None)
_SIMPLE = {
    int: "integer",
    float: "number",
    str: "string",
    bool: "boolean",
    _NONE: "null",
    None: "null",
}
_FLOAT_MAX = sys.float_info.max
#: In ``seen``: the schema describes what the server sends (a tool's output), not what it takes
#: (the word :data:`mcp_ref.server.compound_types.OUTPUT` looks for)
_OUTPUT = "output"

_Converter = Callable[[Any], Any]


# ---------------------------------------------------------------------------
# JSON helpers


def to_jsonable(value: Any) -> Any:
    """Return ``value`` in a JSON-friendly shape (:func:`mcp_ref.jsonable.to_jsonable`, the
    converter a client sends its arguments through too).

    Dataclass instances become dicts (recursively), Enum members their value, tuples and sets
    lists, dates and times RFC 3339, a UUID, a path or a Decimal a string; dicts and lists are
    converted element-wise and anything else is returned unchanged.  A JSON scalar is returned at
    once; anything else loads :mod:`mcp_ref.jsonable`.
    """
    if type(value) in _SIMPLE:  # a JSON scalar
        return value
    from ..jsonable import to_jsonable as converted

    return converted(value)


def _finite(number: Any) -> Any:
    """A ``float`` argument as it came, unless a float cannot hold it: ``1e400``, which the JSON
    parser reads as infinity (RFC 8259 §6: JSON has no infinity; §9: "An implementation may set
    limits on the range and precision of numbers accepted"), is a ValueError, so a tool never
    computes with infinity that the peer did not write."""
    if not -_FLOAT_MAX <= number <= _FLOAT_MAX:
        raise ValueError("not a finite number: beyond the range of a float")
    return number


def _whole(number: Any) -> Any:
    """An ``int`` argument as an int: a JSON number with a zero fractional part (``2.0``,
    ``1e300``) is an "integer" (2020-12 validation §6.1.1, draft-07 alike), but arrives as a float;
    it is made the int it is, as pydantic makes it (anything else is left as it came)."""
    return int(number) if type(number) is float and number.is_integer() else number


def _add_default(schema: dict, default: Any) -> None:
    """Put ``default`` on ``schema`` as JSON, when it is JSON once converted
    (:func:`~mcp_ref.jsonable.is_json`)."""
    from ..jsonable import is_json, to_jsonable  # loaded by the first parameter with a default

    value = to_jsonable(default)
    if is_json(value):
        schema["default"] = value


# ---------------------------------------------------------------------------
# Type analysis: one pass yields the schema and the (optional) converter.


def _hints(obj: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(obj, include_extras=True)
    except Exception as exc:  # NameError for unresolved forward references, etc.
        name = getattr(obj, "__qualname__", repr(obj))
        raise TypeError(f"cannot resolve type hints of {name}: {exc}") from exc


def _analyse(tp: Any, seen: tuple) -> tuple[dict, _Converter | None]:
    """Return ``(schema, converter)`` for annotation ``tp``.

    ``converter`` is None when validated JSON already has the right Python
    shape. ``seen`` holds the structured types being expanded (recursion guard).
    ``Any`` and the JSON scalars are described here; every other kind (Annotated, unions,
    Literals, Enums, dataclasses, TypedDicts, containers, rich types) by
    :func:`mcp_ref.server.compound_types.compound`, which comes back here for the types inside.
    """
    if tp is Any:
        return {}, None
    try:
        simple = _SIMPLE.get(tp)
    except TypeError:  # unhashable annotation object
        simple = None
    if simple:
        return {"type": simple}, _finite if tp is float else _whole if tp is int else None

    from .compound_types import compound  # loaded by the first annotation that is not a scalar

    return compound(tp, seen, _analyse, _hints, _add_default)


def type_schema(tp: Any) -> dict:
    """Return the JSON Schema (draft-07 and 2020-12 compatible) for annotation ``tp``.

    Raises TypeError for annotations that have no JSON representation.
    """
    return _analyse(tp, ())[0]


def schema_and_converter(tp: Any) -> tuple[dict, Callable[[Any], Any]]:
    """The JSON Schema of annotation ``tp``, and the function that turns a valid JSON value into it.

    A dataclass becomes an instance (its fields converted too), an Enum a member, and so on;
    for types whose JSON value is already the Python value, the converter returns it as it is.
    Raises TypeError for annotations that have no JSON representation.
    """
    schema, converter = _analyse(tp, ())
    return schema, converter or (lambda value: value)


# ---------------------------------------------------------------------------
# Functions


def describe(doc: str | None) -> tuple[str | None, dict[str, str]]:
    """``(summary, {parameter: description})`` of a docstring (:func:`~mcp_ref.server.docstrings.
    parse_docstring`); a one-line docstring is its own summary, without loading the parser."""
    line = (doc or "").strip()
    if line and "\n" not in line and not line.startswith(":") and not line.endswith(":"):
        return " ".join(line.split()), {}
    from .docstrings import parse_docstring

    return parse_docstring(doc)


@dataclasses.dataclass(slots=True, kw_only=True)
class ArgumentPlan:
    """The compiled description of a function's arguments (made by :func:`compile_arguments`).

    Attributes:
        name: the function's name.
        description: the docstring summary, or None.
        schema: JSON Schema object for the JSON arguments.
        context_param: name of the parameter that receives a context object
            (annotated with one of ``skip_types``), or None.
        converters: ``(parameter, converter)`` for each parameter whose type needs one.
        defaults: ``(parameter, fill)`` for each pydantic ``Field()`` default, filled in by :meth:`convert`.
    """

    name: str
    description: str | None
    schema: dict[str, Any]
    context_param: str | None = None
    converters: tuple[tuple[str, _Converter], ...] = ()
    defaults: tuple[tuple[str, Callable[[], Any]], ...] = ()

    def convert(self, arguments: typing.Mapping[str, Any]) -> dict[str, Any]:
        """Turn validated JSON ``arguments`` into keyword arguments for the function.

        Returns a new dict; only parameters whose type needs it (Enum, dataclass, tuple, set, datetime,
        pydantic model ..., and containers of those) are converted.  ValueError (naming the parameter) for a bad value.
        """
        out = dict(arguments)
        for name, fill in self.defaults:
            if name not in out:
                out[name] = fill()
        for name, conv in self.converters:
            if name in out:
                try:
                    out[name] = conv(out[name])
                except ValueError as exc:
                    raise ValueError(f"{name}: {exc}") from None
        return out

    def __repr__(self) -> str:
        """Short debugging representation."""
        return f"ArgumentPlan(name={self.name!r}, params={list(self.schema['properties'])!r})"


def _function_hints(func: Callable) -> dict[str, Any]:
    if isinstance(func, functools.partial):  # a partial's hints are its function's
        func = func.func
    if callable(func) and not (inspect.isroutine(func) or isinstance(func, type)):
        func = type(func).__call__  # a callable object: its class's __call__ has the hints
    return _hints(func)


def runs_in_thread(func: Callable) -> Callable:
    """``func`` as a plain function: an ``async def`` is run to completion on the calling thread.

    mcp_ref has no event loop: tools, prompts and resources run on handler threads.  So an
    ``async def`` (written for the official SDK, or calling an async library) gets a loop of
    its own for each call (``asyncio.run``), on the handler thread that serves the request.
    Anything else is returned as it is; an async ``functools.partial`` stays a partial (of its
    function so run): :func:`mcp_ref.server.async_handlers.run_to_completion`.
    """
    if not inspect.iscoroutinefunction(func):
        return func
    from .async_handlers import run_to_completion  # loaded by the first async def

    return run_to_completion(func)


def context_types() -> tuple[type, ...]:
    """What a handler's ``Context`` parameter may be annotated with: the class, once
    :mod:`mcp_ref.server.context` is loaded (an annotation naming it imported it); else nothing."""
    context = sys.modules.get(f"{__package__}.context")
    return () if context is None else (context.Context,)


def compile_arguments(func: Callable, *, skip_types: tuple[type, ...] = ()) -> ArgumentPlan:
    """Compile ``func``'s signature, type hints and docstring into an :class:`ArgumentPlan`.

    Parameters annotated with (a subclass of) one of ``skip_types`` are left out
    of the schema; their name becomes ``plan.context_param`` (at most one).
    Raises TypeError for ``*args``/``**kwargs``, positional-only parameters and
    annotations that cannot be described as JSON Schema.
    """
    # a functools.partial: its function's hints, name and docstring; the parameters it binds by
    # keyword are not the caller's (inspect.signature drops those it binds by position)
    origin = func.func if isinstance(func, functools.partial) else func
    bound = func.keywords if isinstance(func, functools.partial) else {}
    name = getattr(origin, "__name__", type(func).__name__)
    sig = inspect.signature(func)
    hints = _function_hints(func)
    summary, docs = describe(inspect.getdoc(origin))
    props: dict[str, Any] = {}
    required: list[str] = []
    converters: list[tuple[str, _Converter]] = []
    context_param = None
    if skip_types:  # an annotation that is not a scalar: loads compound_types, as _analyse does
        from .compound_types import context_parameter

        context_param = context_parameter(
            name, [n for n in sig.parameters if n not in bound], hints, skip_types
        )
    # the values of Field() defaults, filled in by convert
    defaults: list[tuple[str, Callable[[], Any]]] = []
    for p in sig.parameters.values():
        if p.name in bound:
            continue
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            # "variadic positional", "variadic keyword", "positional-only"
            raise TypeError(f"{name}: {p.kind.description} parameter {p.name!r} is not supported")
        hint = hints.get(p.name, Any)
        default = p.default
        # pydantic's ``x: int = Field(3, description=...)``
        if type(default).__name__ == "FieldInfo":
            from .rich_types import field_default

            hint, default, fill = field_default(hint, default, p.empty)
            defaults.append((p.name, fill))
        if p.name == context_param:
            continue
        try:
            schema, conv = _analyse(hint, ())
        except TypeError as exc:
            raise TypeError(f"{name}: parameter {p.name!r}: {exc}") from exc
        schema = dict(schema)
        if "description" not in schema and p.name in docs:
            schema["description"] = docs[p.name]
        if default is p.empty:
            required.append(p.name)
        else:
            _add_default(schema, default)
        props[p.name] = schema
        if conv is not None:
            converters.append((p.name, conv))
    arguments: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        arguments["required"] = required
    return ArgumentPlan(
        name=name,
        description=summary,
        schema=arguments,
        context_param=context_param,
        converters=tuple(converters),
        defaults=tuple(defaults),
    )


def output_schema_for(func: Callable, owner: str = "") -> tuple[dict | None, bool]:
    """The ``outputSchema`` of ``func``'s return annotation, and whether results are wrapped.

    MCP structured output is a JSON object (2025-11-25 server/tools §Structured Content).  A
    dataclass, a TypedDict or a ``dict``/``Mapping`` with ``str`` keys is one: its schema is
    the output schema, ``(schema, False)``.  Other JSON values (``int``, ``float``, ``bool``,
    ``list[...]``, ``tuple``, an Enum, a Literal, a date, a UUID, a Decimal, unions of those) are wrapped, as the official
    SDK does: ``{"result": value}``, ``(schema, True)``.  No structured output, ``(None, False)``,
    for ``str`` (its text content says it all), ``bytes``, ``None``, ``Any``, no annotation, a
    bare ``list`` or ``tuple`` (it may mix text and images), content blocks (``ImageContent``
    ...) and ``CallToolResult``.  A type with no JSON form is refused: TypeError naming ``owner`` and it.
    The JSON scalars are decided here; any other annotation by
    :func:`mcp_ref.server.compound_types.output_schema` (loaded for the first).
    """
    ret = _function_hints(func).get("return")
    if ret in (None, Any, str, _NONE):
        return None, False  # a str's text content says it all
    if ret in (int, float, bool):
        schema: dict | None = {"type": _SIMPLE[ret]}
    else:
        from .compound_types import output_schema  # any other annotation

        schema, wrapped = output_schema(ret, owner, _analyse)
        if not wrapped:
            return schema, False
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}, True


# ---------------------------------------------------------------------------
# validation: instances against the schemas users give


def validator_for(schema: dict) -> Any:
    """A jsonschema validator for ``schema`` in its declared dialect (``$schema``), 2020-12 by default.

    2025-11-25 basic §JSON Schema Usage: "Schemas without an explicit $schema
    field MUST conform to JSON Schema 2020-12", and implementations "MUST handle
    unsupported dialects gracefully by returning an appropriate error" — a
    ValueError here.  An invalid schema raises jsonschema's SchemaError.
    """
    quick = quick_check(schema)
    if quick is not None:  # valid in its dialect: quick_check takes only what the meta-schema does
        return Validator(schema, quick)
    from ..schemas import checked_validator  # jsonschema, heavy: loaded on first validation

    return Validator(schema, None, checked_validator(schema))


@dataclasses.dataclass(slots=True)
class Validator:
    """A schema's validator: ``quick`` (from :func:`quick_check`, or None) first, jsonschema's
    ``checker`` for whatever ``quick`` does not accept, and for the errors."""

    schema: Any
    quick: Callable[[Any], bool] | None = None
    _checker: Any = None

    @property
    def checker(self) -> Any:
        """jsonschema's validator of :attr:`schema` in its dialect, made at first use: a plain
        schema's quick test seldom needs it (two threads may both make one; either serves)."""
        if self._checker is None:
            from ..schemas import local_validator

            self._checker = local_validator(self.schema)
        return self._checker

    def is_valid(self, instance: Any) -> bool:
        """True when ``instance`` satisfies the schema."""
        quick = self.quick
        if quick is not None and quick(instance):
            return True
        return self.checker.is_valid(instance)

    def iter_errors(self, instance: Any):
        """jsonschema's errors for ``instance`` (none when it is valid)."""
        return self.checker.iter_errors(instance)


#: The JSON types as a parsed JSON document holds them (``json.loads`` makes exactly these
#: classes: a subclass, or a float that is a whole number for "integer", goes to jsonschema).
_TYPE_TESTS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "array": (list,),
    "object": (dict,),
}
#: The annotations, keywords that never make an instance invalid (``format`` too, which jsonschema
#: does not assert without a format checker, and none is given here), each with what the
#: meta-schemas allow as its value; and ``default``, which may be anything.
_ANNOTATION_TYPES: dict[str, type] = {
    "title": str,
    "description": str,
    "examples": list,
    "deprecated": bool,
    "readOnly": bool,
    "writeOnly": bool,
    "$comment": str,
    "format": str,
}
_ANNOTATIONS = frozenset({*_ANNOTATION_TYPES, "default"})
_OBJECT_KEYWORDS = (
    frozenset({"type", "properties", "required", "additionalProperties", "$schema"}) | _ANNOTATIONS
)
#: The dialects in which ``type``, ``properties``, ``required`` and ``additionalProperties`` mean
#: the same (draft 3's ``required`` does not), 2020-12 first.  A tuple: a ``$schema`` that is not a
#: string (an array ...) is simply none of them, and goes to jsonschema.
_QUICK_DIALECTS = (
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
    "http://json-schema.org/draft-06/schema#",
    "http://json-schema.org/draft-06/schema",
)


def quick_check(schema: Any) -> Callable[[Any], bool] | None:
    """A test that is True only for instances ``schema`` certainly accepts; None when ``schema``
    is not of the plain shape it knows.

    The shape: ``"type": "object"``, ``properties`` whose every schema is at most a ``type`` (one
    name or a list) plus annotations, ``required`` names, and ``additionalProperties`` true or
    false.  Anything else (``$ref``, ``enum``, bounds, nested objects ...) is jsonschema's alone.
    Each keyword's value must be what its dialect's meta-schema allows (a list of distinct names,
    a string title ...), so a schema of this shape needs no check against the meta-schema.
    """
    if (
        not isinstance(schema, dict)
        or schema.get("type") != "object"
        or not schema.keys() <= _OBJECT_KEYWORDS
        or not _annotations_allowed(schema)
        or schema.get("$schema", _QUICK_DIALECTS[0]) not in _QUICK_DIALECTS  # none: 2020-12
    ):
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    additional = schema.get("additionalProperties", True)
    if (
        not isinstance(properties, dict)
        or not isinstance(required, list)
        or not isinstance(additional, bool)
        or not _distinct_names(required)
    ):
        return None
    # the exact classes (a frozenset) a property's value may have; None: any value
    tests: dict[str, Any] = {}
    for name, sub in properties.items():
        if (
            not isinstance(sub, dict)
            or not sub.keys() <= _ANNOTATIONS | {"type"}
            or not _annotations_allowed(sub)
        ):
            return None
        if "type" not in sub:
            tests[name] = None
            continue
        kinds = sub["type"] if isinstance(sub["type"], list) else [sub["type"]]
        if not (kinds and _distinct_names(kinds) and all(k in _TYPE_TESTS for k in kinds)):
            return None  # "type": null, [], an unknown name or one named twice is jsonschema's
        tests[name] = frozenset(t for k in kinds for t in _TYPE_TESTS[k])
    needed = frozenset(required)

    def check(instance: Any) -> bool:
        if type(instance) is not dict or not instance.keys() >= needed:
            return False
        for name, value in instance.items():
            allowed = tests.get(name, False)
            if allowed is False:
                if not additional:
                    return False
            elif allowed is not None and type(value) not in allowed:
                return False
        return True

    return check


def _distinct_names(names: list) -> bool:
    """True when ``names`` are strings (``str`` itself), none twice (a ``required`` or ``type``
    list's rule)."""
    return all(type(name) is str for name in names) and len(set(names)) == len(names)


def _annotations_allowed(schema: dict) -> bool:
    """True when each annotation ``schema`` holds has a value of the type the meta-schemas of
    :data:`_QUICK_DIALECTS` give it (``default`` may be anything)."""
    return all(
        isinstance(schema[keyword], kind)
        for keyword, kind in _ANNOTATION_TYPES.items()
        if keyword in schema
    )


def first_error(validator: Any, instance: Any) -> str | None:
    """The most relevant violation of ``instance`` as one line (``path: message``, in JSON's
    words: :mod:`mcp_ref.server.schema_errors`, loaded only for an invalid instance); None when
    valid."""
    if validator.is_valid(instance):
        return None
    from .schema_errors import worded_error

    return worded_error(validator, instance)
