"""Issue 32, items 9 and 10 (the client side): answers whose framing lies, interim 1xx answers,
and answers nested 100,000 deep.

* Item 9: ``Content-Length: 0`` beside ``Transfer-Encoding: chunked`` and a cut chunk; a ``100
  Continue`` carrying ``Content-Length: 0`` before a partial 200; a last-chunk inside a longer
  chunk.  The client's former thin path (plain POSTs over ``http.client``, since removed) took each
  for a whole answer and read it on the caller's thread with no bound: ``call_tool(timeout=2)``
  never returned.  A call ends at its timeout, and the client drops the lying connection at the
  request's timeout even when nobody waits for the answer.
* Item 10: a ``103 Early Hints`` (or several 1xx) before the answer was taken for the answer
  ("unexpected Content-Type ''"); an answer nested 100,000 deep left its request waiting for its
  whole timeout (over stdio and HTTP).  Now the 1xx are skipped and the deep answer fails its
  request at once; the connection serves on.

Every HTTP request of the client goes through ``requests`` (its adapter reads answers with
``http_framing.FinalResponse``): these cases show its one stack handles them.  The servers are
raw sockets on 127.0.0.1 port 0 (:class:`RawHttp`) and, for stdio, a real subprocess
(``servers/deep_answer_server.py``); a SOCKS5 proxy is a real one too (:mod:`proxies`).
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest
import requests
from conftest import WAIT, outcome_within
from proxies import route_through
from test_hardening_client_bounds import RawHttp, answer, still_serves

from mcp_ref import Client, InvalidRequest, MCPRefError, RequestTimeout
from mcp_ref.http.framing import MAX_INTERIM
from mcp_ref.http.sse import sse_event

SERVERS = Path(__file__).parents[1] / "servers"
OK = {"content": [{"type": "text", "text": "ok"}]}
DEEP = b"[" * 100_000 + b"]" * 100_000
#: The timeout of a call that must fail at once: far past the bound its return is waited for.
LONG = 10 * WAIT

JSON_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
CONTINUE = b"HTTP/1.1 100 Continue\r\nContent-Length: 0\r\n\r\n"
LIES = {
    "length-0-beside-chunked": JSON_HEAD
    + b'Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n100\r\n{"jsonrpc": "2.0", ',
    "continue-with-length-0": CONTINUE + JSON_HEAD + b"Content-Len",
    "continue-then-a-cut-body": CONTINUE + JSON_HEAD + b"Content-Length: 500\r\n\r\n{",
    "last-chunk-inside-a-chunk": JSON_HEAD
    + b'Transfer-Encoding: chunked\r\n\r\n100\r\n{"text": "\r\n0\r\n\r\n',
}


def json_answer(body: bytes, interim: bytes = b"") -> bytes:
    """``interim`` responses, then a 200 carrying the JSON ``body``."""
    return interim + JSON_HEAD + b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


EARLY_HINTS = (
    b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n"
    b"Link: </app.js>; rel=preload\r\n\r\n"
)


@pytest.fixture
def raw():
    """Factory: ``raw(call, hold=True)`` -> ``(server, client)``; both closed after."""
    made: list = []

    def factory(call, *, hold: bool = True):
        server = RawHttp(call, hold=hold)
        client = Client.http(server.url, era="handshake", timeout=WAIT)
        made.append((server, client))
        return server, client

    yield factory
    for server, client in made:
        client.close()
        server.close()


@pytest.fixture
def sent_by_requests(monkeypatch):
    """The JSON-RPC methods of the POSTs that went through ``requests.Session.send``."""
    methods: list = []
    original = requests.Session.send

    def recording(self, request, **options):
        if request.method == "POST":
            methods.append(json.loads(request.body).get("method"))
        return original(self, request, **options)

    monkeypatch.setattr(requests.Session, "send", recording)
    return methods


def sent_by_requests_session(methods: list) -> None:
    """The tool call went through ``requests.Session.send`` (the client's one HTTP stack)."""
    assert "tools/call" in methods, methods


# -- item 9: framing that lies ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("lie", list(LIES))
def test_a_lying_answer_ends_the_call_at_its_timeout(raw, sent_by_requests, lie):
    """``call_tool(timeout=2)`` returns with RequestTimeout (the removed thin path never returned),
    the client lets go of the lying connection, and its next call is served."""
    server, client = raw(lambda message: LIES[lie])
    outcome = outcome_within(lambda: client.call_tool("lie", {}, timeout=2), 3 * WAIT)
    assert isinstance(outcome, RequestTimeout), outcome
    sent_by_requests_session(sent_by_requests)
    assert server.dropped.wait(WAIT), "the client still reads the lying connection"
    still_serves(client)


@pytest.mark.slow
@pytest.mark.parametrize("lie", list(LIES))
def test_a_lying_answer_nobody_waits_for_is_dropped_at_the_requests_timeout(raw, lie):
    """Every read of an answer is bounded by its request's timeout, not only by a caller waiting:
    a call started and never waited for lets go of the lying connection past its timeout, and fails
    with RequestTimeout."""
    server, client = raw(lambda message: LIES[lie])
    call = outcome_within(lambda: client.start_tool_call("lie", {}, timeout=1), 3 * WAIT)
    assert server.dropped.wait(WAIT), (
        "a read of the lying answer is not bounded by the request's timeout"
    )
    with pytest.raises(RequestTimeout):
        call.result()
    still_serves(client)


# -- item 10: interim (1xx) answers ---------------------------------------------------------------


INTERIMS = {
    "103-early-hints": EARLY_HINTS,
    "several": b"HTTP/1.1 100 Continue\r\n\r\n"
    + EARLY_HINTS
    + b"HTTP/1.1 102 Processing\r\n\r\n"
    + EARLY_HINTS,
}


@pytest.mark.parametrize("interim", list(INTERIMS))
def test_interim_answers_before_the_answer_are_skipped(raw, sent_by_requests, interim):
    """RFC 9110 §15.2: a client MUST parse 1xx responses before the final one (was: -32603
    "unexpected Content-Type ''")."""
    server, client = raw(
        lambda message: json_answer(answer(message, OK), INTERIMS[interim]), hold=False
    )
    assert client.call_tool("hinted", {}).content[0].text == "ok"
    sent_by_requests_session(sent_by_requests)
    assert client.call_tool("hinted", {}).content[0].text == "ok"  # the connection serves on
    still_serves(client)


def test_interim_answers_are_skipped_through_a_socks_proxy(monkeypatch):
    """A SOCKS proxy's connections read answers as the others do (they were urllib3's own, which
    took a ``103`` for the answer)."""
    server = RawHttp(lambda message: json_answer(answer(message, OK), EARLY_HINTS), hold=False)
    proxy = route_through(monkeypatch, "socks5")
    assert proxy is not None
    try:
        with Client.http(server.url, era="handshake", timeout=WAIT) as client:
            assert client.call_tool("hinted", {}).content[0].text == "ok"
            still_serves(client)
        assert proxy.tunnels >= 1  # the client really went through the proxy
    finally:
        proxy.stop()
        server.close()


def test_endless_interim_answers_fail_the_call_at_once(raw):
    """Past MAX_INTERIM interim answers the call fails with a clear error (a server sending 103
    after 103 cannot keep the client reading), and the client serves on."""
    server, client = raw(lambda message: EARLY_HINTS * (MAX_INTERIM + 1))
    outcome = outcome_within(lambda: client.call_tool("hinted", {}, timeout=LONG), 3 * WAIT)
    assert isinstance(outcome, MCPRefError) and "interim (1xx) responses" in str(outcome), outcome
    still_serves(client)


# -- item 10: an answer nested 100,000 deep -------------------------------------------------------


def deep_answer(message) -> bytes:
    return b'{"jsonrpc":"2.0","id":%d,"result":{"content":%s}}' % (message["id"], DEEP)


def refused_as_too_deep(outcome) -> None:
    assert isinstance(outcome, InvalidRequest), outcome
    assert "nested deeper than the limit of 64" in str(outcome), outcome


@pytest.mark.parametrize("order", ["first", "last"])
def test_an_answer_nested_too_deep_over_stdio_fails_its_call_at_once(order):
    """The answer is refused (MAX_NESTING) and its request fails at once, not at its timeout
    (LONG, past the bound the call is waited for); the connection serves on."""
    command = [sys.executable, str(SERVERS / "deep_answer_server.py"), order]
    with Client.stdio(command, era="handshake", timeout=WAIT) as client:
        refused_as_too_deep(
            outcome_within(lambda: client.call_tool("deep", {}, timeout=LONG), 3 * WAIT)
        )
        still_serves(client)


@pytest.mark.parametrize("framing", ["json", "sse"])
def test_an_answer_nested_too_deep_over_http_fails_its_call_at_once(raw, framing):
    """The same over HTTP, as a JSON answer or an SSE event (the client then leaves the stream)."""

    def call(message) -> bytes:
        if framing == "json":
            return json_answer(deep_answer(message))
        return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + sse_event(
            deep_answer(message)
        )

    server, client = raw(call, hold=framing == "sse")
    refused_as_too_deep(
        outcome_within(lambda: client.call_tool("deep", {}, timeout=LONG), 3 * WAIT)
    )
    if framing == "sse":
        assert server.dropped.wait(WAIT), (
            "the client still reads the stream of a request that failed"
        )
    still_serves(client)


# -- the framing rules themselves ------------------------------------------------------------------


NESTED = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "text, request_id",
    [
        ('{"jsonrpc":"2.0","id":5,"result":{"content":' + NESTED + "}}", 5),
        ('{ "result" : ' + NESTED + ' , "error": {}, "id" : "a,b" }', "a,b"),
        ('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":' + NESTED + "}", None),
        ('{"a":{"id":3,"result":1},"b":' + NESTED + "}", None),  # not at the top level
        ('{"id":true,"result":' + NESTED + "}", None),
        ('{"id":null,"error":' + NESTED + "}", None),
        ('{"id":5.5,"result":' + NESTED + "}", None),
        (NESTED, None),  # a batch, or no message
    ],
    ids=["id-first", "id-last", "a-request", "nested-id", "true", "null", "float", "an-array"],
)
def test_the_id_of_an_answer_too_deep_is_read_from_its_top_level_alone(text, request_id):
    from mcp_ref.unparsed import answer_id

    assert answer_id(text) == request_id


@pytest.mark.parametrize(
    "text, read",
    [
        ('{"jsonrpc":"2.0","id":5,"method":"tools/call","params":' + NESTED + "}", (5, False)),
        ('{"params":' + NESTED + ',"method":"x","id":"a"}', ("a", False)),
        ('{"jsonrpc":"2.0","method":"notifications/x","params":' + NESTED + "}", (None, False)),
        ('{"jsonrpc":"2.0","id":5,"result":' + NESTED + "}", (5, True)),
        ('{"id":7,"params":' + NESTED + "}", (None, False)),  # neither a request nor an answer
    ],
    ids=["request", "request-id-last", "notification", "answer", "neither"],
)
def test_the_id_of_a_request_too_deep_is_read_too(text, read):
    from mcp_ref.unparsed import top_level_id

    assert top_level_id(text) == read


def test_a_string_left_open_by_a_cut_is_one_piece_to_the_end():
    """A message cut at the size limit inside a string: the string runs to the end of the text, read
    in one pass, and the brackets in it are not the message's.  The string's pattern failed at the
    end and the engine backtracked through the whole string: half a second of CPU for 4 MB, each
    time a peer sent such a message."""
    from mcp_ref.unparsed import _TOKENS, top_level_id

    for tail in ("a]}{[", "a]}{[\\", "a\\\n", "a\\"):
        cut = '{"jsonrpc":"2.0","method":"m","params":{"text":"' + tail
        pieces = [match.group() for match in _TOKENS.finditer(cut)]
        assert pieces[-1] == '"' + tail
        assert top_level_id(cut) == (None, False)


# -- framing the client refuses, or reads once ----------------------------------------------------


@pytest.mark.parametrize("encodings", [b"gzip, chunked", b"chunked\r\nTransfer-Encoding: chunked"])
def test_a_transfer_encoding_other_than_chunked_alone_is_refused_at_once(raw, encodings):
    """RFC 9112 §6.3: http.client reads ``gzip, chunked`` (or two fields) as no chunking at all, so
    its framing would be guessed: the call fails at once with a clear error instead."""

    def call(message) -> bytes:
        body = answer(message, OK)
        return JSON_HEAD + b"Transfer-Encoding: %s\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (
            encodings,
            len(body),
            body,
        )

    server, client = raw(call)
    outcome = outcome_within(lambda: client.call_tool("framed", {}, timeout=LONG), 3 * WAIT)
    assert isinstance(outcome, MCPRefError) and "Transfer-Encoding" in str(outcome), outcome
    still_serves(client)


def test_an_answer_with_both_lengths_is_read_as_chunked_and_its_connection_not_reused(raw):
    """RFC 9112 §6.3: Transfer-Encoding overrides Content-Length; two readers could disagree on
    where such an answer ends, so its connection is closed after it, never kept for the next."""

    def call(message) -> bytes:
        body = answer(message, OK)
        return (
            JSON_HEAD
            + b"Content-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n"
            % (
                len(body),
                body,
            )
        )

    server, client = raw(call)
    assert client.call_tool("framed", {}).content[0].text == "ok"
    assert server.dropped.wait(WAIT), "the connection was kept for another request"
    still_serves(client)


def test_a_json_answer_whose_id_cannot_be_read_fails_its_call_at_once(raw):
    """Over HTTP the JSON body of a POST is the answer to that POST's request: when the session
    cannot take it as one (nested too deep, its id too far to read), the request fails at once."""

    def call(message) -> bytes:
        return json_answer(b'{"jsonrpc":"2.0","result":{"content":%s}}' % DEEP)  # no id at all

    server, client = raw(call, hold=False)
    outcome = outcome_within(lambda: client.call_tool("deep", {}, timeout=LONG), 3 * WAIT)
    assert isinstance(outcome, InvalidRequest), outcome
    assert "could not be read as the answer" in str(outcome), outcome
    still_serves(client)


def test_a_header_section_trickled_a_byte_at_a_time_is_dropped_at_the_calls_timeout(raw):
    """Each read is bounded, and so are all of them together: a server sending its header section
    a byte every 0.2 s (each read well within its bound) is let go of when the call times out."""
    release = threading.Event()

    def call(message):
        yield JSON_HEAD + b"X-Slow: "
        while not release.wait(0.2):  # the server's pace, not the test's
            yield b"x"

    server, client = raw(call)
    try:
        outcome = outcome_within(lambda: client.call_tool("trickle", {}, timeout=1), 3 * WAIT)
        assert isinstance(outcome, RequestTimeout), outcome
        assert server.dropped.wait(WAIT), "the client still reads the trickled header section"
    finally:
        release.set()
    still_serves(client)
