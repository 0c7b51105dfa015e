"""``subscriptions/listen``: the 2026-07-28 change-notification streams, server side.

In the handshake era a server announces list changes to every session, and
resource updates to sessions that called ``resources/subscribe``.  At
2026-07-28 there are no sessions: a client that wants change notifications
opens a long-lived ``subscriptions/listen`` request naming what it wants
(basic/patterns/subscriptions), and the server sends exactly that, each
notification tagged with the request's id as
``_meta["io.modelcontextprotocol/subscriptionId"]``.

The pieces:

* :class:`Filter` — what a listen asks for, read from the wire; the server
  agrees to the part it supports (the acknowledgment says which).
* :class:`Subscriptions` — one per :class:`~mcp_ref.server.Server`: the open
  streams, bounded (``max_subscriptions``; past it a listen is refused with
  -31000 ``ServerBusy``).  :meth:`Subscriptions.publish` is how the server's
  change announcements reach them.
* :func:`listen` — the request handler.  It acknowledges, registers the
  stream, and *defers* the request (:meth:`mcp_ref.session.RequestContext.defer`):
  no handler thread waits while the stream is open.  The stream ends when the
  client cancels it (``notifications/cancelled`` on stdio, closing the HTTP
  response), when the connection ends, or when the server closes it
  gracefully (:meth:`Subscriptions.close_all`: the listen request is answered
  with an empty ``complete`` result).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from .. import lifecycle
from ..errors import InvalidParams, LimitExceeded, MissingRequiredClientCapabilityError, ServerBusy
from ..state.stores import Counters, HeldSets, MemoryCounters
from .connection import DEFAULT_MAX_SUBSCRIPTIONS, OPEN

if TYPE_CHECKING:
    from ..request import RequestContext
    from .principal import Principal
    from .seams import Caller as ServerConnection

#: The tasks extension's name (SEP-2663): a listen asking for ``taskIds`` needs it declared.
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

log = logging.getLogger(__name__)

#: The list-changed filter fields, and the listing each names (subscriptions §Notification Filter).
LIST_FIELDS = {
    "toolsListChanged": "tools",
    "promptsListChanged": "prompts",
    "resourcesListChanged": "resources",
}
#: Resource URIs one listen may name; past it the listen is refused (-32602): the work a
#: request causes stays bounded by its size, and a client wanting more opens more streams.
MAX_RESOURCE_URIS = 1024
#: The counters' key of the open listen streams (``max_subscriptions``).
STREAMS = "listen-streams"
#: The held sets' key of the resources one caller subscribes to: this, then its
#: ``Principal.limit_id`` (a client without a token: all its HTTP sessions together).
SUBSCRIBED = "subscribed:"


@dataclass(frozen=True)
class Filter:
    """What a ``subscriptions/listen`` stream carries: list changes of ``lists`` (a subset of
    ``tools``, ``prompts``, ``resources``) and ``resources/updated`` for the URIs ``uris``."""

    lists: frozenset[str] = frozenset()
    uris: frozenset[str] = frozenset()

    @classmethod
    def from_wire(cls, notifications: object) -> Filter:
        """The filter a request asks for, or -32602 for one that is not a SubscriptionFilter.

        Fields this revision does not define are left out, not refused: the acknowledgment
        "reflects the subset the server agreed to honor. Notification types the server does
        not support are omitted" (subscriptions §Acknowledgment).
        """
        if not isinstance(notifications, dict):
            raise InvalidParams("Invalid params: subscriptions/listen needs a notifications object")
        lists = set()
        for name, kind in LIST_FIELDS.items():
            value = notifications.get(name, False)
            if not isinstance(value, bool):
                raise InvalidParams(f"Invalid params: notifications.{name} must be a boolean")
            if value:
                lists.add(kind)
        uris = notifications.get("resourceSubscriptions", [])
        if not isinstance(uris, list) or not all(isinstance(uri, str) for uri in uris):
            raise InvalidParams(
                "Invalid params: notifications.resourceSubscriptions must be an array of strings"
            )
        if len(uris) > MAX_RESOURCE_URIS:
            raise InvalidParams(
                f"Invalid params: one subscriptions/listen may name at most {MAX_RESOURCE_URIS} "
                "resources; open another stream for more"
            )
        from .resources import check_uri_length  # one bound on a resource URI, read or subscribed

        for uri in uris:
            check_uri_length(uri)
        return cls(frozenset(lists), frozenset(uris))

    def agreed(self, capabilities: dict) -> Filter:
        """The part of this filter a server declaring ``capabilities`` honours: list changes of
        what it declares ``listChanged`` for, and resource updates if it declares ``subscribe``."""
        lists = frozenset(
            kind for kind in self.lists if capabilities.get(kind, {}).get("listChanged")
        )
        uris = self.uris if capabilities.get("resources", {}).get("subscribe") else frozenset()
        return Filter(lists, uris)

    def to_wire(self) -> dict:
        """The SubscriptionFilter object (only what is asked for)."""
        wire: dict = {name: True for name, kind in LIST_FIELDS.items() if kind in self.lists}
        if self.uris:
            wire["resourceSubscriptions"] = sorted(self.uris)
        return wire

    def wants(self, method: str, params: dict) -> bool:
        """True when a notification ``method`` with ``params`` belongs on this stream."""
        if method == "notifications/resources/updated":
            return params.get("uri") in self.uris
        kind = (
            method[len("notifications/") : -len("/list_changed")]
            if method.endswith("/list_changed")
            else None
        )
        return kind in self.lists


@dataclass(eq=False)
class Subscription:
    """One open ``subscriptions/listen`` stream: the connection it is on, its id (the request's),
    its agreed filter."""

    connection: ServerConnection
    id: Any
    filter: Filter
    version: str
    #: Agreed URIs of resources the caller may not use: acknowledged like unknown ones, never
    #: delivered (``Server(authorize=...)``, :mod:`mcp_ref.extensions.policy`).
    hidden: frozenset[str] = frozenset()
    #: Held while the acknowledgment is written: whatever else the stream carries waits for it.
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def wants(self, method: str, params: dict) -> bool:
        """True when a notification belongs on this stream (its filter, less hidden resources)."""
        return self.filter.wants(method, params) and not (
            self.hidden and params.get("uri") in self.hidden
        )

    def send(self, method: str, params: dict) -> None:
        """Send one notification on the stream, tagged with its id (subscriptions §Receiving
        Notifications: every notification "carry ``io.modelcontextprotocol/subscriptionId`` in
        ``_meta``")."""
        tagged = dict(params)
        tagged["_meta"] = {**params.get("_meta", {}), lifecycle.SUBSCRIPTION_ID: self.id}
        try:
            with self.lock:
                self.connection.session.notify(method, tagged, related_request_id=self.id)
        except ConnectionError:
            log.debug("%s dropped: the listen stream's connection has closed", method)

    def close(self) -> bool:
        """End the stream from the server's side (False: it had already ended).

        The spec says two things here, and both are done, in an order every transport carries:
        basic/patterns/cancellation, a server "MUST send ``notifications/cancelled`` referencing a
        ``subscriptions/listen`` request ID when it tears down that subscription stream"; then
        subscriptions §Graceful Closure, it "SHOULD respond to the original subscriptions/listen
        request with a completion result before closing the stream" (the answer ends an HTTP
        stream, so the notification goes first).
        """
        result = {"_meta": {lifecycle.SUBSCRIPTION_ID: self.id}}
        result = lifecycle.complete_result(result, self.connection.server.server_info(self.version))
        with self.lock:
            self.send(
                "notifications/cancelled",
                {"requestId": self.id, "reason": "the server ended the subscription"},
            )
            return self.connection.session.answer_deferred(self.id, result)


class Subscriptions:
    """The open ``subscriptions/listen`` streams of one server (at most ``max_subscriptions``)."""

    def __init__(
        self, max_subscriptions: int = DEFAULT_MAX_SUBSCRIPTIONS, counters: Counters | None = None
    ):
        self.max_subscriptions = max_subscriptions
        #: Where the open streams are counted (:class:`~mcp_ref.state.stores.Counters`, key
        #: :data:`STREAMS`): shared by the processes of one server, the bound is theirs together.
        self.counters: Counters = counters if counters is not None else MemoryCounters()
        self._lock = threading.Condition()
        self._open: dict[tuple[int, object], Subscription] = {}
        self._held: HeldSets | None = None  # see held_resources
        self._held_asked = False
        #: Called with the streams that ended (cancelled, their connection gone, or closed by the
        #: server), once each, after they are forgotten: whoever holds something for a stream
        #: lets it go (the proxy: its subscriptions at its target).
        self.on_end: Callable[[list[Subscription]], None] | None = None

    def __len__(self) -> int:
        return len(self._open)

    def open(self, subscription: Subscription) -> bool:
        """Register a stream; False when ``max_subscriptions`` are already open (one atomic
        ``acquire`` of the counters)."""
        with self._lock:
            if not self.counters.acquire(STREAMS, self.max_subscriptions):
                return False
            self._open[(id(subscription.connection), subscription.id)] = subscription
            return True

    def end(self, subscription: Subscription) -> None:
        """Forget a stream (it was cancelled, or its connection ended)."""
        with self._lock:
            ended = self._open.pop((id(subscription.connection), subscription.id), None) is not None
            if ended:
                self.counters.release(STREAMS)
        if ended:
            self._let_go_of([subscription])  # outside the lock (subscription_lock comes first)
        with self._lock:
            self._lock.notify_all()  # after: a waiter sees the stream's resources let go too

    def wait_at_most(self, count: int, timeout: float | None = None) -> bool:
        """Block until at most ``count`` streams are open (False on timeout): for a shutdown that
        lets listeners leave, and for tests."""
        with self._lock:
            return self._lock.wait_for(lambda: len(self._open) <= count, timeout)

    def publish(
        self,
        method: str,
        params: dict | None = None,
        *,
        which: Callable[[Subscription], bool] | None = None,
    ) -> int:
        """Send a change notification on every stream whose filter asks for it (and ``which``
        picks, when given); how many did."""
        params = params or {}
        streams = self.streams(lambda s: s.wants(method, params) and (which is None or which(s)))
        for subscription in streams:
            subscription.send(method, params)
        return len(streams)

    def streams(self, which: Callable[[Subscription], bool] | None = None) -> list[Subscription]:
        """The open streams (those ``which`` picks, called outside the lock)."""
        with self._lock:
            streams = list(self._open.values())
        return streams if which is None else [s for s in streams if which(s)]

    def resources_of(self, limit_id: str) -> set:
        """The resources the open streams of one caller name (``max_subscribed_resources``: its
        ``Principal.limit_id``)."""
        streams = self.streams(
            lambda s: bool(s.filter.uris) and s.connection.principal.limit_id == limit_id
        )
        return set().union(*(stream.filter.uris for stream in streams))

    def close_all(self, which: Callable[[Subscription], bool] | None = None) -> int:
        """End every stream gracefully (e.g. at shutdown), or those ``which`` picks; how many.

        subscriptions §Graceful Closure: the server "SHOULD respond to the original
        ``subscriptions/listen`` request with a completion result before closing the stream",
        carrying the subscription's id in ``_meta``.
        """
        with self._lock:
            streams = [s for s in self._open.values() if which is None or which(s)]
            for subscription in streams:
                del self._open[(id(subscription.connection), subscription.id)]
                self.counters.release(STREAMS)
            self._lock.notify_all()
        for subscription in streams:
            subscription.close()
        self._let_go_of(streams)
        return len(streams)

    # -- max_subscribed_resources over every process of a shared state ---------------------------

    def held_resources(self, server: Any) -> HeldSets | None:
        """Where the resources each principal subscribes to are held over the deployment (the shared
        state's :meth:`~mcp_ref.state.stores.State.held_sets`, made on first use), or None: this
        process's connections and streams are the truth (``Policy.check_subscriptions`` counts them)."""
        if not self._held_asked:
            with self._lock:
                if not self._held_asked:
                    make = getattr(getattr(server, "shared_state", None), "held_sets", None)
                    held = make() if make is not None else None
                    if held is not None and hasattr(held, "on_beat"):
                        held.on_beat = _say_held(weakref.ref(self), weakref.ref(server))
                    self._held, self._held_asked = held, True
        return self._held

    def resources_here(self, server: Any, limit_id: str | None = None) -> dict[str, set[str]]:
        """What this process's open connections (``resources/subscribe``) and listen streams hold,
        by held-set key (:data:`SUBSCRIBED` and the caller's ``Principal.limit_id``; only
        ``limit_id``'s, when given): the truth the shared held sets are told."""
        held = [
            (c.principal.limit_id, c.subscriptions)
            for c in server.connections()
            if c.subscriptions and not c.session.is_closed
        ]
        held += [
            (s.connection.principal.limit_id, s.filter.uris)
            for s in self.streams(lambda s: bool(s.filter.uris))
        ]
        table: dict[str, set[str]] = {}
        for who, uris in held:
            if limit_id is None or who == limit_id:
                table.setdefault(SUBSCRIBED + who, set()).update(uris)
        return table

    def check_resources(
        self, cap: Any, principal: Principal, server: Any, uris: Collection[str]
    ) -> None:
        """Raise :class:`LimitExceeded` if subscribing ``principal`` to ``uris`` too would take it past
        ``cap.max_subscribed_resources`` distinct resources (``cap``: ``server.subscription_cap()``).

        In one process, ``cap.check_subscriptions`` counts its connections and streams.  With a
        shared state the count is over every process, and ``uris`` are held at once (one atomic
        step: two workers never both take the last place); a caller that then does not subscribe
        calls :meth:`let_go`.  Call it holding ``cap.subscription_lock``.
        """
        held = self.held_resources(server)
        if held is None or not uris:
            cap.check_subscriptions(principal, server, uris)
            return
        limit = cap.max_subscribed_resources
        key = SUBSCRIBED + principal.limit_id
        added, count = held.hold(key, uris, limit)
        # a connection here may have ended without a word: say the truth, then ask again
        if not added:
            held.hold_only(self.resources_here(server))
            added, count = held.hold(key, uris, limit)
        if not added:
            raise LimitExceeded(
                f"Too many subscriptions: at most {limit} resources per caller ({count} held); "
                "unsubscribe from some first",
                data={"limit": limit},
            )

    def let_go(
        self, limit_id: str, server: Any, uris: Collection[str], *, locked: bool = False
    ) -> None:
        """``uris`` of the caller ``limit_id`` (its ``Principal.limit_id``) that no connection or
        stream of this process holds any more leave the shared held sets (nothing to do without
        them).  ``locked``: the caller holds ``subscription_lock`` already."""
        held = self._held
        if held is None or not uris:
            return
        cap = server.subscription_cap()
        with contextlib.nullcontext() if locked or cap is None else cap.subscription_lock:
            key = SUBSCRIBED + limit_id
            gone = set(uris) - self.resources_here(server, limit_id).get(key, set())
            if gone:
                held.release(key, gone)

    def say_held(self, server: Any) -> None:
        """Tell the shared held sets what this process holds now (their heartbeat: a connection that
        ended without a word lets go of its resources here)."""
        held = self._held
        if held is None:
            return
        cap = server.subscription_cap()
        with contextlib.nullcontext() if cap is None else cap.subscription_lock:
            held.hold_only(self.resources_here(server))

    def _let_go_of(self, streams: list[Subscription]) -> None:
        for stream in streams:
            if stream.filter.uris:
                connection = stream.connection
                self.let_go(connection.principal.limit_id, connection.server, stream.filter.uris)
        if self.on_end is not None and streams:
            self.on_end(streams)


def _say_held(hub_ref: weakref.ref, server_ref: weakref.ref) -> Callable[[], None]:
    """A held set's ``on_beat``: :meth:`Subscriptions.say_held` (held weakly: a server dropped is not kept)."""

    def say_held() -> None:
        hub, server = hub_ref(), server_ref()
        if hub is not None and server is not None:
            hub.say_held(server)

    return say_held


def _declares_tasks(context: RequestContext) -> bool:
    """True when a request's own client capabilities declare the tasks extension."""
    extensions = (
        context.envelope.client_capabilities.get("extensions")
        if context.envelope is not None
        else None
    )
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def listen(connection: ServerConnection, context: RequestContext, params: dict) -> object:
    """``subscriptions/listen``: acknowledge, then keep the request open as the stream.

    subscriptions §Acknowledgment: the server "MUST send ``notifications/subscriptions/acknowledged``
    as the first message carrying the subscription's ID ... and MUST NOT send any notification
    on the subscription before it"; so the stream is registered only once the acknowledgment
    is written.  The server "MUST NOT send notification types the client has not explicitly
    requested": :meth:`Filter.wants`.
    """
    notifications = params.get("notifications")
    if (
        isinstance(notifications, dict)
        and "taskIds" in notifications
        and not _declares_tasks(context)
    ):
        # SEP-2663 §Task Status Notifications: a client asking for them without the extension "MUST"
        # get -32021.  (mcp_ref sends none: a declaring client's taskIds are left out of the
        # acknowledgment, as any type the server does not support.)
        raise MissingRequiredClientCapabilityError.needing(
            {"extensions": {TASKS_EXTENSION: {}}},
            "task status notifications need the tasks extension",
        )
    asked = Filter.from_wire(notifications)
    server = connection.server
    # From now on changes reach the streams through the bus (the shorthand's Server.bus, made now:
    # mcp_ref.state.changes); the protocol's Registry does not declare it.
    _ = cast(Any, server).bus
    version = connection.version_for(context)
    agreed = asked.agreed(server.capabilities(version))
    gate = server.gate
    hidden: frozenset[str] = frozenset()
    if gate is not OPEN and agreed.uris:
        # A resource the caller may not use is agreed like an unknown one, and never delivered.
        # One rule for all: not registered (yet) is judged by its name alone, at the same cost.
        # Every gate but the open one is asked, ``restricts`` or not: one hiding a resource from
        # everyone alike hides its updates too.  Asked once per request (its params): a proxy's
        # front asked it already, and counts on the same verdict (mcp_ref.proxy.front_door).
        principal = connection.principal
        hidden = frozenset(
            uri
            for uri in agreed.uris
            if not gate.resource_allowed(
                principal, uri, server.find_resource(uri), "resources/subscribe", params
            )
        )
    # a modern-only method: the request's envelope gives its version
    subscription = Subscription(connection, context.request_id, agreed, cast(str, version), hidden)
    hub = server.subscriptions
    cap = server.subscription_cap()
    # registered first, so nothing is missed; acknowledged before anything is sent
    with subscription.lock:
        if cap is None:
            opened = hub.open(subscription)
        else:
            with cap.subscription_lock:  # counted and opened together (max_subscribed_resources)
                hub.check_resources(cap, connection.principal, server, agreed.uris)
                opened = hub.open(subscription)
                if not opened:
                    hub.let_go(connection.principal.limit_id, server, agreed.uris, locked=True)
        if not opened:
            raise ServerBusy(
                f"Server busy: {hub.max_subscriptions} subscriptions/listen streams are open; "
                "retry when some have closed",
                data={"maxSubscriptions": hub.max_subscriptions},
            )
        context.defer(lambda: hub.end(subscription))
        subscription.send(
            "notifications/subscriptions/acknowledged",
            {"notifications": subscription.filter.to_wire()},
        )
    return None
