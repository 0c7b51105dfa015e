import base64
import re
import sys
from types import SimpleNamespace

import pytest
from conftest import SERVERS

from mcp_ref import McpError
from mcp_ref.pagination import InvalidCursor, Paginator


def collect(p: Paginator, items, kind="tools"):
    pages, cursor = [], None
    while True:
        page, cursor = p.page(items, cursor, kind=kind)
        pages.append(page)
        if cursor is None:
            return pages


def test_pages_cover_everything_in_order():
    items = list(range(25))
    pages = collect(Paginator(page_size=10), items)
    assert pages == [list(range(10)), list(range(10, 20)), list(range(20, 25))]


def test_exact_multiple_has_no_empty_trailing_page():
    pages = collect(Paginator(page_size=5), list(range(10)))
    assert pages == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]


def test_single_page_and_empty_list():
    p = Paginator()
    assert p.page(["a", "b"], None, kind="tools") == (["a", "b"], None)
    assert p.page([], None, kind="tools") == ([], None)


def test_page_returns_list_for_tuple_input():
    page, cursor = Paginator(page_size=2).page(("a", "b", "c"), None, kind="k")
    assert page == ["a", "b"] and isinstance(page, list) and cursor is not None


def test_cursor_is_base64url_without_padding():
    _, cursor = Paginator(page_size=1).page([1, 2], None, kind="tools")
    assert re.fullmatch(r"[A-Za-z0-9_-]+", cursor)


def test_cursor_refused_by_other_kind():
    p = Paginator(page_size=1)
    _, cursor = p.page([1, 2, 3], None, kind="tools")
    assert p.page([1, 2, 3], cursor, kind="tools") == ([2], p.make_cursor(2, kind="tools"))
    with pytest.raises(InvalidCursor, match="another list"):
        p.page([1, 2, 3], cursor, kind="prompts")


def test_cursor_refused_by_other_secret():
    _, cursor = Paginator(page_size=1, secret=b"one").page([1, 2], None, kind="tools")
    with pytest.raises(InvalidCursor):
        Paginator(page_size=1, secret=b"two").page([1, 2], cursor, kind="tools")
    # the same secret accepts it
    assert Paginator(page_size=1, secret=b"one").page([1, 2], cursor, kind="tools") == ([2], None)


def test_random_secret_per_instance():
    _, cursor = Paginator(page_size=1).page([1, 2], None, kind="tools")
    with pytest.raises(InvalidCursor):
        Paginator(page_size=1).page([1, 2], cursor, kind="tools")


def test_tampered_cursor_rejected():
    p = Paginator(page_size=1, secret=b"k")
    cursor = p.make_cursor(1, kind="tools")
    raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    assert raw.startswith(b"1:tools")
    raw[0:1] = b"2"  # change the offset but keep the old tag
    forged = base64.urlsafe_b64encode(bytes(raw)).rstrip(b"=").decode()
    with pytest.raises(InvalidCursor, match="signature"):
        p.page([1, 2, 3], forged, kind="tools")


@pytest.mark.parametrize("bad", ["", "!!!!", "abc", "a", "AAAA", "====", "x" * 200])
def test_garbage_cursors_rejected(bad):
    with pytest.raises(InvalidCursor):
        Paginator().page([1, 2, 3], bad, kind="tools")


def test_non_string_cursor_rejected():
    with pytest.raises(InvalidCursor):
        Paginator().page([1], 5, kind="tools")  # type: ignore[arg-type]


def test_cursor_beyond_end_rejected():
    p = Paginator(page_size=2)
    _, cursor = p.page(list(range(10)), None, kind="tools")
    with pytest.raises(InvalidCursor, match="beyond"):
        p.page([1], cursor, kind="tools")
    # a list that shrank to exactly the offset gives an empty last page
    assert p.page([1, 2], cursor, kind="tools") == ([], None)


def test_invalid_cursor_is_value_error():
    assert issubclass(InvalidCursor, ValueError)


def test_make_and_read_cursor_roundtrip():
    p = Paginator(secret=b"s")
    for offset in (0, 1, 99, 10**12):
        for kind in ("tools", "resources/templates", "a:b", "ünï"):
            assert p.read_cursor(p.make_cursor(offset, kind=kind), kind=kind) == offset


@pytest.mark.parametrize(
    "size, exc", [(0, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError)]
)
def test_page_size_validation(size, exc):
    with pytest.raises(exc):
        Paginator(page_size=size)


def test_empty_secret_rejected():
    with pytest.raises(ValueError):
        Paginator(secret=b"")


# -- the client following pages, over real stdio ---------------------------------------------------
UNTESTED_TEMPLATES = [sys.executable, str(SERVERS / "untested_server.py"), "templates"]
REPEAT_CURSOR = [sys.executable, str(SERVERS / "untested_raw_server.py"), "repeat-cursor"]
EMPTY_CURSOR = [sys.executable, str(SERVERS / "untested_raw_server.py"), "empty-cursor"]


def test_client_refuses_a_repeated_cursor_instead_of_looping(connect, wire):
    from mcp_ref import McpError

    client = connect(REPEAT_CURSOR, era="handshake")  # it answers no server/discover probe
    with pytest.raises(McpError, match="repeated a pagination cursor"):
        client.list_tools()
    assert [m.get("params") for m in wire.sent("tools/list")] == [None, {"cursor": "same-cursor"}]
    client.ping()  # the connection is fine


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_client_follows_an_empty_cursor(connect, wire, era):
    # 2026-07-28 server/utilities/pagination: "an empty string is a valid cursor and thus MUST NOT
    # be treated as the end of results"; earlier revisions end the results at a missing nextCursor.
    client = connect(EMPTY_CURSOR, era=era)
    assert client.connection.modern == (era == "modern")
    assert [tool.name for tool in client.list_tools()] == ["first", "second"]
    cursors = [(m.get("params") or {}).get("cursor", None) for m in wire.sent("tools/list")]
    assert cursors == [None, ""]
    page = client.list_tools_page()
    assert page.next_cursor == ""
    assert [tool.name for tool in client.list_tools_page(page.next_cursor).items] == ["second"]


def test_client_refuses_an_empty_cursor_given_for_ever(connect, wire):
    client = connect([*EMPTY_CURSOR, "forever"], era="handshake")
    with pytest.raises(McpError, match="repeated a pagination cursor"):
        client.list_tools()
    assert [m.get("params") for m in wire.sent("tools/list")] == [None, {"cursor": ""}]
    client.ping()  # the connection is fine


def test_tool_relisting_after_a_header_mismatch_follows_an_empty_cursor():
    # The -32020 retry lists the tools again (mcp_ref.client.tool_headers) through the same pages.
    from mcp_ref.client.tool_headers import KnownTools

    regional = {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
    }
    pages = {
        None: {"tools": [{"name": "first", "inputSchema": {"type": "object"}}], "nextCursor": ""},
        "": {"tools": [{"name": "regional", "inputSchema": regional}]},
    }
    sent = []

    class Connection:
        protocol_version = "2026-07-28"
        client = SimpleNamespace(max_pages=10)
        cache = SimpleNamespace(invalidate=lambda notification: None)  # nothing cached here

        def request(self, method, params=None):
            sent.append((method, params))
            return pages[(params or {}).get("cursor")]

        def usable_tools(self, tools):
            return known.usable(tools)

    known = KnownTools(Connection())
    assert known.learn("tools/call", {"name": "regional"})
    assert sent == [("tools/list", None), ("tools/list", {"cursor": ""})]


@pytest.mark.slow
def test_resource_templates_over_several_pages(connect, wire):
    client = connect(UNTESTED_TEMPLATES)
    templates = client.list_resource_templates()
    assert [(t.name, t.uri_template) for t in templates] == [
        (f"t{i}", f"untested://t{i}/{{x}}") for i in range(1, 6)
    ]
    assert len(wire.sent("resources/templates/list")) == 3  # pages of 2, 2 and 1
    first = client.list_resource_templates_page()
    assert [t.name for t in first.items] == ["t1", "t2"] and first.next_cursor
    second = client.list_resource_templates_page(first.next_cursor)
    assert [t.name for t in second.items] == ["t3", "t4"] and second.next_cursor
    last = client.list_resource_templates_page(second.next_cursor)
    assert [t.name for t in last.items] == ["t5"] and last.next_cursor is None
    assert client.read_resource("untested://t4/abc").contents[0].text == "template 4: abc"
