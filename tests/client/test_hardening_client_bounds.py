"""Issue 20, class 6: the client bounds what a server sends, as the server bounds what a client sends.

Each test puts a hostile server on a real socket (127.0.0.1, port 0): a real mcp_ref server
behind :class:`Hostile`, a WSGI middleware that answers the requests its script names with
what a broken or malicious server might send: a JSON answer or an SSE event past the client's
``max_message_size``, a Content-Length that promises more than that, one SSE event of a
hundred thousand short ``data:`` lines, ever new (or repeated) pagination cursors, a task that
never stops asking for input, ``retry: -1``.  After each the same client serves a normal
request.  spec_notes/security.md has the limits table.
"""

from __future__ import annotations

import io
import json
import logging
import ssl
import sys
import threading
import time
from itertools import count
from pathlib import Path

import pytest
from conftest import WAIT, LoggedOnce, WireChecker
from http_fixtures import serve  # noqa: F401 - a fixture

from mcp_ref import Client, Context, LimitExceeded, McpError, Server
from mcp_ref.http import client as http_client
from mcp_ref.http.sse import SseParser, sse_event
from mcp_ref.pagination import DEFAULT_MAX_PAGES
from mcp_ref.stdio import DEFAULT_MAX_MESSAGE_SIZE

CONFIRM = {
    "type": "object",
    "properties": {"confirm": {"type": "boolean"}},
    "required": ["confirm"],
}
ERAS = ["handshake", "modern"]
OK = {"content": [{"type": "text", "text": "ok"}]}


def build_server() -> Server:
    server = Server("bounds", version="1.0")

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @server.prompt()
    def greet(name: str) -> str:
        """A prompt (so that the server declares prompts)."""
        return f"Hello, {name}"

    @server.tool(task="required")
    def ask_forever(ctx: Context) -> str:
        """A task that asks for confirmation again and again, each time under a new key."""
        ctx.start_task()
        for n in count():
            ctx.elicit(f"Sure ({n})?", CONFIRM, key=f"ask{n}")
        return "never"

    @server.tool()
    def ask_rounds(ctx: Context) -> str:
        """Asks (2026-07-28: an input_required round) again and again."""
        for n in count():
            ctx.elicit(f"Sure ({n})?", CONFIRM, key=f"ask{n}")
        return "never"

    return server


class Hostile:
    """WSGI middleware: POSTs whose JSON-RPC method (``"tools/call:<name>"`` for a tool) is in
    ``posts``, and GETs when ``get`` is set, are answered by the script; the rest reach the
    real app.  A script returns ``(status, headers, body iterable)``.  ``gets`` records the
    time of every GET; ``release`` ends whatever a script holds open."""

    def __init__(self, app):
        self.app = app
        self.posts: dict = {}
        self.get = None
        self.gets: list[tuple[float, dict]] = []
        self.release = threading.Event()

    def __call__(self, environ, start_response):
        if environ["REQUEST_METHOD"] == "POST":
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            environ["wsgi.input"] = io.BytesIO(body)
            message = json.loads(body)
            key = message.get("method")
            if key == "tools/call":
                key = f"tools/call:{message['params']['name']}"
            script = self.posts.get(key)
            if script is not None:
                status, headers, out = script(message)
                start_response(status, headers)
                return out
        elif environ["REQUEST_METHOD"] == "GET":
            headers = {
                k[5:].replace("_", "-").lower(): v
                for k, v in environ.items()
                if k.startswith("HTTP_")
            }
            self.gets.append((time.monotonic(), headers))
            if self.get is not None:
                status, headers, out = self.get(headers)
                start_response(status, headers)
                return out
        return self.app(environ, start_response)

    def hold(self):
        """A body that ends only when the test releases it."""
        self.release.wait(WAIT)
        yield b""


def answer(message: dict, result: dict) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()


def padded(size: int) -> dict:
    """A valid CallToolResult of about ``size`` bytes of JSON."""
    return {**OK, "_meta": {"padding": "x" * size}}


@pytest.fixture
def hostile(serve):
    box: list[Hostile] = []
    served = serve(
        build_server(), keepalive=0.2, wrap=lambda app: box.append(Hostile(app)) or box[0]
    )
    served.hostile = box[0]
    yield served
    box[0].release.set()


@pytest.fixture
def connect(hostile):
    made: list[Client] = []

    def factory(era: str = "handshake", **options) -> Client:
        options.setdefault("timeout", WAIT)
        client = Client.http(hostile.mcp, era=era, **options)
        made.append(client)
        return client

    yield factory
    hostile.hostile.release.set()
    for client in made:
        client.close()


def still_serves(client: Client) -> None:
    """The client's next call is answered; within the suite's WAIT, whatever short timeout the
    client was made with to meet a hostile answer (a loaded machine may need more than that)."""
    answer = client.call_tool("echo", {"text": "still here"}, timeout=WAIT)
    assert answer.content[0].text == "still here"


# -- the size of a message ----------------------------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("framing", ["content-length", "chunked"])
def test_a_json_answer_past_max_message_size_fails_its_request_and_the_client_goes_on(
    hostile, connect, era, framing
):
    def big(message):
        body = answer(message, padded(200_000))
        if framing == "content-length":
            return (
                "200 OK",
                [("Content-Type", "application/json"), ("Content-Length", str(len(body)))],
                [body],
            )
        return "200 OK", [("Content-Type", "application/json")], iter([body[:1000], body[1000:]])

    hostile.hostile.posts["tools/call:big"] = big
    client = connect(era, max_message_size=64 * 1024)
    with pytest.raises(
        LimitExceeded, match="limit of 65536 bytes \\(max_message_size\\)"
    ) as failed:
        client.call_tool("big")
    assert failed.value.data == {"limit": 65536}
    still_serves(client)


def test_a_content_length_past_the_limit_is_refused_before_the_body_is_read(hostile, connect):
    # The server promises 200 MB and sends a few bytes, then holds: a client that read the body
    # would wait for the rest until its timeout; one that checks Content-Length fails at once.
    def promise(message):
        return (
            "200 OK",
            [("Content-Type", "application/json"), ("Content-Length", str(200 * 1024 * 1024))],
            _then(b'{"jsonrpc":"2.0",', hostile.hostile.hold()),
        )

    hostile.hostile.posts["tools/call:big"] = promise
    client = connect(max_message_size=1024 * 1024)
    started = time.monotonic()
    with pytest.raises(LimitExceeded, match="max_message_size"):
        client.call_tool("big", timeout=WAIT)
    assert time.monotonic() - started < WAIT  # not a timeout
    still_serves(client)


def _then(first: bytes, rest):
    yield first
    yield from rest


def test_the_default_limit_is_stdios_and_holds_over_http(hostile, connect):
    assert DEFAULT_MAX_MESSAGE_SIZE == 4 * 1024 * 1024
    hostile.hostile.posts["tools/call:big"] = lambda m: (
        "200 OK",
        [("Content-Type", "application/json")],
        [answer(m, padded(5 * 1024 * 1024))],
    )
    hostile.hostile.posts["tools/call:large"] = lambda m: (
        "200 OK",
        [("Content-Type", "application/json")],
        [answer(m, padded(3 * 1024 * 1024))],
    )
    client = connect()
    with pytest.raises(LimitExceeded, match=f"limit of {DEFAULT_MAX_MESSAGE_SIZE} bytes"):
        client.call_tool("big")
    assert client.call_tool("large").content[0].text == "ok"  # under the limit: served
    still_serves(client)


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("shape", ["one-line", "many-lines", "one-huge-chunk"])
def test_an_sse_event_past_max_message_size_fails_its_request(hostile, connect, era, shape):
    def big(message):
        data = answer(message, padded(300_000))
        if shape == "many-lines":
            data = data.replace(
                b'"x', b'"x\n'
            )  # not JSON any more, but never parsed: too large first
            event = sse_event(data.replace(b"xxxx", b"xxxx\n"))
        else:
            event = sse_event(data)
        if shape == "one-huge-chunk":  # one HTTP chunk of 300 kB
            return "200 OK", [("Content-Type", "text/event-stream")], iter([event])
        return (
            "200 OK",
            [("Content-Type", "text/event-stream")],
            _then(event, hostile.hostile.hold()),
        )

    hostile.hostile.posts["tools/call:big"] = big
    client = connect(era, max_message_size=100_000)
    with pytest.raises(
        LimitExceeded, match="SSE event is larger than this client's limit of 100000 bytes"
    ):
        client.call_tool("big")
    still_serves(client)


def test_an_sse_line_that_never_ends_is_bounded(hostile, connect):
    def endless(message):
        def body():
            yield b"data: "
            for _ in range(64):  # 4 MiB of one line, in 64 KiB pieces
                yield b"x" * 65536
            yield from hostile.hostile.hold()

        return "200 OK", [("Content-Type", "text/event-stream")], body()

    hostile.hostile.posts["tools/call:big"] = endless
    client = connect(max_message_size=256 * 1024)
    with pytest.raises(LimitExceeded, match="max_message_size"):
        client.call_tool("big")
    still_serves(client)


def test_a_too_large_event_on_the_standalone_stream_is_dropped_and_the_stream_goes_on(
    hostile, connect, caplog
):
    changed = threading.Event()
    note = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}'

    def stream(headers):
        def body():
            yield sse_event(
                b'{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"'
                + b"x" * 200_000
                + b'"}}'
            )
            yield sse_event(note)
            yield from hostile.hostile.hold()

        return "200 OK", [("Content-Type", "text/event-stream")], body()

    hostile.hostile.get = stream
    with caplog.at_level(logging.WARNING, logger="mcp_ref.http.client"):
        client = connect(max_message_size=100_000, on_list_changed=lambda kind: changed.set())
        assert changed.wait(WAIT)
    assert any("larger than the limit of 100000 bytes" in r.getMessage() for r in caplog.records)
    still_serves(client)


@pytest.mark.parametrize("case", ["error-status", "notification"])
def test_bodies_nobody_needs_are_not_read_to_their_end(hostile, connect, case):
    # 50 MiB offered, lazily, 1 MiB at a time, after an HTTP error or to a notification (a 202
    # has no body): the client reads at most a bounded part and closes, so the server's writes
    # fail long before the end.  (The old client read every byte into memory.)
    produced: list[int] = []
    ended = threading.Event()

    def flood():
        try:
            for n in range(50):
                produced.append(n)
                yield b"x" * (1024 * 1024)
        finally:
            ended.set()

    script = (
        (lambda m: ("500 Internal Server Error", [("Content-Type", "application/json")], flood()))
        if case == "error-status"
        else (lambda m: ("202 Accepted", [], flood()))
    )
    hostile.hostile.posts[
        "tools/call:big" if case == "error-status" else "notifications/roots/list_changed"
    ] = script
    client = connect(roots=["file:///tmp"])
    if case == "error-status":
        with pytest.raises(McpError, match="HTTP 500"):
            client.call_tool("big")
    else:
        client.set_roots(["file:///srv"])
    assert ended.wait(WAIT)
    assert len(produced) < 50
    still_serves(client)


# -- the work for an event is linear in its size ---------------------------------------------------


@pytest.mark.slow
def test_an_event_of_many_short_data_lines_is_read_whole(hostile, connect):
    # One event of 1.3 MB: 150,000 lines ``data: 0,`` (JSON allows a newline between tokens).
    # sseclient-py's reader took 8 to 11 s for it (a quadratic concatenation); that ours costs
    # one pass is shown without a clock by test_an_events_lines_are_kept_apart_and_joined_once.
    def lines(message):
        result = {**OK, "_meta": {"padding": [0] * 150_000}}
        data = json.dumps(
            {"jsonrpc": "2.0", "id": message["id"], "result": result}, indent=0
        ).encode()
        event = sse_event(data)
        assert len(event) > 1_300_000 and event.count(b"\n") > 150_000
        return "200 OK", [("Content-Type", "text/event-stream")], [event]

    hostile.hostile.posts["tools/call:lines"] = lines
    client = connect()
    assert client.call_tool("lines").content[0].text == "ok"
    still_serves(client)


def test_an_events_lines_are_kept_apart_and_joined_once():
    # The cost of one event is linear in its bytes: each data line is kept as it came, in a list,
    # and joined once when the event is dispatched (WHATWG HTML §9.2.6 appends each line to a
    # buffer; appending to a bytes value copies it, the quadratic cost of sseclient-py's reader).
    parser = SseParser()
    lines = 10_000
    stream = b"data: 0,\n" * lines
    # fed in chunks that cut lines in two, as a socket may
    for start in range(0, len(stream), 4093):
        assert parser.feed(stream[start : start + 4093]) == []
    assert isinstance(parser._data, list) and len(parser._data) == lines
    assert all(piece == b"0," for piece in parser._data)
    [event] = parser.feed(b"\n")
    assert event.data == "\n".join(["0,"] * lines)
    assert parser._data == []


def test_the_parser_follows_whatwg_and_costs_one_pass():
    parser = SseParser(max_event_size=100)
    # a BOM, CR, LF and CRLF line ends (a CRLF split between two chunks), comments, unknown fields
    events = parser.feed(b"\xef\xbb\xbfid: 7\r: a comment\rfoo: bar\ndata: a\r\ndata:b\r")
    events += parser.feed(b"\n\r\nevent: e\ndata\n\n")
    assert [(e.event, e.data, e.id) for e in events] == [("message", "a\nb", "7"), ("e", "", "7")]
    # an id without data is not an event, but it is the stream's last id
    assert parser.feed(b"id: 8\n\n") == [] and parser.last_id == "8"
    # past the bound: dispatched as too large, without its data; the next event is whole
    events = parser.feed(b"data: " + b"y" * 60 + b"\ndata: " + b"z" * 60 + b"\n\ndata: fine\n\n")
    assert [(e.too_large, e.data) for e in events] == [(True, ""), (False, "fine")]
    # a line that never ends is dropped as it grows, never kept, and said at once
    assert parser.feed(b"data: " + b"q" * 90) == []
    assert [(e.too_large, e.data) for e in parser.feed(b"q" * 1000)] == [(True, "")]
    assert parser._partial == [] and parser._partial_size == 0
    assert [(e.too_large, e.data) for e in parser.feed(b"q\n\ndata: ok\n\n")] == [(False, "ok")]


@pytest.mark.parametrize(
    ("value", "taken"),
    [
        (b"-1", None),
        (b"1.5", None),
        (b"5x", None),
        (b"", None),
        (b" 5", None),
        (b"\xd9\xa3", None),
        (b"0", 0),
        (b"250", 250),
        (b"99999999999999999999999", 10**9),
    ],
)
def test_retry_is_taken_only_when_all_ascii_digits(value, taken):
    # WHATWG HTML §9.2.6: "If the field value consists of only ASCII digits ... Otherwise, ignore the field."
    parser = SseParser()
    parser.feed(b"retry: " + value + b"\ndata: x\n\n")
    assert parser.retry == taken


def test_the_reconnect_delay_is_clamped():
    transport = http_client.HttpClientTransport(
        "http://127.0.0.1:9/mcp", min_retry_delay=0.2, max_retry_delay=5.0
    )
    try:
        cursor = http_client._Cursor()
        for retry_ms, delay in ((0, 0.2), (1000, 1.0), (10**9, 5.0)):
            cursor.retry_ms = retry_ms
            assert transport._retry_delay(cursor) == delay
        cursor.retry_ms = 1000
        assert transport._retry_delay(cursor, fruitless=2) == 4.0
        assert transport._retry_delay(cursor, fruitless=50) == 5.0
    finally:
        transport.close()
    assert http_client.MIN_RETRY_DELAY > 0 and http_client.MAX_RETRY_DELAY <= 60


def test_retry_minus_one_is_ignored_when_a_request_stream_is_resumed(hostile, connect):
    # The server sets retry 300 ms, then "retry: -1", and closes the stream before answering: the
    # client resumes after 300 ms (the -1 ignored), not at once.
    closed: list[float] = []

    def drop(message):
        def body():
            yield b"id: p1\nretry: 300\ndata:\n\n"
            yield b"retry: -1\nid: p2\ndata:\n\n"
            closed.append(time.monotonic())

        hostile.hostile.get = lambda headers: (
            "200 OK",
            [("Content-Type", "text/event-stream")],
            [sse_event(answer(message, OK), event_id="p3")],
        )
        return "200 OK", [("Content-Type", "text/event-stream")], body()

    hostile.hostile.posts["tools/call:drop"] = drop
    client = connect()
    hostile.hostile.gets.clear()
    assert client.call_tool("drop").content[0].text == "ok"
    resumed = [(t, h) for t, h in hostile.hostile.gets if h.get("last-event-id") == "p2"]
    assert len(resumed) == 1 and resumed[0][0] - closed[0] >= 0.3
    hostile.hostile.get = None
    still_serves(client)


def test_a_standalone_stream_that_says_retry_minus_one_is_not_reopened_in_a_loop(hostile, connect):
    # Each GET ends at once after "retry: -1": ignored, so the client waits the default second
    # before the next GET.  The old client took -1 and re-opened it some 23 times a second.
    again = threading.Event()

    def stream(headers):
        if len(hostile.hostile.gets) >= 2:
            again.set()
        return "200 OK", [("Content-Type", "text/event-stream")], [b"retry: -1\nid: g\ndata:\n\n"]

    hostile.hostile.get = stream
    client = connect()
    assert again.wait(WAIT)
    (first, _), (second, _) = hostile.hostile.gets[:2]
    assert second - first >= 0.9 * http_client.DEFAULT_RETRY_MS / 1000
    still_serves(client)


# -- pages ------------------------------------------------------------------------------------


def test_endless_new_cursors_stop_at_max_pages(hostile, connect):
    served = count()

    def page(message):
        return (
            "200 OK",
            [("Content-Type", "application/json")],
            [answer(message, {"tools": [], "nextCursor": f"c{next(served)}"})],
        )

    hostile.hostile.posts["tools/list"] = page
    client = connect(max_pages=50)
    with pytest.raises(LimitExceeded, match="after 50 pages.*\\(max_pages\\)") as failed:
        client.list_tools()
    assert failed.value.data == {"limit": 50}
    assert next(served) == 50  # 50 pages asked, no more
    del hostile.hostile.posts["tools/list"]
    assert [t.name for t in client.list_tools()] == ["echo", "ask_forever", "ask_rounds"]
    still_serves(client)


def test_a_listing_gathers_at_most_max_items_over_all_its_pages(hostile, connect):
    # Each page is bounded by max_message_size, the pages by max_pages: without a bound of its
    # own a listing could hold max_pages full pages (1,000 x 4 MiB) at once.
    served = count()
    tool = {"name": "t", "inputSchema": {"type": "object"}}

    def page(message):
        n = next(served)
        listing = {"tools": [tool] * 20, **({"nextCursor": f"c{n}"} if n < 9 else {})}
        return "200 OK", [("Content-Type", "application/json")], [answer(message, listing)]

    hostile.hostile.posts["tools/list"] = page
    client = connect(max_items=50)
    with pytest.raises(LimitExceeded, match="more than 50 items.*\\(max_items\\)") as failed:
        client.list_tools()
    assert failed.value.data == {"limit": 50}
    assert next(served) == 3  # 60 items > 50: no fourth page asked for
    served = count()
    assert len(connect(max_items=200).list_tools()) == 200  # 10 pages of 20: within its bound
    del hostile.hostile.posts["tools/list"]
    assert [t.name for t in client.list_tools()] == ["echo", "ask_forever", "ask_rounds"]
    still_serves(client)


@pytest.mark.parametrize("era", ERAS)
def test_a_refused_cursor_starts_the_listing_again_once(hostile, connect, era):
    # A server redeployed between two pages refuses the cursor it gave (2026-07-28 caching
    # §Interaction with Pagination: "re-fetch from the beginning"): the listing starts again,
    # once; a cursor refused again is the caller's error.
    cursors = []
    tool = {"name": "t", "inputSchema": {"type": "object"}}

    def page(message):
        cursor = (message.get("params") or {}).get("cursor")
        cursors.append(cursor)
        if cursor is not None:
            refusal = {"code": -32602, "message": "Invalid params: invalid cursor"}
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": refusal})
            return "200 OK", [("Content-Type", "application/json")], [body.encode()]
        listing = {"tools": [tool], "nextCursor": "next", "ttlMs": 600_000}
        return "200 OK", [("Content-Type", "application/json")], [answer(message, listing)]

    hostile.hostile.posts["tools/list"] = page
    client = connect(era)
    with pytest.raises(McpError, match="invalid cursor") as failed:
        client.list_tools()
    assert failed.value.code == -32602
    assert cursors == [None, "next", None, "next"]
    del hostile.hostile.posts["tools/list"]
    assert [t.name for t in client.list_tools()] == ["echo", "ask_forever", "ask_rounds"]
    still_serves(client)


@pytest.mark.slow
def test_the_default_page_bound(hostile, connect):
    asked = count()
    hostile.hostile.posts["prompts/list"] = lambda m: (
        "200 OK",
        [("Content-Type", "application/json")],
        [answer(m, {"prompts": [], "nextCursor": f"p{next(asked)}"})],
    )
    client = connect()
    with pytest.raises(LimitExceeded, match=f"after {DEFAULT_MAX_PAGES} pages"):
        client.list_prompts()
    assert next(asked) == DEFAULT_MAX_PAGES
    still_serves(client)


@pytest.mark.parametrize(
    "cursors", [["a", "b", "a"], ["a", "a"], ["a", {"not": "a string"}], ["a", 7]]
)
def test_a_repeated_or_malformed_cursor_is_an_error(hostile, connect, cursors):
    pages = iter(cursors)
    hostile.hostile.posts["tools/list"] = lambda m: (
        "200 OK",
        [("Content-Type", "application/json")],
        [answer(m, {"tools": [], "nextCursor": next(pages)})],
    )
    client = connect()
    with pytest.raises(McpError, match="repeated a pagination cursor|nextCursor is not a string"):
        client.list_tools()
    del hostile.hostile.posts["tools/list"]
    assert len(client.list_tools()) == 3
    still_serves(client)


# -- rounds of input --------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [None, 3])
def test_a_task_that_keeps_asking_is_cancelled_after_max_input_rounds(hostile, connect, limit):
    asked = count()
    wire = WireChecker()

    def confirm(params):
        next(asked)
        return {"action": "accept", "content": {"confirm": True}}

    options = {} if limit is None else {"max_input_rounds": limit}
    client = connect("modern", elicitation_handler=confirm, trace=wire, **options)
    rounds = limit or 16
    with pytest.raises(
        LimitExceeded, match=f"after {rounds} rounds.*\\(max_input_rounds\\)"
    ) as failed:
        client.call_tool("ask_forever", task=True)
    assert failed.value.data == {"limit": rounds}
    assert next(asked) == rounds  # the handler ran once a round, no more
    assert len(wire.sent("tasks/update")) == rounds
    cancels = wire.sent("tasks/cancel")
    assert (
        len(cancels) == 1
        and cancels[0]["params"]["taskId"] == wire.sent("tasks/update")[0]["params"]["taskId"]
    )
    still_serves(client)


def test_input_required_rounds_share_the_setting(hostile, connect):
    asked = count()

    def confirm(params):
        next(asked)
        return {"action": "accept", "content": {"confirm": True}}

    client = connect("modern", elicitation_handler=confirm, max_input_rounds=3)
    with pytest.raises(LimitExceeded, match="after 3 rounds"):
        client.call_tool("ask_rounds")
    assert next(asked) == 3
    still_serves(client)


def test_the_settings_are_checked():
    for bad in (
        {"max_pages": 0},
        {"max_input_rounds": -1},
        {"max_pages": True},
        {"max_items": 0},
        {"max_items": 1.5},
    ):
        with pytest.raises(ValueError, match="must be a positive int"):
            Client.in_memory(build_server(), **bad)
    with pytest.raises(ValueError, match="max_message_size"):
        http_client.HttpClientTransport("http://127.0.0.1:9/mcp", max_message_size=0)
    with pytest.raises(ValueError, match="min_retry_delay"):
        http_client.HttpClientTransport(
            "http://127.0.0.1:9/mcp", min_retry_delay=5, max_retry_delay=1
        )


# -- review: what a server may make the client hold or do without bound -------------------------

FLOODING = [
    sys.executable,
    str(Path(__file__).resolve().parents[1] / "servers" / "flooding_server.py"),
]


@pytest.mark.parametrize("bound", ["count", "bytes"])
def test_a_flood_of_notifications_waits_for_the_callbacks_in_a_bounded_queue(bound, caplog):
    """A server that sends notifications faster than the client's callbacks run (here, one that
    blocks) used to queue every one of them: 200,000 log messages grew the client by 690 MB.
    Past ``max_callbacks`` waiting, or ``max_callback_bytes`` of their messages, a
    notification's callback is dropped with a warning; the connection goes on."""
    gate, seen = threading.Event(), []

    def on_log(message) -> None:
        seen.append(message)
        gate.wait(WAIT)

    client = Client.stdio(FLOODING, era="handshake", timeout=WAIT, on_log=on_log, stderr="discard")
    try:
        session = client.connection.session
        if bound == "count":
            session.max_callbacks, size, n = 8, 10, 3000
        else:
            session.max_callback_bytes, size, n = 400_000, 50_000, 200
        with caplog.at_level(logging.WARNING, logger="mcp_ref.session"):
            assert (
                client.call_tool("flood", {"kind": "log", "count": n, "size": size}).content[0].text
                == f"sent {n}"
            )
            queue = session._callbacks  # the CallbackQueue (callback_queue.py)
            assert queue._queued <= 8 and queue._queued_bytes <= 400_000
        assert (
            "callback(s) dropped" in caplog.text
            and "max_callbacks, max_callback_bytes" in caplog.text
        )
        gate.set()
        assert client.call_tool("flood", {"kind": "log", "count": 0}).content[0].text == "sent 0"
        assert len(seen) <= 9
    finally:
        gate.set()
        client.close()


def test_the_answer_after_a_flood_of_progress_is_never_dropped():
    """The callback that settles a request waits behind its progress callbacks, and is kept
    however full the queue is: the call returns its answer once the callbacks drain."""
    gate, answered = threading.Event(), threading.Event()

    def trace(direction: str, data: bytes) -> None:
        if direction == "<--" and b'"result"' in data and b"sent 500" in data:
            answered.set()

    client = Client.stdio(FLOODING, era="handshake", timeout=WAIT, trace=trace, stderr="discard")
    try:
        client.connection.session.max_callbacks = 2
        outcome: list = []
        caller = threading.Thread(
            target=lambda: outcome.append(
                client.call_tool(
                    "flood",
                    {"kind": "progress", "count": 500},
                    on_progress=lambda *a: gate.wait(WAIT),
                )
            )
        )
        caller.start()
        assert answered.wait(WAIT)
        gate.set()
        caller.join(WAIT)
        assert outcome and outcome[0].content[0].text == "sent 500"
    finally:
        gate.set()
        client.close()


def test_a_stderr_line_that_never_ends_is_cut():
    """``stderr="capture"`` kept each line whole: 20 MB with no newline was one 20 MB string (and
    1,000 of them were kept).  A line is cut at MAX_STDERR_LINE; the next line is whole."""
    from mcp_ref.stdio_stderr import MAX_STDERR_LINE, TRUNCATED

    client = Client.stdio(
        [*FLOODING, str(20 * 1024 * 1024)], era="handshake", timeout=WAIT, stderr="capture"
    )
    try:
        assert client.call_tool("flood", {"count": 0}).content[0].text == "sent 0"
        transport = client.connection.session.transport
        client.close()  # lets the stderr reader finish
        lines = list(transport.stderr_lines)
        assert lines[0] == "e" * MAX_STDERR_LINE + TRUNCATED
        assert lines[1:] == ["after"]
    finally:
        client.close()


@pytest.mark.parametrize("era", ERAS)
def test_a_stream_the_client_gave_up_on_is_closed(hostile, connect, era):
    """A server that answers a POST with an SSE stream of keep-alives and never the answer: after the
    request's timeout the client closes that stream (2025-11-25: after notifications/cancelled).
    It used to read it for as long as the server kept it open, holding a worker: after
    ``max_workers`` (64) such requests none would be sent again."""
    closed = threading.Event()

    def script(message):
        def body():
            try:
                while True:
                    yield b": keep-alive\n\n"
                    time.sleep(0.01)
            finally:
                closed.set()

        return "200 OK", [("Content-Type", "text/event-stream")], body()

    hostile.hostile.posts["tools/call:echo"] = script
    client = connect(era, timeout=0.5)
    with pytest.raises(TimeoutError):
        client.call_tool("echo", {"text": "x"})
    assert closed.wait(WAIT), "the client still reads the stream of a request it gave up on"
    del hostile.hostile.posts["tools/call:echo"]
    still_serves(client)


class RawHttp:
    """An HTTP/1.1 server on a raw socket (127.0.0.1, port 0), for framing no WSGI server would
    send: the handshake is answered in JSON, GET with 405, notifications with 202, and each
    ``tools/call`` (but of ``echo``) with the bytes ``call(message)`` returns (or yields, piece by
    piece), after which the connection is held open, sending nothing more, until :meth:`close`
    (``hold``; else it serves on).  ``dropped`` is set once the client closes a connection held
    so, or one the answer was being sent on (it stopped reading).  With ``tls`` (a server
    context) it serves ``https://``."""

    def __init__(self, call, *, hold: bool = True, tls: ssl.SSLContext | None = None):
        import socket

        self.call = call
        self.hold = hold
        self.tls = tls
        self.release = threading.Event()
        self.dropped = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        scheme = "http" if tls is None else "https"
        self.url = f"{scheme}://127.0.0.1:{self.sock.getsockname()[1]}/mcp"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn) -> None:
        if self.tls is not None:  # the handshake on the connection's own thread
            try:
                conn = self.tls.wrap_socket(conn, server_side=True)
            except OSError:  # the client went during the handshake
                conn.close()
                return
        with conn, conn.makefile("rb") as reader:
            try:
                while True:
                    request_line = reader.readline()
                    if not request_line:
                        return
                    headers = {}
                    for line in iter(reader.readline, b"\r\n"):
                        name, _, value = line.decode().partition(":")
                        headers[name.strip().lower()] = value.strip()
                    body = reader.read(int(headers.get("content-length", 0)))
                    if not request_line.startswith(b"POST"):
                        conn.sendall(
                            b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n"
                        )
                        continue
                    message = json.loads(body)
                    if "id" not in message:
                        conn.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
                        continue
                    if message["method"] == "tools/call" and message["params"]["name"] != "echo":
                        scripted = self.call(message)
                        try:
                            for piece in [scripted] if isinstance(scripted, bytes) else scripted:
                                conn.sendall(piece)
                        except OSError:
                            self.dropped.set()
                            return
                        if not self.hold:
                            continue
                        threading.Thread(target=self._watch, args=(conn,), daemon=True).start()
                        self.release.wait(WAIT)
                        return
                    if message["method"] == "initialize":
                        result = {
                            "protocolVersion": message["params"]["protocolVersion"],
                            "capabilities": {"tools": {}},
                            "serverInfo": {"name": "raw", "version": "0"},
                        }
                    else:
                        called = message["method"] == "tools/call"
                        result = (
                            {"content": [{"type": "text", "text": "still here"}]} if called else {}
                        )
                    out = answer(message, result)
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                        % (len(out), out)
                    )
            except OSError:
                return

    def _watch(self, conn) -> None:
        """Set ``dropped`` when the client closes ``conn`` (nothing else comes on it while held)."""
        try:
            ended = not conn.recv(1)
        except OSError:
            ended = True
        if ended and not self.release.is_set():
            self.dropped.set()

    def close(self) -> None:
        self.release.set()
        self.sock.close()


@pytest.fixture
def raw_http():
    made: list = []

    def factory(call) -> Client:
        server = RawHttp(call)
        client = Client.http(server.url, era="handshake", timeout=WAIT)
        made.append((server, client))
        return client

    yield factory
    for server, client in made:
        client.close()
        server.close()


def test_a_chunk_size_line_that_never_ends_fails_the_request_at_once(raw_http):
    """urllib3 reads a chunk-size line with an unbounded readline(): ``1;`` and then 300 MB with no
    line end grew the client by 730 MB, and the request only ended at its timeout.  Past
    MAX_CHUNK_LINE the request fails (the connection was broken) and the client goes on."""
    sent = threading.Event()

    def call(message) -> bytes:
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1;"
        sent.set()
        return head + b"a" * (64 * 1024 + 4096)  # past MAX_CHUNK_LINE

    client = raw_http(call)
    started = time.monotonic()
    with pytest.raises(McpError, match="reading a chunk-size line"):
        client.call_tool("flood", {})
    assert sent.is_set() and time.monotonic() - started < WAIT / 2
    still_serves(client)


@pytest.mark.slow
@pytest.mark.parametrize("size", [100, 64 * 1024 * 1024])
def test_a_gzip_encoded_sse_answer_is_decoded_and_bounded(raw_http, size):
    """A server may compress its SSE answer (requests asks for gzip): the client reads it decoded
    (a 100-byte event is the answer), and a bomb (64 MiB of one event in 64 KiB of gzip) fails
    its request past max_message_size, decompressed a piece at a time."""
    import zlib

    def call(message) -> bytes:
        packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip
        if size == 100:
            event = (
                b"event: message\ndata: "
                + answer(message, {"content": [{"type": "text", "text": "gz"}]})
                + b"\n\n"
            )
            raw = packer.compress(event)
        else:
            raw = packer.compress(b"event: message\ndata: ") + packer.compress(b"x" * size)
        raw += packer.flush()
        return (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
            b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(raw), raw)
        )

    client = raw_http(call)
    if size == 100:
        assert client.call_tool("gz", {}).content[0].text == "gz"
    else:
        with pytest.raises(LimitExceeded, match="SSE event is larger"):
            client.call_tool("gz", {})
    still_serves(client)


def test_a_listen_stream_that_ends_at_once_is_not_reopened_for_ever(hostile, connect, monkeypatch):
    """2026-07-28: a server that acknowledges each ``subscriptions/listen`` and ends it at once (no
    notification) had the client listen again every 0.5 s for ever (each success reset the count).
    Such re-opened streams count as failed attempts: after MAX_REOPENS the client stops.  (The test
    looked for the warning half a second after the last listen arrived, though the client gives up
    only once that stream has ended: a busy machine missed it.  It now waits for the warning.)"""
    from mcp_ref.client import listening

    monkeypatch.setattr(listening, "REOPEN_DELAY", 0.01)
    listens: list[float] = []

    def script(message):
        listens.append(time.monotonic())
        ack = {
            "jsonrpc": "2.0",
            "method": listening.ACKNOWLEDGED,
            "params": {
                "notifications": message["params"]["notifications"],
                "_meta": {"io.modelcontextprotocol/subscriptionId": message["id"]},
            },
        }

        def body():
            yield sse_event(json.dumps(ack).encode())
            hostile.hostile.release.wait(0.05)  # a moment after the acknowledgment, the stream ends
            yield sse_event(answer(message, {}))

        return "200 OK", [("Content-Type", "text/event-stream")], body()

    hostile.hostile.posts["subscriptions/listen"] = script
    gave_up = LoggedOnce("gave up re-opening the listen stream")
    logger = logging.getLogger("mcp_ref.client.listening")
    logger.addHandler(gave_up)
    try:
        client = connect("modern", on_list_changed=lambda kind: None)
        # the last stream ends after the last listen arrived: the client gives up after that
        assert gave_up.seen.wait(WAIT), listens
    finally:
        logger.removeHandler(gave_up)
    assert len(listens) == 1 + listening.MAX_REOPENS
    still_serves(client)


@pytest.mark.parametrize("era", ERAS)
def test_a_deeply_nested_event_on_a_request_stream_does_not_end_the_request(hostile, connect, era):
    """An SSE event nested 100,000 deep before the answer: the session refuses it (MAX_NESTING), and
    the transport's own look at it (does it answer the request?) no longer raises RecursionError,
    which failed the request ("HTTP request failed") with a traceback in the log."""

    def script(message):
        deep = b"[" * 100_000 + b"]" * 100_000
        return (
            "200 OK",
            [("Content-Type", "text/event-stream")],
            [sse_event(deep), sse_event(answer(message, OK))],
        )

    hostile.hostile.posts["tools/call:echo"] = script
    client = connect(era)
    assert client.call_tool("echo", {"text": "x"}).content[0].text == "ok"
    del hostile.hostile.posts["tools/call:echo"]
    still_serves(client)
