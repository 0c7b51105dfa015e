"""Rich types in tool, prompt and resource signatures: what FastMCP and the official SDK accept.

:mod:`mcp_ref.server.signatures` describes the JSON types (``int``, ``str``; lists, dicts, dataclasses,
Enums, Literals, unions, TypedDicts through :mod:`~mcp_ref.server.compound_types`); this module, loaded only when a signature holds something else, adds:

* ``datetime``, ``date``, ``time``, ``UUID``, ``Path``: JSON strings (the ``format`` pydantic gives
  them: ``date-time``, ``date``, ``time``, ``uuid``, ``path``).  Dates and times are RFC 3339, as
  those formats say: a ``datetime`` or a ``time`` argument needs its UTC offset
  (``2027-01-01T09:00:00Z``, ``09:00:00+01:00``) and arrives aware, that offset kept; a date alone
  or a value without an offset is refused, naming the format, unless the parameter declares a
  default zone, ``Annotated[datetime, ZoneInfo("Europe/Paris")]`` (:func:`in_zone`).  Out, an
  aware value is written with its offset, a naive ``datetime`` as the local time Python takes it
  for (``astimezone()``: so ``datetime.now()`` comes out right), a naive ``time`` as it is (no
  date to give it an offset): :mod:`mcp_ref.jsonable`, the writer a client sends arguments
  through too, so a client may pass these values as they are.
  (In a pydantic model, or under pydantic's markers, pydantic's rules apply to its fields: it
  accepts naive values; ``pydantic.AwareDatetime`` refuses them.)
* ``Decimal``: a JSON number or a string (returned as a string, so no digit is lost);
* ``timedelta``: seconds (a number) or an ISO 8601 duration (``PT1H30M``); returned as ISO 8601;
* a pydantic model: pydantic's own ``model_json_schema()``, arguments through ``model_validate``,
  results through ``model_dump(mode="json", by_alias=True)``, which an output schema (its
  ``mode="serialization"`` schema: aliases and computed fields) describes; a type made for pydantic (``EmailStr``, ``HttpUrl``
  ...) through its ``TypeAdapter`` (pydantic is imported only then: the user's code has loaded it);
* ``Annotated[T, Field(...)]`` (pydantic) and ``annotated_types`` markers (``Ge``, ``MaxLen`` ...):
  their description, title, examples and the constraints JSON Schema can say (all of them are
  enforced by :mod:`mcp_ref.server.constraints`, which refuses what it cannot).  (Without pydantic,
  ``Annotated[T, "a description"]``, a bare string, gives the description: signatures does it.)

Every converter raises ValueError naming the bad value, which a tool call answers as invalid
arguments (-32602, or an ``isError`` result from 2025-11-25 on), as for any other bad argument.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import pathlib
import re
import typing
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from ..jsonable import for_pydantic, is_model, pydantic_loaded

__all__ = [
    "analyse",
    "constrained",
    "field_default",
    "in_zone",
    "template_arguments",
    "text_to_json",
]

_Converter = Callable[[Any], Any]


def _parser(kind: str, parse: Callable[[str], Any]) -> _Converter:
    """A converter from a JSON string with ``parse``; a bad string is a ValueError naming it."""

    def convert(value: Any) -> Any:
        if not isinstance(value, str):
            raise ValueError(f"{value!r} is not a {kind} string")
        try:
            return parse(value)
        except (ValueError, TypeError, ArithmeticError):
            raise ValueError(f"{value!r} is not a valid {kind}") from None

    return convert


#: RFC 3339 §5.6, which JSON Schema's ``date-time``, ``date`` and ``time`` formats name (2020-12
#: validation §7.3.1): ``date-time = full-date "T" full-time``, ``full-time = partial-time
#: time-offset``, ``time-offset = "Z" / ("+" / "-") time-hour ":" time-minute``.  A time and an
#: offset are required, so a value never arrives naive (a naive and an aware datetime do not even
#: compare).  Leniencies that lose nothing: "T" or a space (§5.6 NOTE) or lower case, seconds left
#: out, digits past microseconds dropped.
_FULL_DATE = r"(\d{4})-(\d{2})-(\d{2})"
_PARTIAL_TIME = r"(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?"
_OFFSET = r"([Zz]|[+-]\d{2}:\d{2})"
_DATE = re.compile(_FULL_DATE, re.ASCII)
_TIME = re.compile(_PARTIAL_TIME + _OFFSET + "?", re.ASCII)
_DATE_TIME = re.compile(_FULL_DATE + r"(?:[Tt ]" + _PARTIAL_TIME + _OFFSET + "?)?", re.ASCII)
#: What a refusal shows the caller to send instead.
_DATE_TIME_EXAMPLE = (
    "an RFC 3339 date-time with an offset, e.g. '2027-01-01T09:00:00Z' or "
    "'2027-01-01T09:00:00+01:00'"
)
_TIME_EXAMPLE = "an RFC 3339 time with an offset, e.g. '09:00:00Z' or '09:00:00+01:00'"
_DATE_EXAMPLE = "an RFC 3339 date, e.g. '2027-01-01'"


def _offset(text: str) -> dt.timezone:
    """The fixed offset of an RFC 3339 ``time-offset`` (``-00:00``, "unknown local offset", is UTC)."""
    if text in "Zz":
        return dt.UTC
    hours, minutes = int(text[1:3]), int(text[4:6])
    if minutes > 59:
        raise ValueError(text)
    delta = dt.timedelta(hours=hours, minutes=minutes)  # a ValueError past 23:59
    return dt.timezone(-delta if text[0] == "-" else delta)


def _clock(
    hour: str, minute: str, second: str | None, fraction: str | None, offset: str
) -> dt.time:
    """The aware time of a ``partial-time``'s parts and a ``time-offset``; ValueError out of range."""
    micro = int((fraction or "0")[:6].ljust(6, "0"))
    return dt.time(int(hour), int(minute), int(second or 0), micro, tzinfo=_offset(offset))


def _rfc3339_datetime(value: Any, zone: dt.tzinfo | None = None) -> dt.datetime:
    """An aware datetime from an RFC 3339 date-time (its offset kept); ValueError saying what is
    missing (a date alone, no offset) and what to send.  With a default ``zone`` (see
    :func:`in_zone`), a value without an offset is taken in it."""
    expected = (
        _DATE_TIME_EXAMPLE
        if zone is None
        else f"a date and time, e.g. '2027-01-01T09:00:00' ({zone} time) or '2027-01-01T09:00:00Z'"
    )
    match = _DATE_TIME.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{value!r} is not a valid date-time: expected {expected}")
    year, month, day, hour, minute, second, fraction, offset = match.groups()
    if hour is None:
        raise ValueError(f"{value!r} is a date without a time: expected {expected}")
    if offset is None and zone is None:
        raise ValueError(f"{value!r} has no UTC offset: expected {expected}")
    try:
        day_of = dt.date(int(year), int(month), int(day))
        clock = _clock(hour, minute, second, fraction, offset or "Z")
        if offset is None:  # the declared zone's offset on that day (DST included)
            return dt.datetime.combine(day_of, clock.replace(tzinfo=zone))
        return dt.datetime.combine(day_of, clock)
    except ValueError:  # 2025-02-30, 24:00, a leap second (Python has none), +24:00
        raise ValueError(f"{value!r} is not a valid date-time: expected {expected}") from None


def in_zone(zone: dt.tzinfo) -> _Converter:
    """The converter of a ``datetime`` parameter that declares a default zone,
    ``Annotated[datetime, ZoneInfo("Europe/Paris")]``: a value with an offset keeps it, one without
    is taken in ``zone`` (its offset on that date: ``2027-07-01T09:00`` is +02:00 in Paris); a date
    alone is still refused.  Its schema (:func:`constrained`) says so instead of claiming the
    ``date-time`` format, which needs the offset."""
    return lambda value: _rfc3339_datetime(value, zone)


def _rfc3339_time(value: Any) -> dt.time:
    """An aware time from an RFC 3339 full-time (its offset kept); ValueError otherwise."""
    match = _TIME.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{value!r} is not a valid time: expected {_TIME_EXAMPLE}")
    hour, minute, second, fraction, offset = match.groups()
    if offset is None:
        raise ValueError(f"{value!r} has no UTC offset: expected {_TIME_EXAMPLE}")
    try:
        return _clock(hour, minute, second, fraction, offset)
    except ValueError:
        raise ValueError(f"{value!r} is not a valid time: expected {_TIME_EXAMPLE}") from None


def _rfc3339_date(value: Any) -> dt.date:
    """A date from an RFC 3339 full-date (``2027-01-01``); ValueError otherwise."""
    match = _DATE.fullmatch(value) if isinstance(value, str) else None
    try:
        if match is not None:
            return dt.date(*(int(part) for part in match.groups()))
    except ValueError:
        pass
    raise ValueError(f"{value!r} is not a valid date: expected {_DATE_EXAMPLE}")


def _decimal(value: Any) -> decimal.Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{value!r} is not a decimal number")
    try:
        number = decimal.Decimal(str(value))
    except decimal.InvalidOperation:
        raise ValueError(f"{value!r} is not a decimal number") from None
    if not number.is_finite():
        raise ValueError(f"{value!r} is not a finite decimal number")
    return number


_DURATION = re.compile(
    r"(-)?P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?"
)


def _timedelta(value: Any) -> dt.timedelta:
    """A duration: seconds (a JSON number) or ISO 8601 (``P1DT2H``, ``PT1.5S``; weeks, days, hours,
    minutes and seconds: years and months have no fixed length)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return dt.timedelta(seconds=value)
        except (OverflowError, ValueError):
            raise ValueError(f"{value!r} seconds is out of range") from None
    match = _DURATION.fullmatch(value) if isinstance(value, str) and len(value) <= 64 else None
    if match is None or not any(match.groups()[1:]) or value.endswith("T"):
        raise ValueError(f"{value!r} is not a duration (seconds, or ISO 8601 such as 'PT1H30M')")
    weeks, days, hours, minutes, seconds = (float(part or 0) for part in match.groups()[1:])
    try:
        delta = dt.timedelta(weeks=weeks, days=days, hours=hours, minutes=minutes, seconds=seconds)
    except OverflowError:
        raise ValueError(f"{value!r} is out of range") from None
    return -delta if match.group(1) else delta


#: The standard library's rich scalars: their JSON Schema and their converter from JSON.
_SCALARS: dict[type, tuple[dict, _Converter]] = {
    dt.datetime: ({"type": "string", "format": "date-time"}, _rfc3339_datetime),
    dt.date: ({"type": "string", "format": "date"}, _rfc3339_date),
    dt.time: ({"type": "string", "format": "time"}, _rfc3339_time),
    uuid.UUID: ({"type": "string", "format": "uuid"}, _parser("UUID", uuid.UUID)),
    decimal.Decimal: ({"type": ["number", "string"]}, _decimal),
    dt.timedelta: ({"type": ["string", "number"], "format": "duration"}, _timedelta),
}


def _inline(schema: Any, defs: dict, stack: tuple = ()) -> Any:
    """``schema`` with every ``#/$defs/...`` reference replaced by the definition (it is embedded
    in a larger schema, where a root-relative reference would not resolve)."""
    if isinstance(schema, list):
        return [_inline(s, defs, stack) for s in schema]
    if not isinstance(schema, dict):
        return schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref[len("#/$defs/") :]
        if name in stack:
            raise TypeError(f"recursive type {name} is not supported")
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        return {**_inline(defs[name], defs, stack + (name,)), **_inline(rest, defs, stack)}
    return {k: _inline(v, defs, stack) for k, v in schema.items() if k != "$defs"}


def _validation_error(exc: Exception) -> ValueError:
    """A pydantic ValidationError as a short ValueError (its lines without the documentation links)."""
    lines = [line for line in str(exc).splitlines() if "errors.pydantic.dev" not in line]
    return ValueError("; ".join(" ".join(line.split()) for line in lines))


def _validated(validate: _Converter) -> _Converter:
    def convert(value: Any) -> Any:
        try:
            return validate(value)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise _validation_error(exc) from None

    return convert


def _schema_generator() -> Any:
    """pydantic's JSON Schema generator, but with a field validated from a place inside its object
    (``validation_alias=AliasPath("address", "city")``, or ``AliasChoices`` of paths only) shown at
    that place: pydantic names such a field by its own name, which its validation refuses, so a
    client that follows the schema (2025-06-18 server/tools: ``inputSchema``, "JSON Schema defining
    expected parameters") could never call the tool.  An mcp_ref client sends a model's field at
    the same place (:func:`mcp_ref.jsonable.sendable`)."""
    from pydantic.json_schema import GenerateJsonSchema

    class PlacedFields(GenerateJsonSchema):
        def _named_required_fields_schema(self, named_required_fields: Any) -> Any:
            schema = super()._named_required_fields_schema(named_required_fields)
            for name, required, field in named_required_fields if self.mode == "validation" else ():
                path = _alias_path(field.get("validation_alias"))
                if path is not None and name in schema["properties"]:
                    moved = schema["properties"].pop(name)
                    if name in schema.get("required", ()):
                        schema["required"].remove(name)
                    _nest(schema, path, moved, required)
            return schema

    return PlacedFields


def _alias_path(alias: Any) -> list | None:
    """The path a field's core-schema validation alias (a name, a path, or a list of paths) puts
    it at, when that is no plain name (pydantic's schema then names the field by its name, as
    it does any first plain name of several choices): the first path; else None."""
    if not isinstance(alias, list) or not alias:
        return None
    paths = alias if all(isinstance(choice, list) for choice in alias) else [alias]
    if any(len(path) == 1 and isinstance(path[0], str) for path in paths):
        return None
    path = paths[0]
    return None if any(isinstance(step, int) and step < 0 for step in path) else path


def _nest(schema: dict, path: list, moved: dict, required: bool) -> None:
    """Put a field's schema ``moved`` at ``path`` (names into objects, indexes into arrays' items),
    the objects and arrays on the way required when the field is."""
    node = schema
    for depth, step in enumerate(path):
        last = depth == len(path) - 1
        if isinstance(step, str):
            node.setdefault("type", "object")
            node.setdefault("properties", {})
            if required and step not in node.get("required", ()):
                node.setdefault("required", []).append(step)
            node["properties"][step] = moved if last else node["properties"].get(step, {})
            node = node["properties"][step]
        else:
            node.setdefault("type", "array")
            items = node.setdefault("prefixItems", [])
            items.extend({} for _ in range(step + 1 - len(items)))
            if required:
                node["minItems"] = max(node.get("minItems", 0), step + 1)
            items[step] = moved if last else items[step]
            node = items[step]


def analyse(tp: Any, output: bool = False) -> tuple[dict, _Converter | None]:
    """``(JSON Schema, converter from JSON)`` of a rich annotation ``tp``; with ``output``, the
    schema of the value as the server sends it (a tool's ``outputSchema``).

    A pydantic type has two schemas: what it takes (validation: its aliases, no computed fields)
    and what it writes (serialization: ``model_dump(mode="json", by_alias=True)``, computed
    fields included, which :func:`mcp_ref.jsonable.rich_jsonable` writes; a client sends a model
    argument by validation alias, as the first names it); 2025-11-25
    server/tools §Output Schema: "Servers MUST provide structured results that conform to this
    schema", so an output schema is the serialization one.
    Raises TypeError for a type with no JSON form (the message names it).
    """
    mode = "serialization" if output else "validation"
    if isinstance(tp, type):
        for base in type.mro(tp):
            if base in _SCALARS:
                schema, convert = _SCALARS[base]
                return dict(schema), convert
        if issubclass(tp, pathlib.PurePath):
            return {"type": "string", "format": "path"}, _parser("path", tp)
        if is_model(tp):
            # The annotation is a pydantic model: pydantic's own schema (its $defs inlined).
            model: Any = tp
            schema = model.model_json_schema(mode=mode, schema_generator=_schema_generator())
            return _inline(schema, schema.get("$defs", {})), _validated(model.model_validate)
    if pydantic_loaded() and for_pydantic(tp):
        from pydantic import TypeAdapter

        try:
            adapter: Any = TypeAdapter(tp)
            schema = adapter.json_schema(mode=mode, schema_generator=_schema_generator())
        except Exception as exc:  # PydanticSchemaGenerationError, PydanticInvalidForJsonSchema ...
            raise TypeError(f"unsupported type annotation {tp!r}: {exc}") from None
        return _inline(schema, schema.get("$defs", {})), _validated(adapter.validate_python)
    raise TypeError(f"unsupported type annotation {tp!r}")


def field_default(hint: Any, field: Any, required: Any) -> tuple[Any, Any, Callable[[], Any]]:
    """A parameter written ``x: T = Field(default, description=...)`` (pydantic, as FastMCP users
    write it): ``(Annotated[T, field], the default the schema shows or required, the function giving
    the value when the caller leaves it out)``.  ``Field(...)`` or a Field without a default is required."""
    annotated = typing.Annotated[hint, field]
    factory = getattr(field, "default_factory", None)
    if factory is not None:
        return annotated, factory(), factory
    if field.is_required():
        return annotated, required, lambda: required
    value = field.default
    return annotated, value, lambda: value


# -- Annotated metadata ---------------------------------------------------------------------------

_BOUNDS = {
    "gt": "exclusiveMinimum",
    "ge": "minimum",
    "lt": "exclusiveMaximum",
    "le": "maximum",
    "multiple_of": "multipleOf",
}
_LENGTHS = {
    "string": ("minLength", "maxLength"),
    "array": ("minItems", "maxItems"),
    "object": ("minProperties", "maxProperties"),
}


def _markers(metadata: Iterable[Any]) -> Iterable[Any]:
    """pydantic's and annotated_types' markers among ``metadata``, a Field's own constraints too."""
    for marker in metadata:
        if type(marker).__module__.split(".")[0] in ("pydantic", "annotated_types"):
            yield marker
            yield from _markers(getattr(marker, "metadata", None) or ())


def constrained(schema: dict, metadata: Iterable[Any]) -> dict:
    """``schema`` with what ``Annotated`` metadata says about it: pydantic's ``Field(description=,
    title=, examples=, json_schema_extra=, ge=, le=, gt=, lt=, multiple_of=, min_length=,
    max_length=, pattern=)`` and annotated_types' ``Ge``, ``Gt``, ``Le``, ``Lt``, ``MultipleOf``,
    ``MinLen``, ``MaxLen``.  The schema only: :func:`mcp_ref.server.constraints.enforced` enforces them,
    and refuses metadata it cannot enforce."""
    schema = dict(schema)
    kind = schema.get("type") if isinstance(schema.get("type"), str) else None
    zone = next((m for m in metadata if isinstance(m, dt.tzinfo)), None)
    if zone is not None and schema.get("format") == "date-time":
        # a default zone (in_zone): a value without an offset is accepted, which "date-time"
        # (RFC 3339, an offset required) would refuse; the description says what is taken
        del schema["format"]
        said = f"an RFC 3339 date-time; without an offset, {zone} time"
        schema["description"] = (
            f"{schema['description']} ({said})"
            if "description" in schema
            else said[0].upper() + said[1:]
        )
    for marker in _markers(metadata):
        for keyword in ("description", "title", "examples"):
            value = getattr(marker, keyword, None)
            if value is not None:
                schema[keyword] = " ".join(value.split()) if keyword == "description" else value
        for attribute, keyword in _BOUNDS.items():
            value = getattr(marker, attribute, None)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                schema[keyword] = value
        for attribute, keyword in zip(
            ("min_length", "max_length"), _LENGTHS.get(kind or "", ()), strict=False
        ):
            value = getattr(marker, attribute, None)
            if isinstance(value, int):
                schema[keyword] = value
        pattern = getattr(marker, "pattern", None)
        if pattern is not None and kind == "string":
            schema["pattern"] = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
        extra = getattr(marker, "json_schema_extra", None)
        if isinstance(extra, dict):
            schema.update(extra)
    return schema


# -- resource template variables ------------------------------------------------------------------


_TEXT: dict[str, Callable[[str], Any]] = {
    "integer": int,
    "number": float,
    "boolean": lambda text: {"true": True, "false": False}[text.lower()],
    "null": lambda text: {"": None, "null": None}[text.lower()],
    "string": str,
}


def text_to_json(schema: dict, text: str) -> Any:
    """A URI template variable (always text) as the JSON value ``schema`` describes: ``"42"`` is 42
    for an integer, ``"true"`` True for a boolean; a string stays as it is.  ValueError when it
    is none of the types ``schema`` allows."""
    if "enum" in schema:
        for value in schema["enum"]:
            if text == (value if isinstance(value, str) else json.dumps(value)):
                return value
        raise ValueError(f"{text!r} is not one of {schema['enum']!r}")
    kinds = schema.get("type")
    if kinds is None and "anyOf" in schema:
        kinds = [s["type"] for s in schema["anyOf"] if isinstance(s.get("type"), str)] or None
    if kinds is None:
        return text
    if isinstance(kinds, str):
        kinds = [kinds]
    for kind in ("boolean", "integer", "number", "string", "null"):  # the most specific first
        if kind in kinds:
            try:
                return _TEXT[kind](text)
            except (ValueError, KeyError):
                continue
    raise ValueError(f"{text!r} is not a {' or '.join(kinds)}")


def template_arguments(plan: Any, variables: dict) -> dict:
    """The keyword arguments of a resource template's function: each URI variable (text) converted
    to its parameter's annotation (``user_id: int`` gets 42, ``day: date`` a date).  A value that is
    not one is the caller's mistake: Invalid params (-32602) naming the variable."""
    from ..errors import InvalidParams

    properties = plan.schema.get("properties", {})
    values = {}
    for name, value in variables.items():
        try:
            values[name] = (
                text_to_json(properties.get(name, {}), value) if isinstance(value, str) else value
            )
        except ValueError as exc:
            raise InvalidParams(f"Invalid params: template variable {name}: {exc}") from None
    try:
        return plan.convert(values)
    except ValueError as exc:  # plan.convert names the parameter
        raise InvalidParams(f"Invalid params: template variable {exc}") from None
