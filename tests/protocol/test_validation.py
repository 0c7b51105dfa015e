"""mcp_ref.server.signatures: the quick test for plain object schemas never disagrees with jsonschema."""

import itertools
import subprocess
import sys

import jsonschema
import pytest

from mcp_ref.schemas import local_validator
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


# -- a plain schema is valid by its shape: no check against the meta-schema -----------------------

#: quick_check's dialects (``$schema``), and none: 2020-12.
DIALECTS = [
    None,
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-06/schema#",
]
ANNOTATIONS = [
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "format",
]


def meta_schema_errors(schema):
    """What jsonschema's check against the meta-schema of ``schema``'s dialect says (None: valid)."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return exc.message
    return None


def with_dialect(schema, dialect):
    return schema if dialect is None else {**schema, "$schema": dialect}


def shapes():
    """Plain-looking schemas with each annotation given a value of every JSON type (at the top and
    on a property), and ``required`` and ``type`` lists good and bad, in every dialect."""
    for dialect in DIALECTS:
        for keyword in ANNOTATIONS:
            for value in VALUES:
                yield with_dialect({"type": "object", keyword: value}, dialect)
                yield with_dialect(
                    {"type": "object", "properties": {"a": {"type": "string", keyword: value}}},
                    dialect,
                )
        for required in ([], ["a"], ["a", "b"], ["a", "a"], [1], ["a", None]):
            yield with_dialect({"type": "object", "required": required}, dialect)
        for kinds in (["string"], ["string", "null"], [], ["string", "string"], ["string", 1]):
            yield with_dialect({"type": "object", "properties": {"a": {"type": kinds}}}, dialect)
        for kind in ("string", None, 1, "decimal"):
            yield with_dialect({"type": "object", "properties": {"a": {"type": kind}}}, dialect)


def test_a_schema_the_quick_test_takes_is_valid_under_its_meta_schema():
    taken = refused = 0
    for schema in shapes():
        if quick_check(schema) is None:
            refused += 1
            continue
        taken += 1
        assert meta_schema_errors(schema) is None, schema
    assert taken > 100 and refused > 100  # both sides really met


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "title": 5},
        {"type": "object", "properties": {"a": {"type": "string", "description": ["x"]}}},
        {"type": "object", "properties": {"a": {"type": "string", "examples": "x"}}},
        {"type": "object", "required": ["a", "a"]},
        {"type": "object", "properties": {"a": {"type": ["string", "string"]}}},
        {"type": "object", "properties": {"a": {"type": None}}},
    ],
    ids=["title", "description", "examples", "required-twice", "type-twice", "type-null"],
)
def test_a_plain_looking_schema_jsonschema_refuses_is_still_refused(schema):
    assert quick_check(schema) is None
    assert meta_schema_errors(schema) is not None
    with pytest.raises(jsonschema.SchemaError):
        validator_for(schema)


def test_a_plain_schemas_validator_makes_jsonschemas_only_when_asked():
    validator = validator_for(PLAIN_SCHEMAS[1])
    assert validator.is_valid({"text": "hi"})  # the quick test alone
    assert validator._checker is None
    assert not validator.is_valid(
        {"text": 1}
    )  # jsonschema decides what the quick test does not take
    assert validator.checker.schema is PLAIN_SCHEMAS[1]
    assert first_error(validator, {}) == '"text" is a required property'


def test_registering_plain_tools_loads_no_jsonschema(tmp_path):
    # The meta-schema check took about a millisecond a tool; a plain tool's schemas skip it.
    script = tmp_path / "plain_tools.py"
    script.write_text(
        "import sys\n"
        "from mcp_ref import Server\n"
        "server = Server('plain')\n"
        "for n in range(50):\n"
        "    def tool(a: int, b: str = 'x', c: float | None = None) -> int:\n"
        "        return a\n"
        "    server.add_tool(tool, name=f'tool{n}')\n"
        "assert len(server.registered_tools()) == 50\n"
        "print('jsonschema' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False", done.stdout + done.stderr


# -- a $ref is resolved inside the schema, never fetched -----------------------------------------


@pytest.mark.parametrize("scheme", ["http", "file"])
def test_a_ref_to_a_uri_is_never_fetched(scheme, tmp_path):
    """A schema may come from a peer (a tool's ``outputSchema`` a client checks): a ``$ref`` naming
    a URI must not make this process open it.  jsonschema alone fetches it (``http:``, ``file:``)."""
    import socket

    import referencing.exceptions

    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    secret = tmp_path / "secret.json"
    secret.write_text('{"type": "string"}')
    uri = (
        f"http://127.0.0.1:{listener.getsockname()[1]}/schema.json"
        if scheme == "http"
        else secret.as_uri()
    )
    default_timeout = socket.getdefaulttimeout()
    socket.setdefaulttimeout(5)  # a fetch (the defect) would wait for an answer: bounded
    try:
        schema = {"type": "object", "properties": {"x": {"$ref": uri}}}
        validator = validator_for(schema)
        with pytest.raises(referencing.exceptions.Unresolvable) as refused:
            validator.is_valid({"x": 1})
        assert refused.value.ref == uri
        with pytest.raises(BlockingIOError):  # nobody connected while it was validating
            listener.accept()
    finally:
        socket.setdefaulttimeout(default_timeout)
        listener.close()


def test_a_ref_inside_the_schema_or_to_a_meta_schema_still_resolves():
    local = {"$defs": {"n": {"type": "integer"}}, "properties": {"x": {"$ref": "#/$defs/n"}}}
    assert first_error(validator_for(local), {"x": "s"}) == 'x: "s" is not of type "integer"'
    draft7 = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"n": {"type": "integer"}},
        "properties": {"x": {"$ref": "#/definitions/n"}},
    }
    assert not validator_for(draft7).is_valid({"x": "s"})
    meta = {"properties": {"s": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}}
    assert validator_for(meta).is_valid({"s": {"type": "string"}})
    assert not validator_for(meta).is_valid({"s": {"type": 5}})


# -- uniqueItems: one pass over the items, JSON's equality ----------------------------------------


@pytest.fixture
def comparisons(monkeypatch):
    """How many times jsonschema's pairwise uniqueItems compared two items (a one-item list)."""
    import jsonschema._utils

    counted = [0]
    compare = jsonschema._utils.equal

    def counting(one, two):
        counted[0] += 1
        return compare(one, two)

    monkeypatch.setattr(jsonschema._utils, "equal", counting)
    return counted


def test_unique_items_costs_one_pass_not_every_pair(comparisons):
    """jsonschema's own uniqueItems compares every pair of items that do not sort (strings and
    arrays mixed): quadratic in a peer's message.  mcp_ref's validators hash each item once."""
    schema = {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": True}}}
    items = [str(i) if i % 2 else [i] for i in range(2000)]
    validator = validator_for(schema)
    assert validator.is_valid({"tags": items})
    assert first_error(validator, {"tags": items + ["1"]}) == (
        'tags: items 1 and 2000 are equal ("1"): uniqueItems requires distinct items'
    )
    assert comparisons[0] < len(items)


DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
DRAFT_07 = "http://json-schema.org/draft-07/schema#"


@pytest.mark.parametrize(
    "schema",
    [
        # a tree: the root, which names its dialect, is reached again through "$ref": "#"
        {
            "$schema": DRAFT_2020_12,
            "type": "object",
            "properties": {
                "tags": {"type": "array", "uniqueItems": True},
                "children": {"type": "array", "items": {"$ref": "#"}},
            },
        },
        # embedded resources that name their own dialect, the same one or another
        {"properties": {"children": {"items": {"$schema": DRAFT_2020_12, "$ref": "#/$defs/n"}}}}
        | {"$defs": {"n": {"properties": {"tags": {"type": "array", "uniqueItems": True}}}}},
        {
            "properties": {
                "children": {
                    "type": "array",
                    "items": {
                        "$schema": DRAFT_07,
                        "properties": {"tags": {"type": "array", "uniqueItems": True}},
                    },
                }
            }
        },
    ],
    ids=["ref-to-root", "embedded-same-dialect", "embedded-draft-07"],
)
def test_unique_items_costs_one_pass_below_a_subschema_naming_its_dialect(schema, comparisons):
    """jsonschema validates a subschema that names its ``$schema`` with its own class of that
    dialect (pairwise uniqueItems again) unless mcp_ref's class evolves into mcp_ref's."""
    items = [str(i) if i % 2 else [i] for i in range(2000)]
    validator = validator_for(schema)
    assert validator.is_valid({"children": [{"tags": items}]})
    assert first_error(validator, {"children": [{"tags": items + ["1"]}]}) == (
        'children/0/tags: items 1 and 2000 are equal ("1"): uniqueItems requires distinct items'
    )
    assert comparisons[0] < len(items)


@pytest.mark.parametrize(
    ("items", "unique"),
    [
        ([1, 1.0], False),  # numbers are equal by value
        ([1, True], True),  # true is not 1
        ([0, False, None, "", [], {}], True),
        ([{"a": 1, "b": [2]}, {"b": [2], "a": 1}], False),  # whatever the key order
        ([{"a": 1}, {"a": 1.0}], False),
        ([[1, [2]], [1, [2.0]]], False),
        ([[1, 2], [2, 1]], True),
        ([{"a": True}, {"a": 1}], True),
    ],
)
def test_unique_items_uses_json_equality_in_every_dialect(items, unique):
    for dialect in (
        "https://json-schema.org/draft/2020-12/schema",
        "http://json-schema.org/draft-07/schema#",
    ):
        schema = {"$schema": dialect, "type": "array", "uniqueItems": True}
        assert local_validator(schema).is_valid(items) is unique
        assert jsonschema.validators.validator_for(schema)(schema).is_valid(items) is unique
