"""Resources over real stdio: paginated listing, text and blob reads, templates,
not-found errors, subscriptions, list_changed, and the confined file root.

Every message is validated against the negotiated revision's official schema.
"""

from __future__ import annotations

import base64
import json
import os
import sys

import pytest
from conftest import SERVERS, client_pool
from http_fixtures import raw_session, serve  # noqa: F401 - fixtures
from servers.feature_resources import BLOB, TEXT, build  # the server's own constants

from mcp_ref import (
    SUPPORTED_VERSIONS,
    BlobResourceContents,
    McpError,
    ResourceNotFound,
    TextResourceContents,
)
from mcp_ref.feature_types import ReadResourceResult

SCRIPT = SERVERS / "feature_resources.py"

SECRET = "TOP-SECRET-42"
DATA_BIN = b"\x89binary\x00\xff\xfe" + bytes(range(256))
STATIC = ["feature://text", "feature://blob", "feature://watched/a", "feature://watched/b"]
FILES = ["a.txt", "data.bin", "sub/b.md"]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A served directory ``root`` next to an ``outside`` one it must never reveal."""
    base = tmp_path_factory.mktemp("files")
    root, outside = base / "root", base / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    (root / "a.txt").write_text("alpha\n")
    (root / "sub" / "b.md").write_text("# bee\n")
    (root / "data.bin").write_bytes(DATA_BIN)
    (root / ".hidden").write_text("hidden\n")
    (root / ".cache").mkdir()
    (root / ".cache" / "state.txt").write_text("hidden too\n")
    os.symlink(outside / "secret.txt", root / "link_out.txt")
    os.symlink(outside, root / "dir_out", target_is_directory=True)
    os.symlink(root / "a.txt", root / "link_in.txt")
    return root


# A module-scoped fixture serving ``tree``; each test's messages must be schema-valid.
pool = client_pool(lambda tree: [sys.executable, str(SCRIPT), str(tree)])


@pytest.fixture
def prefix(pool, tree):
    """The URI prefix of the file root, as the template listing announces it."""
    templates = [
        t.uri_template
        for t in pool.client().list_resource_templates()
        if t.uri_template.endswith("{+path}")
    ]
    assert templates == [tree.resolve().as_uri() + "/{+path}"]
    return templates[0][: -len("{+path}")]


def read_one(client, uri: str):
    result = client.read_resource(uri)
    assert isinstance(result, ReadResourceResult)
    assert len(result.contents) == 1
    return result.contents[0]


def not_found(client, uri: str) -> ResourceNotFound:
    with pytest.raises(ResourceNotFound) as caught:
        client.read_resource(uri)
    assert caught.value.code == -32002
    return caught.value


# -- listing ------------------------------------------------------------------------------


def test_list_resources_follows_every_page(pool, prefix):
    peer = pool.peer()
    before = len(peer.wire.sent("resources/list"))
    resources = peer.client.list_resources()
    assert [r.uri for r in resources] == STATIC + [prefix + f for f in FILES]
    assert len(peer.wire.sent("resources/list")) - before == 3  # 8 resources, pages of 3
    by_uri = {r.uri: r for r in resources}
    assert by_uri["feature://text"].mime_type == "text/plain"
    assert by_uri["feature://text"].description == "Some unicode text."
    assert by_uri["feature://blob"].size == len(BLOB)
    assert by_uri["feature://blob"].description == "Every byte value."  # from the docstring
    assert by_uri[prefix + "sub/b.md"].name == "sub/b.md"


def test_list_resources_page(pool):
    client = pool.client()
    first = client.list_resources_page()
    assert [r.uri for r in first.items] == STATIC[:3]
    assert first.next_cursor
    second = client.list_resources_page(first.next_cursor)
    assert second.items[0].uri == STATIC[3]


def test_template_listing(pool, prefix):
    templates = {t.uri_template: t for t in pool.client().list_resource_templates()}
    assert set(templates) == {
        "feature://items/{id}",
        "feature://users/{user}/posts/{post}",
        prefix + "{+path}",
    }
    item = templates["feature://items/{id}"]
    assert (item.name, item.description, item.mime_type) == ("item", "One item.", "text/plain")
    assert templates[prefix + "{+path}"].name == "project files"


# -- reading ------------------------------------------------------------------------------


def test_read_text(pool):
    contents = read_one(pool.client(), "feature://text")
    assert isinstance(contents, TextResourceContents)
    assert (contents.uri, contents.mime_type, contents.text) == (
        "feature://text",
        "text/plain",
        TEXT,
    )


@pytest.mark.slow
def test_read_blob_round_trips_every_byte(pool):
    peer = pool.peer()
    contents = read_one(peer.client, "feature://blob")
    assert isinstance(contents, BlobResourceContents)
    assert contents.mime_type == "application/octet-stream"
    assert base64.b64decode(contents.blob, validate=True) == BLOB
    assert "text" not in contents.raw


@pytest.mark.parametrize(
    "uri, text",
    [
        ("feature://items/42", "item [42]"),
        ("feature://items/a%20b", "item [a b]"),
        ("feature://items/x%2Fy%3Fz", "item [x/y?z]"),
        ("feature://items/%C3%A9t%C3%A9", "item [été]"),
        ("feature://users/ada/posts/7", "post [7] by [ada]"),
        ("feature://users/J%C3%BCrgen%20K/posts/%23hash", "post [#hash] by [Jürgen K]"),
    ],
)
def test_template_match_percent_decodes(pool, uri, text):
    contents = read_one(pool.client(), uri)
    assert (contents.uri, contents.text) == (uri, text)


@pytest.mark.parametrize(
    "uri",
    [
        "feature://nope",
        "feature://items/",  # a {var} matches a non-empty run
        "feature://items/a/b",  # ... with no "/"
        "feature://users/ada/posts",
        "feature://users/ada/posts/7/extra",
        "other://text",
        "feature://TEXT",
    ],
)
def test_unknown_uri_is_resource_not_found(pool, uri):
    error = not_found(pool.client(), uri)
    assert error.data == {"uri": uri}


# -- subscriptions and list_changed ----------------------------------------------------------


def test_updates_arrive_while_subscribed_and_stop_after_unsubscribe(pool):
    peer = pool.peer()
    client = peer.client
    a, b = "feature://watched/a", "feature://watched/b"
    client.subscribe(a)
    client.subscribe(b)
    mark = peer.updates.mark()
    client.call_tool("touch", {"uri": a})
    peer.updates.wait_until(lambda uris: uris == [a], since=mark)

    client.unsubscribe(a)
    client.call_tool("touch", {"uri": a})  # must not arrive ...
    client.call_tool("touch", {"uri": b})  # ... while this later one does
    assert peer.updates.wait_until(lambda uris: b in uris, since=mark) == [a, b]
    client.unsubscribe(b)
    updated = [m["params"] for m in peer.wire.received("notifications/resources/updated")]
    assert updated[-2:] == [{"uri": a}, {"uri": b}]


def test_subscribing_to_an_unknown_uri_is_not_found(pool):
    with pytest.raises(ResourceNotFound) as caught:
        pool.client().subscribe("feature://nope")
    assert caught.value.code == -32002


@pytest.mark.parametrize("length", [0, 8193, 3 * 1024 * 1024])
def test_subscribing_to_a_uri_longer_than_a_listen_may_name_is_invalid_params(pool, length):
    """A URI a template matches would be held for as long as the subscription lasts: bounded as
    ``subscriptions/listen`` bounds it (1 to 8,192 characters), so 1,000 subscriptions cannot make
    the server hold gigabytes; the session goes on."""
    client = pool.client()
    prefix = "feature://items/"
    uri = (prefix + "a" * (length - len(prefix))) if length else ""
    with pytest.raises(McpError) as caught:
        client.subscribe(uri)
    assert caught.value.code == -32602
    assert caught.value.message == "Invalid params: a resource URI must have 1 to 8192 characters"
    longest = prefix + "a" * (8192 - len(prefix))  # the longest allowed one is subscribed to
    client.subscribe(longest)
    client.unsubscribe(longest)
    assert read_one(client, "feature://text").text == TEXT


def test_over_stateless_http_no_subscription_is_declared_and_subscribing_is_refused(
    serve, raw_session, tree
):
    """Stateless HTTP (handshake era) serves each request on its own: no update or list change
    could ever reach the client, so none is promised and ``resources/subscribe`` is refused with
    the reason (-32600), as ``logging/setLevel`` is there.  The same server, served statefully at
    the same time, declares and keeps subscriptions as ever."""
    server = build(str(tree))
    stateless = raw_session(serve(server, stateless=True).mcp)
    stateful = raw_session(serve(server).mcp)
    declared = stateless.initialize().json()["result"]["capabilities"]
    assert declared["resources"] == {"subscribe": False, "listChanged": False}
    assert declared["tools"] == {"listChanged": False}
    assert stateful.initialize().json()["result"]["capabilities"]["resources"] == {
        "subscribe": True,
        "listChanged": True,
    }
    uri = "feature://watched/a"

    def answer(session, method: str, params: dict) -> dict:
        request_id, response = session.call(method, params)
        return session.result(response, request_id)[0]

    for method in ("resources/subscribe", "resources/unsubscribe"):
        error = answer(stateless, method, {"uri": uri})["error"]
        assert error["code"] == -32600
        assert error["message"].startswith(
            f"{method} cannot apply over stateless HTTP: each request is served on its own"
        )
    assert [c.subscriptions for c in server.connections()] == [set()]  # the stateful one's
    assert answer(stateful, "resources/subscribe", {"uri": uri})["result"] == {}
    assert [c.subscriptions for c in server.connections()] == [{uri}]
    read = answer(stateless, "resources/read", {"uri": "feature://text"})
    assert read["result"]["contents"][0]["text"] == TEXT


def test_list_changed_when_a_resource_is_added(pool):
    peer = pool.peer(label="mutating")  # its own server process: the listing changes
    client = peer.client
    assert "feature://new/one" not in [r.uri for r in client.list_resources()]
    mark = peer.changes.mark()
    client.call_tool("publish", {"uri": "feature://new/one", "text": "fresh"})
    peer.changes.wait_until(lambda kinds: kinds == ["resources"], since=mark)
    assert peer.wire.received("notifications/resources/list_changed")
    assert "feature://new/one" in [r.uri for r in client.list_resources()]
    assert read_one(client, "feature://new/one").text == "fresh"


# -- the file root ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "relative, mime_type, text",
    [
        ("a.txt", "text/plain", "alpha\n"),
        ("sub/b.md", "text/markdown", "# bee\n"),
    ],
)
def test_file_root_reads_text(pool, prefix, relative, mime_type, text):
    contents = read_one(pool.client(), prefix + relative)
    assert isinstance(contents, TextResourceContents)
    assert (contents.uri, contents.mime_type, contents.text) == (prefix + relative, mime_type, text)


@pytest.mark.slow
def test_file_root_reads_binary_as_blob(pool, prefix):
    contents = read_one(pool.client(), prefix + "data.bin")
    assert isinstance(contents, BlobResourceContents)
    assert base64.b64decode(contents.blob) == DATA_BIN


def test_file_root_listing_hides_what_it_must(pool, prefix):
    listed = [
        r.uri[len(prefix) :] for r in pool.client().list_resources() if r.uri.startswith(prefix)
    ]
    assert (
        listed == FILES
    )  # no dot files or directories, no symlink (or symlinked directory) leading outside


ESCAPES = [
    "../outside/secret.txt",
    "sub/../../outside/secret.txt",
    "./../outside/secret.txt",
    "{absolute}",  # the prefix plus "/tmp/..."
    "{absolute-encoded}",  # the same with %2F for every "/"
    "..%2Foutside%2Fsecret.txt",
    "%2E%2E/outside/secret.txt",
    "sub%2F..%2F..%2Foutside%2Fsecret.txt",
    "..%5Coutside%5Csecret.txt",  # backslashes
    "link_out.txt",  # a symlink pointing outside
    "link_in.txt",  # a symlink inside the root: a second name for a.txt, not followed (one name per file)
    "dir_out/secret.txt",  # through a symlinked directory
    "a.txt%00.md",
    "sub",  # a directory is not a file
    "missing.txt",
]


@pytest.mark.parametrize("escape", ESCAPES)
def test_file_root_refuses_every_escape_as_not_found(pool, prefix, tree, escape):
    secret = str((tree.parent / "outside" / "secret.txt").resolve())
    relative = {"{absolute}": secret, "{absolute-encoded}": secret.replace("/", "%2F")}.get(
        escape, escape
    )
    peer = pool.peer()
    mark = len(peer.wire.messages)
    not_found(peer.client, prefix + relative)
    assert SECRET not in json.dumps(peer.wire.messages[mark:])


# -- spec_notes items ------------------------------------------------------------------------------

NOTES_SERVER = [sys.executable, str(SERVERS / "notes_server.py")]


@pytest.mark.slow
@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_resource_and_template_listings_follow_the_revision(connect, wire, version):
    from servers.notes_server import ANNOTATIONS, ICONS

    client = connect(NOTES_SERVER, protocol_version=version)
    (resource,) = client.list_resources()
    (template,) = client.list_resource_templates()
    expected = {
        "name": "full",
        "description": "Every optional field.",
        "mimeType": "text/plain",
        "annotations": ANNOTATIONS,
    }  # annotations exist at every revision
    if version >= "2025-06-18":
        expected["title"] = "A full resource"
    if version >= "2025-11-25":
        expected["icons"] = ICONS
    assert resource.raw == {"uri": "notes://full", "size": 5, **expected}
    expected.update(name="full_template", description="Every optional field, as a template.")
    if "title" in expected:
        expected["title"] = "A full template"
    assert template.raw == {"uriTemplate": "notes://full/{x}", **expected}
    assert resource.icons == template.icons == expected.get("icons")
    assert client.read_resource("notes://full/y").contents[0].text == "full y"


@pytest.mark.parametrize("length", [0, 8193, 3 * 1024 * 1024])
def test_reading_a_uri_longer_than_8192_characters_is_invalid_params(pool, length):
    """``resources/read`` bounds the URI before matching it against every template, as
    ``resources/subscribe`` does (2025-11-25 server/resources §Security Considerations: "Servers
    MUST validate all resource URIs"): no caller makes the server match megabytes; the session
    goes on, and the longest allowed URI is matched (here: no template serves it)."""
    client = pool.client()
    prefix = "feature://users/"
    uri = (prefix + "/" * (length - len(prefix))) if length else ""
    with pytest.raises(McpError) as caught:
        client.read_resource(uri)
    assert caught.value.code == -32602
    assert caught.value.message == "Invalid params: a resource URI must have 1 to 8192 characters"
    longest = prefix + "a" * (8192 - len(prefix) - len("/posts/1")) + "/posts/1"
    assert read_one(client, longest).text == f"post [1] by [{'a' * 8168}]"
    assert read_one(client, "feature://text").text == TEXT
