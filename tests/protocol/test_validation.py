"""mcp_ref.server.signatures: the quick test for plain object schemas never disagrees with jsonschema."""

import itertools

import jsonschema
import pytest

from mcp_ref.server.signatures import Validator, first_error, quick_check, validator_for

# Values of every JSON type, and the edge cases between them.
VALUES = ["", "hi", 0, 1, -7, 1.0, 2.5, True, False, None, [], [1], {}, {"a": 1}]

PLAIN_SCHEMAS = [
    {"type": "object"},
    {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    {"type": "object", "properties": {"n": {"type": "integer", "title": "N", "default": 3}}},
    {
        "type": "object",
        "properties": {"x": {"type": "number"}, "y": {"type": ["number", "null"]}},
        "required": ["x"],
        "additionalProperties": False,
    },
    {
        "type": "object",
        "properties": {
            "flag": {"type": "boolean"},
            "any": {},
            "when": {"type": "string", "format": "date"},
        },
        "additionalProperties": True,
        "$schema": "https://json-schema.org/draft/2020-12/schema",
    },
    {
        "type": "object",
        "properties": {"items": {"type": "array"}, "opts": {"type": "object"}},
        "required": ["items", "opts"],
        "$schema": "http://json-schema.org/draft-07/schema#",
    },
]

NOT_PLAIN = [
    {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}},
    {"type": "object", "properties": {"s": {"enum": ["a", "b"]}}},
    {
        "type": "object",
        "properties": {"o": {"type": "object", "properties": {"a": {"type": "string"}}}},
    },
    {
        "type": "object",
        "properties": {"r": {"$ref": "#/$defs/r"}},
        "$defs": {"r": {"type": "string"}},
    },
    {"type": "object", "additionalProperties": {"type": "string"}},
    {"type": "object", "minProperties": 1},
    {"type": "object", "$schema": "http://json-schema.org/draft-03/schema#"},
    {"type": "object", "properties": {"t": {"type": "decimal"}}},
    {"type": "array"},
    True,
]


def instances(schema):
    """Objects over the schema's property names plus one stranger, with every value; and non-objects."""
    names = list(schema.get("properties", {})) + ["other"]
    yield from VALUES
    for count in range(len(names) + 1):
        for chosen in itertools.combinations(names, count):
            for values in itertools.islice(itertools.product(VALUES, repeat=count), 400):
                yield dict(zip(chosen, values, strict=True))


@pytest.mark.slow
@pytest.mark.parametrize("schema", PLAIN_SCHEMAS)
def test_the_quick_test_accepts_only_what_jsonschema_accepts(schema):
    quick = quick_check(schema)
    assert quick is not None, "a plain schema gets a quick test"
    reference = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )(schema)
    validator = validator_for(schema)
    accepted = 0
    for instance in instances(schema):
        valid = reference.is_valid(instance)
        if quick(instance):
            accepted += 1
            assert valid, f"quick accepted {instance!r}, which jsonschema refuses under {schema}"
        assert validator.is_valid(instance) == valid, instance
        assert (first_error(validator, instance) is None) == valid, instance
    assert accepted > 0


@pytest.mark.parametrize("schema", NOT_PLAIN)
def test_other_schemas_are_left_to_jsonschema(schema):
    assert quick_check(schema) is None


def test_the_quick_test_takes_the_usual_arguments():
    quick = quick_check(PLAIN_SCHEMAS[1])
    assert quick({"text": "hi"}) is True
    assert quick({"text": 1}) is False
    assert quick({}) is False
    # A whole float is an integer to JSON Schema: the quick test leaves it to jsonschema, which accepts it.
    validator = validator_for(PLAIN_SCHEMAS[2])
    assert validator.quick({"n": 2.0}) is False and validator.is_valid({"n": 2.0})


def test_errors_still_come_from_jsonschema_in_json_words():
    validator = validator_for(PLAIN_SCHEMAS[3])
    assert isinstance(validator, Validator)
    assert first_error(validator, {"x": "1"}) == 'x: "1" is not of type "number"'
    assert first_error(validator, {"x": 1, "z": 2}) == 'unexpected property "z"'
    assert first_error(validator, {}) == '"x" is a required property'
    assert validator.schema is PLAIN_SCHEMAS[3]
