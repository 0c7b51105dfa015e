"""Policy: who may see and call what, and how often (the spec's security duties no message enforces).

The specification asks servers for things no protocol message carries:

- 2025-11-25 server/resources §Security Considerations: "Resource permissions SHOULD be checked
  before operations"; server/tools §Security Considerations: servers "MUST: ... Implement proper
  access controls ... Rate limit tool invocations"; server/utilities/completion: "Rate limit
  completion requests", "Implement appropriate rate limiting";
- 2025-11-25 basic/security_best_practices and the authorization text: check what the caller may
  do before doing it, and do not disclose what it may not see.

This module is that layer, the same in both eras and on every transport:

* :class:`Principal` — who is calling: ``ctx.principal`` in a handler.
* :class:`Policy` — ``Server(authorize=..., rate_limit=..., max_subscribed_resources=...,
  resource_update_interval=...)``: access control (items a principal may not use are left out of
  its listings, and addressing one answers exactly as if it did not exist), rate limits (token
  buckets per caller, and per caller per item: ``Principal.limit_id``), and the subscription bounds.

Where each rule is applied:

- listings: :func:`mcp_ref.server.listing.list_page` filters before it paginates (a listed
  resource under the template serving it too: :meth:`Policy.filter_listing`);
- direct access: ``tools/call``, ``resources/read``, ``prompts/get``, ``completion/complete``,
  ``resources/subscribe`` and ``subscriptions/listen`` look items up through
  :meth:`Policy.visible` (a hidden item is the same "not found" as a missing one);
- rate limits: :meth:`Policy.admit`, called for every request before it is routed (the
  extension's ``intercept_request``); over HTTP its middleware step calls it before dispatch
  (``http_middleware``), so a refused request gets 429 with ``Retry-After``;
- OAuth scopes (``@server.tool(scopes=[...])``): :meth:`Server.required_scopes`, which the HTTP
  transport asks before dispatch (403 ``insufficient_scope``, 2025-11-25 §Scope Challenge
  Handling).  Unlike ``authorize``, a scope-protected item stays listed: the client must see it to
  know it should ask for the scope (step-up authorization).  A hidden item needs no scope: the
  403 would tell it exists.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ..errors import LimitExceeded
from ..extension import Extension
from ..server.principal import Principal
from ..server.seams import LISTING_ACTIONS, LISTING_NAMES, Call, item_of
from .ratelimit import RateLimit, RateLimiter

if TYPE_CHECKING:
    from ..server.seams import Registry as Server
    from ..state.stores import Buckets

__all__ = [
    "Principal",
    "Policy",
    "Authorize",
    "ACTIONS",
    "LISTING_ACTIONS",
    "LISTING_NAMES",
    "UpdateCoalescer",
    "item_of",
    "entry_key",
    "limit_of",
    "OPTION",
    "DEFAULT_MAX_SUBSCRIBED_RESOURCES",
]

log = logging.getLogger(__name__)

#: The actions ``authorize(principal, action, name)`` is asked about, and what ``name`` is.
ACTIONS = {
    "tools/call": "the tool's name",
    "resources/read": "the resource's URI (a template's listing: its URI template)",
    "prompts/get": "the prompt's name",
    "completion/complete": "the prompt's name, or the resource template's URI template",
    "resources/subscribe": "the resource's URI",
}


#: ``authorize(principal, action, name) -> bool``.
Authorize = Callable[[Principal, str, str], bool]
#: The option of a tool, resource or prompt holding its own rate limit (``rate_limit="5/minute"``).
OPTION = "rate_limit"
#: Resources one principal may be subscribed to at once by default (``Server(max_subscribed_resources=)``).
DEFAULT_MAX_SUBSCRIBED_RESOURCES = 1000


def limit_of(entry: Any) -> RateLimit | None:
    """The rate limit of a registered item of its own (its ``options``), or None."""
    options = getattr(entry, "options", None)
    return None if not options else options.get(OPTION)


class Policy(Extension):
    """A server's access control and limits (see the module docstring), as an extension: its
    ``gate`` (with ``authorize``), its ``intercept_request`` (the rate limits, counted before a
    request is routed), and its HTTP middleware step (429 before dispatch).  Built by
    ``Server(authorize=..., rate_limit=..., ...)``; ``server.policy`` finds it.

    ``authorize`` decides per item (None: every principal may use every item).
    ``rate_limit`` bounds each principal's requests of any kind (``"100/minute"``; None: no bound).
    ``max_subscribed_resources`` caps the resources one principal is subscribed to at once, over
    all its connections and listen streams (None: no cap).  ``resource_update_interval`` (seconds)
    coalesces ``notifications/resources/updated``: a resource announced again sooner is sent once,
    at the end of the interval (the last announcement wins).  ``clock`` is the time source of the
    rate limits and of the coalescing (tests replace it: ``server.policy.clock = ...``).
    ``buckets`` holds the rate limits' token buckets (:class:`~mcp_ref.state.stores.Buckets`; None: in
    memory): every request is one atomic ``take`` there, so processes sharing it share the limits.
    """

    name = "policy"
    #: The server it serves (:meth:`setup`).
    server: Any = None

    def __init__(
        self,
        *,
        authorize: Authorize | None = None,
        rate_limit=None,
        max_subscribed_resources: int | None = None,
        resource_update_interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        buckets: Buckets | None = None,
    ):
        if authorize is not None and not callable(authorize):
            raise TypeError("authorize must be a function (principal, action, name) -> bool")
        if max_subscribed_resources is not None and (
            not isinstance(max_subscribed_resources, int) or max_subscribed_resources < 0
        ):
            raise ValueError("max_subscribed_resources must be a whole number >= 0, or None")
        if resource_update_interval is not None and not resource_update_interval >= 0:
            raise ValueError("resource_update_interval must be a number of seconds >= 0, or None")
        self.authorize = authorize
        self.rate_limit = RateLimit.of(rate_limit)
        self.max_subscribed_resources = max_subscribed_resources
        self.resource_update_interval = resource_update_interval
        #: The rate limits' buckets: in ``buckets`` (:class:`~mcp_ref.state.stores.Buckets`, shared by
        #: the processes of one server; its clock is then the time source), else in memory.
        self.limiter = RateLimiter(clock=clock, store=buckets)
        # the log, bounded: see _warn (this process's log: never in a shared store)
        self._warnings = RateLimiter(max_keys=1024, clock=clock)
        #: True when some registered item has its own rate limit (kept by the Server).
        self.item_limits = False
        #: Held while a subscription is counted and added, so two at once cannot both pass the cap.
        self.subscription_lock = threading.Lock()
        #: The verdicts of the request each thread serves (``request``, ``verdicts``): see :meth:`allows`.
        self._asked = threading.local()

    def setup(self, host: Any) -> None:
        """Serve ``host`` (a ``Server``): its items' own limits are found there."""
        self.server = host

    @property  # type: ignore[override]
    def gate(self) -> Any:
        """Itself with ``authorize`` (who may see and use which item), else None: it hides nothing."""
        return self if self.authorize is not None else None

    def intercept_request(self, call: Call, proceed: Callable[[], Any]) -> Any:
        """Count the request against the rate limits (unless its HTTP step counted it already), then go on."""
        if self.limits_requests:
            # counted before dispatch by the HTTP step (Admission), which noted it: taken, once
            admitted = call.caller.admitted
            if not (admitted and admitted.pop(call.context.request_id, False)):
                self.admit(call.principal, call.method, call.params, self.server)
        return proceed()

    def http_middleware(self, app: Any) -> list[Any]:
        """The step counting a POSTed request before dispatch: 429 with ``Retry-After`` over a limit."""
        from ..http.server.middleware import Admission

        return [Admission(self.admit_request)]

    def take_item_limit(self, value: Any) -> RateLimit | None:
        """An item's own ``rate_limit=`` (``"5/minute"``) as a :class:`RateLimit`, counted from now on."""
        limit = RateLimit.of(value)
        self.item_limits = True
        return limit

    def coalescer(self, send: Callable[[str, dict], None]) -> UpdateCoalescer:
        """The :class:`UpdateCoalescer` of ``resource_update_interval``, sending with ``send(uri, params)``."""
        return UpdateCoalescer(
            cast(float, self.resource_update_interval), send, lambda: self.clock()
        )

    def admit_request(self, principal: Principal, method: str, params: Any) -> bool:
        """Count one request now (before dispatch), or raise :class:`LimitExceeded`; False when
        there is nothing to count (no rate limit): :meth:`intercept_request` has nothing to skip,
        so the HTTP step leaves no note for it."""
        if not self.limits_requests:
            return False
        self.admit(principal, method, params, self.server)
        return True

    @property
    def restricts(self) -> bool:
        """True with ``authorize``: what principals see differs (the :class:`~mcp_ref.server.seams.Gate`
        contract)."""
        return self.authorize is not None

    @property
    def clock(self) -> Callable[[], float]:
        """The time source (monotonic seconds) of the rate limits and of the coalescing."""
        return self.limiter.clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self.limiter.clock = clock

    # -- access control ---------------------------------------------------------------------

    def allows(
        self, principal: Principal, action: str, name: str, request: dict | None = None
    ) -> bool:
        """Whether ``principal`` may use the item ``name`` for ``action``.

        ``request`` is the params of the request being served: ``authorize`` is asked each
        question once per request, whoever asks it (the HTTP transport's checks before dispatch,
        the rate limits, the handler), so an item costs one question however many layers look at
        it.  The verdicts are kept on the asking thread for as long as it serves that request (the
        same params object); a transport that checks on one thread and dispatches on another
        asks again there.  A failing ``authorize`` denies (and is logged here, never sent to the
        client).
        """
        if self.authorize is None:
            return True
        if request is None:
            return self._ask(principal, action, name)
        asked = self._asked
        if getattr(asked, "request", None) is not request:
            asked.request, asked.verdicts = request, {}
        # all a verdict depends on: the caller's id, scopes and claims (Principal.verdict_key)
        key = (principal.verdict_key, action, name)
        verdict = asked.verdicts.get(key)
        if verdict is None:
            verdict = asked.verdicts[key] = self._ask(principal, action, name)
        return verdict

    def _ask(self, principal: Principal, action: str, name: str) -> bool:
        assert self.authorize is not None
        try:
            return bool(self.authorize(principal, action, name))
        except Exception:  # a broken policy must fail closed, quietly for the peer
            # logged with its traceback at most once a minute: a peer can make it fail on every request
            quiet = self._warnings.take("authorize failed", _WARNINGS)
            log.log(
                logging.DEBUG if quiet else logging.ERROR,
                "authorize failed for %s on %s; denied",
                principal.id,
                action,
                exc_info=True,
            )  # not the name: it may carry the caller's values
            return False

    def visible(
        self,
        principal: Principal | None,
        action: str,
        name: str,
        entry,
        request: dict | None = None,
    ):
        """``entry`` if ``principal`` may use it for ``action``, else None: "not found" alike.

        ``authorize`` is asked about ``name`` whether or not ``entry`` exists (None: missing), so
        a hidden item and a missing one cost the same (one question: see :meth:`allows` for
        ``request``) and answer the same.
        """
        if principal is None or self.authorize is None:
            return entry
        return entry if self.allows(principal, action, name, request) else None

    def visible_resource(
        self,
        principal: Principal | None,
        uri: str,
        found,
        action: str = "resources/read",
        request: dict | None = None,
    ):
        """``found`` (``Server.find_resource(uri)``) if ``principal`` may use that resource for
        ``action``, else None: "not found" alike.  See :meth:`resource_allowed`."""
        if principal is None or self.authorize is None:
            return found
        return found if self.resource_allowed(principal, uri, found, action, request) else None

    def resource_allowed(
        self,
        principal: Principal,
        uri: str,
        found,
        action: str = "resources/read",
        request: dict | None = None,
    ) -> bool:
        """Whether ``principal`` may use the resource ``uri`` (``found``: ``Server.find_resource(uri)``,
        None when nothing serves it) for ``action``.

        A resource served by a template must be allowed under both names: the template first (a
        hidden template hides every URI it serves), then the URI.  Each name is asked every
        question of the action, even after a denial (reading, and for ``resources/subscribe``
        subscribing too), and a URI nothing serves is asked the same: so a hidden resource, a URI
        of a hidden template and a URI nothing serves all cost the same questions.  ``uri`` is
        already the one canonical spelling: :meth:`Server.find_resource` finds nothing under any
        other (``secre%74.txt``, ``./secret.txt``), so ``authorize`` and the resource always judge
        the same string.
        """
        if self.authorize is None:
            return True
        names = [uri]
        if found is not None and found[0].template is not None:
            names.insert(0, found[0].listing["uriTemplate"])
        actions = ("resources/read",) if action == "resources/read" else ("resources/read", action)
        for name in names:
            verdicts = [
                self.allows(principal, asked, name, request) for asked in actions
            ]  # all of them
            if not all(verdicts):
                return False
        return True

    def filter_listing(self, principal: Principal | None, kind: str, items: list) -> list:
        """The items of a listing ``principal`` may see (all of them without ``authorize``).

        A listed resource is judged as a read of it is (:meth:`resource_allowed`): one a template
        serves (a file root's files) is listed only if ``authorize`` allows that template too, so
        denying a template hides every URI it serves from ``resources/list`` as well.  2025-11-25
        server/resources §Security Considerations: "Access controls SHOULD be implemented for
        sensitive resources"; "Resource permissions SHOULD be checked before operations" (a
        listing is one: it names the resources).
        """
        if self.authorize is None or principal is None:
            return items
        if kind == "resources" and self.server is not None:
            return self._filter_resources(principal, items)
        action, key = LISTING_ACTIONS[kind], LISTING_NAMES[kind]
        return [item for item in items if self.allows(principal, action, item.get(key, ""))]

    def _filter_resources(self, principal: Principal, items: list) -> list:
        """The listed resources ``principal`` may read: each under the template that serves it
        (``Server.find_resource``, as a read finds it), then under its URI.  Each template is
        asked once per part of the listing it is given (all of it, or a page's worth of a file
        root's files: ``mcp_ref.server.listing``), however many files that part lists; a URI is not asked about at all once
        its template is denied (a listing answers nothing about a single name, so it need not cost
        the same for each)."""
        templates: dict[str, bool] = {}  # a template's verdict, asked once per part given
        shown = []
        for item in items:
            uri = item.get("uri", "")
            found = self.server.find_resource(uri)
            if found is not None and found[0].template is not None:
                template = found[0].listing["uriTemplate"]
                allowed = templates.get(template)
                if allowed is None:
                    allowed = templates[template] = self.allows(
                        principal, "resources/read", template
                    )
                if not allowed:
                    continue
            if self.allows(principal, "resources/read", uri):
                shown.append(item)
        return shown

    def visible_item(self, principal: Principal | None, item: tuple, request: dict | None = None):
        """The entry of an :func:`item_of` answer if ``principal`` may use it, else None (asked
        whether or not the item exists: see :meth:`visible`)."""
        action, name, entry, found = item
        if action == "resources/read":
            return (
                entry
                if self.visible_resource(principal, name, found, request=request) is not None
                else None
            )
        return self.visible(principal, action, name, entry, request)

    def check_subscriptions(self, principal: Principal, server: Server, uris) -> None:
        """Raise :class:`LimitExceeded` if subscribing to ``uris`` too would take ``principal`` past
        ``max_subscribed_resources`` distinct resources, over all its handshake-era connections and
        2026-07-28 listen streams (a resource on two streams counts once, so a client re-opening
        its stream with one more URI needs room for one).  Counted per :attr:`~Principal.limit_id`:
        all the HTTP sessions of a client without a token together.  Call it holding
        :attr:`subscription_lock`."""
        cap = self.max_subscribed_resources
        if cap is None or not uris:
            return
        caller = principal.limit_id
        held: set = set()
        for connection in server.connections():
            # an ended session's subscriptions ended with it (its connection, held weakly, may
            # linger until the garbage collector runs)
            if (
                connection.subscriptions
                and not connection.session.is_closed
                and connection.principal.limit_id == caller
            ):
                held |= connection.subscriptions
        held |= server.subscriptions.resources_of(caller)
        total = len(held | set(uris))
        if total > cap:
            self._warn(
                principal,
                f"subscription cap {cap}: refused {len(uris)} more resources (holding {len(held)})",
            )
            raise LimitExceeded(
                f"Too many subscriptions: at most {cap} resources per caller ({len(held)} held); "
                "unsubscribe from some first",
                data={"limit": cap},
            )

    # -- rate limits ------------------------------------------------------------------------

    @property
    def limits_requests(self) -> bool:
        """True when :meth:`admit` has something to count."""
        return self.rate_limit is not None or self.item_limits

    def admit(self, principal: Principal, method: str, params: Any, server: Server) -> None:
        """Count one request of ``principal``'s against its limits, or raise :class:`LimitExceeded`.

        First the server's limit per principal, then the limit of the item the request names
        (a tool, resource or template, prompt; only one the principal may see: a hidden item's
        limit would tell it exists).  Every request counts, a 2026-07-28 ``input_required`` retry
        included: each round runs the handler again.  The buckets are the principal's
        :attr:`~Principal.limit_id`'s: a caller without a token is its client, not its HTTP session,
        so a new session does not start them afresh.
        """
        caller = principal.limit_id
        limits: list[tuple[Any, RateLimit]] = []
        if self.rate_limit is not None:
            limits.append(((caller, None), self.rate_limit))
        entry = action = None
        if self.item_limits:
            item = item_of(server, method, params)
            if item is not None:
                # asked first, whether the item exists or has a limit: hidden and missing cost the same
                # (the handler reuses the verdict: Policy.allows, ``request``)
                entry = self.visible_item(principal, item, params)
                own = limit_of(entry)
                if own is not None:
                    action = item[0]
                    limits.append(((caller, action, entry_key(entry)), own))
        if not limits:
            return
        refused, wait = self.limiter.take_all(limits)  # the server's first: one call of the store
        if refused < 0:
            return
        limit = limits[refused][1]
        if limits[refused][0][1] is None:
            self._warn(principal, f"rate limit {limit}: refused {method}")
            raise limit.refusal("this server", wait)
        kind = cast(str, action).split("/")[0][:-1]  # tool, resource or prompt
        # The log names the kind of item only: a resource's URI may carry a caller's values (a
        # customer's number, a token in its query), and the log names no argument or URI (see
        # spec_notes/policy.md, Bounds and failures).  The client is told which of its items.
        self._warn(principal, f"rate limit {limit} on a {kind}: refused {method}")
        raise limit.refusal(f"{kind} {entry_key(entry)}", wait)

    def _warn(self, principal: Principal, message: str) -> None:
        """Log a refusal: a warning at most once a minute per caller (:attr:`~Principal.limit_id`),
        the rest at debug level, so a client hammering a limit cannot flood the log."""
        caller = principal.limit_id  # one per client, however many sessions it opens
        level = logging.DEBUG if self._warnings.take(caller, _WARNINGS) else logging.WARNING
        log.log(level, "%s, from %s", message, caller)


#: At most one warning per caller per minute about its refusals (Policy._warn).
_WARNINGS = RateLimit(1, 60.0)


def entry_key(entry) -> str:
    """The name a registered item is known by: a tool's or prompt's name, a resource's URI or template."""
    listing = getattr(entry, "listing", {})
    return listing.get("uri") or listing.get("uriTemplate") or listing.get("name", "")


class UpdateCoalescer:
    """``notifications/resources/updated`` at most once per ``interval`` per resource.

    The first announcement of a resource goes out at once; one made within ``interval`` of the
    last sent is held, and a later one replaces it (the last one wins); when the interval ends the
    held one is sent.  So a resource that changes a thousand times a second costs its subscribers
    one notification per interval, and what is held is one entry per resource, never a queue.
    The table holds only resources announced within the last interval: one thread (started when
    needed, gone when idle) sends what is due and forgets what has been quiet for an interval.
    """

    def __init__(
        self, interval: float, send: Callable[[str, dict], None], clock: Callable[[], float]
    ):
        self.interval = interval
        self.send = send
        self.clock = clock
        self._cond = threading.Condition()
        self._state: dict[str, list] = {}  # uri -> [last sent at, held params or None]
        self._due: list[tuple[float, str]] = []  # (when the uri's interval ends, uri): a heap
        self._thread: threading.Thread | None = None

    def announce(self, uri: str, params: dict) -> bool:
        """Send now (True), or hold until the interval ends (False)."""
        with self._cond:
            state = self._state.get(uri)
            if state is not None:
                state[1] = params  # held; the last one wins
                return False
            now = self.clock()
            self._state[uri] = [now, None]
            self._schedule(now + self.interval, uri)
        self._send(uri, params)
        return True

    def _schedule(self, due: float, uri: str) -> None:
        heapq.heappush(self._due, (due, uri))
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="mcp-resource-updates", daemon=True
            )
            self._thread.start()
        self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._due:
                    self._thread = None  # idle: a later announcement starts another
                    return
                due, uri = self._due[0]
                wait = due - self.clock()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._due)
                state = self._state.get(uri)
                params = None if state is None else state[1]
                if state is None or params is None:
                    self._state.pop(uri, None)  # quiet for a whole interval: forgotten
                    continue
                state[0], state[1] = self.clock(), None
                self._schedule(state[0] + self.interval, uri)
            self._send(uri, params)

    def _send(self, uri: str, params: dict) -> None:
        try:
            self.send(uri, params)
        except Exception:  # the announcer (or this thread) has no one else to tell
            log.exception("sending resources/updated for %s failed", uri)

    def held(self) -> int:
        """How many resources have an announcement held now."""
        with self._cond:
            return sum(1 for state in self._state.values() if state[1] is not None)
