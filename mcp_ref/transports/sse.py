"""Server-Sent Events: encoding one event (the HTML Living Standard's
``text/event-stream`` format).  Parsing on the client side is sseclient-py's."""

from __future__ import annotations


def sse_event(data: bytes = b"", *, event_id: str | None = None, event: str | None = None,
              retry: int | None = None) -> bytes:
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
