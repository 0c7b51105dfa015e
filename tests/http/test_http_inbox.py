"""The HTTP client's inbox (``mcp_ref.http.bounded_reads.Inbox``) is bounded: a thread relaying a
server's stream waits for room, so a server that sends faster than the client handles waits on its
own connection; what the client adds itself never waits; closing lets a waiting thread go.  Then a
real server floods a real client whose reader is held, over a socket on 127.0.0.1."""

from __future__ import annotations

import threading

from conftest import WAIT
from http_fixtures import serve  # noqa: F401 - fixture

from mcp_ref import Client, Context, Server
from mcp_ref.http.bounded_reads import Inbox


def put_in_thread(inbox: Inbox, data: bytes) -> tuple[threading.Thread, list]:
    outcome: list = []
    thread = threading.Thread(target=lambda: outcome.append(inbox.put_streamed(data)), daemon=True)
    thread.start()
    return thread, outcome


def test_a_streamed_message_waits_for_room_and_goes_in_once_the_reader_takes_one():
    inbox = Inbox(limit=2)
    assert inbox.put_streamed(b"1") and inbox.put_streamed(b"2")
    thread, outcome = put_in_thread(inbox, b"3")
    assert inbox.get() == b"1"  # makes room
    thread.join(WAIT)
    assert outcome == [True]
    assert [inbox.get(), inbox.get()] == [b"2", b"3"]


def test_a_streamed_message_waiting_for_room_is_dropped_when_the_inbox_closes():
    inbox = Inbox(limit=1)
    assert inbox.put_streamed(b"first")
    thread, outcome = put_in_thread(inbox, b"second")
    inbox.close()
    thread.join(WAIT)
    assert outcome == [False]  # it waited (a full inbox), then was let go
    assert inbox.get() == b"first" and len(inbox) == 0
    assert inbox.put_streamed(b"late") is False  # closed: nothing more from the streams


def test_the_bytes_are_bounded_too_and_the_first_message_always_goes_in():
    inbox = Inbox(limit=100, limit_bytes=10)
    assert inbox.put_streamed(b"x" * 50)  # larger than the bound, into an empty inbox
    thread, outcome = put_in_thread(inbox, b"y")
    assert inbox.get() == b"x" * 50
    thread.join(WAIT)
    assert outcome == [True] and inbox.get() == b"y"


def test_what_the_client_adds_itself_never_waits():
    inbox = Inbox(limit=1)
    assert inbox.put_streamed(b"from the server")
    for item in (b"an answer a worker read", None):
        inbox.put(item)  # returns at once although the inbox is full
    assert [inbox.get(), inbox.get(), inbox.get()] == [
        b"from the server",
        b"an answer a worker read",
        None,
    ]


def test_a_server_that_floods_a_held_client_waits_on_its_stream(serve):
    """40 log lines on a POST's SSE stream while the client's reader is held at the first: the
    inbox holds at most its limit, then every line arrives, in order, and so does the answer."""
    server = Server("flood")

    @server.tool()
    def flood(count: int, ctx: Context) -> str:
        """Log ``count`` lines, then answer."""
        for i in range(count):
            ctx.info(f"line {i}")
        return "flooded"

    srv = serve(server)
    holding, release, seen = threading.Event(), threading.Event(), []
    inbox_of: list[Inbox] = []

    def trace(direction: str, data: bytes) -> None:
        if direction != "<--" or b"notifications/message" not in data:
            return
        seen.append(len(inbox_of[0]))  # what waits behind this message
        if not holding.is_set():
            holding.set()
            assert release.wait(WAIT)  # the reader is held on the first line

    lines: list[str] = []
    with Client.http(
        srv.mcp,
        era="handshake",
        timeout=WAIT,
        trace=trace,
        on_log=lambda message: lines.append(message.data),
    ) as client:
        inbox = client.session.transport._incoming
        inbox.limit = 4
        inbox_of.append(inbox)
        answers: list = []
        call = threading.Thread(
            target=lambda: answers.append(client.call_tool("flood", {"count": 40}))
        )
        call.start()
        assert holding.wait(WAIT)
        with inbox._changed:
            assert inbox._changed.wait_for(lambda: len(inbox) >= 4, WAIT)
        release.set()
        call.join(WAIT)
        assert answers and answers[0].text == "flooded"
    assert max(seen) <= 4
    assert lines == [f"line {i}" for i in range(40)]
