"""The server: :class:`Server`, what it offers and how to serve it.

A ``Server`` holds what is registered (tools, resources, templates, prompts,
completions) and the connections it serves.  It answers nothing itself: each
connection (:class:`~mcp_ref.server.connection.ServerConnection`) dispatches to
the feature modules, which ask the registry through the public lookups below
(:meth:`Server.get_tool`, :meth:`Server.listings`, :meth:`Server.find_resource` ...).

What a server does not use it does not load: prompts, resources, completion, subscriptions and
pagination are imported when first registered or asked for.  Everything beyond the protocol plugs
in as an extension (:class:`~mcp_ref.extension.Extension`, ``Server(extensions=[...])``):
the server asks its list of extensions, and knows none of them by name.  The one exception is the
section at the end of :class:`Server`, "the shorthand": the keyword arguments that build the
project's own extensions (``Server(authorize=, rate_limit=, state=)``, ``server.tasks``,
``@server.tool(task=, rate_limit=)``, ``server.add_file_root``, ``run_http``).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

from .. import lifecycle
from ..lifecycle import MODERN_VERSIONS, SUPPORTED_VERSIONS
from .connection import ServerConnection
from .principal import Principal
from .seams import DEFAULT_MAX_SUBSCRIPTIONS, OPEN, Gate, Handler, Middleware, ToolCallInterceptor
from .shorthand import Shorthand
from .tools import RegisteredTool, build_tool, replacing

if TYPE_CHECKING:
    from ..extension import Extension
    from ..pagination import Paginator
    from ..signing import Keyring
    from .prompts import RegisteredPrompt
    from .resources import RegisteredResource

#: The environment variable holding the server's secret (:data:`mcp_ref.pagination.SECRET_ENV`).
SECRET_ENV = "MCP_REF_SECRET"

#: A function a decorator registers: it hands it back unchanged (a user's checker keeps its type).
_F = TypeVar("_F", bound=Callable[..., Any])


class Server(Shorthand):
    """An MCP server: what it offers, and how to serve it.

    ``instructions`` is sent to clients in the initialize result.
    ``page_size`` is the number of items per page of every listing.
    ``secret`` signs what the server hands a client to give back (pagination
    cursors): every process serving the same clients needs the same one — the
    workers of a stateless deployment.  It defaults to the environment variable
    ``MCP_REF_SECRET``; ``"new,old"`` rotates (the first signs, both verify).
    Without either, each process draws a random one.
    ``on_roots_list_changed(connection)`` is called (on the callback thread)
    when a client says its roots changed.
    ``ttl_ms`` and ``cache_scope`` are the 2026-07-28 caching hints of every
    listing, ``server/discover`` and ``resources/read`` (a resource may override
    them): how long a client may keep a result (0: re-fetch each time), and
    whether shared caches may keep it (``"public"``) or only the caller's
    (``"private"``, the default: safe when answers differ per user).
    ``max_subscriptions`` bounds the 2026-07-28 ``subscriptions/listen`` streams open at once
    (past it a listen is refused with -32000, "Server busy").

    ``extensions``: what plugs into the server (:class:`~mcp_ref.extension.Extension`; more
    with :meth:`add_extension`).  Shorthand building the project's own (:mod:`.shorthand`):
    ``authorize(principal, action, name) -> bool`` (what a principal may not use is unlisted and
    "not found"), ``rate_limit`` (``"100/minute"`` per principal; over it -32005, HTTP 429),
    ``max_subscribed_resources`` (per principal, default 1,000; None: no cap) and
    ``resource_update_interval`` (seconds: updates of a resource coalesced) make the
    :class:`~mcp_ref.extensions.policy.Policy`; ``state`` (a ``redis://`` URL, a ``State``; default
    ``MCP_REF_STATE``, else memory) is where processes share what extensions keep.
    ``lifespan(server)``: a context manager entered as serving starts, exited as it ends (``ctx.lifespan_context``).
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        page_size: int = 100,
        website_url: str | None = None,
        secret: bytes | str | Sequence[bytes | str] | None = None,
        ttl_ms: int = 0,
        cache_scope: str = "private",
        max_subscriptions: int = DEFAULT_MAX_SUBSCRIPTIONS,
        extensions: Iterable[Extension] = (),
        lifespan: Callable[[Any], Any] | None = None,
        **shorthand: Any,
    ):
        self.name, self.version, self.title, self.instructions = name, version, title, instructions
        self.website_url, self.lifespan = website_url, lifespan
        secret = (os.environ.get(SECRET_ENV) or None) if secret is None else secret
        self._registry_lock = threading.RLock()
        self._page_size, self._secret = page_size, secret
        self._paginator: Paginator | None = None
        if page_size != 100 or secret is not None:  # checked now (loaded at once when configured)
            self._paginator = self.paginator
        if (ttl_ms, cache_scope) == (0, "private"):
            self.cache_hints: tuple = (ttl_ms, cache_scope)
        else:
            from .resources import check_hints

            self.cache_hints = check_hints(ttl_ms, cache_scope)
        self.on_roots_list_changed: Callable[[ServerConnection], None] | None = None
        self._tools: dict[str, RegisteredTool] = {}
        self._resources: dict[str, RegisteredResource] = {}
        self._templates: list[RegisteredResource] = []
        self._resource_lists: list[Callable[[], Iterable[dict]]] = []
        self._prompts: dict[str, RegisteredPrompt] = {}
        self._completions: dict[
            tuple[str, str], tuple[Callable, str | None]
        ] = {}  # (function, its Context parameter)
        self._connections: weakref.WeakSet[ServerConnection] = weakref.WeakSet()
        self._max_subscriptions = max_subscriptions
        self._subscriptions: Any = None
        self._server_info: tuple | None = None
        self._extensions: list[Extension] = []
        #: The extensions' ``intercept_request`` and ``intercept_tool_call``, the first outermost.
        self.request_hooks: list[Middleware] = []
        self.tool_call_hooks: list[ToolCallInterceptor] = []
        self._methods: dict[
            str | None, dict[str, Handler]
        ] = {}  # version -> the extensions' methods
        self._context_attributes: dict[str, Callable[[Any], Any]] = {}
        self._take_shorthand(**shorthand)  # the state first: an extension's setup may ask for it
        for extension in extensions:
            self.add_extension(extension)

    # -- what is loaded when first used ------------------------------------------------------------

    @property
    def paginator(self) -> Paginator:
        """Pages every listing (``page_size``), and signs its cursors with :attr:`keyring`."""
        paginator = self._paginator
        if paginator is None:
            from ..pagination import Paginator

            with self._registry_lock:
                if self._paginator is None:
                    self._paginator = Paginator(page_size=self._page_size, secret=self._secret)
                paginator = self._paginator
        return paginator

    @property
    def keyring(self) -> Keyring:
        """The keys that sign what clients hand back: cursors and 2026-07-28 ``requestState``."""
        return self.paginator.keyring

    @property
    def subscriptions(self) -> Any:
        """The open 2026-07-28 ``subscriptions/listen`` streams (at most ``max_subscriptions``;
        :class:`~mcp_ref.server.subscriptions.Subscriptions`)."""
        hub = self._subscriptions
        if hub is None:
            from .subscriptions import Subscriptions

            with self._registry_lock:
                if self._subscriptions is None:
                    self._subscriptions = Subscriptions(
                        self._max_subscriptions, self.shared_store("counters")
                    )
                hub = self._subscriptions
        return hub

    # -- tools ----------------------------------------------------------------------

    @overload
    def tool(self, name: _F, /) -> _F: ...

    @overload
    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        input_schema: dict | None = None,
        output_schema: dict | None = None,
        annotations: dict | None = None,
        icons: list | None = None,
        meta: dict | None = None,
        scopes: Iterable[str] = (),
        headers: dict[str, str] | None = None,
        **options: Any,
    ) -> Callable[[_F], _F]: ...

    def tool(
        self,
        name: str | Callable | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        input_schema: dict | None = None,
        output_schema: dict | None = None,
        annotations: dict | None = None,
        icons: list | None = None,
        meta: dict | None = None,
        scopes: Iterable[str] = (),
        headers: dict[str, str] | None = None,
        **options: Any,
    ) -> Any:
        """Decorator: register a function as a tool.

        The input schema comes from the type hints (or ``input_schema``), the description from the docstring
        (or ``description``).  A return annotation that is a dataclass, TypedDict or pydantic model gives an
        ``outputSchema``, the result sent as ``structuredContent`` too.  A name registered twice warns (UserWarning)
        and the later registration replaces the earlier one, as in the official SDK.  Both ``@server.tool``
        and ``@server.tool(...)`` work; an ``async def`` runs to completion on the
        handler thread (``signatures.runs_in_thread``).  ``scopes``: the OAuth scopes a
        caller needs when the server is a protected resource (``wsgi_app(auth=...)``).
        ``headers`` maps parameters to header names (``{"region": "Region"}``): at 2026-07-28 over
        Streamable HTTP their values travel as ``Mcp-Param-Region`` too, checked against the body.
        ``options``: what extensions read of the tool (kept in ``RegisteredTool.options``): ``task``
        (``"optional"`` or ``"required"``) makes the tool task-capable: a task where it calls
        ``ctx.start_task()`` (2026-07-28: :mod:`mcp_ref.extensions.tasks`), or whole when asked (2025-11-25);
        ``rate_limit``: at most this many calls per principal (``"5/minute"``), beside the server's own.
        """
        if callable(name):  # @server.tool, without parentheses
            self.add_tool(name)
            return name

        def register(func: _F) -> _F:
            self.add_tool(
                func,
                name=name,
                title=title,
                description=description,
                input_schema=input_schema,
                output_schema=output_schema,
                annotations=annotations,
                icons=icons,
                meta=meta,
                scopes=scopes,
                headers=headers,
                **options,
            )
            return func

        return register

    def add_tool(
        self,
        func: Callable,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        input_schema: dict | None = None,
        output_schema: dict | None = None,
        annotations: dict | None = None,
        icons: list | None = None,
        meta: dict | None = None,
        scopes: Iterable[str] = (),
        headers: dict[str, str] | None = None,
        **options: Any,
    ) -> None:
        """Register ``func`` as a tool (see :meth:`tool`); announces ``tools/list_changed``."""
        tool = build_tool(
            func,
            name=name,
            title=title,
            description=description,
            input_schema=input_schema,
            output_schema=output_schema,
            annotations=annotations,
            icons=icons,
            meta=meta,
            scopes=scopes,
            headers=headers,
            options=self._take_options(options),
        )
        with self._registry_lock:
            self._tools[tool.name] = replacing(tool.name in self._tools, "tool", tool.name, tool)
        self._announce("tools", self._listeners("tools", tool.name))

    def remove_tool(self, name: str) -> None:
        """Unregister a tool; announces ``tools/list_changed``."""
        listeners = self._listeners("tools", name)  # asked while it still exists
        with self._registry_lock:
            del self._tools[name]
        self._announce("tools", listeners)

    def get_tool(self, name: str) -> RegisteredTool | None:
        """The registered tool called ``name``, or None."""
        return self._tools.get(name)

    def registered_tools(self) -> list[RegisteredTool]:
        """Every registered tool (a copy)."""
        return list(self._tools.values())

    # -- resources -------------------------------------------------------------------

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        annotations: dict | None = None,
        icons: list | None = None,
        scopes: Iterable[str] = (),
        ttl_ms: int | None = None,
        cache_scope: str | None = None,
        **options: Any,
    ) -> Callable[[_F], _F]:
        """Decorator: register a resource at ``uri``, or a template if it has ``{variables}``.

        The function returns ``str`` (text), ``bytes`` (sent base64 as a blob), a dict/list (sent as JSON
        text), or contents objects.  For a template the URI's variables are passed as keyword arguments,
        converted to their annotations (``user_id: int`` gets 42); a URI registered twice warns (UserWarning),
        the later one replaces it.  ``ttl_ms`` and ``cache_scope`` override the caching hints (2026-07-28).
        ``options``: what extensions read of it: ``rate_limit``, at most this many reads per principal
        (of a template: of all its URIs together).
        """

        def register(func: _F) -> _F:
            self.add_resource(
                func,
                uri,
                name=name,
                title=title,
                description=description,
                mime_type=mime_type,
                size=size,
                annotations=annotations,
                icons=icons,
                scopes=scopes,
                ttl_ms=ttl_ms,
                cache_scope=cache_scope,
                **options,
            )
            return func

        return register

    def add_resource(
        self,
        func: Callable,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        annotations: dict | None = None,
        icons: list | None = None,
        scopes: Iterable[str] = (),
        ttl_ms: int | None = None,
        cache_scope: str | None = None,
        **options: Any,
    ) -> None:
        """Register a resource or resource template (see :meth:`resource`)."""
        from .resources import build_resource

        entry = build_resource(
            func,
            uri,
            name=name,
            title=title,
            description=description,
            mime_type=mime_type,
            size=size,
            annotations=annotations,
            icons=icons,
            scopes=scopes,
            ttl_ms=ttl_ms,
            cache_scope=cache_scope,
            options=self._take_options(options),
        )
        self._add_resource_entry(entry)

    def _add_resource_entry(self, entry: RegisteredResource) -> None:
        uri = entry.listing.get("uriTemplate") or entry.listing["uri"]
        with self._registry_lock:
            if entry.template is not None:
                kept = [t for t in self._templates if t.listing["uriTemplate"] != uri]
                self._templates = [
                    *kept,
                    replacing(len(kept) < len(self._templates), "resource template", uri, entry),
                ]
            else:
                self._resources[uri] = replacing(uri in self._resources, "resource", uri, entry)
        self._announce("resources", self._listeners("resources", uri))

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource or template; announces ``resources/list_changed``."""
        listeners = self._listeners("resources", uri)  # asked while it still exists
        with self._registry_lock:
            if self._resources.pop(uri, None) is None:
                self._templates = [t for t in self._templates if t.listing["uriTemplate"] != uri]
        self._announce("resources", listeners)

    def add_listed_resources(
        self, entry: RegisteredResource, list_items: Callable[[], Iterable[dict]]
    ) -> None:
        """Register a resource template and the function listing the resources it serves (their
        ``Resource`` dicts, in ``resources/list`` after the registered resources): a file root."""
        with (
            self._registry_lock
        ):  # listed before it is announced: a client listing at once sees them
            self._resource_lists.append(list_items)
        self._add_resource_entry(entry)

    def find_resource(self, uri: str) -> tuple[RegisteredResource, dict] | None:
        """The resource answering ``uri`` and the template variables it matched, or None.

        One spelling per resource: a template serves a URI only in the canonical form it expands
        its values to (:meth:`~mcp_ref.uri_template.UriTemplate.match_canonical`: no needless or
        lower-case percent-escape, no ``%2F`` for a ``/`` it would write, no ``.`` or ``..``
        segment).  Any other spelling of the same resource (``secre%74.txt``, ``./secret.txt``,
        ``a%2Fb``) is not found, with or without ``authorize``: so ``authorize``, the rate limits,
        the subscriptions and the resource's own function all judge the one string.  A file root
        also finds no path it would refuse to read (``a//b``, ``a/``: :meth:`FileRoot.is_canonical`).
        """
        entry = self._resources.get(uri)
        if entry is not None:
            return entry, {}
        for template in list(self._templates):
            pattern = template.template
            variables = pattern.match_canonical(uri) if pattern is not None else None
            if variables is not None and (template.accepts is None or template.accepts(variables)):
                return template, variables
        return None

    def required_scopes(
        self, method: str, params: Any, principal: Principal | None = None
    ) -> tuple[str, ...]:
        """The OAuth scopes a request needs that ``principal`` lacks (all of them without one): those of
        the tool, resource or prompt it names, if ``principal`` may see it (else none: a 403 would tell
        it exists)."""
        item = self.item_of(method, params) if method != "resources/subscribe" else None
        if item is None:
            return ()
        if principal is None:
            return item[2].scopes if item[2] is not None else ()
        # asked whether or not the item exists (hidden and missing cost the same); the handler
        # reuses the verdict (the gate: Policy.allows, ``request``)
        entry = self.visible_item(principal, item, params)
        scopes = getattr(entry, "scopes", ()) if entry is not None else ()
        if not scopes or not principal.authenticated:
            return ()
        return tuple(scope for scope in scopes if scope not in principal.scopes)

    def visible_tool(
        self, principal: Principal | None, name: str, params: dict | None = None
    ) -> RegisteredTool | None:
        """The tool ``name`` if ``principal`` may use it (the :attr:`gate`), else None: "not found" alike.
        ``params``: the request being served (its verdicts are asked once)."""
        return self.gate.visible(principal, "tools/call", name, self.get_tool(name), params)

    def item_of(self, method: str, params: Any) -> tuple[str, str, Any, Any] | None:
        """``(action, name, entry, found)`` of the item a request addresses, or None when it names none
        (``entry`` None: nothing by that name; ``found``: :meth:`find_resource`'s answer for a
        resource, else None)."""
        if not isinstance(params, dict):
            return None
        if method == "tools/call":
            name = params.get("name")
            return (method, name, self.get_tool(name), None) if isinstance(name, str) else None
        if method == "prompts/get":
            name = params.get("name")
            return (method, name, self.get_prompt(name), None) if isinstance(name, str) else None
        if method in ("resources/read", "resources/subscribe"):
            uri = params.get("uri")
            if not isinstance(uri, str):
                return None
            found = self.find_resource(uri)
            return ("resources/read", uri, found[0] if found is not None else None, found)
        return None

    def visible_item(self, principal: Principal, item: tuple, request: dict | None = None) -> Any:
        """The entry of an :meth:`item_of` answer if ``principal`` may use it (the :attr:`gate`), else
        None (asked whether or not the item exists)."""
        action, name, entry, found = item
        if action == "resources/read":
            return (
                entry
                if self.gate.visible_resource(principal, name, found, request=request) is not None
                else None
            )
        return self.gate.visible(principal, action, name, entry, request)

    def has_resource_uri(self, uri: str) -> bool:
        """True when ``uri`` is a registered resource URI or template (as ``ref/resource`` names one)."""
        return uri in self._resources or any(
            t.listing["uriTemplate"] == uri for t in list(self._templates)
        )

    # -- prompts -----------------------------------------------------------------------

    @overload
    def prompt(self, name: _F, /) -> _F: ...

    @overload
    def prompt(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list | None = None,
        scopes: Iterable[str] = (),
        **options: Any,
    ) -> Callable[[_F], _F]: ...

    def prompt(
        self,
        name: str | Callable | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        icons: list | None = None,
        scopes: Iterable[str] = (),
        **options: Any,
    ) -> Any:
        """Decorator: register a prompt.  Its parameters are the prompt's arguments.

        The function returns a string (one user message), a PromptMessage or ``{"role", "content"}`` dict,
        a list of those, or a GetPromptResult.  ``@server.prompt`` and ``@server.prompt(...)`` both work,
        as for :meth:`tool`; a name registered twice warns (UserWarning) and the later one replaces it.
        """
        if callable(name):  # @server.prompt, without parentheses
            self.add_prompt(name)
            return name

        def register(func: _F) -> _F:
            self.add_prompt(
                func,
                name=name,
                title=title,
                description=description,
                icons=icons,
                scopes=scopes,
                **options,
            )
            return func

        return register

    def add_prompt(
        self,
        func: Callable,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list | None = None,
        scopes: Iterable[str] = (),
        **options: Any,
    ) -> None:
        """Register a prompt (see :meth:`prompt`); announces ``prompts/list_changed``."""
        from .prompts import build_prompt

        prompt = build_prompt(
            func,
            name=name,
            title=title,
            description=description,
            icons=icons,
            scopes=scopes,
            options=self._take_options(options),
        )
        with self._registry_lock:
            self._prompts[prompt.name] = replacing(
                prompt.name in self._prompts, "prompt", prompt.name, prompt
            )
        self._announce("prompts", self._listeners("prompts", prompt.name))

    def remove_prompt(self, name: str) -> None:
        """Unregister a prompt; announces ``prompts/list_changed``."""
        listeners = self._listeners("prompts", name)  # asked while it still exists
        with self._registry_lock:
            del self._prompts[name]
        self._announce("prompts", listeners)

    def get_prompt(self, name: str) -> RegisteredPrompt | None:
        """The registered prompt called ``name``, or None."""
        return self._prompts.get(name)

    # -- completion ------------------------------------------------------------------------

    def completion(
        self, *, prompt: str | None = None, resource: str | None = None
    ) -> Callable[[_F], _F]:
        """Decorator: complete the arguments of a prompt or the variables of a resource template.

        The function is called as ``func(argument_name, value, context_arguments)``
        and returns a list of candidate strings (at most 100 are sent).  A parameter annotated
        ``Context`` is given the request's, so the suggestions can depend on who asks
        (``ctx.principal``): 2025-11-25 server/utilities/completion §Security, "Control access to
        sensitive suggestions".
        """
        if (prompt is None) == (resource is None):
            raise TypeError("completion() takes exactly one of prompt= or resource=")
        key = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", str(resource))

        def register(func: _F) -> _F:
            from .completion import context_parameter

            self._completions[key] = (func, context_parameter(func))
            return func

        return register

    def get_completion(self, ref_type: str, name: str) -> Callable | None:
        """The completion function for ``(ref_type, prompt name or template URI)``, or None."""
        entry = self._completions.get((ref_type, name))
        return entry[0] if entry is not None else None

    def completion_context(self, ref_type: str, name: str) -> str | None:
        """The parameter of that completion function annotated ``Context``, or None."""
        entry = self._completions.get((ref_type, name))
        return entry[1] if entry is not None else None

    # -- what the features read ----------------------------------------------------------------

    def listings(self, kind: str) -> list[dict]:
        """The listed form of every item of ``kind``: ``tools``, ``resources``, ``templates`` or ``prompts``.

        Resources are the registered ones, then the files of every file root.
        """
        if kind == "tools":
            return [t.listing for t in list(self._tools.values())]
        if kind == "resources":
            items = [r.listing for r in list(self._resources.values())]
            for provider in list(self._resource_lists):
                items.extend(provider())
            return items
        if kind == "templates":
            return [t.listing for t in list(self._templates)]
        if kind == "prompts":
            return [p.listing for p in list(self._prompts.values())]
        raise ValueError(f"unknown listing {kind!r}")

    def capabilities(self, version: str | None = None, caller: Any = None) -> dict:
        """The capabilities this server declares at ``version`` (to ``caller``, a connection, when
        known), derived from what is registered."""
        caps: dict[str, Any] = {"logging": {}}
        if self._tools:
            caps["tools"] = {"listChanged": True}
        if self._resources or self._templates:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if self._prompts:
            caps["prompts"] = {"listChanged": True}
        if self._completions and lifecycle.at_least(version, lifecycle.COMPLETIONS_CAPABILITY):
            caps["completions"] = {}
        # 2026-07-28: listChanged and subscribe keep their meaning; the notifications they promise
        # travel on subscriptions/listen streams (mcp_ref.server.subscriptions).
        for extension in self._extensions:
            declared = extension.capabilities(version, caller)
            if declared is None:
                continue
            if version in MODERN_VERSIONS:  # 2026-07-28: an extension's settings, under its name
                caps.setdefault("extensions", {})[extension.name] = declared
            else:
                caps.update(declared)
        return caps

    def offers(self, capability: str, version: str | None = None) -> bool:
        """True when :meth:`capabilities` at ``version`` declares ``capability`` (without building them)."""
        if capability == "tools":
            return bool(self._tools)
        if capability == "resources":
            return bool(self._resources or self._templates)
        if capability == "prompts":
            return bool(self._prompts)
        return capability in self.capabilities(version)

    def server_info(self, version: str | None = None) -> dict:
        """The ``serverInfo`` object for ``version`` (the same object while nothing it holds changes:
        a 2026-07-28 server puts it in every result)."""
        key = (version, self.name, self.version, self.title, self.website_url)
        cached = self._server_info
        if cached is not None and cached[0] == key:
            return cached[1]
        info = {"name": self.name, "version": self.version}
        if self.title and lifecycle.at_least(version, lifecycle.TITLES):
            info["title"] = self.title
        if self.website_url and lifecycle.at_least(version, lifecycle.ICONS):
            info["websiteUrl"] = self.website_url
        self._server_info = (key, info)
        return info

    def close_subscriptions(self) -> int:
        """End every open 2026-07-28 ``subscriptions/listen`` stream gracefully (their requests are
        answered, so clients know the end was not a failure); how many there were.  Serving goes on:
        a client may listen again.  The HTTP server calls it when it shuts down."""
        return self._subscriptions.close_all() if self._subscriptions is not None else 0

    # -- extensions (mcp_ref.extension: the one interface everything beyond the protocol uses) --

    @property
    def extensions(self) -> list[Extension]:
        """The extensions this server has, in the order they were added (a copy)."""
        return list(self._extensions)

    def add_extension(self, extension: Extension) -> Extension:
        """Take ``extension`` (once; see :class:`~mcp_ref.extension.Extension`): its ``setup``
        is called now, and from now on the server asks it what it adds.  Returns it.

        Add extensions before serving over HTTP: an application takes the HTTP middleware of the
        extensions the server has when it is made."""
        with self._registry_lock:
            if any(installed is extension for installed in self._extensions):
                return extension
            extension.setup(self)
            extensions = [*self._extensions, extension]
            self.request_hooks = [
                e.intercept_request for e in extensions if _overrides(e, "intercept_request")
            ]
            self.tool_call_hooks = [
                e.intercept_tool_call for e in extensions if _overrides(e, "intercept_tool_call")
            ]
            attributes: dict[str, Callable[[Any], Any]] = {}
            for installed in reversed(extensions):  # the first added wins a name two declare
                attributes.update(installed.context_attributes())
            self._methods, self._context_attributes, self._extensions = {}, attributes, extensions
        return extension

    @property
    def gate(self) -> Gate:
        """Which items each principal may see and use (:class:`~mcp_ref.server.seams.Gate`): the first
        extension's that has one, else every item to everyone (:data:`~mcp_ref.server.seams.OPEN`)."""
        for extension in self._extensions:
            gate = extension.gate
            if gate is not None:
                return gate
        return OPEN

    def extension_method(self, method: str, version: str | None) -> Handler | None:
        """The handler an extension gives ``method`` at ``version`` (the first added wins), or None."""
        methods = self._methods.get(version)
        if methods is None:
            methods = {}
            for extension in reversed(self._extensions):
                methods.update(extension.methods(version))
            if len(self._methods) < len(SUPPORTED_VERSIONS) + len(
                MODERN_VERSIONS
            ):  # bounded: a peer's version
                self._methods[version] = methods
        return methods.get(method)

    def context_attribute(self, name: str) -> Callable[[Any], Any] | None:
        """What gives ``ctx.<name>`` when an extension adds it to a handler's ``Context``, or None."""
        return self._context_attributes.get(name) or self._shorthand_context(name)


def _overrides(extension: Extension, hook: str) -> bool:
    """True when ``extension`` has its own ``hook`` (the base's does nothing: it is not asked)."""
    from ..extension import Extension  # loaded with the first extension: a plain server has none

    return getattr(type(extension), hook) is not getattr(Extension, hook)
