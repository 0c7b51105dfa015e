"""The inspector's record of one conversation: every message, HTTP exchange, SSE event and log line.

A :class:`Conversation` is fed by the client's hooks (``Client(trace=conv.trace)``,
``Client.http(..., http_trace=conv.http_trace)``, a launched server's stderr lines through
:meth:`Conversation.stderr`) and by the inspector's own notes.  It keeps a bounded log of
records, hands new ones to subscribers, and exports the whole as JSON lines or as the Mermaid
sequence diagram ``mcp-ref --diagram`` writes.

The record format (also the export format, one record a line)
-------------------------------------------------------------
Every record is a JSON object, its secrets already masked (:mod:`mcp_ref.inspector.masking`),
sent to the page and exported as strict JSON (:func:`json_text`: a NaN a server sent is the
string ``"NaN"`` there, a lone surrogate U+FFFD), with ``seq`` (1, 2, ... per conversation,
never reused, not even after :meth:`~Conversation.clear`), ``time`` (epoch seconds) and ``kind``:

- ``"message"``: ``direction`` (``"send"``: client to server; ``"receive"``: server to client),
  ``message`` (the JSON-RPC object, masked; for one nested deeper than the session reads,
  :data:`~mcp_ref.jsonrpc.MAX_NESTING`, that object masked and written as compact JSON text, read
  and written without recursing; for what is no JSON, its text, masked as free text), ``type``
  (``"request"``, ``"notification"``, ``"result"``, ``"error"`` or ``"invalid"``: no JSON-RPC
  message, no JSON, or a message received nested too deep, which the client refuses), ``method``
  (a request's or notification's; for a result or error the method of the request it answers,
  when known), ``id``, ``label`` (``tools/call #3 echo``, ``#3 result``, ``#3 error -32602``),
  ``valid`` (true, false, or null when no schema type applies), ``errors`` (at most 5 lines, masked as free text),
  ``schema`` (the revision checked against), ``spec`` (``{"title", "url"}`` of the spec section,
  or null), ``exchange`` (the HTTP exchange that carried it; null over stdio), ``carrier``
  (for a message received over HTTP: the seq of the ``http`` response or ``sse`` event record
  whose body or data held it; null otherwise) and ``size`` (bytes).  The checks are :mod:`mcp_ref.inspector.checks`'s.
- ``"http"`` and ``"sse"``: one HTTP request or response, one server-sent event
  (:mod:`mcp_ref.inspector.http_view` lists their fields).
- ``"stderr"``: ``line``, a launched server's stderr line (what reads as a secret masked).
- ``"note"``: ``text``, e.g. ``connected over stdio, 2026-07-28``.

Messages and exchanges are paired: a message received names the exchange whose JSON body or SSE
event carried it (matched by content); a message sent over HTTP is recorded when the request
carrying it goes out, so that it names that exchange too.  Until the conversation is known to be
HTTP's or not (told, ``Conversation(http=...)``, or found out: the first HTTP report says HTTP, a
message received with none before it says not), a sent message waits for its request or the next
other record.  A sent message whose request is not seen before the next other record (the
2026-07-28 era sends no client notifications over HTTP) is recorded with ``exchange`` null;
should its request still come, the record is completed then, and the request's record lists it
in ``messages`` (the seqs of the messages a request carried).

The JSON-lines export starts with a header record ``{"kind": "header", "format":
"mcp-ref-conversation", "version": 1, "target", "revision", "dropped", "exported"}``, then one
record a line, oldest first.

Bounds: at most ``max_records`` records (default 50,000) weighing at most ``max_bytes`` (default
256 MiB: a message's size, a body's or an event's length, an exchange's URL and headers, plus
:data:`RECORD_OVERHEAD` each): past
either the oldest are dropped and :attr:`Conversation.dropped` counts them.  Each subscriber's queue holds at most
:data:`SUBSCRIBER_QUEUE` records, and ``max_bytes`` of them: a subscriber that falls that far behind is closed (its
``get`` returns None and ``closed`` is true) and catches up with :meth:`Conversation.records`
from the last seq it saw.  The pairing tables are bounded too (:data:`MAX_PAIRING`, :data:`MAX_SAME`,
:data:`MAX_HELD`).
"""

from __future__ import annotations

import collections
import itertools
import json
import math
import queue
import re
import threading
import time
from typing import Any

from ..errors import InvalidRequest
from ..http.exchange_trace import HttpRequestSeen, HttpResponseSeen, SseEventSeen
from ..jsonrpc import MAX_NESTING
from ..unparsed import too_deep as refusal_of
from ..workbench.deep_json import dumps as dumps_deep, loads as loads_deep, too_deep
from ..workbench.diagram import Recorder, method_label, short, subject_label
from .checks import MessageChecker
from .http_view import carried_messages, cut, http_record, sse_record
from .masking import mask_free_text, mask_json

#: The records' size kept at most by default (bytes, roughly): 256 MiB.
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
#: What a record weighs besides its message, body, data or line (bytes, roughly).
RECORD_OVERHEAD = 256
#: Records a subscriber's queue holds; past it the subscriber is closed.
SUBSCRIBER_QUEUE = 10_000
#: Entries each pairing table (messages carried by exchanges; sent messages awaiting their
#: request) holds; past it the oldest is forgotten.
MAX_PAIRING = 10_000
#: Sent messages waiting for the request that carries them, at most; past it the oldest is
#: recorded without its exchange (it is completed should its request still come).
MAX_HELD = 1_000
#: Sent messages of the very same text awaiting their request, at most (the latest are kept).
MAX_SAME = 16
#: What ``records()`` returns at most per call.
MAX_PAGE = 10_000
#: The export's format name and version (its header record).
EXPORT_FORMAT = "mcp-ref-conversation"
EXPORT_VERSION = 1
#: The trace hook's directions as a record names them.
DIRECTIONS = {"-->": "send", "<--": "receive"}


class Subscription:
    """New records of a :class:`Conversation` as they come, through a bounded queue.

    ``get(timeout)`` returns the next record, or None when ``timeout`` passed or the
    subscription is closed (:attr:`closed`: by :meth:`close`, or by the conversation when
    :data:`SUBSCRIBER_QUEUE` records, or the conversation's ``max_bytes`` of them, were waiting:
    read the rest with ``records(after=...)``).
    """

    def __init__(self, conversation: Conversation):
        self._conversation = conversation
        self._queue: queue.Queue[dict | None] = queue.Queue(SUBSCRIBER_QUEUE)
        self._closed = threading.Event()
        self._max_bytes = conversation.max_bytes
        self._bytes = 0  # what the records waiting weigh
        self._bytes_lock = threading.Lock()

    @property
    def closed(self) -> bool:
        """True once closed: no more records come (those already queued are still returned)."""
        return self._closed.is_set()

    def get(self, timeout: float | None = None) -> dict | None:
        """The next record; None when ``timeout`` (seconds) passed or the subscription is closed."""
        if self._closed.is_set() and self._queue.empty():
            return None
        try:
            record = self._queue.get(timeout=timeout)
        except queue.Empty:
            return None
        if record is not None:
            with self._bytes_lock:
                self._bytes -= _weight(record)
        return record

    def close(self) -> None:
        """Stop receiving records (idempotent)."""
        self._conversation._unsubscribe(self)
        self._closed_now()

    def _offer(self, record: dict) -> bool:
        """Queue ``record``; False (and closed) when the queue is full, in records or bytes."""
        weight = _weight(record)
        with self._bytes_lock:
            if self._bytes + weight > self._max_bytes and self._bytes:
                full = True
            else:
                full = False
                self._bytes += weight
        if not full:
            try:
                self._queue.put_nowait(record)
                return True
            except queue.Full:
                with self._bytes_lock:
                    self._bytes -= weight
        self._closed_now()
        return False

    def _closed_now(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            try:
                self._queue.put_nowait(None)  # wakes a reader waiting in get()
            except queue.Full:
                pass


class Conversation:
    """The bounded, thread-safe record of one conversation (the module docstring has the format).

    ``max_records``: records kept (the oldest dropped past it, counted in :attr:`dropped`);
    ``max_bytes``: their size kept (the oldest dropped past it too: a server's 4 MiB answers
    do not make 50,000 records 200 GB).
    ``target``: what is inspected (a command line or URL), for the export's header.
    ``http``: True when the client talks HTTP, False when it does not, None (the default) to
    find out (the first message sent waits for its request or the next event; the first HTTP
    report, or a message received with none before it, decides).
    """

    def __init__(
        self,
        max_records: int = 50_000,
        *,
        target: str = "",
        http: bool | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ):
        for name, value in (("max_records", max_records), ("max_bytes", max_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, not {value!r}")
        self.max_records = max_records
        #: The records' size kept at most (bytes, roughly: their messages, bodies and lines).
        self.max_bytes = max_bytes
        self._bytes = 0
        #: What is inspected (a command line or URL): the export's header names it.
        self.target = target
        #: Records dropped from the start of the log since it began (or since :meth:`clear`).
        self.dropped = 0
        self._http = http  # None: not known yet (a sent message waits for the next event)
        self._lock = threading.Lock()
        self._records: collections.deque[dict] = collections.deque(maxlen=max_records)
        self._seq = itertools.count(1)
        self._subscribers: list[Subscription] = []
        self._checker = MessageChecker()
        self._recorder = Recorder()
        # message text (canonical JSON) -> the exchange that carried it, for messages received
        # (and the http or sse record whose body or data it was)
        self._carried: collections.OrderedDict[str, dict] = collections.OrderedDict()
        # message text -> its record, for messages sent whose request has not been seen yet
        self._unsent: collections.OrderedDict[str, list[dict]] = collections.OrderedDict()
        self._held: list[dict] = []  # records of those, waiting to be appended (HTTP)

    # -- what feeds it -------------------------------------------------------------------

    @property
    def revision(self) -> str | None:
        """The revision messages are checked against (told, or learnt from ``initialize``)."""
        return self._checker.revision

    def set_revision(self, version: str | None) -> None:
        """The negotiated revision: the checks use it from now on."""
        self._checker.set_revision(version)

    def trace(self, direction: str, data: bytes) -> None:
        """The client's ``trace`` hook: ``"-->"`` a message sent, ``"<--"`` one received."""
        now = time.time()
        # Counted first, without recursing: Python's parser recurses, a level a frame, and gives up
        # some 900 levels down (RecursionError) on what is JSON all the same.
        deep = too_deep(data)
        try:
            parsed = loads_deep(data) if deep else json.loads(data)
        except (ValueError, RecursionError):
            parsed = _NOT_JSON
        if parsed is _NOT_JSON or (deep and direction == "<--"):
            text, label, error = _refused_text(data, parsed)  # masked outside the lock
            with self._lock:
                self._recorder.record(direction, None)  # the diagram's "not a JSON-RPC message"
                self._flush_held()
                self._append(self._invalid(direction, text, len(data), now, label, error))
            return
        with self._lock:
            items = parsed if isinstance(parsed, list) and parsed else [parsed]
            self._recorder.record(direction, mask_json(parsed))
            for item in items:
                size = len(data) if len(items) == 1 else len(_canonical(item).encode())
                record = self._message(direction, item, size, now, deep)
                if direction == "-->":
                    if self._http is not False:  # HTTP, or not known yet: wait for the request
                        self._hold(_canonical(item), record)
                        continue
                else:
                    carrier = self._carried.pop(_canonical(item), None)
                    if carrier is not None:
                        record["exchange"], record["carrier"] = carrier["exchange"], carrier["seq"]
                    self._flush_held()
                    if self._http is None:  # an answer with no HTTP before it: not HTTP
                        self._http = False
                self._append(record)

    def http_trace(self, seen: HttpRequestSeen | HttpResponseSeen | SseEventSeen) -> None:
        """The HTTP client's observer (``Client.http(..., http_trace=conv.http_trace)``)."""
        now = time.time()
        if isinstance(seen, SseEventSeen):
            record = sse_record(seen)
            carried = carried_messages(seen.data)
        else:
            record = http_record(seen)
            carried = carried_messages(seen.body)
        with self._lock:
            self._http = True
            record["time"] = now
            if isinstance(seen, HttpRequestSeen):
                linked = []
                for item in carried:
                    waiting = self._unsent.get(_canonical(item))
                    if not waiting:
                        continue
                    message = waiting.pop(0)
                    if not waiting:
                        del self._unsent[_canonical(item)]
                    message["exchange"] = seen.exchange
                    if any(message is held for held in self._held):
                        self._held = [held for held in self._held if held is not message]
                        self._append(message)
                    linked.append(message["seq"])
                record["messages"] = linked
            else:
                for item in carried:
                    self._carried[_canonical(item)] = record  # numbered below, under the lock
                    self._carried.move_to_end(_canonical(item))
                    if len(self._carried) > MAX_PAIRING:
                        self._carried.popitem(last=False)
            self._append(record)

    def stderr(self, line: str) -> None:
        """A line the launched server wrote on its stderr."""
        kept, truncated = cut(
            str(line).rstrip("\r\n")
        )  # cut first: masking takes time as length does
        self._add({"kind": "stderr", "line": mask_free_text(kept, cut_short=truncated)})

    def note(self, text: str) -> None:
        """A note of the inspector's own (connected, reconnecting, closed ...); also a note across
        the lifelines of the Mermaid diagram."""
        self._recorder.note(text)
        self._add({"kind": "note", "text": str(text)})

    # -- what it gives ---------------------------------------------------------------------

    def records(self, after: int = 0, limit: int = 1000) -> list[dict]:
        """Up to ``limit`` (at most :data:`MAX_PAGE`) records whose ``seq`` is past ``after``, oldest first."""
        limit = max(0, min(int(limit), MAX_PAGE))
        with self._lock:
            if not self._records:
                return []
            first = self._records[0]["seq"]
            start = max(0, int(after) - first + 1)
            return list(itertools.islice(self._records, start, start + limit))

    @property
    def last(self) -> int:
        """The seq of the newest record (0: none yet)."""
        with self._lock:
            return self._records[-1]["seq"] if self._records else 0

    def subscribe(self) -> Subscription:
        """A :class:`Subscription` to every record appended from now on."""
        subscription = Subscription(self)
        with self._lock:
            self._subscribers.append(subscription)
        return subscription

    def export_jsonl(self) -> str:
        """The conversation as JSON lines: a header record, then every record kept, oldest first."""
        with self._lock:
            header = {
                "kind": "header",
                "format": EXPORT_FORMAT,
                "version": EXPORT_VERSION,
                "target": self.target,
                "revision": self._checker.revision,
                "dropped": self.dropped,
                "exported": time.time(),
            }
            lines = [json_text(header)]
            lines += [json_text(record) for record in self._records]
        return "\n".join(lines) + "\n"

    def mermaid(self, title: str) -> str:
        """The conversation as the Markdown and Mermaid ``sequenceDiagram`` ``--diagram`` writes
        (:class:`~mcp_ref.workbench.diagram.Recorder`: bounded, look-alike runs summarised)."""
        return self._recorder.mermaid(title)

    def clear(self) -> None:
        """Forget every record (``seq`` goes on from where it was: a reader's ``after`` stays good)."""
        with self._lock:
            self._records.clear()
            self._bytes = 0
            self.dropped = 0
            self._held.clear()
            self._unsent.clear()
            self._carried.clear()
            self._checker.clear()
            self._recorder = Recorder()

    # -- inside --------------------------------------------------------------------------------

    def _add(self, record: dict) -> None:
        record["time"] = time.time()
        with self._lock:
            self._flush_held()
            self._append(record)

    def _append(self, record: dict) -> None:
        """Number ``record``, keep it, and hand it to the subscribers (under the lock)."""
        record["seq"] = next(self._seq)
        if len(self._records) == self.max_records:
            self.dropped += 1
            self._bytes -= _weight(self._records[0])
        self._records.append(record)
        self._bytes += _weight(record)
        while self._bytes > self.max_bytes and len(self._records) > 1:
            self._bytes -= _weight(self._records.popleft())
            self.dropped += 1
        if self._subscribers:
            self._subscribers = [s for s in self._subscribers if s._offer(record)]

    def _hold(self, key: str, record: dict) -> None:
        """Keep a sent message's record until the request carrying it is seen (bounded)."""
        self._remember(self._unsent, key, record)
        self._held.append(record)
        if len(self._held) > MAX_HELD:  # the oldest goes without its exchange
            self._append(self._held.pop(0))

    def _flush_held(self) -> None:
        """Append the sent messages still waiting for their request (it did not come in time)."""
        held, self._held = self._held, []
        for record in held:
            self._append(record)

    def _unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            self._subscribers = [s for s in self._subscribers if s is not subscription]

    @staticmethod
    def _remember(table: collections.OrderedDict, key: str, record: dict) -> None:
        waiting = table.setdefault(key, [])
        waiting.append(record)
        del waiting[:-MAX_SAME]  # the same text sent again and again: the latest few
        table.move_to_end(key)
        if len(table) > MAX_PAIRING:
            table.popitem(last=False)

    def _invalid(
        self, direction: str, text: str, size: int, now: float, label: str, error: str
    ) -> dict:
        return {
            "kind": "message",
            "time": now,
            "direction": DIRECTIONS.get(direction, direction),
            "message": text,
            "type": "invalid",
            "method": None,
            "id": None,
            "label": label,
            "valid": False,
            "errors": [error],
            "schema": self._checker.revision,
            "spec": None,
            "exchange": None,
            "carrier": None,
            "size": size,
        }

    def _message(self, direction: str, message: Any, size: int, now: float, deep: bool) -> dict:
        """The record of a message; ``deep``: one the client sends nested deeper than the session
        reads, written as text and not checked against the schema (both would recurse)."""
        check = self._checker.check(direction, message, validate=not deep)
        kind = message_type(message)
        request_id = message.get("id") if isinstance(message, dict) else None
        masked = mask_json(message)
        return {
            "kind": "message",
            "time": now,
            "direction": DIRECTIONS.get(direction, direction),
            "message": cut(dumps_deep(masked))[0] if deep else masked,
            "type": kind,
            "method": check.method,
            "id": request_id if _json_scalar(request_id) else None,
            "label": label(masked, kind),
            "valid": check.valid,
            "errors": [_SENT_DEEP] if deep else list(check.errors),
            "schema": check.schema,
            "spec": check.spec,
            "exchange": None,
            "carrier": None,
            "size": size,
        }


_NOT_JSON = object()
#: What a message the client sends nested deeper than the session reads is marked with: the
#: session writes what its caller built, at any depth, and a peer may refuse it, as this
#: library's does (RFC 8259 §9: "An implementation may set limits on the maximum depth of
#: nesting").
_SENT_DEEP = (
    f"nested deeper than {MAX_NESTING} levels, the most this library reads: sent as it is, "
    "not checked against the schema"
)


def _refused_text(data: bytes, parsed: Any) -> tuple[str, str, str]:
    """``(text, label, error)`` of what is no JSON, or a message received nested deeper than the
    session reads (``parsed``): its text as shown (masked, cut), and what the client does with it.

    Text that is no JSON is cut to what is shown before it is masked (:func:`cut`, then
    :func:`~.masking.mask_free_text` told it was cut): a server's line of a megabyte is masked
    as its first 64 KiB are."""
    raw = data if isinstance(data, (bytes, bytearray)) else str(data).encode()
    text = bytes(raw).decode("utf-8", errors="replace")
    if parsed is _NOT_JSON:
        kept, truncated = cut(text)
        return mask_free_text(kept, cut_short=truncated), "(not JSON)", "not JSON"
    # masked as any message is, and written again without recursing
    label = f"(nested deeper than the limit of {MAX_NESTING})"
    return cut(dumps_deep(mask_json(parsed)))[0], label, _refusal(text)


def _refusal(text: str) -> str:
    """What the session does with a message it received nested too deep, told by its own refusal
    of it (``Session.receive``, :func:`mcp_ref.unparsed.too_deep`): an answer whose id it reads
    fails that request at once; a request whose id it reads is answered -32600 with that id;
    anything else is a parse error."""
    refusal = refusal_of(text, MAX_NESTING)
    reason = f"nested deeper than the limit of {MAX_NESTING}: the client refuses it"
    if not isinstance(refusal, InvalidRequest) or refusal.request_id is None:
        return f"{reason} as a parse error (-32700)"
    if refusal.answer:
        return f"{reason}, and its request #{short(refusal.request_id)} fails at once"
    return f"{reason}, answering -32600 (Invalid Request) to #{short(refusal.request_id)}"


def _weight(record: dict) -> int:
    """What a record weighs against ``max_bytes``: its message's size, or its body's, data's or
    line's length, and an HTTP record's URL and headers (names and values, the protocol's own
    listed again), an SSE event's id and name, plus :data:`RECORD_OVERHEAD` (the same every time
    it is asked)."""
    if record["kind"] == "message":
        return record["size"] + RECORD_OVERHEAD
    text = (
        record.get("body") or record.get("data") or record.get("line") or record.get("text") or ""
    )
    weight = len(text) + RECORD_OVERHEAD
    for field in ("url", "event_id", "event"):
        weight += len(str(record.get(field) or ""))
    weight += sum(len(name) + len(value) for name, value in record.get("headers") or ())
    for header in record.get("mcp_headers") or ():
        weight += len(header["raw"]) + len(header["decoded"] or "")
    return weight


def _json_scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


#: A lone surrogate in a Python string: JSON text may escape one (``"\ud800"``: RFC 8259 §8.2
#: says only that what it does is unpredictable), UTF-8 cannot encode one.
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")
#: How :func:`json_text` writes: one line, as it is (UTF-8 is the page's and the export's).
_COMPACT: dict[str, Any] = {"ensure_ascii": False, "separators": (",", ":"), "default": str}


def json_text(value: Any) -> str:
    """``value`` as one line of strict JSON, the only way a record (or the state, or an ask)
    reaches the page (whose ``JSON.parse`` takes nothing else) or an export.

    What a server may send that strict JSON or UTF-8 cannot carry is made so here, once, for
    every path: a NaN or an infinity (Python's parser reads ``NaN``, ``Infinity``) becomes the
    string ``"NaN"``, ``"Infinity"`` or ``"-Infinity"``; a lone surrogate (a JavaScript server's
    string cut between the halves of an emoji: ``"\\ud83d"``) becomes U+FFFD, the replacement
    character.  Everything else is as it was; what is no JSON value is its ``str``."""
    try:
        text = json.dumps(value, allow_nan=False, **_COMPACT)
    except ValueError:  # a NaN or an infinity in it (the walk only then): RFC 8259 §6, "Numeric
        # values that cannot be represented in the grammar below (such as Infinity and NaN) are
        # not permitted"
        text = json.dumps(_finite(value), allow_nan=False, **_COMPACT)
    return _LONE_SURROGATE.sub("\ufffd", text)


def _finite(value: Any) -> Any:
    """A copy of ``value`` whose NaNs and infinities are the strings that name them (walked with
    a stack: a record nests only as deep as the session reads, but nothing here recurses)."""
    root: list[Any] = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        parent, key = stack.pop()
        item = parent[key]
        if isinstance(item, dict):
            copy = parent[key] = dict(item)
            stack.extend((copy, name) for name in copy)
        elif isinstance(item, (list, tuple)):
            items = parent[key] = list(item)
            stack.extend((items, index) for index in range(len(items)))
        elif isinstance(item, float) and math.isnan(item):
            parent[key] = "NaN"
        elif isinstance(item, float) and math.isinf(item):
            parent[key] = "Infinity" if item > 0 else "-Infinity"
    return root[0]


def _canonical(message: Any) -> str:
    """A message's text, the same however it was spaced or ordered: the key that pairs it (one
    nested as deep as Python's writer recurses is written without recursing, to the same text)."""
    try:
        return json.dumps(message, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except RecursionError:
        return dumps_deep(message, sort_keys=True)


def message_type(message: Any) -> str:
    """``"request"``, ``"notification"``, ``"result"``, ``"error"`` or ``"invalid"``."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return "invalid"
    if isinstance(message.get("method"), str):
        return "request" if "id" in message else "notification"
    if "result" in message:
        return "result"
    if "error" in message:
        return "error"
    return "invalid"


def label(message: Any, kind: str | None = None) -> str:
    """The short text of a message's row: ``tools/call #3 echo``, ``#3 result``, ``#3 error -32602``,
    ``notifications/progress`` (the diagram's rules: methods, names, URIs, codes; never payloads)."""
    kind = kind or message_type(message)
    if kind == "invalid" or not isinstance(message, dict):
        return "(not a JSON-RPC message)"
    ident = f"#{short(message.get('id'))}"
    if kind == "request":
        subject = subject_label(message)
        return f"{short(message['method'], 64)} {ident}" + (f" {subject}" if subject else "")
    if kind == "notification":
        return method_label(message["method"], message)
    if kind == "error":
        error = message["error"] if isinstance(message["error"], dict) else {}
        return f"{ident} error {short(error.get('code'))}"
    return f"{ident} result"
