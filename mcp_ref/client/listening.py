"""Change notifications, client side: ``subscriptions/listen`` streams and what feeds the callbacks.

At 2026-07-28 a server sends change notifications (list changes, resource
updates) only on a ``subscriptions/listen`` stream the client opened, and only
the kinds the client asked for (basic/patterns/subscriptions).  Two ways in:

* :meth:`mcp_ref.client.Client.listen` opens one stream and returns a
  :class:`Subscription`: the acknowledged filter, a callback per notification,
  ``close()``.  It works in both eras: against a handshake-era server, where
  list changes arrive unasked and resource updates follow
  ``resources/subscribe``, it filters what arrives and subscribes for you, so the
  same code runs against either.
* The ``Client(on_list_changed=, on_resource_updated=)`` callbacks and
  ``client.subscribe(uri)``, as in the handshake era: in the 2026-07-28 era a
  :class:`CallbackFeed` keeps one stream open for them, re-opened with the new
  filter when ``subscribe`` / ``unsubscribe`` change it, and after an abrupt end
  (the spec lets a client "treat [it] as a trigger to reconnect").

Every notification of a stream carries its id in
``_meta["io.modelcontextprotocol/subscriptionId"]`` (the JSON-RPC id of the
listen request); :meth:`mcp_ref.client.connection.ClientConnection.handle_notification`
routes by it to the connection's :class:`Streams`.  The module loads with the first stream or
change callback: a client that asks for neither never reads it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection
from concurrent.futures import Future, TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

from ..errors import (
    CapabilityError,
    ConnectionClosed,
    McpError,
    MCPRefError,
    RequestCancelled,
    RequestTimeout,
)
from ..request import DEFAULT, Default
from .callbacks import concerns, notify_callbacks

if TYPE_CHECKING:
    from .interfaces import Connection

log = logging.getLogger(__name__)

ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
#: The filter's list-changed fields, and the listing each names (subscriptions §Notification Filter).
LIST_FIELDS = {
    "tools": "toolsListChanged",
    "prompts": "promptsListChanged",
    "resources": "resourcesListChanged",
}
#: Consecutive failed attempts to re-open the callbacks' stream before giving up (logged).
MAX_REOPENS = 5
#: Seconds before the first re-open; each further attempt waits twice as long.
REOPEN_DELAY = 0.5

NotificationCallback = Callable[[str, dict], None]
#: What the server (or the connection to it) may do to a request the client sends on its own
#: behalf while closing: an error answer, no answer in time, a connection gone.
PEER_FAILURES = (MCPRefError, OSError)


def build_filter(
    *, tools: bool = False, prompts: bool = False, resources: bool = False, resource_uris=()
) -> dict:
    """A SubscriptionFilter object: the list changes and resource URIs a stream should carry."""
    wanted: dict[str, Any] = {
        LIST_FIELDS[k]: True
        for k, on in (("tools", tools), ("prompts", prompts), ("resources", resources))
        if on
    }
    uris = sorted(set(resource_uris))
    if not all(isinstance(uri, str) and uri for uri in uris):
        raise ValueError("resource_uris must be non-empty strings")
    if uris:
        wanted["resourceSubscriptions"] = uris
    return wanted


def honoured(wanted: dict, capabilities: dict) -> dict:
    """The part of filter ``wanted`` a server declaring ``capabilities`` can honour."""
    agreed: dict[str, Any] = {
        field: True
        for kind, field in LIST_FIELDS.items()
        if wanted.get(field) and capabilities.get(kind, {}).get("listChanged")
    }
    if wanted.get("resourceSubscriptions") and capabilities.get("resources", {}).get("subscribe"):
        agreed["resourceSubscriptions"] = list(wanted["resourceSubscriptions"])
    return agreed


def wants(agreed: dict, method: str, params: dict) -> bool:
    """True when a notification belongs to a stream that agreed to filter ``agreed``."""
    if method == "notifications/resources/updated":
        return concerns(params.get("uri"), agreed.get("resourceSubscriptions", ()))
    for kind, field in LIST_FIELDS.items():
        if method == f"notifications/{kind}/list_changed":
            return bool(agreed.get(field))
    return False


class Subscription:
    """One listen stream (from :meth:`mcp_ref.client.Client.listen`).

    ``requested`` is the filter asked for, ``acknowledged`` the part the server
    agreed to (subscriptions §Acknowledgment: the client "SHOULD check the
    acknowledged filter against what it requested"); ``id`` the listen
    request's id (None in the handshake era, which has no stream).
    ``on_notification(method, params)`` runs on the client's callback thread for
    each notification, in arrival order.  ``close()`` ends it; ``ended_gracefully``
    says whether the server ended it with a result rather than dropping it.
    """

    def __init__(
        self,
        streams: Streams,
        requested: dict,
        on_notification: NotificationCallback | None,
        on_end: Callable[[Subscription], None] | None = None,
    ):
        self.streams = streams
        self.connection = streams.connection
        self.requested = requested
        self.acknowledged: dict | None = None
        self.id = None
        self.on_notification = on_notification
        #: Handshake era: the resource URIs subscribed at the server on this stream's behalf.
        self.held: set[str] = set()
        self.ended_gracefully = False
        #: The error that ended the stream (None while open, after close(), or a graceful end).
        self.error: Exception | None = None
        self._on_end = on_end
        self._pending = None
        self._closing = False
        self._settled = threading.Event()  # acknowledged, or ended before that
        self._ended = threading.Event()

    @property
    def closed(self) -> bool:
        """True once the stream has ended, for whatever reason."""
        return self._ended.is_set()

    def wait_closed(self, timeout: float | None = None) -> bool:
        """Block until the stream has ended; False on timeout."""
        return self._ended.wait(timeout)

    def close(self) -> None:
        """End the stream: cancel the listen request (stdio: ``notifications/cancelled``; HTTP:
        the response stream is closed); in the handshake era, unsubscribe the URIs nothing else
        wants, waiting at most one request timeout for them all.  Idempotent; what the server
        does meanwhile (an error, no answer, a lost connection) is logged, never raised."""
        self._closing = True
        if self._pending is not None:
            self._pending.cancel("the client closed the subscription")
        else:
            self._end(None)
            self.streams.forget_local(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- fed by the connection ----------------------------------------------------------------

    def attach(self, pending) -> None:
        """The listen request on the wire (modern era): its end is the stream's end."""
        self._pending = pending
        pending.add_done_callback(self._finished)

    def deliver(self, method: str, params: dict) -> None:
        """One notification of this stream (on the reader thread: quick, no user code): passed on
        only if the acknowledged filter wants it (:func:`wants`), in either era."""
        if method == "notifications/cancelled":
            # The server tore the stream down (2026-07-28 cancellation); its result, if it sends
            # one, may follow: the stream has ended either way.
            self.ended_gracefully = True
            self.streams.forget(self.id)
            self._end(None)
            return
        if method == ACKNOWLEDGED:
            notifications = params.get("notifications")
            self.acknowledged = notifications if isinstance(notifications, dict) else {}
            self._settled.set()
            return
        if self.acknowledged is None:
            log.debug(
                "%s arrived on listen stream %r before its acknowledgment: dropped", method, self.id
            )
            return
        if not wants(self.acknowledged, method, params):
            # 2026-07-28 basic/patterns/subscriptions §Opening a Stream: "The server MUST NOT send
            # notification types the client has not explicitly requested"; one outside what the
            # acknowledgment agreed to (a type, or a resource URI) is not passed on.
            log.debug(
                "%s is outside the acknowledged filter of listen stream %r: dropped",
                method,
                self.id,
            )
            return
        if self.on_notification is not None:
            self.connection.session.call_soon(self.on_notification, method, params)

    def _finished(self, future) -> None:
        """The listen request settled: a result is a graceful end; anything else an abrupt one."""
        error = future.exception()
        self.streams.forget(self.id)
        if self._ended.is_set():
            return  # the server's notifications/cancelled ended it already
        if error is None:
            self.ended_gracefully = True
        elif not (self._closing and isinstance(error, RequestCancelled)):
            self.error = error
        self._end(error)

    def _end(self, error) -> None:
        if self._ended.is_set():
            return
        self._ended.set()
        self._settled.set()
        if self._on_end is not None:
            # once per stream: never dropped
            self.connection.session.call_soon(self._on_end, self, keep=True)

    def wait_acknowledged(self, timeout: float | None) -> None:
        """Wait for the acknowledgment; raise what ended the stream first, or RequestTimeout."""
        if not self._settled.wait(timeout):
            self.close()
            raise RequestTimeout(f"subscriptions/listen was not acknowledged within {timeout} s")
        if self.acknowledged is None:
            if isinstance(self.error, McpError):
                raise self.error
            raise McpError(
                f"the listen stream ended before it was acknowledged: {self.error or 'closed'}"
            )


class CallbackFeed:
    """The 2026-07-28 listen stream behind ``on_list_changed``, ``on_resource_updated`` and
    ``subscribe``: opened with what they need, re-opened when that changes or when the
    stream drops (at most :data:`MAX_REOPENS` attempts in a row, each after twice the last pause;
    a re-opened stream that ends before it brought a notification counts as a failed attempt)."""

    def __init__(self, streams: Streams):
        self.streams = streams
        self.connection = streams.connection
        self.uris: set[str] = set()
        self.stream: Subscription | None = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._failures = 0
        self._revived: Subscription | None = None  # the ended stream a re-open was started for

    def wanted(self) -> dict:
        """The filter the callbacks need now, limited to what the server declares."""
        client = self.connection.client
        caps = client.server_capabilities
        lists = {
            kind: client.on_list_changed is not None and bool(caps.get(kind, {}).get("listChanged"))
            for kind in LIST_FIELDS
        }
        return honoured(build_filter(**lists, resource_uris=self.uris), caps)

    def update(self, timeout: float | None, *, reopening: bool = False) -> set[str]:
        """Open a stream with the current filter, then close the one it replaces (none left
        open when nothing is wanted).  The new stream is acknowledged before the old one ends,
        so no change falls between them.  ``reopening``: after a drop (see :meth:`_reopen`).
        ``timeout`` bounds the whole update, from this call: the wait for an update already under
        way (one at a time) included, so callers at once never wait ``timeout`` each in turn.
        Returns the resource URIs the new stream was acknowledged for (none if none opened)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        held: set[str] = set()
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            raise RequestTimeout(f"subscriptions/listen was not re-opened within {timeout} s")
        try:
            old = self.stream
            wanted = self.wanted()
            if self._stopped.is_set():
                return held
            self.stream = None
            if wanted:
                stream = self.streams.open(wanted, self._deliver, on_end=self._ended)
                try:
                    stream.wait_acknowledged(
                        None if deadline is None else max(deadline - time.monotonic(), 0.0)
                    )
                except BaseException:
                    self.stream = old
                    raise
                self.stream = stream
                # 2026-07-28 basic/patterns/subscriptions §Acknowledgment: it "reflects the
                # subset the server agreed to honor": a URI left out is not held, and no longer
                # counted as subscribed (a re-opened stream's too: the next subscribe asks again)
                held = set((stream.acknowledged or {}).get("resourceSubscriptions") or ())
                lost = set(wanted.get("resourceSubscriptions") or ()) - held
                if lost:
                    with self.streams._lock:
                        self.uris.difference_update(lost)
                    log.log(
                        logging.WARNING if reopening else logging.INFO,
                        "the server does not agree to send updates about %s",
                        ", ".join(sorted(lost)),
                    )
                if not reopening:
                    # A re-opened stream counts as a success only once it brings a notification
                    # (_deliver): a server that acknowledges and ends each stream at once would
                    # otherwise be re-listened to every REOPEN_DELAY for ever.
                    self._failures = 0
        finally:
            self._lock.release()
        if old is not None:
            old.close()
        current = self.stream
        if current is not None and current._ended.is_set():
            # it ended before it became the current one: _ended ignored it then
            self._ended(current)
        return held

    def start(self, timeout: float | None) -> None:
        """Open the stream the callbacks need, when the client connects.  2026-07-28: change
        notifications come only on a stream the client opens.  A server that declares list changes
        but refuses the stream, or does not acknowledge it within ``timeout``, still serves
        everything else: that is logged, not raised (as is a connection that closed meanwhile:
        the next request says so)."""
        if not self.wanted():
            return
        try:
            self.update(timeout)
        except (McpError, RequestTimeout, ConnectionClosed) as exc:
            log.warning(
                "the server declares change notifications but its subscriptions/listen stream did "
                "not open (%s): on_list_changed and on_resource_updated will not be called",
                exc,
            )

    def stop(self) -> None:
        """Close the stream for good (the client is closing)."""
        self._stopped.set()
        with self._lock:
            stream, self.stream = self.stream, None
        if stream is not None:
            stream.close()

    def _deliver(self, method: str, params: dict) -> None:
        self._failures = 0  # the stream works: a later drop starts the count of attempts again
        notify_callbacks(self.connection, method, params, self.uris)

    def _ended(self, stream: Subscription) -> None:
        """A stream ended (on the callback thread): if it is the current one and the client did
        not close it, open it again after a pause."""
        if stream is not self.stream or stream._closing or self._stopped.is_set():
            return
        with self._lock:
            if self._revived is stream:
                return  # both the callback thread and update() saw it end: one re-open
            self._revived = stream
        log.info(
            "the listen stream behind the change callbacks ended (%s); opening it again",
            "the server closed it" if stream.ended_gracefully else stream.error,
        )
        threading.Thread(target=self._reopen, name="mcp-client-relisten", daemon=True).start()

    def _reopen(self) -> None:
        while not self._stopped.is_set():
            self._failures += 1
            if self._failures > MAX_REOPENS:
                log.warning(
                    "gave up re-opening the listen stream after %d attempts: change callbacks "
                    "are no longer fed",
                    MAX_REOPENS,
                )
                return
            if self._stopped.wait(REOPEN_DELAY * 2 ** (self._failures - 1)):
                return
            try:
                self.update(self.connection.session.default_timeout, reopening=True)
                return
            except (McpError, ConnectionError, CapabilityError) as exc:
                log.debug("re-opening the listen stream failed: %s", exc)


class Streams:
    """The listen streams of one connection: opened here, and fed what the connection receives.

    Modern era: each stream is a ``subscriptions/listen`` request, found by its id.  Handshake era:
    the server sends list changes unasked, so a stream is a filter over what arrives, and its
    resource URIs are subscribed with ``resources/subscribe``.  :attr:`feed` is the stream behind
    the client's change callbacks.
    """

    def __init__(self, connection: Connection):
        self.connection = connection
        self._by_id: dict[Any, Subscription] = {}
        self._local: list[Subscription] = []
        self._lock = threading.Lock()
        #: Handshake era, per resource URI: the turn of the last ``resources/subscribe`` or
        #: ``resources/unsubscribe`` decided for it, until it is answered (:meth:`_take_turn`).
        self._turns: dict[str, threading.Event] = {}
        #: Per resource URI, the outcome of a ``Client.subscribe`` of it under way: a caller
        #: subscribing to it meanwhile waits for it (at most one per URI the client names).
        self._subscribing: dict[str, Future] = {}
        #: The stream behind the change callbacks and ``Client.subscribe`` (opened when first needed).
        self.feed = CallbackFeed(self)

    def stop_feed(self) -> None:
        """Close the callbacks' stream for good (the client is closing)."""
        self.feed.stop()

    def subscribe(self, uri: str) -> None:
        """``Client.subscribe``: updates about ``uri`` to the callbacks — ``resources/subscribe``
        (handshake era), or the callbacks' stream re-opened with ``uri`` in its filter (2026-07-28).
        CapabilityError, nothing sent, when the server did not declare ``resources.subscribe``."""
        connection, feed = self.connection, self.feed
        connection.require_capability("resources", "resources/subscribe")
        if not connection.client.server_capabilities["resources"].get("subscribe"):
            raise CapabilityError("resources/subscribe: the server does not support subscriptions")
        timeout = connection.session.default_timeout
        with self._lock:
            pending = self._subscribing.get(uri)
            if pending is None and uri in feed.uris:
                return
            if pending is None:
                feed.uris.add(uri)
                turn = None if connection.modern else self._take_turn(uri)
                pending = self._subscribing[uri] = Future()
                mine = True
            else:
                mine = False
        if not mine:
            # one subscribe of it is under way: its outcome is this caller's too
            try:
                pending.result(timeout)
            except FutureTimeout:
                raise RequestTimeout(
                    f"the subscribe of {uri!r} under way did not end in time"
                ) from None
            return
        try:
            if turn is not None:
                self._send_in_turn(
                    "resources/subscribe", uri, turn, undo=lambda: feed.uris.discard(uri)
                )
            elif uri not in feed.update(timeout):
                # 2026-07-28 basic/patterns/subscriptions §Acknowledgment: it "reflects the
                # subset the server agreed to honor"; the client "SHOULD check the acknowledged
                # filter against what it requested"
                raise CapabilityError(f"the server did not agree to send updates about {uri!r}")
        except BaseException as exc:
            with self._lock:
                feed.uris.discard(uri)
                del self._subscribing[uri]
            pending.set_exception(exc)
            raise
        with self._lock:
            del self._subscribing[uri]
        pending.set_result(None)

    def unsubscribe(self, uri: str) -> None:
        """``Client.unsubscribe``: no more updates about ``uri`` to the callbacks.  Handshake era:
        ``resources/unsubscribe``, unless an open listen stream still wants ``uri`` (a session
        has one subscription to a resource at the server, whoever on the client asked for it).
        CapabilityError, nothing sent, when the server did not declare ``resources``."""
        connection, feed = self.connection, self.feed
        connection.require_capability("resources", "resources/unsubscribe")
        with self._lock:
            feed.uris.discard(uri)
            turn = None if connection.modern or self._holds(uri) else self._take_turn(uri)
        if connection.modern:
            feed.update(connection.session.default_timeout)
        elif turn is not None:
            self._send_in_turn("resources/unsubscribe", uri, turn)

    def open(
        self,
        wanted: dict,
        on_notification: NotificationCallback | None,
        on_end: Callable | None = None,
    ) -> Subscription:
        """Open a stream of the change notifications in filter ``wanted``; not yet acknowledged."""
        connection = self.connection
        stream = Subscription(self, wanted, on_notification, on_end)
        if connection.modern:

            def register(request_id) -> None:
                stream.id = request_id
                with self._lock:
                    self._by_id[request_id] = stream

            stream.attach(
                connection.send_request(
                    "subscriptions/listen",
                    {"notifications": wanted},
                    timeout=None,
                    before_write=register,
                )
            )
            return stream
        agreed = honoured(wanted, connection.client.server_capabilities)
        uris = agreed.get("resourceSubscriptions", ())
        # acknowledged before the first subscribe goes out: a server may send an update as soon as
        # it has answered one, and a stream drops what comes before its acknowledgment; a listen
        # that fails below ends the stream, never returned
        stream.deliver(ACKNOWLEDGED, {"notifications": agreed})
        with self._lock:
            self._local.append(stream)
        try:
            for uri in uris:
                with self._lock:  # the decision and its turn in one step (see _take_turn)
                    turn = None if self._holds(uri) else self._take_turn(uri)
                    stream.held.add(uri)  # from now on: a subscribe may reach the server
                if turn is None:
                    continue  # subscribed already, for the client or another stream
                try:
                    self._send_in_turn("resources/subscribe", uri, turn)
                except McpError:
                    with self._lock:
                        stream.held.discard(uri)  # refused: the server holds nothing for it
                    raise
        except BaseException:
            # A listen that fails leaves nothing behind: no stream, no subscription made for it.
            stream._closing = True
            stream._end(None)
            self.forget_local(stream)
            raise
        return stream

    def subscribed_uris(self) -> set:
        """The URIs subscribed on a handshake-era server: the client's own and its open streams'
        (called with the lock held)."""
        uris = set(self.feed.uris)
        for stream in self._local:
            uris.update(stream.held)
        return uris

    def resubscribe_turns(self) -> dict[str, tuple]:
        """The turns (:meth:`_take_turn`) of :meth:`resubscribe`, taken as a new session is started
        (Streamable HTTP's 404, :mod:`mcp_ref.client.renewal`), which holds none of the old one's
        subscriptions: one for each URI subscribed (:meth:`subscribed_uris`), and for each URI a
        subscribe or unsubscribe is under way for (it may have gone to the old session, and been
        answered there).  A subscribe or unsubscribe decided from now on goes after it."""
        if self.connection.modern:
            return {}  # 2026-07-28 has no session: nothing was forgotten
        with self._lock:
            uris = self.subscribed_uris() | set(self._turns)
            return {uri: self._take_turn(uri) for uri in sorted(uris)}

    def resubscribe(self, turns: dict[str, tuple]) -> None:
        """``resources/subscribe`` to the new session, each in its turn (:meth:`resubscribe_turns`),
        for each URI of ``turns`` still subscribed once the request about it before (under way
        when the session was renewed) has ended.  One the new session refuses (or leaves
        unanswered) is logged: its updates no longer come, and ``Client.subscribe`` no longer
        counts it as subscribed."""
        wanted: set[str] = set()

        def still_held(uri: str) -> bool:
            with self._lock:
                if self._holds(uri):
                    wanted.add(uri)
                    return True
                return False

        lost = sorted(wanted - self.send_all("resources/subscribe", turns, still=still_held))
        if lost and not self.connection.session.is_closed:
            log.warning("the new session did not take the subscriptions to %s", ", ".join(lost))
        with self._lock:  # no longer subscribed: a later Client.subscribe asks again
            self.feed.uris.difference_update(lost)

    def _holds(self, uri: str) -> bool:
        """Whether ``uri`` is in :meth:`subscribed_uris` (called with the lock held)."""
        return uri in self.feed.uris or any(uri in stream.held for stream in self._local)

    # -- handshake era: one resources/subscribe or /unsubscribe about a URI at a time ----------

    def _take_turn(self, uri: str) -> tuple[threading.Event | None, threading.Event]:
        """Called with the lock held, as the client decides to send ``resources/subscribe`` or
        ``resources/unsubscribe`` about ``uri``: the turn of the one decided before it (None if
        that one was answered), and this one's, which ends once it is answered (:meth:`_end_turn`).

        2025-11-25 server/resources §Subscriptions: "Clients can subscribe to specific resources
        and receive notifications when they change"; a stream acknowledged with a URI must get
        them.  The decisions are made under the lock, in order, but sent outside it; and nothing
        in JSON-RPC orders how a server handles two requests (mcp_ref's handles them at once), so
        even one written first may be acted on last.  So each waits for the answer to the one
        before it: what the client decided last about a URI (a stream opening on it while another
        closes) is what the server does last.  The wait is bounded by a request timeout; every
        turn ends, answered or not."""
        previous = self._turns.get(uri)
        turn = self._turns[uri] = threading.Event()
        return previous, turn

    def _wait_turn(self, uri: str, previous: threading.Event | None, timeout) -> None:
        if previous is not None and not previous.is_set():
            log.debug("a request about %s waits for the answer to the one before it", uri)
            previous.wait(timeout)

    def _end_turn(self, uri: str, turn: threading.Event) -> None:
        turn.set()
        with self._lock:
            if self._turns.get(uri) is turn:
                del self._turns[uri]

    def _send_in_turn(
        self, method: str, uri: str, turns: tuple, undo: Callable[[], None] | None = None
    ) -> None:
        """``method`` about ``uri`` in its turn (:meth:`_take_turn`); its answer waited for.  When
        it fails, ``undo()`` runs (the lock held) before the turn ends: whoever waits for the turn
        finds what it left (:meth:`resubscribe`)."""
        previous, turn = turns
        try:
            self._wait_turn(uri, previous, self.connection.session.default_timeout)
            self.connection.request(method, {"uri": uri})
        except BaseException:
            if undo is not None:
                with self._lock:
                    undo()
            raise
        finally:
            self._end_turn(uri, turn)

    def forget(self, request_id) -> None:
        """A modern listen stream ended: route no more to it."""
        with self._lock:
            self._by_id.pop(request_id, None)

    def forget_local(self, stream: Subscription) -> None:
        """A handshake-era stream was closed (or failed to open): unsubscribe the URIs it holds
        that nothing else wants.  Never raises for the server's failures (:meth:`unsubscribe_all`)."""
        with self._lock:
            if stream not in self._local:
                return
            self._local.remove(stream)
            still = self.subscribed_uris()
            turns = {uri: self._take_turn(uri) for uri in sorted(stream.held - still)}
        self.unsubscribe_all(turns)

    def unsubscribe_many(self, uris: Collection[str], timeout: float | None) -> None:
        """``Client.unsubscribe`` for each of ``uris`` at once, waiting ``timeout`` seconds at most
        in all: handshake era, their ``resources/unsubscribe`` sent together, each in its turn
        (:meth:`unsubscribe_all`), but for those an open listen stream still wants; 2026-07-28,
        the callbacks' stream re-opened once without them.  The server's failures are logged,
        not raised."""
        connection, feed = self.connection, self.feed
        with self._lock:
            feed.uris.difference_update(uris)
            unwanted = sorted(set(uris) - self.subscribed_uris())
            turns = {} if connection.modern else {uri: self._take_turn(uri) for uri in unwanted}
        if not connection.modern:
            self.unsubscribe_all(turns, timeout)
            return
        try:
            feed.update(timeout)
        except PEER_FAILURES as exc:
            log.debug("the callbacks' stream was not re-opened without %s: %s", unwanted, exc)

    def subscribe_many(self, uris: Collection[str], timeout: float | None) -> set[str]:
        """``Client.subscribe`` for each of ``uris`` at once, waiting ``timeout`` seconds at most
        in all; the URIs now subscribed (those refused, unanswered in time or not sent are left
        out, logged, not raised).  Handshake era: their ``resources/subscribe`` sent together,
        each in its turn; 2026-07-28: the callbacks' stream re-opened once with them, and those
        its acknowledgment names (a URI it leaves out is refused, and not kept)."""
        connection, feed = self.connection, self.feed
        with self._lock:
            fresh = set(uris) - feed.uris
            feed.uris.update(fresh)
            turns = {} if connection.modern else {uri: self._take_turn(uri) for uri in fresh}
        agreed = set(uris) - fresh
        try:
            if connection.modern:
                agreed = set(uris) & feed.update(timeout)
            else:
                agreed |= self.send_all("resources/subscribe", turns, timeout)
        except PEER_FAILURES as exc:
            log.debug("the callbacks' stream was not re-opened with %s: %s", sorted(fresh), exc)
        finally:
            with self._lock:
                feed.uris.difference_update(fresh - agreed)
        return agreed

    def unsubscribe_all(
        self, turns: dict[str, tuple], timeout: float | None | Default = DEFAULT
    ) -> None:
        """``resources/unsubscribe`` for each URI of ``turns`` (URI -> its turn,
        :meth:`_take_turn`), as :meth:`send_all` sends them: the caller is closing."""
        self.send_all("resources/unsubscribe", turns, timeout)

    def send_all(
        self,
        method: str,
        turns: dict[str, tuple],
        timeout: float | None | Default = DEFAULT,
        still: Callable[[str], bool] | None = None,
    ) -> set[str]:
        """``method`` about each URI of ``turns`` (URI -> its turn, :meth:`_take_turn`): all sent
        at once, each in its turn, then waited for until one deadline, ``timeout`` (default: a
        request timeout) from now (the client's requests are futures: no thread is needed); the
        URIs the server answered.  One the server refuses, does not answer in time (it is then
        sent ``notifications/cancelled``) or cannot be sent is logged, not raised: it is the
        server's failure.  ``still(uri)``, asked when its turn comes: False, it is not sent."""
        connection = self.connection
        if timeout is DEFAULT:
            timeout = connection.session.default_timeout
        deadline = None if timeout is None else time.monotonic() + timeout

        def left() -> float | None:
            return None if deadline is None else max(deadline - time.monotonic(), 0.0)

        sent = []
        answered = set()
        try:
            for uri, (previous, turn) in turns.items():
                self._wait_turn(uri, previous, left())
                if connection.session.is_closed:
                    break  # the server forgot every subscription of the session already
                if still is not None and not still(uri):
                    continue  # its turn ends below
                try:
                    request = connection.send_request(method, {"uri": uri}, timeout=left())
                except PEER_FAILURES as exc:
                    log.debug("%s %s was not sent: %s", method, uri, exc)
                    continue
                sent.append((uri, turn, request))
            for uri, turn, request in sent:
                try:
                    request.result()  # its deadline is the shared one
                    answered.add(uri)
                except PEER_FAILURES as exc:
                    log.debug("%s %s failed: %s", method, uri, exc)
                self._end_turn(uri, turn)
        finally:
            for uri, (_, turn) in turns.items():
                self._end_turn(uri, turn)  # those not sent, or not waited for
        return answered

    def deliver(self, subscription, method: str, params: dict) -> None:
        """A notification of the modern stream ``subscription`` (its ``subscriptionId``)."""
        with self._lock:
            stream = self._by_id.get(subscription)
        if stream is None:
            log.debug("dropped %s for unknown subscription %r", method, subscription)
        else:
            stream.deliver(method, params)

    def deliver_local(self, method: str, params: dict) -> None:
        """A change notification of a handshake-era server: to each stream whose filter wants it."""
        with self._lock:
            local = [s for s in self._local if wants(s.acknowledged or {}, method, params)]
        for stream in local:
            stream.deliver(method, params)
