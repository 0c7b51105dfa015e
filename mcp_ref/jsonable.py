"""A Python value as JSON: the one converter both roles use for the values a user's code gives them.

A server writes its tools' results and structured content through it
(:func:`mcp_ref.server.signatures.to_jsonable`); a client sends its tool-call arguments, prompt
arguments, completion context and elicitation answers through it (:func:`sendable_params`, in
:func:`serialize_answering`, and :func:`as_text`).  So what an mcp_ref
server accepts as a ``datetime``, ``UUID`` or ``Decimal`` parameter (:mod:`mcp_ref.server.rich_types`),
a client may pass as that Python value, written as the server would write it out (a
model's fields named as the server reads them):

* a dataclass instance: an object of its fields; an Enum member: its value; a tuple or a set: an
  array; dict keys that are Enum members: their values;
* ``datetime``, ``date``, ``time``: RFC 3339 (``isoformat``), the ``date-time``, ``date`` and
  ``time`` formats of JSON Schema 2020-12 validation §7.3.1.  An aware value keeps its offset; a
  naive ``datetime`` is written as the local time Python takes it for (``astimezone()``, so
  ``datetime.now()`` comes out right), with that offset; a naive ``time`` as it is (no date to
  give it an offset);
* ``timedelta``: ISO 8601 (``P1DT2H``, ``PT0.5S``), as pydantic writes it;
* ``UUID``, a path, ``Decimal``: their text (a Decimal as a string, so no digit is lost);
* a pydantic model: ``model_dump(mode="json")``, its fields named as the peer reads them: what is
  sent to be validated (a client's arguments, an elicitation answer: :func:`sendable`) by their
  validation alias, as the model's validation schema (a tool's ``inputSchema``) names them; what a
  server writes (a result: :func:`to_jsonable`) by their serialization alias, as its serialization
  schema (an ``outputSchema``) does.  Another type made for pydantic: pydantic's own JSON form
  (pydantic is imported only then: the user's code has loaded it).

Nothing that already is JSON is changed (a string stays a string, ``"2027-01-01"`` is not a date).
A message is first encoded as it is, and only when that fails are its params converted (a plain
``tools/call`` stays one ``json.dumps``, and does not load this module); ``get_prompt`` and
``complete`` always pass their values through :func:`text_arguments`, and a server its tools'
structured results (scalars excepted) through :func:`to_jsonable`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import json
import logging
import math
import pathlib
import sys
import types
import uuid
from typing import Any

from .errors import INTERNAL_ERROR
from .jsonrpc import ErrorResponse, Message, Notification, Request, serialize, serialize_items

__all__ = [
    "as_text",
    "for_pydantic",
    "is_model",
    "pydantic_loaded",
    "rich_jsonable",
    "sendable",
    "sendable_params",
    "text_arguments",
    "to_jsonable",
]

_SCALARS = frozenset({str, int, float, bool, type(None)})
#: Keys ``json.dumps`` writes as strings itself (so the fast path already accepts them).
_KEYS = (str, int, float, bool, type(None))
#: What JSON writes as an array.
_ARRAYS = (list, tuple, set, frozenset)


def pydantic_loaded() -> bool:
    """True when the program has imported pydantic (mcp_ref never imports it first)."""
    return "pydantic" in sys.modules


def is_model(tp: Any) -> bool:
    """True for a pydantic (v2) model class, without importing pydantic."""
    return (
        isinstance(tp, type)
        and callable(getattr(tp, "model_json_schema", None))
        and callable(getattr(tp, "model_validate", None))
    )


def for_pydantic(tp: Any) -> bool:
    """True for a type made for pydantic (``EmailStr``, ``HttpUrl``, a class with a pydantic core
    schema): only those go to pydantic, so ``bytes`` or ``object`` stay what they are whether or
    not the program happens to have loaded pydantic."""
    module = getattr(tp, "__module__", None) or ""
    return module.split(".")[0] in ("pydantic", "pydantic_core") or hasattr(
        tp, "__get_pydantic_core_schema__"
    )


def duration_text(delta: dt.timedelta) -> str:
    """ISO 8601 of ``delta`` (``P1DT2H``, ``PT0.5S``, ``-PT1M``), as pydantic writes a timedelta."""
    micros = abs(delta) // dt.timedelta(microseconds=1)
    days, micros = divmod(micros, 86_400_000_000)
    hours, micros = divmod(micros, 3_600_000_000)
    minutes, micros = divmod(micros, 60_000_000)
    seconds = f"{micros / 1_000_000:f}".rstrip("0").rstrip(".")
    clock = "".join(f"{n}{unit}" for n, unit in ((hours, "H"), (minutes, "M")) if n)
    clock += f"{seconds}S" if micros or not (days or clock) else ""
    return (
        ("-" if delta < dt.timedelta(0) else "")
        + "P"
        + (f"{days}D" if days else "")
        + (f"T{clock}" if clock else "")
    )


def rich_jsonable(value: Any, as_input: bool = False) -> Any:
    """The JSON form of one rich value (a date, a UUID, a Decimal, a pydantic model ...; see the
    module docstring), a model's as the peer validates it when ``as_input``; anything else
    unchanged."""
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        try:
            return value.astimezone().isoformat()
        except (OverflowError, ValueError, OSError):  # near datetime.min or max: no local offset
            return value.isoformat()
    if isinstance(value, (dt.date, dt.time)):  # datetime is a date
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return duration_text(value)
    if isinstance(value, (uuid.UUID, pathlib.PurePath, decimal.Decimal)):
        return str(value)
    if pydantic_loaded() and is_model(type(value)):
        # as its schemas name the fields (rich_types.analyse: by alias, in either mode)
        if as_input:
            return _input_names(value, value.model_dump(mode="json", by_alias=False))
        return value.model_dump(mode="json", by_alias=True)
    if pydantic_loaded() and for_pydantic(type(value)):
        from pydantic_core import to_jsonable_python

        return to_jsonable_python(value)
    return value


def to_jsonable(value: Any, as_input: bool = False) -> Any:
    """``value`` in a JSON-friendly shape (see the module docstring), recursively, as a result is
    written, or as the peer validates its input when ``as_input``; what has no known JSON form is
    returned unchanged (the encoder then refuses it)."""
    if type(value) in _SCALARS:
        return value
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value, as_input)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: to_jsonable(getattr(value, f.name), as_input) for f in dataclasses.fields(value)
        }
    if isinstance(value, dict):
        return {
            (k.value if isinstance(k, enum.Enum) else k): to_jsonable(v, as_input)
            for k, v in value.items()
        }
    if isinstance(value, _ARRAYS):
        return [to_jsonable(v, as_input) for v in value]
    return rich_jsonable(value, as_input)


class UnsendableAlias(TypeError):
    """A field whose validation alias names a place no JSON value can fill faithfully (an
    ``AliasPath`` with a negative index, or items it leaves out before the one it names, or two
    fields naming the same place): the message names the field."""


class _Object(dict):
    """An object built for a field's ``AliasPath`` (not a value of the user's)."""


class _Items(dict):
    """An array built for a field's ``AliasPath``: its items by index until it is complete."""

    field = ""  # the field whose alias made it
    where = ""  # its place, as ``['a'][0]``


def _input_names(original: Any, dumped: Any, declared: Any = None, generator: Any = None) -> Any:
    """``dumped`` (``original`` dumped by field name) with each field put where pydantic validates
    it (:func:`_input_path`), at any depth: in models, pydantic and stdlib dataclasses, and
    TypedDicts (known by ``declared``, the type the enclosing field declares), through dicts,
    arrays and root models.  ``generator`` is the alias generator a TypedDict or a stdlib dataclass
    without a pydantic config of its own takes from the model around it, as pydantic gives it.  A
    part a serializer reshaped (another kind, or other items) is left as pydantic wrote it."""
    typed = _typed_dict_fields(declared) if isinstance(original, dict) else None
    if typed is not None and not (isinstance(dumped, dict) and len(original) == len(dumped)):
        typed = None  # a serializer reshaped it
    own = _config_generator(_unwrapped(declared) if typed is not None else type(original))
    generator = generator if own is None else own
    fields = typed if typed is not None else _fields_of(original)
    if getattr(original, "__pydantic_root_model__", False):
        root = getattr((fields or {}).get("root"), "annotation", None)
        return _input_names(original.root, dumped, root, generator)
    if fields is None or not isinstance(dumped, dict):
        return _input_names_within(original, dumped, declared, generator)
    built = _Object()
    for key, item in dumped.items():
        field = fields.get(key)
        inner = original.get(key) if typed is not None else getattr(original, key, None)
        value = _input_names(inner, item, getattr(field, "annotation", None), generator)
        path = _input_path(key, field, generator) if key in fields else [key]
        _place(built, path, value, key)
    return _built(built)


def _input_names_within(original: Any, dumped: Any, declared: Any, generator: Any) -> Any:
    """:func:`_input_names` through a dict's values and an array's items (``dict[K, V]``:
    each value a V; ``list[T]``, ``tuple[T, ...]``: each item a T)."""
    if isinstance(original, dict) and isinstance(dumped, dict) and len(original) == len(dumped):
        values = _arguments(declared)[-1:] * len(original)
        items = zip(
            original.values(), dumped.items(), values or [None] * len(original), strict=True
        )
        return {key: _input_names(value, item, of, generator) for value, (key, item), of in items}
    if isinstance(original, _ARRAYS) and isinstance(dumped, list) and len(original) == len(dumped):
        element = _arguments(declared)[:1] or [None]
        return [
            _input_names(value, item, element[0], generator)
            for value, item in zip(original, dumped, strict=True)
        ]
    return dumped


def _config_generator(kind: Any) -> Any:
    """The alias generator of the pydantic config class ``kind`` has itself (a model's
    ``model_config``, a dataclass's or a TypedDict's ``__pydantic_config__``): None when it has
    none (a TypedDict or stdlib dataclass without one then takes its enclosing model's, as
    pydantic does), else the generator, or False for a config without one."""
    config = getattr(kind, "model_config", None) if hasattr(kind, "model_fields") else None
    config = getattr(kind, "__pydantic_config__", None) if config is None else config
    if not isinstance(config, dict):
        return None
    return config.get("alias_generator") or False


def _fields_of(original: Any) -> dict | None:
    """The fields of a model or dataclass instance (name to pydantic ``FieldInfo``, or for a
    stdlib dataclass what it declares in ``Annotated`` or as its default), else None."""
    if isinstance(original, type):
        return None
    fields = getattr(type(original), "__pydantic_fields__", None)  # a model, a pydantic dataclass
    if isinstance(fields, dict):
        return fields
    if dataclasses.is_dataclass(original):
        hints = _hints(type(original))
        declared = {}
        for field in dataclasses.fields(original):
            hint = hints.get(field.name)
            info = field.default if hasattr(field.default, "validation_alias") else None
            declared[field.name] = _declared_field(hint, info)
        return declared
    return None


def _hints(kind: type) -> dict:
    """``kind``'s annotations with their ``Annotated`` metadata; {} when they do not resolve."""
    import typing

    try:
        return typing.get_type_hints(kind, include_extras=True)
    except Exception:  # a forward reference that does not resolve: named as declared
        return {}


def _declared_field(hint: Any, info: Any = None) -> types.SimpleNamespace:
    """A key of a TypedDict or a stdlib dataclass: its type, and the validation alias its pydantic
    ``Field`` (``Annotated[int, Field(alias=...)]``, or ``info``) gives it, if any."""
    infos = [m for m in getattr(hint, "__metadata__", ()) if hasattr(m, "validation_alias")]
    info = infos[-1] if infos else info
    return types.SimpleNamespace(
        validation_alias=getattr(info, "validation_alias", None), annotation=hint
    )


def _unwrapped(declared: Any) -> Any:
    """``declared`` without ``Annotated`` or ``Optional`` around it."""
    import typing

    while True:
        origin = typing.get_origin(declared)
        arguments = [a for a in typing.get_args(declared) if a is not type(None)]
        if origin is typing.Annotated:
            declared = arguments[0]
        elif origin in (typing.Union, getattr(types, "UnionType", None)) and len(arguments) == 1:
            declared = arguments[0]
        else:
            return declared


def _arguments(declared: Any) -> list:
    """The type arguments of ``declared`` (``dict[K, V]``: ``[K, V]``; ``tuple[T, ...]``: ``[T]``)."""
    import typing

    return [a for a in typing.get_args(_unwrapped(declared)) if a is not Ellipsis]


def _typed_dict_fields(declared: Any) -> dict | None:
    """A TypedDict's keys, each with its validation alias (``Annotated[int, Field(alias=...)]``) and
    its type; None when ``declared`` is no TypedDict."""
    declared = _unwrapped(declared)
    if not (isinstance(declared, type) and issubclass(declared, dict)):
        return None
    if not hasattr(declared, "__required_keys__"):  # (typing and typing_extensions TypedDicts)
        return None
    return {key: _declared_field(hint) for key, hint in _hints(declared).items()}


def _input_path(name: str, field: Any, generator: Any) -> list:
    """Where field ``name`` goes in the JSON pydantic validates, as a path of keys and indexes: its
    validation alias (which ``alias`` sets too), else the one ``generator`` gives it (pydantic
    applies a model's ``alias_generator`` to its fields, and to a TypedDict's or a stdlib
    dataclass's in it), else its name.  Of ``AliasChoices``, the first plain name (the property
    pydantic's validation JSON schema names), else the first choice; an ``AliasPath`` (``("a", 0,
    "b")``) is a place inside nested objects and arrays, which :func:`_place` builds."""
    alias = getattr(field, "validation_alias", None)  # (None: no alias declared)
    if alias is None and generator:
        generate = getattr(generator, "generate_aliases", None)
        if callable(generate):  # pydantic's AliasGenerator: (alias, validation, serialization)
            named, validation, _ = generate(name)
            alias = named if validation is None else validation
        else:
            alias = generator(name)
    if alias is None:
        return [name]
    if isinstance(alias, str):
        return [alias]
    paths = [getattr(c, "path", [c]) for c in getattr(alias, "choices", [alias])]
    plain = [path for path in paths if len(path) == 1 and isinstance(path[0], str)]
    return list((plain or paths)[0])


def _place(built: _Object, path: list, value: Any, field: str) -> None:
    """Put ``value`` at ``path`` in ``built`` (making the objects and arrays on the way);
    UnsendableAlias naming ``field`` when the place cannot be made faithfully."""
    node: dict = built
    for depth, step in enumerate(path):
        where = "".join(f"[{s!r}]" for s in path[: depth + 1])
        if isinstance(step, int) and step < 0:
            raise UnsendableAlias(
                f"field {field!r}: its validation alias counts from the end of an array "
                f"({where}), which a value sent cannot say"
            )
        if depth == len(path) - 1:
            if step in node:
                raise UnsendableAlias(f"field {field!r}: another field fills {where} too")
            node[step] = value
            return
        kind = _Items if isinstance(path[depth + 1], int) else _Object
        if step not in node:
            node[step] = kind()
            node[step].field, node[step].where = field, where
        elif type(node[step]) is not kind:
            raise UnsendableAlias(f"field {field!r}: another field fills {where} otherwise")
        node = node[step]


def _built(node: Any) -> Any:
    """The JSON of what :func:`_place` made: its arrays as lists (UnsendableAlias when an alias
    leaves an item out before the one it names); the values themselves as they are."""
    if isinstance(node, _Items):
        if sorted(node) != list(range(len(node))):
            missing = min(set(range(max(node) + 1)) - set(node))
            raise UnsendableAlias(
                f"field {node.field!r}: its validation alias names the array {node.where}, "
                f"whose item {missing} no field fills"
            )
        return [_built(node[index]) for index in range(len(node))]
    if isinstance(node, _Object):
        return {key: _built(item) for key, item in node.items()}
    return node


def _where(path: str, key: Any) -> str:
    """``path`` and one step into it: ``.name`` for an identifier key, ``['a b']`` or ``[0]`` else."""
    if isinstance(key, str) and key.isidentifier():
        return f"{path}.{key}" if path else key
    return f"{path}[{key!r}]"


def _refusal(value: Any, path: str) -> str | None:
    """Why ``value`` (already converted) is no JSON, naming the first bad place; None when it is."""
    if value is None or isinstance(value, (str, bool, int)):
        return None
    if isinstance(value, float):
        # RFC 8259 §6: "Numeric values that cannot be represented ... (such as Infinity and NaN)
        # are not permitted."
        return (
            None
            if math.isfinite(value)
            else f"{path or 'the value'}: {value!r} is not a JSON number"
        )
    if isinstance(value, (list, tuple)):  # (a tuple: an array, as json.dumps writes it)
        for index, item in enumerate(value):
            problem = _refusal(item, f"{path}[{index}]")
            if problem is not None:
                return problem
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, _KEYS):
                return f"{_where(path, key)}: a key of type {type(key).__name__} is not JSON"
            if isinstance(key, float) and not math.isfinite(key):
                return f"{path or 'the value'}: the key {key!r} is not a JSON number"
            problem = _refusal(item, _where(path, key))
            if problem is not None:
                return problem
        return None
    return f"{path or 'the value'}: a value of type {type(value).__name__} has no JSON form"


def is_json(value: Any) -> bool:
    """True when ``value`` is made only of what a JSON document holds as it is written: None,
    booleans, numbers (finite floats only), strings, lists, and dicts with string keys.  Stricter
    than :func:`no_json_form`, which takes what ``json.dumps`` writes (a tuple, an int key): a
    parameter's default goes into its schema only when it is JSON as it stands
    (:mod:`mcp_ref.server.signatures`)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(is_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_json(v) for k, v in value.items())
    return value is None or isinstance(value, (bool, int, str))


def no_json_form(value: Any, path: str = "") -> str | None:
    """Where ``value`` (as it is: nothing converted) holds what JSON cannot carry, and what (an
    object of no JSON form, a NaN or an infinity, a nesting too deep); None when it is all JSON.
    Walked, never encoded: a large value (an image's base64) costs one step."""
    try:
        return _refusal(value, path)
    except RecursionError:
        return f"{path or 'the value'}: nested too deeply (or holds itself)"


def sendable(value: Any, path: str = "") -> Any:
    """``value`` as JSON (:func:`to_jsonable`), or ValueError naming the first place (``path``
    and below, e.g. ``arguments.when[0]``) that has no JSON form: an object of no known kind, a
    NaN or an infinity, a nesting too deep (or a cycle)."""
    try:
        converted = to_jsonable(value, as_input=True)
        problem = _refusal(converted, path)
    except RecursionError:
        raise ValueError(f"{path or 'the value'}: nested too deeply (or holds itself)") from None
    if problem is not None:
        raise ValueError(problem)
    return converted


def sendable_params(method: str, params: dict | None) -> dict | None:
    """The ``params`` of an outgoing request or notification with the user's Python values as
    JSON (:func:`sendable`); ValueError naming the method, the tool or prompt, and the place:
    ``tools/call 'book': cannot be sent as JSON: arguments.when: a value of type Slot has no JSON form``.
    What it gives encodes: what ``json`` still refuses (an integer of more than 4,300 digits) is
    that ValueError too."""
    if params is None:
        return None
    try:
        converted = sendable(params)
        json.dumps(converted, allow_nan=False)  # the message's encoder's settings
        return converted
    except (ValueError, TypeError, RecursionError) as exc:
        name = params.get("name") if isinstance(params, dict) else None
        called = f"{method} {name!r}" if isinstance(name, str) else method
        if isinstance(exc, UnsendableAlias):
            raise UnsendableAlias(f"{called}: cannot be sent: {exc}") from None
        raise ValueError(f"{called}: cannot be sent as JSON: {exc}") from None


def as_text(value: Any, path: str = "") -> str:
    """``value`` as the text of a string-only field (prompt arguments, completion values and
    context: ``{[key: string]: string}`` in the schema): a string as it is, a rich value as the
    string it is written as (``date(2027, 1, 1)`` is ``2027-01-01``, an Enum member of a string
    its value), any other JSON (a number, a list) as its JSON text (``42``, ``[1, 2]``)."""
    converted = sendable(value, path)
    if isinstance(converted, str):
        return converted
    return json.dumps(converted, ensure_ascii=False)


def text_arguments(label: str, arguments: dict) -> dict[str, str]:
    """Each of ``arguments`` :func:`as_text` (prompt arguments, a completion's context); ValueError
    naming ``label`` (the method, the prompt) and the argument for a value with no JSON form."""
    try:
        return {key: as_text(value, _where("arguments", key)) for key, value in arguments.items()}
    except ValueError as exc:
        raise ValueError(f"{label}: cannot be sent as JSON: {exc}") from None


# -- a message the session could not write as it is ----------------------------------------------


def serialize_answering(message: Message | list[Message], name: str = "session") -> bytes:
    """The bytes of a message (or a batch list) :func:`mcp_ref.jsonrpc.serialize` refused, as the
    session writes it (it loads this module only then): an answer whose result (or error data)
    JSON cannot carry becomes an Internal error answer (logged under ``name``), so the requester
    is still answered.

    A request or notification (of either role) whose params hold the user's Python values (a
    ``datetime``, a ``UUID``, a dataclass ...) is sent with them as JSON, written as a server
    writes them out (:func:`sendable_params`); one that still cannot be encoded (an object of no
    known kind, a NaN) raises ValueError to its sender naming the method (and tool) and the place
    (``tools/call 'book': cannot be sent as JSON: arguments.when: ...``); nothing invalid is ever
    written.
    """
    if isinstance(message, list):
        return serialize_items([_encodable(m, name) for m in message])
    if isinstance(message, (Request, Notification)):
        # the user's Python values (a datetime, a UUID, a dataclass ...) as JSON, converted
        # in place, so a transport reads what the body carries (Mcp-Param-* headers)
        message.params = sendable_params(message.method, message.params)
        return serialize(message)
    # an answer: its result, or its error's data, made an Internal error when JSON cannot carry it
    return serialize(_encodable(message, name))


def _encodable(message: Message, name: str) -> Message:
    try:
        serialize(message)
        return message
    except (ValueError, TypeError, RecursionError) as exc:
        logging.getLogger("mcp_ref.session").error(
            "%s: the answer to request %r is not JSON (%s); answering Internal error",
            name,
            getattr(message, "id", None),
            exc,
        )
        return ErrorResponse(
            getattr(message, "id", None),
            {"code": INTERNAL_ERROR, "message": "Internal error: the result is not valid JSON"},
        )
