"""The official MCP JSON Schemas, one per protocol revision, shipped with mcp_ref.

``<version>.json`` in this package is an unchanged copy of the specification's
``schema/<version>/schema.json``.  2024-11-05, 2025-03-26 and 2025-06-18 are
JSON Schema draft-07 (types under ``definitions``); 2025-11-25 and 2026-07-28
are 2020-12 (types under ``$defs``).

    >>> from mcp_ref import schemas
    >>> schemas.errors("2025-11-25", "Tool", {"name": "t"})
    ["Tool: 'inputSchema' is a required property at /"]

Nothing is read until it is asked for: a file is parsed on the first ``load``
of its revision, and jsonschema is imported on the first ``validator``.  Every jsonschema
validator mcp_ref makes, of these schemas or of a tool's, comes from :func:`local_validator`,
which never fetches what a ``$ref`` names.  Both
are cached.  An unknown revision or type raises :class:`UnknownVersion` or
:class:`UnknownType`, and a packaged file that is missing raises
:class:`SchemaFileMissing`: nothing here passes silently for want of a schema.
"""

from __future__ import annotations

import difflib
import functools
import json
import threading
from importlib import resources
from typing import Any, cast

__all__ = [
    "VERSIONS",
    "SchemaLookupError",
    "UnknownVersion",
    "UnknownType",
    "SchemaFileMissing",
    "load",
    "dialect",
    "type_names",
    "validator",
    "errors",
    "local_validator",
    "checked_validator",
]

#: The revisions whose schema is packaged here, newest first (like ``mcp_ref.SUPPORTED_VERSIONS``,
#: which is a subset: 2026-07-28 is shipped for checking, not spoken).
VERSIONS: tuple[str, ...] = ("2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")


class SchemaLookupError(LookupError):
    """A schema, or a type in one, that is not available: the base of this module's errors."""


class UnknownVersion(SchemaLookupError):
    """The revision has no packaged schema (it is not in :data:`VERSIONS`)."""


class UnknownType(SchemaLookupError):
    """The revision's schema defines no type of that name."""


class SchemaFileMissing(SchemaLookupError):
    """The revision is known but its packaged file is absent: the installation is incomplete."""


_lock = threading.RLock()


def _check_version(version: str) -> None:
    if version not in VERSIONS:
        raise UnknownVersion(
            f"no MCP schema for protocol version {version!r}; packaged: {', '.join(VERSIONS)}"
        )


@functools.cache
def _load(version: str) -> dict:
    name = f"{version}.json"
    try:
        data = resources.files(__name__).joinpath(name).read_bytes()
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise SchemaFileMissing(
            f"the packaged MCP schema {name} is missing from {__name__} (an incomplete install of mcp_ref?)"
        ) from exc
    return json.loads(data)


def load(version: str) -> dict:
    """The parsed schema document of ``version`` (e.g. ``"2025-11-25"``), read once and cached.

    The dict is shared by every caller and by the validators: treat it as read-only
    (``copy.deepcopy`` it to change it).  Raises :class:`UnknownVersion` for a revision
    not in :data:`VERSIONS` and :class:`SchemaFileMissing` if its file is not installed.
    """
    _check_version(version)
    with _lock:  # one parse per revision, even when threads ask at once
        return _load(version)


def _defs_key(root: dict) -> str:
    return "$defs" if "$defs" in root else "definitions"


def dialect(version: str) -> str:
    """The JSON Schema dialect (the ``$schema`` URI) that ``version``'s schema is written in."""
    return load(version)["$schema"]


def type_names(version: str) -> frozenset[str]:
    """The names of every type ``version``'s schema defines (its ``$defs`` or ``definitions``)."""
    root = load(version)
    return frozenset(root[_defs_key(root)])


@functools.cache
def _validator(version: str, type_name: str):
    root = load(version)
    key = _defs_key(root)
    if type_name not in root[key]:
        close = difflib.get_close_matches(type_name, root[key], n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        raise UnknownType(f"{type_name!r} is not a type of the {version} MCP schema{hint}")
    # The whole document rides along so that every "#/$defs/..." reference resolves.
    schema = {"$schema": root["$schema"], key: root[key], "$ref": f"#/{key}/{type_name}"}
    return local_validator(schema)


def local_validator(schema: Any) -> Any:
    """jsonschema's validator of ``schema`` in its declared dialect (2020-12 by default), which
    resolves a ``$ref`` only inside ``schema`` and the dialects' own meta-schemas.

    A ``$ref`` to any other URI is never fetched: validating then raises
    ``referencing.exceptions.Unresolvable``.  A schema may come from a peer (a tool's
    ``outputSchema`` that the inspector checks a result against), and a peer must not make this
    process open a URL of its choosing (jsonschema alone fetches it, ``file:`` included).  Every
    validator mcp_ref makes comes from here.
    """
    import jsonschema  # here, not at import time: ``import mcp_ref`` stays cheap
    import referencing

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    # the documented keyword (Registry's attrs fields are typed private: mypy reads no alias)
    no_retrieval = cast(Any, referencing.Registry)(retrieve=_never_fetch)
    return _linear(cls)(schema, registry=no_retrieval)


def checked_validator(schema: Any) -> Any:
    """:func:`local_validator` of a schema a user gives (a tool's input or output schema, an
    elicitation's), once it is known to be valid: ValueError when its declared dialect
    (``$schema``) is one jsonschema does not know, jsonschema's SchemaError when it breaks its
    dialect's meta-schema."""
    import jsonschema

    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    if (
        dialect is not None
        and jsonschema.validators.validator_for({"$schema": dialect}, default=cast(Any, None))
        is None
    ):
        raise ValueError(f"unsupported JSON Schema dialect {dialect!r}")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return local_validator(schema)


@functools.cache
def _linear(cls: Any) -> Any:
    """``cls`` (a jsonschema validator class) with :func:`_unique_items` for ``uniqueItems``.

    jsonschema's own ``uniqueItems`` compares every pair of items when they do not sort (strings
    and arrays mixed, objects): a 130 KB array cost a server ~47 s of CPU.  A peer's message must
    cost time linear in its size, so every validator made here checks it with a hash set.

    Every subschema is validated by ``evolve``, and jsonschema's ``evolve`` picks the class of a
    subschema that names its dialect (``"$schema"``: the root again through ``"$ref": "#"``, an
    embedded resource) from its own registry, whose classes compare every pair.  The class made
    here evolves into this module's class of that dialect instead.
    """
    import attrs
    import jsonschema

    linear = jsonschema.validators.extend(cls, {"uniqueItems": _unique_items})
    # what evolve copies: jsonschema's own evolve reads the same attrs fields (since 4.18)
    init_fields = [(field.name, field.alias) for field in attrs.fields(linear) if field.init]
    validator_for = jsonschema.validators.validator_for

    def evolve(validator: Any, **changes: Any) -> Any:
        """jsonschema's ``evolve``, into this module's class of the dialect the schema names."""
        schema = changes.setdefault("schema", validator.schema)
        dialect = validator_for(schema, default=linear)
        for name, alias in init_fields:
            if alias not in changes:
                changes[alias] = getattr(validator, name)
        return (linear if dialect is linear else _linear(dialect))(**changes)

    linear.evolve = evolve
    return linear


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Any:
    """``uniqueItems`` in one pass: 2020-12 validation §6.4.3, "If this keyword has boolean
    value true, the instance validates successfully if all of its elements are unique"; equal
    as JSON values are (core §4.2.2: numbers by value, 1 and 1.0 alike; objects whatever their
    key order; ``true`` is not ``1``)."""
    if not unique or not validator.is_type(instance, "array"):
        return
    first_at: dict[Any, int] = {}
    for index, item in enumerate(instance):
        earlier = first_at.setdefault(_json_key(item), index)
        if earlier != index:
            from jsonschema.exceptions import ValidationError

            shown = json.dumps(item, ensure_ascii=False, default=repr)
            shown = shown if len(shown) <= 80 else shown[:79] + "…"
            yield ValidationError(
                f"items {earlier} and {index} are equal ({shown}): uniqueItems requires distinct items"
            )
            return


def _json_key(value: Any) -> Any:
    """A hashable key of a JSON value, equal for values JSON Schema calls equal (see
    :func:`_unique_items`): an int and a float of the same value hash alike already."""
    if isinstance(value, dict):
        return (dict, frozenset((key, _json_key(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return (list, tuple(_json_key(item) for item in value))
    if isinstance(value, bool):
        return (bool, value)
    return value


def _never_fetch(uri: str) -> Any:
    """The registry's retrieval: none (see :func:`local_validator`)."""
    import referencing.exceptions

    raise referencing.exceptions.NoSuchResource(uri)


def validator(version: str, type_name: str):
    """A jsonschema validator for one type of ``version``'s schema, e.g. ``validator("2025-06-18", "Tool")``.

    The validator class follows the file's ``$schema`` (Draft7Validator or
    Draft202012Validator) and is cached per (version, type).  Raises
    :class:`UnknownVersion` or :class:`UnknownType` when there is no such schema or type.
    """
    _check_version(version)
    if not isinstance(type_name, str):
        raise UnknownType(f"a type name is a string, not {type_name!r}")
    with _lock:
        return _validator(version, type_name)


def errors(version: str, type_name: str, instance) -> list[str]:
    """Every way ``instance`` breaks ``type_name`` of ``version``'s schema, one line each; empty when valid.

    Each line reads ``"<type_name>: <what is wrong> at /<JSON pointer>"``.
    """
    return [
        f"{type_name}: {e.message} at /{'/'.join(map(str, e.absolute_path))}"
        for e in validator(version, type_name).iter_errors(instance)
    ]
