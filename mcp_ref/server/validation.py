"""JSON Schema validation of the schemas users give: tool input and output, prompt arguments,
elicitation replies.

jsonschema is heavy, so it is imported on the first validation, never at ``import mcp_ref``.
(The official MCP schemas, used to check whole messages, are :mod:`mcp_ref.schemas`.)

Most tool schemas are plain: an object of named properties, each of one JSON type, some of them
required.  For those, :func:`quick_check` compiles a direct test that accepts what is certainly
valid in about a microsecond; anything it does not accept (and every other schema) goes to
jsonschema, which decides, and words the error.  So the quick test can only save time: it never
accepts what jsonschema would refuse (``tests/protocol/test_validation.py`` checks the two agree).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, cast


def validator_for(schema: dict) -> Any:
    """A jsonschema validator for ``schema`` in its declared dialect (``$schema``), 2020-12 by default.

    2025-11-25 basic §JSON Schema Usage: "Schemas without an explicit $schema
    field MUST conform to JSON Schema 2020-12", and implementations "MUST handle
    unsupported dialects gracefully by returning an appropriate error" — a
    ValueError here.  An invalid schema raises jsonschema's SchemaError.
    """
    import jsonschema  # heavy: loaded on first validation

    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    if (
        dialect is not None
        and jsonschema.validators.validator_for({"$schema": dialect}, default=cast(Any, None))
        is None
    ):
        raise ValueError(f"unsupported JSON Schema dialect {dialect!r}")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return Validator(cls(schema), quick_check(schema))


class Validator:
    """A schema's validator: ``quick`` (from :func:`quick_check`, or None) first, jsonschema's
    ``checker`` for whatever ``quick`` does not accept, and for the errors."""

    __slots__ = ("checker", "quick")

    def __init__(self, checker: Any, quick: Callable[[Any], bool] | None = None):
        self.checker = checker
        self.quick = quick

    @property
    def schema(self) -> Any:
        """The schema validated against."""
        return self.checker.schema

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
#: Keywords that never make an instance invalid (annotations; ``format`` too, which jsonschema
#: does not assert without a format checker, and none is given here).
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
        "format",
    }
)
_OBJECT_KEYWORDS = (
    frozenset({"type", "properties", "required", "additionalProperties", "$schema"}) | _ANNOTATIONS
)
#: The dialects in which ``type``, ``properties``, ``required`` and ``additionalProperties`` mean
#: the same (draft 3's ``required`` does not).
_QUICK_DIALECTS = frozenset(
    {
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "http://json-schema.org/draft-07/schema#",
        "http://json-schema.org/draft-07/schema",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-06/schema",
    }
)


def quick_check(schema: Any) -> Callable[[Any], bool] | None:
    """A test that is True only for instances ``schema`` certainly accepts; None when ``schema``
    is not of the plain shape it knows.

    The shape: ``"type": "object"``, ``properties`` whose every schema is at most a ``type`` (one
    name or a list) plus annotations, ``required`` names, and ``additionalProperties`` true or
    false.  Anything else (``$ref``, ``enum``, bounds, nested objects ...) is jsonschema's alone.
    """
    if (
        not isinstance(schema, dict)
        or schema.get("type") != "object"
        or not schema.keys() <= _OBJECT_KEYWORDS
    ):
        return None
    if "$schema" in schema and schema["$schema"] not in _QUICK_DIALECTS:
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    additional = schema.get("additionalProperties", True)
    if (
        not isinstance(properties, dict)
        or not isinstance(required, list)
        or not isinstance(additional, bool)
    ):
        return None
    if not all(isinstance(name, str) for name in required):
        return None
    tests: dict[
        str, Any
    ] = {}  # the exact classes (a frozenset) a property's value may have; None: any value
    for name, sub in properties.items():
        if not isinstance(sub, dict) or not sub.keys() <= _ANNOTATIONS | {"type"}:
            return None
        kinds = sub.get("type")
        kinds = kinds if isinstance(kinds, list) or kinds is None else [kinds]
        if kinds is not None and not (
            kinds and all(isinstance(k, str) and k in _TYPE_TESTS for k in kinds)
        ):
            return None
        tests[name] = None if kinds is None else frozenset(t for k in kinds for t in _TYPE_TESTS[k])
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


def first_error(validator: Any, instance: Any) -> str | None:
    """The most relevant violation of ``instance`` as one line (``path: message``); None when valid."""
    if validator.is_valid(instance):
        return None
    import jsonschema

    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    where = "/".join(str(p) for p in error.absolute_path)
    message = json_message(error)
    return f"{where}: {message}" if where else message


def _json(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def json_message(error: Any) -> str:
    """A jsonschema error in JSON's words: ``"x" is not of type "number"``, not Python's ``'x'``.

    The peer wrote JSON, and reads the message as JSON: ``true``, ``null`` and double quotes.
    The usual keywords are phrased here; any other keeps jsonschema's message.
    """
    kind, instance, expected = error.validator, error.instance, error.validator_value
    if kind == "type":
        kinds = expected if isinstance(expected, list) else [expected]
        return f"{_json(instance)} is not of type {' or '.join(_json(k) for k in kinds)}"
    if kind == "required" and isinstance(instance, dict):
        missing = [name for name in expected if name not in instance]
        if missing:
            return f"{_json(missing[0])} is a required property"
    if kind == "enum":
        return f"{_json(instance)} is not one of {_json(expected)}"
    if kind == "const":
        return f"{_json(instance)} is not {_json(expected)}"
    if kind == "additionalProperties" and isinstance(instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = [name for name in instance if name not in allowed]
        if extra:
            return f"unexpected propert{'y' if len(extra) == 1 else 'ies'} {', '.join(_json(n) for n in extra)}"
    if kind in (
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "pattern",
        "format",
        "multipleOf",
    ):
        return f"{_json(instance)} does not satisfy {kind} {_json(expected)}"
    return error.message
