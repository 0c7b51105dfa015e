"""The change bus on Redis pub/sub: a change on one worker reaches the listeners of every worker.

:class:`RedisBus` implements :class:`mcp_ref.state.stores.Bus`.  A publish is one ``PUBLISH`` on
the namespaced channel (``<namespace>:bus:<channel>``, the message as JSON).  Each process reads its
subscriptions on one pub/sub connection of its own, in a listener thread, and hands each message
to a bounded queue that one delivery thread empties into the local callbacks of that channel, in
the order Redis gave them.  A process's own publishes reach its subscribers through Redis, exactly
once (nothing is delivered locally as well).

Faults (issue 22, "Redis down or restarted mid-run: no crash and no hang"):

- ``publish`` never raises and never waits longer than the connection's socket timeout: on a
  failure it answers 0 and logs a warning at most once a minute (counting the failures, in
  :attr:`RedisBus.failed_publishes`).  What was published while Redis was down is gone: pub/sub
  keeps nothing.
- The listener reconnects with capped exponential backoff (waits on its stop event, so ``close``
  ends it at once), subscribes every channel again, and then calls the ``on_reconnect`` hooks (on
  the delivery thread): a server re-announces its lists there, since a listener may have missed a
  change.  A connection that stays silent for two heartbeats (a PING unanswered) counts as lost.
- A slow callback holds only the delivery thread: the listener keeps reading, the queue fills, and
  past ``max_queue`` messages a new one is dropped, counted (:attr:`RedisBus.dropped`) and logged
  (at most once a minute, with the count).  A message is a notification, never an acknowledgement.
"""

from __future__ import annotations

import collections
import itertools
import json
import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from .connection import Throttled, fresh_after_fork, json_text, reply_text

log = logging.getLogger(__name__)

#: Messages received and not yet delivered, at most (per bus, so per process); past it, dropped.
DEFAULT_MAX_QUEUE = 10_000
#: Seconds of silence on the pub/sub connection before a PING; twice that unanswered: reconnect.
HEARTBEAT = 5.0
#: Backoff between reconnection attempts: from the first to the cap, doubling.
MIN_BACKOFF, MAX_BACKOFF = 0.05, 5.0
#: Subscribers one channel may have in one process (as :class:`~mcp_ref.state.stores.MemoryBus`; not
#: imported from there: this module stays out of the lazy ``state -> redis_state`` import's loop).
DEFAULT_MAX_SUBSCRIBERS = 65536
#: Hooks ``on_reconnect`` keeps at most (past it, OverflowError).
MAX_HOOKS = 1024

Callback = Callable[[dict], None]


class RedisBus:
    """A :class:`~mcp_ref.state.stores.Bus` over Redis pub/sub (see the module docstring).

    ``connection`` is a :class:`~mcp_ref.state.redis.connection.Connection`.  Threads start
    on the first ``subscribe`` (and again in a forked child that has subscribers).  Counters:
    ``dropped`` (messages the full queue refused), ``failed_publishes``, ``received`` (messages read
    from Redis), ``reconnects``.  ``subscribe_timeout`` (default: the connection's socket timeout)
    bounds how long ``subscribe`` waits for Redis to confirm a new channel; while Redis is known to
    be down it does not wait (the listener subscribes the channel when it is back).
    """

    def __init__(
        self,
        connection: Any,
        *,
        max_queue: int = DEFAULT_MAX_QUEUE,
        max_subscribers: int = DEFAULT_MAX_SUBSCRIBERS,
        subscribe_timeout: float | None = None,
        heartbeat: float = HEARTBEAT,
        min_backoff: float = MIN_BACKOFF,
        max_backoff: float = MAX_BACKOFF,
    ):
        if max_queue < 1 or max_subscribers < 1:
            raise ValueError("max_queue and max_subscribers must be at least 1")
        self.connection = connection
        self.max_queue = max_queue
        self.max_subscribers = max_subscribers
        self.subscribe_timeout = (
            connection.socket_timeout if subscribe_timeout is None else subscribe_timeout
        )
        self.heartbeat = heartbeat
        self.min_backoff, self.max_backoff = min_backoff, max_backoff
        self.dropped = self.failed_publishes = self.received = self.reconnects = 0
        self.closed = False
        # local channel -> subscriber number -> callback
        self._channels: dict[str, dict[int, Callback]] = {}
        self._hooks: dict[int, Callable[[], None]] = {}
        self._numbers = itertools.count(1)
        self._prefix = connection.key("bus", "")
        self._fresh_process()
        fresh_after_fork(self._fresh_process)

    def _fresh_process(self) -> None:
        """This process's part: locks, threads, the pub/sub connection (none yet), the queue; in a
        forked child whose bus has subscribers, its threads started again."""
        # everything below, and the tables above
        self._cond = threading.Condition(threading.RLock())
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        # (None, None): the hooks
        self._queue: collections.deque[tuple[str | None, Any]] = collections.deque()
        self._queued = 0  # messages in the queue (hooks are not counted: they are never dropped)
        self._connected = False
        self._connecting = False
        self._dirty: set[str] = set()  # channels whose Redis subscription must be brought in line
        self._on_redis: set[str] = set()  # channels subscribed on this connection (sent)
        # SUBSCRIBEs sent / confirmed on this connection, by channel
        self._sent: Counter[str] = Counter()
        self._acked: Counter[str] = Counter()
        # wakes this process's listener
        self._control = self.connection.key("bus~", os.urandom(8).hex())
        self._warnings = Throttled(log)
        if self._channels:
            self._start()

    # -- the Bus interface --------------------------------------------------------------------------

    def publish(self, channel: str, message: dict) -> int:
        """One ``PUBLISH``: the number of processes Redis delivered it to (0 on a failure, logged)."""
        try:
            return int(self.connection.client.publish(self._prefix + channel, json_text(message)))
        # Redis down, or an unencodable message: never the request's failure
        except Exception as error:
            with self._cond:
                self.failed_publishes += 1
            self._warnings.warning("publish", "bus: a publish on %r failed (%s)", channel, error)
            return 0

    def subscribe(self, channel: str, callback: Callback) -> Callable[[], None]:
        """Call ``callback(message)`` (on the delivery thread) for each message on ``channel`` from
        now on; the function that unsubscribes.  Waits (at most ``subscribe_timeout``) until Redis has
        confirmed the channel, so a publish after this returns is heard.  OverflowError past
        ``max_subscribers`` on one channel; RuntimeError once closed."""
        number = next(self._numbers)
        with self._cond:
            if self.closed:
                raise RuntimeError("the bus is closed")
            subscribers = self._channels.setdefault(channel, {})
            if len(subscribers) >= self.max_subscribers:
                raise OverflowError(
                    f"channel {channel!r} has {self.max_subscribers} subscribers already"
                )
            subscribers[number] = callback
            new = len(subscribers) == 1
            if new:
                self._dirty.add(channel)
            self._start()
            wake = new and self._connected
        if wake:
            self._wake()
        with self._cond:
            # until Redis confirmed the channel, the listener is known to be down, or the timeout
            self._cond.wait_for(
                lambda: (
                    self._confirmed(channel)
                    or self.closed
                    or channel not in self._channels
                    or not (self._connected or self._connecting)
                ),
                self.subscribe_timeout,
            )

        def unsubscribe() -> None:
            with self._cond:
                subscribers = self._channels.get(channel)
                if subscribers is None or subscribers.pop(number, None) is None or subscribers:
                    return
                del self._channels[channel]
                self._dirty.add(channel)
                wake = self._connected
            if wake:
                self._wake()

        return unsubscribe

    # -- more than the interface ------------------------------------------------------------------

    def on_reconnect(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` (on the delivery thread) each time the listener is connected again after
        losing Redis (messages published meanwhile are gone: re-announce what may have changed); the
        function that removes it."""
        number = next(self._numbers)
        with self._cond:
            if len(self._hooks) >= MAX_HOOKS:
                raise OverflowError(f"{MAX_HOOKS} reconnect hooks already")
            self._hooks[number] = callback

        def remove() -> None:
            with self._cond:
                self._hooks.pop(number, None)

        return remove

    def subscribers(self, channel: str) -> int:
        """How many local subscribers ``channel`` has now."""
        with self._cond:
            return len(self._channels.get(channel, {}))

    @property
    def connected(self) -> bool:
        """True while the listener holds a working pub/sub connection."""
        return self._connected

    @property
    def alive(self) -> bool:
        """True while this process's listener or delivery thread runs."""
        return any(thread.is_alive() for thread in self._threads)

    def confirmed(self, channel: str) -> bool:
        """True when Redis has confirmed this process's subscription to ``channel`` (on this connection)."""
        with self._cond:
            return self._confirmed(channel)

    def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``predicate()`` (called with the bus's lock held) is true, at most ``timeout``
        seconds; whether it is.  Woken by every change of the bus's state and counters."""
        with self._cond:
            return self._cond.wait_for(predicate, timeout)

    def close(self) -> None:
        """Stop this process's threads and close its pub/sub connection (waits for them, bounded by
        the socket timeout).  Publishing still works; subscribing raises."""
        with self._cond:
            self.closed = True
            self._stop.set()
            self._cond.notify_all()
            threads = list(self._threads)
        if self._connected:
            self._wake()
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(self.connection.socket_timeout + self.heartbeat)

    # -- threads --------------------------------------------------------------------------------------

    def _start(self) -> None:
        """Start the listener and the delivery thread, once per process (holding the lock)."""
        if self._threads or self.closed:
            return
        self._connecting = True  # the first attempt is on its way: a subscriber may wait for it
        for target, name in ((self._listen, "listener"), (self._deliver, "delivery")):
            thread = threading.Thread(target=target, name=f"redis-bus-{name}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def _listen(self) -> None:
        """The listener: connect, read, and on a failure reconnect after a backoff, until stopped."""
        # failures in a row: the connection was lost (or never made) when there are
        failures = 0
        while not self._stop.is_set():
            if failures and self._stop.wait(
                min(self.max_backoff, self.min_backoff * 2 ** (failures - 1))
            ):
                break
            try:
                client, pubsub = self._open()
            except Exception as error:
                failures += 1
                self._down(None, None, "bus: cannot reach Redis (%s); retrying", error)
                continue
            try:
                self._settle(pubsub)
                if failures:
                    with self._cond:
                        self.reconnects += 1
                        # the hooks' turn, after what was queued
                        self._put((None, None), counted=False)
                    log.warning("bus: connected to Redis again; every channel subscribed again")
                failures = 0
                self._read(pubsub)
            except Exception as error:
                failures += 1
                self._down(
                    client,
                    pubsub,
                    "bus: lost the pub/sub connection to Redis (%s); reconnecting",
                    error,
                )
            else:
                self._down(client, pubsub, "", None)

    def _settle(self, pubsub: Any) -> None:
        """Read until Redis confirmed every channel subscribed on connecting (then the hooks'
        re-announcements reach this process's own listeners too); ConnectionError past the socket timeout."""
        deadline = time.monotonic() + self.connection.socket_timeout
        while True:
            with self._cond:
                if all(self._acked[channel] >= sent for channel, sent in self._sent.items()):
                    return
            left = deadline - time.monotonic()
            if left <= 0:
                raise ConnectionError("Redis did not confirm the subscriptions in time")
            message = pubsub.get_message(timeout=left)
            if message is not None:
                self._take(message)

    def _open(self) -> tuple[Any, Any]:
        """A new pub/sub connection subscribed to the control channel and every local channel: its
        client and its ``PubSub``.  The client is kept as long as its pub/sub connection: redis-py
        closes a client's pool when the client is collected (``Redis.__del__``), which would drop
        the connection under the listener; redis-py would then connect again and subscribe again
        on its own, and a message published in between would be lost."""
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        with self._cond:
            self._connecting = True
            self._cond.notify_all()
        timeout = self.connection.socket_timeout
        # Its own client: no retries and no health checks of redis-py's (this loop owns reconnecting).
        client = redis.Redis.from_url(
            self.connection.url,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            retry=Retry(NoBackoff(), 0),
            health_check_interval=0,
        )
        pubsub = client.pubsub()
        try:
            pubsub.subscribe(self._control)
            deadline = time.monotonic() + timeout
            while True:  # connected means answered: wait for Redis to confirm the control channel
                left = deadline - time.monotonic()
                message = pubsub.get_message(timeout=max(left, 0.0))
                if message is not None and message["type"] == "subscribe":
                    break
                if left <= 0:
                    raise ConnectionError("Redis did not confirm a subscription in time")
            with self._cond:
                self._sent, self._acked, self._on_redis = Counter(), Counter(), set()
                self._dirty = set(self._channels)
                self._sync(pubsub)
                self._connected, self._connecting = True, False
                self._cond.notify_all()
        except BaseException:
            pubsub.close()
            client.close()
            raise
        return client, pubsub

    def _read(self, pubsub: Any) -> None:
        """Read until stopped or failed: confirmations, messages (queued), PING answers."""
        heard = time.monotonic()
        pinged = False
        while not self._stop.is_set():
            with self._cond:
                if self._dirty:
                    self._sync(pubsub)
            message = pubsub.get_message(timeout=self.heartbeat)
            now = time.monotonic()
            if message is None:
                if now - heard >= 2 * self.heartbeat:
                    raise ConnectionError(f"no answer from Redis for {2 * self.heartbeat:g} s")
                if not pinged and now - heard >= self.heartbeat:
                    pubsub.ping()
                    pinged = True
                continue
            heard, pinged = now, False
            self._take(message)

    def _sync(self, pubsub: Any) -> None:
        """Send the SUBSCRIBEs and UNSUBSCRIBEs that bring Redis in line with the local channels
        (listener thread, holding the lock: only this thread writes to the pub/sub connection)."""
        dirty, self._dirty = self._dirty, set()
        wanted = [c for c in dirty if c in self._channels and c not in self._on_redis]
        unwanted = [c for c in dirty if c not in self._channels and c in self._on_redis]
        # counted as sent before sending: a send that fails loses the connection, and the next
        # one starts these counts again (_open)
        self._sent.update(wanted)
        self._on_redis.update(wanted)
        self._on_redis.difference_update(unwanted)
        for send, channels in ((pubsub.subscribe, wanted), (pubsub.unsubscribe, unwanted)):
            for start in range(0, len(channels), 1000):  # at most 1000 channels a command
                send(*(self._prefix + c for c in channels[start : start + 1000]))

    def _take(self, message: dict) -> None:
        """One message read from the pub/sub connection."""
        # no channel (a PING's answer): '', which is no channel of the bus
        kind, name = message["type"], reply_text(message.get("channel") or "")
        if kind in ("message", "subscribe", "unsubscribe") and name.startswith(self._prefix):
            channel = name[len(self._prefix) :]
            dropped = 0
            with self._cond:
                if kind == "message":
                    self.received += 1
                    if not self._put((channel, message["data"]), counted=True):
                        self.dropped += 1
                        dropped = self.dropped
                elif kind == "subscribe":
                    self._acked[channel] += 1
                elif channel not in self._channels and self._acked.get(channel) == self._sent.get(
                    channel
                ):
                    self._sent.pop(channel, None)  # unsubscribed and settled: forget its counts
                    self._acked.pop(channel, None)
                self._cond.notify_all()
            if dropped:
                self._warnings.warning(
                    "drop",
                    "bus: the delivery queue is full (%d messages): a message on %r was dropped "
                    "(%d dropped in all)",
                    self.max_queue,
                    channel,
                    dropped,
                )

    def _put(self, item: tuple[str | None, Any], *, counted: bool) -> bool:
        """Queue an item for the delivery thread (holding the lock); False when the queue is full."""
        if counted:
            if self._queued >= self.max_queue:
                return False
            self._queued += 1
        self._queue.append(item)
        self._cond.notify_all()
        return True

    def _deliver(self) -> None:
        """The delivery thread: each queued message to its channel's callbacks, in order."""
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._queue or self._stop.is_set())
                if self._stop.is_set():
                    return
                channel, data = self._queue.popleft()
                if channel is None:
                    hooks = list(self._hooks.values())
                else:
                    self._queued -= 1
                    callbacks = list(self._channels.get(channel, {}).values())
            if channel is None:
                for hook in hooks:
                    _call(hook, None, "a reconnect hook")
                continue
            for callback in callbacks:
                try:
                    message = json.loads(data)  # each subscriber its own copy
                except ValueError:
                    log.warning("bus: a message on %r is not JSON; ignored", channel)
                    break
                _call(callback, message, f"a subscriber of {channel!r}")

    # -- helpers ----------------------------------------------------------------------------------

    def _confirmed(self, channel: str) -> bool:
        # sent on this connection (at least once), and every SUBSCRIBE sent answered
        return (
            self._connected
            and channel in self._on_redis
            and 0 < self._sent[channel] <= self._acked[channel]
        )

    def _wake(self) -> None:
        """Wake the listener (a message on this process's control channel): it has work."""
        try:
            self.connection.client.publish(self._control, b"")
        except Exception:  # Redis down: the listener will find out and subscribe everything again
            pass

    def _down(self, client: Any, pubsub: Any, message: str, error: Exception | None) -> None:
        """The pub/sub connection is gone (or never came): forget it, close it, say so."""
        with self._cond:
            self._connected = self._connecting = False
            self._cond.notify_all()
        if message and not self._stop.is_set():
            self._warnings.warning("listen", message, error)
        for opened in (pubsub, client):
            if opened is not None:
                try:
                    opened.close()
                except Exception:  # already broken: nothing to release
                    pass


def _call(function: Callable, message: dict | None, what: str) -> None:
    """``function(message)`` (``function()`` for None), its failure logged."""
    try:
        function() if message is None else function(message)
    except Exception:  # one subscriber's failure is neither the bus's nor the other subscribers'
        log.exception("bus: %s failed", what)
