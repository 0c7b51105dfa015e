"""Resources (2025-11-25 server/resources): registered resources and templates, files under a
root, and ``resources/list``, ``resources/templates/list``, ``resources/read``,
``resources/subscribe`` and ``resources/unsubscribe``.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import InternalError, InvalidParams, InvalidRequest, MethodNotFound, ResourceNotFound
from ..types import BlobResourceContents, TextResourceContents, drop_none
from ..uri_template import MAX_URI_LENGTH, UriTemplate, within_bound
from .context import Context, with_context
from .signatures import ArgumentPlan, compile_arguments, runs_in_thread, to_jsonable
from .tools import ToolError, replacing

if TYPE_CHECKING:
    from ..request import RequestContext
    from .seams import Caller


class ResourceError(ToolError):
    """Raise in a resource: ``resources/read`` fails with -32603 and this message."""


@dataclass
class RegisteredResource:
    """A resource (or, with ``template``, a resource template) as the server keeps it."""

    listing: dict[str, Any]
    func: Callable[..., Any]
    plan: ArgumentPlan
    template: UriTemplate | None = None
    #: OAuth scopes a caller needs (HTTP with ``auth=``: 403 ``insufficient_scope`` without them)
    scopes: tuple[str, ...] = ()
    #: 2026-07-28 caching hints for ``resources/read`` of it: ``(ttl_ms, cache_scope)``, None for the server's
    cache: tuple[int | None, str | None] | None = None
    #: What extensions read of it, by option name (the decorator's options for them)
    options: dict[str, Any] = field(default_factory=dict)
    #: For a template: whether the values it matched (in their canonical spelling) name something
    #: it serves at all; False is "not found" (a file root: a path it would refuse). None: all do.
    accepts: Callable[[dict[str, str]], bool] | None = None

    def hints(self, ttl_ms: int | None, scope: str | None) -> tuple[int | None, str | None]:
        """The caching hints of a ``resources/read`` of it: those it sets itself (:attr:`cache`),
        else the server's, ``ttl_ms`` and ``scope``."""
        if self.cache is None:
            return ttl_ms, scope
        own_ttl, own_scope = self.cache
        return (ttl_ms if own_ttl is None else own_ttl, scope if own_scope is None else own_scope)


#: 2026-07-28 server/utilities/caching: the values of ``cacheScope`` (the hints are added to a
#: result by :func:`mcp_ref.server.connection.add_hints`).
CACHE_SCOPES = ("public", "private")


class ResourceTable:
    """A server's resources (by URI) and templates, and the functions listing the resources a file
    root serves (``Server.add_resource_entry``).  The server holds one from its first resource,
    and its registry lock around every change."""

    def __init__(self) -> None:
        self.resources: dict[str, RegisteredResource] = {}
        self.templates: list[RegisteredResource] = []
        #: The functions listing the resources a template serves, by its URI template.
        self.lists: dict[str, Callable[[], Iterable[dict]]] = {}

    def __len__(self) -> int:
        """How many resources and templates it holds (none: the server offers no resources)."""
        return len(self.resources) + len(self.templates)

    def add(
        self, entry: RegisteredResource, list_items: Callable[[], Iterable[dict]] | None = None
    ) -> str:
        """Keep ``entry`` (replacing, with a UserWarning, one at the same URI or template); its URI."""
        uri = entry.listing.get("uriTemplate") or entry.listing["uri"]
        # listed before it is announced: a client listing at once sees them; a template registered
        # again lists what the new one lists, and nothing of the one it replaces
        if list_items is not None:
            self.lists[uri] = list_items
        else:
            self.lists.pop(uri, None)
        if entry.template is not None:
            kept = [t for t in self.templates if t.listing["uriTemplate"] != uri]
            replaced = len(kept) < len(self.templates)
            self.templates = [
                *kept,
                replacing(replaced, "resource template", uri, entry),
            ]
        else:
            self.resources[uri] = replacing(uri in self.resources, "resource", uri, entry)
        return uri

    def remove(self, uri: str) -> None:
        """Forget the resource or template at ``uri`` (nothing if there is none), and the listing of
        the files a template served."""
        self.lists.pop(uri, None)
        if self.resources.pop(uri, None) is None:
            self.templates = [t for t in self.templates if t.listing["uriTemplate"] != uri]

    def find(self, uri: str) -> tuple[RegisteredResource, dict] | None:
        """``Server.find_resource``: the resource answering ``uri`` and the template variables it
        matched (a template in its canonical spelling only), or None.  None for a URI outside the
        bound (:func:`~mcp_ref.uri_template.within_bound`): no template is asked to match it,
        whoever looks it up (a read, a rate limit, a scope check before dispatch)."""
        if not within_bound(uri):
            return None
        entry = self.resources.get(uri)
        if entry is not None:
            return entry, {}
        for template in list(self.templates):
            pattern = template.template
            variables = pattern.match_canonical(uri) if pattern is not None else None
            if variables is not None and (template.accepts is None or template.accepts(variables)):
                return template, variables
        return None

    def entry(self, uri: str) -> RegisteredResource | None:
        """The resource registered at exactly ``uri``, or the template whose string it is; or None."""
        if uri in self.resources:
            return self.resources[uri]
        return next((t for t in list(self.templates) if t.listing["uriTemplate"] == uri), None)

    def listings(self, kind: str) -> list[dict]:
        """The listed form of every resource (then the files of every file root) for
        ``"resources"``, of every template for ``"templates"``."""
        if kind == "templates":
            return [t.listing for t in list(self.templates)]
        items = [r.listing for r in list(self.resources.values())]
        for provider in list(self.lists.values()):
            items.extend(provider())
        return items


def check_hints(ttl_ms: int | None, cache_scope: str | None) -> tuple:
    """``(ttl_ms, cache_scope)`` after checking them (a whole number >= 0; "public" or "private")."""
    if ttl_ms is not None and (
        isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms < 0
    ):
        raise ValueError(f"ttl_ms must be a whole number of milliseconds >= 0, not {ttl_ms!r}")
    if cache_scope is not None and cache_scope not in CACHE_SCOPES:
        raise ValueError(f"cache_scope must be 'public' or 'private', not {cache_scope!r}")
    return ttl_ms, cache_scope


def build_resource(
    func: Callable,
    uri: str,
    given: dict[str, Any],
    scopes: Iterable[str] = (),
    cache: tuple[int | None, str | None] = (None, None),
    options: dict[str, Any] | None = None,
) -> RegisteredResource:
    """A :class:`RegisteredResource` for ``func`` at ``uri`` — a template when ``uri`` has ``{variables}``.
    ``given``: its ``Resource`` fields as registered (``name`` and ``description``, and any of
    ``title``, ``mimeType``, ``size``, ``annotations``, ``icons``; None: not given, the function's
    own where it has one).  ``cache``: its own caching hints ``(ttl_ms, cache_scope)``, None each
    for the server's."""
    func = runs_in_thread(func)
    plan = compile_arguments(func, skip_types=(Context,))
    is_template = UriTemplate.is_template(uri)
    listing = {"uriTemplate" if is_template else "uri": uri, **given}
    listing["name"] = given["name"] or plan.name
    if listing["description"] is None:
        listing["description"] = plan.description
    if is_template:
        listing.pop("size", None)  # a template has no size
    return RegisteredResource(
        drop_none(listing),
        func,
        plan,
        UriTemplate(uri) if is_template else None,
        tuple(scopes),
        None if cache == (None, None) else check_hints(*cache),
        options=dict(options or {}),
    )


# -- the handlers ---------------------------------------------------------------------------------


def read_resource(connection: Caller, context: RequestContext, params: dict) -> dict:
    """``resources/read``: the contents of one resource, or Resource not found (-32002); a URI
    that is empty or over :data:`MAX_URI_LENGTH` characters is Invalid params (-32602)."""
    uri = _uri(params, "resources/read")
    check_uri_length(uri)  # before it is matched against every template
    found = visible_resource(connection, uri, "resources/read", params)
    if found is None:
        # server/resources §Error Handling: "Resource not found: -32002".
        raise ResourceNotFound(f"Resource not found: {uri}", data={"uri": uri})
    entry, variables = found
    if variables:  # a template's URI variables (text), converted to their parameters' annotations
        from .rich_types import template_arguments

        variables = template_arguments(entry.plan, variables)
    kwargs = with_context(entry.plan, variables, connection, context)
    try:
        value = entry.func(**kwargs)
    except ToolError as exc:  # ResourceError (or ToolError): its message is for the client
        # server/resources §Error Handling: "Internal errors: -32603" (any other exception: a bare
        # "Internal error", the traceback in the server's log only: Session.handle_request).
        raise InternalError(str(exc) or "Internal error", data={"uri": uri}) from None
    return {"contents": contents(uri, entry, value)}


def subscribe(connection: Caller, context: RequestContext, params: dict) -> dict:
    """``resources/subscribe``: the connection is sent ``notifications/resources/updated`` for ``uri``.

    At most ``Server(max_subscribed_resources=...)`` per principal, over all its connections (and,
    with a shared state, over every process: ``Subscriptions.check_resources``), each URI of 1 to
    ``MAX_URI_LENGTH`` (8,192) characters as a ``subscriptions/listen`` names them (-32602)."""
    subscribable(connection, "resources/subscribe")
    uri = _uri(params, "resources/subscribe")
    # before it is matched against every template, or kept for as long as the subscription lasts
    check_uri_length(uri)
    if visible_resource(connection, uri, "resources/subscribe", params) is None:
        raise ResourceNotFound(f"Resource not found: {uri}", data={"uri": uri})
    server = connection.server
    cap = server.subscription_cap()
    if cap is None:
        connection.subscriptions.add(uri)
        return {}
    with cap.subscription_lock:
        if uri not in connection.subscriptions:  # over every process when the state is shared
            server.subscriptions.check_resources(cap, connection.principal, server, {uri})
        connection.subscriptions.add(uri)
    return {}


def visible_resource(connection: Caller, uri: str, action: str, request: dict | None = None):
    """``find_resource(uri)`` if the caller may use it for ``action`` (reading, and for
    ``resources/subscribe`` subscribing too), else None: hidden is "not found" (mcp_ref.extensions.policy).

    ``uri`` is found only under its one canonical spelling (``Server.find_resource``), and
    ``authorize`` is asked about it whether or not it exists, once per ``request`` (its params):
    a hidden resource and a missing one cost the same and answer the same."""
    server = connection.server
    return server.gate.visible_resource(
        connection.principal, uri, server.find_resource(uri), action, request
    )


def unsubscribe(connection: Caller, context: RequestContext, params: dict) -> dict:
    """``resources/unsubscribe`` (with a shared state, the resource's place goes when no connection
    or stream of this process holds it any more)."""
    subscribable(connection, "resources/unsubscribe")
    uri = _uri(params, "resources/unsubscribe")
    connection.subscriptions.discard(uri)
    server = connection.server
    if server.subscription_cap() is not None:
        server.subscriptions.let_go(connection.principal.limit_id, server, {uri})
    return {}


def stateless_refusal(method: str) -> str:
    """Why ``method`` (``resources/subscribe`` or ``/unsubscribe``) is refused over stateless HTTP."""
    return (
        f"{method} cannot apply over stateless HTTP: each request is served on its own, so no "
        "notifications/resources/updated could reach the client after it; use the 2026-07-28 "
        "revision (subscriptions/listen) or a stateful session"
    )


def subscribable(connection: Caller, method: str) -> None:
    """Refuse ``resources/subscribe`` or ``/unsubscribe`` where there are no subscriptions.

    Over stateless HTTP (``wsgi_app(stateless=True)``, handshake era) the connection lives for this
    one request, so an update could never reach its client: -32600 saying why, as
    ``logging/setLevel`` is refused there (:data:`mcp_ref.server.logging.STATELESS_REFUSAL`),
    rather than a success that does nothing; ``subscribe`` is not declared to it either
    (``Server.capabilities``).  Elsewhere, a server that does not declare ``subscribe``: -32601
    (2025-11-25 server/resources §Capabilities: ``subscribe`` is "whether the client can subscribe").
    """
    if connection.stateless:
        raise InvalidRequest(stateless_refusal(method))
    if not connection.capabilities.get("resources", {}).get("subscribe"):
        raise MethodNotFound(
            f"Method not found: this server does not support subscriptions ({method})"
        )


def check_uri_length(uri: str) -> None:
    """-32602 unless ``uri`` has 1 to :data:`MAX_URI_LENGTH` characters: checked before the URI
    is matched against every template (a read's, a subscription's) or kept for as long as a
    subscription lasts, so the work and the memory a caller's URI costs stay bounded.

    2025-11-25 server/resources §Security Considerations: "Servers MUST validate all resource URIs".
    """
    if not within_bound(uri):
        raise InvalidParams(
            f"Invalid params: a resource URI must have 1 to {MAX_URI_LENGTH} characters"
        )


def _uri(params: dict, method: str) -> str:
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise InvalidParams(f"Invalid params: {method} needs a uri")
    return uri


def contents(uri: str, entry: RegisteredResource, value: Any) -> list:
    """A resource function's return value as a list of ``ResourceContents`` dicts.

    ``str`` is text, ``bytes`` a base64 blob, contents objects pass through,
    anything else is sent as JSON text.
    """
    items = value if isinstance(value, list) else [value]
    if all(isinstance(item, (TextResourceContents, BlobResourceContents)) for item in items):
        return [item.to_wire() for item in items]
    if isinstance(value, (bytes, bytearray)):
        default, key, data = "application/octet-stream", "blob", base64.b64encode(value).decode()
    elif isinstance(value, str):
        default, key, data = "text/plain", "text", value
    else:
        default, key = "application/json", "text"
        data = json.dumps(to_jsonable(value), ensure_ascii=False)
    return [{"uri": uri, "mimeType": entry.listing.get("mimeType") or default, key: data}]
