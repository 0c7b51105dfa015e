"""Issue 20, class 3: ``authorize`` holds on every spelling, and costs the same for hidden and missing.

One canonical form per resource (``Server.find_resource`` / ``UriTemplate.match_canonical``), and
a file root that refuses every other spelling of a path (``FileRoot``): so ``authorize`` and the
file read always judge the same string.  Every other spelling answers exactly as a missing
resource.  And ``authorize`` is asked the same questions about a missing name as about a hidden
one, each once per request, whoever asks (the HTTP transport before dispatch, the rate limits,
the handler): counted here with an ``authorize`` that records its calls, not timed.
"""

from __future__ import annotations

import json
import threading

import pytest
from conftest import WAIT
from http_fixtures import serve  # noqa: F401 - a fixture
from policy_tokens import Tokens, bearer

from mcp_ref import Client, McpError, Server
from mcp_ref.oauth.resource import ProtectedResource

ERAS = ("handshake", "modern")
SECRET = "TOP-SECRET-CONTENT"
PRIVATE = "PRIVATE-KEY-CONTENT"


class Recorder:
    """An ``authorize`` that records every question it is asked and denies what ``denied`` says."""

    def __init__(self, denied):
        self.denied = denied
        self.calls: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, principal, action, name) -> bool:
        with self.lock:
            self.calls.append((action, name))
        return not self.denied(name)

    def take(self) -> list[tuple[str, str]]:
        """The questions asked since the last take."""
        with self.lock:
            calls, self.calls = self.calls, []
        return calls


def build(tmp_path):
    """A server with a file root (``secret.txt`` and ``private/`` denied), a static resource, two
    templates, tools and prompts, some hidden; returns ``(server, root URI, recorder)``."""
    root = tmp_path / "served"
    (root / "private").mkdir(parents=True)
    (root / "secret.txt").write_text(SECRET)
    (root / "public.txt").write_text("public content")
    (root / "private" / "key.txt").write_text(PRIVATE)
    (root / "a b.txt").write_text("spaced")
    prefix = root.resolve().as_uri() + "/"

    def denied(name: str) -> bool:
        return name in (
            prefix + "secret.txt",
            "hidden_tool",
            "hidden_prompt",
            "mem://doc/hidden",
            "notes://secret",
        ) or name.startswith((prefix + "private/", "docs://private/"))

    recorder = Recorder(denied)
    server = Server("hardening-policy", authorize=recorder)
    server.add_file_root(str(root))
    server.add_tool(lambda: "open", name="open_tool")
    server.add_tool(lambda: "hidden", name="hidden_tool")
    server.add_tool(
        lambda: "limited", name="limited_tool", rate_limit="1000/minute"
    )  # item limits on: admit asks
    server.add_prompt(lambda: "hi", name="open_prompt")
    server.add_prompt(lambda: "hidden", name="hidden_prompt")
    server.completion(prompt="hidden_prompt")(lambda argument, value, context: ["x"])
    server.add_resource(lambda: "HIDDEN-DOC", "mem://doc/hidden", name="hiddendoc")
    server.add_resource(lambda: "open doc", "mem://doc/open", name="opendoc")
    server.add_resource(lambda name: f"NOTE-{name}", "notes://{name}", name="notes")
    server.add_resource(lambda path: f"DOC-{path}", "docs://{+path}", name="docs")
    return server, prefix, recorder


def text_of(client: Client, uri: str) -> str:
    (contents,) = client.read_resource(uri).contents
    return contents.text


def shape(exc: McpError, name: str) -> list:
    """An error with the name it was about taken out: a hidden or odd spelling's must equal a missing one's."""
    return json.loads(
        json.dumps([exc.code, exc.message, exc.data]).replace(json.dumps(name)[1:-1], "<name>")
    )


def refusal(attempt, name: str) -> list:
    with pytest.raises(McpError) as refused:
        attempt(name)
    rendered = json.dumps([refused.value.code, refused.value.message, refused.value.data])
    assert SECRET not in rendered and PRIVATE not in rendered and "HIDDEN-DOC" not in rendered
    return shape(refused.value, name)


# Every spelling of a denied file but its own: each must answer as a missing file, never its content.
SPELLINGS = [
    "./secret.txt",
    "secret.txt/",
    ".//secret.txt",
    "./private/key.txt",  # the four
    "private//key.txt",
    "private/./key.txt",
    "private/key.txt/",
    "./private//key.txt",
    "private/key.txt//",
    "sub/../secret.txt",
    "private/../secret.txt",
    "%2e/secret.txt",
    "%2E/secret.txt",
    "%2e%2e/served/secret.txt",
    "secre%74.txt",
    "%73ecret.txt",
    "secret%2Etxt",
    "secret%2etxt",
    "%70rivate/key.txt",
    "private%2Fkey.txt",
    "private%2fkey.txt",
    ".%2Fsecret.txt",
    "private%2F.%2Fkey.txt",
    "/secret.txt",
    "//secret.txt",
    "private\\key.txt",
    "private%5Ckey.txt",
    "secret.txt%00",
    "secret.txt%00.png",
    "secret.txt?x=1",
    "secret.txt#top",
    "secret.txt%3Fx",
    "secret.txt%23top",
    "Secret.txt",
    "SECRET.TXT",
    "secret.txt.",
    "secret.txt%20",
    " secret.txt",
]


@pytest.mark.parametrize("era", ERAS)
def test_no_other_spelling_of_a_denied_file_is_served(tmp_path, era):
    server, prefix, _ = build(tmp_path)
    with Client.in_memory(server, era=era, timeout=WAIT) as client:
        missing = refusal(client.read_resource, prefix + "gone.txt")
        for spelling in SPELLINGS:
            assert refusal(client.read_resource, prefix + spelling) == missing, spelling
        # the same for a file nobody hides: its other spellings are no more a way in than a hidden one's
        for spelling in ("./public.txt", "public.txt/", "%70ublic.txt", "public%2Etxt"):
            assert refusal(client.read_resource, prefix + spelling) == missing, spelling
        # and the server still serves what it should, under the one spelling it lists
        assert text_of(client, prefix + "public.txt") == "public content"
        listed = {r.uri for r in client.list_resources()}
        assert prefix + "a%20b.txt" in listed and prefix + "secret.txt" not in listed
        assert text_of(client, prefix + "a%20b.txt") == "spaced"
        assert (
            refusal(client.read_resource, prefix + "a b.txt") == missing
        )  # not the listed spelling


@pytest.mark.parametrize("era", ERAS)
def test_a_link_inside_the_root_is_no_second_name_for_a_denied_file(tmp_path, era):
    # "pub -> private" and "alias.txt -> secret.txt" would be second names that authorize never
    # judged: the file root follows no link unless told to (follow_links), so they are not found.
    server, prefix, _ = build(tmp_path)
    served = tmp_path / "served"
    (served / "pub").symlink_to(served / "private", target_is_directory=True)
    (served / "alias.txt").symlink_to(served / "secret.txt")
    with Client.in_memory(server, era=era, timeout=WAIT) as client:
        missing = refusal(client.read_resource, prefix + "gone.txt")
        for spelling in ("pub/key.txt", "alias.txt"):
            assert refusal(client.read_resource, prefix + spelling) == missing, spelling
        listed = {r.uri for r in client.list_resources()}
        assert not {prefix + "pub/key.txt", prefix + "alias.txt"} & listed
        assert text_of(client, prefix + "public.txt") == "public content"


@pytest.mark.parametrize("era", ERAS)
def test_templates_serve_one_spelling_only(tmp_path, era):
    server, _, _ = build(tmp_path)
    with Client.in_memory(server, era=era, timeout=WAIT) as client:
        missing = refusal(client.read_resource, "mem://doc/gone")
        for spelling in (
            "notes://secre%74",
            "notes://%73ecret",
            "notes://secret%",
            "notes://.",
            "notes://..",
            "notes://%2E",
            "docs://./private/x",
            "docs://private/./x",
            "docs://private/../private/x",
            "docs://%70rivate/x",
            "docs://private%2Fx",
            "docs://a/%2e%2e/private/x",
            "docs://private%2fx",
        ):
            assert refusal(client.read_resource, spelling) == missing, spelling
        assert text_of(client, "notes://open") == "NOTE-open"  # still served
        assert text_of(client, "notes://a%2Fb") == "NOTE-a/b"  # {name}'s own spelling of a "/"
        assert text_of(client, "docs://public/x") == "DOC-public/x"


def test_subscribe_and_completion_take_the_same_canonical_form(tmp_path):
    server, prefix, _ = build(tmp_path)
    with Client.in_memory(server, era="handshake", timeout=WAIT) as client:
        missing = refusal(client.subscribe, prefix + "gone-too.txt/")
        for spelling in (
            "./secret.txt",
            "secret.txt/",
            ".//secret.txt",
            "./private/key.txt",
            "secre%74.txt",
            "private%2Fkey.txt",
            "secret.txt",
        ):
            assert refusal(client.subscribe, prefix + spelling) == missing, spelling
        client.subscribe(prefix + "public.txt")  # the allowed file: subscribed
        template = prefix + "{+path}"

        def complete(uri):
            return client.complete(argument="path", value="", resource=uri)

        unknown = refusal(complete, "mem://gone/{x}")
        for spelling in (
            template.replace("served", "serve%64"),
            template + "/",
            template.replace("{", "%7B"),
        ):
            assert refusal(complete, spelling) == unknown, spelling
        assert complete(template).values == []  # the template's own spelling: known, no suggestions
        assert text_of(client, prefix + "public.txt") == "public content"


# -- the cost: the same questions for hidden and missing, each once per request --------------------------

PAIRS = [
    (
        "tool",
        lambda c, n: c.call_tool(n),
        "hidden_tool",
        "no_such_tool",
        [("tools/call", "<name>")],
    ),
    (
        "prompt",
        lambda c, n: c.get_prompt(n),
        "hidden_prompt",
        "no_such_prompt",
        [("prompts/get", "<name>")],
    ),
    (
        "resource",
        lambda c, n: c.read_resource(n),
        "mem://doc/hidden",
        "mem://doc/gone",
        [("resources/read", "<name>")],
    ),
    (
        "completion",
        lambda c, n: c.complete(argument="a", value="", prompt=n),
        "hidden_prompt",
        "no_such_prompt",
        [("prompts/get", "<name>"), ("completion/complete", "<name>")],
    ),
]


def questions(recorder: Recorder, name: str) -> list:
    return [(action, "<name>" if asked == name else asked) for action, asked in recorder.take()]


def check_costs(client: Client, recorder: Recorder, prefix: str, era: str) -> None:
    for kind, attempt, hidden, missing, expected in PAIRS:
        recorder.take()
        hidden_error = refusal(lambda n, attempt=attempt: attempt(client, n), hidden)
        asked_hidden = questions(recorder, hidden)
        missing_error = refusal(lambda n, attempt=attempt: attempt(client, n), missing)
        asked_missing = questions(recorder, missing)
        assert hidden_error == missing_error, kind
        assert asked_hidden == asked_missing == expected, kind
    # a file under the root: the root's template and then the file's URI, hidden or missing alike
    recorder.take()
    refusal(client.read_resource, prefix + "secret.txt")
    asked_hidden = questions(recorder, prefix + "secret.txt")
    refusal(client.read_resource, prefix + "gone.txt")
    asked_missing = questions(recorder, prefix + "gone.txt")
    assert (
        asked_hidden
        == asked_missing
        == [("resources/read", prefix + "{+path}"), ("resources/read", "<name>")]
    )
    if (
        era == "handshake"
    ):  # resources/subscribe: reading and subscribing, both asked, hidden or missing
        refusal(client.subscribe, "mem://doc/hidden")
        asked_hidden = questions(recorder, "mem://doc/hidden")
        refusal(client.subscribe, "mem://doc/gone")
        assert (
            asked_hidden
            == questions(recorder, "mem://doc/gone")
            == [("resources/read", "<name>"), ("resources/subscribe", "<name>")]
        )
    assert client.call_tool("limited_tool").content[0].text == "limited"  # serving goes on
    assert questions(recorder, "limited_tool") == [
        ("tools/call", "<name>")
    ]  # the limit and the call: one question


@pytest.mark.parametrize("era", ERAS)
def test_hidden_and_missing_cost_the_same_questions_in_memory(tmp_path, era):
    server, prefix, recorder = build(tmp_path)
    with Client.in_memory(server, era=era, timeout=WAIT) as client:
        check_costs(client, recorder, prefix, era)


@pytest.mark.parametrize("era", ERAS)
def test_hidden_and_missing_cost_the_same_questions_over_http(tmp_path, era, serve):
    server, prefix, recorder = build(tmp_path)
    with Client.http(serve(server).mcp, era=era, timeout=WAIT) as client:
        check_costs(client, recorder, prefix, era)
        for spelling in (
            "./secret.txt",
            "secret.txt/",
            ".//secret.txt",
            "./private/key.txt",
        ):  # the issue's own
            refusal(client.read_resource, prefix + spelling)
        assert text_of(client, prefix + "public.txt") == "public content"


def test_handlers_on_the_pool_cost_the_same_for_hidden_and_missing(tmp_path, serve):
    """``inline_handlers=False``: the rate limit is counted on the POST's thread, the handler runs on
    another, which asks again (the verdicts stay with a thread); hidden and missing still alike."""
    server, _, recorder = build(tmp_path)
    with Client.http(
        serve(server, inline_handlers=False).mcp, era="handshake", timeout=WAIT
    ) as client:
        recorder.take()
        hidden = refusal(lambda n: client.call_tool(n), "hidden_tool")
        asked_hidden = questions(recorder, "hidden_tool")
        assert refusal(lambda n: client.call_tool(n), "no_such_tool") == hidden
        assert questions(recorder, "no_such_tool") == asked_hidden
        assert set(asked_hidden) == {("tools/call", "<name>")}
        assert client.call_tool("open_tool").content[0].text == "open"


@pytest.mark.parametrize("era", ERAS)
def test_one_question_per_request_behind_oauth_too(tmp_path, era, serve):
    """With ``auth=``, the scope check before dispatch asks too: still one question per request."""
    server, _, recorder = build(tmp_path)
    tokens = Tokens()
    served = serve(app=server.wsgi_app(auth=ProtectedResource(tokens, ["https://as.example"])))
    tokens.audience = (served.mcp,)
    with Client.http(served.mcp, era=era, auth=bearer("bob-token"), timeout=WAIT) as client:
        recorder.take()
        hidden = refusal(lambda n: client.call_tool(n), "hidden_tool")
        assert questions(recorder, "hidden_tool") == [("tools/call", "<name>")]
        assert refusal(lambda n: client.call_tool(n), "no_such_tool") == hidden
        assert questions(recorder, "no_such_tool") == [("tools/call", "<name>")]
        assert client.call_tool("open_tool").content[0].text == "open"
        assert questions(recorder, "open_tool") == [("tools/call", "<name>")]


def test_a_listing_asks_about_each_template_once_however_many_files_it_serves(tmp_path):
    """``resources/list`` judges a file as a read does (its template, then its URI), at the cost
    of one question per template: a file root of many files hidden by its template costs one."""
    root = tmp_path / "vault"
    root.mkdir()
    for n in range(50):
        (root / f"f{n}.txt").write_text("x")
    recorder = Recorder(lambda name: name == "vault://{+path}")
    server = Server("listing-cost", authorize=recorder, page_size=1000)
    assert server.add_file_root(str(root), uri_prefix="vault://") == "vault://{+path}"
    server.add_file_root(str(root), uri_prefix="open://")
    server.add_resource(lambda: "open", "mem://open", name="open")
    with Client.in_memory(server, era="handshake", timeout=WAIT) as client:
        recorder.take()
        listed = [resource.uri for resource in client.list_resources()]
        asked = recorder.take()
    assert listed == ["mem://open", *sorted(f"open://f{n}.txt" for n in range(50))]
    assert asked.count(("resources/read", "vault://{+path}")) == 1
    assert asked.count(("resources/read", "open://{+path}")) == 1
    assert not [name for _, name in asked if name.startswith("vault://f")]  # nothing more to ask
    assert len(asked) == 2 + 1 + 50  # the templates, then each URI listed


# -- the file root itself ------------------------------------------------------------------------


def test_the_file_root_never_reads_a_second_spelling(tmp_path):
    from mcp_ref.extensions.files import FileRoot, PathOutsideRoot

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f.txt").write_text("x")
    root = FileRoot(tmp_path)
    assert root.read("d/f.txt")[0] == b"x"
    for spelling in ("./d/f.txt", "d//f.txt", "d/./f.txt", "d/f.txt/", "d/", "", "/d/f.txt"):
        with pytest.raises(PathOutsideRoot):
            root.read(spelling)
    root._exact_names = (
        True  # as on macOS and Windows: each name checked as its directory stores it
    )
    assert root.read("d/f.txt")[0] == b"x"
    with pytest.raises(FileNotFoundError):
        root.read("D/f.txt")


# -- an over-long URI: refused before anything matches it ------------------------------------------


@pytest.mark.parametrize("guard", ["rate limits", "rate limits and oauth scopes"])
def test_no_template_or_authorize_sees_an_over_long_uri_whoever_looks_first(
    tmp_path, guard, serve, monkeypatch
):
    """The 8,192-character bound on a resource URI holds where the URI is first looked up, not
    only in ``resources/read``: the rate limits (``Policy.admit``) and the scope check before
    dispatch (``ScopeChallenge``) name the item a request addresses before the handler runs, and
    neither matches an over-long URI against a template nor asks ``authorize`` about it (counted:
    the server runs in this process).  The answer is -32602, as for any read of one; the session
    goes on, and a URI within the bound is matched as ever."""
    from mcp_ref.uri_template import UriTemplate

    server, _, recorder = build(tmp_path)
    matched: list[int] = []
    match_canonical = UriTemplate.match_canonical

    def counting(self, uri):
        matched.append(len(uri))
        return match_canonical(self, uri)

    monkeypatch.setattr(UriTemplate, "match_canonical", counting)
    options = {}
    if guard == "rate limits":
        served = serve(server)
    else:
        tokens = Tokens()
        served = serve(app=server.wsgi_app(auth=ProtectedResource(tokens, ["https://as.example"])))
        tokens.audience = (served.mcp,)
        options["auth"] = bearer("bob-token")
    with Client.http(served.mcp, era="handshake", timeout=WAIT, **options) as client:
        recorder.take()
        for uri in ("notes://" + "a" * 9000, "docs://" + "a/" * 100_000):
            for attempt in (client.read_resource, client.subscribe):
                with pytest.raises(McpError) as refused:
                    attempt(uri)
                assert refused.value.code == -32602
                assert refused.value.message == (
                    "Invalid params: a resource URI must have 1 to 8192 characters"
                )
        assert [length for length in matched if length > 8192] == []
        assert [name for _, name in recorder.take() if len(name) > 8192] == []
        longest = "notes://" + "a" * (8192 - len("notes://"))
        assert text_of(client, longest) == "NOTE-" + "a" * 8184
        assert 8192 in matched
