"""What one client may hold of an HTTP application at once, so that no client starves the others:
its long-lived streams (``max_streams_per_client``) and its requests in flight
(``max_requests_per_client``).

A client is the principal of the request's token, else the peer's address (:func:`client_of`).
Past either cap the request is answered 429 Too Many Requests with ``Retry-After`` (RFC 6585 §4:
the client sent too many requests; a per-client limit, where 503 would say the whole server is
unavailable), its body a JSON-RPC error -31005 with ``data.limit``.

A request in flight is a POST being served, from the moment its caller is known (after the token
is checked) to the end of its response; one whose response becomes a long-lived stream (a
``subscriptions/listen``) counts as a stream from then on instead.  The default cap is a share of
the slots the WSGI server has, which it tells in the environ (:data:`SLOTS_KEY`: the
standard-library server's connection cap); a server that does not tell (gunicorn, a framework's
view) is not bounded by a share, only by an explicit number.
"""

from __future__ import annotations

import functools
import hashlib
import math
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, cast

from ...errors import LIMIT_EXCEEDED
from ...server.principal import principal_id
from .http_session import HttpSession
from .status import ServiceUnavailable, TooManyRequests

#: The environ key in which a WSGI server tells how many requests it can serve at once (an int).
SLOTS_KEY = "mcp_ref.slots"
#: The environ key holding the release of the request's place among its client's requests in
#: flight (``hold_request``), taken by a response that becomes a long-lived stream.
IN_FLIGHT_KEY = "mcp_ref.in_flight"
#: The default ``max_requests_per_client``: a quarter of the server's slots.
DEFAULT_REQUEST_SHARE = 0.25
#: The default ``max_sessions_per_client``: a tenth of ``max_sessions`` (100 of 1,000).
DEFAULT_SESSION_SHARE = 0.1
#: The default ``max_handlers_per_client``: a quarter of ``handler_threads`` (16 of 64).
DEFAULT_HANDLER_SHARE = 0.25
#: ``Retry-After`` past the cap of requests in flight (one of them may end at any moment).
REQUESTS_RETRY_AFTER = "1"
#: ``Retry-After`` past the cap of streams (a stream is long-lived).
STREAMS_RETRY_AFTER = "5"


def peer_of(environ: dict) -> str:
    """A caller without a token or a session: its address (``mcp_ref.server.principal.Principal``)."""
    return "http-client:" + (environ.get("REMOTE_ADDR") or "unknown")


def client_of(environ: dict) -> str:
    """Who holds a stream, for ``max_streams_per_client`` and the connection cap: the principal
    of the request's token, else the peer's address (``mcp_ref.server.principal.Principal``)."""
    caller = environ.get("mcp_ref.oauth")
    return peer_of(environ) if caller is None else principal_id(caller)


def client_of_connection(connection: Any) -> str:
    """Who makes the requests of a server ``connection``, named as :func:`client_of` names the
    caller of an HTTP request: its HTTP session's client (the principal of the token that opened
    it, else the peer's address), else the connection's principal (a token's; a stateless
    request's address, ``http-client:...``; ``stdio``; ``connection-<n>``).  For a share kept
    beside the app's, such as the proxy's of its connections to its target."""
    transport = connection.transport
    if isinstance(transport, HttpSession) and transport.client is not None:
        return transport.client
    return connection.principal.id


def check_share_setting(
    setting: int | float | None,
    name: str = "max_requests_per_client",
    of: str = "the server's slots",
) -> None:
    """Refuse a per-client cap (``name``) that means nothing: an int of at least 1 (how many), a
    float above 0 and at most 1 (a share of ``of``), or None (no cap)."""
    if setting is None:
        return
    if isinstance(setting, bool) or not isinstance(setting, (int, float)):
        raise TypeError(f"{name} must be an int, a float share (0 to 1] or None")
    if isinstance(setting, int) and setting < 1:
        raise ValueError(f"{name} must be at least 1 (None: no cap)")
    if isinstance(setting, float) and not 0.0 < setting <= 1.0:
        raise ValueError(f"{name} as a float is a share of {of}: (0, 1]")


def cap_of(setting: int | float | None, total: int) -> int | None:
    """The cap ``setting`` (checked by :func:`check_share_setting`) means out of ``total``: itself
    (an int, or None: no cap), or its share of ``total`` (a float; at least 1)."""
    if setting is None or isinstance(setting, int):
        return setting
    return max(1, math.floor(total * setting))


def request_cap(setting: int | float | None, environ: dict) -> int | None:
    """The cap of one client's requests in flight for this request: ``setting`` itself (an int),
    its share of the slots the WSGI server tells (a float; at least 1), else None (no cap)."""
    if setting is None or isinstance(setting, int):
        return setting
    slots = environ.get(SLOTS_KEY)
    if not isinstance(slots, int) or slots < 1:
        return None
    return max(1, math.floor(slots * setting))


def once(*releases: Callable[[], None]) -> Callable[[], None]:
    """One release of ``releases`` (each called in turn) that acts only the first time it is
    called: a place goes back once, however many ends a request or stream has."""
    first = threading.Lock()  # the first call takes it

    def release() -> None:
        if first.acquire(blocking=False):
            for each in releases:
                each()

    return release


class ClientCounts:
    """How many of one kind (streams, requests) each client holds now, each under a cap."""

    def __init__(self) -> None:
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()
        #: The places a request of this thread holds for the jobs it is about to submit
        #: (``places``: :class:`Places`, set by :meth:`hold_places`): :class:`CountedPool` hands
        #: each job one of them instead of counting it again.
        self.prepaid = threading.local()

    def hold(self, client: str, cap: int | None) -> Callable[[], None] | None:
        """One more for ``client``, and its release (idempotent); None when it holds ``cap``."""
        with self._lock:  # hold_some's count of 1, without its arithmetic (every POST holds one)
            held = self._held.get(client, 0)
            if cap is not None and held >= cap:
                return None
            self._held[client] = held + 1
        given_back = False

        def release() -> None:  # once(give_back), under the count's own lock: no lock of its own
            nonlocal given_back
            with self._lock:
                if not given_back:
                    given_back = True
                    self._count_down(client, 1)

        return release

    def hold_some(self, client: str, count: int, cap: int | None) -> tuple[int, Callable[[], None]]:
        """Up to ``count`` more for ``client``, as many as ``cap`` leaves room for: how many were
        taken, and their release (idempotent)."""
        with self._lock:
            held = self._held.get(client, 0)
            taken = count if cap is None else max(0, min(count, cap - held))
            if taken:
                self._held[client] = held + taken

        return taken, once(functools.partial(self.give_back, client, taken))

    def give_back(self, client: str, count: int) -> None:
        """``count`` of ``client``'s places are free again."""
        with self._lock:
            self._count_down(client, count)

    def _count_down(self, client: str, count: int) -> None:
        """:meth:`give_back`, under the lock."""
        left = self._held.get(client, count) - count
        if left > 0:
            self._held[client] = left
        else:
            self._held.pop(client, None)

    def hold_places(self, client: str, count: int, cap: int | None) -> Places:
        """Up to ``count`` more for ``client`` (:meth:`hold_some`), held for the jobs this thread
        submits next (:attr:`prepaid`): each job takes one over (:meth:`Places.take_one`)."""
        taken, _ = self.hold_some(client, count, cap)
        places = Places(self, client, taken)
        self.prepaid.places = places
        return places

    def held(self, client: str | None = None) -> int:
        """How many ``client`` holds (None: every client, together)."""
        with self._lock:
            return sum(self._held.values()) if client is None else self._held.get(client, 0)


class Places:
    """Places a request holds among its client's (:meth:`ClientCounts.hold_places`), until each
    is taken over by a job (:meth:`take_one`) or the rest given back (:meth:`release`): a job is
    counted once, from its request's arrival to its end."""

    def __init__(self, counts: ClientCounts, client: str, held: int):
        self.counts, self.client, self.left = counts, client, held
        self._lock = threading.Lock()

    def take_one(self, client: str) -> Callable[[], None] | None:
        """One of the places, for a job of ``client``, and its release; None when none is left."""
        with self._lock:
            if client != self.client or self.left == 0:
                return None
            self.left -= 1
        return once(functools.partial(self.counts.give_back, client, 1))

    def release(self) -> None:
        """Give back the places no job took (the request's items are dispatched)."""
        with self._lock:
            left, self.left = self.left, 0
        if getattr(self.counts.prepaid, "places", None) is self:
            self.counts.prepaid.places = None
        if left:
            self.counts.give_back(self.client, left)


class CountedPool(Executor):
    """The shared handler pool as one connection of a client submits to it: each job counted
    among its client's handlers (``max_handlers_per_client``) from its submission, queued or
    running, until it ends."""

    def __init__(self, pool: Executor, counts: ClientCounts, client: str):
        self.pool, self.counts, self.client = pool, counts, client
        #: Set by :meth:`withdraw`: the jobs that have not started never run.
        self.withdrawn = False

    def withdraw(self) -> None:
        """The jobs still queued never run: their connection was abandoned (an ``initialize``
        whose client left, or that was not served within ``handshake_timeout``), and no one waits
        for their answers.  Each keeps its place among its client's handlers until it leaves the
        queue, so a client that sends and leaves again and again queues no more than its share."""
        self.withdrawn = True

    def submit(self, fn, /, *args, **kwargs):
        """Run ``fn(*args, **kwargs)`` on the pool, counted until it ends: in a place its request
        holds already (``HttpAppBase.share_handlers``), else in a new one (no cap: counted)."""
        places = getattr(self.counts.prepaid, "places", None)
        release = None if places is None else places.take_one(self.client)
        if release is None:
            release = cast(Callable[[], None], self.counts.hold(self.client, None))

        def counted():
            try:
                return None if self.withdrawn else fn(*args, **kwargs)
            finally:
                release()

        try:
            return self.pool.submit(counted)
        except BaseException:
            release()
            raise


def too_many_streams(cap: int, request_id=None) -> TooManyRequests:
    """The refusal of a long-lived stream past its client's ``max_streams_per_client``."""
    return TooManyRequests(
        f"Too many open streams: one client may hold {cap} "
        "(subscriptions/listen and GET streams); close one, or retry later",
        LIMIT_EXCEEDED,
        headers=[("Retry-After", STREAMS_RETRY_AFTER)],
        request_id=request_id,
        data={"limit": cap},
    )


def too_many_requests(cap: int) -> TooManyRequests:
    """The refusal of a request past its client's ``max_requests_per_client``."""
    return TooManyRequests(
        f"Too many requests in flight: one client may have {cap} at once on this "
        "server; retry when one is answered",
        LIMIT_EXCEEDED,
        headers=[("Retry-After", REQUESTS_RETRY_AFTER)],
        data={"limit": cap},
    )


class ClientStreams:
    """The long-lived streams each client of ``app`` holds, against its
    ``max_streams_per_client`` (read at each stream, so it may be changed on a running app).

    The client is its principal when it has a token, else its address (:func:`client_of`): one
    client cannot hold every connection slot with quiet streams while others are refused.  With a
    shared state (``Server(state="redis://...")``) the cap holds over every worker of the
    deployment: each stream also takes a place in the state's counters (:meth:`_hold_shared`).
    """

    #: With a shared state: the deployment's counts (``Counters``, made at the first stream).
    _shared: Any = None

    def __init__(self, app: Any):
        self.app = app
        #: This process's streams, by client.
        self.counts = ClientCounts()
        self._shared_lock = threading.Lock()

    def hold(self, client: str, environ: dict, request_id=None) -> Callable[[], None]:
        """Count one stream of ``client`` (the request's); returns its release (idempotent).
        Past the cap: 429 with ``Retry-After`` and -31005 with ``data.limit``.  A POST that
        becomes a stream (``subscriptions/listen``) leaves its client's requests in flight."""
        cap = self.app.max_streams_per_client
        give_back = self._hold_shared(client, cap, request_id)
        release_here = self.counts.hold(client, None if give_back is not None else cap)
        if release_here is None:
            raise too_many_streams(cast(int, cap), request_id)
        environ.pop(IN_FLIGHT_KEY, lambda: None)()  # waiting for events is not work
        return release_here if give_back is None else once(release_here, give_back)

    def _hold_shared(self, client: str, cap: int | None, request_id) -> Callable[[], None] | None:
        """With a shared state, one place of ``client``'s streams taken in the deployment's counts
        (one atomic script: counted and taken below ``cap``, or refused); its release.  Each place
        belongs to this worker, so a worker that dies frees its places when its heartbeat lapses
        (:mod:`mcp_ref.state.redis.holders`: 30 s).  None: no cap, or no shared state (this
        process counts).  Past the cap, 429; the counts unreachable (nothing counted, so not past
        the cap), 503 with ``Retry-After``."""
        if cap is None:
            return None
        shared = self._shared
        if shared is None:
            state = self.app.server.shared_state
            if state is None or not getattr(state, "shared", False):
                return None
            with self._shared_lock:
                if self._shared is None:
                    self._shared = state.counters()
                shared = self._shared
        # the client (an address, or a principal's id) named by a digest in the store's keys
        key = "streams:" + hashlib.sha256(client.encode()).hexdigest()[:32]
        if shared.acquire(key, cap):
            return lambda: shared.release(key)
        if shared.count(key) < cap:  # refused below the cap: the store could not be reached
            raise ServiceUnavailable(
                "Service Unavailable: the stream counts are unreachable; retry shortly",
                headers=[("Retry-After", "2")],
            )
        raise too_many_streams(cap, request_id)
