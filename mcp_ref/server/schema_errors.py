"""A JSON Schema violation in JSON's words, for the peer that sent the value.

:func:`mcp_ref.server.signatures.first_error` answers a valid instance itself; this module, loaded
only for an invalid one (a tool's arguments, a prompt's, an elicitation reply, a tool's output),
picks the most relevant of jsonschema's errors and words it as the peer wrote it: JSON's
``true``, ``null`` and double quotes (``x: "1" is not of type "number"``), not Python's.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["worded_error", "json_message"]


def worded_error(validator: Any, instance: Any) -> str:
    """The most relevant violation of ``instance``, which ``validator`` (jsonschema's, or a
    :class:`~mcp_ref.server.signatures.Validator`) refuses, as one line: ``path: message``."""
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
