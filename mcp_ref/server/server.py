"""The server: :class:`Server`, what it offers and how to serve it.

A ``Server`` holds what is registered (tools, resources, templates, prompts,
completions) and the connections it serves.  It answers nothing itself: each
connection (:class:`~mcp_ref.server.connection.ServerConnection`) dispatches to
the feature modules, which ask the registry through the public lookups below
(:meth:`Server.get_tool`, :meth:`Server.listings`, :meth:`Server.find_resource` ...).

What a server does not use it does not load: prompts, resources, completion, subscriptions and
pagination are imported when first registered or asked for; serving over HTTP
(:mod:`mcp_ref.http.server.serving`) when asked for; where changes go
(:mod:`mcp_ref.state.changes`) at the first change made while serving.  Everything beyond the
protocol plugs in as an extension (:class:`~mcp_ref.extension.Extension`,
``Server(extensions=[...])``): the server asks its list of extensions, and knows none of them by
name.  The one exception is the section at the end of :class:`Server`, "the shorthand": the
keyword arguments and members that build the project's own extensions, each handing over to
:mod:`mcp_ref.server.shorthand` (``Server(authorize=, rate_limit=, state=)``, ``server.tasks``,
``@server.tool(task=, rate_limit=)``, ``server.add_file_root``).
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

from .. import lifecycle
from .connection import DEFAULT_MAX_SUBSCRIPTIONS, OPEN, ServerConnection
from .tools import RegisteredTool, build_tool, replacing

if TYPE_CHECKING:
    from ..extension import Extension
    from ..pagination import Paginator
    from ..signing import Keyring
    from ..state.changes import Changes
    from .principal import Principal
    from .prompts import RegisteredPrompt
    from .resources import RegisteredResource, ResourceTable
    from .seams import Gate, Handler, Middleware, ToolCallInterceptor
    from .shorthand import Shorthand

#: The environment variable holding the server's secret (:data:`mcp_ref.pagination.SECRET_ENV`).
SECRET_ENV = "MCP_REF_SECRET"

#: A function a decorator registers: it hands it back unchanged (a user's checker keeps its type).
_F = TypeVar("_F", bound=Callable[..., Any])


class Server:
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
    (past it a listen is refused with -31000, "Server busy").

    ``extensions``: what plugs into the server (:class:`~mcp_ref.extension.Extension`; more
    with :meth:`add_extension`).  Shorthand building the project's own (:mod:`.shorthand`):
    ``authorize(principal, action, name) -> bool`` (what a principal may not use is unlisted and
    "not found"), ``rate_limit`` (``"100/minute"`` per principal; over it -31005, HTTP 429),
    ``max_subscribed_resources`` (per principal, default 1,000; None: no cap) and
    ``resource_update_interval`` (seconds: updates of a resource coalesced) make the
    :class:`~mcp_ref.extensions.policy.Policy`; ``state`` (a ``redis://`` URL, a ``State``; default
    ``MCP_REF_STATE``, else memory) is where processes share what extensions keep.
    ``lifespan(server)``: a context manager entered as serving starts, exited as it ends
    (``ctx.lifespan_context``); an in-memory client holds it from its start to its close
    (:mod:`mcp_ref.server.lifespan`).
    """

    # Starting values, replaced on the instance when they change.
    on_roots_list_changed: Callable[[ServerConnection], None] | None = None
    _paginator: Paginator | None = None
    #: Its resources and templates, and what its file roots list (made at the first resource).
    resource_table: ResourceTable | None = None
    _subscriptions: Any = None
    _server_info: tuple[Any, dict[str, Any]] | None = None
    #: ``Server(lifespan=...)`` and who holds it now (:class:`~mcp_ref.server.lifespan.Lifespan`:
    #: entered or not, serving, the in-memory clients); None without a lifespan.
    lifespan_state: Any = None
    #: True once this process serves (:meth:`serves`): what it registered before is its start, the
    #: same on every worker of a deployment, and not announced to the others' clients.
    _served = False
    _changes: Changes | None = None  # where changes go (made at the first: _changes_of)
    _shorthand: Shorthand | None = None
    #: Serving over HTTP: what the constructor was given in FastMCP's names (``host=``, ``port=``,
    #: ``stateless_http=`` ...: :mod:`mcp_ref.server.fastmcp_names`), the defaults of :meth:`run`
    #: and :meth:`wsgi_app`.  Replaced, never changed in place.
    http_defaults: dict[str, Any] = {}

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
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        self.website_url = website_url
        secret = (os.environ.get(SECRET_ENV) or None) if secret is None else secret
        self._registry_lock = threading.RLock()
        self._page_size = page_size
        self._secret = secret
        if page_size != 100 or secret is not None:  # checked now (loaded at once when configured)
            self._paginator = self.paginator
        self.cache_hints: tuple = (ttl_ms, cache_scope)
        if self.cache_hints != (0, "private"):  # checked (loaded) only when set
            from .resources import check_hints

            check_hints(ttl_ms, cache_scope)
        self._tools: dict[str, RegisteredTool] = {}
        self._prompts: dict[str, RegisteredPrompt] = {}
        # (function, its Context parameter)
        self._completions: dict[tuple[str, str], tuple[Callable, str | None]] = {}
        self._connections: weakref.WeakSet[ServerConnection] = weakref.WeakSet()
        self._max_subscriptions = max_subscriptions
        self._extensions: list[Extension] = []
        #: The extensions' ``intercept_request`` and ``intercept_tool_call``, the first outermost.
        self.request_hooks: list[Middleware] = []
        self.tool_call_hooks: list[ToolCallInterceptor] = []
        self._methods: dict[str | None, dict[str, Handler]] = {}  # version -> its methods
        self._context_attributes: dict[str, Callable[[Any], Any]] = {}
        if lifespan is not None:  # a server without one never loads mcp_ref.server.lifespan
            from .lifespan import Lifespan

            self.lifespan_state = Lifespan(self, lifespan)
        if shorthand or os.environ.get("MCP_REF_STATE"):  # shorthand.STATE_ENV
            # the state first: an extension's setup may ask for it
            self._shorthand_of().take(**shorthand)
        for extension in extensions:
            self.add_extension(extension)

    if not TYPE_CHECKING:  # a type checker still reports a name that does not exist

        def __getattr__(self, name):
            """A missing attribute: AttributeError, naming mcp_ref's equivalent of FastMCP's
            (``mcp.settings``, ``mcp.custom_route`` ...) when it is one of those."""
            from .fastmcp_names import missing_attribute

            raise missing_attribute(self, name)

    # -- what is loaded when first used ------------------------------------------------------------

    @property
    def paginator(self) -> Paginator:
        """Pages every listing (``page_size``), and signs its cursors with :attr:`keyring`."""
        if self._paginator is None:
            from ..pagination import Paginator

            with self._registry_lock:
                if self._paginator is None:
                    self._paginator = Paginator(page_size=self._page_size, secret=self._secret)
        return self._paginator

    @property
    def keyring(self) -> Keyring:
        """The keys that sign what clients hand back: cursors and 2026-07-28 ``requestState``."""
        return self.paginator.keyring

    @property
    def subscriptions(self) -> Any:
        """The open 2026-07-28 ``subscriptions/listen`` streams (at most ``max_subscriptions``;
        :class:`~mcp_ref.server.subscriptions.Subscriptions`)."""
        if self._subscriptions is None:
            from .subscriptions import Subscriptions

            with self._registry_lock:
                if self._subscriptions is None:
                    self._subscriptions = Subscriptions(
                        self._max_subscriptions, self.shared_store("counters")
                    )
        return self._subscriptions

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

    def tool(self, name: str | Callable | None = None, **keywords: Any) -> Any:
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
            return self.add_tool(name)
        # the keywords are add_tool's (typed in the overload above)
        return functools.partial(self.add_tool, name=name, **keywords)

    def add_tool(
        self,
        fn: _F,
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
    ) -> _F:
        """Register ``fn`` as a tool (see :meth:`tool`); announces ``tools/list_changed``.  Returns ``fn``."""
        given = {
            "name": name,
            "title": title,
            "description": description,
            "inputSchema": input_schema,
            "outputSchema": output_schema,
            "annotations": annotations,
            "icons": icons,
            "_meta": meta,
        }
        tool = build_tool(fn, given, scopes, headers, self._item_options(options))
        with self._registry_lock:
            self._tools[tool.name] = replacing(tool.name in self._tools, "tool", tool.name, tool)
        self._announce("tools", self._listeners("tools", tool.name))
        return fn

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
        return functools.partial(
            self.add_resource,
            uri=uri,
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

    def add_resource(
        self,
        func: _F,
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
    ) -> _F:
        """Register a resource or resource template (see :meth:`resource`); returns ``func``."""
        from .resources import build_resource

        given = {
            "name": name,
            "title": title,
            "description": description,
            "mimeType": mime_type,
            "size": size,
            "annotations": annotations,
            "icons": icons,
        }
        options = self._item_options(options)
        entry = build_resource(func, uri, given, scopes, (ttl_ms, cache_scope), options)
        self.add_resource_entry(entry)
        return func

    def add_resource_entry(
        self, entry: RegisteredResource, list_items: Callable[[], Iterable[dict]] | None = None
    ) -> None:
        """Register a resource or template made by :func:`~mcp_ref.server.resources.build_resource`,
        and the function listing the resources a template serves, if any (their ``Resource`` dicts,
        in ``resources/list`` after the registered resources: a file root)."""
        with self._registry_lock:
            table = self.resource_table
            if table is None:
                from .resources import ResourceTable

                table = self.resource_table = ResourceTable()
            uri = table.add(entry, list_items)
        self._announce("resources", self._listeners("resources", uri))

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource or template; announces ``resources/list_changed``."""
        listeners = self._listeners("resources", uri)  # asked while it still exists
        with self._registry_lock:
            if self.resource_table is not None:
                self.resource_table.remove(uri)
        self._announce("resources", listeners)

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
        table = self.resource_table
        return None if table is None else table.find(uri)

    def required_scopes(
        self, method: str, params: Any, principal: Principal | None = None
    ) -> tuple[str, ...]:
        """The OAuth scopes a request needs that ``principal`` lacks (all of them without one): those of
        the tool, resource or prompt it names, if ``principal`` may see it (else none: a 403 would tell
        it exists).  See :func:`mcp_ref.server.seams.required_scopes`."""
        from .seams import required_scopes  # the item gate's: asked of a request over HTTP

        return required_scopes(self, method, params, principal)

    def visible_tool(
        self, principal: Principal | None, name: str, params: dict | None = None
    ) -> RegisteredTool | None:
        """The tool ``name`` if ``principal`` may use it (the :attr:`gate`), else None: "not found" alike.
        ``params``: the request being served (its verdicts are asked once)."""
        return self.gate.visible(principal, "tools/call", name, self.get_tool(name), params)

    def _offers_choices(self) -> bool:
        """True when a prompt or template has a parameter of fixed choices (a ``Literal``): they
        are its completions even with no ``@server.completion`` (:mod:`mcp_ref.server.completion`)."""
        if not (self._prompts or self.resource_table):
            return False
        from .completion import offers_choices

        return offers_choices(self)

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

    def prompt(self, name: str | Callable | None = None, **keywords: Any) -> Any:
        """Decorator: register a prompt.  Its parameters are the prompt's arguments.

        The function returns a string (one user message), a PromptMessage or ``{"role", "content"}`` dict,
        a list of those, or a GetPromptResult.  ``@server.prompt`` and ``@server.prompt(...)`` both work,
        as for :meth:`tool`; a name registered twice warns (UserWarning) and the later one replaces it.
        """
        if callable(name):  # @server.prompt, without parentheses
            return self.add_prompt(name)
        # the keywords are add_prompt's (typed in the overload above)
        return functools.partial(self.add_prompt, name=name, **keywords)

    def add_prompt(
        self,
        func: _F,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list | None = None,
        scopes: Iterable[str] = (),
        **options: Any,
    ) -> _F:
        """Register a prompt (see :meth:`prompt`); announces ``prompts/list_changed``.  Returns ``func``."""
        from .prompts import build_prompt

        given = {"name": name, "title": title, "description": description, "icons": icons}
        prompt = build_prompt(func, given, scopes, self._item_options(options))
        with self._registry_lock:
            self._prompts[prompt.name] = replacing(
                prompt.name in self._prompts, "prompt", prompt.name, prompt
            )
        self._announce("prompts", self._listeners("prompts", prompt.name))
        return func

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
        from .completion import registering

        return registering(self._completions, prompt, resource)

    def completion_for(self, ref_type: str, name: str) -> tuple[Callable, str | None] | None:
        """The completion function for ``(ref_type, prompt name or template URI)`` and its parameter
        annotated ``Context`` (None without one); None when no function is registered for it."""
        return self._completions.get((ref_type, name))

    # -- what the features read ----------------------------------------------------------------

    def listings(self, kind: str) -> list[dict]:
        """The listed form of every item of ``kind``: ``tools``, ``resources``, ``templates`` or ``prompts``.

        Resources are the registered ones, then the files of every file root.
        """
        if kind == "tools":
            return [t.listing for t in list(self._tools.values())]
        if kind in ("resources", "templates"):
            table = self.resource_table
            return [] if table is None else table.listings(kind)
        if kind == "prompts":
            return [p.listing for p in list(self._prompts.values())]
        raise ValueError(f"unknown listing {kind!r}")

    def capabilities(self, version: str | None = None, caller: Any = None) -> dict:
        """The capabilities this server declares at ``version`` (to ``caller``, a connection, when
        known), derived from what is registered.

        To a caller served over stateless HTTP (handshake era) ``listChanged`` and ``subscribe``
        are false: each request is served on its own, so no notification can reach its client
        after it (``resources/subscribe`` is refused there, as ``logging/setLevel`` is).
        """
        notifies = caller is None or not caller.stateless
        caps: dict[str, Any] = {"logging": {}}
        if self._tools:
            caps["tools"] = {"listChanged": notifies}
        if self.resource_table:  # a resource or a template
            caps["resources"] = {"subscribe": notifies, "listChanged": notifies}
        if self._prompts:
            caps["prompts"] = {"listChanged": notifies}
        if (self._completions or self._offers_choices()) and lifecycle.at_least(
            version, lifecycle.COMPLETIONS_CAPABILITY
        ):
            caps["completions"] = {}
        # 2026-07-28: listChanged and subscribe keep their meaning; the notifications they promise
        # travel on subscriptions/listen streams (mcp_ref.server.subscriptions).
        if self._extensions:
            from .seams import declare

            declare(self._extensions, version, caller, caps)
        return caps

    def offers(self, capability: str, version: str | None = None) -> bool:
        """True when :meth:`capabilities` at ``version`` declares ``capability`` (without building them)."""
        if capability == "tools":
            return bool(self._tools)
        if capability == "resources":
            return bool(self.resource_table)
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
        is called now, and from now on the server asks it what it adds.  Returns it.  ValueError
        (after ``setup``; it is not taken) if it declares a capability key another extension
        declares (:func:`~mcp_ref.server.seams.check_declarations`, asked by ``hooks_of``).

        Add extensions before serving over HTTP: an application takes the HTTP middleware of the
        extensions the server has when it is made."""
        with self._registry_lock:
            if any(installed is extension for installed in self._extensions):
                return extension
            extension.setup(self)
            from .seams import hooks_of  # where extensions plug in: loaded with the first one

            extensions = [*self._extensions, extension]
            self.request_hooks, self.tool_call_hooks, self._context_attributes = hooks_of(
                extensions
            )
            # The list first, then a new cache: see seams.extension_method.
            self._extensions = extensions
            self._methods = {}
        return extension

    @property
    def gate(self) -> Gate:
        """Which items each principal may see and use (:class:`~mcp_ref.server.seams.Gate`): the first
        extension's that has one, else every item to everyone (:data:`~mcp_ref.server.connection.OPEN`)."""
        for extension in self._extensions:  # read for every call: one read of each gate
            gate = extension.gate
            if gate is not None:
                return gate
        return OPEN

    def extension_method(self, method: str, version: str | None) -> Handler | None:
        """The handler an extension gives ``method`` at ``version`` (the first added wins), or None."""
        from .seams import extension_method  # asked only for a method the protocol has not

        # the cache read before the extensions: see seams.extension_method
        return extension_method(self._methods, self._extensions, method, version)

    def context_attribute(self, name: str) -> Callable[[Any], Any] | None:
        """What gives ``ctx.<name>`` when an extension adds it to a handler's ``Context`` (else
        ``ctx.start_task``, ``ctx.in_task`` of a server without tasks: the shorthand's), or None."""
        from .shorthand import context_attribute

        return context_attribute(self._context_attributes, name)

    # -- the lifespan (mcp_ref.server.lifespan: when it is entered and exited) -----------------------

    @property
    def lifespan_context(self) -> Any:
        """What ``Server(lifespan=fn)``'s context manager gave, while it is entered; else None."""
        return None if self.lifespan_state is None else self.lifespan_state.value

    def enter_lifespan(self) -> Any:
        """Enter ``Server(lifespan=...)`` unless entered (serving does, at its start); its value, or None."""
        return None if self.lifespan_state is None else self.lifespan_state.enter()

    def exit_lifespan(self) -> None:
        """Exit ``Server(lifespan=...)`` if it is entered (the end of ``run()``, ``app.close()``)."""
        if self.lifespan_state is not None:
            self.lifespan_state.exit()

    # -- connections ------------------------------------------------------------------------------

    def new_connection(self, transport, **session_options) -> ServerConnection:
        """A connection serving this server on ``transport``: not started, and not yet told of changes.

        For transports that feed the session themselves (HTTP); see :meth:`connect`
        for the usual path.  ``session_options`` are :class:`~mcp_ref.session.Session`'s.
        It does not enter the server's lifespan: the caller holds it (:meth:`connect` and a WSGI app
        as serving, ``Client.in_memory`` as a client; :mod:`mcp_ref.server.lifespan`).
        """
        self._served = True
        return ServerConnection(self, transport, **session_options)

    def serves(self) -> None:
        """Mark the end of this process's start (an HTTP application is made for this server, or a first
        connection): a tool, prompt or resource registered from now on is announced as a change, to
        every worker's clients when the state is shared; what was registered before is not."""
        self._served = True

    def add_connection(self, connection: ServerConnection) -> None:
        """Send ``connection`` list-changed and resource-updated notifications from now on (held weakly).

        With a shared state (``Server(state=...)``), the first connection makes this process hear the
        deployment's changes (:meth:`~mcp_ref.state.changes.Changes.relay_in_use`), so that a change
        made on another worker reaches it too."""
        self._connections.add(connection)
        if self.shared_state is not None:
            self._changes_of().relay_in_use()

    def remove_connection(self, connection: ServerConnection) -> None:
        """Send ``connection`` no more change notifications (another process sends them now)."""
        self._connections.discard(connection)

    def connections(self) -> list[ServerConnection]:
        """The connections that receive list-changed and resource-updated notifications."""
        return list(self._connections)

    def connect(self, transport, *, peer: str | None = None, **session_options) -> ServerConnection:
        """Serve one connection on ``transport``; returns it (its reader thread is running).

        ``peer`` names the caller when no token does (``ctx.principal.id``; default ``connection-<n>``).
        The lower-level call to build your own serving from: it enters the server's lifespan unless
        it is entered, and holds it as serving does, until :meth:`exit_lifespan` (``run_stdio()``
        calls that as it returns); a connection's end does not exit it.
        """
        self.enter_lifespan()
        connection = self.new_connection(transport, **session_options)
        connection.peer = peer
        self.add_connection(connection)
        connection.session.start()
        return connection

    # -- change notifications (mcp_ref.state.changes: to this process's listeners, or the relay) --

    def _changes_of(self) -> Changes:
        """Where this server's changes go, made on first use: a server that registers everything
        before it serves, and never updates a resource, never loads :mod:`mcp_ref.state.changes`."""
        if self._changes is None:
            from ..state.changes import Changes

            with self._registry_lock:
                if self._changes is None:
                    self._changes = Changes(self, lambda: self._subscriptions)
        return self._changes

    def _listeners(self, kind: str, name: str) -> tuple | None:
        """Who is told that item ``name`` of ``kind`` changed (asked before a removal):
        :meth:`Changes.listeners <mcp_ref.state.changes.Changes.listeners>`.  None during this
        process's start (a worker's tools, at import): nobody is told, and no relay is made."""
        return self._changes_of().listeners(kind, name) if self._served else None

    def _announce(self, kind: str, listeners: tuple | None) -> None:
        """``notifications/{kind}/list_changed`` to ``listeners`` (:meth:`_listeners`), or on the relay."""
        if listeners is not None:
            self._changes_of().announce(kind, listeners)

    def notify_resource_updated(self, uri: str) -> None:
        """Send ``notifications/resources/updated`` to every client subscribed to ``uri`` (handshake-era
        ``resources/subscribe``, 2026-07-28 listen streams); with ``resource_update_interval``, once
        per interval (:class:`~mcp_ref.extensions.policy.UpdateCoalescer`)."""
        self._changes_of().resource_updated(uri, self._shorthand)

    # -- serving ----------------------------------------------------------------------------------

    def run(
        self,
        transport: str = "stdio",
        *,
        host: str | None = None,
        port: int | None = None,
        **options,
    ) -> None:
        """Serve until stopped: ``run()`` on stdio, ``run(transport="http", host=, port=)`` over HTTP.

        As ``FastMCP.run`` does.  ``transport`` is one of:

        * ``"stdio"`` (the default): :meth:`run_stdio`, this process's stdin and stdout;
        * ``"streamable-http"`` (or ``"http"``) and ``"sse"``: both run :meth:`run_http`, which
          serves Streamable HTTP at ``/mcp`` and the 2024-11-05 HTTP+SSE transport at ``/sse``
          from one server; the name only chooses which address is announced on stderr.

        Any other name is a ValueError.  ``mcp-ref run server.py [--http HOST:PORT]`` serves a
        file's server without this call (``docs/command-line.md``).
        ``options`` go to :meth:`run_stdio` or :meth:`run_http`; FastMCP's names for them
        (``stateless_http=``, ``log_level=``, ``path=`` ...) are taken too, or refused with a
        TypeError naming mcp_ref's (:mod:`mcp_ref.server.fastmcp_names`).  From the environment
        (:mod:`mcp_ref.server.settings`): ``MCP_REF_HOST`` / ``MCP_REF_PORT`` (default 127.0.0.1:8000),
        and ``MCP_REF_LOG_LEVEL``, mcp_ref's own log records on stderr from that level.
        """
        if transport == "stdio" and not options and not os.environ.get("MCP_REF_LOG_LEVEL"):
            self.run_stdio()
        else:  # settings.LOG_LEVEL_ENV, options, HTTP: loaded only then
            from .running import run_configured

            run_configured(self, transport, host, port, options)

    def run_stdio(self, *, max_message_size: int | None = None) -> None:
        """Serve one client on this process's stdin/stdout until stdin ends.

        Logs go to stderr; ``print()`` in a handler is redirected to stderr so
        stdout carries only protocol messages.  On end of input, the requests
        already received have ``session.ENDING_GRACE`` (1 s) to be answered; then those still
        running are cancelled and those not started never run.  A handler still running is waited
        for, and an answer it still gives is sent.  Then the lifespan is exited, this process's
        descriptors and ``sys.stderr`` are as they were (:func:`mcp_ref.stdio.server_streams`;
        ``sys.stdout`` stays pointed at stderr; ``sys.stderr`` stays the one whose writes never
        wait when some of it was dropped, unread) and this returns, or raises.  Streams put in place of
        ``sys.stdin`` and ``sys.stdout`` (an in-process test) are served as they are.
        """
        from ..stdio import DEFAULT_MAX_MESSAGE_SIZE, StreamTransport, server_streams

        with server_streams() as (reader, writer):  # restored when it ends
            transport = StreamTransport(
                reader, writer, max_message_size=max_message_size or DEFAULT_MAX_MESSAGE_SIZE
            )
            connection = self.connect(transport, name=f"{self.name}-stdio", peer="stdio")
            try:  # connect entered the lifespan
                while not connection.session.wait_closed(1.0):
                    pass
            finally:
                self.exit_lifespan()

    def wsgi_app(self, **options: Any) -> Any:
        """This server as a WSGI application (Streamable HTTP at ``/mcp``, HTTP+SSE at ``/sse``):
        options are :class:`~mcp_ref.http.server.McpWsgiApp`'s (``path``, ``stateless``,
        ``allowed_hosts``, ``auth``: the OAuth resource server ...).  Mount it anywhere WSGI runs
        (gunicorn, Flask, Django), or :meth:`run_http`; its ``close()`` exits the lifespan."""
        from ..http.server.serving import wsgi_app  # serving over HTTP: loaded only then

        return wsgi_app(self, **options)

    def http_server(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        connection_limits: Any = None,
        **options: Any,
    ) -> Any:
        """A standard-library HTTP server for :meth:`wsgi_app`, bound but not serving yet (port 0: a
        free one; ``.port``, ``.url``): call ``serve_forever()`` and ``shutdown()``.
        ``connection_limits`` (:class:`~mcp_ref.http.wsgi_server.ConnectionLimits`) bounds its
        connections; the other options are :meth:`wsgi_app`'s."""
        from ..http.server.serving import http_server

        return http_server(self, host, port, connection_limits=connection_limits, **options)

    def run_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        on_ready: Callable | None = None,
        **options: Any,
    ) -> None:
        """Serve over HTTP on the standard library until interrupted (127.0.0.1 by default): the
        lifespan entered, :meth:`http_server` bound, ``on_ready(httpd)`` called (default: a line on
        stderr saying ``httpd.url``), then served; the options are :meth:`http_server`'s."""
        from ..http.server.serving import run_http

        run_http(self, host, port, on_ready=on_ready, **options)

    # -- the shorthand (mcp_ref.server.shorthand: the keywords that build the project's extensions) --

    def _shorthand_of(self) -> Shorthand:
        """What the shorthand keeps for this server, made when a shorthand keyword or member is
        first used (a plain server never loads :mod:`mcp_ref.server.shorthand`)."""
        if self._shorthand is None:
            from .shorthand import Shorthand

            with self._registry_lock:
                if self._shorthand is None:
                    self._shorthand = Shorthand(self, self._registry_lock)
        return self._shorthand

    def _item_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """An item's options for extensions (``@server.tool(task=..., rate_limit=...)``), checked,
        with the extensions they need added."""
        return self._shorthand_of().take_options(options) if options else {}

    @property
    def shared_state(self) -> Any:
        """The deployment's :class:`~mcp_ref.state.stores.State` when one was chosen (``state=`` or
        ``MCP_REF_STATE``), else None: every store is this process's own, made in memory."""
        return None if self._shorthand is None else self._shorthand.shared_state()

    def shared_store(self, kind: str) -> Any:
        """The chosen state's store of ``kind`` (``"buckets"``, ``"counters"``, ``"task_records"``,
        ``"bus"``), or None: an extension makes its own in memory (``Extension.setup`` asks)."""
        state = self.shared_state
        return None if state is None else getattr(state, kind)()

    @property
    def policy(self) -> Any:
        """Who may see and call what, and how often (:class:`~mcp_ref.extensions.policy.Policy`; added on first use)."""
        return self._shorthand_of().build("limits")

    @property
    def tasks(self) -> Any:
        """The store (:class:`~mcp_ref.extensions.tasks.TaskStore`) of the tasks extensions, both protocols,
        added on first use; replace it to change its bounds (``server.tasks = TaskStore(max_tasks=...)``)."""
        return self._shorthand_of().build("tasks").store

    @tasks.setter
    def tasks(self, store: Any) -> None:
        self._shorthand_of().build("tasks").store = store

    @property
    def bus(self) -> Any:
        """The change bus (:class:`~mcp_ref.state.stores.Bus`; made when first asked for: the
        shared state's, or one in memory): the server publishes each change on it, and this
        process's connections and listen streams hear it (:mod:`mcp_ref.state.changes`).  Set it to
        relay the changes through another (tests: two servers on one bus)."""
        return self._changes_of().relay_on_bus().bus

    @bus.setter
    def bus(self, channel: Any) -> None:
        self._changes_of().relay_through(channel)

    def subscription_cap(self) -> Any:
        """What bounds the resources one principal is subscribed to (``max_subscribed_resources``:
        the policy extension, made now if need be, with ``subscription_lock`` and
        ``check_subscriptions``), or None."""
        return self._shorthand_of().subscription_cap()

    def add_file_root(
        self,
        root: str,
        *,
        uri_prefix: str | None = None,
        name: str | None = None,
        max_file_size: int | None = None,
        allow_hidden: bool = False,
        follow_links: bool = False,
    ) -> str:
        """Serve every file under directory ``root`` as a resource, confined to that directory: a
        :class:`~mcp_ref.extensions.files.FileRootExtension` (see it for the options).  Returns the URI
        template registered."""
        from .shorthand import add_file_root

        return add_file_root(
            self,
            root,
            uri_prefix,
            name=name,
            max_file_size=max_file_size,
            allow_hidden=allow_hidden,
            follow_links=follow_links,
        )
