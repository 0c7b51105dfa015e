"""The server role: register plain functions as tools, resources and prompts.

::

    server = Server("demo", version="1.0")

    @server.tool()
    def add(a: int, b: int) -> int:
        \"\"\"Add two numbers.\"\"\"
        return a + b

    server.run_stdio()

A :class:`Server` holds what is registered; each connection gets a
:class:`ServerConnection` (the session's dispatcher) holding what was
negotiated: protocol version, the client's capabilities, log level and
resource subscriptions.  Handlers that declare a parameter annotated
:class:`Context` receive one, to report progress, log, notice cancellation and
call back into the client (sampling, elicitation, roots).
"""

from __future__ import annotations

import base64
import json
import logging
import re
import sys
import threading
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from . import lifecycle
from .errors import (
    CapabilityError,
    InvalidParams,
    InvalidRequest,
    McpError,
    MethodNotFound,
    RequestCancelled,
    ResourceNotFound,
)
from .pagination import InvalidCursor, Paginator
from .session import RequestContext, Session
from .signatures import ArgumentPlan, compile_arguments, output_schema_for, to_jsonable
from .types import (
    BlobResourceContents,
    CallToolResult,
    CreateMessageResult,
    ElicitResult,
    GetPromptResult,
    PromptMessage,
    Root,
    TextResourceContents,
    WireModel,
)
from .uri_template import UriTemplate

log = logging.getLogger(__name__)

#: RFC 5424 severities, in increasing order (2025-11-25 server/utilities/logging §Log Levels).
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_LEVEL_RANK = {name: rank for rank, name in enumerate(LOG_LEVELS)}


class ToolError(Exception):
    """Raise in a tool to report a failure the model should see: an ``isError`` result with this message.

    Any other exception becomes an ``isError`` result with a generic message
    (the details go to the server's log, never to the client).
    """


# -- registrations ---------------------------------------------------------------


@dataclass
class _Tool:
    name: str
    func: Callable
    plan: ArgumentPlan
    listing: dict
    output_schema: dict | None
    _input_validator: Any = None
    _output_validator: Any = None

    def input_validator(self):
        if self._input_validator is None:
            self._input_validator = _validator_for(self.listing["inputSchema"])
        return self._input_validator

    def output_validator(self):
        if self._output_validator is None:
            self._output_validator = _validator_for(self.output_schema)
        return self._output_validator


@dataclass
class _Resource:
    listing: dict
    func: Callable
    plan: ArgumentPlan
    template: UriTemplate | None = None


@dataclass
class _Prompt:
    name: str
    func: Callable
    plan: ArgumentPlan
    listing: dict
    required: tuple
    _validator: Any = None

    def validator(self):
        if self._validator is None:
            self._validator = _validator_for(self.plan.schema)
        return self._validator


def _validator_for(schema: dict):
    """A jsonschema validator for ``schema`` in its declared dialect ($schema), 2020-12 by default.

    2025-11-25 basic §JSON Schema Usage: "Schemas without an explicit
    $schema field MUST conform to JSON Schema 2020-12".
    """
    import jsonschema  # heavy: loaded on first validation

    dialect = schema.get("$schema") if isinstance(schema, dict) else None
    if dialect is not None and jsonschema.validators.validator_for({"$schema": dialect}, default=None) is None:
        # "MUST handle unsupported dialects gracefully by returning an appropriate error".
        raise ValueError(f"unsupported JSON Schema dialect {dialect!r}")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    cls.check_schema(schema)
    return cls(schema)


def _first_error(validator, instance) -> str | None:
    if validator.is_valid(instance):
        return None
    import jsonschema

    error = jsonschema.exceptions.best_match(validator.iter_errors(instance))
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


# -- the handler's view --------------------------------------------------------------


class Context:
    """Given to a handler that declares a parameter annotated ``Context``.

    It reports progress and log messages, tells whether the client cancelled
    the request, and sends requests to the client (sampling, elicitation,
    roots) — waiting for the answer is safe: handlers run on a pool, not on
    the connection's reader thread.
    """

    def __init__(self, connection: "ServerConnection", request: RequestContext):
        self.connection = connection
        self.request = request

    @property
    def request_id(self):
        """The JSON-RPC id of the request being served."""
        return self.request.request_id

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol revision."""
        return self.connection.protocol_version

    @property
    def client_capabilities(self) -> dict:
        """The capabilities the client declared in ``initialize``."""
        return self.connection.client_capabilities

    @property
    def client_info(self) -> dict:
        """The client's ``clientInfo`` (name, version ...)."""
        return self.connection.client_info

    @property
    def is_cancelled(self) -> bool:
        """True once the client cancelled this request."""
        return self.request.is_cancelled

    def check_cancelled(self) -> None:
        """Raise RequestCancelled if the client cancelled this request (no response is then sent)."""
        self.request.check_cancelled()

    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> bool:
        """Send progress for this request (only if the client asked for it by sending a progress token)."""
        return self.request.report_progress(progress, total, message)

    def close_sse_stream(self) -> bool:
        """Over Streamable HTTP, close the connection carrying this request's SSE stream (SSE polling).

        The stream goes on: later messages and the answer wait in the event
        store, and the client resumes with GET + ``Last-Event-ID`` after the
        ``retry`` interval.  False when there is no such stream (stdio, JSON
        replies, the legacy transport).  See ``McpWsgiApp(inline_handlers=...)``.
        """
        close = getattr(self.connection.session.transport, "close_stream", None)
        return bool(close and close(self.request_id))

    def log(self, level: str, data: Any, logger: str | None = None) -> bool:
        """Send a ``notifications/message`` if ``level`` passes the client's ``logging/setLevel``."""
        return self.connection.log(level, data, logger, related_request_id=self.request_id)

    def debug(self, data: Any, logger: str | None = None) -> bool:
        """``log("debug", ...)``."""
        return self.log("debug", data, logger)

    def info(self, data: Any, logger: str | None = None) -> bool:
        """``log("info", ...)``."""
        return self.log("info", data, logger)

    def warning(self, data: Any, logger: str | None = None) -> bool:
        """``log("warning", ...)``."""
        return self.log("warning", data, logger)

    def error(self, data: Any, logger: str | None = None) -> bool:
        """``log("error", ...)``."""
        return self.log("error", data, logger)

    def sample(
        self,
        messages: str | list,
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        model_preferences: dict | None = None,
        include_context: str | None = None,
        metadata: dict | None = None,
        tools: list | None = None,
        tool_choice: dict | None = None,
        timeout: float | None | type(...) = ...,
    ) -> CreateMessageResult:
        """Ask the client's LLM for a completion (``sampling/createMessage``).

        ``messages`` is a string (one user message) or a list of
        ``{"role", "content"}`` dicts / SamplingMessage objects.  ``tools`` and
        ``tool_choice`` (2025-11-25) need the client's ``sampling.tools``.
        """
        sampling = self.connection.require_client_capability("sampling", "sampling/createMessage")
        if tools is not None or tool_choice is not None:
            # 2025-11-25 client/sampling: servers MUST NOT send tools unless the client declared sampling.tools.
            if not lifecycle.at_least(self.connection.protocol_version, lifecycle.SAMPLING_TOOLS) or "tools" not in sampling:
                raise CapabilityError("sampling/createMessage: the client did not declare sampling.tools")
        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        params: dict[str, Any] = {
            "messages": [m.to_wire() if isinstance(m, WireModel) else m for m in messages],
            "maxTokens": max_tokens,
        }
        for key, value in (
            ("systemPrompt", system_prompt), ("temperature", temperature), ("stopSequences", stop_sequences),
            ("modelPreferences", model_preferences), ("includeContext", include_context), ("metadata", metadata),
            ("tools", [t.to_wire() if isinstance(t, WireModel) else t for t in tools] if tools is not None else None),
            ("toolChoice", tool_choice),
        ):
            if value is not None:
                params[key] = value
        result = self.connection.request("sampling/createMessage", params, timeout=timeout, related_request_id=self.request_id)
        return CreateMessageResult.from_wire(result)

    def elicit(self, message: str, schema: dict, *, timeout: float | None | type(...) = ...) -> ElicitResult:
        """Ask the user for structured input (form-mode ``elicitation/create``, 2025-06-18 and later).

        ``schema`` is a flat object schema of primitive properties.  Accepted
        content is validated against it; a reply that does not match raises
        InvalidParams.
        """
        version = self.connection.protocol_version
        if not lifecycle.at_least(version, lifecycle.ELICITATION):
            raise CapabilityError(f"elicitation does not exist in protocol version {version}")
        caps = self.connection.require_client_capability("elicitation", "elicitation/create")
        if lifecycle.at_least(version, lifecycle.ELICITATION_URL_MODE) and caps and "form" not in caps:
            # 2025-11-25 client/elicitation: an empty object means form mode only; otherwise "form" must be listed.
            raise CapabilityError("the client did not declare form-mode elicitation")
        params: dict[str, Any] = {"message": message, "requestedSchema": schema}
        if lifecycle.at_least(version, lifecycle.ELICITATION_URL_MODE):
            params["mode"] = "form"
        result = ElicitResult.from_wire(self.connection.request("elicitation/create", params, timeout=timeout,
                                                                related_request_id=self.request_id))
        if result.action == "accept" and result.content is not None:
            problem = _first_error(_validator_for(schema), result.content)
            if problem:
                raise InvalidParams(f"elicitation reply does not match the requested schema: {problem}")
        return result

    def elicit_url(self, message: str, url: str, elicitation_id: str, *, timeout: float | None | type(...) = ...) -> ElicitResult:
        """Send the user to a URL (URL-mode elicitation, 2025-11-25 and later)."""
        version = self.connection.protocol_version
        if not lifecycle.at_least(version, lifecycle.ELICITATION_URL_MODE):
            raise CapabilityError(f"URL-mode elicitation does not exist in protocol version {version}")
        caps = self.connection.require_client_capability("elicitation", "elicitation/create")
        if "url" not in (caps or {}):
            raise CapabilityError("the client did not declare URL-mode elicitation")
        params = {"mode": "url", "message": message, "url": url, "elicitationId": elicitation_id}
        return ElicitResult.from_wire(self.connection.request("elicitation/create", params, timeout=timeout,
                                                              related_request_id=self.request_id))

    def complete_url_elicitation(self, elicitation_id: str) -> None:
        """Tell the client a URL-mode elicitation finished (``notifications/elicitation/complete``, 2025-11-25)."""
        if not lifecycle.at_least(self.connection.protocol_version, lifecycle.ELICITATION_URL_MODE):
            raise CapabilityError(f"URL-mode elicitation does not exist in protocol version {self.connection.protocol_version}")
        self.connection.notify("notifications/elicitation/complete", {"elicitationId": elicitation_id})

    def list_roots(self, *, timeout: float | None | type(...) = ...) -> list[Root]:
        """The client's roots (``roots/list``)."""
        self.connection.require_client_capability("roots", "roots/list")
        result = self.connection.request("roots/list", None, timeout=timeout, related_request_id=self.request_id)
        return [Root.from_wire(r) for r in result.get("roots", [])]


# -- the server ------------------------------------------------------------------------


class Server:
    """An MCP server: what it offers, and how to serve it.

    ``instructions`` is sent to clients in the initialize result.
    ``page_size`` is the number of items per page of every listing.
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
    ):
        self.name = name
        self.version = version
        self.title = title
        self.instructions = instructions
        self.website_url = website_url
        self.paginator = Paginator(page_size=page_size)
        self._tools: dict[str, _Tool] = {}
        self._resources: dict[str, _Resource] = {}
        self._templates: list[_Resource] = []
        self._resource_lists: list[Callable[[], Iterable[dict]]] = []
        self._prompts: dict[str, _Prompt] = {}
        self._completions: dict[tuple[str, str], Callable] = {}
        self._connections: "weakref.WeakSet[ServerConnection]" = weakref.WeakSet()
        self._registry_lock = threading.Lock()
        self.on_roots_list_changed: Callable[["ServerConnection"], None] | None = None

    # -- tools ----------------------------------------------------------------------

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
    ) -> Callable[[Callable], Callable]:
        """Decorator: register a function as a tool.

        The input schema comes from the type hints (or ``input_schema``), the
        description from the docstring (or ``description``).  A return
        annotation that is a dataclass or TypedDict gives an ``outputSchema``
        and the result is also sent as ``structuredContent``.
        """

        def register(func: Callable) -> Callable:
            self.add_tool(
                func, name=name, title=title, description=description, input_schema=input_schema,
                output_schema=output_schema, annotations=annotations, icons=icons, meta=meta,
            )
            return func

        return register

    def add_tool(self, func: Callable, *, name: str | None = None, title: str | None = None,
                 description: str | None = None, input_schema: dict | None = None,
                 output_schema: dict | None = None, annotations: dict | None = None,
                 icons: list | None = None, meta: dict | None = None) -> None:
        """Register ``func`` as a tool (see :meth:`tool`); announces ``tools/list_changed``."""
        plan = compile_arguments(func, skip_types=(Context,))
        name = name or func.__name__
        _check_tool_name(name)
        for label, schema in (("input_schema", input_schema), ("output_schema", output_schema)):
            if schema is not None and (not isinstance(schema, dict) or schema.get("type") != "object"):
                # server/tools §Tool: inputSchema and outputSchema are JSON Schemas of type "object".
                raise ValueError(f"tool {name}: {label} must be a JSON Schema object with \"type\": \"object\"")
        if output_schema is None:
            output_schema = output_schema_for(func)
        listing = _drop_none({
            "name": name,
            "title": title,
            "description": description if description is not None else plan.description,
            "inputSchema": input_schema if input_schema is not None else plan.schema,
            "outputSchema": output_schema,
            "annotations": annotations,
            "icons": icons,
            "_meta": meta,
        })
        tool = _Tool(name, func, plan, listing, output_schema)
        tool.input_validator()  # a schema in an unsupported dialect, or an invalid one, fails here
        if output_schema is not None:
            tool.output_validator()
        with self._registry_lock:
            self._tools[name] = tool
        self._announce("tools")

    def remove_tool(self, name: str) -> None:
        """Unregister a tool; announces ``tools/list_changed``."""
        with self._registry_lock:
            del self._tools[name]
        self._announce("tools")

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
    ) -> Callable[[Callable], Callable]:
        """Decorator: register a resource at ``uri``, or a template if it has ``{variables}``.

        The function returns ``str`` (text), ``bytes`` (sent base64 as a blob),
        a dict/list (sent as JSON text), or contents objects.  For a template
        the URI's variables are passed as keyword arguments.
        """

        def register(func: Callable) -> Callable:
            self.add_resource(func, uri, name=name, title=title, description=description, mime_type=mime_type,
                              size=size, annotations=annotations, icons=icons)
            return func

        return register

    def add_resource(self, func: Callable, uri: str, *, name: str | None = None, title: str | None = None,
                     description: str | None = None, mime_type: str | None = None, size: int | None = None,
                     annotations: dict | None = None, icons: list | None = None) -> None:
        """Register a resource or resource template (see :meth:`resource`)."""
        plan = compile_arguments(func, skip_types=(Context,))
        is_template = UriTemplate.is_template(uri)
        listing = _drop_none({
            "uriTemplate" if is_template else "uri": uri,
            "name": name or func.__name__,
            "title": title,
            "description": description if description is not None else plan.description,
            "mimeType": mime_type,
            "size": None if is_template else size,
            "annotations": annotations,
            "icons": icons,
        })
        with self._registry_lock:
            if is_template:
                template = UriTemplate(uri)
                self._templates = [t for t in self._templates if t.listing["uriTemplate"] != uri]
                self._templates.append(_Resource(listing, func, plan, template))
            else:
                self._resources[uri] = _Resource(listing, func, plan)
        self._announce("resources")

    def remove_resource(self, uri: str) -> None:
        """Unregister a resource or template; announces ``resources/list_changed``."""
        with self._registry_lock:
            if self._resources.pop(uri, None) is None:
                self._templates = [t for t in self._templates if t.listing["uriTemplate"] != uri]
        self._announce("resources")

    def add_file_root(self, root: str, *, uri_prefix: str | None = None, name: str | None = None) -> str:
        """Serve every file under directory ``root`` as a resource, confined to that directory.

        URIs are ``uri_prefix + relative/path`` (default: the directory's
        ``file://`` URI plus ``/``).  Paths that leave the root — ``..``,
        absolute paths, symlinks pointing outside — are refused as not found.
        Returns the URI template registered.
        """
        from .files import FileRoot, PathOutsideRoot, is_text

        files = FileRoot(root)
        prefix = uri_prefix if uri_prefix is not None else files.root.as_uri() + "/"
        template = prefix + "{+path}"

        def read_file(path: str):
            try:
                data, mime_type = files.read(path)
            except (PathOutsideRoot, FileNotFoundError, IsADirectoryError, NotADirectoryError):
                raise ResourceNotFound(f"Resource not found: {prefix}{path}", data={"uri": prefix + path}) from None
            uri = prefix + path
            if is_text(data, mime_type):
                return TextResourceContents(uri=uri, text=data.decode("utf-8", "replace"), mime_type=mime_type)
            return BlobResourceContents(uri=uri, blob=base64.b64encode(data).decode("ascii"), mime_type=mime_type)

        def list_files():
            for relative in files.list():
                yield {"uri": prefix + relative, "name": relative}

        self.add_resource(read_file, template, name=name or f"files under {files.root.name}",
                          description=f"Files under {files.root}")
        with self._registry_lock:
            self._resource_lists.append(list_files)
        return template

    def notify_resource_updated(self, uri: str) -> None:
        """Send ``notifications/resources/updated`` to every client subscribed to ``uri``."""
        for connection in list(self._connections):
            if uri in connection.subscriptions:
                connection.notify("notifications/resources/updated", {"uri": uri})

    # -- prompts -----------------------------------------------------------------------

    def prompt(self, name: str | None = None, *, title: str | None = None, description: str | None = None,
               icons: list | None = None) -> Callable[[Callable], Callable]:
        """Decorator: register a prompt.  Its parameters are the prompt's arguments.

        The function returns a string (one user message), a PromptMessage or
        ``{"role", "content"}`` dict, a list of those, or a GetPromptResult.
        """

        def register(func: Callable) -> Callable:
            self.add_prompt(func, name=name, title=title, description=description, icons=icons)
            return func

        return register

    def add_prompt(self, func: Callable, *, name: str | None = None, title: str | None = None,
                   description: str | None = None, icons: list | None = None) -> None:
        """Register a prompt (see :meth:`prompt`)."""
        plan = compile_arguments(func, skip_types=(Context,))
        name = name or func.__name__
        properties = plan.schema.get("properties", {})
        required = tuple(plan.schema.get("required", ()))
        arguments = [
            _drop_none({"name": arg, "description": spec.get("description"), "required": arg in required})
            for arg, spec in properties.items()
        ]
        listing = _drop_none({
            "name": name,
            "title": title,
            "description": description if description is not None else plan.description,
            "arguments": arguments,
            "icons": icons,
        })
        with self._registry_lock:
            self._prompts[name] = _Prompt(name, func, plan, listing, required)
        self._announce("prompts")

    def remove_prompt(self, name: str) -> None:
        """Unregister a prompt; announces ``prompts/list_changed``."""
        with self._registry_lock:
            del self._prompts[name]
        self._announce("prompts")

    # -- completion ------------------------------------------------------------------------

    def completion(self, *, prompt: str | None = None, resource: str | None = None) -> Callable[[Callable], Callable]:
        """Decorator: complete the arguments of a prompt or the variables of a resource template.

        The function is called as ``func(argument_name, value, context_arguments)``
        and returns a list of candidate strings (at most 100 are sent).
        """
        if (prompt is None) == (resource is None):
            raise TypeError("completion() takes exactly one of prompt= or resource=")
        key = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", resource)

        def register(func: Callable) -> Callable:
            self._completions[key] = func
            return func

        return register

    # -- capabilities and connections -----------------------------------------------------

    def capabilities(self, version: str | None = None) -> dict:
        """The capabilities this server declares at ``version``, derived from what is registered."""
        caps: dict[str, Any] = {"logging": {}}
        if self._tools:
            caps["tools"] = {"listChanged": True}
        if self._resources or self._templates:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if self._prompts:
            caps["prompts"] = {"listChanged": True}
        if self._completions and lifecycle.at_least(version, lifecycle.COMPLETIONS_CAPABILITY):
            caps["completions"] = {}
        return caps

    def server_info(self, version: str | None = None) -> dict:
        """The ``serverInfo`` object for ``version``."""
        info = {"name": self.name, "version": self.version}
        if lifecycle.at_least(version, lifecycle.TITLES):
            if self.title:
                info["title"] = self.title
        if lifecycle.at_least(version, lifecycle.ICONS) and self.website_url:
            info["websiteUrl"] = self.website_url
        return info

    def connect(self, transport, **session_options) -> "ServerConnection":
        """Serve one connection on ``transport``; returns it (its reader thread is running)."""
        connection = ServerConnection(self, transport, **session_options)
        self._connections.add(connection)
        connection.session.start()
        return connection

    def run_stdio(self, *, max_message_size: int | None = None) -> None:
        """Serve one client on this process's stdin/stdout until stdin ends.

        Logs go to stderr; ``print()`` in a handler is redirected to stderr so
        stdout carries only protocol messages.  On end of input, the requests
        already received are answered before this returns.
        """
        from .transports.stdio import DEFAULT_MAX_MESSAGE_SIZE, StreamTransport, server_streams

        reader, writer = server_streams()
        transport = StreamTransport(reader, writer, max_message_size=max_message_size or DEFAULT_MAX_MESSAGE_SIZE)
        connection = self.connect(transport, name=f"{self.name}-stdio")
        while not connection.session.wait_closed(1.0):
            pass

    def wsgi_app(self, **options):
        """This server as a WSGI application (Streamable HTTP at ``/mcp``, HTTP+SSE at ``/sse``).

        Options are :class:`~mcp_ref.transports.http_server.McpWsgiApp`'s:
        ``path``, ``stateless``, ``json_response``, ``allowed_hosts``,
        ``allowed_origins``, ``event_store``, ``max_body_size``, ...  Mount it
        anywhere WSGI runs: gunicorn, Flask/Django (under a path prefix), or
        :meth:`run_http`.
        """
        from .transports.http_server import McpWsgiApp

        return McpWsgiApp(self, **options)

    def http_server(self, host: str = "127.0.0.1", port: int = 8000, **options):
        """A standard-library HTTP server for :meth:`wsgi_app`, bound but not serving yet.

        Port 0 picks a free port (``.port`` and ``.url`` tell which).  Call
        ``serve_forever()`` (in a thread, for tests) and ``shutdown()``.
        """
        from .transports.wsgi_server import WsgiServer

        return WsgiServer((host, port), self.wsgi_app(**options))

    def run_http(self, host: str = "127.0.0.1", port: int = 8000, *, on_ready: Callable | None = None, **options) -> None:
        """Serve over HTTP on the standard library until interrupted (binds 127.0.0.1 by default).

        ``on_ready(httpd)`` is called once the socket is bound (``httpd.url`` tells
        the address, useful with port 0); by default a line on stderr says it.
        """
        httpd = self.http_server(host, port, **options)
        if on_ready is None:
            print(f"serving {self.name} at {httpd.url}{options.get('path', '/mcp')}", file=sys.stderr, flush=True)
        else:
            on_ready(httpd)
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            httpd.server_close()
            httpd.app.close()

    def _announce(self, kind: str) -> None:
        for connection in list(self._connections):
            connection.list_changed(kind)

    # -- request handlers (called by ServerConnection) ---------------------------------------

    def _page(self, items: list, params: dict, kind: str) -> tuple[list, str | None]:
        cursor = params.get("cursor")
        if cursor is not None and not isinstance(cursor, str):
            raise InvalidParams("Invalid params: cursor must be a string")
        try:
            return self.paginator.page(items, cursor, kind=kind)
        except InvalidCursor as exc:
            # 2025-11-25 server/utilities/pagination §Error Handling: "Invalid cursors SHOULD result in an error with code -32602".
            raise InvalidParams(f"Invalid params: invalid cursor ({exc})") from None


_TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


def _check_tool_name(name: str) -> None:
    """2025-11-25 server/tools §Tool Names: names SHOULD be 1-128 characters of A-Z a-z 0-9 _ - . only."""
    if not isinstance(name, str) or not name:
        raise ValueError("a tool needs a non-empty string name")
    if not _TOOL_NAME.fullmatch(name):
        warnings.warn(f"tool name {name!r} does not follow the spec's guidance: 1-128 characters of "
                      f"A-Z, a-z, 0-9, '_', '-' and '.'", stacklevel=4)


def _drop_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


def _text_block(text: str) -> dict:
    return {"type": "text", "text": text}


def _as_content(value: Any) -> list:
    """A tool's return value as a list of content block dicts."""
    if value is None:
        return []
    if isinstance(value, str):
        return [_text_block(value)]
    if isinstance(value, WireModel):
        return [value.to_wire()]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, WireModel) for v in value):
        return [v.to_wire() for v in value]
    if isinstance(value, bytes):
        return [_text_block(value.decode("utf-8", "replace"))]
    return [_text_block(json.dumps(to_jsonable(value), ensure_ascii=False))]


class ServerConnection:
    """The server side of one connection: the session's dispatcher and the negotiated state."""

    def __init__(self, server: Server, transport, **session_options):
        self.server = server
        self.session = Session(transport, self, **session_options)
        self.protocol_version: str | None = None
        self.client_capabilities: dict = {}
        self.client_info: dict = {}
        self.capabilities: dict = {}
        self.initialized = False  # the initialize request was answered
        self.client_ready = threading.Event()  # notifications/initialized received
        self.log_level: str | None = None
        self.subscriptions: set[str] = set()
        self._handlers = {
            "ping": self._ping,
            "tools/list": self._list_tools,
            "tools/call": self._call_tool,
            "resources/list": self._list_resources,
            "resources/templates/list": self._list_templates,
            "resources/read": self._read_resource,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            "prompts/list": self._list_prompts,
            "prompts/get": self._get_prompt,
            "logging/setLevel": self._set_level,
            "completion/complete": self._complete,
        }

    # -- Dispatcher protocol ------------------------------------------------------------

    def batches_allowed(self) -> bool:
        """Batches are part of 2024-11-05 and 2025-03-26 only."""
        return lifecycle.batches_allowed(self.protocol_version)

    def handle_request(self, context: RequestContext, method: str, params: dict) -> dict:
        """Route one request to its handler, enforcing the lifecycle and declared capabilities."""
        if method == "initialize":
            return self._initialize(params)
        handler = self._handlers.get(method)
        if handler is None:
            raise MethodNotFound(f"Method not found: {method}")
        if not self.initialized and method != "ping":
            # 2025-11-25 basic/lifecycle §Initialization: "The client SHOULD NOT send requests
            # other than pings before the server has responded to the initialize request."
            raise InvalidRequest(f"Invalid Request: {method} before initialize")
        self._require_capability(method)
        return handler(context, params)

    def handle_notification(self, method: str, params: dict) -> None:
        """Lifecycle and roots notifications; anything else is ignored."""
        if method == "notifications/initialized":
            self.client_ready.set()
        elif method == "notifications/roots/list_changed":
            callback = self.server.on_roots_list_changed
            if callback is not None:
                self.session.call_soon(callback, self)
        else:
            log.debug("ignored notification %s", method)

    _CAPABILITY_OF = {
        "tools/": "tools", "resources/": "resources", "prompts/": "prompts",
        "logging/": "logging", "completion/": "completions",
    }

    def _require_capability(self, method: str) -> None:
        if method == "ping":
            return
        prefix = method[: method.index("/") + 1]
        capability = self._CAPABILITY_OF.get(prefix)
        if capability == "completions" and not lifecycle.at_least(self.protocol_version, lifecycle.COMPLETIONS_CAPABILITY):
            capability = None  # 2024-11-05 had completion/complete but no capability for it
        if capability is not None and capability not in self.capabilities:
            raise MethodNotFound(f"Method not found: this server does not offer {capability} ({method})")
        if method in ("resources/subscribe", "resources/unsubscribe") and not self.capabilities["resources"].get("subscribe"):
            raise MethodNotFound(f"Method not found: this server does not support subscriptions ({method})")

    # -- lifecycle ------------------------------------------------------------------------

    def _initialize(self, params: dict) -> dict:
        if self.initialized:
            raise InvalidRequest("Invalid Request: initialize was already received on this connection")
        requested = params.get("protocolVersion")
        if not isinstance(requested, str):
            raise InvalidParams("Invalid params: protocolVersion must be a string")
        capabilities = params.get("capabilities")
        client_info = params.get("clientInfo")
        if not isinstance(capabilities, dict) or not isinstance(client_info, dict):
            raise InvalidParams("Invalid params: initialize needs capabilities and clientInfo objects")
        version = lifecycle.server_choose_version(requested)
        self.protocol_version = self.session.protocol_version = version
        self.client_capabilities = capabilities
        self.client_info = client_info
        self.capabilities = self.server.capabilities(version)
        self.initialized = True
        result = {
            "protocolVersion": version,
            "capabilities": self.capabilities,
            "serverInfo": self.server.server_info(version),
        }
        if self.server.instructions:
            result["instructions"] = self.server.instructions
        return result

    def assume_initialized(self, version: str) -> None:
        """Serve without an ``initialize`` on this connection (HTTP's stateless mode).

        Each request arrives on a fresh connection, so the lifecycle state comes
        from the ``MCP-Protocol-Version`` header instead.  The client's
        capabilities are unknown: requests to the client are refused.
        """
        self.protocol_version = self.session.protocol_version = version
        self.capabilities = self.server.capabilities(version)
        self.initialized = True

    def _ping(self, context, params) -> dict:
        return {}

    # -- sending to the client ----------------------------------------------------------------

    def request(self, method: str, params: dict | None, *, timeout=..., related_request_id=None) -> dict:
        """Send a request to the client and wait for its result."""
        if not self.client_ready.is_set() and method != "ping":
            # 2025-11-25 basic/lifecycle: "The server SHOULD NOT send requests other than pings
            # and logging before receiving the initialized notification."
            raise CapabilityError(f"{method}: the client has not sent notifications/initialized yet")
        return self.session.request(method, params, timeout=timeout, related_request_id=related_request_id)

    def notify(self, method: str, params: dict | None = None, *, related_request_id=None) -> None:
        """Send a notification to the client (dropped quietly if the connection has closed)."""
        try:
            self.session.notify(method, params, related_request_id=related_request_id)
        except ConnectionError:
            log.debug("notification %s dropped: connection closed", method)

    def require_client_capability(self, name: str, method: str) -> dict:
        """The client's capability ``name``, or CapabilityError if it did not declare it."""
        caps = self.client_capabilities.get(name)
        if caps is None:
            raise CapabilityError(f"{method}: the client did not declare the {name} capability")
        return caps

    def log(self, level: str, data: Any, logger: str | None = None, *, related_request_id=None) -> bool:
        """Send ``notifications/message`` if ``level`` is at or above the client's chosen level."""
        rank = _LEVEL_RANK.get(level)
        if rank is None:
            raise ValueError(f"unknown log level {level!r}; one of {', '.join(LOG_LEVELS)}")
        if self.log_level is not None and rank < _LEVEL_RANK[self.log_level]:
            return False
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self.notify("notifications/message", params, related_request_id=related_request_id)
        return True

    def list_changed(self, kind: str) -> None:
        """Tell the client a listing changed, if that capability declared ``listChanged``."""
        if self.initialized and self.capabilities.get(kind, {}).get("listChanged"):
            self.notify(f"notifications/{kind}/list_changed")

    def _context(self, plan: ArgumentPlan, kwargs: dict, request: RequestContext) -> dict:
        if plan.context_param is not None:
            kwargs[plan.context_param] = Context(self, request)
        return kwargs

    # -- tools ----------------------------------------------------------------------------

    def _list_tools(self, context, params) -> dict:
        tools, cursor = self.server._page(list(self.server._tools.values()), params, "tools")
        version = self.protocol_version
        result: dict[str, Any] = {"tools": [lifecycle.strip_newer_fields(t.listing, version) for t in tools]}
        if cursor:
            result["nextCursor"] = cursor
        return result

    def _call_tool(self, context: RequestContext, params: dict) -> dict:
        name = params.get("name")
        if not isinstance(name, str):
            raise InvalidParams("Invalid params: tools/call needs a tool name")
        tool = self.server._tools.get(name)
        if tool is None:
            # 2025-11-25 server/tools §Error Handling: unknown tools are a protocol error.
            raise InvalidParams(f"Unknown tool: {name}")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        elif not isinstance(arguments, dict):
            raise InvalidParams("Invalid params: arguments must be an object")
        problem = _first_error(tool.input_validator(), arguments)
        if problem is not None:
            message = f"Invalid arguments for tool {name}: {problem}"
            if lifecycle.at_least(self.protocol_version, lifecycle.INPUT_ERRORS_AS_TOOL_ERRORS):
                # 2025-11-25 (SEP-1303): input validation errors are tool execution errors, so the model can see them.
                return {"content": [_text_block(message)], "isError": True}
            raise InvalidParams(message)
        kwargs = self._context(tool.plan, tool.plan.convert(arguments), context)
        try:
            value = tool.func(**kwargs)
        except (McpError, RequestCancelled):
            raise
        except ToolError as exc:
            return {"content": [_text_block(str(exc))], "isError": True}
        except Exception:  # noqa: BLE001 - the client sees a generic error, stderr the traceback
            log.exception("tool %s failed", name)
            return {"content": [_text_block(f"Tool {name} failed with an internal error")], "isError": True}
        return self._tool_result(tool, value)

    def _tool_result(self, tool: _Tool, value: Any) -> dict:
        if isinstance(value, CallToolResult):
            result = value.to_wire()
        elif isinstance(value, dict) and "content" in value and tool.output_schema is None and isinstance(value["content"], list):
            result = dict(value)  # an already-shaped CallToolResult dict
        else:
            result = {"content": _as_content(value)}
            if tool.output_schema is not None:
                result["structuredContent"] = to_jsonable(value)
        structured = result.get("structuredContent")
        if tool.output_schema is not None and not result.get("isError"):
            problem = None if structured is None else _first_error(tool.output_validator(), structured)
            if structured is None or problem:
                # 2025-11-25 server/tools §Output Schema: "Servers MUST provide structured results that conform to this schema."
                log.error("tool %s returned output that does not match its outputSchema: %s", tool.name, problem)
                return {"content": [_text_block(f"Tool {tool.name} produced invalid output")], "isError": True}
        version = self.protocol_version
        if structured is not None and not lifecycle.at_least(version, lifecycle.STRUCTURED_OUTPUT):
            del result["structuredContent"]
        if not lifecycle.at_least(version, lifecycle.RESOURCE_LINKS):
            result["content"] = [lifecycle.content_for_revision(block, version) for block in result.get("content", [])]
        return result

    # -- resources ------------------------------------------------------------------------

    def _list_resources(self, context, params) -> dict:
        server = self.server
        items = [r.listing for r in server._resources.values()]
        for provider in list(server._resource_lists):
            items.extend(provider())
        page, cursor = server._page(items, params, "resources")
        version = self.protocol_version
        result: dict[str, Any] = {"resources": [lifecycle.strip_newer_fields(r, version, keep_annotations=True) for r in page]}
        if cursor:
            result["nextCursor"] = cursor
        return result

    def _list_templates(self, context, params) -> dict:
        page, cursor = self.server._page([t.listing for t in self.server._templates], params, "templates")
        version = self.protocol_version
        result: dict[str, Any] = {"resourceTemplates": [lifecycle.strip_newer_fields(t, version, keep_annotations=True) for t in page]}
        if cursor:
            result["nextCursor"] = cursor
        return result

    def _find_resource(self, uri: str) -> tuple[_Resource, dict] | None:
        entry = self.server._resources.get(uri)
        if entry is not None:
            return entry, {}
        for template in list(self.server._templates):
            variables = template.template.match(uri)
            if variables is not None:
                return template, variables
        return None

    def _read_resource(self, context: RequestContext, params: dict) -> dict:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise InvalidParams("Invalid params: resources/read needs a uri")
        found = self._find_resource(uri)
        if found is None:
            # server/resources §Error Handling: "Resource not found: -32002".
            raise ResourceNotFound(f"Resource not found: {uri}", data={"uri": uri})
        entry, variables = found
        kwargs = self._context(entry.plan, entry.plan.convert(variables), context)
        value = entry.func(**kwargs)
        return {"contents": self._contents(uri, entry, value)}

    def _contents(self, uri: str, entry: _Resource, value: Any) -> list:
        mime_type = entry.listing.get("mimeType")
        if isinstance(value, (TextResourceContents, BlobResourceContents)):
            return [value.to_wire()]
        if isinstance(value, list) and all(isinstance(v, (TextResourceContents, BlobResourceContents)) for v in value):
            return [v.to_wire() for v in value]
        if isinstance(value, (bytes, bytearray)):
            return [{"uri": uri, "mimeType": mime_type or "application/octet-stream",
                     "blob": base64.b64encode(value).decode("ascii")}]
        if isinstance(value, str):
            return [{"uri": uri, "mimeType": mime_type or "text/plain", "text": value}]
        return [{"uri": uri, "mimeType": mime_type or "application/json",
                 "text": json.dumps(to_jsonable(value), ensure_ascii=False)}]

    def _subscribe(self, context, params) -> dict:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise InvalidParams("Invalid params: resources/subscribe needs a uri")
        if self._find_resource(uri) is None:
            raise ResourceNotFound(f"Resource not found: {uri}", data={"uri": uri})
        self.subscriptions.add(uri)
        return {}

    def _unsubscribe(self, context, params) -> dict:
        uri = params.get("uri")
        if not isinstance(uri, str):
            raise InvalidParams("Invalid params: resources/unsubscribe needs a uri")
        self.subscriptions.discard(uri)
        return {}

    # -- prompts ------------------------------------------------------------------------

    def _list_prompts(self, context, params) -> dict:
        page, cursor = self.server._page(list(self.server._prompts.values()), params, "prompts")
        version = self.protocol_version
        result: dict[str, Any] = {"prompts": [lifecycle.strip_newer_fields(p.listing, version) for p in page]}
        if cursor:
            result["nextCursor"] = cursor
        return result

    def _get_prompt(self, context: RequestContext, params: dict) -> dict:
        name = params.get("name")
        prompt = self.server._prompts.get(name) if isinstance(name, str) else None
        if prompt is None:
            # 2025-11-25 server/prompts §Error Handling: "Invalid prompt name: -32602".
            raise InvalidParams(f"Invalid params: unknown prompt {name!r}")
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
            raise InvalidParams("Invalid params: prompt arguments must be an object of strings")
        missing = [arg for arg in prompt.required if arg not in arguments]
        if missing:
            # "Missing required arguments: -32602".
            raise InvalidParams(f"Invalid params: missing required argument(s) for prompt {name}: {', '.join(missing)}")
        known = prompt.plan.schema.get("properties", {})
        unknown = [arg for arg in arguments if arg not in known]
        if unknown:
            raise InvalidParams(f"Invalid params: unknown argument(s) for prompt {name}: {', '.join(unknown)}")
        arguments = _coerce_prompt_arguments(prompt, arguments)
        problem = _first_error(prompt.validator(), arguments)
        if problem is not None:
            raise InvalidParams(f"Invalid params: arguments for prompt {name}: {problem}")
        kwargs = self._context(prompt.plan, prompt.plan.convert(arguments), context)
        value = prompt.func(**kwargs)
        if isinstance(value, GetPromptResult):
            result = value.to_wire()
        else:
            messages = value if isinstance(value, (list, tuple)) else [value]
            result = {"messages": [_prompt_message(m) for m in messages]}
            if prompt.listing.get("description"):
                result["description"] = prompt.listing["description"]
        version = self.protocol_version
        if not lifecycle.at_least(version, lifecycle.RESOURCE_LINKS):
            for message in result["messages"]:
                message["content"] = lifecycle.content_for_revision(message["content"], version)
        return result

    # -- logging and completion ------------------------------------------------------------

    def _set_level(self, context, params) -> dict:
        level = params.get("level")
        if not isinstance(level, str) or level not in _LEVEL_RANK:
            raise InvalidParams(f"Invalid params: unknown log level {level!r}")
        self.log_level = level
        return {}

    def _complete(self, context, params) -> dict:
        ref = params.get("ref")
        argument = params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
            raise InvalidParams("Invalid params: completion/complete needs ref and argument {name, value}")
        ref_type = ref.get("type")
        if ref_type == "ref/prompt":
            key = ref.get("name")
            if not isinstance(key, str) or key not in self.server._prompts:
                raise InvalidParams(f"Invalid params: unknown prompt {key!r}")
        elif ref_type == "ref/resource":
            key = ref.get("uri")
            if not isinstance(key, str) or (
                    not any(t.listing["uriTemplate"] == key for t in self.server._templates) and key not in self.server._resources):
                raise InvalidParams(f"Invalid params: unknown resource template {key!r}")
        else:
            raise InvalidParams(f"Invalid params: unknown reference type {ref_type!r}")
        completion_context = params.get("context")
        if completion_context is not None and (
                not isinstance(completion_context, dict) or not isinstance(completion_context.get("arguments") or {}, dict)):
            raise InvalidParams("Invalid params: completion/complete context must be {arguments: {...}}")
        handler = self.server._completions.get((ref_type, key))
        values: list = []
        if handler is not None:
            context_args = (params.get("context") or {}).get("arguments") or {}
            values = list(handler(argument["name"], str(argument.get("value", "")), context_args) or [])
        # server/utilities/completion: "values ... Must not exceed 100 items".
        completion: dict[str, Any] = {"values": [str(v) for v in values[:100]]}
        if len(values) > 100:
            completion["total"] = len(values)
            completion["hasMore"] = True
        return {"completion": completion}


def _coerce_prompt_arguments(prompt: _Prompt, arguments: dict) -> dict:
    """Prompt arguments arrive as strings; turn them into the declared JSON types where that is unambiguous."""
    properties = prompt.plan.schema.get("properties", {})
    out = {}
    for key, value in arguments.items():
        kind = properties.get(key, {}).get("type")
        if kind in ("integer", "number", "boolean"):
            try:
                parsed = json.loads(value)
            except ValueError:
                raise InvalidParams(f"Invalid params: argument {key} must be a {kind}") from None
            value = parsed
        out[key] = value
    return out


def _prompt_message(message: Any) -> dict:
    if isinstance(message, PromptMessage):
        return message.to_wire()
    if isinstance(message, str):
        return {"role": "user", "content": _text_block(message)}
    if isinstance(message, dict) and "role" in message:
        content = message.get("content")
        if isinstance(content, str):
            content = _text_block(content)
        elif isinstance(content, WireModel):
            content = content.to_wire()
        return {"role": message["role"], "content": content}
    if isinstance(message, WireModel):
        return {"role": "user", "content": message.to_wire()}
    raise TypeError(f"a prompt must return strings, PromptMessage or role/content dicts, not {type(message).__name__}")
