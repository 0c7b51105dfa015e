"""The inspector masks secrets in headers, JSON (at any depth), form bodies and URLs, keeping the
kind of secret (the scheme word, the cookie's name) so a reader sees what was there."""

from __future__ import annotations

import json

import pytest

from mcp_ref.inspector.masking import (
    MASK,
    hidden_strings,
    mask_free_text,
    mask_header,
    mask_headers,
    mask_json,
    mask_text,
    mask_url,
    secret_key,
)


@pytest.mark.parametrize(
    "name, value, shown",
    [
        ("Authorization", "Bearer eyJhbGciOi.secret.sig", f"Bearer {MASK}"),
        ("authorization", "DPoP abc", f"DPoP {MASK}"),
        ("Proxy-Authorization", "Basic dXNlcjpwYXNz", f"Basic {MASK}"),
        ("Authorization", "justatoken", MASK),
        ("Cookie", "session=abc; theme=dark", f"session={MASK}; theme={MASK}"),
        ("Set-Cookie", "sid=abc; Path=/; HttpOnly", f"sid={MASK}; Path=/; HttpOnly"),
        ("DPoP", "eyJ0eXAiOiJkcG9wK2p3dCJ9.x.y", MASK),
        ("X-Api-Key", "k-123", MASK),
        ("Content-Type", "application/json", "application/json"),
        ("Mcp-Session-Id", "abc", "abc"),
        ("Mcp-Param-Api-Key", "k-123", MASK),
        ("X-Access-Token", "t-123", MASK),
        ("Mcp-Param-Region", "eu", "eu"),
    ],
)
def test_secret_headers_are_masked_keeping_their_kind(name, value, shown):
    assert mask_header(name, value) == shown


def test_mask_headers_takes_pairs_or_a_mapping():
    pairs = [("Authorization", "Bearer t0k3n"), ("Accept", "text/event-stream")]
    assert mask_headers(pairs) == [
        ["Authorization", f"Bearer {MASK}"],
        ["Accept", "text/event-stream"],
    ]
    assert mask_headers(dict(pairs)) == mask_headers(pairs)


def test_nested_json_secrets_are_masked_and_nothing_else():
    message = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "login",
            "arguments": {
                "user": "ada",
                "password": "hunter2 is long",
                "deep": [{"accessToken": "at-1", "refresh_token": "rt-1"}, {"count": 3}],
                "client-secret": {"nested": "object"},
                "headers": {"Authorization": "Bearer zzz"},
            },
        },
    }
    masked = mask_json(message)
    text = json.dumps(masked)
    for secret in ("hunter2", "at-1", "rt-1", "zzz", "object"):
        assert secret not in text
    arguments = masked["params"]["arguments"]
    assert arguments["password"] == MASK  # no word of it kept: "hunter2" is no scheme
    assert arguments["deep"] == [{"accessToken": MASK, "refresh_token": MASK}, {"count": 3}]
    assert arguments["client-secret"] == MASK
    assert arguments["headers"]["Authorization"] == f"Bearer {MASK}"
    assert arguments["user"] == "ada"
    assert message["params"]["arguments"]["password"] == "hunter2 is long"  # a copy: not changed


def test_json_nested_deeper_than_any_stack_is_masked_without_raising():
    """ "Masking never raises": a value nested 100,000 deep (a parser that reads it, or a caller
    that built it) is masked all the way down, in a copy (mask_json recursed, two frames a level,
    and raised RecursionError a few hundred levels down)."""
    value: object = {"token": "t-1", "kept": 1}
    for level in range(100_000):
        value = [value] if level % 2 else {"level": value}
    masked = mask_json(value)
    for level in reversed(range(100_000)):
        masked = masked[0] if level % 2 else masked["level"]
    assert masked == {"token": MASK, "kept": 1}
    assert mask_json([[["x"]]]) == [[["x"]]]


def test_a_body_nested_as_deep_as_the_parser_reads_is_shown_without_raising():
    """A body Python's parser reads that is nested too deep to compare or write again: it is
    masked as JSON, read and written again without recursing, and nothing raises."""
    for depth in (600, 900, 980):
        body = '{"access_token": "at-1", "deep": ' + "[" * depth + "]" * depth + "}"
        try:
            json.loads(body)
        except RecursionError:
            continue  # deeper than this stack lets the parser go: shown as text anyway
        shown = mask_text(body)
        assert "at-1" not in shown and shown.endswith("]" * 10 + "}")


@pytest.mark.parametrize("depth", [100, 5_000])
def test_a_body_nested_deeper_than_the_session_reads_is_masked_as_json(depth):
    """An HTTP body or an event's data nested 100 or 5,000 deep (the second past Python's parser:
    it was masked as free text, and a secret in an array, in an object or under an escaped key
    was shown) is masked as any JSON body is, its structure kept."""
    nested = "[" * depth + "]" * depth
    body = (
        '{"api_key": ["k-1"], "client_secret": {"value": "s-1"}, "pass\\u0077ord": "p-1", '
        f'"deep": {nested}, "kept": "ok"}}'
    )
    assert mask_text(body) == (
        f'{{"api_key": "{MASK}", "client_secret": "{MASK}", "password": "{MASK}", '
        f'"deep": {nested}, "kept": "ok"}}'
    )
    unmasked = '{"deep": ' + nested + ', "kept": "ok"}'
    assert mask_text(unmasked) == unmasked  # nothing to mask: the text unchanged


def test_free_text_loses_a_secret_key_s_value_of_any_kind():
    """Text that is no JSON (a server's stderr line, a message cut short): the value of a quoted
    secret key is masked whatever it is, as :func:`mask_json` masks it: an array or an object to
    its closing bracket (brackets in its strings not counted), a string, under a key written with
    an escape or over 64 characters long; a value cut short is masked to the end of the text.
    Only a string was masked, under a key of plain letters of at most 64."""
    long_key = "x" * 70 + "_token"
    line = (
        'log: {"api_key": ["k-1", "k-2"], "client_secret": {"value": "s-1", "n": [1, {"x": "]"}]}, '
        f'"pass\\u0077ord": "p-1", "{long_key}": "t-1", "token": 7, "kept": ["v", {{"a": "b"}}]}} end'
    )
    assert mask_free_text(line) == (
        f'log: {{"api_key": "{MASK}", "client_secret": "{MASK}", "pass\\u0077ord": "{MASK}", '
        f'"{long_key}": "{MASK}", "token": 7, "kept": ["v", {{"a": "b"}}]}} end'
    )
    cut_short = '{"id": 1, "result": {"access_token": ["at-1", {"a": "at-2'
    assert mask_free_text(cut_short) == f'{{"id": 1, "result": {{"access_token": "{MASK}"'
    assert mask_free_text('{"refresh_token": "rt-1') == f'{{"refresh_token": "{MASK}"'
    assert mask_free_text('{"token": [[["t-1"]]]]], "after": "x"}') == (
        f'{{"token": "{MASK}"]], "after": "x"}}'
    )


def test_a_secret_s_quoted_value_is_masked_as_a_shell_or_python_writes_it():
    """``KEY='...'`` and ``KEY="..."`` (a command line, a ``.env`` file, a shell's ``export``), and a
    Python dict's repr (``{'api_key': '...'}``, single quotes): the value masked, its quotes kept;
    a quote never closed is masked to the end of the text."""
    assert mask_free_text("env API_KEY='sk-live 1' python s.py") == (
        f"env API_KEY='{MASK}' python s.py"
    )
    assert mask_free_text('export GITHUB_TOKEN="ghp_1\\"2" x=1') == (
        f'export GITHUB_TOKEN="{MASK}" x=1'
    )
    assert mask_free_text("name='ada' password='a b") == f"name='ada' password='{MASK}'"
    settings = "settings: {'api_key': 'sk-1', 'secret': ['a]', 'b'], 'debug': True, 'user': 'ada'}"
    assert mask_free_text(settings) == (
        f"settings: {{'api_key': '{MASK}', 'secret': '{MASK}', 'debug': True, 'user': 'ada'}}"
    )
    assert mask_free_text("it's 'token' time: 'x'") == "it's 'token' time: 'x'"


@pytest.mark.parametrize(
    "line, shown",
    [
        (
            """the users' {"password": "pw-1"} and the admins': {"x": 1}""",
            f"""the users' {{"password": "{MASK}"}} and the admins': {{"x": 1}}""",
        ),
        (
            """parents' "api_key": "k-1", kids': [1]""",
            f"""parents' "api_key": "{MASK}", kids': [1]""",
        ),
        (
            """{"note": "Bob's", "token": "t-1", "x": "the kids': [1]"}""",
            f"""{{"note": "Bob's", "token": "{MASK}", "x": "the kids': [1]"}}""",
        ),
    ],
    ids=["before an object", "before a key", "in a value"],
)
def test_a_stray_apostrophe_never_hides_a_secret_key(line, shown):
    """A single quote that opens no key (an apostrophe: "the users'") and a later one before a
    colon read as one quoted key, not a secret, whose span swallowed the real secret key inside:
    its value was shown in clear.  A quoted key that is no secret's now lets the search go on just
    after its opening quote."""
    assert mask_free_text(line) == shown


def test_the_target_s_quoted_secret_is_masked():
    from mcp_ref.inspector.live import shown_target

    assert shown_target("env OPENAI_API_KEY='sk-1' python server.py") == (
        f"env OPENAI_API_KEY='{MASK}' python server.py"
    )
    assert shown_target('env GITHUB_TOKEN="ghp-1" python server.py') == (
        f'env GITHUB_TOKEN="{MASK}" python server.py'
    )


def test_the_common_names_of_secrets_are_masked_in_the_target_and_in_free_text():
    # AWS's, Django's, Stripe's, MySQL's and Google's names for their secrets.
    from mcp_ref.inspector.live import shown_target

    for name in (
        "AWS_SECRET_ACCESS_KEY",
        "SECRET_KEY",
        "STRIPE_SECRET_KEY",
        "MYSQL_PWD",
        "GOOGLE_CREDENTIALS",
        "GPG_PASSPHRASE",
    ):
        assert shown_target(f"env {name}=s3cr3t python s.py") == f"env {name}={MASK} python s.py"
    line = "{'aws_secret_access_key': 'wJalr', 'github_token': 'ghp_1'}"
    assert "wJalr" not in mask_text(line) and "ghp_1" not in mask_text(line)
    # pwd is a password's name as often as a shell's directory: masked everywhere
    assert "hunter2" not in mask_text("user=ada&pwd=hunter2")
    assert mask_json({"user": "ada", "pwd": "hunter2"}) == {"user": "ada", "pwd": MASK}
    # the plurals too
    for name in ("secrets", "passwords", "api_keys", "client_secrets", "private_keys"):
        assert secret_key(name), name
    assert "hunter2" not in mask_text('{"secrets": {"db": "hunter2"}, "x": 1}')
    assert not secret_key("maxTokens")  # a number of tokens


def test_a_json_rpc_error_code_is_no_secret():
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}}
    assert mask_json(error) == error


def test_a_form_encoded_token_request_is_masked():
    body = (
        "grant_type=authorization_code&code=SplxlOBeZQQYbYS6WxSbIA"
        "&redirect_uri=http%3A%2F%2F127.0.0.1%3A5000%2Fcallback"
        "&client_id=mcp-ref&client_secret=s3cr3t&code_verifier=dBjftJeZ4CVP"
    )
    shown = mask_text(body, "application/x-www-form-urlencoded")
    for secret in ("SplxlOBeZQQYbYS6WxSbIA", "s3cr3t", "dBjftJeZ4CVP"):
        assert secret not in shown
    assert "grant_type=authorization_code" in shown
    assert "client_id=mcp-ref" in shown
    assert f"code={MASK}" in shown
    # read as a form without a Content-Type too (a body in an exported record)
    assert "s3cr3t" not in mask_text(body)


def test_a_token_response_body_is_masked():
    body = json.dumps({"access_token": "AT", "token_type": "Bearer", "refresh_token": "RT"})
    shown = json.loads(mask_text(body, "application/json"))
    assert shown == {"access_token": MASK, "token_type": "Bearer", "refresh_token": MASK}


def test_text_that_is_neither_json_nor_a_form_loses_what_reads_as_a_secret():
    assert mask_text("<html>502 Bad Gateway</html>") == "<html>502 Bad Gateway</html>"
    assert mask_text('{"a": 1}') == '{"a": 1}'  # nothing to mask: the text unchanged
    line = 'sent Bearer eyJ0.abc-def to x; got {"access_token": "AT\\"1", "scope": "s"} exit code=1'
    assert mask_free_text(line) == (
        f'sent Bearer {MASK} to x; got {{"access_token": "{MASK}", "scope": "s"}} exit code=1'
    )
    assert mask_free_text("password=hunter2 user=ada") == f"password={MASK} user=ada"
    assert mask_free_text("basic authentication, token refreshed") == (
        "basic authentication, token refreshed"
    )
    # a token of letters alone, in mixed case, is a credential; a lower-case word is not
    assert mask_free_text("got bearer AbCdEfGhIjKlMn") == f"got bearer {MASK}"
    assert mask_free_text("Basic Authentication") == f"Basic {MASK}"
    assert mask_free_text("Basic authentication") == "Basic authentication"
    assert mask_free_text("cannot reach https://ada:pw1@h:8/mcp, or ftp://b@c/") == (
        f"cannot reach https://{MASK}@h:8/mcp, or ftp://{MASK}@c/"
    )
    assert mask_free_text("write to ada@example.com") == "write to ada@example.com"
    assert (
        mask_text("<p>Authorization: Bearer abcdef123</p>")
        == f"<p>Authorization: Bearer {MASK}</p>"
    )


@pytest.mark.parametrize(
    "url, shown",
    [
        ("https://user:pw@example.com/mcp", f"https://{MASK}@example.com/mcp"),
        (
            "http://127.0.0.1:8000/cb?code=abc&state=xyz",
            f"http://127.0.0.1:8000/cb?code={MASK}&state=xyz",
        ),
        ("http://h/mcp?access_token=abc&x=1", f"http://h/mcp?access_token={MASK}&x=1"),
        ("http://h/mcp?x=1", "http://h/mcp?x=1"),
        ("http://h/cb#access_token=abc&state=s", f"http://h/cb#access_token={MASK}&state=s"),
        ("http://h/docs#section-2", "http://h/docs#section-2"),
        ("http://h/mcp?", "http://h/mcp?"),  # as written when nothing is masked
        ("http://h/mcp#", "http://h/mcp#"),
    ],
)
def test_urls_lose_their_userinfo_and_secret_query_values(url, shown):
    assert mask_url(url) == shown


def test_a_url_in_json_loses_its_credentials_under_any_key():
    """A string that is a URL whole (a resource's ``uri``, a ``resource_link``, a root) was kept
    as sent, its userinfo and ``?token=`` with it.  Now it is masked as a URL is, under any key
    and at any depth; every other string, and a URL with nothing secret in it, stays as sent."""
    uri = "https://user:secret@host/x?access_token=AT&page=2"
    shown = f"https://{MASK}@host/x?access_token={MASK}&page=2"
    message = {
        "params": {"uri": uri},
        "result": {
            "contents": [{"uri": "file:///a?token=T", "text": "t"}],
            "content": [{"type": "resource_link", "uri": uri, "name": "mailto:ada@example.com"}],
        },
        "plain": ["https://host/x?", "note: token=1", "urn:x:y"],
    }
    assert mask_json(message) == {
        "params": {"uri": shown},
        "result": {
            "contents": [{"uri": f"file:///a?token={MASK}", "text": "t"}],
            "content": [{"type": "resource_link", "uri": shown, "name": "mailto:ada@example.com"}],
        },
        "plain": ["https://host/x?", "note: token=1", "urn:x:y"],
    }
    assert mask_json(uri) == shown
    assert uri in hidden_strings(message) and "https://host/x?" not in hidden_strings(message)


def test_a_url_inside_longer_text_loses_its_userinfo_and_secret_query_values():
    """Only a string that was a URL whole was masked as one: a log line's or an error message's URL
    kept its ``?code=`` and ``#token=`` (its userinfo too, in a JSON string).  Each URL in a text
    is masked as a URL is now, in free text and in JSON strings, a JSON-RPC error's ``code``
    kept; its end (a quote, a full stop) stays as written."""
    line = 'see https://u:p@h/x?access_token=abc&code=xyz#token=q, or "ftp://h/?api_key=k".'
    shown = (
        f"see https://{MASK}@h/x?access_token={MASK}&code={MASK}#token={MASK}, "
        f'or "ftp://h/?api_key={MASK}".'
    )
    assert mask_free_text(line) == shown
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": line}}
    assert mask_json(error) == {**error, "error": {"code": -32000, "message": shown}}
    assert mask_json(["failed: see:https://ann:pw@h/"]) == [f"failed: see:https://{MASK}@h/"]
    assert line in hidden_strings(error)
    assert mask_free_text("docs at https://h/x?page=2.") == "docs at https://h/x?page=2."


@pytest.mark.parametrize("before", ["1.", "9", "-", "+", "2.0-"])
def test_a_url_right_after_a_digit_a_dot_a_plus_or_a_dash_loses_its_secrets(before):
    """A URL written right after a digit, ``.``, ``+`` or ``-`` (a numbered list's
    ``1.https://...``) was read as no URL: in a JSON string its userinfo and its query's secrets
    were shown, in free text its ``?code=``.  It is masked as any URL is now, what comes before it
    kept."""
    url = "https://u:p@h/cb?access_token=abc&code=xyz"
    shown = f"https://{MASK}@h/cb?access_token={MASK}&code={MASK}"
    assert mask_json({"m": f"see {before}{url}"}) == {"m": f"see {before}{shown}"}
    assert mask_json([f"{before}{url}"]) == [f"{before}{shown}"]
    assert mask_free_text(f"see {before}{url}") == f"see {before}{shown}"


def test_an_authorization_code_in_a_query_without_a_host_is_masked_in_free_text():
    """An access log's request line (``"GET /callback?code=... HTTP/1.1" 200``: a server's own
    OAuth callback, logged to stderr) and a token request's body in a log line showed the
    authorization code: ``code`` was masked in a URL only.  After ``?``, ``&`` or ``#`` it is
    masked now; ``exit code=1`` stays."""
    line = '127.0.0.1 - "GET /callback?code=abc&state=s HTTP/1.1" 200; exit code=1'
    shown = f'127.0.0.1 - "GET /callback?code={MASK}&state=s HTTP/1.1" 200; exit code=1'
    assert mask_free_text(line) == shown
    body = "sent grant_type=authorization_code&code=abc&code_verifier=v"
    assert mask_free_text(body) == (
        f"sent grant_type=authorization_code&code={MASK}&code_verifier={MASK}"
    )


def test_a_secret_header_written_in_text_loses_its_value_whatever_its_scheme():
    """A header line in a server's output (``curl -v``, ``http.client``'s debug ``send: b'...'``)
    showed what no scheme word named or what read as no token: ``Authorization: token ghp_...``,
    a short or lower-case bearer token, ``X-Api-Key``, a cookie.  A secret header's value is
    masked to the line's end now, as a header's is, its scheme word or its cookies' names kept."""
    lines = {
        "> Authorization: token ghp_1": f"> Authorization: token {MASK}",
        "authorization: Bearer abc123": f"authorization: Bearer {MASK}",
        "-H 'Proxy-Authorization: Basic secretpass'": f"-H 'Proxy-Authorization: Basic {MASK}'",
        "send: b'GET / HTTP/1.1\\r\\nX-Api-Key: k-1\\r\\nCookie: sid=s-1; lang=en\\r\\n'": (
            f"send: b'GET / HTTP/1.1\\r\\nX-Api-Key: {MASK}\\r\\nCookie: sid={MASK}; "
            f"lang={MASK}\\r\\n'"
        ),
        "<p>Set-Cookie: sid=s-1; Path=/</p>": f"<p>Set-Cookie: sid={MASK}; Path=/</p>",
        "Accept: */*, My-Cookie-Jar: full": "Accept: */*, My-Cookie-Jar: full",
    }
    for line, shown in lines.items():
        assert mask_free_text(line) == shown
        assert mask_free_text(shown) == shown  # masked again, it stays


def test_a_url_s_userinfo_is_masked_when_json_escapes_its_slashes():
    """A JSON log line whose encoder escapes ``/`` (PHP's ``json_encode``) writes a URL
    ``mysql:\\/\\/app:pw@db``: its password was shown, ``://`` being what a userinfo was read
    after.  It is masked now, its slashes left as written, in a text cut short too."""
    line = '{"DATABASE_URL":"mysql:\\/\\/app:pw@db\\/app","cb":"https:\\/\\/h\\/cb?code=abc"}'
    assert mask_free_text(line) == (
        f'{{"DATABASE_URL":"mysql:\\/\\/{MASK}@db\\/app","cb":"https:\\/\\/h\\/cb?code={MASK}"}}'
    )
    assert mask_free_text("to mysql:\\/\\/app:p", cut_short=True) == f"to mysql:\\/\\/{MASK}"


def test_a_secret_under_a_key_node_leaves_unquoted_is_masked():
    """Node writes an object it logs with its keys unquoted (a server's ``console.error("got",
    tokens)``: ``{ access_token: 'ya29...', ... }``): the tokens were shown, a key being read
    only when quoted.  A bare secret key's string is masked now; other keys, a value that is no
    string and a word before a colon in a sentence stay."""
    line = (
        "got { access_token: 'ya29.a0', refresh_token: \"1//0g\", token_type: 'Bearer', "
        "expiry_date: 1700000000000, scope: 's' }"
    )
    assert mask_free_text(line) == (
        f"got {{ access_token: '{MASK}', refresh_token: \"{MASK}\", token_type: 'Bearer', "
        "expiry_date: 1700000000000, scope: 's' }"
    )
    assert mask_free_text("note: 'x', token: 7") == "note: 'x', token: 7"


def test_an_api_key_passed_as_key_in_a_query_is_masked():
    """Google's APIs take their API key as ``?key=`` (``...:generateContent?key=AIza...``), and a
    failed request's error names its URL (``403 Client Error: Forbidden for url: ...``): the key
    was shown.  ``key`` in a query or a form is masked now, as ``code`` is; in JSON it stays."""
    line = "403 Client Error: Forbidden for url: https://h/v3/search?part=snippet&key=AIzaSy1"
    assert mask_free_text(line) == line.replace("AIzaSy1", MASK)
    assert mask_free_text("GET /v1/x?key=AIzaSy1 HTTP/1.1") == f"GET /v1/x?key={MASK} HTTP/1.1"
    assert mask_json({"key": "ArrowDown"}) == {"key": "ArrowDown"}


def test_a_redirect_s_location_loses_its_secrets():
    """A 3xx's ``Location`` (an authorization server's redirect back) is masked as a URL."""
    headers = mask_headers({"Location": "http://127.0.0.1:9/cb?code=abc&state=s", "X": "1"})
    assert headers == [["Location", f"http://127.0.0.1:9/cb?code={MASK}&state=s"], ["X", "1"]]


def test_secret_key_names_are_matched_loosely():
    for name in (
        "access_token",
        "accessToken",
        "ACCESS-TOKEN",
        "client_secret",
        "Password",
        "id_token",
    ):
        assert secret_key(name)
    for name in ("code", "name", "tokens_used_count", "description"):
        assert not secret_key(name)
    assert secret_key("code", form=True)


def test_a_key_that_ends_in_a_secret_s_name_is_a_secret():
    """``github_token``, ``openaiApiKey``, ``db_password``, ``webhook-secret``: the kind of
    secret is the key's last word; ``progressToken`` (the protocol's own) and ``maxTokens`` are not."""
    for name in ("github_token", "auth_token", "openaiApiKey", "db_password", "webhook-secret"):
        assert secret_key(name), name
    for name in ("progressToken", "maxTokens", "token_type", "secretary", "passwords_allowed"):
        assert not secret_key(name), name
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "push",
            "arguments": {"github_token": "ghp_abc", "repo": "x"},
            "_meta": {"progressToken": "p-1"},
        },
    }
    shown = mask_json(message)["params"]
    assert shown["arguments"] == {"github_token": MASK, "repo": "x"}
    assert shown["_meta"] == {"progressToken": "p-1"}


#: Free text of a megabyte, shaped to make a backtracking pattern read it again from each of its
#: quotes or words: a quote each escaped (``'\'\'...``, ``"\"\"...``), words joined by dots
#: (``a.a.a...``, each a URL scheme's start), and keys of every kind before a value.
MEGABYTE_SHAPES = {
    "escaped apostrophes": "'\\" * 500_000,
    "escaped quotes": '"\\' * 500_000,
    "dotted words": "a." * 500_000,
    "dashed words": "a-" * 500_000,
    "words after a digit": "1.a" * 330_000,
    "secret headers without a value": "Cookie:\\n" * 125_000,
    "quoted keys before objects": "'a': {" * 170_000,
    "bare keys before strings": "a: 'b', " * 125_000,
    "bare secret keys, unclosed": "token: '\\" * 110_000,
    "a long key then many": "'" + "a" * 500_000 + "': {" + "'b': {" * 80_000,
    "a secret key's array of escaped apostrophes": 'log "api_key": [' + "'\\" * 500_000,
    "a key of each quote, unclosed": '"' + "a'" * 500_000,
    "urls without end": "a://b:" * 170_000,
    "escaped urls without end": "a:\\/\\/b:" * 120_000,
    "urls with secrets": "see https://u:p@h/x?token=a&b=c " * 30_000,
    "escaped pairs": '\\"a\\":\\"' * 125_000,
    "an escaped secret never closed": '\\"password\\":\\"' + "x" * 1_000_000,
}


def test_a_secret_in_json_written_inside_a_string_is_masked():
    # A log line's field that holds JSON, written with escaped quotes: its secret's value went
    # through in the clear.  Escaped keys that name no secret are kept.
    go = 'level=debug body="{\\"password\\":\\"PW-1\\"}"'
    record = '{"level": "debug", "body": "{\\"api_key\\": \\"KEY-2\\", \\"user\\": \\"ada\\"}"}'
    assert mask_free_text(go) == f'level=debug body="{{\\"password\\":\\"{MASK}\\"}}"'
    shown = mask_free_text(record)
    assert "KEY-2" not in shown and '\\"user\\": \\"ada\\"' in shown
    assert mask_free_text('cut: \\"token\\": \\"abc') == f'cut: \\"token\\": \\"{MASK}'


@pytest.mark.parametrize("shape", MEGABYTE_SHAPES)
def test_free_text_of_a_megabyte_of_any_shape_is_masked_in_bounded_time(shape):
    """Masking reads free text in time that grows as its length does: each shape of a megabyte is
    masked by a child process within the tests' bound of a blocking wait (a child: a pattern
    match holds the interpreter, so no thread of this process could be timed out).  A quoted key
    read from each quote to the end of the text took 25 s for 64 KB of ``'\\'\\'...``, and a
    server's line of that shape froze the inspector."""
    import subprocess
    import sys

    from conftest import WAIT

    program = (
        "import sys\n"
        "from mcp_ref.inspector.masking import mask_free_text\n"
        "text = sys.stdin.read()\n"
        "sys.stdout.write(str(len(mask_free_text(text))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program],
        input=MEGABYTE_SHAPES[shape],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 0


@pytest.mark.parametrize(
    "kept, shown",
    [
        ("retrying with Bearer eyJh", f"retrying with Bearer {MASK}"),
        ("auth: DPoP abc", f"auth: DPoP {MASK}"),
        ("fetching https://user:pa", f"fetching https://{MASK}"),
        ('config {"api_key": "sk-li', f'config {{"api_key": "{MASK}"'),
        ("API_KEY=sk-li", f"API_KEY={MASK}"),
        ("fetching https://example.com/pa", "fetching https://example.com/pa"),
        ("Bearer of good news", "Bearer of good news"),
    ],
)
def test_the_end_of_a_text_cut_short_never_shows_a_secret_the_cut_split(kept, shown):
    """A text cut to what is shown before it is masked (a server's line of a megabyte): its last
    word, after a scheme word or a URL's ``//``, may be the start of a credential or a userinfo
    too short to read as one, and is masked; a path after a host, or a sentence whose last word
    is whole, is not."""
    assert mask_free_text(kept, cut_short=True) == shown


def test_a_quoted_key_escaped_or_long_still_masks_what_follows_it():
    """A long key that names no secret leaves the secret key after it masked; so does a key with
    an escaped quote in it."""
    long_key = "k" * 300
    line = f'{{"{long_key}": "v", "password": "p4ss"}}'
    assert mask_free_text(line) == f'{{"{long_key}": "v", "password": "{MASK}"}}'
    line = "{'it\\'s': 'x', 'api_key': 'k-1'}"
    assert mask_free_text(line) == f"{{'it\\'s': 'x', 'api_key': '{MASK}'}}"


@pytest.mark.parametrize(
    "line",
    [
        'config {"' + "x" * 300 + '_password": "hunter2"}',
        "config {'" + "x" * 300 + "_api_key': 'hunter2'}",
        "connecting to " + "b" * 33 + "://user:hunter2@host/",
        "connecting to com.example.app.identifier.longname.oauth://user:hunter2@host/",
    ],
)
def test_a_secret_is_masked_after_a_key_or_a_url_scheme_of_any_length(line):
    """A key is read whole, as :func:`mask_json` reads it (a key of 300 characters ending in
    ``_password`` names a secret), and a URL's userinfo is masked whatever its scheme's length
    (RFC 3986 §3.1 bounds none): read to 256 and to 32 characters, both were shown."""
    assert "hunter2" not in mask_free_text(line)
    assert MASK in mask_free_text(line)


@pytest.mark.parametrize("kept", ["retry with Bearer ab/", "retry with Bearer eyJ/a", "Basic dX+/"])
def test_a_credential_cut_short_is_masked_whatever_token68_characters_it_holds(kept):
    """A credential's start that the cut left (a token68: ``/`` is one of its characters, RFC 7235
    §2.1) is masked to the end of the text."""
    assert mask_free_text(kept, cut_short=True).endswith(f" {MASK}")
