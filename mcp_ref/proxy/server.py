"""The proxy's front: :class:`ProxyServer`, a Server whose feature requests go to the target.

They go through its front door (:mod:`~mcp_ref.proxy.front_door`), the last step of each
request's chain of ``intercept_request`` hooks (:attr:`ProxyServer.request_hooks`): the
extensions added to the proxy (a ``Policy``'s rate limits ...) run first, and its gate judges
what is forwarded (:func:`~mcp_ref.proxy.front_door.check_forward`, ``shown``)."""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .. import lifecycle
from ..client import Client
from ..errors import (
    InvalidParams,
    InvalidRequest,
    McpError,
    MissingRequiredClientCapabilityError,
    ServerBusy,
)
from ..extension import Extension
from ..http.server.shares import ClientCounts, cap_of, check_share_setting, client_of_connection
from ..lifecycle import MRTR_METHODS
from ..server import Server
from ..server.input_required import digest
from ..server.resources import stateless_refusal
from ..server.subscriptions import Filter
from .back import BackLink, connector
from .forward import DEFAULT_ASK_TIMEOUT, Forward, Front, current
from .front_door import (
    FrontDoor,
    NothingOfItsOwn,
    agrees_unknown,
    check_forward,
    front_door_last,
    listen_hidden,
    refuse_tool_interceptor,
)
from .links import Links, close_all, closed_error
from .translate import errors_of, plain_result

__all__ = ["ProxyServer", "proxy_server"]

log = logging.getLogger(__name__)

#: Requests forwarded as they are (listings, completion), beside MRTR_METHODS.
PASSED = frozenset(
    {
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
        "completion/complete",
    }
)
#: What a handshake-era front session may ask besides: forwarded on its own back connection.
SESSION_METHODS = frozenset({"resources/subscribe", "resources/unsubscribe", "logging/setLevel"})
#: The capabilities mirrored from the target.
MIRRORED = ("tools", "resources", "prompts", "logging")
#: Back connections a proxy holds at most by default (``max_back_connections``).
DEFAULT_MAX_BACK_CONNECTIONS = 16
#: Forwarded requests that may ask (in flight or parked) at most by default (``max_forwarded``).
DEFAULT_MAX_FORWARDED = 64
#: The default ``max_back_connections_per_client``: half of ``max_back_connections`` (8 of 16).
DEFAULT_BACK_CONNECTION_SHARE = 0.5
#: The default ``max_forwarded_per_client``: a quarter of ``max_forwarded`` (16 of 64), as the
#: HTTP server's ``max_handlers_per_client`` is of its handler threads.
DEFAULT_FORWARDED_SHARE = 0.25
#: Resources the watcher subscribes to for 2026 listen streams, at most.
MAX_WATCHED_URIS = 1024
#: Seconds the watcher waits, in all, for the target to let go of the resources of the listen
#: streams that just ended (so a stalled target holds up no shutdown for long).
UNWATCH_WAIT = 2.0


def proxy_server(
    target: str | Sequence[str] | Callable[..., Client],
    *,
    name: str | None = None,
    max_back_connections: int = DEFAULT_MAX_BACK_CONNECTIONS,
    max_forwarded: int = DEFAULT_MAX_FORWARDED,
    ask_timeout: float = DEFAULT_ASK_TIMEOUT,
    client_options: dict[str, Any] | None = None,
    max_back_connections_per_client: int | float | None = DEFAULT_BACK_CONNECTION_SHARE,
    max_forwarded_per_client: int | float | None = DEFAULT_FORWARDED_SHARE,
) -> ProxyServer:
    """A :class:`ProxyServer` for ``target`` (see :func:`connector`), connected to it now.

    ``name``: the front's server name (default: the target's).  ``client_options``: keywords for
    every back ``Client`` (``timeout``, ``era``, ``headers``, ``stderr`` ...).  The bounds: see
    :class:`ProxyServer`."""
    return ProxyServer(
        connector(target),
        name=name,
        max_back_connections=max_back_connections,
        max_forwarded=max_forwarded,
        ask_timeout=ask_timeout,
        client_options=client_options,
        max_back_connections_per_client=max_back_connections_per_client,
        max_forwarded_per_client=max_forwarded_per_client,
    )


# -- the front server ------------------------------------------------------------------------------


class ProxyServer(NothingOfItsOwn, Server):
    """A server that serves what another server serves (see the module docstring).

    What one client may hold at once, so that no client starves the others (the client as the
    HTTP server's per-client shares name it: the principal of its token, else its address):
    ``max_back_connections_per_client`` connections to the target (its sessions' and those leased
    to its requests; default half of ``max_back_connections``) and ``max_forwarded_per_client``
    forwarded requests, parked ones included (default a quarter of ``max_forwarded``); each an
    int, a float share of the whole, or None (no cap).  Past either, -31000 "server busy"."""

    def __init__(
        self,
        connect: Callable[..., Client],
        *,
        name: str | None = None,
        max_back_connections: int = DEFAULT_MAX_BACK_CONNECTIONS,
        max_forwarded: int = DEFAULT_MAX_FORWARDED,
        ask_timeout: float = DEFAULT_ASK_TIMEOUT,
        client_options: dict[str, Any] | None = None,
        max_back_connections_per_client: int | float | None = DEFAULT_BACK_CONNECTION_SHARE,
        max_forwarded_per_client: int | float | None = DEFAULT_FORWARDED_SHARE,
    ):
        check_share_setting(
            max_back_connections_per_client,
            "max_back_connections_per_client",
            "max_back_connections",
        )
        check_share_setting(max_forwarded_per_client, "max_forwarded_per_client", "max_forwarded")
        for setting, value in (
            ("max_back_connections", max_back_connections),
            ("max_forwarded", max_forwarded),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{setting} must be a positive int, not {value!r}")
        if (
            isinstance(ask_timeout, bool)
            or not isinstance(ask_timeout, (int, float))
            or not ask_timeout > 0
        ):
            raise ValueError(
                f"ask_timeout must be a positive number of seconds, not {ask_timeout!r}"
            )
        if max_back_connections < 2:
            raise ValueError("max_back_connections must be at least 2 (the watcher and one more)")
        #: Opens a back connection: ``connect(**client_options) -> Client``.
        self.open_back = connect
        #: Keywords for every back Client.
        self.client_options = dict(client_options or {})
        #: Back connections held at most (the watcher, sessions and the pool).
        self.max_back_connections = max_back_connections
        #: Forwarded requests that may ask, in flight or parked, at most.
        self.max_forwarded = max_forwarded
        #: Of those, one client's at most (None: no cap beside ``max_forwarded``).
        self.max_forwarded_per_client = cap_of(max_forwarded_per_client, max_forwarded)
        #: Seconds a question of the target waits for the front client (and a parked request for
        #: its retry).
        self.ask_timeout = ask_timeout
        self._lock = threading.Lock()
        self._sessions: dict[Any, BackLink] = {}  # handshake-era front connection -> its link
        self._greeted: weakref.WeakSet[Any] = weakref.WeakSet()  # front connections initialized
        self._opening = threading.Lock()
        #: The connections to the target: how many, and the pool leased to 2026 requests.
        self.links = Links(
            max_back_connections, cap_of(max_back_connections_per_client, max_back_connections)
        )
        self._parked: dict[str, Forward] = {}
        self._forwarded = ClientCounts()  # the forwards in flight or parked, by client
        self._places: dict[Forward, Callable[[], None]] = {}  # -> its place's release
        self._watched: dict[str, int] = {}  # a resource the watcher subscribes to -> its streams
        self._leaving: dict[str, threading.Event] = {}  # one being unsubscribed -> set once done
        self._arriving: dict[str, threading.Event] = {}  # one being subscribed -> set once done
        self._watch_lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_forwarded, thread_name_prefix="mcp-proxy")
        #: The shared back connection: capabilities, 2026 listings, listen streams.
        self._watching: weakref.WeakSet[Any] = weakref.WeakSet()  # sessions with an _end_with
        self.watcher = self._open_watcher()
        back = self.watcher.client
        #: An HTTP target is one server behind every connection; any other (a command) is one
        #: process per connection, so 2026 requests that may ask go through the watcher, in turn.
        self.http_target = type(back.session.transport).__module__.startswith("mcp_ref.http")
        self._turn = threading.Lock()
        info = back.server_info
        super().__init__(
            name or (info.name if info is not None else "proxy"),
            info.version if info is not None and info.version else "0.1.0",
            instructions=back.instructions,
            extensions=[FrontDoor(self)],
        )
        self.on_roots_list_changed = self.pass_roots_changed
        self.subscriptions.on_end = self._streams_ended

    def pass_roots_changed(self, connection: Any) -> None:
        """A handshake-era front client's roots changed: its back connection tells the target
        (client/roots: "Clients that support roots MUST" send the notification when they change;
        a 2026 target has no such notification, and asks for the roots each time)."""
        link = self._sessions.get(connection)
        if link is None or link.client.connection.modern:
            return
        try:
            link.client.connection.notify("notifications/roots/list_changed")
        except Exception:  # the target has gone: nothing to tell
            log.debug("proxy: roots/list_changed not passed on", exc_info=True)

    # -- its extensions: the front door last (mcp_ref.proxy.front_door) ---------------------------

    @property  # type: ignore[override]
    def request_hooks(self) -> list:
        """The extensions' ``intercept_request`` in the order added, the front door's last: every
        other one runs for a forwarded request as for a server's own."""
        return self._request_hooks

    @request_hooks.setter
    def request_hooks(self, hooks: list) -> None:
        self._request_hooks = front_door_last(hooks)  # one assignment: a request sees either list

    def add_extension(self, extension: Extension) -> Extension:
        """As :meth:`Server.add_extension`; TypeError for one that intercepts tool calls (a proxy
        runs none: its target does)."""
        refuse_tool_interceptor(extension)
        return super().add_extension(extension)

    # -- what the front declares ---------------------------------------------------------------

    def capabilities(self, version: str | None = None, caller: Any = None) -> dict:
        """The target's capabilities, as the front's at ``version``; to a ``caller`` served over
        stateless HTTP, no ``listChanged`` or ``subscribe`` (as :meth:`Server.capabilities`: no
        notification can reach its client after the request)."""
        back = self.watcher.client.server_capabilities
        caps = {key: dict(back[key]) for key in MIRRORED if isinstance(back.get(key), dict)}
        if caller is not None and caller.stateless:
            for declared in caps.values():
                declared.update(
                    {key: False for key in ("listChanged", "subscribe") if key in declared}
                )
        if "completions" in back and lifecycle.at_least(version, lifecycle.COMPLETIONS_CAPABILITY):
            caps["completions"] = {}
        return caps

    def offers(self, capability: str, version: str | None = None) -> bool:
        """True when the target offers ``capability``."""
        return capability in self.capabilities(version)

    # -- serving the handshake era ---------------------------------------------------------------

    def serve_handshake(self, call: Any, proceed: Callable[[], Any]) -> Any:
        """A handshake-era front request: on its session's own back connection."""
        method, params, connection = call.method, call.params, call.caller
        if method == "initialize":
            result = proceed()
            self._greeted.add(connection)  # its back connection is opened at its first request
            return result
        if method not in PASSED and method not in MRTR_METHODS and method not in SESSION_METHODS:
            return proceed()
        connection.lifecycle.check_receive(method)  # before initialized: refused as usual
        answer = check_forward(self, call, None)  # what the gate hides: as if missing
        if answer is not None:
            return answer  # nothing forwarded
        if connection not in self._greeted:
            # a stateless HTTP request (no initialize on its connection): served as a 2026 one is
            return self._serve_sessionless(call, proceed)
        with errors_of(method, None):
            link = self._session_link(connection)
        if method == "logging/setLevel":
            result = proceed()  # the front session's own level, checked and kept
            link.set_log_level(params.get("level"))
            return result
        uri = params.get("uri")
        if method in ("resources/subscribe", "resources/unsubscribe"):
            if not isinstance(uri, str):
                raise InvalidParams("Invalid params: uri must be a string")
            with errors_of(method, None):
                if method == "resources/subscribe":
                    link.client.subscribe(uri)
                else:
                    link.client.unsubscribe(uri)
            return {}
        front = Front(connection, call.context, None)
        if method in MRTR_METHODS:
            forward = self._start(link, method, params, front, connection.owner, hold="session")
            return self._serve_for_handshake(forward, front, method)
        with errors_of(method, None):
            result = link.pass_on(method, params, front)
        return plain_result(result, method, front.version)

    def _session_link(self, connection: Any) -> BackLink:
        """The back connection of a handshake-era front session, opened at its first request."""
        link = self._sessions.get(connection)
        if link is not None and link.alive:
            return link
        with self._opening:  # one opening at a time: a session's concurrent first requests share it
            link = self._sessions.get(connection)
            if link is not None and not link.alive:  # the target exited or went away: again
                log.warning("proxy: a session's connection to the target ended; connecting again")
                self.end_session(connection)
                link = None
            if link is None:
                link = self._open_session(connection)
                with self._lock:  # as close() takes the sessions: kept for it, or refused
                    closed = self.links.closed
                    if not closed:
                        self._sessions[connection] = link
                if closed:  # the proxy closed while it opened: not left open
                    self.links.drop(link)
                    raise closed_error()
                if connection not in self._watching:
                    # closed with the session: one thread per session (at most max_back_connections)
                    self._watching.add(connection)
                    threading.Thread(
                        target=self._end_with,
                        args=(connection,),
                        name="mcp-proxy-session",
                        daemon=True,
                    ).start()
        return link

    def _end_with(self, connection: Any) -> None:
        connection.session.wait_closed()
        self.end_session(connection)

    def _open_session(self, connection: Any) -> BackLink:
        room = self.links.take(client_of_connection(connection))
        front = weakref.ref(connection)  # the link must not keep the front connection alive

        def list_changed(kind: str) -> None:
            session = front()
            if session is not None:
                session.list_changed(kind)

        def updated(uri: str) -> None:
            session = front()
            if session is not None:
                session.notify("notifications/resources/updated", {"uri": uri})

        def completed(elicitation_id: Any) -> None:
            session = front()
            if session is not None and isinstance(elicitation_id, str):
                session.notify(
                    "notifications/elicitation/complete", {"elicitationId": elicitation_id}
                )

        try:
            link = BackLink(
                self,
                dict(connection.client_capabilities),
                session=connection,
                on_list_changed=list_changed,
                on_resource_updated=updated,
                on_elicitation_complete=completed,
            )
            self.links.keep(link, room)
            return link
        except BaseException:
            room()
            raise

    @staticmethod
    def _serve_for_handshake(forward: Forward, front: Front, method: str) -> dict:
        """A forwarded request's result for a handshake-era client.  A 2026 target's -32021 (it
        needed a capability this client did not declare) is a tool's error result for
        ``tools/call``, as a handshake-era server answers it: the handshake era has no such code."""
        try:
            with errors_of(method, None):
                return plain_result(forward.serve(front), method, front.version)
        except McpError as exc:
            if method != "tools/call" or exc.code != MissingRequiredClientCapabilityError.code:
                raise
            return {"content": [{"type": "text", "text": exc.message}], "isError": True}

    def _serve_sessionless(self, call: Any, proceed: Callable[[], Any]) -> Any:
        """A handshake-era request with no session behind it (stateless HTTP)."""
        method, params = call.method, call.params
        if method == "logging/setLevel":
            return proceed()
        if method in SESSION_METHODS:  # as Server's own resources.subscribable words it
            raise InvalidRequest(stateless_refusal(method))
        if method in MRTR_METHODS:
            front = Front(call.caller, call.context, None)
            with errors_of(method, None):
                link, hold = self._link_for_2026(call.caller)
            forward = self._start(link, method, params, front, call.caller.owner, hold=hold)
            return self._serve_for_handshake(forward, front, method)
        watcher = self.live_watcher()
        front = Front(call.caller, call.context, None)
        with errors_of(method, None):
            result = watcher.pass_on(method, params, front)
        return plain_result(result, method, front.version)

    # -- serving 2026-07-28 ----------------------------------------------------------------------

    def serve_modern(self, call: Any, proceed: Callable[[], Any], envelope: Any) -> Any:
        """A 2026-07-28 front request: stateless, so on the watcher or a leased connection."""
        method, params = call.method, call.params
        call.context.envelope = envelope
        if method == "subscriptions/listen":
            return self._listen(call, proceed)
        if method not in PASSED and method not in MRTR_METHODS:
            return proceed()
        check_forward(self, call, envelope)  # what the gate hides: as if missing, nothing forwarded
        front = Front(call.caller, call.context, envelope)
        if method in MRTR_METHODS:
            state = params.get("requestState")
            if state is not None:
                origin = digest(method, params)
                forward = self._unpark(state, call.caller.owner, origin)
                try:
                    forward.answer(params.get("inputResponses"))
                except InvalidParams:
                    self.park(forward)  # still the caller's to retry, with valid answers
                    raise
            else:
                with errors_of(method, envelope):
                    link, hold = self._link_for_2026(call.caller)
                forward = self._start(link, method, params, front, call.caller.owner, hold=hold)
                forward.origin = digest(method, params)
            with errors_of(method, envelope):
                result = forward.serve(front)
            if result.get("resultType") == lifecycle.INPUT_REQUIRED:
                return lifecycle.complete_result(
                    result, self.server_info(envelope.version), lifecycle.INPUT_REQUIRED
                )
        else:
            watcher = self.live_watcher()
            with errors_of(method, envelope):
                result = watcher.pass_on(method, params, front)
        result = plain_result(result, keep_hints=True)
        if method != "tools/call":
            # 2026-07-28 server/utilities/caching: "Servers MUST include caching hints" on these
            from ..server.connection import add_hints

            add_hints(self, method, params, result)
        return lifecycle.complete_result(result, self.server_info(envelope.version))

    def _listen(self, call: Any, proceed: Callable[[], Any]) -> Any:
        """A 2026 listen stream names resources: the watcher subscribes at the target to those the
        gate shows the caller, and the stream is acknowledged for those it holds (2026-07-28
        basic/patterns/subscriptions §Acknowledgment: "The notifications field in the
        acknowledgment reflects the subset the server agreed to honor"), and for a hidden one as
        the target acknowledges a URI it does not know (``listen_hidden``); once the stream ends,
        those no open stream names are let go."""
        params = call.params
        try:
            asked = Filter.from_wire(params.get("notifications"))
        except InvalidParams:
            return proceed()  # refused by the listen itself, in its words
        if not asked.uris:
            return proceed()
        hidden = listen_hidden(self, call, asked.uris)  # before anything is sent to the target
        held = self._watch(asked.uris - hidden)
        agreed = held | hidden if agrees_unknown(self) else held
        # the request's own params: the server's listen acknowledges what they name
        params["notifications"] = {
            **params["notifications"],
            "resourceSubscriptions": sorted(agreed),
        }
        try:
            return proceed()
        except BaseException:
            self._unwatch(held)  # refused: no stream holds them
            raise

    def _watch(self, uris: Collection[str]) -> set[str]:
        """Count one more open stream for each of ``uris`` the watcher holds at the target (or
        subscribes to now); those, without a URI past ``MAX_WATCHED_URIS`` or refused.  Decided
        under the lock, sent after it, all at once, waiting ``UNWATCH_WAIT`` at most in all (a
        stalled target holds neither the other listens nor a shutdown); a resource another
        listen is subscribing to is waited for, within that bound; one held already, not."""
        watcher = self.live_watcher()
        if not watcher.client.server_capabilities.get("resources", {}).get("subscribe"):
            return set()
        deadline = time.monotonic() + UNWATCH_WAIT
        # a resource an ended stream's unsubscribe is in flight for is subscribed once that is
        # done, not beside it (the target may handle two requests in either order)
        with self._watch_lock:
            leaving = {self._leaving[uri] for uri in uris if uri in self._leaving}
        for unsubscribed in leaving:
            unsubscribed.wait(max(0.0, deadline - time.monotonic()))
        done = threading.Event()
        with self._watch_lock:
            watcher = self.watcher  # (opened again meanwhile, it holds what this one did)
            held = self._count_held(watcher, uris)
            others = {self._arriving[uri] for uri in uris if uri in self._arriving}
            mine = sorted(set(uris) - held - self._arriving.keys())
            self._arriving.update(dict.fromkeys(mine, done))
        try:
            agreed = self._subscribe(watcher, mine, deadline)
        finally:
            with self._watch_lock:
                for uri in mine:
                    del self._arriving[uri]
                if self.watcher is watcher:
                    held |= self._count_held(watcher, agreed)
            done.set()
        for arriving in others:
            arriving.wait(max(0.0, deadline - time.monotonic()))
        with self._watch_lock:
            return held | self._count_held(self.watcher, set(uris) - held)

    def _subscribe(self, watcher: BackLink, pending: list[str], deadline: float) -> set[str]:
        """Subscribe ``watcher`` to ``pending`` (marked arriving) as room allows, all at once,
        again for those that did not fit while some were refused; those it took."""
        agreed: set[str] = set()
        marked = len(pending)  # in self._arriving until the caller is done
        while pending and watcher.alive and not self.links.closed:
            with self._watch_lock:
                others = len(self._arriving) - marked  # subscribing for other listens
                room = max(0, MAX_WATCHED_URIS - len(watcher.subscribed) - others)
                batch, pending = pending[:room], pending[room:]
            left = deadline - time.monotonic()
            if not batch or left <= 0:
                break
            with watcher.carrying(None):  # the proxy's own: its logs are nobody's
                taken = watcher.client.connection.streams.subscribe_many(batch, left)
            for uri in sorted(set(batch) - taken):
                log.info("proxy: the target did not take a subscription to %s", uri)
            with self._watch_lock:
                watcher.subscribed.update(taken)
            agreed |= taken
        for uri in pending:
            log.warning("proxy: %d resources watched; %s is not", MAX_WATCHED_URIS, uri)
        return agreed

    def _count_held(self, watcher: BackLink, uris: Collection[str]) -> set[str]:
        """One more stream for each of ``uris`` ``watcher`` holds; those (under the lock).  What
        its client no longer holds (a 2026 target's re-opened stream left it out) is dropped."""
        watcher.subscribed &= watcher.client.connection.streams.feed.uris
        held = {uri for uri in uris if uri in watcher.subscribed}
        for uri in held:
            self._watched[uri] = self._watched.get(uri, 0) + 1
        return held

    def _unwatch(self, uris: Collection[str]) -> None:
        """One open stream fewer for each of ``uris`` (a URI once per stream): the watcher
        unsubscribes at the target from those no open stream names any more.  Decided under the
        lock, sent after it, all at once, waiting ``UNWATCH_WAIT`` at most in all (a stalled
        target holds neither the other listens nor a shutdown that ends every stream); nothing is
        sent once the proxy has closed (its connections end, and what they held with them)."""
        gone: list[str] = []
        done = threading.Event()
        with self._watch_lock:
            watcher = self.watcher
            for uri in uris:
                left = self._watched.pop(uri, 0) - 1
                if left > 0:
                    self._watched[uri] = left
                elif uri in watcher.subscribed:
                    watcher.subscribed.discard(uri)
                    gone.append(uri)
                    self._leaving[uri] = done
        try:
            if gone and watcher.alive and not self.links.closed:
                with watcher.carrying(None):  # the proxy's own: its logs are nobody's
                    watcher.client.connection.streams.unsubscribe_many(gone, UNWATCH_WAIT)
        except Exception:  # the target went away: it holds nothing more
            log.debug("proxy: unsubscribing from %s failed", gone, exc_info=True)
        finally:
            with self._watch_lock:
                for uri in gone:
                    if self._leaving.get(uri) is done:
                        del self._leaving[uri]
            done.set()

    def _streams_ended(self, streams: list) -> None:
        # all their resources at once: a shutdown that ends every stream waits one bound in all
        # (its hidden ones were never watched: ``_listen``)
        self._unwatch([uri for stream in streams for uri in stream.filter.uris - stream.hidden])

    def _open_watcher(self) -> BackLink:
        watcher = BackLink(
            self,
            None,
            on_list_changed=self._publish_list_changed,
            on_resource_updated=self._publish_updated,
        )
        # basic/versioning: a 2026 front request's log level is its own, so a shared connection
        # asks for every message and the front keeps those at the request's level (Front.log).
        try:
            watcher.set_log_level("debug")
        except BaseException:
            watcher.close()  # refused: the connection (a process) is not left behind
            raise
        return watcher

    def live_watcher(self) -> BackLink:
        """The watcher, opened again if its connection ended (the target exited or went away):
        the resources it watched are subscribed again."""
        watcher = self.watcher
        if self.links.closed:  # a closed proxy opens nothing
            raise closed_error()
        if watcher.alive:
            return watcher
        with self._opening:
            if self.watcher is watcher:
                if self.links.closed:
                    raise closed_error()
                log.warning("proxy: the connection to the target ended; connecting again")
                fresh = self._open_watcher()
                try:
                    with self._watch_lock:  # what it watched, as the streams hold it now
                        uris = sorted(watcher.subscribed)
                        # at once, within one short bound: a new process that does not answer
                        # holds up neither this request nor the others for long
                        with fresh.carrying(None):
                            agreed = fresh.client.connection.streams.subscribe_many(
                                uris, UNWATCH_WAIT
                            )
                        for uri in sorted(set(uris) - agreed):
                            # its streams still count it: a later listen subscribes again
                            log.warning("proxy: %s is no longer watched at the target", uri)
                        fresh.subscribed.update(agreed)
                        with self._lock:  # as close() takes the watcher: closed by it, or refused
                            closed = self.links.closed
                            if not closed:
                                self.watcher = fresh
                except BaseException:
                    fresh.close()  # not kept: its process is not left behind
                    raise
                watcher.close()
                if closed:  # the proxy closed while it opened: not left open
                    fresh.close()
                    raise closed_error()
        return self.watcher

    def _publish_list_changed(self, kind: str) -> None:
        self.subscriptions.publish(f"notifications/{kind}/list_changed")

    def _publish_updated(self, uri: str) -> None:
        self.subscriptions.publish("notifications/resources/updated", {"uri": uri})

    # -- forwards, leases, parking ---------------------------------------------------------------

    def _start(
        self, link: BackLink, method: str, params: dict, front: Front, owner: Any, *, hold: str
    ) -> Forward:
        try:
            place = self._count_forward(front.connection)
        except ServerBusy:
            self._let_go(link, hold)
            raise
        forward = Forward(self, link, front, owner)
        forward.hold = hold
        self._places[forward] = place
        link.enter(forward)
        current.forward = forward
        try:
            if self.links.closed:  # nothing more is sent to the target once the proxy closed
                raise closed_error()
            forward.call = link.start(method, params, front, on_progress=forward.progress)
        except BaseException:
            forward.finish()
            raise
        finally:
            current.forward = None
        try:
            self._pool.submit(forward.run)
        except RuntimeError:  # the proxy closed since: its close ends the call with the link
            forward.finish()
            raise closed_error() from None
        return forward

    def release(self, forward: Forward) -> None:
        """A forward has ended: forget it, and give its leased connection back."""
        with self._lock:
            place = self._places.pop(forward, None)
            if forward.token is not None:
                self._parked.pop(forward.token, None)
        if place is not None:
            place()  # among every client's forwards, and its own
        link = forward.link
        link.leave(forward)
        # A handshake-era target's questions name no request: while it may still be at work on
        # this one, its connection serves no other client's request.  Over HTTP it may even ask on
        # its GET stream (2025-11-25 basic/transports §Listening for Messages from the Server:
        # "The server MAY send JSON-RPC requests and notifications on the stream"; that they be
        # "unrelated to any concurrently-running JSON-RPC request" is only a SHOULD).
        spent = forward.abandoned and not link.client.connection.modern
        self._let_go(link, forward.hold, spent=spent)

    def _count_forward(self, connection: Any) -> Callable[[], None]:
        """A place for one more forward of ``connection``'s client, among every client's
        (``max_forwarded``) and its own (``max_forwarded_per_client``); its release."""
        cap = self.max_forwarded_per_client
        with self._lock:  # every place is taken under it: the sum stays within max_forwarded
            full = self._forwarded.held() >= self.max_forwarded
            place = None if full else self._forwarded.hold(client_of_connection(connection), cap)
        if full:
            raise ServerBusy(
                f"Server busy: this proxy has {self.max_forwarded} requests in flight; retry later",
                data={"limit": self.max_forwarded},
            )
        if place is None:
            # worded as the HTTP server's share of its handlers (HttpAppBase.share_handlers)
            raise ServerBusy(
                f"Server busy: one client may have {cap} requests forwarded by this proxy at "
                "once (those waiting for its answers included); retry when some have finished",
                data={"limit": cap},
            )
        return place

    def _let_go(self, link: BackLink, hold: str, *, spent: bool = False) -> None:
        """Give back ``link``, held as ``hold``; ``spent``: never to another request (closed)."""
        if hold == "leased":
            self.links.give_back(link, reuse=not spent)
        elif hold == "turn":
            if spent:  # its process ends: the next request that needs one starts another
                link.end()
            self._turn.release()
            if spent:
                self.watch_again()

    def watch_again(self) -> None:
        """The watcher was closed: while 2026 listen streams are open, it is opened again now (and
        subscribes again to what it watched), so that their notifications keep coming."""
        if not len(self.subscriptions) or self.links.closed:
            return
        try:
            self.live_watcher()
        except Exception as exc:  # the next request that needs it tries again
            log.warning(
                "proxy: the connection to the target was not opened again (%s)",
                type(exc).__name__,
            )

    def _link_for_2026(self, caller: Any) -> tuple[BackLink, str]:
        """The back connection of a 2026 front request (of the front connection ``caller``) that
        may ask, and how it is held."""
        if self.http_target:
            return self.links.lease(client_of_connection(caller), self._open_pooled), "leased"
        # One process behind one connection, whose state is the process's: the watcher's.  A 2026
        # target's questions come in the answers of the request they are for, so requests share
        # it; a handshake-era target's questions name no request, so these requests take turns.
        watcher = self.live_watcher()
        if watcher.client.connection.modern:
            return watcher, "shared"
        if not self._turn.acquire(timeout=self.ask_timeout):
            raise ServerBusy(
                "Server busy: the server behind this proxy is answering another request; "
                "retry later"
            )
        try:
            return self.live_watcher(), "turn"
        except BaseException:
            self._turn.release()
            raise

    def park(self, forward: Forward) -> None:
        """Keep a 2026 front's forward until its retry names its ``requestState``."""
        with self._lock:
            if not forward.finished:  # a finished one is never retried: it would stay forever
                self._parked[forward.token] = forward  # type: ignore[index]

    def _unpark(self, state: Any, owner: Any, origin: str) -> Forward:
        """The parked forward a retry's ``requestState`` names, if it is this caller's and this
        request's (mrtr §Server Requirements: state "MUST" be rejected when it fails verification;
        it "SHOULD" be bound to the principal and the originating request)."""
        with self._lock:
            forward = self._parked.get(state) if isinstance(state, str) else None
            if forward is None:
                refusal = "is unknown or has expired; send the request again without it"
            elif forward.owner != owner:
                refusal = "belongs to another caller"
            elif forward.origin != origin:
                refusal = "belongs to another request"
            else:
                del self._parked[state]
                return forward
        raise InvalidParams(f"Invalid params: requestState {refusal}")

    def _open_pooled(self) -> BackLink:
        link = BackLink(self, None)
        try:
            link.set_log_level("debug")  # kept at each request's own level by the front
        except BaseException:
            link.close()  # refused: the connection is not left behind
            raise
        return link

    def end_session(self, connection: Any) -> None:
        """Close the back connection of a handshake-era front ``connection``, if it has one."""
        with self._lock:
            link = self._sessions.pop(connection, None)
        if link is not None:
            self.links.drop(link)

    def close(self) -> None:
        """End every parked request (its question of the target is refused, so no thread waits
        ``ask_timeout`` for a retry that cannot come) and close every back connection, those
        leased to requests in flight too (the proxy serves nothing more; :meth:`Links.shut`) and
        those still closing (``Links.ending``: their processes are waited for, none left running
        at exit), all at once, waiting ``CLOSE_TIMEOUT`` (10 s) at most in all (:func:`close_all`)."""
        with self._lock:
            parked = list(self._parked.values())
            self._parked.clear()
        for forward in parked:
            forward.finish()
        with self._lock:
            # and those still closing (a cancelled call's old process): none left behind at exit
            links = {*self._sessions.values(), *self.links.shut(), self.watcher}
            links.update(self.links.ending.copy())
            self._sessions.clear()
        close_all(list(links))  # at once: a stalled target holds its own close, not each in turn
        self._pool.shutdown(wait=False, cancel_futures=True)
