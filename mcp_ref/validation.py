"""JSON Schema validation of the schemas users give: tool input and output, prompt arguments,
elicitation replies.

jsonschema is heavy, so it is imported on the first validation, never at ``import mcp_ref``.
(The official MCP schemas, used to check whole messages, are :mod:`mcp_ref.schemas`.)
"""

from __future__ import annotations

import json

from typing import Any


def validator_for(schema: dict) -> Any:
    """A jsonschema validator for ``schema`` in its declared dialect (``$schema``), 2020-12 by default.

    2025-11-25 basic §JSON Schema Usage: "Schemas without an explicit $schema
    field MUST conform to JSON Schema 2020-12", and implementations "MUST handle
    unsupported dialects gracefully by returning an appropriate error" — a
    ValueError here.  An invalid schema raises jsonschema's SchemaError.
    """
    import jsonschema  # heavy: loaded on first validation

    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    if dialect is not None and jsonschema.validators.validator_for({"$schema": dialect}, default=None) is None:
        raise ValueError(f"unsupported JSON Schema dialect {dialect!r}")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


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
    if kind in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength",
                "minItems", "maxItems", "pattern", "format", "multipleOf"):
        return f"{_json(instance)} does not satisfy {kind} {_json(expected)}"
    return error.message
