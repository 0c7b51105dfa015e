"""The proxy's front door: the last step of every front request's chain, and its gate.

A :class:`~mcp_ref.proxy.server.ProxyServer` serves its feature requests by forwarding them
(:class:`FrontDoor`), and it is a ``Server`` like any other: extensions added to it
(``proxy.add_extension(Policy(authorize=..., rate_limit=...))``) hold for forwarded requests as
for a server's own.  Two rules make that so:

* The front door is the *last* step of the chain of ``intercept_request`` hooks
  (:func:`front_door_last`): every other extension's hook runs first, in the order added, and
  the front door is what their ``proceed()`` reaches, where a server's own routing would be.  So
  a ``Policy`` counts a forwarded request against its rate limits on every transport, and any
  extension may refuse or wrap a forwarded request.
* The gate (``Server.gate``: a ``Policy`` with ``authorize``) judges what the front forwards by
  the names it sees, as a server judges its own items (mcp_ref.extensions.policy):
  :func:`check_forward` refuses a ``tools/call``, ``prompts/get``, ``resources/read``,
  ``resources/subscribe`` or ``completion/complete`` naming an item it hides, exactly as a
  missing one is refused, before anything is sent to the target (after the checks a server runs
  before its gate); a hidden resource is never subscribed to at the target, and a subscription
  to it (a 2026 listen's too: :func:`listen_hidden`) is answered as the target answers a URI it
  does not know (:func:`agrees_unknown`); :func:`shown` leaves what it
  hides out of each page of a forwarded listing (the target's cursor kept: a page may come out
  shorter, or empty with a ``nextCursor``, and every page is of the caller's own listing).  A
  resource is judged by its URI: the proxy cannot know which of the target's templates serves
  it, so deny a URI template's resources by their URIs too (a template's own listing and
  completion are judged by the template).

An extension's ``intercept_tool_call`` cannot hold: the proxy runs no tool of its own, the target
does.  One is refused when it is added (:func:`refuse_tool_interceptor`), rather than ignored;
wrap ``tools/call`` with ``intercept_request`` instead; and so is a tool, resource, file root,
prompt or completion registered on the proxy (:class:`NothingOfItsOwn`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from .. import lifecycle
from ..errors import InvalidParams, McpError, ResourceNotFound
from ..extension import Extension
from ..server.connection import OPEN
from ..server.seams import modern_error

#: The forwarded listings: the gate's kind of each (``Gate.filter_listing``), and its items' key.
LISTINGS = {
    "tools/list": ("tools", "tools"),
    "resources/list": ("resources", "resources"),
    "resources/templates/list": ("templates", "resourceTemplates"),
    "prompts/list": ("prompts", "prompts"),
}
#: A completion's reference: the field naming its item, the action it is judged by, what it is
#: called (as mcp_ref's own server words its refusal: ``mcp_ref.server.completion``).
COMPLETION_REFS = {
    "ref/prompt": ("name", "prompts/get", "prompt"),
    "ref/resource": ("uri", "resources/read", "resource template"),
}


class FrontDoor(Extension):
    """The front server's extension: every feature request goes to the target (the last step of
    the request chain: :func:`front_door_last`)."""

    name = "mcp-ref/proxy"

    def __init__(self, proxy: Any):
        #: The :class:`~mcp_ref.proxy.server.ProxyServer` it serves (which imports this module).
        self.proxy = proxy

    def intercept_request(self, call: Any, proceed: Callable[[], Any]) -> Any:
        # basic/versioning §Backward Compatibility: a request with the modern _meta is 2026-07-28's
        envelope = lifecycle.read_envelope(call.params)
        if envelope is None:
            result = self.proxy.serve_handshake(call, proceed)
        else:
            result = self.proxy.serve_modern(call, proceed, envelope)
        return shown(self.proxy, call, result)


class NothingOfItsOwn:
    """What a :class:`~mcp_ref.proxy.server.ProxyServer` refuses of a ``Server``'s registrations:
    its feature requests all go to the target, so a tool, resource, file root, prompt or
    completion registered on it would never be listed, read or called.  Each is a TypeError at
    once, rather than taken and ignored: register it on the target server."""

    def add_tool(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: a proxy serves its target's tools (``@proxy.tool`` too)."""
        raise own_items("a tool")

    def add_resource(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: a proxy serves its target's resources (``@proxy.resource`` too)."""
        raise own_items("a resource")

    def add_resource_entry(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: a proxy serves its target's resources (an extension's, a file root's too)."""
        raise own_items("a resource")

    def add_file_root(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: a proxy serves its target's resources, files too."""
        raise own_items("a file root")

    def add_prompt(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: a proxy serves its target's prompts (``@proxy.prompt`` too)."""
        raise own_items("a prompt")

    def completion(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: the target completes its own prompts and templates."""
        raise own_items("a completion")


def own_items(what: str) -> TypeError:
    """The refusal of ``what`` registered on a proxy (:class:`NothingOfItsOwn`)."""
    return TypeError(
        f"a ProxyServer serves its target's items: register {what} on the target server"
    )


def front_door_last(hooks: list) -> list:
    """The ``intercept_request`` hooks of a proxy's extensions (the first outermost), its front
    door's moved last: the other extensions see every request before it is forwarded."""
    front = [hook for hook in hooks if isinstance(getattr(hook, "__self__", None), FrontDoor)]
    return [*(hook for hook in hooks if hook not in front), *front]


def refuse_tool_interceptor(extension: Extension) -> None:
    """TypeError if ``extension`` intercepts tool calls: a proxy runs no tool, so it never would."""
    if type(extension).intercept_tool_call is not Extension.intercept_tool_call:
        raise TypeError(
            f"extension {extension.name!r} intercepts tool calls, which a ProxyServer never "
            "runs (its target does): wrap tools/call with intercept_request instead"
        )


def check_forward(server: Any, call: Any, envelope: Any) -> dict | None:
    """Refuse ``call`` if it names an item the server's gate hides from its caller, as a missing
    one is refused (``envelope``: the request's 2026-07-28 envelope, or None); None: forward it,
    else the answer to give instead (a hidden ``resources/subscribe`` the target would agree to).

    2025-11-25 server/tools §Security Considerations: servers "MUST: ... Implement proper access
    controls"; server/resources: "Resource permissions SHOULD be checked before operations"; a
    hidden item is "not found" alike (mcp_ref.extensions.policy), and asked about whether or not
    the target has it, once per request (``Gate.allows``, ``request``).  The checks a server runs
    before it asks its gate run first, in its words (``mcp_ref.server.resources``,
    ``mcp_ref.server.completion``): a malformed request is refused alike whether what it names is
    hidden or missing, and the gate is never asked about a URI past the bound."""
    gate = server.gate
    if gate is OPEN:
        return None
    method = call.method
    params = call.params
    principal = call.principal
    if method == "tools/call" or method == "prompts/get":
        name = params.get("name")
        if isinstance(name, str) and not gate.allows(principal, method, name, params):
            if method == "tools/call":
                raise InvalidParams(f"Unknown tool: {name}")
            raise InvalidParams(f"Invalid params: unknown prompt {name!r}")
    elif method == "resources/read" or method == "resources/subscribe":
        from ..server.resources import check_uri_length, subscribable

        if method == "resources/subscribe":
            subscribable(call.caller, method)  # stateless HTTP, no ``subscribe``: refused first
        uri = params.get("uri")
        if not isinstance(uri, str):
            return None  # refused by the target, in its words
        check_uri_length(uri)  # server/resources §Security Considerations: "MUST validate"
        if not gate.resource_allowed(principal, uri, None, method, params):
            if method == "resources/subscribe" and agrees_unknown(server):
                return {}  # as the target answers a URI it does not know: nothing subscribed
            # server/resources §Error Handling: "Resource not found: -32002" (-32602 at 2026-07-28)
            missing: McpError = ResourceNotFound(f"Resource not found: {uri}", data={"uri": uri})
            raise missing if envelope is None else modern_error(missing)
    elif method == "completion/complete":
        from ..server.completion import check_shape

        check_shape(params)
        ref = params["ref"]
        ref_type = ref.get("type")
        named = COMPLETION_REFS.get(ref_type) if isinstance(ref_type, str) else None
        key = ref.get(named[0]) if named is not None else None
        if named is None or not isinstance(key, str):
            return None  # refused by the target, in its words
        _, action, what = named
        # both asked, even after a denial: a hidden item costs what a missing one does
        verdicts = [gate.allows(principal, asked, key, params) for asked in (action, method)]
        if not all(verdicts):
            raise InvalidParams(f"Invalid params: unknown {what} {key!r}")
    return None


def agrees_unknown(server: Any) -> bool:
    """True when the target agrees to watch a resource URI it does not know, so that a hidden one
    is agreed too (and never subscribed to at the target): a 2026-07-28 target acknowledges the
    URIs of a listen's filter without looking them up (as mcp_ref's server does:
    ``mcp_ref.server.subscriptions.listen``); a handshake-era one refuses the
    ``resources/subscribe`` of an unknown URI (-32002), and the proxy leaves it out."""
    return bool(server.watcher.client.connection.modern)


def listen_hidden(server: Any, call: Any, uris: Collection[str]) -> set[str]:
    """The URIs of a 2026 listen's filter the gate hides from its caller, asked before the target
    is asked to watch any (2025-11-25 server/resources: "Resource permissions SHOULD be checked
    before operations"): never subscribed to at the target, and acknowledged as an unknown URI is
    (:func:`agrees_unknown`).  Asked with the request's params, as the server's own listen asks
    (``mcp_ref.server.subscriptions.listen``): one verdict for both, so the stream's ``hidden``
    are exactly these."""
    gate = server.gate
    if gate is OPEN:
        return set()
    principal = call.principal
    params = call.params
    return {
        uri
        for uri in uris
        if not gate.resource_allowed(principal, uri, None, "resources/subscribe", params)
    }


def shown(server: Any, call: Any, result: Any) -> Any:
    """``result`` of a forwarded listing without the items the server's gate hides from the
    caller (the gate filters each page before it is sent, as a server's own listing is filtered
    before it is paged: ``mcp_ref.server.listing``); any other result as it is."""
    listing = LISTINGS.get(call.method)
    gate = server.gate
    if listing is None or gate is OPEN or not isinstance(result, dict):
        return result
    kind, key = listing
    items = result.get(key)
    if isinstance(items, list):
        listed = [item for item in items if isinstance(item, dict)]
        result[key] = gate.filter_listing(call.principal, kind, listed)
    return result
