"""FastMCP's names, and mcp_ref's for the same things: one table, read when a name is not mcp_ref's.

A server written for FastMCP 2.x (``from fastmcp import FastMCP``) or for the official SDK's
``mcp.server.fastmcp.FastMCP`` runs on :class:`~mcp_ref.server.Server` with its import line changed
(docs/porting-from-fastmcp.md).  A keyword or member it uses that mcp_ref names otherwise arrives
here: the constructor's (``Server("x", log_level=..., stateless_http=True, host=, port=)``), an
item's (``@server.tool(tags={...})``), ``run()``'s (``run(transport="http", stateless_http=True)``)
and a missing attribute (``mcp.settings``, ``ctx.session``).  Each is taken when its meaning maps
onto mcp_ref's, else refused: a TypeError (AttributeError for a member) whose message names
mcp_ref's equivalent.  A name in none of the tables is refused as Python refuses it.

Loaded only then: a server that uses mcp_ref's own names never loads this module.
"""

from __future__ import annotations

import logging
from typing import Any

#: FastMCP's options of the HTTP transport (constructor or ``run()``) and mcp_ref's names for them:
#: options of :class:`~mcp_ref.http.server.McpWsgiApp` (``Server.wsgi_app``, ``run_http``).
APP_OPTIONS = {
    "stateless_http": "stateless",
    "json_response": "json_response",
    "streamable_http_path": "path",
    "sse_path": "sse_path",
    "message_path": "messages_path",
    "retry_interval": "retry_ms",
}

#: Keywords taken and not used: what they configure has no counterpart to configure in mcp_ref.
NOT_USED = {
    "dependencies": "the packages `fastmcp install` puts in an environment; mcp_ref installs nothing",
    "include_fastmcp_meta": "mcp_ref adds no FastMCP-specific _meta to what it lists",
    "show_banner": "mcp_ref prints one line on stderr when serving over HTTP, nothing over stdio",
}

#: Keywords taken only with these values: the ones that ask for what mcp_ref does anyway.  Any
#: other value is refused with the keyword's :data:`EQUIVALENTS` text.
SAME_AS_OURS: dict[str, tuple[Any, ...]] = {
    "debug": (False,),
    "mask_error_details": (True,),
    "warn_on_duplicate_tools": (True,),
    "warn_on_duplicate_resources": (True,),
    "warn_on_duplicate_prompts": (True,),
    "on_duplicate_tools": ("warn", "replace"),
    "on_duplicate_resources": ("warn", "replace"),
    "on_duplicate_prompts": ("warn", "replace"),
    "enabled": (True,),
    "structured_output": (None, True),
}

_DUPLICATES = (
    "a name registered twice warns (UserWarning) and the later registration replaces the earlier; "
    "to refuse or keep the first, look before registering (server.get_tool(name), "
    "server.get_prompt(name), server.find_resource(uri))"
)
_AUTH = (
    "wsgi_app(auth=ProtectedResource(...)) (or run(transport='http', auth=...)) makes the server "
    "an OAuth protected resource (mcp_ref.oauth.resource; spec_notes/authorization.md)"
)
_ASYNC = (
    "mcp_ref is synchronous: server.run(...) blocks until stopped; run it on a thread of your own "
    "to do something else meanwhile"
)
_LISTS = (
    "server.registered_tools(), server.get_tool(name), server.listings('resources' | 'templates' "
    "| 'prompts'), server.get_prompt(name); to call them as a client would, "
    "Client.in_memory(server)"
)
_APPS = (
    "server.wsgi_app(): one WSGI application serving Streamable HTTP at /mcp and HTTP+SSE at /sse "
    "(mount it in Flask, Django, gunicorn, or an ASGI app through a WSGI adapter); "
    "server.run_http(host, port) serves it on the standard library"
)

#: What mcp_ref offers instead of each FastMCP name it does not take (or takes only with the values
#: of :data:`SAME_AS_OURS`): the constructor's keywords, an item's options, ``run()``'s keywords, a
#: server's members and a ``Context``'s members (these last two under their own names).
EQUIVALENTS = {
    # the constructor
    "debug": "mcp_ref never sends a traceback to a client; log_level='DEBUG' (or the environment "
    "variable MCP_REF_LOG_LEVEL=debug) writes mcp_ref's log records, tracebacks included, to stderr",
    "mask_error_details": "mcp_ref always masks an unexpected exception ('Tool NAME failed with an "
    "internal error'; the traceback goes to the server's log); raise ToolError(message) "
    "(from mcp_ref import ToolError) for an error the client should read",
    "warn_on_duplicate_tools": _DUPLICATES,
    "warn_on_duplicate_resources": _DUPLICATES,
    "warn_on_duplicate_prompts": _DUPLICATES,
    "on_duplicate_tools": _DUPLICATES,
    "on_duplicate_resources": _DUPLICATES,
    "on_duplicate_prompts": _DUPLICATES,
    "auth": _AUTH,
    "auth_server_provider": _AUTH + "; mcp_ref is no authorization server",
    "token_verifier": _AUTH,
    "transport_security": "wsgi_app(allowed_hosts=[...], allowed_origins=[...]) (or the same "
    "keywords to run(transport='http'))",
    "mount_path": "mount server.wsgi_app() where you like; its path= option places the endpoint",
    "event_store": "wsgi_app(event_store=...) takes an mcp_ref event store "
    "(mcp_ref.http.server.events); FastMCP's are asynchronous objects it cannot use",
    "icons": "icons= of each tool, resource and prompt; the server's own serverInfo has "
    "website_url= but no icons",
    "include_tags": "mcp_ref does not filter by tags: Server(authorize=fn) hides items per "
    "caller, server.remove_tool(name) removes one",
    "exclude_tags": "mcp_ref does not filter by tags: Server(authorize=fn) hides items per "
    "caller, server.remove_tool(name) removes one",
    "middleware": "an Extension (mcp_ref.extension.Extension: intercept_request, "
    "intercept_tool_call), given as Server(extensions=[...]) (docs/extensions.md)",
    "tool_serializer": "return a str (or TextContent) formatted as you like; a dict, list, "
    "dataclass or pydantic model is sent as JSON text and structuredContent",
    "resource_prefix_format": "mcp_ref does not mount one server in another: register every "
    "tool, resource and prompt on one Server",
    "sampling_handler": "the client answers sampling (ctx.sample); mcp_ref has no fallback on "
    "the server",
    # an item's options (@server.tool / @server.resource / @server.prompt)
    "enabled": "register the item when it should be offered, server.remove_tool(name) "
    "(remove_prompt, remove_resource) when it should not",
    "structured_output": "structuredContent is sent when the return annotation has a JSON form "
    "(a dict, a dataclass, a TypedDict, a pydantic model; a plain value as {'result': ...}); "
    "annotate the function -> str, or leave the annotation out, for text content only",
    "exclude_args": "a parameter annotated Context is never an argument; for another, leave it "
    "out of the signature and bind it yourself (functools.partial, a closure)",
    "serializer": "return a str (or TextContent) formatted as you like",
    # run()
    "uvicorn_config": "mcp_ref serves on the standard library: run(transport='http', "
    "connection_limits=ConnectionLimits(...)) bounds it, or serve server.wsgi_app() with "
    "gunicorn or any WSGI server",
    # a server's members
    "settings": "mcp_ref keeps no settings object: give host=, port=, stateless_http=, log_level= "
    "to the constructor or to run(), or set the environment variables MCP_REF_HOST, "
    "MCP_REF_PORT, MCP_REF_LOG_LEVEL",
    "custom_route": "server.wsgi_app() is a WSGI application: route your own paths beside it "
    "(Flask, Django, a WSGI dispatcher) and hand it the rest",
    "streamable_http_app": _APPS,
    "sse_app": _APPS,
    "http_app": _APPS,
    "mount": "mcp_ref does not mount one server in another: register every tool, resource and "
    "prompt on one Server",
    "import_server": "mcp_ref does not import one server into another: register every tool, "
    "resource and prompt on one Server",
    "as_proxy": "mcp_ref.proxy_server(target): a Server in front of any server, of any era "
    "(docs/proxy.md; on the command line, mcp-ref proxy)",
    "add_middleware": "server.add_extension(Extension) (mcp_ref.extension.Extension: "
    "intercept_request, intercept_tool_call; docs/extensions.md)",
    "run_async": _ASYNC,
    "run_stdio_async": _ASYNC,
    "run_http_async": _ASYNC,
    "run_sse_async": _ASYNC,
    "run_streamable_http_async": _ASYNC,
    "get_tools": _LISTS,
    "list_tools": _LISTS,
    "get_resources": _LISTS,
    "list_resources": _LISTS,
    "get_resource_templates": _LISTS,
    "list_resource_templates": _LISTS,
    "get_prompts": _LISTS,
    "list_prompts": _LISTS,
    "call_tool": _LISTS,
    "read_resource": _LISTS,
    "dependencies": "mcp_ref installs nothing: list the packages in your project's requirements",
    # a Context's members
    "fastmcp": "ctx.connection.server (the Server serving this request)",
    "session": "ctx.sample(...), ctx.elicit(...), ctx.list_roots() ask the client; "
    "ctx.connection is this client's connection",
    "request_context": "mcp_ref puts its parts on ctx: ctx.request_id, ctx.lifespan_context, "
    "ctx.client_info, ctx.client_capabilities, ctx.principal, ctx.http",
    "client_id": "ctx.client_info (the client's name and version), ctx.principal.id (who calls)",
    "session_id": "ctx.principal.id names the caller; over Streamable HTTP the session's id is "
    "the Mcp-Session-Id header of the request (ctx.http.headers)",
    "get_state": "keep what a request needs in local variables, and what outlives it in the "
    "lifespan's context (ctx.lifespan_context)",
    "set_state": "keep what a request needs in local variables, and what outlives it in the "
    "lifespan's context (ctx.lifespan_context)",
    "get_http_request": "ctx.http (headers, cookies, remote_addr, environ; None off HTTP)",
    "send_tool_list_changed": "server.add_tool / remove_tool announce the change themselves",
    "send_resource_list_changed": "server.add_resource / remove_resource announce the change "
    "themselves",
    "send_prompt_list_changed": "server.add_prompt / remove_prompt announce the change themselves",
}


def refusal(where: str, name: str, value: Any = None) -> TypeError:
    """The TypeError refusing FastMCP's keyword ``name`` given to ``where`` (``"Server()"``,
    ``"@server.tool()"``, ``"run()"``), naming mcp_ref's equivalent when the table has one."""
    given = f"{name}={value!r}" if name in SAME_AS_OURS else name
    equivalent = EQUIVALENTS.get(name)
    if equivalent is None:
        return TypeError(f"{where} got an unexpected keyword argument {name!r}")
    return TypeError(f"{where} does not take FastMCP's {given}; mcp_ref's equivalent: {equivalent}")


def _same_as_ours(where: str, name: str, value: Any) -> None:
    """Take ``name=value`` if it asks for what mcp_ref does anyway, else refuse it."""
    if value not in SAME_AS_OURS[name]:
        raise refusal(where, name, value)


def take_constructor_keywords(server: Any, keywords: dict[str, Any]) -> None:
    """Take ``Server(...)``'s keywords that are FastMCP's (``log_level``, ``host``, ``port``,
    ``stateless_http`` and the other :data:`APP_OPTIONS`, ``tools``, :data:`NOT_USED`,
    :data:`SAME_AS_OURS`, and any of :data:`EQUIVALENTS` given None, FastMCP's default: nothing
    asked for), or raise the TypeError naming mcp_ref's equivalent.  Checked all before any is
    applied: a refused keyword leaves nothing half done."""
    where = "Server()"
    http_defaults = dict(server.http_defaults)
    for name, value in sorted(keywords.items()):
        if name in ("host", "port"):
            http_defaults[name] = value
        elif name in APP_OPTIONS:
            http_defaults[APP_OPTIONS[name]] = value
        elif name in SAME_AS_OURS:
            _same_as_ours(where, name, value)
        elif value is None and name in EQUIVALENTS:
            continue  # FastMCP's default (auth=None ...): it asks for nothing
        elif name not in NOT_USED and name not in ("log_level", "tools"):
            raise refusal(where, name)
    level = keywords.get("log_level")
    if level is not None:
        log_at(level, where)
    server.http_defaults = http_defaults
    for tool in keywords.get("tools") or ():
        server.add_tool(tool)


def log_at(level: Any, where: str) -> None:
    """FastMCP's ``log_level``: mcp_ref's own log records (the ``mcp_ref`` logger) at ``level``
    (a name, either case, or a number) and above, written to stderr."""
    from .settings import PYTHON_LEVELS, log_to_stderr

    if isinstance(level, str):
        number = PYTHON_LEVELS.get(level.strip().lower())
        if number is None:
            raise ValueError(
                f"{where}: log_level must be one of {', '.join(PYTHON_LEVELS)}, not {level!r}"
            )
        level = number
    log_to_stderr(int(level or logging.NOTSET))


def take_item_options(where: str, options: dict[str, Any]) -> dict[str, Any]:
    """An item's options less FastMCP's: ``tags`` kept (a frozenset, ``server.get_tool(name).options
    ["tags"]``: for your own code, an ``authorize`` function say; mcp_ref filters nothing by them),
    :data:`SAME_AS_OURS` dropped, any other refused with its equivalent.  The rest are mcp_ref's
    own item options, returned for the caller to check."""
    rest = {}
    for name, value in options.items():
        if name == "tags":
            rest[name] = frozenset(value or ())
        elif name in SAME_AS_OURS:
            _same_as_ours(where, name, value)
        elif name in EQUIVALENTS:
            # None, FastMCP's default (exclude_args=None ...), asks for nothing
            if value is not None:
                raise refusal(where, name)
        else:
            rest[name] = value
    return rest


def take_run_options(options: dict[str, Any]) -> dict[str, Any]:
    """``run()``'s keywords with FastMCP's translated: :data:`APP_OPTIONS` renamed, ``log_level``
    applied, :data:`NOT_USED` dropped, the refused ones (``uvicorn_config`` ...) raised as the
    TypeError naming mcp_ref's equivalent.  The rest are returned unchanged."""
    taken = {}
    for name, value in options.items():
        if name in APP_OPTIONS:
            taken[APP_OPTIONS[name]] = value
        elif name == "log_level":
            if value is not None:
                log_at(value, "run()")
        elif name in NOT_USED or (value is None and name in EQUIVALENTS):
            continue  # nothing to do, or FastMCP's default (uvicorn_config=None ...)
        elif name in EQUIVALENTS or name in SAME_AS_OURS:
            raise refusal("run()", name, value)
        else:
            taken[name] = value
    return taken


def missing_attribute(owner: Any, name: str) -> AttributeError:
    """The AttributeError for ``owner.name`` that does not exist (a ``Server``, a ``Context``),
    naming mcp_ref's equivalent when ``name`` is FastMCP's."""
    kind = type(owner).__name__
    equivalent = None if name.startswith("_") else EQUIVALENTS.get(name)
    if equivalent is None:
        return AttributeError(f"{kind!r} object has no attribute {name!r}")
    return AttributeError(
        f"{kind!r} object has no attribute {name!r} (FastMCP's); mcp_ref's equivalent: {equivalent}"
    )
