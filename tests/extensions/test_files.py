import os
import time
from pathlib import Path

import pytest

from mcp_ref import ResourceNotFound
from mcp_ref.extensions.files import FileRoot, PathOutsideRoot, is_text


def _symlink(target, link, *, is_dir=False):
    try:
        os.symlink(target, link, target_is_directory=is_dir)
    except (OSError, NotImplementedError, AttributeError) as exc:
        pytest.skip(f"symlinks unavailable: {exc}")


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    (root / "docs" / "deep").mkdir(parents=True)
    (root / ".hidden").mkdir()
    (root / "readme.md").write_text("# Hi\n", encoding="utf-8")
    (root / "docs" / "a.txt").write_text("alpha", encoding="utf-8")
    (root / "docs" / "deep" / "b.json").write_text('{"b": 1}', encoding="utf-8")
    (root / "docs" / "image.bin").write_bytes(b"\x00\x01\x02")
    (root / ".secret").write_text("no", encoding="utf-8")
    (root / ".hidden" / "c.txt").write_text("no", encoding="utf-8")
    (tmp_path / "outside.txt").write_text("outside", encoding="utf-8")
    return root


def test_root_is_resolved(tree):
    fr = FileRoot(str(tree / "docs" / ".."))
    assert fr.root == tree.resolve()
    assert fr.root.is_absolute()


def test_root_must_be_existing_directory(tmp_path):
    with pytest.raises(ValueError):
        FileRoot(tmp_path / "missing")
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError):
        FileRoot(tmp_path / "f")


def test_read_and_mime(tree):
    fr = FileRoot(tree)
    assert fr.read("readme.md") == (b"# Hi\n", "text/markdown")
    assert fr.read("docs/a.txt") == (b"alpha", "text/plain")
    assert fr.read("docs/deep/b.json") == (b'{"b": 1}', "application/json")
    assert fr.read("docs/image.bin") == (b"\x00\x01\x02", "application/octet-stream")
    for other_spelling in (
        "./docs//a.txt",
        "./docs/a.txt",
        "docs//a.txt",
        "docs/./a.txt",
        "docs/a.txt/",
    ):
        with pytest.raises(
            PathOutsideRoot
        ):  # one spelling per file (issue 20): never read as docs/a.txt
            fr.read(other_spelling)


@pytest.mark.parametrize(
    "name, mime", [("x.py", "text/x-python"), ("x.csv", "text/csv"), ("x.html", "text/html")]
)
def test_text_mime_types(tmp_path, name, mime):
    (tmp_path / name).write_text("data")
    assert FileRoot(tmp_path).read(name)[1] == mime


def test_resolve_returns_real_path(tree):
    fr = FileRoot(tree)
    assert fr.resolve("docs/a.txt") == (tree / "docs" / "a.txt").resolve()


@pytest.mark.parametrize(
    "bad",
    [
        "/etc/passwd",
        "../outside.txt",
        "docs/../../outside.txt",
        "docs/../readme.md",  # '..' is refused even when it stays inside
        "..",
        "docs\\a.txt",
        "..\\outside.txt",
        "C:/Windows/win.ini",
        "c:foo",
        "docs/a.txt\x00.png",
    ],
)
def test_unsafe_paths_rejected(tree, bad):
    with pytest.raises(PathOutsideRoot):
        FileRoot(tree).resolve(bad)
    with pytest.raises(PathOutsideRoot):
        FileRoot(tree).read(bad)


def test_path_outside_root_is_permission_error():
    assert issubclass(PathOutsideRoot, PermissionError)


def test_missing_and_directory(tree):
    fr = FileRoot(tree)
    with pytest.raises(FileNotFoundError):
        fr.resolve("docs/nope.txt")
    with pytest.raises(FileNotFoundError):
        fr.read("nope/nope.txt")
    with pytest.raises(IsADirectoryError):
        fr.resolve("docs")
    with pytest.raises(IsADirectoryError):
        fr.read("docs/deep")
    with pytest.raises(
        PathOutsideRoot
    ):  # a trailing slash or an empty path is no file's spelling (issue 20)
        fr.read("docs/deep/")
    with pytest.raises(PathOutsideRoot):
        fr.resolve("")


def test_non_str_path_rejected(tree):
    with pytest.raises(TypeError):
        FileRoot(tree).resolve(Path("readme.md"))  # type: ignore[arg-type]


def test_list(tree):
    assert FileRoot(tree).list() == [
        "docs/a.txt",
        "docs/deep/b.json",
        "docs/image.bin",
        "readme.md",
    ]


def test_list_empty(tmp_path):
    assert FileRoot(tmp_path).list() == []


def test_symlink_file_escape(tree, tmp_path):
    _symlink(tmp_path / "outside.txt", tree / "leak.txt")
    fr = FileRoot(tree)
    with pytest.raises(PathOutsideRoot):
        fr.resolve("leak.txt")
    with pytest.raises(PathOutsideRoot):
        fr.read("leak.txt")
    assert "leak.txt" not in fr.list()


def test_symlink_dir_escape(tree, tmp_path):
    _symlink(tmp_path, tree / "up", is_dir=True)
    fr = FileRoot(tree)
    with pytest.raises(PathOutsideRoot):
        fr.read("up/outside.txt")
    assert not any(p.startswith("up/") for p in fr.list())


def test_dangling_symlink_outside_reports_outside(tree, tmp_path):
    _symlink(tmp_path / "does-not-exist", tree / "dangling")
    with pytest.raises(PathOutsideRoot):
        FileRoot(tree).resolve("dangling")
    assert "dangling" not in FileRoot(tree).list()


def test_symlink_inside_root_is_a_second_name_not_followed_by_default(tree):
    # One name per file (issue 20): a link inside the root would let "alias.txt" (or "pub/x" through
    # "pub -> docs") read a file that a policy judging names hides under its real name.
    _symlink(tree / "docs" / "a.txt", tree / "alias.txt")
    _symlink(tree / "docs", tree / "pub", is_dir=True)
    fr = FileRoot(tree)
    for path in ("alias.txt", "pub/a.txt"):
        with pytest.raises(PathOutsideRoot, match="symbolic link"):
            fr.read(path)
        assert path not in fr.list()
    assert fr.read("docs/a.txt") == (b"alpha", "text/plain")


def test_symlink_inside_root_followed_when_asked(tree):
    _symlink(tree / "docs" / "a.txt", tree / "alias.txt")
    fr = FileRoot(tree, follow_links=True)
    assert fr.read("alias.txt") == (b"alpha", "text/plain")
    assert fr.resolve("alias.txt") == (tree / "docs" / "a.txt").resolve()
    assert "alias.txt" in fr.list()


def test_a_link_to_a_hidden_path_is_hidden_even_with_follow_links(tree):
    """A plain name linking to a hidden file (``notes.txt -> .secret``) or into a hidden directory
    (``repo -> .hidden``) is judged by where it leads: hidden, so refused and never listed unless
    ``allow_hidden``, as ``.secret`` and ``.hidden/c.txt`` themselves are."""
    _symlink(tree / ".secret", tree / "notes.txt")
    _symlink(tree / ".hidden", tree / "repo", is_dir=True)
    fr = FileRoot(tree, follow_links=True)
    for path in (".secret", ".hidden/c.txt", "notes.txt", "repo/c.txt"):
        with pytest.raises(PathOutsideRoot, match="hidden"):
            fr.read(path)
        with pytest.raises(PathOutsideRoot, match="hidden"):
            fr.resolve(path)
    assert "notes.txt" not in fr.list()
    assert fr.read("docs/a.txt") == (b"alpha", "text/plain")  # a link to a plain path still serves
    open_to_all = FileRoot(tree, follow_links=True, allow_hidden=True)
    assert open_to_all.read("notes.txt") == (b"no", "text/plain")
    assert open_to_all.read("repo/c.txt") == (b"no", "text/plain")
    assert "notes.txt" in open_to_all.list()


def test_a_file_root_server_answers_not_found_for_a_link_to_a_hidden_path(tree):
    """The same through resources/read and resources/list of a server that follows links."""
    from conftest import WAIT

    from mcp_ref import Client, Server

    _symlink(tree / ".secret", tree / "notes.txt")
    _symlink(tree / ".hidden", tree / "repo", is_dir=True)
    _symlink(tree / "docs" / "a.txt", tree / "alias.txt")
    server = Server("files")
    server.add_file_root(str(tree), uri_prefix="files://", follow_links=True)
    with Client.in_memory(server, timeout=WAIT) as client:
        for path in ("notes.txt", "repo/c.txt"):
            with pytest.raises(ResourceNotFound) as refused:
                client.read_resource("files://" + path)
            assert refused.value.message == f"Resource not found: files://{path}"
        listed = [resource.uri for resource in client.list_resources()]
        assert client.read_resource("files://alias.txt").contents[0].text == "alpha"
    assert listed == [
        "files://alias.txt",
        "files://docs/a.txt",
        "files://docs/deep/b.json",
        "files://docs/image.bin",
        "files://readme.md",
    ]


def _not_utf8_name(directory: Path) -> None:
    """Write ``bad\\xff.txt`` (a name that is not UTF-8) in ``directory``, or skip where the file
    system refuses such a name (macOS, Windows)."""
    try:
        with open(os.path.join(os.fsencode(directory), b"bad\xff.txt"), "wb") as out:
            out.write(b"not utf-8")
    except (OSError, UnicodeError) as exc:
        pytest.skip(f"this file system refuses a name that is not UTF-8: {exc}")


@pytest.mark.parametrize("era", ["handshake", "modern"])
def test_a_name_that_is_not_utf8_is_left_out_and_the_rest_is_listed(tree, era):
    """One file named ``bad\\xff.txt`` under a file root has no URI (RFC 3986 §2.5: characters are
    written as their UTF-8 octets): a real stdio server leaves it out of resources/list and lists
    everything else, its static resources included, and no URI reads it."""
    import sys

    from conftest import SERVERS, WAIT

    from mcp_ref import Client

    _not_utf8_name(tree / "docs")
    assert "docs/bad\udcff.txt" in FileRoot(tree).list()  # the Python API still lists it
    server = [sys.executable, str(SERVERS / "feature_resources.py"), str(tree)]
    with Client.stdio(server, era=era, timeout=WAIT, stderr="discard") as client:
        prefix = tree.resolve().as_uri() + "/"
        listed = [resource.uri for resource in client.list_resources()]
        files = [uri[len(prefix) :] for uri in listed if uri.startswith(prefix)]
        assert files == ["docs/a.txt", "docs/deep/b.json", "docs/image.bin", "readme.md"]
        assert "feature://text" in listed
        for uri in (prefix + "docs/bad%FF.txt", prefix + "docs/bad\udcff.txt"):
            with pytest.raises(ResourceNotFound):
                client.read_resource(uri)
        assert client.read_resource(prefix + "docs/a.txt").contents[0].text == "alpha"


@pytest.fixture
def swapped_after_the_check(tmp_path, monkeypatch):
    """A root with ``sub/deep/b.txt`` and, outside it, ``outside/deep/b.txt`` ("OUTSIDE"); every
    FileRoot.resolve that passes then swaps ``sub`` for a link to ``outside``: the race of a writer
    inside the root, at the exact point between the check and the open (no timing)."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "sub" / "deep").mkdir(parents=True)
    (root / "sub" / "deep" / "b.txt").write_text("inside", encoding="utf-8")
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "b.txt").write_text("OUTSIDE", encoding="utf-8")
    checked = FileRoot.resolve

    def resolve_then_swap(self, relative):
        real = checked(self, relative)
        (root / "sub").rename(root / "sub.real")
        _symlink(outside, root / "sub", is_dir=True)
        return real

    monkeypatch.setattr(FileRoot, "resolve", resolve_then_swap)
    return root


@pytest.mark.parametrize("path", ["sub/deep/b.txt", "alias/b.txt"])
@pytest.mark.parametrize("follow_links", [False, True])
def test_a_directory_swapped_for_a_link_after_the_check_is_never_followed(
    swapped_after_the_check, follow_links, path
):
    """read() opens the checked path from the root's directory one component at a time, none
    followed if it is a link (dir_fd + O_NOFOLLOW): a parent directory replaced by a link to
    outside the root between resolve() and the open is refused, with or without follow_links (a
    link the root allows, ``alias -> sub/deep``, is read through its real path, checked the same)."""
    root = swapped_after_the_check
    _symlink(root / "sub" / "deep", root / "alias", is_dir=True)
    fr = FileRoot(root, follow_links=follow_links)
    if path == "alias/b.txt" and not follow_links:
        with pytest.raises(PathOutsideRoot, match="symbolic link"):
            fr.read(path)  # refused by the check itself: nothing swapped
        return
    with pytest.raises(PathOutsideRoot, match="changed as it was opened"):
        fr.read(path)


def test_a_file_root_server_answers_not_found_for_a_directory_swapped_after_the_check(
    swapped_after_the_check,
):
    """The same race through resources/read: Resource not found, never the outside file."""
    from conftest import WAIT

    from mcp_ref import Client, McpError, Server

    server = Server("files")
    server.add_file_root(str(swapped_after_the_check), uri_prefix="files://")
    with Client.in_memory(server, timeout=WAIT) as client:
        with pytest.raises(McpError) as refused:
            client.read_resource("files://sub/deep/b.txt")
    assert refused.value.message == "Resource not found: files://sub/deep/b.txt"


def test_root_given_through_symlink(tree, tmp_path):
    _symlink(tree, tmp_path / "link-to-root", is_dir=True)
    fr = FileRoot(tmp_path / "link-to-root")
    assert fr.root == tree.resolve()
    assert fr.read("docs/a.txt")[0] == b"alpha"
    with pytest.raises(PathOutsideRoot):
        fr.resolve("../outside.txt")


def test_prefix_sibling_is_outside(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "root2").mkdir()
    (tmp_path / "root2" / "x.txt").write_text("x")
    _symlink(tmp_path / "root2" / "x.txt", tmp_path / "root" / "x.txt")
    with pytest.raises(PathOutsideRoot):
        FileRoot(tmp_path / "root").resolve("x.txt")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo")
def test_fifo_not_read(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    fr = FileRoot(tmp_path)
    with pytest.raises(PermissionError):
        fr.read("pipe")
    assert fr.list() == []


@pytest.mark.parametrize(
    "data, mime, expected",
    [
        (b"hello", "text/plain", True),
        (b"\x00\x01", "text/plain", True),
        (b"{}", "application/json", True),
        (b"<a/>", "application/xml", True),
        (b"{}", "application/ld+json", True),
        (b"<svg/>", "image/svg+xml", True),
        (b"{}", "Application/JSON; charset=utf-8", True),
        (b"plain utf-8 \xc3\xa9", "application/octet-stream", True),
        (b"nul\x00inside", "application/octet-stream", False),
        (b"\xff\xfe\xfd", "application/octet-stream", False),
        (b"\x89PNG\r\n\x1a\n", "image/png", False),
        (b"caf\xe9", "text/plain", False),  # Latin-1: a blob, never text with U+FFFD
        (b"\xff\xfea\x00,\x00", "text/csv", False),  # UTF-16
        (b'{"a": "\xe9"}', "application/json", False),
    ],
)
def test_is_text(data, mime, expected):
    assert is_text(data, mime) is expected


def test_a_text_file_that_is_not_utf8_is_read_as_a_blob_of_its_exact_bytes(tmp_path):
    """A ``.txt`` in Latin-1 or a ``.csv`` in UTF-16 reaches the client byte for byte: a base64
    blob with the file's text MIME type, not text with U+FFFD in place of its bytes."""
    import base64
    import sys

    from conftest import SERVERS, WAIT

    from mcp_ref import Client
    from mcp_ref.types import BlobResourceContents, TextResourceContents

    written = {
        "latin1.txt": ("caf\u00e9 na\u00efve".encode("latin-1"), "text/plain"),
        "utf16.csv": ("a,b\n1,2\n".encode("utf-16"), "text/csv"),
        "utf8.txt": ("caf\u00e9".encode(), "text/plain"),
    }
    for name, (data, _mime) in written.items():
        (tmp_path / name).write_bytes(data)
    server = [sys.executable, str(SERVERS / "feature_resources.py"), str(tmp_path)]
    with Client.stdio(server, timeout=WAIT, stderr="discard") as client:
        prefix = tmp_path.resolve().as_uri() + "/"
        read = {name: client.read_resource(prefix + name).contents[0] for name in written}
    for name in ("latin1.txt", "utf16.csv"):
        assert isinstance(read[name], BlobResourceContents)
        assert base64.b64decode(read[name].blob) == written[name][0]
        assert read[name].mime_type == written[name][1]
    assert isinstance(read["utf8.txt"], TextResourceContents)
    assert (read["utf8.txt"].text, read["utf8.txt"].mime_type) == ("caf\u00e9", "text/plain")


def test_a_file_of_the_default_limit_fits_the_default_message_limit_and_one_byte_more_is_refused(
    tmp_path,
):
    """The default ``max_file_size`` fits an mcp_ref client's default message limit (4 MiB) with its
    encoding: a binary file of exactly that size (base64: 4/3) and a ``.txt`` of control
    characters (each 6 characters as JSON text: sent as a blob instead) are read whole over real
    stdio; one byte more is -32602 "Resource too large", and the connection goes on."""
    import base64
    import sys

    from conftest import SERVERS, WAIT

    from mcp_ref import Client, McpError
    from mcp_ref.extensions.files import DEFAULT_MAX_FILE_SIZE
    from mcp_ref.stdio import DEFAULT_MAX_MESSAGE_SIZE

    assert DEFAULT_MAX_FILE_SIZE < DEFAULT_MAX_MESSAGE_SIZE
    written = {
        "full.bin": bytes(range(256)) * (DEFAULT_MAX_FILE_SIZE // 256),
        "controls.txt": b"\x01" * DEFAULT_MAX_FILE_SIZE,
        "over.bin": b"\x00" * (DEFAULT_MAX_FILE_SIZE + 1),
    }
    assert len(written["full.bin"]) == DEFAULT_MAX_FILE_SIZE
    for name, data in written.items():
        (tmp_path / name).write_bytes(data)
    server = [sys.executable, str(SERVERS / "feature_resources.py"), str(tmp_path)]
    with Client.stdio(server, timeout=WAIT, stderr="discard") as client:
        prefix = tmp_path.resolve().as_uri() + "/"
        for name in ("full.bin", "controls.txt"):
            (content,) = client.read_resource(prefix + name).contents
            assert base64.b64decode(content.blob) == written[name]
        with pytest.raises(McpError) as refused:
            client.read_resource(prefix + "over.bin")
        assert refused.value.code == -32602 and refused.value.message == (
            f"Resource too large: {prefix}over.bin is over this server's limit of "
            f"{DEFAULT_MAX_FILE_SIZE} bytes"
        )
        assert client.read_resource(prefix + "full.bin").contents[0].mime_type == (
            "application/octet-stream"
        )


def test_text_stays_text_unless_its_escaped_form_would_outgrow_base64_of_the_limit():
    from mcp_ref.extensions.files import _content_of
    from mcp_ref.types import BlobResourceContents, TextResourceContents

    chinese = "\u4e2d\u6587".encode() * 100  # 600 bytes; 1,202 characters as JSON text
    assert isinstance(_content_of("f://a", chinese, "text/plain", 1_000), TextResourceContents)
    # over base64 of a 600-byte limit (800 characters): the same bytes as a blob of that size
    as_blob = _content_of("f://a", chinese, "text/plain", 600)
    assert isinstance(as_blob, BlobResourceContents) and as_blob.mime_type == "text/plain"
    assert isinstance(_content_of("f://a", b"plain", "text/plain", 5), TextResourceContents)


def test_each_name_in_a_file_uri_is_percent_encoded_and_the_raw_spelling_is_not_found(tmp_path):
    """RFC 3986 §3.3-3.5: a raw ``#`` or ``?`` ends a URI's path (and ``[ ]`` are not pchars), so a
    file root writes each name's characters but pchars (unreserved ones, sub-delims, ``:`` and
    ``@``) percent-encoded, the ``/`` between names kept: the listed URI's path is the whole file
    path, each listed URI reads its file, and the raw spelling (``a#b.txt``: the file ``a`` with a
    fragment) is not found, nor is a percent-encoded pchar (``%40`` for ``@``: one spelling).
    """
    from urllib.parse import unquote, urlsplit

    from conftest import WAIT

    from mcp_ref import Client, McpError, Server

    names = ["a", "a#b.txt", "q?x.txt", "[x].txt", "pct%41.txt", "semi;x=1", "at@b:c.txt"]
    (tmp_path / "sub#dir").mkdir()
    for name in [*names, "sub#dir/c d.txt"]:
        (tmp_path / name).write_text(f"content of {name}", encoding="utf-8")
    server = Server("files")
    server.add_file_root(str(tmp_path), uri_prefix="files:///r/")
    with Client.in_memory(server, timeout=WAIT) as client:
        listed = {resource.name: resource.uri for resource in client.list_resources()}
        assert listed == {
            "[x].txt": "files:///r/%5Bx%5D.txt",
            "a": "files:///r/a",
            "a#b.txt": "files:///r/a%23b.txt",
            "at@b:c.txt": "files:///r/at@b:c.txt",
            "pct%41.txt": "files:///r/pct%2541.txt",
            "q?x.txt": "files:///r/q%3Fx.txt",
            "semi;x=1": "files:///r/semi;x=1",
            "sub#dir/c d.txt": "files:///r/sub%23dir/c%20d.txt",
        }
        for name, uri in listed.items():
            parts = urlsplit(uri)
            assert (unquote(parts.path), parts.query, parts.fragment) == ("/r/" + name, "", "")
            assert client.read_resource(uri).contents[0].text == f"content of {name}"
        for raw in ("a#b.txt", "q?x.txt", "[x].txt", "sub#dir/c%20d.txt", "at%40b%3Ac.txt"):
            with pytest.raises(McpError) as refused:
                client.read_resource("files:///r/" + raw)
            assert refused.value.message == f"Resource not found: files:///r/{raw}"


def test_a_uri_expanded_from_the_advertised_template_reads_a_name_with_a_colon_or_an_at_sign(
    tmp_path,
):
    """RFC 3986 §3.3: ``pchar = unreserved / pct-encoded / sub-delims / ":" / "@"``, so the RFC 6570
    ``{+path}`` expansion of the template a file root advertises keeps ``:`` and ``@`` as they are:
    the file root lists such a name under that same URI, and a read of it finds the file (both
    were percent-encoded, so the advertised template's URI read nothing)."""
    from conftest import WAIT

    from mcp_ref import Client, Server
    from mcp_ref.uri_template import UriTemplate

    names = ["1:2.txt", "me@host", "at@c:d/d@e:f.txt", "plain.txt", "a b.txt", "e=q~t"]
    (tmp_path / "at@c:d").mkdir()
    for name in names:
        (tmp_path / name).write_text(f"content of {name}", encoding="utf-8")
    server = Server("files")
    server.add_file_root(str(tmp_path), uri_prefix="files:///r/")
    with Client.in_memory(server, timeout=WAIT) as client:
        [advertised] = client.list_resource_templates()
        template = UriTemplate(advertised.uri_template)
        listed = {resource.name: resource.uri for resource in client.list_resources()}
        assert listed == {name: template.expand(path=name) for name in names}
        assert listed["at@c:d/d@e:f.txt"] == "files:///r/at@c:d/d@e:f.txt"
        for name in names:
            read = client.read_resource(template.expand(path=name))
            assert read.contents[0].text == f"content of {name}"


def test_a_file_whose_uri_is_over_the_uri_limit_is_not_listed(tmp_path):
    """A read takes a URI of at most ``MAX_URI_LENGTH`` characters, so a file whose URI is longer
    (here 15 directories of 200 ``#``, each ``%23`` in the URI) is left out of ``resources/list``,
    as any file no URI reads is, and every listed URI reads its file."""
    from conftest import WAIT

    from mcp_ref import Client, Server
    from mcp_ref.extensions.files import _FileUriTemplate
    from mcp_ref.uri_template import MAX_URI_LENGTH

    far = "/".join(["#" * 200] * 15) + "/far.txt"
    near = "#" * 200 + "/near.txt"
    assert len(_FileUriTemplate("files:///r/{+path}").expand(path=far)) > MAX_URI_LENGTH
    for name in (far, near, "top.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    server = Server("files")
    server.add_file_root(str(tmp_path), uri_prefix="files:///r/")
    with Client.in_memory(server, timeout=WAIT) as client:
        listed = {resource.name: resource.uri for resource in client.list_resources()}
        assert sorted(listed) == [near, "top.txt"]
        for name, uri in listed.items():
            assert client.read_resource(uri).contents[0].text == name


def test_a_removed_file_root_lists_none_of_its_files_and_one_added_again_lists_them_once(tree):
    """``remove_resource(template)`` forgets the files the template served, not only the template;
    the same root registered twice is listed once."""
    from conftest import WAIT

    from mcp_ref import Client, Server

    server = Server("files")
    server.add_resource(lambda: "todo", "notes://todo", name="todo")
    template = server.add_file_root(str(tree), uri_prefix="files://")
    with Client.in_memory(server, timeout=WAIT) as client:
        files = [
            resource.uri for resource in client.list_resources() if resource.uri != "notes://todo"
        ]
        assert files and all(uri.startswith("files://") for uri in files)
        server.remove_resource(template)
        assert [resource.uri for resource in client.list_resources()] == ["notes://todo"]
        assert server.add_file_root(str(tree), uri_prefix="files://") == template
        with pytest.warns(UserWarning, match="registration replaces it"):
            assert server.add_file_root(str(tree), uri_prefix="files://") == template
        listed = [resource.uri for resource in client.list_resources()]
    assert listed == ["notes://todo", *files]


# -- resources/list of a file root: a page costs about its own size ---------------------------------


def test_files_after_a_path_are_the_tail_of_the_sorted_listing(tmp_path):
    """``FileRoot.files(after)`` walks the names lazily in :meth:`FileRoot.list`'s order (whole
    paths sorted as strings: ``a b``, ``a-b/x``, ``a.txt`` and ``a/y`` interleave across
    directories), and gives the files after any path, listed or not."""
    for relative in ["a b", "a-b/x", "a.txt", "a/y", "a/z/deep", "b", "a/.h", ".top", "c/d/e/f"]:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(relative)
    _symlink(tmp_path / "a", tmp_path / "linked-dir", is_dir=True)
    root = FileRoot(tmp_path)
    listed = root.list()
    assert listed == ["a b", "a-b/x", "a.txt", "a/y", "a/z/deep", "b", "c/d/e/f"]
    assert list(root.files()) == listed
    for index, path in enumerate(listed):
        assert list(root.files(after=path)) == listed[index + 1 :], path
    for missing, tail in [("", listed), ("a/", listed[3:]), ("a/x", listed[3:]), ("zz", [])]:
        assert list(root.files(after=missing)) == tail, missing


@pytest.fixture
def deep_tree(tmp_path):
    """A directory 1,100 levels deep under ``tmp_path / "root"`` (``d/d/...``), made and removed one
    level at a time (``Path.mkdir(parents=True)`` and ``shutil.rmtree`` recurse once per level, as
    the listing did)."""
    root = tmp_path / "root"
    levels = [str(root)]
    for _ in range(1_100):
        levels.append(os.path.join(levels[-1], "d"))
    for directory in levels:
        os.mkdir(directory)
    yield root
    for directory in reversed(levels):
        for entry in os.scandir(directory):
            if not entry.is_dir(follow_symlinks=False):
                os.unlink(entry.path)
        os.rmdir(directory)


def test_a_tree_of_any_depth_is_listed_down_to_the_depth_bound(deep_tree):
    """The walk is a loop over a stack of directories, not a recursion: a tree deeper than Python's
    stack (1,100 levels; it failed every ``resources/list`` with -32603) is listed, down to paths
    of ``MAX_LISTING_DEPTH`` names; the files below are left out, as an unreadable directory's
    are, the rest of the tree after them is listed, and a file below is still read by its URI."""
    from conftest import WAIT

    from mcp_ref import Client, Server
    from mcp_ref.extensions.files import MAX_LISTING_DEPTH

    last = "/".join(["d"] * (MAX_LISTING_DEPTH - 1) + ["last.txt"])  # MAX_LISTING_DEPTH names
    below = "/".join(["d"] * MAX_LISTING_DEPTH + ["below.txt"])
    bottom = "/".join(["d"] * 1_100 + ["bottom.txt"])
    for relative in ("a.txt", "d/b.txt", last, below, bottom, "e.txt"):
        (deep_tree / relative).write_text(relative.rsplit("/", 1)[-1])
    root = FileRoot(deep_tree)
    expected = ["a.txt", "d/b.txt", last, "e.txt"]
    assert root.list() == expected
    assert list(root.files(after=last)) == ["e.txt"]
    server = Server("files", page_size=2)
    server.add_file_root(str(deep_tree), uri_prefix="files:///r/")
    with Client.in_memory(server, timeout=WAIT) as client:
        assert [resource.name for resource in client.list_resources()] == expected
        assert client.read_resource("files:///r/" + bottom).contents[0].text == "bottom.txt"


def test_a_page_of_a_file_root_listing_checks_about_its_own_size(tmp_path, monkeypatch):
    """Each ``resources/list`` page of a file root resolves and stats about a page of files, and
    opens the directories on its way, not the whole tree (it resolved every file for every
    page: a full listing cost files squared over the page size).  Every file is listed once, in
    order, and what a listing leaves out (hidden files, a link leading outside) stays out."""
    from conftest import WAIT

    from mcp_ref import Client, Server

    root = tmp_path / "root"
    for d in range(12):
        (root / f"d{d:02}").mkdir(parents=True)
        for f in range(25):
            (root / f"d{d:02}" / f"f{f:02}.txt").write_text("x")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "h.txt").write_text("hidden")
    (tmp_path / "outside.txt").write_text("outside")
    _symlink(tmp_path / "outside.txt", root / "d05" / "f12-escape.txt")
    resolved, opened = [0], [0]
    checked, scandir = FileRoot._resolve, os.scandir

    def counting_resolve(self, relative, exact_names):
        resolved[0] += 1
        return checked(self, relative, exact_names)

    def counting_scandir(path):
        opened[0] += 1
        return scandir(path)

    monkeypatch.setattr(FileRoot, "_resolve", counting_resolve)
    monkeypatch.setattr(os, "scandir", counting_scandir)
    server = Server("files", page_size=10)
    server.add_resource(lambda: "a", "mem://a", name="a")
    server.add_file_root(str(root), uri_prefix="files://")
    expected = ["mem://a", *(f"files://d{d:02}/f{f:02}.txt" for d in range(12) for f in range(25))]
    with Client.in_memory(server, timeout=WAIT) as client:
        listed, costs, cursor = [], [], None
        while True:
            before = (resolved[0], opened[0])
            page = client.list_resources_page(cursor)
            costs.append((resolved[0] - before[0], opened[0] - before[1]))
            listed += [resource.uri for resource in page.items]
            cursor = page.next_cursor
            if cursor is None:
                break
            assert len(costs) <= 40, "the cursors never end"
    assert listed == expected
    assert len(costs) == 31
    assert max(resolves for resolves, _ in costs) <= 2 * 10 + 2, costs
    assert max(directories for _, directories in costs) <= 4, costs


def _an_hour_ago(directory: Path) -> None:
    """Stamp ``directory`` as last modified an hour ago: settled, as a directory a listing keeps
    the names of must be (a file system's time stamps are coarser than its changes)."""
    then = time.time_ns() - 3_600 * 10**9
    os.utime(directory, ns=(then, then))


def test_consecutive_pages_inside_a_wide_directory_read_it_once(tmp_path, monkeypatch):
    """Pages of one listing that resume inside a wide directory (``_CACHED_WIDTH`` names or more)
    use its sorted names read for the first page, while its modification time stays the same
    (every page read and sorted the whole directory: a full listing was quadratic); a name added
    changes that time, so the next page reads it again and lists the new file in its place."""
    from conftest import WAIT

    from mcp_ref import Client, Server
    from mcp_ref.extensions.files import _CACHED_WIDTH

    wide = tmp_path / "wide"
    wide.mkdir()
    names = [f"f{n:04}.txt" for n in range(_CACHED_WIDTH + 88)]
    for name in names:
        (wide / name).write_text("x")
    (tmp_path / "a.txt").write_text("x")
    (tmp_path / "z.txt").write_text("x")
    _an_hour_ago(wide)
    opened: list[str] = []
    scandir = os.scandir

    def counting_scandir(path):
        opened.append(os.path.basename(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", counting_scandir)
    server = Server("files", page_size=50)
    server.add_file_root(str(tmp_path), uri_prefix="files://")
    with Client.in_memory(server, timeout=WAIT) as client:
        listed, cursor = [], None
        for _ in range(5):
            page = client.list_resources_page(cursor)
            listed += [resource.name for resource in page.items]
            cursor = page.next_cursor
        assert listed == ["a.txt", *(f"wide/{name}" for name in names[:249])]
        assert opened.count("wide") == 1, opened
        (wide / "f0260b.txt").write_text("x")  # the directory's modification time is now
        while cursor is not None:
            page = client.list_resources_page(cursor)
            listed += [resource.name for resource in page.items]
            cursor = page.next_cursor
    names.insert(261, "f0260b.txt")
    assert listed == ["a.txt", *(f"wide/{name}" for name in names), "z.txt"]
    assert opened.count("wide") > 2  # read again: changed, and too recently to be kept


def test_a_file_root_keeps_the_names_of_the_16_directories_used_last(tmp_path, monkeypatch):
    """At most ``_CACHED_DIRECTORIES`` (16) directories' names are kept, the least recently used
    dropped first when one more is read; a directory narrower than ``_CACHED_WIDTH`` names, or
    modified in the last 2 s, is never kept."""
    import mcp_ref.extensions.files as files

    monkeypatch.setattr(files, "_CACHED_WIDTH", 2)
    for d in range(20):
        (tmp_path / f"d{d:02}").mkdir()
        for name in ("x", "y"):
            (tmp_path / f"d{d:02}" / name).write_text("x")
        _an_hour_ago(tmp_path / f"d{d:02}")
    (tmp_path / "d19" / "z").write_text("x")  # modified just now
    (tmp_path / "d18" / "y").unlink()  # one name only, and modified just now
    _an_hour_ago(tmp_path / "d18")
    _an_hour_ago(tmp_path)
    root = FileRoot(tmp_path)
    real = str(root.root)

    def kept() -> list[str]:
        return [os.path.relpath(path, real) for path in root._listings]

    assert len(root.list()) == 40
    # read in order: the root, d00 ... d17 (d18 is narrow, d19 too new); the last 16 kept
    assert kept() == [f"d{d:02}" for d in range(2, 18)]
    assert list(root.files(after="d16/y")) == ["d17/x", "d17/y", "d18/x", "d19/x", "d19/y", "d19/z"]
    # the root read again and kept (d02 out), then d16 (holding ``after``) and d17 used again
    assert kept() == [*(f"d{d:02}" for d in range(3, 16)), ".", "d16", "d17"]


def _kept(root: FileRoot) -> list[str]:
    """The directories whose names ``root`` keeps, relative to it, least recently used first."""
    return [os.path.relpath(path, root.root) for path in root._listings]


def test_kept_names_past_their_age_are_gone_after_the_next_listing(tmp_path, monkeypatch):
    """Names kept ``_CACHED_SECONDS`` (30 s) or longer are dropped by the next listing that reads
    any directory, not only when their own directory is read again: kept names were aged only when
    used, so those of a directory no page came back to stayed until the server ended."""
    import mcp_ref.extensions.files as files

    monkeypatch.setattr(files, "_CACHED_WIDTH", 3)
    for directory in ("a", "b"):
        (tmp_path / directory).mkdir()
        for name in ("x", "y", "z"):
            (tmp_path / directory / name).write_text("x")
        _an_hour_ago(tmp_path / directory)
    root = FileRoot(tmp_path)  # its own two names are too few to be kept
    now = [1000.0]
    root.clock = lambda: now[0]
    assert len(root.list()) == 6
    assert _kept(root) == ["a", "b"]
    now[0] += 20.0
    assert list(root.files(after="b/")) == ["b/x", "b/y", "b/z"]  # b's kept names, 20 s old
    assert _kept(root) == ["a", "b"]
    now[0] += 11.0  # both were read 31 s ago: a listing that reads only b drops a too
    assert list(root.files(after="b/")) == ["b/x", "b/y", "b/z"]
    assert _kept(root) == ["b"]  # b read again, and kept from now
    assert root._listings[os.path.join(root.root, "b")][1] == now[0]


def test_a_file_root_keeps_at_most_cached_names_names_in_all(tmp_path, monkeypatch):
    """At most ``_CACHED_NAMES`` names are kept, over every directory kept: a directory wider than
    that is never kept, and the least recently used are dropped until one more fits (the count of
    directories alone bounded the memory: 16 directories of a million names held some 3 GB)."""
    import mcp_ref.extensions.files as files

    monkeypatch.setattr(files, "_CACHED_WIDTH", 5)
    monkeypatch.setattr(files, "_CACHED_NAMES", 12)
    for directory, width in (("a", 5), ("b", 6), ("c", 5), ("w", 13)):
        (tmp_path / directory).mkdir()
        for n in range(width):
            (tmp_path / directory / f"f{n:02}").write_text("x")
        _an_hour_ago(tmp_path / directory)
    root = FileRoot(tmp_path)  # its own four names are too few to be kept
    expected = [
        f"{d}/f{n:02}"
        for d, width in (("a", 5), ("b", 6), ("c", 5), ("w", 13))
        for n in range(width)
    ]
    assert root.list() == expected
    # a (5) and b (6) kept; c (5) pushed a out (16 > 12); w (13) is wider than the bound
    assert _kept(root) == ["b", "c"]
    first_two = root.files(after="a/f02")  # read lazily: only a is read for them
    assert [next(first_two), next(first_two)] == ["a/f03", "a/f04"]
    assert _kept(root) == ["c", "a"]  # a read again: b (least recently used) dropped for it
    assert sum(len(kept[2]) for kept in root._listings.values()) <= 12


def test_a_file_root_cursor_keeps_its_place_when_files_change(tmp_path):
    """A cursor of a file root's listing is a place in its order (after the last file sent), not
    a count: files added or removed before it move no later file to another page, and nothing
    after it is skipped or sent twice."""
    from conftest import WAIT

    from mcp_ref import Client, McpError, Server

    for n in range(30):
        (tmp_path / f"f{n:02}.txt").write_text("x")
    server = Server("files", page_size=10)
    server.add_file_root(str(tmp_path), uri_prefix="files://")
    with Client.in_memory(server, timeout=WAIT) as client:
        first = client.list_resources_page()
        assert [r.uri for r in first.items] == [f"files://f{n:02}.txt" for n in range(10)]
        (tmp_path / "f03.txt").unlink()
        (tmp_path / "a-new.txt").write_text("x")
        (tmp_path / "f09b.txt").write_text("x")  # right after the page's last file: next
        second = client.list_resources_page(first.next_cursor)
        assert [r.uri for r in second.items] == [
            "files://f09b.txt",
            *(f"files://f{n:02}.txt" for n in range(10, 19)),
        ]
        (tmp_path / "f18.txt").unlink()  # the last file sent is gone: its place is not
        third = client.list_resources_page(second.next_cursor)
        assert [r.uri for r in third.items] == [f"files://f{n:02}.txt" for n in range(19, 29)]
        server.add_resource(lambda: "a", "mem://a", name="a")
        server.remove_resource("files://{+path}")  # a cursor into its files names nothing now
        with pytest.raises(McpError) as stale:
            client.list_resources_page(third.next_cursor)
        assert stale.value.code == -32602


def test_file_root_pages_with_authorize_are_of_the_callers_own_listing(tmp_path):
    """With ``authorize`` hiding some files (and a whole second root), each page still holds
    ``page_size`` files the caller may read, until the last: the gate judges each file as the page
    is read, and the cursor is a place in the caller's own listing."""
    from conftest import WAIT

    from mcp_ref import Client, Server

    (tmp_path / "open").mkdir()
    (tmp_path / "shut").mkdir()
    for n in range(40):
        (tmp_path / "open" / f"f{n:02}.txt").write_text("x")
        (tmp_path / "shut" / f"s{n:02}.txt").write_text("x")

    def authorize(principal, action, name):
        return name != "shut://{+path}" and not name.endswith(("3.txt", "7.txt"))

    server = Server("files", page_size=7, authorize=authorize)
    server.add_file_root(str(tmp_path / "shut"), uri_prefix="shut://")
    server.add_file_root(str(tmp_path / "open"), uri_prefix="open://")
    expected = [f"open://f{n:02}.txt" for n in range(40) if n % 10 not in (3, 7)]
    with Client.in_memory(server, era="handshake", timeout=WAIT) as client:
        pages, cursor = [], None
        while True:
            page = client.list_resources_page(cursor)
            pages.append([resource.uri for resource in page.items])
            cursor = page.next_cursor
            if cursor is None:
                break
            assert len(pages) <= 10, "the cursors never end"
    assert [uri for page in pages for uri in page] == expected
    assert [len(page) for page in pages] == [7, 7, 7, 7, 4]
