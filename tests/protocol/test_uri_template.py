import random
import re
import subprocess
import sys
import textwrap

import pytest

from mcp_ref.uri_template import UriTemplate, is_template


def test_basic_attributes():
    t = UriTemplate("weather://{city}/current")
    assert t.template == "weather://{city}/current"
    assert t.variables == ("city",)
    assert str(t) == "weather://{city}/current"
    assert "UriTemplate" in repr(t)


def test_variables_in_order_without_duplicates():
    t = UriTemplate("x://{b}/{a}/{+b}")
    assert t.variables == ("b", "a")


@pytest.mark.parametrize(
    "template, values, expected",
    [
        # RFC 6570 section 3.2.2 / 3.2.3 examples
        ("{var}", {"var": "value"}, "value"),
        ("{hello}", {"hello": "Hello World!"}, "Hello%20World%21"),
        ("{+var}", {"var": "value"}, "value"),
        ("{+hello}", {"hello": "Hello World!"}, "Hello%20World!"),
        ("{+path}/here", {"path": "/foo/bar"}, "/foo/bar/here"),
        ("here?ref={+path}", {"path": "/foo/bar"}, "here?ref=/foo/bar"),
        ("{half}", {"half": "50%"}, "50%25"),
        ("{+half}", {"half": "50%"}, "50%25"),
        ("{+base}index", {"base": "http://example.com/home/"}, "http://example.com/home/index"),
        # extras
        ("file:///{name}", {"name": "a/b c"}, "file:///a%2Fb%20c"),
        ("file:///{+path}", {"path": "a/b c"}, "file:///a/b%20c"),
        ("file:///{+path}", {"path": "already%20encoded"}, "file:///already%20encoded"),
        ("u://{name}", {"name": "ünï"}, "u://%C3%BCn%C3%AF"),
        ("u://{keep}", {"keep": "AZaz09-._~"}, "u://AZaz09-._~"),
        ("u://{n}", {"n": 42}, "u://42"),
        ("u://{missing}/x", {}, "u:///x"),
        ("u://{none}/x", {"none": None}, "u:///x"),
        ("u://a b/{x}", {"x": "1"}, "u://a%20b/1"),
    ],
)
def test_expand(template, values, expected):
    assert UriTemplate(template).expand(**values) == expected


def test_expand_rejects_composite_values():
    with pytest.raises(TypeError):
        UriTemplate("u://{x}").expand(x=["a", "b"])


def test_match_simple():
    t = UriTemplate("users://{id}/profile")
    assert t.match("users://42/profile") == {"id": "42"}
    assert t.match("users://a%20b/profile") == {"id": "a b"}
    assert t.match("users:///profile") is None  # empty value
    assert t.match("users://4/2/profile") is None  # '/' not allowed in {var}
    assert t.match("users://42/profile/extra") is None  # whole URI must match
    assert t.match("xusers://42/profile") is None


@pytest.mark.parametrize("bad", ["u://a?b", "u://a#b"])
def test_simple_var_excludes_query_and_fragment(bad):
    assert UriTemplate("u://{x}").match(bad) is None


def test_match_reserved():
    t = UriTemplate("file:///{+path}")
    assert t.match("file:///docs/readme.md") == {"path": "docs/readme.md"}
    assert t.match("file:///a%20b/c?d#e") == {"path": "a b/c?d#e"}
    assert t.match("file:///") is None


def test_match_multiple_and_literal_special_chars():
    t = UriTemplate("repo://{owner}/{name}/blob/{+path}.txt")
    assert t.match("repo://me/proj/blob/src/a.b.txt") == {
        "owner": "me",
        "name": "proj",
        "path": "src/a.b",
    }
    assert t.match("repo://me/proj/blob/src/a.md") is None
    # regex metacharacters in literals are matched literally
    t2 = UriTemplate("a+b://{x}(1)*")
    assert t2.match("a+b://y(1)*") == {"x": "y"}
    assert t2.match("aab://y(1)*") is None


def test_match_repeated_variable_must_agree():
    t = UriTemplate("x://{a}/{a}")
    assert t.match("x://1/1") == {"a": "1"}
    assert t.match("x://1/2") is None


@pytest.mark.parametrize("template", ["u://{x}", "u://{+x}"])
def test_match_canonical_has_no_spelling_for_a_lone_surrogate(template):
    # a JSON string may carry "\\udcff": no character, so no URI spells it (RFC 3986 §2.5), and
    # the match is None rather than an exception escaping to the caller
    t = UriTemplate(template)
    assert t.match_canonical("u://a\udcffb") is None
    assert t.match_canonical("u://a%FFb") is None  # not UTF-8 either: read as U+FFFD, another name
    assert t.match_canonical("u://a%C3%BCb") == {"x": "aüb"}


@pytest.mark.parametrize(
    "values",
    [{"a": "hello world", "p": "dir/sub file.txt"}, {"a": "ünï/?#&", "p": "x/%/y"}],
)
def test_expand_match_roundtrip(values):
    t = UriTemplate("t://{a}/files/{+p}")
    uri = t.expand(**values)
    assert t.match(uri) == values  # a lone '%' expands to %25 and decodes back


def test_equality_and_hash():
    a, b, c = UriTemplate("x://{a}"), UriTemplate("x://{a}"), UriTemplate("x://{b}")
    assert a == b and hash(a) == hash(b)
    assert a != c
    assert a != "x://{a}"
    assert len({a, b, c}) == 2


def test_is_template():
    assert UriTemplate.is_template("file:///{path}")
    assert is_template("file:///{+path}")
    assert not is_template("file:///plain/path.txt")
    assert not UriTemplate.is_template("")


def test_template_without_variables():
    t = UriTemplate("config://app")
    assert t.variables == ()
    assert t.expand() == "config://app"
    assert t.match("config://app") == {}
    assert t.match("config://apps") is None


@pytest.mark.parametrize(
    "bad, fragment",
    [
        ("x://{a", "unclosed"),
        ("x://a}", "unmatched"),
        ("x://{}", "empty"),
        ("x://{+}", "empty"),
        ("x://{a,b}", "level 3"),
        ("x://{?q}", "operator"),
        ("x://{#frag}", "operator"),
        ("x://{/seg}", "operator"),
        ("x://{.ext}", "operator"),
        ("x://{;p}", "operator"),
        ("x://{&q}", "operator"),
        ("x://{=a}", "operator"),
        ("x://{a*}", "level 3"),
        ("x://{a:3}", "level 3"),
        ("x://{a b}", "invalid variable"),
        ("x://{a{b}}", "nested"),
        ("x://{a..b}", "invalid variable"),
    ],
)
def test_malformed_templates(bad, fragment):
    with pytest.raises(ValueError, match=fragment):
        UriTemplate(bad)


def test_dotted_and_pct_encoded_names_allowed():
    t = UriTemplate("x://{a.b}/{c%20d}")
    assert t.variables == ("a.b", "c%20d")
    assert t.match("x://1/2") == {"a.b": "1", "c%20d": "2"}


# -- matching without backtracking ---------------------------------------------------------------

#: The regex a backtracking matcher used: one greedy group per expression (the meaning ``match``
#: keeps: where a URI splits more than one way, each value is the longest the rest allows).
GREEDY_GROUPS = {"+": "(.+)", "": "([^/?#]+)"}


def regex_values(template: str, uri: str) -> dict[str, str] | None:
    """What a backtracking regex makes of ``uri`` (the reference for the linear matcher)."""
    pattern = re.split(r"(\{\+?[^}]*\})", template)
    names, regex = [], ""
    for piece in pattern:
        if piece.startswith("{"):
            names.append(piece.strip("{}+"))
            regex += GREEDY_GROUPS["+" if piece.startswith("{+") else ""]
        else:
            regex += re.escape(piece)
    found = re.fullmatch(regex, uri, re.DOTALL)
    if found is None:
        return None
    values: dict[str, str] = {}
    for name, raw in zip(names, found.groups(), strict=True):
        if values.setdefault(name, raw) != raw:
            return None
    return values


@pytest.mark.parametrize(
    "template",
    ["x://{a}", "{a}{b}", "{+a}{b}", "{a}/{+b}", "{+a}/{+b}.j", "x{a}-{b}-{+c}", "{a}{a}",
     "-{a}-", "{a}?{+b}#{c}", "ab", "{a}{+b}{c}", "/{a}/"],
)  # fmt: skip
def test_match_splits_a_uri_as_a_greedy_regex_does(template):
    """Every short URI over the characters that matter (the stops ``/ ? #``, the literals'
    characters, a newline) is matched, or not, and split exactly as the greedy regex split it."""
    pick = random.Random(template)
    matcher = UriTemplate(template)
    for _ in range(3000):
        uri = "".join(pick.choice("ab/-?#.jx\n") for _ in range(pick.randint(0, 9)))
        assert matcher.match(uri) == regex_values(template, uri), uri


#: Templates, and URIs (``head + filler * n + tail``) that a backtracking regex splits every way
#: before failing; s3's matches (a run of "/" is a bucket, "/" the separator, "/" the key).
HOSTILE = [
    ("db://{schema}.{table}.csv", "db://", ".", "/.csv"),
    ("pkg://{name}-{version}.tar.gz", "pkg://", "-", "/.tar.gz"),
    ("s3://{+bucket}/{+key}.json", "s3://", "/", ".json"),
    ("x://{a}{b}{c}.t", "x://", "a", "/.t"),
]


def test_a_long_hostile_uri_is_matched_in_linear_steps():
    """A URI that a backtracking regex splits every way before failing (quadratic or worse in its
    length, holding the GIL: every client of the server waited) is matched in one pass per
    template part.  Run in a child process with a generous bound: a backtracking matcher takes
    minutes on these 200,000 characters, the linear one a fraction of a second."""
    script = textwrap.dedent(
        """
        from mcp_ref.uri_template import UriTemplate
        from test_uri_template import HOSTILE
        for template, head, filler, tail in HOSTILE:
            uri = head + filler * 200_000 + tail
            print(UriTemplate(template).match_canonical(uri) is None, flush=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=__file__.rsplit("/", 1)[0],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "False", "True"]


def test_the_matchers_steps_grow_linearly_with_the_uri():
    """The work is counted, not timed: the lines the matcher runs for a hostile URI eight times as
    long are at most about eight times as many (a quadratic matcher's would be 64 times)."""

    def steps(template: UriTemplate, uri: str) -> int:
        count = 0

        def tracer(frame, event, arg):
            nonlocal count
            if event == "line":
                count += 1
            return tracer

        sys.settrace(tracer)
        try:
            template.match(uri)
        finally:
            sys.settrace(None)
        return count

    for template, head, filler, tail in HOSTILE:
        matcher = UriTemplate(template)
        short, long = (head + (filler + "/") * n + tail for n in (1000, 8000))
        assert steps(matcher, short) > 1000, template  # the URI was read, not refused at once
        assert steps(matcher, long) <= 10 * steps(matcher, short), template
