"""JSON Schema validation of the schemas users give: tool input and output, prompt arguments,
elicitation replies.

jsonschema is heavy, so it is imported on the first validation, never at ``import mcp_ref``.
(The official MCP schemas, used to check whole messages, are :mod:`mcp_ref.schemas`.)
"""

from __future__ import annotations

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
    return f"{where}: {error.message}" if where else error.message
