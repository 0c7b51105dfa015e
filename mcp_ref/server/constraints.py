"""The constraints an ``Annotated`` parameter declares, enforced before the function runs (issue 32, item 3).

:mod:`mcp_ref.server.rich_types` puts on the JSON Schema what JSON Schema can say (``minimum`` for a
number, ``maxLength`` for a string); but a Decimal sent as the string ``"-5"``, a date, a duration or a
validator function is out of its reach.  So every marker in ``Annotated[T, ...]`` is one of:

* documentation: a string, ``typing_extensions.Doc``, ``annotated_types.doc``, a pydantic ``Field``
  declaring no constraint (``Field(description=...)``): nothing to enforce;
* pydantic's (``Field(ge=...)``, ``AfterValidator``, ``StringConstraints``, ``Strict`` ...): the
  annotation is validated by pydantic's own ``TypeAdapter``, on the JSON value as it arrived (as
  FastMCP does).  pydantic is imported only then: the user's code made the marker, so it is loaded;
* annotated_types' ``Gt``, ``Ge``, ``Lt``, ``Le``, ``Interval``, ``MultipleOf``, ``MinLen``,
  ``MaxLen``, ``Len``, ``Predicate``, ``Not``: checked here, on the converted value (a Decimal, a
  datetime, a timedelta ...), without pydantic;
* a ``tzinfo`` on a ``datetime`` (``Annotated[datetime, ZoneInfo("Europe/Paris")]``): the zone a
  value sent without an offset is taken in (:func:`mcp_ref.server.rich_types.in_zone`);
* anything else (``annotated_types.Unit``, ``Timezone``, an object of another library): refused
  at registration (TypeError naming it), as is a bound that cannot apply to ``T`` (``Ge(0)`` on a
  list, a datetime bound on a date).

A value the annotation refuses is a ValueError naming the constraint, which the caller answers as
bad arguments (2025-11-25 server/tools §Error Handling: "Input validation errors" are tool execution
errors; -32602 before): the function never runs on it.
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import datetime as dt
import decimal
import fractions
import math
import operator
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any, Union, get_args, get_origin

from ..jsonable import rich_jsonable
from .rich_types import in_zone

__all__ = ["enforced"]

_Converter = Callable[[Any], Any]
_Check = Callable[[Any], "str | None"]  # a problem's description, or None when the value passes
_UNION_ORIGINS = (Union, types.UnionType)
_TYPE_ALIAS = getattr(typing, "TypeAliasType", ())
_NUMBERS = (int, float, decimal.Decimal, fractions.Fraction)
#: An ordered bound: its comparison and how a refusal words it.
_ORDER = {
    "gt": (operator.gt, ">"),
    "ge": (operator.ge, ">="),
    "lt": (operator.lt, "<"),
    "le": (operator.le, "<="),
}
#: The annotated_types markers checked here (pydantic's TypeAdapter checks the same ones).
_NATIVE = frozenset({"Gt", "Ge", "Lt", "Le", "MultipleOf", "MinLen", "MaxLen", "Predicate", "Not"})
_SHOWN = 80  # characters of a value quoted in a refusal


def enforced(
    annotation: Any, metadata: Iterable[Any], convert: _Converter | None
) -> _Converter | None:
    """The converter of ``annotation`` (``Annotated[T, *metadata]``, whose ``T`` converts with
    ``convert``) that also enforces every constraint ``metadata`` declares.

    Raises TypeError, naming the marker, for metadata that cannot be enforced.
    """
    base = get_args(annotation)[0]
    cls = _value_class(base)
    kind = _kind(cls)
    checks: list[_Check] = []
    by_pydantic = False
    zone = None
    for marker in _flattened(metadata):
        if _is_documentation(marker):
            continue
        if isinstance(marker, dt.tzinfo):
            zone = _default_zone(marker, kind, base)
            continue
        family = _family(marker)
        if family == "pydantic":
            by_pydantic = True
            # a bound that cannot apply to T is refused here, not at each call
            for inner in _parts(marker):
                if _family(inner) == "annotated_types":
                    _native_check(inner, kind, base)
                else:
                    _check_general(inner, cls, base)
            continue
        if family != "annotated_types" or type(marker).__name__ not in _NATIVE:
            raise TypeError(
                f"cannot enforce {marker!r} ({type(marker).__module__}.{type(marker).__qualname__}) "
                f"on {_named(base)}: mcp_ref enforces pydantic's markers and annotated_types' Gt, "
                "Ge, Lt, Le, Interval, MultipleOf, MinLen, MaxLen, Len, Predicate and Not; "
                "remove it or check the value in the function"
            )
        checks.append(_native_check(marker, kind, base))
    if zone is not None:
        if by_pydantic:
            raise TypeError(
                f"cannot enforce a default zone ({zone}) on {_named(base)} with pydantic's "
                "markers: use annotated_types' (Gt, Le ...), or no default zone"
            )
        convert = in_zone(zone)
    if by_pydantic:
        if kind in ("datetime", "time") and convert is not None:
            # pydantic takes a naive date-time; mcp_ref's converter refuses it first, so the
            # parameter's rule (an RFC 3339 value with its offset) holds with or without markers
            return _checked_first(convert, _by_pydantic(annotation))
        return _by_pydantic(annotation)
    if not checks:
        return convert
    return _checking(convert, checks)


# -- what a marker is -------------------------------------------------------------------------------


def _flattened(metadata: Iterable[Any]) -> Iterable[Any]:
    """``metadata`` with annotated_types' groups (``Interval``, ``Len``) opened into their markers."""
    for marker in metadata:
        if _family(marker) == "annotated_types" and isinstance(marker, cabc.Iterable):
            yield from _flattened(marker)
        else:
            yield marker


def _family(marker: Any) -> str:
    """The top package of ``marker``'s class ("pydantic_core" counts as "pydantic")."""
    top = type(marker).__module__.split(".")[0]
    return "pydantic" if top == "pydantic_core" else top


def _is_documentation(marker: Any) -> bool:
    """True for a marker that only documents: a string, a ``Doc``, a Field with no constraint."""
    if isinstance(marker, str):
        return True
    if type(marker).__name__ in ("Doc", "DocInfo") and isinstance(
        getattr(marker, "documentation", None), str
    ):
        return True  # PEP 727's typing_extensions.Doc, annotated_types.doc()
    return (
        _family(marker) == "pydantic"
        and type(marker).__name__ == "FieldInfo"
        and not marker.metadata
        and marker.discriminator is None
    )


def _value_class(tp: Any) -> Any:
    """The class of the values ``tp`` converts to (``T | None``: T's; None passes every constraint),
    or ``tp`` itself when it has none."""
    while True:
        origin = get_origin(tp)
        if origin is typing.Annotated:
            tp = get_args(tp)[0]
        elif origin in _UNION_ORIGINS and sum(arg is not type(None) for arg in get_args(tp)) == 1:
            tp = next(arg for arg in get_args(tp) if arg is not type(None))
        elif isinstance(tp, typing.NewType):
            tp = tp.__supertype__
        elif _TYPE_ALIAS and isinstance(tp, _TYPE_ALIAS):
            tp = tp.__value__
        else:
            return get_origin(tp) or tp


def _kind(cls: Any) -> str | None:
    """What a bound on values of ``cls`` compares with: "number", "datetime", "date", "time",
    "timedelta", "string", "collection" (a length only); None when nothing."""
    if not isinstance(cls, type) or issubclass(cls, bool):
        return None
    for family, kind in (
        (dt.datetime, "datetime"),
        (dt.date, "date"),
        (dt.time, "time"),
        (dt.timedelta, "timedelta"),
        (_NUMBERS, "number"),
        (str, "string"),
    ):
        if issubclass(cls, family):
            return kind
    if issubclass(cls, cabc.Sized) and not dataclasses.is_dataclass(cls):
        return "collection"
    return None


def _default_zone(zone: dt.tzinfo, kind: str | None, base: Any) -> dt.tzinfo:
    """``zone``, declared as the default zone of a ``datetime`` parameter; TypeError on anything
    else (a ``time`` has no date to find the zone's offset on; ``datetime | None``: put the zone
    inside, ``Annotated[datetime, zone] | None``)."""
    if kind != "datetime" or not (isinstance(base, type) and issubclass(base, dt.datetime)):
        raise TypeError(
            f"cannot enforce a default zone ({zone}) on {_named(base)}: it applies to a datetime "
            "(write Annotated[datetime, zone] | None for an optional one)"
        )
    return zone


def _parts(marker: Any) -> Iterable[Any]:
    """The constraints inside a pydantic marker: a Field's ``metadata``, a ``StringConstraints``' parts."""
    if type(marker).__name__ == "FieldInfo":
        return _flattened(marker.metadata)
    return _flattened(marker) if isinstance(marker, cabc.Iterable) else ()


def _check_general(marker: Any, cls: Any, base: Any) -> None:
    """TypeError for a pydantic ``pattern`` on a non-string or ``max_digits``/``decimal_places`` on a
    non-Decimal: pydantic accepts them at first and raises TypeError at every call."""
    for attribute, family, what in (
        ("pattern", str, "strings"),
        ("max_digits", decimal.Decimal, "Decimals"),
        ("decimal_places", decimal.Decimal, "Decimals"),
    ):
        value = getattr(marker, attribute, None)
        if value is not None and not (isinstance(cls, type) and issubclass(cls, family)):
            raise TypeError(
                f"cannot enforce {attribute}={value!r} on {_named(base)}: it applies to {what} only"
            )


def _named(tp: Any) -> str:
    # ``list[int]`` passes for a type in Python 3.10 (``isinstance(list[int], type)``): its origin
    # tells it from a class
    plain_class = isinstance(tp, type) and typing.get_origin(tp) is None
    return tp.__qualname__ if plain_class else repr(tp)


# -- annotated_types, checked here ------------------------------------------------------------------


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, _NUMBERS):
        return False
    return not (
        value.is_nan()
        if isinstance(value, decimal.Decimal)
        else isinstance(value, float) and math.isnan(value)
    )


def _bound(attribute: str, value: Any, kind: str | None, base: Any) -> Any:
    """``value`` as the bound ``attribute`` puts on a ``kind`` (a timedelta's number: seconds); TypeError
    when it cannot apply."""
    fits = {
        "number": _is_number(value),
        "timedelta": isinstance(value, dt.timedelta) or _is_number(value),
        "datetime": isinstance(value, dt.datetime),
        "date": isinstance(value, dt.date) and not isinstance(value, dt.datetime),
        "time": isinstance(value, dt.time),
        "string": isinstance(value, str),
    }
    if kind is None or kind == "collection":
        raise TypeError(
            f"cannot enforce {attribute}={value!r} on {_named(base)}: a bound applies to numbers, "
            "dates, times, durations and strings"
        )
    if not fits[kind]:
        raise TypeError(
            f"cannot enforce {attribute}={value!r} on {_named(base)}: the bound is not a {kind}"
        )
    if kind in ("datetime", "time") and value.utcoffset() is None:
        # every datetime and time argument arrives aware (rich_types: RFC 3339 needs the offset),
        # and an aware value does not compare with a naive one
        raise TypeError(
            f"cannot enforce {attribute}={value!r} on {_named(base)}: the bound has no time zone, "
            "and every argument arrives with its offset: give the bound a tzinfo "
            "(e.g. tzinfo=datetime.timezone.utc)"
        )
    if kind == "timedelta" and not isinstance(value, dt.timedelta):
        try:
            return dt.timedelta(seconds=float(value))
        except OverflowError:
            raise TypeError(
                f"cannot enforce {attribute}={value!r} on {_named(base)}: out of range"
            ) from None
    return value


def _native_check(marker: Any, kind: str | None, base: Any) -> _Check:
    """The check of one annotated_types marker on a ``kind``; TypeError when it cannot apply."""
    name = type(marker).__name__
    if name in ("Gt", "Ge", "Lt", "Le"):
        attribute = name.lower()
        return _order_check(attribute, _bound(attribute, getattr(marker, attribute), kind, base))
    if name == "MultipleOf":
        step = marker.multiple_of
        if kind != "number" or not _is_number(step) or step == 0:
            raise TypeError(
                f"cannot enforce multiple_of={step!r} on {_named(base)}: "
                "it applies to numbers, with a number other than 0"
            )
        return _multiple_check(step)
    if name in ("MinLen", "MaxLen"):
        attribute = "min_length" if name == "MinLen" else "max_length"
        if kind not in ("string", "collection"):
            raise TypeError(
                f"cannot enforce {attribute}={getattr(marker, attribute)!r} on {_named(base)}: "
                "it applies to strings, arrays and objects"
            )
        return _length_check(attribute, getattr(marker, attribute))
    if name in ("Predicate", "Not"):
        return _predicate_check(marker.func, name == "Not")
    raise TypeError(f"cannot enforce {marker!r} on {_named(base)}")


def _shown(value: Any) -> str:
    """``value`` as a refusal quotes it: its JSON form, cut to :data:`_SHOWN` characters."""
    text = rich_jsonable(value)
    shown = text if isinstance(text, str) and not isinstance(value, str) else repr(text)
    return shown if len(shown) <= _SHOWN else shown[: _SHOWN - 3] + "..."


def _order_check(attribute: str, bound: Any) -> _Check:
    compare, sign = _ORDER[attribute]
    label = f"{attribute}={_shown(bound)}"

    def check(value: Any) -> str | None:
        # A Decimal of exponent 999999999 compares at once, unexpanded; naive and aware datetimes
        # do not compare (TypeError), nor does a signalling NaN.
        try:
            passes = compare(value, bound)
        except (TypeError, ArithmeticError) as exc:
            return f"{_shown(value)} cannot be compared with {label} ({exc})"
        return None if passes else f"{_shown(value)} is not {sign} {_shown(bound)} ({label})"

    return check


def _multiple_check(step: Any) -> _Check:
    label = f"multiple_of={_shown(step)}"
    divisor = decimal.Decimal(str(step))

    def check(value: Any) -> str | None:
        if isinstance(value, int) and isinstance(step, int):  # JSON integers: at most 4,300 digits
            passes = value % step == 0
        else:
            # In decimal (0.3 is a multiple of 0.1), to 60 digits: a larger quotient is refused
            # (DivisionImpossible), never computed; so is a value that is not finite or not a number.
            traps = [decimal.InvalidOperation, decimal.Overflow, decimal.DivisionByZero]
            exact = decimal.Context(prec=60, traps=traps)
            try:
                number = (
                    decimal.Decimal(str(value)) if not isinstance(value, decimal.Decimal) else value
                )
                passes = exact.remainder(number, divisor).is_zero()
            except (TypeError, ValueError, ArithmeticError):
                return f"{_shown(value)} is too large, or not a number, to check {label}"
        return None if passes else f"{_shown(value)} is not a multiple of {_shown(step)} ({label})"

    return check


def _length_check(attribute: str, limit: int) -> _Check:
    def check(value: Any) -> str | None:
        try:
            size = len(value)
        except TypeError:
            return f"{_shown(value)} has no length ({attribute}={limit})"
        if size < limit if attribute == "min_length" else size > limit:
            return (
                f"{_shown(value)} has length {size}, not {'>=' if attribute == 'min_length' else '<='} "
                f"{limit} ({attribute}={limit})"
            )
        return None

    return check


def _predicate_check(func: Callable[[Any], Any], negated: bool) -> _Check:
    label = (
        f"{'Not' if negated else 'Predicate'}({getattr(func, '__qualname__', None) or repr(func)})"
    )

    def check(value: Any) -> str | None:
        try:
            passes = bool(func(value)) is not negated
        except (TypeError, ValueError, ArithmeticError):  # the predicate cannot judge it: refused
            passes = False
        return None if passes else f"{_shown(value)} fails {label}"

    return check


def _checking(convert: _Converter | None, checks: list[_Check]) -> _Converter:
    def convert_and_check(value: Any) -> Any:
        converted = convert(value) if convert is not None else value
        if converted is None:  # ``T | None``: the constraints are on T
            return None
        for check in checks:
            problem = check(converted)
            if problem is not None:
                raise ValueError(problem)
        return converted

    return convert_and_check


def _checked_first(convert: _Converter, validate: _Converter) -> _Converter:
    """``validate`` (pydantic's) on the JSON value, once ``convert`` (mcp_ref's) has accepted it."""

    def convert_then_validate(value: Any) -> Any:
        convert(value)
        return validate(value)

    return convert_then_validate


# -- pydantic's markers: pydantic's own validation --------------------------------------------------


def _by_pydantic(annotation: Any) -> _Converter:
    """A converter validating with pydantic's ``TypeAdapter(annotation)`` (the user's code loaded pydantic:
    one of its markers is in the annotation).  A ``pattern`` is matched with Python's ``re``, as the
    JSON Schema validator matches the listed ``pattern``, where pydantic allows choosing."""
    from pydantic import ConfigDict, PydanticUserError, TypeAdapter, ValidationError

    try:
        try:
            adapter: Any = TypeAdapter(annotation, config=ConfigDict(regex_engine="python-re"))
        except PydanticUserError:  # a model, dataclass or TypedDict keeps its own config
            adapter = TypeAdapter(annotation)
    except Exception as exc:  # a constraint pydantic cannot apply to the type, a bad pattern ...
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise TypeError(
            f"cannot enforce the constraints of {annotation!r}: pydantic refuses them ({first})"
        ) from None

    def convert(value: Any) -> Any:
        try:
            return adapter.validate_python(value)
        except ValidationError as exc:
            raise ValueError(_pydantic_problem(exc)) from None
        except ArithmeticError:  # decimal.Overflow: multiple_of on a Decimal of exponent 999999999
            raise ValueError(
                f"{_shown(value)} is too large to check against its constraints"
            ) from None

    return convert


def _pydantic_problem(exc: Any) -> str:
    """A ValidationError in a line: each error's place, message and type (no documentation link)."""
    parts = []
    for error in exc.errors(include_url=False)[:3]:
        where = ".".join(str(part) for part in error.get("loc", ()))
        parts.append(
            f"{where + ': ' if where else ''}{error['msg']} [{error['type']}], given "
            f"{_shown(error.get('input'))}"
        )
    return "; ".join(parts)
