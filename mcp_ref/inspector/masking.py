"""Secrets masked before the inspector shows or exports anything: headers, JSON, forms, URLs.

What is masked (the value replaced by :data:`MASK`, the kind of secret kept where there is one):

- headers (:data:`SECRET_HEADERS`): ``Authorization`` and ``Proxy-Authorization`` keep their
  scheme word (``Bearer ••••••``, ``DPoP ••••••``, ``Basic ••••••``); ``Cookie`` keeps each
  cookie's name (``session=••••••``); ``Set-Cookie`` its name and attributes (``sid=••••••;
  Path=/; HttpOnly``); ``DPoP``, ``X-Api-Key``, ``Api-Key`` and ``X-Auth-Token`` the mask alone,
  and so does a header named as a secret key (below), bare or after ``Mcp-Param-`` or ``X-``
  (a 2026-07-28 tool's ``x-mcp-header`` argument: ``Mcp-Param-Api-Key``); an ``Mcp-Param-*``
  header of any name, and ``Mcp-Name``, is masked too when it carries a string the body's masking
  hides (:func:`hidden_strings`: ``password`` declared ``x-mcp-header: Pw`` sends ``Mcp-Param-Pw``;
  a ``resources/read`` of a URI with a password sends it in ``Mcp-Name``);
- JSON (:func:`mask_json`), at any depth: the value of every key whose name, lower-cased and with
  ``_`` and ``-`` left out, is in :data:`SECRET_KEYS` (``access_token``, ``refreshToken``,
  ``client_secret``, ``code_verifier``, ``password``, ``token``, ``api_key`` ...) or ends in one
  of :data:`SECRET_ENDINGS` (``github_token``, ``openaiApiKey``; not ``progressToken``); a string that
  reads as an ``Authorization`` value (``Bearer x``) under any such key keeps its scheme word;
  and a URL in a string (the string whole: a resource's ``uri``, a link; or one in its text: an
  error message's), under any key, as a URL is masked (:func:`mask_url`, below:
  ``https://••••••@host/x``, ``?token=••••••``);
- form-encoded bodies (an OAuth token request: ``grant_type=...&code=...&code_verifier=...``)
  and URL queries (:func:`mask_url`): the same keys, ``code`` (an authorization code) and ``key``
  (an API key: ``?key=AIza...``), and a URL's userinfo (``https://••••••@host/``); ``code`` in an
  OAuth exchange's JSON too;
- SSE data and other text: as JSON when it parses (at any depth: JSON nested deeper than the
  session reads is read and written again without recursing), else as a form when it reads as one;
- text of no known shape (a server's stderr line, a line that is no JSON, an HTML error page):
  what reads as a secret (:func:`mask_free_text`): ``Bearer xyz``, a secret header's line
  (``Authorization: token xyz``, ``X-Api-Key: xyz``, ``Cookie: sid=...``), a quoted secret key's
  string, array or object (``"access_token": "..."``, ``"api_key": [...]``, a Python dict's
  ``{'api_key': '...'}``), an unquoted one's string (Node's ``{ access_token: '...' }``),
  ``client_secret=...`` with its value bare or quoted (``API_KEY='...'``, ``GITHUB_TOKEN="..."``),
  ``code=...`` after ``?`` or ``&`` (an access log's ``GET /callback?code=...``), a URL masked as
  a URL is (its userinfo, ``?code=``).

JSON numbers and booleans are never secrets (a JSON-RPC error's ``code`` stays).  Masking never
raises.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qsl, unquote_plus, urlsplit, urlunsplit

from ..workbench.deep_json import dumps as dumps_deep, loads as loads_deep, too_deep

#: What stands where a secret was.
MASK = "••••••"
#: Header names (lower case) whose values are secrets.
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
        "dpop",
        "x-api-key",
        "api-key",
        "x-auth-token",
    }
)
#: Key names (lower case, ``_`` and ``-`` left out) whose values are secrets, in JSON, forms and queries.
SECRET_KEYS = frozenset(
    {
        "accesstoken",
        "refreshtoken",
        "idtoken",
        "token",
        "clientsecret",
        "codeverifier",
        "password",
        "passwd",
        "secret",
        "apikey",
        "authorization",
        "proxyauthorization",
        "clientassertion",
        "assertion",
        "subjecttoken",
        "actortoken",
        "devicecode",
        "registrationaccesstoken",
        "privatekey",
        "cookie",
        "dpop",
    }
)
#: The last words that make a key a secret's (``github_token``, ``openaiApiKey``, ``db_password``,
#: ``AWS_SECRET_ACCESS_KEY``, Django's ``SECRET_KEY``, ``MYSQL_PWD``, ``GOOGLE_CREDENTIALS``), and
#: their plurals (``client_secrets``, ``api_keys``; not ``tokens``: ``maxTokens`` and the usage
#: counts of a sampling result are numbers of tokens).  A shell's ``PWD`` (a directory) is masked
#: too: ``pwd`` is as often a password's name, and hiding a path loses nothing.
SECRET_ENDINGS = ("token",) + tuple(
    ending + plural
    for ending in (
        "secret",
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "apikey",
        "privatekey",
        "secretkey",
        "accesskey",
        "credential",
    )
    for plural in ("", "s")
)
#: Keys that end so and are no secret: the protocol's own progress token.
NOT_SECRET_KEYS = frozenset({"progresstoken"})
#: Keys that are secrets in a form or a URL query only (in JSON, ``code`` is a JSON-RPC error code,
#: or a tool's argument; ``key``, a map's), and in an OAuth exchange's JSON (:func:`mask_json`'s
#: ``oauth``): an authorization code, and an API key (Google's APIs take theirs as ``?key=``).
FORM_ONLY_KEYS = frozenset({"code", "key"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*)\s+\S")
#: The authentication schemes whose word is kept when a JSON value holds a credential.
KNOWN_SCHEMES = frozenset(
    {"bearer", "basic", "dpop", "digest", "negotiate", "token", "mac", "ntlm"}
)


def secret_key(name: str, form: bool = False) -> bool:
    """True when a JSON key (or, ``form``, a form or query key) names a secret: one of
    :data:`SECRET_KEYS`, or one ending in one of :data:`SECRET_ENDINGS` (but
    :data:`NOT_SECRET_KEYS`)."""
    key = name.lower().replace("_", "").replace("-", "")
    if key in SECRET_KEYS or (form and key in FORM_ONLY_KEYS):
        return True
    return key.endswith(SECRET_ENDINGS) and key not in NOT_SECRET_KEYS


def mask_credential(value: str, any_scheme: bool = False) -> str:
    """A credential masked, its scheme word kept: ``Bearer abc`` -> ``Bearer ••••••``.

    The first word is kept when it is one of :data:`KNOWN_SCHEMES` (or any word, ``any_scheme``:
    an ``Authorization`` header always starts with its scheme); else all of it is masked (a
    password with a space in it keeps none of its words)."""
    match = _SCHEME.match(value.strip())
    if match and (any_scheme or match.group(1).lower() in KNOWN_SCHEMES):
        return f"{match.group(1)} {MASK}"
    return MASK


#: Prefixes left out of a header's name before it is read as a key name: a 2026-07-28 tool's
#: ``x-mcp-header`` parameter (``Mcp-Param-Api-Key``: an argument the body masks) and ``X-``.
HEADER_PREFIXES = ("mcp-param-", "x-")


def secret_header(name: str) -> bool:
    """True when header ``name`` carries a secret: one of :data:`SECRET_HEADERS`, or, past a
    prefix of :data:`HEADER_PREFIXES` or none, a secret key's name (``Mcp-Param-Token``,
    ``X-Access-Token``)."""
    lower = name.lower()
    if lower in SECRET_HEADERS:
        return True
    for prefix in HEADER_PREFIXES:
        if lower.startswith(prefix):
            lower = lower[len(prefix) :]
            break
    return secret_key(lower)


def mask_header(name: str, value: str) -> str:
    """``value`` of header ``name``, masked when the header carries a secret."""
    lower = name.lower()
    if lower in ("location", "content-location"):
        return mask_url(value)  # a redirect may carry a code or a token in its query or fragment
    if not secret_header(lower):
        return value
    if lower in ("authorization", "proxy-authorization"):
        return mask_credential(value, any_scheme=True)
    if lower == "cookie":
        names = [part.split("=", 1)[0].strip() for part in value.split(";") if part.strip()]
        return "; ".join(f"{cookie}={MASK}" for cookie in names) or MASK
    if lower == "set-cookie":
        first, _, attributes = value.partition(";")
        cookie = first.split("=", 1)[0].strip()
        return f"{cookie}={MASK}" + (f";{attributes}" if attributes else "")
    return MASK


def mask_headers(headers) -> list[list[str]]:
    """``[[name, value], ...]`` with every secret value masked (``headers``: pairs or a mapping)."""
    pairs = headers.items() if hasattr(headers, "items") else headers
    return [[str(name), mask_header(str(name), str(value))] for name, value in pairs]


def mask_json(value: Any, oauth: bool = False) -> Any:
    """A copy of a parsed JSON value with every secret key's value masked, at any depth.  Walked
    with a stack, never recursing: a value nested as deep as the parser takes is masked too.

    ``oauth``: the body of an OAuth exchange (a token request or response), where ``code`` is an
    authorization code: masked as in a form (a number under it, an error's code, stays)."""
    root: list[Any] = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]  # (the copy holding an item, the item's key)
    while stack:
        parent, key = stack.pop()
        item = parent[key]
        if isinstance(item, dict):
            copy = parent[key] = dict(item)
            for name, sub in item.items():
                if secret_key(str(name), form=oauth):
                    copy[name] = _masked_value(sub)
                else:
                    stack.append((copy, name))
        elif isinstance(item, list):
            items = parent[key] = list(item)
            stack.extend((items, index) for index in range(len(items)))
        elif isinstance(item, str):
            parent[key] = mask_url_string(item)
    return root[0]


def hidden_strings(value: Any) -> set[str]:
    """The strings :func:`mask_json` hides in a parsed JSON value: each string at any depth under
    a secret key, and each URL it masks.  A 2026-07-28 ``Mcp-Name`` or ``Mcp-Param-*`` header
    carrying one of them is masked as well
    (:func:`mcp_ref.inspector.http_view.masked_headers`).  Walked with a stack: never raises."""
    found: set[str] = set()
    stack: list[tuple[Any, bool]] = [(value, False)]
    while stack:
        item, hidden = stack.pop()
        if isinstance(item, dict):
            stack.extend((sub, hidden or secret_key(str(key))) for key, sub in item.items())
        elif isinstance(item, list):
            stack.extend((sub, hidden) for sub in item)
        elif isinstance(item, str) and (hidden or mask_url_string(item) != item):
            found.add(item)
        elif hidden and isinstance(item, (int, float)):
            # a number travels as its decimal text; a boolean as true or false (2026-07-28
            # streamable-http §Value Encoding, "Type conversion")
            found.add(json.dumps(item))
    return found


def _masked_value(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return mask_credential(value)
    return MASK


def mask_form(text: str) -> str:
    """A form-encoded body (``a=1&b=2``) with the values of secret keys (and ``code``, ``key``)
    masked; every other pair is kept as it was sent (an SSE ``endpoint`` event's URL stays that
    URL)."""
    pairs = []
    for pair in text.split("&"):
        key, equals, _value = pair.partition("=")
        secret = equals and secret_key(unquote_plus(key), form=True)
        pairs.append(f"{key}={MASK}" if secret else pair)
    return "&".join(pairs)


def mask_url(url: str) -> str:
    """``url`` with its userinfo and the values of secret keys (and ``code``, ``key``) masked, in
    its query and in a fragment of the same form (an implicit grant's ``#access_token=...``);
    ``url`` as it is when none is there."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rpartition('@')[2]}"
    query = parts.query
    if query and any(secret_key(key, form=True) for key, _ in parse_qsl(query)):
        query = mask_form(query)
    fragment = parts.fragment
    if "=" in fragment and any(secret_key(key, form=True) for key, _ in parse_qsl(fragment)):
        fragment = mask_form(fragment)
    if (netloc, query, fragment) == (parts.netloc, parts.query, parts.fragment):
        return url  # as it was written: urlunsplit would drop an empty ``?`` or ``#``
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


#: A string that is a URL whole: a scheme (RFC 3986 §3.1), then no whitespace.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S*")


#: A URL inside longer text (a log line, an error message): a scheme, read from the start of its
#: run of scheme characters and once (possessive: a long run is not read again from each of its
#: characters), past the digits, dots, ``+`` and ``-`` before its first letter (kept: ``1.https://``
#: is ``1.`` then a URL), then ``://`` and what follows up to a space, a quote or an angle
#: bracket, less the punctuation that may end a sentence.
_URL_IN_TEXT = re.compile(
    r"(?<![A-Za-z0-9+.-])([0-9+.-]*+)([A-Za-z][A-Za-z0-9+.-]*+://[^\s\"'<>`]*[^\s\"'<>`.,;:!?)\]}])"
)


def mask_url_string(text: str) -> str:
    """``text`` masked as :func:`mask_url` masks a URL when it is one whole, and each URL in it
    (``see https://u:p@h/x?access_token=...``); as it is when it holds none."""
    if _URL.fullmatch(text):
        text = mask_url(text)
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda url: url.group(1) + mask_url(url.group(2)), text)


#: A credential in free text: a scheme word, then a token68 of 8 characters or more that is not a
#: plain lower-case word ("Basic usage" stays; "Bearer eyJ0eXAi..." does not).
#: The scheme word in any case; the word after it lower-case only (a token of letters alone may
#: mix cases: ``Bearer AbCdEfGhIjKl`` is a credential).
_CREDENTIAL = re.compile(
    r"\b((?i:Bearer|DPoP|Basic))(\s+)(?![a-z]+(?![A-Za-z0-9._~+/=-]))[A-Za-z0-9._~+/=-]{8,}"
)
#: A URL's userinfo in free text (``https://user:password@host``): what is between ``//`` and ``@``,
#: after a scheme of any length (RFC 3986 §3.1 sets none).  The scheme is not read: read from each
#: word's start, each word of a long line of ``a.a.a.`` was read to the end of the line (time
#: growing with the square of its length), and bounded, a longer scheme's userinfo was shown.
#: Its slashes may be escaped, as JSON may write them (PHP's ``json_encode``: ``"https:\/\/..."``).
_USERINFO = re.compile(r"(:\\?/\\?/)[^\s/?#@]++@")
#: A secret header written as an HTTP message's line in text (``curl -v``'s ``> Authorization:
#: token ghp_...``, ``http.client``'s ``send: b'...\r\nX-Api-Key: k\r\n'``): its value, to the
#: line's end, a backslash (an escaped line break, after which a name starts too), a quote or a
#: ``<``, masked as :func:`mask_header` masks it (a scheme word or a cookie's name kept).
_HEADER_IN_TEXT = re.compile(
    r"(?:(?<![\w-])|(?<=\\n))(?i:(" + "|".join(sorted(SECRET_HEADERS)) + r"))"
    r"(:[ \t]*+[\"']?)([^\r\n\\\"'<]+)"
)
#: The end of a text cut short (:func:`mask_free_text`) that may be a secret the cut split: a
#: credential's start after its scheme word (a token68, RFC 7235 §2.1: ``/`` is one of its
#: characters), or what follows a URL's ``//`` (its userinfo's start).
_CUT_SECRET = re.compile(
    r"(\b(?i:Bearer|DPoP|Basic)\s+)[A-Za-z0-9._~+/=-]+\Z|(:\\?/\\?/)[^\s/?#@]+\Z"
)
#: A quoted key (any JSON string, escaped, of any length; or a Python repr's single-quoted one,
#: ``{'api_key': '...'}``) and its colon, before a value that may be a secret: a string, an array
#: or an object (a number, a boolean or null never is).
#: Read in time linear in the text's length, whatever it holds: a key opens at a quote no backslash
#: escapes and ends at the first quote of its kind no backslash escapes, read once (possessive);
#: no key read from one quote can hold another that opens one, so each character is read in at
#: most one key of each kind of quote.  Before, a line of ``'\'\'...`` was read from each of its
#: quotes to its end: 64 KB took 25 s; a key is read whole, as :func:`mask_json` reads it (one of
#: 300 characters ending in ``_password`` is a secret's).
_QUOTED_KEY = re.compile(r"""(?<!\\)(["'])((?:(?!\1)[^\\]|\\.)*+)\1(\s*:\s*)(?=["'\[{])""")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'')
#: A key left unquoted, as Node writes an object (``console.error(tokens)``: ``{ access_token:
#: 'ya29...' }``), and its colon, before a string: read from the start of its word, once.
_BARE_KEY = re.compile(r"""(?<![\w"'])()([A-Za-z_]\w*+)(\s*:\s*)(?=["'])""")
#: A string, a quote that starts none (the text is cut), a run of opening or of closing brackets.
#: An apostrophe that closes no string (``[it's]``) is read as one character
#: (:data:`_BRACKETS_NO_APOSTROPHE`, :func:`_value_end`).
_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*+"|\'(?:[^\'\\]|\\.)*+\'|[\'"]|[\[{]+|[\]}]+')
#: :data:`_BRACKETS` once an apostrophe closed no string: no later one can (each later one was
#: read as escaped, ``\\'``, and what follows it is read the same from either), so none is tried
#: as a string's start again.  Before, each apostrophe of ``['\\'\\'...`` was read to the end
#: of the text: time grew as the square of its length (64 KB took 7.8 s).
_BRACKETS_NO_APOSTROPHE = re.compile(r'"(?:[^"\\]|\\.)*+"|"|[\[{]+|[\]}]+')
#: ``key=value``, the value bare or quoted as a shell or a ``.env`` file quotes it
#: (``API_KEY='...'``, ``GITHUB_TOKEN="..."``; a quote never closed: to the end of the text).
_BARE_PAIR = re.compile(r"""\b([A-Za-z0-9_-]{1,64})=("(?:[^"\\]|\\.)*"?|'[^']*'?|[^&\s;,"']+)""")


#: A secret's key and string value in JSON written inside another string (a log line's
#: ``body="{\"password\": \"x\"}"``, a JSON log record whose field holds JSON): ``\"key\":
#: \"value\"``.  Linear: a key is at most 256 characters and holds no quote or backslash; a value
#: is read once, to the first escaped quote or the end of the text (cut short) (possessive).
_ESCAPED_PAIR = re.compile(r'(\\")([^"\\]{1,256})(\\"\s*:\s*\\")((?:[^"\\]|\\[^"])*+)(?=\\"|\Z)')


def mask_free_text(text: str, cut_short: bool = False) -> str:
    """Text of no known shape (a server's stderr line, a body that is neither JSON nor a form),
    with what reads as a secret masked: a credential after its scheme word (``Bearer xyz``), a
    secret header's value to its line's end (``X-Api-Key: xyz``), a quoted secret key's value
    (``"access_token": "..."``; an array or an object to its closing bracket, or to the end of
    text cut short; an unquoted key's string), a ``key=value`` of a secret key (and ``code`` in a
    query), a URL as :func:`mask_url` masks one (an error naming the target URL), and a secret's
    string value in JSON written inside another string (``\\"password\\": \\"...\\"``).

    ``cut_short``: ``text`` is what was kept of a longer text, cut before it is masked (masking
    takes time as the text's length does).  Its last word may then be the start of a secret the
    cut split, too short to read as one: after a scheme word (``Bearer ey``) or a URL's ``//``
    (``https://user:pa``) it is masked to the end."""
    text = mask_url_string(_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text))
    text = _HEADER_IN_TEXT.sub(lambda m: m[1] + m[2] + mask_header(m[1], m[3]), text)
    text = _CREDENTIAL.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)
    if cut_short:
        text = _CUT_SECRET.sub(lambda m: f"{m.group(1) or m.group(2)}{MASK}", text)
    text = _mask_quoted_values(_mask_quoted_values(text, _QUOTED_KEY), _BARE_KEY)
    text = _ESCAPED_PAIR.sub(_masked_escaped, text)
    return _BARE_PAIR.sub(_masked_pair, text)


def _masked_escaped(pair: re.Match) -> str:
    """An escaped ``\"key\": \"value\"`` with the value masked when the key names a secret."""
    if not secret_key(pair.group(2)):
        return pair.group(0)
    return f"{pair.group(1)}{pair.group(2)}{pair.group(3)}{MASK}"


def _masked_pair(pair: re.Match) -> str:
    """A ``key=value`` with the value masked when the key names a secret (its quotes kept), or is
    ``code`` in a query or a form (after ``?``, ``&`` or ``#``: an access log's ``GET
    /callback?code=...``); as it is when masked already (a URL's ``code=••••••#token=••••••``)."""
    in_query = pair.string[pair.start() - 1 : pair.start()] in ("?", "&", "#")
    if pair.group(2).startswith(MASK) or not secret_key(pair.group(1), form=in_query):
        return pair.group(0)
    quote = pair.group(2)[0] if pair.group(2)[0] in "\"'" else ""
    return f"{pair.group(1)}={quote}{MASK}{quote}"


def _mask_quoted_values(text: str, keys: re.Pattern) -> str:
    """``text`` with the value after each secret key ``keys`` finds masked: ``"api_key": ["k"]``,
    ``"pass\\u0077ord": "p"`` (the key read as JSON reads it) and ``"client_secret": {...}`` each
    become ``"••••••"`` (as :func:`mask_json` masks them); ``token: 'x'``, ``token: '••••••'``."""
    pieces = []
    at = 0  # the text up to here is in pieces
    search_from = 0
    while (match := keys.search(text, search_from)) is not None:
        if not secret_key(_key_name(match.group(2), match.group(1))):
            # its opening quote may be a stray apostrophe ("the users' {"password": ...") whose
            # span swallowed a secret key: the search goes on just after it
            search_from = match.start() + 1
            continue
        pieces.append(text[at : match.end()])
        quote = match.group(1) or text[match.end()]  # a bare key's: its string's
        pieces.append(f"{quote}{MASK}{quote}")
        at = search_from = _value_end(text, match.end())
    pieces.append(text[at:])
    return "".join(pieces)


def _key_name(written: str, quote: str) -> str:
    """A quoted key's name as JSON reads it (``pass\\u0077ord`` is ``password``); a
    single-quoted one (a Python repr) as written."""
    if quote == "'":
        return written
    try:
        return json.loads(f'"{written}"')
    except ValueError:
        return written


def _value_end(text: str, start: int) -> int:
    """Where the string, array or object at ``start`` ends: past its closing quote or bracket,
    or the end of ``text`` when it is cut short before."""
    if text[start] in "\"'":
        string = _STRING.match(text, start)
        return string.end() if string else len(text)
    depth = 0
    tokens = _BRACKETS
    at = start
    while (token := tokens.search(text, at)) is not None:
        piece = token.group()
        at = token.end()
        if piece == '"':  # a string never closed: what follows may all be inside the value
            break
        if piece == "'":  # an apostrophe that closes no string: none after it will
            tokens = _BRACKETS_NO_APOSTROPHE
        elif piece[0] in "[{":
            depth += len(piece)
        elif piece[0] in "]}":
            depth -= len(piece)
            if depth <= 0:  # a run closing more than the value: it ends inside the run
                return token.end() + depth
    return len(text)


def _looks_like_form(text: str) -> bool:
    return bool(re.fullmatch(r"[^\s=&]+=[^\s&]*(&[^\s=&]+=[^\s&]*)*", text.strip()))


def mask_text(text: str, content_type: str | None = None) -> str:
    """A body or an event's data as text, masked: a form when ``content_type`` says so; else JSON
    (re-encoded, secrets masked; at any depth) when it parses as an object or array (compact JSON
    with an ``=`` in it is still JSON), a form when it reads as one, else :func:`mask_free_text`."""
    masked = mask_known_shape(text, content_type)
    return mask_free_text(text) if masked is None else masked


def mask_known_shape(text: str, content_type: str | None = None) -> str | None:
    """:func:`mask_text` of a body of known shape (a form, JSON), masked whole: a secret key's
    value may lie anywhere in it; None for text of no known shape, which a caller showing only
    its start may cut before :func:`mask_free_text` reads it (``cut_short``)."""
    kind = (content_type or "").split(";")[0].strip().lower()
    if kind == "application/x-www-form-urlencoded":
        return mask_form(text)
    deep = too_deep(text)  # deeper than the session reads: read and written without recursing
    try:
        parsed = loads_deep(text) if deep else json.loads(text)
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, (dict, list)):
        masked = mask_json(parsed)
        if deep:  # compared and written without recursing, as json.dumps would write it
            written = dumps_deep(masked, separators=(", ", ": "))
            return text if written == dumps_deep(parsed, separators=(", ", ": ")) else written
        return text if masked == parsed else json.dumps(masked, ensure_ascii=False)
    if kind != "application/json" and _looks_like_form(text):
        return mask_form(text)
    if parsed is not None:  # a JSON scalar: nothing in it is named
        return text
    return None
