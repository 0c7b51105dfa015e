"""The SSE parser (mcp_ref.http.sse.SseParser) reads a stream the same however a socket cuts it:
every split into two or three chunks, and one byte at a time, gives the events of the whole."""

from __future__ import annotations

import itertools

import pytest

from mcp_ref.http.sse import SseParser

BOM = b"\xef\xbb\xbf"
# CR, LF and CRLF line ends, a UTF-8 character, a comment, an id, a retry, an event type
BODY = b"data:y\ndata: \xc3\xa9\r\r: note\r\nevent: e\nretry: 250\ndata:z\nid: 7\r\n\r\n"
WHOLE = [("message", "y\né", None, None), ("e", "z", "7", 250)]


def parsed(chunks) -> list[tuple]:
    """The events of the stream fed as ``chunks``, with the parser's last id and retry after it."""
    parser = SseParser()
    events = [event for chunk in chunks for event in parser.feed(chunk)]
    return [(e.event, e.data, e.id, e.retry) for e in events] + [(parser.last_id, parser.retry)]


def splits(stream: bytes):
    """``stream`` cut in one byte chunks, then in two and three chunks at every place."""
    yield [stream[i : i + 1] for i in range(len(stream))]
    for cut in range(1, len(stream)):
        yield [stream[:cut], stream[cut:]]
    for first, second in itertools.combinations(range(1, len(stream)), 2):
        yield [stream[:first], stream[first:second], stream[second:]]


@pytest.mark.parametrize(
    "stream",
    [BODY, BOM + BODY, BOM + BOM + BODY, b"\xef" + BODY, b"\xef\xbb" + BODY],
    ids=["no BOM", "a BOM", "two BOMs", "a BOM's first byte", "a BOM's first two bytes"],
)
def test_every_split_of_a_stream_gives_the_events_of_the_whole(stream):
    # WHATWG HTML §9.2.6: "One leading U+FEFF BYTE ORDER MARK character must be ignored if any
    # are present": its three bytes may come in three chunks, and only the first BOM goes.
    whole = parsed([stream])
    for chunks in splits(stream):
        assert parsed(chunks) == whole, chunks
    if stream.startswith(BOM + BOM):
        # the second BOM is kept: it is part of the first field's name, which is not "data"
        assert whole[0] == ("message", "é", None, None)
    elif stream.startswith(BOM) or stream == BODY:
        assert whole == [*WHOLE, ("7", 250)]
    else:
        # a BOM's beginning alone is no BOM: its bytes are part of the first field's name
        assert whole[0] == ("message", "é", None, None)


def test_a_bom_split_in_one_byte_chunks_keeps_the_first_line():
    parser = SseParser()
    assert parser.feed(b"\xef") == []
    assert parser.feed(b"\xbb") == []
    assert parser.feed(b"\xbf") == []
    [event] = parser.feed(b"data:y\n\n")
    assert event.data == "y"
