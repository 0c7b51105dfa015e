"""Server-Sent Events (the HTML Living Standard's ``text/event-stream`` format): encoding one
event for the server, and :class:`SseParser`, the client's parser.

The parser is our own (it replaced sseclient-py, whose reader concatenated bytes line by
line: quadratic in the lines of one event).  It follows WHATWG HTML §9.2.6 "Interpreting an
event stream", and bounds what one event may cost:

* time is linear in the bytes received: the lines of an event are collected in a list and
  joined once, when the event is dispatched;
* the data of one event is at most ``max_event_size`` bytes, and so is any line (a line with
  no end yet counts as it grows).  The moment either goes past, :meth:`SseParser.feed`
  returns an event marked :attr:`SseEvent.too_large`, without data, for the reader to refuse
  (it need not wait for an end that may never come); the rest of that event is read and
  dropped as it arrives (its ``id`` and ``retry`` fields are still taken);
* ``retry`` is taken only when its value is all ASCII digits (§9.2.6: "If the field value
  consists of only ASCII digits ... Otherwise, ignore the field"); a value of more than nine
  digits is read as 10**9 ms, for the reader to clamp.
"""

from __future__ import annotations

from dataclasses import dataclass

#: The default bound on one event's data (and on one line), as stdio's on one message.
DEFAULT_MAX_EVENT_SIZE = 4 * 1024 * 1024
#: ``retry`` values are read up to this many digits; longer ones mean "very long" (10**9 ms).
_RETRY_DIGITS = 9
_BOM = b"\xef\xbb\xbf"


def sse_event(
    data: bytes = b"",
    *,
    event_id: str | None = None,
    event: str | None = None,
    retry: int | None = None,
) -> bytes:
    """The bytes of one event.  ``data`` may hold newlines: each line becomes a ``data:`` field."""
    parts = []
    if event_id is not None:
        parts.append(b"id: " + event_id.encode("utf-8"))
    if event is not None:
        parts.append(b"event: " + event.encode("utf-8"))
    if retry is not None:
        parts.append(b"retry: %d" % retry)
    lines = data.split(b"\n") if data else [b""]
    parts.extend(b"data: " + line if line else b"data:" for line in lines)
    return b"\n".join(parts) + b"\n\n"


#: A comment line: ignored by clients, it keeps idle connections open and reveals dead ones.
KEEPALIVE = b": keep-alive\n\n"


@dataclass(slots=True)
class SseEvent:
    """One dispatched event: its type (``"message"`` unless the stream said otherwise), its data,
    the stream's last event ID (WHATWG: it persists from event to event), and ``retry`` (ms)
    when this event set it.  ``too_large``: not an event but the news that the one being read
    went past the parser's ``max_event_size`` (its data, or one of its lines); that event is
    dropped, and this marker (``data`` empty) comes as soon as the bound is passed."""

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None
    too_large: bool = False

    def __repr__(self) -> str:
        return (
            f"SseEvent(event={self.event!r}, {len(self.data)} chars of data, id={self.id!r}, "
            f"retry={self.retry!r}{', too_large' if self.too_large else ''})"
        )


class SseParser:
    """An incremental, linear-time ``text/event-stream`` parser: :meth:`feed` it the bytes of a
    response as they arrive; it returns the events each chunk completes.

    ``max_event_size`` bounds one event's data and any single line (bytes); see the module
    docstring for what happens past it.  :attr:`last_id` is the stream's last event ID (set
    when an event is dispatched, even one without data) and :attr:`retry` the last valid
    ``retry`` value (ms), or None.
    """

    #: The stream's last event ID (WHATWG "last event ID string"); None until one is dispatched.
    last_id: str | None = None
    #: The last valid ``retry`` field (ms), or None.
    retry: int | None = None
    _partial_size = 0
    _skipping_line = False  # the current line went past the bound: drop it to its end
    # the last chunk ended with CR: a LF first in the next ends that line
    _after_cr = False
    _started = False  # the BOM check is done
    _id_buffer: str | None = None

    def __init__(self, max_event_size: int = DEFAULT_MAX_EVENT_SIZE):
        if (
            isinstance(max_event_size, bool)
            or not isinstance(max_event_size, int)
            or max_event_size < 1
        ):
            raise ValueError(f"max_event_size must be a positive int, not {max_event_size!r}")
        self.max_event_size = max_event_size
        self._partial: list[bytes] = []  # the current line, while its end has not arrived
        self._out: list[SseEvent] = []  # the events of the chunk being fed
        self._reset_event()

    def _reset_event(self) -> None:
        self._data: list[bytes] = []
        self._data_size = -1  # the joined size: the sum of the values and a LF between each two
        self._type = b""
        self._event_retry: int | None = None
        self._too_large = False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Parse ``chunk`` (the next bytes of the stream); the events it completes, in order."""
        if not self._started:
            if not chunk:
                return []
            # §9.2.6: "One leading U+FEFF BYTE ORDER MARK character must be ignored".  Its three
            # bytes may come in as many chunks: the bytes so far are held (in ``_partial``) while
            # they are a BOM's beginning, and the decision is taken on them all, not on the last.
            head = b"".join(self._partial) + chunk
            self._partial, self._partial_size = [], 0
            if len(head) < len(_BOM) and _BOM.startswith(head):
                self._partial.append(head)
                self._partial_size = len(head)
                return []
            self._started = True
            chunk = head.removeprefix(_BOM)
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the LF of a CRLF split between two chunks
        self._after_cr = False
        if not chunk:
            return []
        events: list[SseEvent] = []
        self._out = events
        limit = self.max_event_size
        # bytes.splitlines splits at CRLF, LF and CR only: exactly the stream's end-of-line marks.
        for piece in chunk.splitlines(keepends=True):
            if piece[-1:] not in (b"\n", b"\r"):
                # no end of line yet: keep it (bounded) for the next chunk
                if not self._skipping_line:
                    self._partial_size += len(piece)
                    if self._partial_size > limit:
                        self._drop_line()
                    else:
                        self._partial.append(piece)
                continue
            line = piece.rstrip(b"\r\n")
            if self._skipping_line:
                self._skipping_line = False
                continue
            if self._partial:
                line = b"".join(self._partial) + line
                self._partial, self._partial_size = [], 0
            if len(line) > limit:
                self._overflow()
                continue
            self._line(line)
        self._after_cr = chunk.endswith(b"\r")
        return events

    def _drop_line(self) -> None:
        """The current line went past the bound: drop what was kept, and the rest as it comes."""
        self._partial, self._partial_size = [], 0
        self._skipping_line = True
        self._overflow()

    def _overflow(self) -> None:
        """The event being read went past the bound: say so now (once), keep none of its data."""
        if not self._too_large:
            self._too_large = True
            self._data = []
            self._out.append(SseEvent(too_large=True))

    def _line(self, line: bytes) -> None:
        """One whole line (no end-of-line mark); a blank one dispatches the event."""
        if not line:
            self._dispatch()
            return
        if line[:1] == b":":
            return  # a comment
        name, colon, value = line.partition(b":")
        if colon and value[:1] == b" ":
            value = value[1:]  # "If value starts with a U+0020 SPACE character, remove it"
        if name == b"data":
            if self._too_large:
                return
            self._data_size += len(value) + 1
            if self._data_size > self.max_event_size:
                self._overflow()
            else:
                self._data.append(value)
        elif name == b"event":
            self._type = value
        elif name == b"id":
            if b"\0" not in value:  # "If the field value does not contain U+0000 NULL"
                self._id_buffer = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():
            # bytes.isdigit: ASCII digits only (and not empty)
            # WHATWG HTML §9.2.6: "If the field value consists of only ASCII digits, then interpret
            # the field value as an integer in base ten ... Otherwise, ignore the field."
            retry = int(value) if len(value) <= _RETRY_DIGITS else 10**_RETRY_DIGITS
            self.retry = self._event_retry = retry
        # any other field is ignored

    def _dispatch(self) -> None:
        # §9.2.6 "dispatch the event": the last event ID is set first, whether or not there is data.
        self.last_id = self._id_buffer
        too_large, data, kind, retry = self._too_large, self._data, self._type, self._event_retry
        self._reset_event()
        if too_large or not data:
            return  # reported when it went past the bound; "If the data buffer is an empty string ... return"
        self._out.append(
            SseEvent(
                kind.decode("utf-8", "replace") or "message",
                b"\n".join(data).decode("utf-8", "replace"),
                self.last_id,
                retry,
            )
        )
