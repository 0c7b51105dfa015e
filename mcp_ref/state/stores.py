"""The state seams: every store a server's extras keep, each behind a small declared interface.

A server run as several processes (behind a load balancer) must share what one process learns:
how many requests a caller made, which tasks exist and where they stand, how many streams are open,
which changes happened.  Each store here is a :class:`typing.Protocol` with its in-memory
implementation, the default.  Designed for a shared implementation (e.g. Redis): keys are strings,
values JSON, and every operation is one call a remote store can make atomic (a Lua script, a
``MULTI``).  Time comes from each store's ``clock`` (monotonic seconds), so a test moves it instead
of sleeping.  Every store is bounded, and says what it does when full.

=================  ==================================================================  =======================
interface          what it keeps                                                       in memory
=================  ==================================================================  =======================
:class:`Buckets`   token buckets of the rate limits (:mod:`mcp_ref.extensions.ratelimit`)  :class:`MemoryBuckets`
:class:`Counters`  bounded counts: open listen streams (``max_subscriptions``)         :class:`MemoryCounters`
:class:`HeldSets`  the resources each principal subscribes to (shared state only)     (this process's streams)
:class:`Bus`       change notifications, fanned out to the streams of each process     :class:`MemoryBus`
:class:`TaskRecords`  the tasks extension's records (:mod:`mcp_ref.extensions.tasks`)      :class:`MemoryTaskRecords`
:class:`TaskQueue`    task ids waiting for a run slot                                  :class:`MemoryTaskQueue`
=================  ==================================================================  =======================

The HTTP transport's own two (the session table and the event store) are in
:mod:`mcp_ref.http.server.sessions` and :mod:`~mcp_ref.http.server.events`.
A plain server loads none of this: a store is made when something first uses it.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import json
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import UTC, datetime
from operator import itemgetter
from typing import Any, Protocol

from ..errors import InvalidParams

log = logging.getLogger(__name__)

Clock = Callable[[], float]

#: Buckets a :class:`MemoryBuckets` keeps at most, and how many of the idlest it looks at to evict one.
DEFAULT_MAX_KEYS = 65536
EVICTION_SAMPLE = 16
#: Subscribers one channel of a :class:`MemoryBus` may have at once.
DEFAULT_MAX_SUBSCRIBERS = 65536
#: The statuses a task never leaves (SEP-2663 §Task Lifecycle).
TERMINAL = frozenset({"completed", "failed", "cancelled"})
#: Records one :meth:`TaskRecords.list` call returns at most (a larger ``limit`` is lowered to it).
MAX_PAGE = 1000


def _json(value: Any) -> Any:
    """A deep copy of a JSON value (what a remote store would give back): nothing is shared."""
    return json.loads(json.dumps(value))


def iso_now() -> str:
    """Now as a task's ``lastUpdatedAt`` (UTC, milliseconds, ``Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# -- rate-limit buckets ---------------------------------------------------------------------------


class Buckets(Protocol):
    """Token buckets, one per key: at most ``count`` tokens, refilled at ``count`` per ``seconds``.

    The spec asks for rate limits and defines none (2025-11-25 server/tools §Security
    Considerations: servers "MUST ... Rate limit tool invocations").
    """

    clock: Clock

    def take(self, key: str, count: int, seconds: float) -> float:
        """Take one token from ``key``'s bucket: 0.0 when admitted, else the seconds until one is
        available (nothing is taken then).  Atomic: refill, test and take are one step.

        A store may also offer ``take_all(items) -> (index, wait)`` (see
        :meth:`MemoryBuckets.take_all`): several buckets in one call, which a remote store makes one
        round trip; :class:`~mcp_ref.extensions.ratelimit.RateLimiter` uses it when it is there."""

    def __len__(self) -> int:
        """How many buckets are held now."""


class MemoryBuckets:
    """The default buckets, in memory, at most ``max_keys`` of them.

    A bucket that has refilled is indistinguishable from a new one, so it is dropped; the table is
    kept in least-recently-used order and swept from its old end.  Past ``max_keys`` live buckets,
    one is dropped: the fullest of the :data:`EVICTION_SAMPLE` idlest (its owner's next request
    starts from a full bucket, which costs it the least).  Not simply the idlest: a caller who has
    emptied a long-window bucket ("5/day") and then goes quiet would be the idlest, and filling the
    table with new keys would hand it its burst back.
    """

    def __init__(self, *, max_keys: int = DEFAULT_MAX_KEYS, clock: Clock = time.monotonic):
        if max_keys < 1:
            raise ValueError("max_keys must be at least 1")
        self.max_keys = max_keys
        self.clock = clock
        self._lock = threading.Lock()
        # key -> [tokens, when they were counted, count, seconds], least recently used first
        self._buckets: OrderedDict[str, list] = OrderedDict()

    def take(self, key: str, count: int, seconds: float) -> float:
        """See :meth:`Buckets.take`."""
        rate = count / seconds
        with self._lock:
            now = self.clock()
            # taken out and put back: the bucket goes to the recently used end
            bucket = self._buckets.pop(key, None)
            tokens = float(count)
            if bucket is not None:
                tokens = min(tokens, bucket[0] + (now - bucket[1]) * rate)
            wait = 0.0
            if tokens >= 1.0:
                tokens -= 1.0
            else:
                wait = (1.0 - tokens) / rate
            self._buckets[key] = [tokens, now, count, seconds]
            self._sweep(now)
            return wait

    def take_all(self, items: Sequence[tuple[str, int, float]]) -> tuple[int, float]:
        """:func:`take_each` (in memory, one call is as cheap as several)."""
        return take_each(self, items)

    def _sweep(self, now: float) -> None:
        """Drop refilled buckets from the idle end; past ``max_keys``, the fullest of the idlest."""
        buckets = self._buckets
        while buckets:
            key, bucket = next(iter(buckets.items()))
            if _fill(bucket, now) < 1.0:
                break
            del buckets[key]
        while len(buckets) > self.max_keys:
            idlest = itertools.islice(buckets.items(), EVICTION_SAMPLE)
            del buckets[max(idlest, key=lambda item: _fill(item[1], now))[0]]

    def __len__(self) -> int:
        with self._lock:
            return len(self._buckets)


def take_each(buckets: Buckets, items: Sequence[tuple[str, int, float]]) -> tuple[int, float]:
    """``buckets.take`` from each ``(key, count, seconds)`` in turn, stopping at the first bucket with
    no token: ``(its index, seconds to wait)``, or ``(-1, 0.0)`` when every one gave one (the tokens
    of the buckets before a refusal stay taken, as separate takes would leave them)."""
    for index, (key, count, seconds) in enumerate(items):
        wait = buckets.take(key, count, seconds)
        if wait:
            return index, wait
    return -1, 0.0


def _fill(bucket: list, now: float) -> float:
    """How full a bucket is now, 0 to 1."""
    tokens, counted, count, seconds = bucket
    return min(1.0, (tokens + (now - counted) * count / seconds) / count)


# -- counters -------------------------------------------------------------------------------------


class Counters(Protocol):
    """Bounded counts by key (how many streams are open, ...).  A shared one ties each place to the
    process holding it, so a process that dies frees its places
    (:mod:`mcp_ref.state.redis.holders`)."""

    def acquire(self, key: str, limit: int | None) -> bool:
        """Add one to ``key``'s count unless it is ``limit`` already (None: no limit); True if added.
        Atomic: test and add are one step (two callers never both take the last place)."""

    def release(self, key: str) -> int:
        """Take one from ``key``'s count (never below 0); the count left."""

    def count(self, key: str) -> int:
        """``key``'s count now (0 for a key never acquired)."""


class MemoryCounters:
    """The default counters, in memory.  A count back at 0 is forgotten, so at most ``max_keys``
    counts are held; past it a new key cannot be acquired (``acquire`` answers False: refused like a
    full count, never an unbounded table)."""

    def __init__(self, *, max_keys: int = DEFAULT_MAX_KEYS):
        self.max_keys = max_keys
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def acquire(self, key: str, limit: int | None) -> bool:
        """See :meth:`Counters.acquire`."""
        with self._lock:
            held = self._counts.get(key, 0)
            if (limit is not None and held >= limit) or (
                not held and len(self._counts) >= self.max_keys
            ):
                return False
            self._counts[key] = held + 1
            return True

    def release(self, key: str) -> int:
        """See :meth:`Counters.release`."""
        with self._lock:
            left = self._counts.get(key, 0) - 1
            if left > 0:
                self._counts[key] = left
                return left
            self._counts.pop(key, None)
            return 0

    def count(self, key: str) -> int:
        """See :meth:`Counters.count`."""
        with self._lock:
            return self._counts.get(key, 0)


class HeldSets(Protocol):
    """Sets by key whose members each process holds, bounded by their distinct members: the
    resources one principal subscribes to over every process (``max_subscribed_resources``).

    Only a shared state has one (:meth:`State.held_sets`): in one process, its own connections and
    listen streams are the truth, and :meth:`mcp_ref.extensions.policy.Policy.check_subscriptions`
    counts them.  A member counts once however many processes hold it; a process that dies lets
    go of its members (the Redis one: :mod:`mcp_ref.state.redis.holders`).
    """

    def hold(self, key: str, members: Collection[str], limit: int | None) -> tuple[bool, int]:
        """This process holds ``members`` of ``key`` too, unless the distinct members held would then
        be over ``limit`` (None: no limit): ``(added, distinct members held)`` (after adding; before,
        when refused).  Atomic: two processes never both take the last place."""

    def release(self, key: str, members: Collection[str]) -> None:
        """This process no longer holds ``members`` of ``key`` (another process may still)."""

    def members(self, key: str) -> set[str]:
        """The distinct members of ``key`` held by any live process."""

    def hold_only(self, table: Mapping[str, Collection[str]]) -> None:
        """This process holds exactly ``table`` (key -> members) now: its other members go."""


# -- the change bus -------------------------------------------------------------------------------


class Bus(Protocol):
    """Change notifications, fanned out: the server publishes what changed, each process's streams
    subscribe and filter for their callers on the receiving side."""

    def publish(self, channel: str, message: dict) -> int:
        """Deliver ``message`` (a JSON object) to the channel's subscribers; how many (in this process,
        for a shared bus: those it knows of).  Never blocks on a subscriber."""

    def subscribe(self, channel: str, callback: Callable[[dict], None]) -> Callable[[], None]:
        """Call ``callback(message)`` for each message published on ``channel`` from now on; returns
        the function that unsubscribes.  ServerBusy-like refusal is the implementation's: see
        :class:`MemoryBus`."""


class MemoryBus:
    """The default bus: subscribers of this process only, at most ``max_subscribers`` per channel
    (past it ``subscribe`` raises OverflowError).

    Delivery is on the publisher's thread, in order, each subscriber given its own copy.  Policy for
    a slow subscriber: a callback must only hand the message on (the server's own write to a
    connection, whose transport bounds its queue and drops a stream that cannot keep up); a callback
    that raises is logged and the others still get the message.  A shared bus (Redis pub/sub)
    decouples by construction: publishing never waits for a subscriber.
    """

    def __init__(self, *, max_subscribers: int = DEFAULT_MAX_SUBSCRIBERS):
        self.max_subscribers = max_subscribers
        self._channels: dict[str, dict[int, Callable[[dict], None]]] = {}
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    def publish(self, channel: str, message: dict) -> int:
        """See :meth:`Bus.publish`."""
        with self._lock:
            callbacks = list(self._channels.get(channel, {}).values())
        for callback in callbacks:
            try:
                callback(_json(message))
            except Exception:  # one subscriber's failure is not the publisher's, nor the others'
                log.exception("a subscriber of %s failed", channel)
        return len(callbacks)

    def subscribe(self, channel: str, callback: Callable[[dict], None]) -> Callable[[], None]:
        """See :meth:`Bus.subscribe`."""
        number = next(self._numbers)
        with self._lock:
            subscribers = self._channels.setdefault(channel, {})
            if len(subscribers) >= self.max_subscribers:
                raise OverflowError(
                    f"channel {channel!r} has {self.max_subscribers} subscribers already"
                )
            subscribers[number] = callback

        def unsubscribe() -> None:
            with self._lock:
                subscribers = self._channels.get(channel)
                if subscribers is not None:
                    subscribers.pop(number, None)
                    if not subscribers:
                        del self._channels[channel]

        return unsubscribe

    def subscribers(self, channel: str) -> int:
        """How many subscribers ``channel`` has now."""
        with self._lock:
            return len(self._channels.get(channel, {}))


# -- task records ---------------------------------------------------------------------------------


class TaskRecords(Protocol):
    """The tasks extension's records (SEP-2663): one JSON object per task id, the truth that
    ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` are answered from, by any process.

    A record has at least ``taskId``, ``owner``, ``caller``, ``status``, ``started``,
    ``cancelRequested``, ``inputRequests`` (key -> InputRequest, the asks outstanding) and
    ``inputResponses`` (key -> answer, taken but not yet read by the handler).  No operation changes
    a record whose status is terminal (``completed``, ``failed``, ``cancelled``): SEP-2663 §Task
    Lifecycle, a terminal status is final.  An expired record is gone: SEP-2663, after its TTL a
    server "MAY ... delete it at any time".
    """

    clock: Clock

    def create(
        self,
        task_id: str,
        record: dict,
        *,
        ttl: float | None,
        caller: str | None,
        max_per_caller: int | None,
        max_total: int,
    ) -> str:
        """Add a record kept ``ttl`` seconds (None: until deleted).  Atomic with its bounds:
        ``"caller_full"`` when ``caller`` has ``max_per_caller`` unfinished tasks, ``"full"`` when
        ``max_total`` records exist and none has finished (else the oldest finished one of
        ``caller`` is dropped, or if it has none the oldest finished one: a caller's new tasks never
        wipe out another's results while it has results of its own to give up; 2025-11-25
        basic/utilities/tasks §Task Isolation, §Resource Management), ``"created"`` when added."""

    def get(self, task_id: str) -> dict | None:
        """The record (a copy), or None: no such task, or it expired."""

    def transition(
        self,
        task_id: str,
        changes: Mapping[str, Any],
        *,
        when: Mapping[str, Collection] | None = None,
    ) -> dict | None:
        """Set the fields ``changes`` names, if the record exists, is not terminal, and each field
        ``when`` names has one of the values listed; the record after, or None (nothing changed)."""

    def put_inputs(self, task_id: str, requests: Mapping[str, dict]) -> bool:
        """Add outstanding asks to ``inputRequests`` and set the status ``input_required``; False
        (nothing changed) for a missing or terminal record."""

    def withdraw_inputs(self, task_id: str, keys: Collection[str]) -> None:
        """Take asks back: no longer outstanding (the status is ``working`` when none is left)."""

    def put_responses(self, task_id: str, responses: Mapping[str, Any]) -> list[str]:
        """``tasks/update``: move the answers to outstanding asks into ``inputResponses`` (others are
        ignored); the keys taken.  The status is ``working`` again once no ask is outstanding."""

    def take_responses(self, task_id: str, keys: Collection[str]) -> dict:
        """Remove and return the answers of ``keys`` that came (the handler reads them)."""

    def delete(self, task_id: str) -> bool:
        """Forget a task; False if it was not there."""

    def sweep(self) -> list[str]:
        """Forget the expired tasks; their ids (the process running one stops it)."""

    def count(self, caller: str | None = None) -> int:
        """The records held; with ``caller``, that caller's unfinished tasks."""

    def list(
        self, owner: str | None, cursor: str | None, limit: int
    ) -> tuple[list[dict], str | None]:
        """``tasks/list`` (2025-11-25 basic/utilities/tasks §Listing Tasks, §Task Isolation): copies of the
        unexpired records whose ``owner`` (as created) is ``owner`` (None: None), in creation order, at most
        ``limit`` (put in 1..:data:`MAX_PAGE`), after ``cursor`` (None: from the first); and the next page's
        cursor (None: the last page).  Work is bounded by the page.  A cursor names a position: one whose record
        went meanwhile continues after it; a bad one raises InvalidParams (-32602, pagination §Error Handling)."""


def owner_digest(owner: str | None) -> str:
    """A digest of an owner or caller id (maybe a session's: a credential), for keys and cursors."""
    return hashlib.sha256(json.dumps(owner).encode()).hexdigest()[:32]


def page_cursor(owner: str | None, position: int) -> str:
    """The cursor of ``owner``'s listing after creation number ``position`` (opaque to clients)."""
    return f"{position}.{owner_digest(owner)[:12]}"


def cursor_position(owner: str | None, cursor: object, newest: float = float("inf")) -> int:
    """The creation number a :func:`page_cursor` continues after (0 for None), or InvalidParams:
    malformed, made for another owner, or past ``newest`` (the last number given)."""
    position, _, tag = cursor.partition(".") if isinstance(cursor, str) else ("0", "", "")
    if cursor is not None and not (
        position.isascii()
        and position.isdigit()
        and len(position) <= 15
        and 0 < int(position) <= newest
        and tag == owner_digest(owner)[:12]
    ):
        raise InvalidParams("Invalid cursor: not one this server gave for your tasks/list")
    return int(position)


class MemoryTaskRecords:
    """The default task records, in memory, in order of creation.  Bounded by ``create``'s ``max_total``
    (the task store's ``max_tasks``); an owner's index (:meth:`list`) goes with the last of its records."""

    def __init__(self, *, clock: Clock = time.monotonic):
        self.clock = clock
        self._records: dict[str, dict] = {}
        self._expires: dict[str, float] = {}
        self._created = 0  # the last creation number given
        self._order: dict[str, tuple[int, str | None]] = {}  # id -> (creation number, owner)
        # owner -> (number, id), ascending
        self._owned: dict[str | None, list[tuple[int, str]]] = {}
        # expired records a read forgot since the last sweep, which reports them (at most one entry
        # a record: a forgotten one is not read again; create sweeps first)
        self._forgotten: list[str] = []
        self._lock = threading.Lock()

    def create(
        self,
        task_id: str,
        record: dict,
        *,
        ttl: float | None,
        caller: str | None,
        max_per_caller: int | None,
        max_total: int,
    ) -> str:
        """See :meth:`TaskRecords.create`."""
        with self._lock:
            self._sweep()
            records = self._records
            if max_per_caller is not None and self._unfinished(caller) >= max_per_caller:
                return "caller_full"
            if len(records) >= max_total:
                finished = [tid for tid, r in records.items() if r["status"] in TERMINAL]
                if not finished:
                    return "full"
                own = (tid for tid in finished if records[tid]["caller"] == caller)
                self._drop(next(own, finished[0]))
            self._drop(task_id)  # an id made again is a new record, at the end of the order
            records[task_id] = _json(record)
            self._created += 1
            self._order[task_id] = (self._created, record.get("owner"))
            self._owned.setdefault(record.get("owner"), []).append((self._created, task_id))
            if ttl is not None:
                self._expires[task_id] = self.clock() + ttl
            return "created"

    def get(self, task_id: str) -> dict | None:
        """See :meth:`TaskRecords.get`."""
        with self._lock:
            return _json(self._live(task_id))  # a copy (None, no record, stays None)

    def transition(
        self,
        task_id: str,
        changes: Mapping[str, Any],
        *,
        when: Mapping[str, Collection] | None = None,
    ) -> dict | None:
        """See :meth:`TaskRecords.transition`."""
        with self._lock:
            record = self._open(task_id)
            if record is None or any(
                record.get(name) not in values for name, values in (when or {}).items()
            ):
                return None
            record.update(_json(dict(changes)))
            return _json(record)

    def put_inputs(self, task_id: str, requests: Mapping[str, dict]) -> bool:
        """See :meth:`TaskRecords.put_inputs`."""
        with self._lock:
            record = self._open(task_id)
            if record is None:
                return False
            record["inputRequests"].update(_json(dict(requests)))
            record["status"], record["lastUpdatedAt"] = "input_required", iso_now()
            return True

    def withdraw_inputs(self, task_id: str, keys: Collection[str]) -> None:
        """See :meth:`TaskRecords.withdraw_inputs`."""
        with self._lock:
            record = self._open(task_id)
            if record is not None:
                for key in keys:
                    record["inputRequests"].pop(key, None)
                self._settle(record)

    def put_responses(self, task_id: str, responses: Mapping[str, Any]) -> list[str]:
        """See :meth:`TaskRecords.put_responses`."""
        with self._lock:
            record = self._open(task_id)
            if record is None:
                return []
            taken = [key for key in responses if key in record["inputRequests"]]
            for key in taken:
                del record["inputRequests"][key]
                record["inputResponses"][key] = _json(responses[key])
            if taken:
                record["lastUpdatedAt"] = iso_now()
                self._settle(record)
            return taken

    def take_responses(self, task_id: str, keys: Collection[str]) -> dict:
        """See :meth:`TaskRecords.take_responses`."""
        with self._lock:
            record = self._live(task_id)
            if record is None:
                return {}
            responses = record["inputResponses"]
            return {key: responses.pop(key) for key in keys if key in responses}

    def delete(self, task_id: str) -> bool:
        """See :meth:`TaskRecords.delete`."""
        with self._lock:
            return self._drop(task_id)

    def sweep(self) -> list[str]:
        """See :meth:`TaskRecords.sweep`."""
        with self._lock:
            return self._sweep()

    def count(self, caller: str | None = None) -> int:
        """See :meth:`TaskRecords.count`."""
        with self._lock:
            return len(self._records) if caller is None else self._unfinished(caller)

    # (holding the lock)

    def _unfinished(self, caller: str | None) -> int:
        return sum(
            1
            for r in self._records.values()
            if r["caller"] == caller and r["status"] not in TERMINAL
        )

    def _sweep(self) -> list[str]:
        now = self.clock()
        gone = [task_id for task_id, ends in self._expires.items() if now >= ends]
        for task_id in gone:
            self._drop(task_id)
        gone += self._forgotten
        self._forgotten = []
        return gone

    def _drop(self, task_id: str) -> bool:
        self._expires.pop(task_id, None)
        if task_id in self._order:
            number, owner = self._order.pop(task_id)
            entries = self._owned[owner]
            del entries[bisect.bisect_left(entries, number, key=itemgetter(0))]
            if not entries:
                del self._owned[owner]
        return self._records.pop(task_id, None) is not None

    def _live(self, task_id: str) -> dict | None:
        ends = self._expires.get(task_id)
        if ends is not None and self.clock() >= ends:
            self._drop(task_id)
            self._forgotten.append(task_id)  # the next sweep names it: its handler stops
            return None
        return self._records.get(task_id)

    def _open(self, task_id: str) -> dict | None:
        record = self._live(task_id)
        return None if record is None or record["status"] in TERMINAL else record

    @staticmethod
    def _settle(record: dict) -> None:
        if not record["inputRequests"] and record["status"] == "input_required":
            record["status"], record["lastUpdatedAt"] = "working", iso_now()

    # listing, last: in the class body the name ``list`` would hide the builtin from the annotations after it

    def list(
        self, owner: str | None, cursor: str | None, limit: int
    ) -> tuple[list[dict], str | None]:
        """See :meth:`TaskRecords.list`."""
        limit = max(1, min(limit, MAX_PAGE))
        with self._lock:
            after = cursor_position(owner, cursor, self._created)
            entries, page = self._owned.get(owner, []), []  # type: list[tuple[int, str]], list[tuple[int, dict]]
            while len(page) <= limit and (
                at := bisect.bisect_right(entries, after, key=itemgetter(0))
            ) < len(entries):
                after, task_id = entries[at]
                if (record := self._live(task_id)) is not None:
                    page.append((after, _json(record)))
            return [record for _, record in page[:limit]], page_cursor(owner, page[-2][0]) if len(
                page
            ) > limit else None

    def index_size(self) -> int:
        """The entries :meth:`list`'s indexes hold (two per record held): their cost in memory."""
        with self._lock:
            return len(self._order) + sum(len(entries) for entries in self._owned.values())


# -- the queue of tasks waiting for a run slot ----------------------------------------------------


class TaskQueue(Protocol):
    """Task ids waiting for a run slot, first in first out, bounded."""

    def push(self, task_id: str) -> bool:
        """Append; False when the queue is full (nothing added: the caller refuses the task)."""

    def pop(self) -> str | None:
        """Remove and return the oldest id, or None when empty."""

    def discard(self, task_id: str) -> bool:
        """Remove an id wherever it is (a task cancelled or expired before it ran)."""

    def __len__(self) -> int:
        """How many ids wait."""


class MemoryTaskQueue:
    """The default queue, in memory, at most ``max_size`` ids; full, ``push`` refuses."""

    def __init__(self, max_size: int):
        self.max_size = max_size
        self._ids: deque[str] = deque()
        self._lock = threading.Lock()

    def push(self, task_id: str) -> bool:
        """See :meth:`TaskQueue.push`."""
        with self._lock:
            if len(self._ids) >= self.max_size:
                return False
            self._ids.append(task_id)
            return True

    def pop(self) -> str | None:
        """See :meth:`TaskQueue.pop`."""
        with self._lock:
            return self._ids.popleft() if self._ids else None

    def discard(self, task_id: str) -> bool:
        """See :meth:`TaskQueue.discard`."""
        with self._lock:
            try:
                self._ids.remove(task_id)
            except ValueError:
                return False
            return True

    def __len__(self) -> int:
        with self._lock:
            return len(self._ids)


# -- the deployment's choice: one State, whose stores a server uses ------------------------------------


class State(Protocol):
    """Where a deployment keeps what its processes must share: ``Server(state=...)``.

    Each method makes the store a server asks for (once: the server keeps it).  ``shared`` is True
    when other processes see the same state (every worker of a gunicorn, every host behind a
    balancer): then the HTTP app keeps its sessions and events there too.  The queue of tasks
    waiting for a run slot is always the process's own (the work waiting is a function of this
    process); what other processes need of a task is its record.
    """

    shared: bool

    def buckets(self) -> Buckets:
        """The rate limits' token buckets."""

    def counters(self) -> Counters:
        """Bounded counts (open listen streams, ...)."""

    def bus(self) -> Bus:
        """Change notifications, fanned out to every process's listeners."""

    def held_sets(self) -> HeldSets | None:
        """The resources each principal subscribes to, over the deployment; None: counted from this
        process's connections (``max_subscribed_resources``)."""

    def task_records(self) -> TaskRecords:
        """The tasks extension's records."""

    def event_store(self, **options: Any) -> Any:
        """The HTTP transport's event store (an ``mcp_ref.http.server.events.EventStore``),
        or None for the transport's own default."""

    def session_table(self, **options: Any) -> Any:
        """The HTTP transport's session table (a ``...http_server.sessions.SessionTable``), or None
        for the transport's own default."""

    def close(self) -> None:
        """Release connections and threads (a worker exiting)."""


class MemoryState:
    """The default :class:`State`: every store in this process's memory (nothing to install)."""

    shared = False

    def buckets(self) -> Buckets:
        """A :class:`MemoryBuckets`."""
        return MemoryBuckets()

    def counters(self) -> Counters:
        """A :class:`MemoryCounters`."""
        return MemoryCounters()

    def bus(self) -> Bus:
        """A :class:`MemoryBus`."""
        return MemoryBus()

    def held_sets(self) -> HeldSets | None:
        """None: one process's connections and listen streams are the truth."""
        return None

    def task_records(self) -> TaskRecords:
        """A :class:`MemoryTaskRecords`."""
        return MemoryTaskRecords()

    def event_store(self, **options: Any) -> Any:
        """None: the HTTP transport's in-memory default."""
        return None

    def session_table(self, **options: Any) -> Any:
        """None: the HTTP transport's in-memory default."""
        return None

    def close(self) -> None:
        """Nothing to release."""
