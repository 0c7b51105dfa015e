"""The server's seams: where extensions (:class:`~mcp_ref.extension.Extension`) and an
application plug into a server without the core of the server knowing them.

Declared here, below every feature module (this module imports only the protocol modules and
:mod:`~mcp_ref.server.principal`), so that a feature handler, the dispatcher and an extension can
all name them without importing one another.  A plain server never loads it: its Protocols are
types (imported under ``TYPE_CHECKING``), and the rest is asked for only by an extension, a gate,
a principal, a ``Context`` or a 2026-07-28 handler's ask.

* :class:`Caller` — what a feature handler is given of the connection it serves (the narrow
  interface: who calls, which revision, sending to the client, the registry's lookups).  Handlers
  are ``handler(caller, context, params) -> result``; they never need ``ServerConnection``.
* :class:`Registry` — what handlers read of the :class:`~mcp_ref.server.Server`.
* **Around dispatch** — each extension's ``intercept_request(call, proceed)`` around the routing
  of every request (:class:`Call`; :func:`run_chain`).
* **The item gate** — ``Server.gate`` (:class:`Gate`): the one place that answers "may principal P
  use item X" and "filter this listing for P" (and :func:`item_of`, :func:`required_scopes`:
  which item a request names, which scopes it needs).  Default
  :data:`~mcp_ref.server.connection.OPEN`: everything visible; an extension with a ``gate`` puts
  it there.
* **Around a tool** — each extension's ``intercept_tool_call(caller, tool, arguments, context,
  run)`` around running a tool (:func:`intercept`).
* :class:`RequestState` — what the server keeps per request on ``RequestContext.role_state``
  (the 2026-07-28 MRTR answers, what extensions keep about it).
* **What extensions add** — :func:`hooks_of`, :func:`declare`, :func:`methods_of` (kept by
  :func:`extension_method`): a server's extensions' hooks, capabilities and methods, gathered when
  the server asks; and :func:`tell_ended`, each one told that a connection ended for good.
"""

from __future__ import annotations

import functools
import logging
from collections import ChainMap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import RESOURCE_NOT_FOUND, InvalidParams, McpError
from ..lifecycle import MODERN_VERSIONS, SUPPORTED_VERSIONS
from .principal import Principal

if TYPE_CHECKING:
    from ..request import RequestContext
    from ..session import Session

log = logging.getLogger(__name__)


class Registry(Protocol):
    """What feature handlers read of the server (:class:`~mcp_ref.server.Server` is the one)."""

    name: str
    instructions: str | None
    cache_hints: tuple[int | None, str | None]
    on_roots_list_changed: Any
    #: The extensions' ``intercept_request``, the first outermost (see :func:`run_chain`).
    request_hooks: list[Middleware]
    #: The extensions' ``intercept_tool_call``, the first outermost (see :func:`intercept`).
    tool_call_hooks: list[ToolCallInterceptor]
    #: Its resources and templates (``mcp_ref.server.resources.ResourceTable``), None before any.
    resource_table: Any

    @property
    def extensions(self) -> list[Any]: ...

    def extension_method(self, method: str, version: str | None) -> Handler | None: ...

    def context_attribute(self, name: str) -> Callable[[Any], Any] | None: ...

    @property
    def lifespan_context(self) -> Any: ...

    @property
    def gate(self) -> Gate: ...

    @property
    def paginator(self) -> Any: ...

    @property
    def keyring(self) -> Any: ...

    @property
    def subscriptions(self) -> Any: ...

    def get_tool(self, name: str) -> Any: ...

    def registered_tools(self) -> list: ...

    def get_prompt(self, name: str) -> Any: ...

    def find_resource(self, uri: str) -> tuple[Any, dict] | None: ...

    def subscription_cap(self) -> Any: ...

    def completion_for(self, ref_type: str, name: str) -> tuple[Callable, str | None] | None: ...

    def listings(self, kind: str) -> list[dict]: ...

    def capabilities(self, version: str | None = None, caller: Any = None) -> dict: ...

    def offers(self, capability: str, version: str | None = None) -> bool: ...

    def server_info(self, version: str | None = None) -> dict: ...

    def connections(self) -> list: ...


class Caller(Protocol):
    """What a feature handler sees of the connection serving its request
    (:class:`~mcp_ref.server.ServerConnection` is the one)."""

    @property
    def server(self) -> Registry: ...

    @property
    def session(self) -> Session: ...

    client_capabilities: dict[str, Any]
    client_info: dict[str, Any]
    capabilities: dict[str, Any]
    log_level: str | None
    stateless: bool  # one request only (HTTP's stateless mode): nothing lasts past it
    #: The URIs this connection subscribed to (handshake era ``resources/subscribe``).
    subscriptions: set[str]
    auth: Any
    #: Ids of requests counted before dispatch by an HTTP middleware step (``ServerConnection.admitted``).
    admitted: dict[Any, bool] | None

    @property
    def principal(self) -> Principal: ...

    @property
    def owner(self) -> str | None: ...

    @property
    def protocol_version(self) -> str | None: ...

    def version_for(self, context: RequestContext) -> str | None: ...

    def request(
        self,
        method: str,
        params: dict | None,
        *,
        timeout: Any = ...,
        related_request_id: Any = None,
    ) -> dict: ...

    def notify(
        self, method: str, params: dict | None = None, *, related_request_id: Any = None
    ) -> None: ...

    def log(
        self,
        level: str,
        data: Any,
        logger: str | None = None,
        *,
        related_request_id: Any = None,
        envelope: Any = None,
    ) -> bool: ...

    def read_own_resource(self, context: RequestContext, uri: str) -> dict: ...


#: A feature's request handler: ``handler(caller, context, params) -> result``.
Handler = Callable[[Caller, "RequestContext", dict], dict]


# -- per request -------------------------------------------------------------------------------------


@dataclass(eq=False, slots=True)
class RequestState:
    """What the server keeps about one request while it serves it (``RequestContext.role_state``).

    ``inputs``: the answers a 2026-07-28 request brings for its handler's asks
    (``mcp_ref.server.input_required.Inputs``; None where the request cannot carry any).
    ``runner``: what runs the handler outside the request when an extension does (it has
    ``report(message)`` for progress and ``ask(asks)`` for questions to the client), else None.
    ``marks``: what extensions note about the request, by their ``name`` (None until one does).
    ``caller``: the connection as the handler's ``Context`` sees it, when an extension runs the
    handler through a stand-in (a 2025-11-25 task's, whose messages carry the task), else None.
    """

    inputs: Any = None
    runner: Any = None
    marks: dict[str, Any] | None = None
    caller: Any = None

    def mark(self, name: str, value: Any) -> None:
        """Note ``value`` for the extension ``name``."""
        if self.marks is None:
            self.marks = {}
        self.marks[name] = value

    def mark_of(self, name: str) -> Any:
        """What the extension ``name`` noted, or None."""
        return None if self.marks is None else self.marks.get(name)


def state_of(context: RequestContext) -> RequestState:
    """The server's state of the request ``context`` serves (made on first use)."""
    state = context.role_state
    if state is None:
        state = context.role_state = RequestState()
    return state


class InputRequired(BaseException):
    """Raised by an ask whose answer the request does not carry (modern era only): the dispatcher
    answers an ``InputRequiredResult`` (:mod:`mcp_ref.server.input_required`).

    A ``BaseException``, like ``KeyboardInterrupt``, so that a handler's own
    ``except Exception`` cannot swallow it: it is control flow, not an error.
    ``requests`` maps each key to its ``{"method", "params"}`` InputRequest.
    """

    def __init__(self, requests: dict[str, dict]):
        super().__init__(", ".join(requests))
        self.requests = requests


def modern_error(exc: McpError) -> McpError:
    """``exc`` as a 2026-07-28 request is answered with it: a resource not found (-32002, whoever
    raised it) becomes -32602 with the same message and data; any other error is ``exc``.

    2026-07-28 basic/index §Error Codes: "Implementations of this protocol version MUST NOT emit
    these codes: -32002 — resource not found (2025-11-25 and earlier; replaced by -32602)";
    server/resources §Error Handling: "servers MUST return a JSON-RPC error with code -32602".
    The one mapping for every way a 2026-07-28 request ends in an error: its answer
    (:meth:`~mcp_ref.server.connection.ServerConnection.handle_modern`) and the error a task
    records (:mod:`mcp_ref.extensions.tasks_2026`, shown by ``tasks/get``).
    """
    if exc.code == RESOURCE_NOT_FOUND:
        return InvalidParams(exc.message, data=exc.data)
    return exc


# -- around dispatch ----------------------------------------------------------------------------------


@dataclass
class Call:
    """One request on its way to its handler, as middleware sees it."""

    caller: Caller
    context: RequestContext
    method: str
    params: dict[str, Any]

    @property
    def principal(self) -> Principal:
        """Who sent it."""
        return self.caller.principal


#: ``hook(call, proceed) -> result`` (an extension's ``intercept_request``): call ``proceed()`` to go
#: on (to the next hook, then the method's routing and handler), or raise an ``McpError`` to refuse.
Middleware = Callable[[Call, Callable[[], dict]], dict]


def run_chain(middleware: list, call: Call, last: Callable[[], dict]) -> dict:
    """``last()`` wrapped in every middleware, the first outermost."""
    proceed = last
    for hook in reversed(middleware):
        proceed = functools.partial(hook, call, proceed)
    return proceed()


# -- the item gate ---------------------------------------------------------------------------------------


#: The action that decides whether an item of each listing is listed (what a gate is asked).
LISTING_ACTIONS = {
    "tools": "tools/call",
    "resources": "resources/read",
    "templates": "resources/read",
    "prompts": "prompts/get",
}
#: The field of a listed item that is its ``name`` for the gate.
LISTING_NAMES = {"tools": "name", "resources": "uri", "templates": "uriTemplate", "prompts": "name"}


class Gate(Protocol):
    """Who may use which tool, resource or prompt (an extension's ``gate``): asked by ``tools/call``, ``prompts/get``,
    ``resources/read``, ``completion/complete``, subscriptions, the listings, the caching hints,
    ``Server.required_scopes`` and ``Server.visible_tool``.

    ``action`` is ``tools/call``, ``resources/read``, ``prompts/get``, ``completion/complete`` or
    ``resources/subscribe``; ``request`` the params of the request being served (so one question is
    asked once per request).  What a principal may not use is "not found" alike.  Every gate but
    the open one (:data:`~mcp_ref.server.connection.OPEN`) is asked every one of these questions,
    whatever its ``restricts``.
    """

    #: True when what a principal sees may differ from another's: caching hints become private, and
    #: a verdict about one principal is not reused for another (list-changed notifications).  False
    #: (everyone sees the same) only lets one verdict stand for all: the gate is still asked, and
    #: what it hides from everyone alike stays hidden.
    restricts: bool

    def allows(
        self, principal: Principal, action: str, name: str, request: dict | None = None
    ) -> bool: ...

    def visible(
        self,
        principal: Principal | None,
        action: str,
        name: str,
        entry: Any,
        request: dict | None = None,
    ) -> Any: ...

    def resource_allowed(
        self,
        principal: Principal,
        uri: str,
        found: Any,
        action: str = "resources/read",
        request: dict | None = None,
    ) -> bool: ...

    def visible_resource(
        self,
        principal: Principal | None,
        uri: str,
        found: Any,
        action: str = "resources/read",
        request: dict | None = None,
    ) -> Any: ...

    def filter_listing(self, principal: Principal | None, kind: str, items: list) -> list:
        """The items of ``items`` ``principal`` may see, in order.  Judged item by item: a file
        root's files are given a part of the listing at a time, as its pages are read."""
        ...


def item_of(server: Registry, method: str, params: Any) -> tuple[str, str, Any, Any] | None:
    """``(action, name, entry, found)`` of the item a request addresses, or None
    when it names none (``entry`` None: nothing by that name; ``found``: ``Server.find_resource``'s
    answer for a resource, else None)."""
    if not isinstance(params, dict):
        return None
    if method == "tools/call":
        name = params.get("name")
        return (method, name, server.get_tool(name), None) if isinstance(name, str) else None
    if method == "prompts/get":
        name = params.get("name")
        return (method, name, server.get_prompt(name), None) if isinstance(name, str) else None
    if method in ("resources/read", "resources/subscribe"):
        from ..uri_template import within_bound  # loaded already: the server has resources

        uri = params.get("uri")
        # A URI outside the bound names no item: no template is asked to match it, nor ``authorize``
        # about it, before the handler answers -32602 (``check_uri_length``; 2025-11-25
        # server/resources §Security Considerations: "Servers MUST validate all resource URIs").
        if not isinstance(uri, str) or not within_bound(uri):
            return None
        found = server.find_resource(uri)
        return ("resources/read", uri, found[0] if found is not None else None, found)
    return None


def visible_item(
    server: Registry, principal: Principal, item: tuple, request: dict | None = None
) -> Any:
    """The entry of an :func:`item_of` answer if ``principal`` may use it
    (the server's gate), else None (asked whether or not the item exists)."""
    action, name, entry, found = item
    if action == "resources/read":
        visible = server.gate.visible_resource(principal, name, found, request=request)
        return entry if visible is not None else None
    return server.gate.visible(principal, action, name, entry, request)


def required_scopes(
    server: Registry, method: str, params: Any, principal: Principal | None = None
) -> tuple[str, ...]:
    """``Server.required_scopes``: the OAuth scopes a request needs that ``principal`` lacks (all of
    them without one): those of the tool, resource or prompt it names, if ``principal`` may see it
    (else none: a 403 would tell it exists)."""
    item = item_of(server, method, params) if method != "resources/subscribe" else None
    if item is None:
        return ()
    if principal is None:
        return item[2].scopes if item[2] is not None else ()
    # asked whether or not the item exists (hidden and missing cost the same); the handler
    # reuses the verdict (the gate: Policy.allows, ``request``)
    entry = visible_item(server, principal, item, params)
    scopes = getattr(entry, "scopes", ()) if entry is not None else ()
    if not scopes or not principal.authenticated:
        return ()
    return tuple(scope for scope in scopes if scope not in principal.scopes)


# -- around running a tool ----------------------------------------------------------------------------------

#: ``hook(caller, tool, arguments, context, run) -> result`` around running a tool (an extension's
#: ``intercept_tool_call``): ``run(context)`` runs it (an extension may run it later, elsewhere);
#: ``arguments`` None: invalid, ``run`` answers the isError result.
ToolCallInterceptor = Callable[
    [Caller, Any, Any, "RequestContext", Callable[["RequestContext"], dict]], dict
]


def intercept(
    interceptors: Iterable[ToolCallInterceptor],
    caller: Caller,
    tool: Any,
    arguments: dict | None,
    context: RequestContext,
    run: Callable[[RequestContext], dict],
) -> dict:
    """``run(context)`` wrapped in every interceptor, the first outermost."""
    for interceptor in reversed(list(interceptors)):
        run = _wrapped(interceptor, caller, tool, arguments, run)
    return run(context)


def _wrapped(
    interceptor: ToolCallInterceptor,
    caller: Caller,
    tool: Any,
    arguments: dict | None,
    run: Callable[[RequestContext], dict],
) -> Callable[[RequestContext], dict]:
    return lambda context: interceptor(caller, tool, arguments, context, run)


# -- what a server's extensions add ---------------------------------------------------------------


def hooks_of(
    extensions: list,
) -> tuple[list[Middleware], list[ToolCallInterceptor], dict[str, Callable[[Any], Any]]]:
    """What ``extensions`` (a server's, in the order added) add around every request and every tool
    call (their own ``intercept_request`` and ``intercept_tool_call``, the first outermost: the
    base's do nothing, and are not asked), and to a handler's ``Context`` (``context_attributes``:
    the first added wins a name two declare).  First, :func:`check_declarations`: ValueError if
    the last declares a capability key another does."""
    from ..extension import Extension

    check_declarations(extensions)

    def overridden(hook: str) -> list:
        base = getattr(Extension, hook)
        return [getattr(e, hook) for e in extensions if getattr(type(e), hook) is not base]

    attributes = dict(ChainMap(*(extension.context_attributes() for extension in extensions)))
    return overridden("intercept_request"), overridden("intercept_tool_call"), attributes


def declare(extensions: list, version: str | None, caller: Any, capabilities: dict) -> None:
    """Add to ``capabilities`` (``Server.capabilities``) what ``extensions`` declare at ``version``
    to ``caller``: at 2026-07-28 each one's settings under its name in ``extensions``; before,
    the capabilities it declares, an object-valued key one key at a time (two extensions'
    ``{"experimental": {...}}`` both stand).  What was declared first wins a key declared twice:
    the server's own, then the extensions in the order added (:func:`check_declarations` refuses
    an extension declaring what another does, when it can tell at registration)."""
    for extension in extensions:
        declared = extension.capabilities(version, caller)
        if declared is None:
            continue
        if version in MODERN_VERSIONS:  # 2026-07-28: an extension's settings, under its name
            capabilities.setdefault("extensions", {}).setdefault(extension.name, declared)
            continue
        for key, value in declared.items():
            present = capabilities.get(key)
            if isinstance(present, dict) and isinstance(value, dict):
                capabilities[key] = {
                    **present,
                    **{k: v for k, v in value.items() if k not in present},
                }
            else:
                capabilities.setdefault(key, value)


def tell_ended(connection: Any) -> None:
    """Tell each extension of ``connection``'s server that the connection ended for good
    (``Extension.connection_ended``, :meth:`ServerConnection.ended
    <mcp_ref.server.connection.ServerConnection.ended>`); one that fails is logged, and the
    others are told."""
    for extension in connection.server.extensions:
        try:
            extension.connection_ended(connection)
        except Exception:  # the connection has ended all the same
            log.warning(
                "extension %s failed at the end of a connection",
                extension.name or type(extension).__name__,
                exc_info=True,
            )


def declared_keys(extension: Any, version: str) -> set[tuple[str, ...]]:
    """The capability keys ``extension`` declares at ``version`` to no caller in particular: an
    object-valued key's own keys (``("experimental", "acme/echo")``), else the key; at 2026-07-28
    ``("extensions", name)``.  Nothing when it declares nothing, or cannot say yet (it raises)."""
    try:
        declared = extension.capabilities(version, None)
    except Exception:  # it depends on what is not there yet: asked again for each caller
        return set()
    if not isinstance(declared, dict):
        return set()
    if version in MODERN_VERSIONS:
        return {("extensions", extension.name)}
    keys: set[tuple[str, ...]] = set()
    for key, value in declared.items():
        keys |= {(key, inner) for inner in value} if isinstance(value, dict) else {(key,)}
    return keys


def check_declarations(extensions: list) -> None:
    """Raise ValueError if the last of ``extensions`` declares a capability key another of them
    declares too, at any revision (``Server.add_extension``): two owners of one key would leave
    the peer one of them (:func:`declare`).  A key and one of its own keys clash too."""
    from ..lifecycle import SUPPORTED_VERSIONS

    *others, added = extensions
    for version in (*MODERN_VERSIONS, *SUPPORTED_VERSIONS):
        mine = declared_keys(added, version)
        for other in others if mine else ():
            for theirs in declared_keys(other, version):
                clash = next((key for key in mine if _overlap(key, theirs)), None)
                if clash is not None:
                    raise ValueError(
                        f"extension {added.name or type(added).__name__!r} declares the capability "
                        f"{'.'.join(clash)!r} at {version}, as {other.name or type(other).__name__!r} "
                        "does already: a key has one owner"
                    )


def _overlap(one: tuple[str, ...], other: tuple[str, ...]) -> bool:
    """True when one key is the other, or holds it (``("tasks",)`` and ``("tasks", "list")``)."""
    shorter = min(len(one), len(other))
    return one[:shorter] == other[:shorter]


def methods_of(extensions: list, version: str | None) -> dict[str, Handler]:
    """The request methods ``extensions`` answer at ``version``, and their handlers (the first
    added wins a method two give)."""
    return dict(ChainMap(*(extension.methods(version) for extension in extensions)))


def extension_method(
    cache: dict[str | None, dict[str, Handler]], extensions: list, method: str, version: str | None
) -> Handler | None:
    """``Server.extension_method``: the handler ``extensions`` give ``method`` at ``version``, their
    methods at each version kept in ``cache`` (the server's, replaced when an extension is added).

    The server reads its cache before its extensions (``add_extension`` replaces them in the other
    order): what is built from a list an extension was added to meanwhile goes into the cache that
    ``add_extension`` threw away, never into the new one."""
    methods = cache.get(version)
    if methods is None:
        methods = methods_of(extensions, version)
        # bounded: the version is a peer's
        if len(cache) < len(SUPPORTED_VERSIONS) + len(MODERN_VERSIONS):
            cache[version] = methods
    return methods.get(method)
