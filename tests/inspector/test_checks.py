"""Each message checked against its revision's official schema and linked to its spec section.

The table of spec sections (mcp_ref.inspector.checks.SECTIONS) covers every method and notification
of each revision's schema, and each row's heading is on its page (as the spec's text has it:
spec_pages.json, written from the text by ``python tests/inspector/test_checks.py --write``).  Answers are checked as the
answer to their request's method, paired by id and direction.  The demo's whole walkthrough, in
both eras, is valid.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from pathlib import Path

import pytest

from mcp_ref import schemas
from mcp_ref.inspector.checks import (
    MAX_ERRORS,
    PAGES_2024,
    SECTIONS,
    MessageChecker,
    anchor,
    check_message,
    spec_section,
)
from mcp_ref.workbench.wire_check import NOTIFICATION_TYPES, REQUEST_TYPES

ROOT = Path(__file__).resolve().parents[2]
SPEC_TEXT = ROOT.parent / "shared" / "spec" / "docs"
#: The spec pages' titles, headings and methods the table relies on (see spec_pages).
SPEC_PAGES = Path(__file__).with_name("spec_pages.json")


def schema_methods(version: str) -> set[str]:
    """Every method and notification name the revision's schema defines."""
    root = schemas.load(version)
    types = root.get("$defs") or root["definitions"]
    found = {t.get("properties", {}).get("method", {}).get("const") for t in types.values()}
    return found - {None}


@pytest.mark.parametrize("version", schemas.VERSIONS)
def test_every_method_of_every_revision_has_its_spec_link(version):
    methods = schema_methods(version)
    assert methods >= {m for m in {**REQUEST_TYPES, **NOTIFICATION_TYPES} if m in methods}
    for method in methods:
        link = spec_section(method, version)
        assert link is not None, f"{method} has no spec section at {version}"
        assert link["url"].startswith(f"https://modelcontextprotocol.io/specification/{version}/")
        if version != "2024-11-05":
            path, title, heading = SECTIONS[version][method]
            assert link["url"] == (
                f"https://modelcontextprotocol.io/specification/{version}/{path}#{anchor(heading)}"
            )
            assert link["title"] == f"{title} — {heading}"
    # and nothing in the table that the revision does not have
    table = set(SECTIONS[version]) if version in SECTIONS else set(PAGES_2024)
    assert table == methods


def test_every_method_the_library_speaks_has_its_spec_link_where_it_exists():
    from mcp_ref import SUPPORTED_VERSIONS
    from mcp_ref.lifecycle import MODERN_VERSIONS
    from mcp_ref.server.connection import METHODS, MODERN_METHODS

    spoken = {version: set(METHODS) | {"ping"} for version in SUPPORTED_VERSIONS}
    spoken.update({version: set(MODERN_METHODS) for version in MODERN_VERSIONS})
    both = set(REQUEST_TYPES) | set(NOTIFICATION_TYPES)
    for version, methods in spoken.items():
        for method in (methods | both) & schema_methods(version):
            assert spec_section(method, version) is not None, (version, method)
        assert methods <= schema_methods(version), (version, methods - schema_methods(version))


def test_links_name_the_page_and_section():
    assert spec_section("tools/call", "2025-11-25") == {
        "title": "Tools — Calling Tools",
        "url": "https://modelcontextprotocol.io/specification/2025-11-25/server/tools#calling-tools",
    }
    assert spec_section("notifications/progress", "2026-07-28")["url"].endswith(
        "/2026-07-28/basic/patterns/progress#progress-flow"
    )
    assert spec_section("prompts/get", "2025-03-26")["url"].endswith("#getting-a-prompt")
    assert spec_section("tools/list", "2024-11-05") == {
        "title": "Tools",
        "url": "https://modelcontextprotocol.io/specification/2024-11-05/server/tools",
    }
    assert spec_section("ping", "2026-07-28") is None  # no ping in that revision
    assert spec_section("no/such", "2025-11-25") is None
    assert spec_section("tools/list", None) is None
    assert anchor("Completion Notifications for URL Mode Elicitation") == (
        "completion-notifications-for-url-mode-elicitation"
    )


def spec_pages(spec_text: Path) -> dict:
    """What the table needs of the spec's pages, read from its text (``spec_text``: the folder of
    the revisions' ``.mdx`` pages): for each page the table names, its title, its headings, and
    the table's methods its text names."""
    methods = {method for table in SECTIONS.values() for method in table}
    pages: dict = {}
    for version, table in sorted(SECTIONS.items()):
        for path in sorted({row[0] for row in table.values()}):
            text = (spec_text / version / f"{path}.mdx").read_text(encoding="utf-8")
            title = re.search(r'^title:\s*"?(.*?)"?\s*$', text, re.M)
            pages.setdefault(version, {})[path] = {
                "title": title.group(1) if title else None,
                "headings": re.findall(r"^#{2,4}\s+(.*?)\s*$", text, re.M),
                "methods": sorted(method for method in methods if method in text),
            }
    return pages


def test_every_heading_of_the_table_is_on_its_page_in_the_spec_text():
    """Each row's page title and heading, as the spec's text has them (SPEC_PAGES: taken from the
    text by ``python tests/inspector/test_checks.py --write`` with the spec beside the repository,
    so the suite needs nothing outside it)."""
    pages = json.loads(SPEC_PAGES.read_text(encoding="utf-8"))
    for version, table in SECTIONS.items():
        for method, (path, title, heading) in table.items():
            page = pages[version][path]
            assert page["title"] == title, (version, path)
            assert heading in page["headings"], (version, method, heading)
            # the page names the method (resources/unsubscribe, in no page's text, is linked to
            # the Subscriptions section with resources/subscribe)
            assert method in page["methods"] or method == "resources/unsubscribe", (
                version,
                method,
                path,
            )


def test_a_known_bad_message_is_invalid_with_a_useful_error():
    bad = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"arguments": {}}}
    check = check_message(bad, "2025-11-25")
    assert check.valid is False
    assert check.schema == "2025-11-25" and check.schema_type == "CallToolRequest"
    assert check.errors == ("CallToolRequest: 'name' is a required property at /params",)
    assert check.spec["title"] == "Tools — Calling Tools"


@pytest.mark.parametrize("request_id", [True, False, 1.5, 2.0, None])
def test_a_request_whose_id_is_not_a_string_or_an_integer_is_invalid(request_id):
    """2025-06-18 basic/index §Requests: "Requests MUST include a string or integer ID", and
    "Unlike base JSON-RPC, the ID MUST NOT be null": true, 1.5 and null were marked valid."""
    ping = {"jsonrpc": "2.0", "id": request_id, "method": "ping"}
    check = check_message(ping, "2025-06-18")
    assert check.valid is False
    assert check.errors[0].startswith("id: ")
    for good_id in ("a", 0, -7):
        assert check_message(ping | {"id": good_id}, "2025-06-18").valid is True


def test_an_answer_may_have_a_null_id_only_for_an_error():
    """§Responses: "the same ID as the request" (a string or an integer); a null id only for an
    error answering a request whose id could not be read (JSON-RPC 2.0 §5)."""
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    assert check_message(error, "2025-06-18").errors == ()
    result = {"jsonrpc": "2.0", "id": None, "result": {}}
    assert check_message(result, "2025-06-18", answered="ping").valid is False
    for bad_id in (True, 1.5):
        answer = check_message(result | {"id": bad_id}, "2025-06-18", answered="ping")
        assert answer.errors == ("id: not a string or an integer",)
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert check_message(notification, "2025-06-18").valid is True  # it has no id


def test_errors_are_few_and_short():
    result = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"x": "y" * 1000}] * 20}}
    check = check_message(result, "2025-06-18", answered="tools/list")
    assert check.valid is False
    assert 0 < len(check.errors) <= MAX_ERRORS
    assert all(len(error) <= 300 for error in check.errors)


def test_an_error_quoting_the_payload_shows_none_of_its_secrets():
    """A content block that fits no schema was quoted whole in the error line, a password or a
    URL's credentials with it, and the record and export showed them.  Now the error line is
    masked as free text is, also where it is cut."""
    block = {"type": "resource_link", "uri": "https://u:hunter2@h/x", "password": "pw-1"}
    long = {**block, "api_key": "k-" + "9" * 400}
    for content in ([block], [long]):
        result = {"jsonrpc": "2.0", "id": 1, "result": {"content": content}}
        check = check_message(result, "2025-11-25", answered="tools/call")
        assert check.valid is False
        text = " ".join(check.errors)
        assert "resource_link" in text
        assert "hunter2" not in text and "pw-1" not in text and "k-9" not in text


def test_no_schema_applies_to_an_unknown_method_or_revision():
    message = {"jsonrpc": "2.0", "id": 1, "method": "vendor/thing", "params": {}}
    assert check_message(message, "2025-11-25").valid is None
    assert check_message({"jsonrpc": "2.0", "id": 1, "method": "ping"}, "1999-01-01").valid is None
    assert check_message([1], "2025-11-25").valid is False


def test_an_answer_is_checked_as_its_request_s_method_each_way():
    checker = MessageChecker("2025-11-25")
    # the client's request 1 and the server's request 1 are different requests
    checker.check("-->", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    checker.check("<--", {"jsonrpc": "2.0", "id": 1, "method": "roots/list"})
    roots = checker.check("-->", {"jsonrpc": "2.0", "id": 1, "result": {"roots": []}})
    tools = checker.check("<--", {"jsonrpc": "2.0", "id": 1, "result": {"roots": []}})
    assert (roots.method, roots.valid, roots.schema_type) == ("roots/list", True, "ListRootsResult")
    assert (tools.method, tools.valid, tools.schema_type) == (
        "tools/list",
        False,
        "ListToolsResult",
    )
    assert tools.spec["title"] == "Tools — Listing Tools"
    orphan = checker.check("<--", {"jsonrpc": "2.0", "id": 9, "result": {}})
    assert (orphan.method, orphan.valid) == (None, None)  # whose answer? no type applies


def test_the_revision_is_learnt_from_each_initialize():
    checker = MessageChecker()
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    assert checker.check("-->", init).schema == "2025-06-18"  # what it asks for
    answer = {
        "jsonrpc": "2.0",
        "id": 0,
        "result": {
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "serverInfo": {"name": "s", "version": "1"},
        },
    }
    assert checker.check("<--", answer).valid is True
    assert checker.revision == "2025-03-26"
    assert (
        checker.check("-->", {"jsonrpc": "2.0", "id": 1, "method": "ping"}).schema == "2025-03-26"
    )
    # a new handshake (the inspector reconnects in the other era) checks at its own revision
    told = MessageChecker("2026-07-28")
    assert told.check("-->", init).valid is True
    assert told.check("<--", answer).valid is True
    assert told.revision == "2025-03-26"
    told.set_revision("2025-06-18")
    assert told.check("-->", {"jsonrpc": "2.0", "id": 1, "method": "ping"}).schema == "2025-06-18"


def test_a_modern_request_and_its_answer_are_checked_at_the_revision_they_name():
    checker = MessageChecker()
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    assert checker.check("-->", request).schema == "2026-07-28"
    answer = checker.check("<--", {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}})
    assert answer.schema == "2026-07-28" and answer.method == "tools/list"
    note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert checker.check("<--", note).schema == "2026-07-28"


@pytest.mark.slow
@pytest.mark.parametrize("era", ["modern", "handshake"])
def test_the_demo_walkthrough_is_valid_throughout(era):
    from mcp_ref.inspector.conversation import Conversation
    from mcp_ref.workbench import walkthrough

    conv = Conversation()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        # its own checks of timing may fail under load; what it sent and received is checked here
        walkthrough.run(trace=conv.trace, era=era, timeout=30)
    messages = [r for r in conv.records(limit=10_000) if r["kind"] == "message"]
    assert len(messages) > 300
    assert [r for r in messages if r["valid"] is False] == []
    checked = [r for r in messages if r["valid"]]
    # only the tasks extension's messages (SEP-2663, no official schema) go unchecked
    assert {r["method"] for r in messages if r["valid"] is None} <= {
        "tools/call",
        "tasks/get",
        "tasks/cancel",
        "tasks/update",
    }
    assert len(checked) >= len(messages) - 10
    assert all(r["spec"] is not None for r in checked)


if (
    __name__ == "__main__"
):  # python tests/inspector/test_checks.py --write: SPEC_PAGES from the text
    if sys.argv[1:] != ["--write"] or not SPEC_TEXT.is_dir():
        sys.exit(f"usage: python {sys.argv[0]} --write (with the spec's text at {SPEC_TEXT})")
    SPEC_PAGES.write_text(json.dumps(spec_pages(SPEC_TEXT), indent=1, sort_keys=True) + "\n")
    print(f"wrote {SPEC_PAGES}")
