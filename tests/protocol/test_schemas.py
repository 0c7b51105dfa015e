"""mcp_ref.schemas: the official MCP JSON Schemas shipped with the package, and the wire checker
built on them.

Each packaged file must be the schema of the revision it is named after, every lookup of a
revision or type that does not exist must raise, and the WireChecker must be able to fail.
"""

from __future__ import annotations

import configparser
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from conftest import ROOT, WireChecker, schema_errors

from mcp_ref import SUPPORTED_VERSIONS, schemas

DRAFT7 = "http://json-schema.org/draft-07/schema#"
DRAFT2020 = "https://json-schema.org/draft/2020-12/schema"
EXAMPLES = Path(__file__).resolve().parents[1] / "spec_examples" / "2026-07-28"

# What marks each revision's schema: its dialect, types it introduced (or still has), and types
# it does not have (dropped, or not yet introduced).
REVISIONS = {
    "2024-11-05": (
        DRAFT7,
        {"Annotated", "ResourceReference", "InitializeRequest"},
        {"AudioContent", "JSONRPCBatchRequest", "ElicitRequest"},
    ),
    "2025-03-26": (
        DRAFT7,
        {"AudioContent", "JSONRPCBatchRequest", "ToolAnnotations", "InitializeRequest"},
        {"Annotated", "ElicitRequest", "ResourceLink"},
    ),
    "2025-06-18": (
        DRAFT7,
        {"ElicitRequest", "ResourceLink", "ContentBlock", "JSONRPCError"},
        {"JSONRPCBatchRequest", "JSONRPCErrorResponse", "Task"},
    ),
    "2025-11-25": (
        DRAFT2020,
        {
            "JSONRPCErrorResponse",
            "Task",
            "Icon",
            "ElicitationCompleteNotification",
            "InitializeRequest",
        },
        {"JSONRPCError", "DiscoverRequest"},
    ),
    "2026-07-28": (
        DRAFT2020,
        {"DiscoverRequest", "SubscriptionsListenRequest", "InputRequiredResult"},
        {"InitializeRequest", "Task", "PingRequest"},
    ),
}
# Types every revision defines.
CORE = {
    "JSONRPCRequest",
    "JSONRPCNotification",
    "Tool",
    "ListToolsRequest",
    "ListToolsResult",
    "CallToolRequest",
    "CallToolResult",
    "Resource",
    "ReadResourceResult",
    "Prompt",
    "GetPromptResult",
    "TextContent",
    "ImageContent",
    "ClientCapabilities",
    "ServerCapabilities",
    "Implementation",
    "ProgressNotification",
    "CancelledNotification",
}


def test_the_packaged_versions():
    assert set(schemas.VERSIONS) == set(REVISIONS)
    assert set(SUPPORTED_VERSIONS) <= set(
        schemas.VERSIONS
    )  # every revision mcp_ref speaks can be checked
    assert list(schemas.VERSIONS) == sorted(schemas.VERSIONS, reverse=True)  # newest first


@pytest.mark.parametrize("version", list(REVISIONS))
def test_each_revision_loads_with_its_types(version):
    dialect, has, lacks = REVISIONS[version]
    root = schemas.load(version)
    assert root["$schema"] == dialect == schemas.dialect(version)
    assert ("definitions" if dialect == DRAFT7 else "$defs") in root
    names = schemas.type_names(version)
    assert CORE <= names, sorted(CORE - names)
    assert has <= names, sorted(has - names)
    assert not lacks & names, sorted(lacks & names)
    assert schemas.load(version) is root  # cached


@pytest.mark.parametrize("version", list(REVISIONS))
def test_each_file_is_the_schema_of_its_revision(version):
    """The file is where the package says, parses, and names no other revision in its spec links."""
    packaged = resources.files("mcp_ref.schemas") / f"{version}.json"
    assert packaged.is_file()
    text = packaged.read_text(encoding="utf-8")
    assert json.loads(text) == schemas.load(version)
    for other in REVISIONS:
        if other != version:
            assert f"/specification/{other}/" not in text
    if version in (
        "2025-06-18",
        "2025-11-25",
    ):  # these two link their descriptions to their own pages
        assert f"/specification/{version}/" in text


@pytest.mark.parametrize("version", list(REVISIONS))
def test_validators_follow_each_files_dialect(version):
    expected = (
        jsonschema.Draft7Validator
        if REVISIONS[version][0] == DRAFT7
        else jsonschema.Draft202012Validator
    )
    check = schemas.validator(version, "Tool")
    # the dialect's validator, uniqueItems checked in one pass (schemas.local_validator)
    assert type(check).META_SCHEMA == expected.META_SCHEMA
    assert type(check).VALIDATORS.keys() == expected.VALIDATORS.keys()
    assert schemas.validator(version, "Tool") is check  # cached
    assert check.is_valid({"name": "t", "inputSchema": {"type": "object"}})
    assert not check.is_valid({"name": "t"})


@pytest.mark.parametrize(
    "example", sorted(EXAMPLES.glob("*/*.json")), ids=lambda p: f"{p.parent.name}/{p.stem}"
)
def test_the_specs_examples_are_valid_against_the_packaged_2026_07_28_schema(example):
    assert schemas.errors("2026-07-28", example.parent.name, json.loads(example.read_text())) == []


def test_errors_name_the_type_the_problem_and_where():
    assert (
        schemas.errors("2025-11-25", "Tool", {"name": "t", "inputSchema": {"type": "object"}}) == []
    )
    assert schemas.errors("2025-11-25", "Tool", {"name": "t"}) == [
        "Tool: 'inputSchema' is a required property at /"
    ]
    assert schemas.errors(
        "2025-06-18", "ListToolsResult", {"tools": [{"name": 7, "inputSchema": {"type": "object"}}]}
    ) == ["ListToolsResult: 7 is not of type 'string' at /tools/0/name"]


# -- the wire checker can fail ----------------------------------------------------------------


def feed(checker: WireChecker, version: str, tools: list) -> WireChecker:
    """Play a client's side of initialize and tools/list into ``checker``; the server answers ``tools``."""
    exchange = [
        (
            "-->",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"},
                },
            },
        ),
        (
            "<--",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "s", "version": "1"},
                },
            },
        ),
        ("-->", {"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ("-->", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        ("<--", {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}),
    ]
    for direction, message in exchange:
        checker(direction, json.dumps(message).encode())
    return checker


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_the_wire_checker_passes_a_valid_tools_list(version):
    checker = feed(WireChecker(), version, [{"name": "echo", "inputSchema": {"type": "object"}}])
    assert checker.version == version
    assert checker.errors == []
    checker.assert_valid()


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_the_wire_checker_fails_an_invalid_tools_list(version):
    checker = feed(
        WireChecker(),
        version,
        [{"name": "no-schema"}, {"name": 42, "inputSchema": {"type": "object"}}],
    )
    assert "ListToolsResult: 'inputSchema' is a required property at /tools/0" in checker.errors
    assert "ListToolsResult: 42 is not of type 'string' at /tools/1/name" in checker.errors
    with pytest.raises(AssertionError, match="not valid against the official schema"):
        checker.assert_valid()


def test_the_wire_checker_checks_messages_sent_before_the_version_was_known():
    checker = WireChecker()
    bad_initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"capabilities": {}},
    }
    checker("-->", json.dumps(bad_initialize).encode())
    assert checker.errors == []  # not yet known which revision to check it against
    feed(checker, "2025-06-18", [])
    assert any(
        e.startswith("InitializeRequest: 'protocolVersion' is a required property")
        for e in checker.errors
    ), checker.errors


def test_a_revision_without_a_schema_is_checked_as_the_one_asked_for():
    checker = WireChecker()
    checker(
        "-->",
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-03-26",
                    "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"},
                },
            }
        ).encode(),
    )
    checker(
        "<--",
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {
                    "protocolVersion": "1999-01-01",
                    "capabilities": {},
                    "serverInfo": {"name": 5, "version": "1"},
                },
            }
        ).encode(),
    )
    assert (checker.version, checker.schema_version) == ("1999-01-01", "2025-03-26")
    assert checker.errors == ["InitializeResult: 5 is not of type 'string' at /serverInfo/name"]


def test_the_wire_checker_fails_a_revision_without_a_schema():
    checker = feed(
        WireChecker(), "1999-01-01", [{"name": "echo", "inputSchema": {"type": "object"}}]
    )
    assert checker.errors == [
        "protocol version '1999-01-01' has no official schema: its messages cannot be checked"
    ]
    with pytest.raises(AssertionError):
        checker.assert_valid()


# -- nothing passes silently ------------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: schemas.load("1999-01-01"),
        lambda: schemas.type_names("latest"),
        lambda: schemas.dialect(""),
        lambda: schemas.validator("2025-13-01", "Tool"),
        lambda: schemas.errors("2099-12-31", "Tool", {}),
        lambda: schema_errors("1999-01-01", "Tool", {}),
    ],
)
def test_an_unknown_version_raises(call):
    with pytest.raises(schemas.UnknownVersion, match="no MCP schema for protocol version"):
        call()


def test_an_unknown_type_raises():
    with pytest.raises(
        schemas.UnknownType,
        match=r"'Tol' is not a type of the 2025-11-25 MCP schema \(did you mean Tool",
    ):
        schemas.validator("2025-11-25", "Tol")
    with pytest.raises(
        schemas.UnknownType, match="'InitializeRequest' is not a type of the 2026-07-28"
    ):
        schemas.errors("2026-07-28", "InitializeRequest", {})
    with pytest.raises(schemas.UnknownType):
        schema_errors("2024-11-05", "ElicitRequest", {})  # elicitation came in 2025-06-18
    with pytest.raises(schemas.UnknownType):
        schemas.validator("2025-11-25", None)
    assert issubclass(schemas.UnknownType, LookupError) and issubclass(
        schemas.UnknownVersion, LookupError
    )


def test_a_missing_file_raises(monkeypatch):
    monkeypatch.setattr(schemas, "VERSIONS", schemas.VERSIONS + ("2000-01-01",))
    with pytest.raises(schemas.SchemaFileMissing, match="2000-01-01.json is missing"):
        schemas.load("2000-01-01")
    with pytest.raises(schemas.SchemaLookupError):
        schemas.validator("2000-01-01", "Tool")


# -- packaging and import cost ----------------------------------------------------------------


def test_the_schemas_are_package_data():
    """A wheel (or any non-editable install) carries the JSON files: setup.cfg declares them."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert config.get("options.package_data", "mcp_ref.schemas").split() == ["*.json,", "NOTICE"]
    assert sorted(
        p.name for p in resources.files("mcp_ref.schemas").iterdir() if p.name.endswith(".json")
    ) == sorted(f"{v}.json" for v in schemas.VERSIONS)


def test_nothing_loads_before_it_is_used():
    script = """
import sys
import mcp_ref
assert "mcp_ref.schemas" not in sys.modules and "jsonschema" not in sys.modules
from mcp_ref import schemas
assert "jsonschema" not in sys.modules and not schemas._load.cache_info().currsize
schemas.load("2025-11-25")
assert "jsonschema" not in sys.modules
schemas.errors("2025-11-25", "Tool", {})
assert "jsonschema" in sys.modules
"""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
