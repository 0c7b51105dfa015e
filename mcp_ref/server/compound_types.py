"""Unions, Literals, Enums, dataclasses, TypedDicts and containers (lists, tuples, sets, dicts)
in tool, prompt and resource signatures.

:mod:`mcp_ref.server.signatures` describes the JSON scalars itself (``int``, ``str``, ``float``,
``bool``, ``None``); this module, loaded the first time a signature holds anything else
(:func:`compound`), gives their JSON Schema and the converter that turns a valid JSON value into
the Python value (an Enum member, a dataclass instance, a tuple, a set), and sends ``Annotated``
markers and the rich types (dates, UUIDs, pydantic models ...) on to
:mod:`mcp_ref.server.constraints` and :mod:`mcp_ref.server.rich_types`.  It imports nothing of
the package at its top: the analysis of the member types is passed in (``analyse``, signatures'
own).  It also finds a handler's ``Context`` parameter (:func:`context_parameter`), which a
signature may annotate in the same ways (``Optional[Context]``, ``Annotated[Context, ...]``).
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import enum
import json
import math
import types
import typing
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence, Set
from typing import Any, Literal, Union, cast, get_args, get_origin

__all__ = [
    "OUTPUT",
    "compound",
    "container",
    "context_parameter",
    "enum_schema",
    "fixed_tuple",
    "literal",
    "object_schema",
    "output_schema",
    "refuse_unknown_keys",
    "union",
]

_Converter = Callable[[Any], Any]
_Analyse = Callable[[Any, tuple], "tuple[dict, _Converter | None]"]
_NONE = type(None)
_TD_WRAPPERS = tuple(
    w for w in (getattr(typing, n, None) for n in ("Required", "NotRequired", "ReadOnly")) if w
)
_UNION_ORIGINS = (Union, types.UnionType)
_TYPE_ALIAS = getattr(typing, "TypeAliasType", ())
_ARRAY_ORIGINS = (
    list,
    cabc.Sequence,
    cabc.MutableSequence,
    set,
    frozenset,
    cabc.Set,
    cabc.MutableSet,
)
_MAP_ORIGINS = (dict, cabc.Mapping, cabc.MutableMapping)
#: In ``seen``: the schema describes what the server sends (a tool's output), not what it takes
#: (:func:`mcp_ref.server.signatures.output_schema_for` puts it there)
OUTPUT = "output"

_JSON_TYPE_CHECKS: dict[str, Callable[[Any], bool]] = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, (list, tuple)),
    "object": lambda v: isinstance(v, dict),
}

#: The second pass's tests: JSON Schema's "integer" takes a whole float (2.0), made an int by the
#: member's converter (``signatures._whole``)
_LENIENT_TYPE_CHECKS = {
    **_JSON_TYPE_CHECKS,
    "integer": lambda v: _JSON_TYPE_CHECKS["integer"](v) or (type(v) is float and v.is_integer()),
}


def compound(
    tp: Any,
    seen: tuple,
    analyse: _Analyse,
    hints: Callable[[Any], dict],
    add_default: Callable[[dict, Any], None],
) -> tuple[dict, _Converter | None]:
    """``(schema, converter)`` of annotation ``tp``, any kind but ``Any`` and the JSON scalars
    (which ``analyse``, signatures' own, describes, and to which it sends the rest).

    ``seen`` holds the structured types being expanded (recursion guard) and maybe
    :data:`OUTPUT`; ``hints`` resolves a class's type hints, ``add_default`` puts a field's
    default on its schema (both signatures' too).  TypeError for a type with no JSON form.
    """
    origin, args = get_origin(tp), get_args(tp)
    if origin is typing.Annotated:
        # Annotated[T, "description"], or pydantic's Field(description=..., ge=...): the schema
        # says what JSON Schema can (rich_types.constrained), the converter enforces all of it
        # (constraints.enforced: TypeError here for what it cannot enforce)
        schema, conv = analyse(args[0], seen)
        text = next((m for m in args[1:] if isinstance(m, str)), None)
        if text is not None:
            schema = {**schema, "description": " ".join(text.split())}
        if not all(isinstance(m, str) for m in args[1:]):
            from .constraints import enforced
            from .rich_types import constrained

            schema = constrained(schema, args[1:])
            conv = enforced(tp, args[1:], conv)
        return schema, conv
    if origin is not None and origin in _TD_WRAPPERS:
        return analyse(args[0], seen)
    if origin in _UNION_ORIGINS:
        return union(args, seen, analyse)
    if origin is Literal:
        return literal(args)
    if isinstance(tp, type) and origin is None:
        if issubclass(tp, enum.Enum):
            return enum_schema([m.value for m in tp]), tp
        if dataclasses.is_dataclass(tp) or typing.is_typeddict(tp):
            if tp in seen:
                raise TypeError(f"recursive type {tp.__qualname__} is not supported")
            return object_schema(tp, seen + (tp,), analyse, hints(tp), add_default)
        origin = tp  # a bare container class such as ``list`` or ``dict``
    if origin in _ARRAY_ORIGINS or origin is tuple or origin in _MAP_ORIGINS:
        return container(origin, args, seen, analyse)
    if isinstance(tp, typing.NewType):
        return analyse(tp.__supertype__, seen)
    if _TYPE_ALIAS and isinstance(tp, _TYPE_ALIAS):
        return analyse(tp.__value__, seen)
    # datetime, UUID, Decimal, Path, pydantic models ...; TypeError for others
    from .rich_types import analyse as rich

    return rich(tp, OUTPUT in seen)


def output_schema(ret: Any, owner: str, analyse: _Analyse) -> tuple[dict | None, bool]:
    """``(schema, wrapped)`` of a return annotation ``ret`` that is not a JSON scalar, by the rules
    of :func:`mcp_ref.server.signatures.output_schema_for`: ``(None, False)`` when no structured
    output is promised, ``(schema, False)`` for an object, the output schema itself, and
    ``(schema, True)`` for another JSON value, which the output schema wraps as ``result``."""
    base = _strip_annotated(ret)
    if base in (str, _NONE, None, list, tuple, Sequence) or _holds_content(base):
        return None, False  # a bare list or tuple may hold content blocks: no schema is promised
    try:
        schema = analyse(ret, (OUTPUT,))[0]
    except (TypeError, ValueError) as exc:
        if "unsupported type annotation" not in str(exc):
            # JSON all the same (a dict with int keys ...), but no schema to promise
            return None, False
        raise TypeError(
            f"{owner}: return type {ret!r} cannot be serialised as JSON ({exc})"
        ) from None
    # a dataclass, TypedDict, pydantic model
    if isinstance(base, type) and schema.get("type") == "object":
        return schema, False
    if (get_origin(base) or base) in _MAP_ORIGINS:
        args = get_args(base)
        if not args or args[0] is str:
            return schema, False
    if not schema or (schema.get("type") == "string" and "format" not in schema):
        # a str's text says it all; a date, a UUID ... is wrapped, as FastMCP does
        return None, False
    return schema, True


def _holds_content(tp: Any) -> bool:
    """True if ``tp`` is, or is a list or union of, a payload class (content blocks, CallToolResult) or bytes."""
    from ..types import WireModel

    if isinstance(tp, type) and issubclass(tp, (WireModel, bytes, bytearray)):
        return True
    return any(_holds_content(_strip_annotated(arg)) for arg in get_args(tp))


def _strip_annotated(tp: Any) -> Any:
    """``T`` of ``Annotated[T, ...]`` (nested Annotated are flattened into one), else ``tp``."""
    return get_args(tp)[0] if get_origin(tp) is typing.Annotated else tp


def _accepts(schema: dict, value: Any, other_keys: bool = False) -> bool:
    """Cheap structural test used to pick a Union member when converting; with ``other_keys`` (the
    second pass), an object may hold keys its schema does not name and an integer may be written
    ``2.0`` (so ``int | float`` keeps 2.0 a float, and ``int | str`` makes it 2)."""
    if "enum" in schema:
        return any(
            value == e and (type(value) is type(e) or (other_keys and type(e) is int))
            for e in schema["enum"]
        )
    if "anyOf" in schema:
        return any(_accepts(s, value, other_keys) for s in schema["anyOf"])
    t = schema.get("type")
    if t is None:
        return True
    checks = _LENIENT_TYPE_CHECKS if other_keys else _JSON_TYPE_CHECKS
    if isinstance(t, list):
        return any(checks[x](value) for x in t)
    if not checks[t](value):
        return False
    if t == "object" and "properties" in schema:
        props = schema["properties"]
        named = other_keys or all(k in props for k in value)
        return named and all(k in value for k in schema.get("required", ()))
    return True


def _json_type(value: Any) -> str | None:
    for name in ("null", "boolean", "integer", "number", "string"):
        if _JSON_TYPE_CHECKS[name](value):
            return name
    return None


def enum_schema(values: list) -> dict:
    """The JSON Schema of one of ``values`` (JSON scalars: TypeError for any other)."""
    for v in values:
        if _json_type(v) is None or (isinstance(v, float) and not math.isfinite(v)):
            raise TypeError(f"enum/Literal value {v!r} is not a JSON scalar")
    kinds = {_json_type(v) for v in values}
    if kinds == {"integer", "number"}:
        kinds = {"number"}
    return {"type": kinds.pop(), "enum": values} if len(kinds) == 1 else {"enum": values}


def union(args: tuple, seen: tuple, analyse: _Analyse) -> tuple[dict, _Converter | None]:
    """``(schema, converter)`` of ``Union[*args]`` (``Optional[T]`` too); a value goes to the first
    member that accepts it: its JSON type, then its converter and constraints (a member that refuses
    it passes it on to the next; when all refuse, the first refusal is raised).  An object no
    member takes whole holds a key none names: it goes to the first member it fits but for that
    key; a TypedDict keeps it, a dataclass refuses it by name (the next member may still take it),
    so that it never reaches the tool as a bare dict where a dataclass was meant."""
    members = [a for a in args if a is not _NONE]
    nullable = len(members) < len(args)
    analysed = [analyse(m, seen) for m in members]
    schemas: list[dict] = []
    for s, _ in analysed:
        if s not in schemas:
            schemas.append(s)
    if {} in schemas:
        schema: dict = {}
    elif len(schemas) == 1 and not nullable:
        schema = schemas[0]
    elif len(schemas) == 1 and set(schemas[0]) == {"type"} and isinstance(schemas[0]["type"], str):
        schema = {"type": [schemas[0]["type"], "null"]}
    else:
        schema = {"anyOf": schemas + ([{"type": "null"}] if nullable else [])}

    if not any(c for _, c in analysed):
        return schema, None
    if len(analysed) == 1:
        only = cast(_Converter, analysed[0][1])  # not None: any() above
        return schema, lambda v: None if v is None else only(v)

    def convert_union(v: Any) -> Any:
        if v is None:
            return None
        refusal: ValueError | None = None
        for s, c in analysed:
            if not _accepts(s, v):
                continue
            if c is None:
                return v
            try:
                return c(v)
            except ValueError as exc:  # this member refuses it: the next may take it
                refusal = refusal or exc
        for s, c in analysed:  # no member took it whole: the first that takes its other keys too
            if not _accepts(s, v, other_keys=True):
                continue
            if c is None:  # a TypedDict (or an open object) keeps them
                return v
            try:
                return c(v)
            except ValueError as exc:  # a dataclass refuses them, naming them
                refusal = refusal or exc
        if refusal is not None:
            raise refusal
        return v

    return schema, convert_union


def literal(args: tuple) -> tuple[dict, _Converter | None]:
    """``(schema, converter)`` of ``Literal[*args]``: the value becomes the argument it equals, so
    Enum members among them are converted back to members, and ``2.0`` (which ``"enum": [2]``
    takes: JSON Schema compares numbers by value) the int ``2``."""
    values = [a.value if isinstance(a, enum.Enum) else a for a in args]
    schema = enum_schema(values)
    if not any(isinstance(a, enum.Enum) or type(a) is int for a in args):
        return schema, None

    def convert_literal(v: Any) -> Any:
        for arg, value in zip(args, values, strict=True):
            if value == v and isinstance(value, bool) is isinstance(v, bool):
                return arg
        return v

    return schema, convert_literal


def _required_key(name: str, hint: Any, required_keys: Collection[str]) -> bool:
    """Whether a TypedDict's key ``name`` is required: ``Required``/``NotRequired`` on its resolved
    hint (under Annotated too), else ``__required_keys__``, which misses the wrappers written as
    strings (PEP 563)."""
    while True:
        origin = get_origin(hint)
        if origin is not typing.Annotated and (origin is None or origin not in _TD_WRAPPERS):
            return name in required_keys
        wrapper = getattr(origin, "_name", None)
        if wrapper in ("Required", "NotRequired"):
            return wrapper == "Required"
        hint = get_args(hint)[0]


def object_schema(
    tp: type, seen: tuple, analyse: _Analyse, hints: dict, add_default: Callable[[dict, Any], None]
) -> tuple[dict, _Converter | None]:
    """``(schema, converter)`` of a dataclass or a TypedDict ``tp`` whose resolved type hints are
    ``hints``: an object of its fields.  The converter converts the fields that need it and makes
    the dataclass, refusing a key that is none of its fields (:func:`refuse_unknown_keys`); a
    TypedDict stays a dict, its other keys kept (a value may hold more keys than its type names),
    and has no
    converter when no field needs one.  ``add_default`` puts a field's default on its schema."""
    make: Callable[..., Any] = dict
    if dataclasses.is_dataclass(tp):
        make = tp
        fields = [
            (
                f.name,
                hints.get(f.name, Any),
                f.default,
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            )
            for f in dataclasses.fields(tp)
            if f.init
        ]
    else:
        required_keys = getattr(tp, "__required_keys__", frozenset(hints))
        fields = [
            (name, hint, dataclasses.MISSING, _required_key(name, hint, required_keys))
            for name, hint in hints.items()
        ]
    props: dict[str, Any] = {}
    required: list[str] = []
    convs: list[tuple[str, _Converter]] = []
    for name, hint, default, needed in fields:
        schema, conv = analyse(hint, seen)
        if default is not dataclasses.MISSING:
            schema = dict(schema)
            add_default(schema, default)
        if needed:
            required.append(name)
        props[name] = schema
        if conv:
            convs.append((name, conv))
    result: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        result["required"] = required
    if not convs and make is dict:
        return result, None

    def convert_object(v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        if make is not dict:
            refuse_unknown_keys(v, props)
        out = dict(v)
        for name, c in convs:
            if name in out:
                out[name] = c(out[name])
        return out if make is dict else make(**out)

    return result, convert_object


def refuse_unknown_keys(value: dict, fields: Collection[str]) -> None:
    """ValueError naming the keys of ``value`` that are none of a dataclass's ``fields``.

    A key a dataclass does not declare is the caller's mistake, as an argument the tool does not
    declare is (:func:`mcp_ref.server.tools.call_tool`): refused, named, never the internal error
    of the dataclass's ``__init__``.  The schema stays open (no ``additionalProperties``), as
    pydantic and FastMCP write a dataclass's, and as a signature's own object is.
    """
    extra = [key for key in value if key not in fields]
    if extra:
        names = ", ".join(json.dumps(key, ensure_ascii=False) for key in extra)
        raise ValueError(f"unexpected propert{'y' if len(extra) == 1 else 'ies'} {names}")


def container(
    origin: Any, args: tuple, seen: tuple, analyse: _Analyse
) -> tuple[dict, _Converter | None]:
    """``(schema, converter)`` of a container annotation whose origin is ``origin`` (``list``,
    ``Sequence``, ``set``, ``frozenset``, ``tuple``, ``dict``, ``Mapping`` ...), bare or with its
    type arguments ``args``.

    A list, a sequence or ``tuple[T, ...]`` is an array of ``T``s (a tuple or a set made of the JSON
    list; a set's items are unique); ``tuple[A, B]`` is :func:`fixed_tuple`'s; a mapping is an
    object of ``T`` values, its keys ``str``.  The items' converter, if they need one, is applied
    to each."""
    homogeneous = origin is tuple and len(args) == 2 and args[1] is Ellipsis  # tuple[T, ...]
    if origin is tuple and not homogeneous:
        return fixed_tuple(args, seen, analyse) if args else ({"type": "array"}, tuple)
    if issubclass(origin, Mapping):
        return _mapping(args, seen, analyse)
    schema: dict[str, Any] = {"type": "array"}
    item_conv = None
    if args:
        items, item_conv = analyse(args[0], seen)
        if items:
            schema["items"] = items
    make: Callable[[Any], Any] = tuple if homogeneous else list
    if issubclass(origin, Set):
        schema["uniqueItems"] = True
        make = frozenset if origin is frozenset else set
    if item_conv:
        return schema, lambda v: make(map(item_conv, v))
    return schema, None if make is list else make


def _mapping(args: tuple, seen: tuple, analyse: _Analyse) -> tuple[dict, _Converter | None]:
    """``(schema, converter)`` of ``dict[str, T]`` (bare when ``args`` is empty): an object."""
    schema: dict[str, Any] = {"type": "object"}
    if not args:
        return schema, None
    key, value = args
    if key is not str and key is not Any:
        raise TypeError(f"mapping keys must be str, not {key!r}")
    value_schema, value_conv = analyse(value, seen)
    if value_schema:
        schema["additionalProperties"] = value_schema
    if value_conv:
        return schema, lambda v: {k: value_conv(x) for k, x in v.items()}
    return schema, None


def fixed_tuple(args: tuple, seen: tuple, analyse: _Analyse) -> tuple[dict, _Converter]:
    """``(schema, converter)`` of ``tuple[A, B, ...]``: exactly ``len(args)`` items, each of its own
    type.

    The schema says so with ``prefixItems`` (2020-12 validation §10.3.1.1, the dialect an
    ``inputSchema`` without ``$schema`` is in: 2025-11-25 basic §JSON Schema Usage) and
    ``minItems``/``maxItems``; its ``items`` (each item one of the types) is what a draft-07 reader,
    which knows no ``prefixItems``, can check, and applies to no item in 2020-12 (there are none
    past the prefix).  ``items: false`` is not written: draft-07 would read it as "no items".  The
    converter checks each position's JSON type too (a schema given in draft-07, a union member),
    so a swapped pair is refused naming the item, never reaching the tool."""
    schema: dict[str, Any] = {"type": "array"}
    analysed = [analyse(a, seen) for a in args]
    distinct: list[dict] = []
    for s, _ in analysed:
        if s not in distinct:
            distinct.append(s)
    schema["prefixItems"] = [s for s, _ in analysed]
    if {} not in distinct:
        schema["items"] = distinct[0] if len(distinct) == 1 else {"anyOf": distinct}
    schema["minItems"] = schema["maxItems"] = len(args)

    def convert_tuple(v: Any) -> Any:
        items = []
        for index, ((item_schema, convert), item) in enumerate(zip(analysed, v, strict=False)):
            if not _accepts(item_schema, item, other_keys=True):
                raise ValueError(f"item {index}: {_shown(item)} is not {_expected(item_schema)}")
            items.append(item if convert is None else convert(item))
        return tuple(items)

    return schema, convert_tuple


def _shown(value: Any) -> str:
    """``value`` in JSON's words, cut to 80 characters."""
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 80 else text[:79] + "…"


def _expected(schema: dict) -> str:
    """What ``schema`` takes, for a refusal: ``of type "integer"``, or ``of the type expected there``."""
    kind = schema.get("type")
    if isinstance(kind, str) and "enum" not in schema:
        return f"of type {json.dumps(kind)}"
    return "of the type expected there"


# -- the Context parameter ------------------------------------------------------------------------


def context_parameter(
    owner: str, names: Iterable[str], hints: dict[str, Any], skip_types: tuple[type, ...]
) -> str | None:
    """The parameter among ``names`` whose annotation (``hints``) is (a subclass of) one of
    ``skip_types`` (:class:`~mcp_ref.server.context.Context`), maybe under Annotated or in an
    Optional; None when none is.  TypeError naming ``owner`` when more than one is
    (:func:`~mcp_ref.server.signatures.compile_arguments` leaves it out of the schema)."""
    found = [name for name in names if _is_context(hints.get(name, Any), skip_types)]
    if len(found) > 1:
        raise TypeError(f"{owner}: more than one context parameter ({found[0]!r}, {found[1]!r})")
    return found[0] if found else None


def _is_context(tp: Any, skip_types: tuple[type, ...]) -> bool:
    """True when ``tp`` is (a subclass of) one of ``skip_types``, maybe under Annotated or in an
    Optional."""
    origin = get_origin(tp)
    if origin is typing.Annotated:
        return _is_context(get_args(tp)[0], skip_types)
    if origin in _UNION_ORIGINS:
        rest = [a for a in get_args(tp) if a is not _NONE]
        return len(rest) == 1 and _is_context(rest[0], skip_types)
    base = origin or tp
    return isinstance(base, type) and issubclass(base, skip_types)
