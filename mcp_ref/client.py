"""The client role: a blocking, thread-safe MCP client.

::

    with Client.stdio(["python", "server.py"]) as client:
        for tool in client.list_tools():
            print(tool.name)
        result = client.call_tool("add", {"a": 1, "b": 2})
        print(result.content[0].text)

A :class:`Client` is connected and initialized when it is constructed (so it
works with or without ``with``); ``close()`` — or leaving the ``with`` block —
shuts the connection and, for stdio, the server process down.  Any number of
threads may call it at once.

The server may call back: pass ``sampling_handler``, ``elicitation_handler``
and ``roots`` to declare those capabilities (a handler is called as
``handler(params)``, or ``handler(params, context)`` if it takes two
arguments: ``context.is_cancelled`` then tells it the server gave up); ``on_log``,
``on_resource_updated`` and ``on_list_changed`` receive notifications.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Iterable, Sequence

from . import __version__, lifecycle
from .errors import CapabilityError, InvalidParams, McpError, MethodNotFound
from .session import DEFAULT_TIMEOUT, PendingRequest, ProgressCallback, RequestContext, Session
from .types import (
    CallToolResult,
    Completion,
    CreateMessageParams,
    CreateMessageResult,
    ElicitParams,
    ElicitResult,
    GetPromptResult,
    Implementation,
    InitializeResult,
    LogMessage,
    Page,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Root,
    Tool,
    WireModel,
)

log = logging.getLogger(__name__)

SamplingHandler = Callable[[CreateMessageParams], "CreateMessageResult | dict"]
ElicitationHandler = Callable[[ElicitParams], "ElicitResult | dict"]


class ToolCall:
    """A ``tools/call`` in flight (from :meth:`Client.start_tool_call`): ``result()`` or ``cancel()``."""

    def __init__(self, pending: PendingRequest):
        self.pending = pending

    @property
    def request_id(self):
        """The JSON-RPC id of the call."""
        return self.pending.id

    def result(self) -> CallToolResult:
        """Wait for the tool's result (raises RequestTimeout, RequestCancelled, McpError ...)."""
        return CallToolResult.from_wire(self.pending.result())

    def cancel(self, reason: str | None = None) -> bool:
        """Cancel the call (the server is sent ``notifications/cancelled``); False if it had finished."""
        return self.pending.cancel(reason)

    def done(self) -> bool:
        """True once the call has settled."""
        return self.pending.done()


class Client:
    """An MCP client over one transport; see the module docstring.

    ``timeout`` is the default per-request timeout in seconds (None: wait
    forever).  ``protocol_version`` is the revision to ask for (the latest by
    default).  ``trace(direction, data)`` sees every message.
    """

    def __init__(
        self,
        transport,
        *,
        name: str = "mcp-ref",
        version: str = __version__,
        protocol_version: str = lifecycle.LATEST_VERSION,
        timeout: float | None = DEFAULT_TIMEOUT,
        sampling_handler: SamplingHandler | None = None,
        sampling_tools: bool = False,
        elicitation_handler: ElicitationHandler | None = None,
        elicitation_modes: Sequence[str] = ("form",),
        roots: Iterable[Root | dict | str] | None = None,
        on_log: Callable[[LogMessage], None] | None = None,
        on_resource_updated: Callable[[str], None] | None = None,
        on_list_changed: Callable[[str], None] | None = None,
        on_elicitation_complete: Callable[[str], None] | None = None,
        trace: Callable[[str, bytes], None] | None = None,
    ):
        if protocol_version not in lifecycle.SUPPORTED_VERSIONS:
            raise ValueError(f"unsupported protocol version {protocol_version!r}")
        self.client_info = {"name": name, "version": version}
        self.requested_version = protocol_version
        self.sampling_handler = sampling_handler
        self.sampling_tools = sampling_tools
        self.elicitation_handler = elicitation_handler
        self.elicitation_modes = tuple(elicitation_modes)
        self._roots = None if roots is None else [_root(r) for r in roots]
        self.on_log = on_log
        self.on_resource_updated = on_resource_updated
        self.on_list_changed = on_list_changed
        self.on_elicitation_complete = on_elicitation_complete
        self.session = Session(transport, self, default_timeout=timeout, name="mcp-client", trace=trace)
        self.initialize_result: InitializeResult | None = None
        if hasattr(transport, "reinitialize"):
            transport.reinitialize = self._initialize  # HTTP: a new session after the server forgot ours
        self.session.start()
        try:
            self._initialize()
        except BaseException:
            self.close()
            raise

    @classmethod
    def stdio(
        cls,
        command: Sequence[str],
        *,
        env: dict | None = None,
        cwd: str | None = None,
        stderr: str | Callable[[str], None] = "inherit",
        max_message_size: int | None = None,
        shutdown_timeout: float = 2.0,
        **options,
    ) -> "Client":
        """Start ``command`` (a list: ``["python", "server.py"]``) and connect to it over stdio.

        ``stderr`` is ``"inherit"``, ``"capture"``, ``"discard"`` or a callable
        per line; other keywords are :class:`Client`'s.
        """
        from .transports.stdio import DEFAULT_MAX_MESSAGE_SIZE, SubprocessTransport

        transport = SubprocessTransport(
            command, env=env, cwd=cwd, stderr=stderr,
            max_message_size=max_message_size or DEFAULT_MAX_MESSAGE_SIZE, shutdown_timeout=shutdown_timeout,
        )
        try:
            return cls(transport, **options)
        except BaseException:
            # Client() may fail before it owns the transport (a bad protocol_version or root):
            # do not leave the server process running.  (close() is idempotent.)
            transport.close()
            transport.release()  # nobody may have read its output yet
            raise

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: dict | None = None,
        auth=None,
        transport: str = "auto",
        connect_timeout: float = 10.0,
        verify=True,
        **options,
    ) -> "Client":
        """Connect to an MCP server over HTTP.

        ``transport``: ``"auto"`` (Streamable HTTP, falling back to the
        2024-11-05 HTTP+SSE transport when the server answers the initialize
        POST with 400, 404 or 405), ``"streamable"`` or ``"sse"`` (``url`` is
        then the SSE endpoint).  ``headers`` go on every HTTP request;
        ``auth`` is a requests auth hook (a bearer token ...).  Other keywords
        are :class:`Client`'s.
        """
        from .transports.http_client import HttpClientTransport

        http = HttpClientTransport(url, headers=headers, auth=auth, mode=transport,
                                   connect_timeout=connect_timeout, verify=verify)
        if transport == "sse":
            http._start_legacy()
        return cls(http, **options)

    # -- lifecycle ---------------------------------------------------------------------------

    def capabilities(self) -> dict:
        """The capabilities this client declares, from the handlers it was given."""
        caps: dict[str, Any] = {}
        if self._roots is not None:
            caps["roots"] = {"listChanged": True}
        if self.sampling_handler is not None:
            caps["sampling"] = {}
            if self.sampling_tools and lifecycle.at_least(self.requested_version, lifecycle.SAMPLING_TOOLS):
                caps["sampling"]["tools"] = {}
        if self.elicitation_handler is not None and lifecycle.at_least(self.requested_version, lifecycle.ELICITATION):
            if lifecycle.at_least(self.requested_version, lifecycle.ELICITATION_URL_MODE):
                caps["elicitation"] = {mode: {} for mode in self.elicitation_modes}
            else:
                caps["elicitation"] = {}
        return caps

    def _initialize(self) -> None:
        params = {
            "protocolVersion": self.requested_version,
            "capabilities": self.capabilities(),
            "clientInfo": self.client_info,
        }
        result = InitializeResult.from_wire(self.session.request("initialize", params))
        version = lifecycle.client_accept_version(result.protocol_version)
        self.session.protocol_version = version
        self.initialize_result = result
        announce = getattr(self.session.transport, "initialized", None)
        if announce is not None:
            announce(version)  # HTTP: the version header from now on, and the standalone stream
        # 2025-11-25 basic/lifecycle: "After successful initialization, the client MUST send
        # an initialized notification to indicate it is ready to begin normal operations."
        self.session.notify("notifications/initialized")

    @property
    def protocol_version(self) -> str:
        """The negotiated protocol revision."""
        return self.initialize_result.protocol_version

    @property
    def server_info(self) -> Implementation:
        """The server's ``serverInfo`` (name, version ...)."""
        return self.initialize_result.server_info

    @property
    def server_capabilities(self) -> dict:
        """The capabilities the server declared."""
        return self.initialize_result.capabilities

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions``, if it sent any."""
        return self.initialize_result.instructions

    def close(self) -> None:
        """End the connection (for stdio: stop the server process). Idempotent."""
        self.session.close()
        self.session.wait_closed(5.0)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- requests --------------------------------------------------------------------------

    def _require(self, capability: str, method: str) -> None:
        # 2025-11-25 basic/lifecycle §Operation: both parties MUST "Only use capabilities that were successfully negotiated".
        if capability not in self.server_capabilities:
            raise CapabilityError(f"{method}: the server did not declare the {capability} capability")

    def request(self, method: str, params: dict | None = None, **options) -> dict:
        """Send any request and return its raw ``result`` dict (options as Session.send_request)."""
        return self.session.request(method, params, **options)

    def ping(self, *, timeout: float | None | type(...) = ...) -> None:
        """``ping``: raises if the server does not answer."""
        self.session.request("ping", None, timeout=timeout)

    def _page(self, method: str, key: str, build, cursor: str | None, capability: str) -> Page:
        self._require(capability, method)
        result = self.session.request(method, {"cursor": cursor} if cursor is not None else None)
        return Page(items=[build(item) for item in result.get(key, [])], next_cursor=result.get("nextCursor"), raw=result)

    def _all(self, method: str, key: str, build, capability: str) -> list:
        items: list = []
        cursor = None
        seen: set[str] = set()
        while True:
            page = self._page(method, key, build, cursor, capability)
            items.extend(page.items)
            cursor = page.next_cursor
            if not cursor:
                return items
            if cursor in seen:
                raise McpError(f"{method}: the server repeated a pagination cursor")
            seen.add(cursor)

    # tools

    def list_tools(self) -> list[Tool]:
        """Every tool, following pagination."""
        return self._all("tools/list", "tools", Tool.from_wire, "tools")

    def list_tools_page(self, cursor: str | None = None) -> Page:
        """One page of tools; pass ``page.next_cursor`` for the next."""
        return self._page("tools/list", "tools", Tool.from_wire, cursor, "tools")

    def start_tool_call(
        self,
        name: str,
        arguments: dict | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | None | type(...) = ...,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> ToolCall:
        """Start a ``tools/call`` without waiting: returns a :class:`ToolCall` to wait on or cancel."""
        self._require("tools", "tools/call")
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        return ToolCall(self.session.send_request(
            "tools/call", params, timeout=timeout, on_progress=on_progress,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        ))

    def call_tool(self, name: str, arguments: dict | None = None, **options) -> CallToolResult:
        """Call a tool and wait for its result.

        Options: ``on_progress(progress, total, message)``, ``timeout``
        (seconds), ``reset_timeout_on_progress``, ``max_total_timeout``.  A
        tool that fails returns a result with ``is_error`` True; a protocol
        failure (unknown tool ...) raises McpError.
        """
        return self.start_tool_call(name, arguments, **options).result()

    # resources

    def list_resources(self) -> list[Resource]:
        """Every resource, following pagination."""
        return self._all("resources/list", "resources", Resource.from_wire, "resources")

    def list_resources_page(self, cursor: str | None = None) -> Page:
        """One page of resources."""
        return self._page("resources/list", "resources", Resource.from_wire, cursor, "resources")

    def list_resource_templates(self) -> list[ResourceTemplate]:
        """Every resource template, following pagination."""
        return self._all("resources/templates/list", "resourceTemplates", ResourceTemplate.from_wire, "resources")

    def list_resource_templates_page(self, cursor: str | None = None) -> Page:
        """One page of resource templates."""
        return self._page("resources/templates/list", "resourceTemplates", ResourceTemplate.from_wire, cursor, "resources")

    def read_resource(self, uri: str, *, timeout: float | None | type(...) = ...) -> ReadResourceResult:
        """Read a resource's contents (raises ResourceNotFound for an unknown URI)."""
        self._require("resources", "resources/read")
        return ReadResourceResult.from_wire(self.session.request("resources/read", {"uri": uri}, timeout=timeout))

    def subscribe(self, uri: str) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (to ``on_resource_updated``)."""
        self._require("resources", "resources/subscribe")
        if not self.server_capabilities["resources"].get("subscribe"):
            raise CapabilityError("resources/subscribe: the server does not support subscriptions")
        self.session.request("resources/subscribe", {"uri": uri})

    def unsubscribe(self, uri: str) -> None:
        """Stop updates about ``uri``."""
        self._require("resources", "resources/unsubscribe")
        self.session.request("resources/unsubscribe", {"uri": uri})

    # prompts

    def list_prompts(self) -> list[Prompt]:
        """Every prompt, following pagination."""
        return self._all("prompts/list", "prompts", Prompt.from_wire, "prompts")

    def list_prompts_page(self, cursor: str | None = None) -> Page:
        """One page of prompts."""
        return self._page("prompts/list", "prompts", Prompt.from_wire, cursor, "prompts")

    def get_prompt(self, name: str, arguments: dict | None = None) -> GetPromptResult:
        """Render a prompt; argument values are sent as strings, as the spec's ``{[key]: string}`` requires."""
        self._require("prompts", "prompts/get")
        params: dict[str, Any] = {"name": name}
        if arguments:
            params["arguments"] = {k: v if isinstance(v, str) else _json_text(v) for k, v in arguments.items()}
        return GetPromptResult.from_wire(self.session.request("prompts/get", params))

    # logging and completion

    def set_logging_level(self, level: str) -> None:
        """``logging/setLevel``: the server sends log messages at ``level`` and above."""
        self._require("logging", "logging/setLevel")
        self.session.request("logging/setLevel", {"level": level})

    def complete(self, *, argument: str, value: str, prompt: str | None = None, resource: str | None = None,
                 context: dict | None = None) -> Completion:
        """Ask for completions of a prompt argument (``prompt=name``) or template variable (``resource=template``)."""
        if (prompt is None) == (resource is None):
            raise TypeError("complete() takes exactly one of prompt= or resource=")
        if lifecycle.at_least(self.protocol_version, lifecycle.COMPLETIONS_CAPABILITY):
            self._require("completions", "completion/complete")
        ref = {"type": "ref/prompt", "name": prompt} if prompt is not None else {"type": "ref/resource", "uri": resource}
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context and lifecycle.at_least(self.protocol_version, lifecycle.COMPLETION_CONTEXT):
            params["context"] = {"arguments": context}  # CompleteRequest.context: 2025-06-18 and later
        result = self.session.request("completion/complete", params)
        return Completion.from_wire(result.get("completion", {}))

    # roots

    @property
    def roots(self) -> list[Root] | None:
        """The roots this client exposes (None: no roots capability)."""
        return self._roots

    def set_roots(self, roots: Iterable[Root | dict | str]) -> None:
        """Replace the roots and send ``notifications/roots/list_changed``.

        Only possible when the client was created with ``roots=`` (so the
        capability was declared).
        """
        if self._roots is None:
            raise CapabilityError("this client did not declare the roots capability (pass roots= when creating it)")
        self._roots = [_root(r) for r in roots]
        self.session.notify("notifications/roots/list_changed")

    # -- Dispatcher protocol: what the server sends ------------------------------------------------

    def batches_allowed(self) -> bool:
        """Batches are part of 2024-11-05 and 2025-03-26 only."""
        return lifecycle.batches_allowed(self.session.protocol_version)

    def handle_request(self, context: RequestContext, method: str, params: dict) -> dict:
        """Answer the server's requests: ping, sampling, elicitation, roots."""
        if method == "ping":
            return {}
        if method == "sampling/createMessage":
            if self.sampling_handler is None:
                raise MethodNotFound("Method not found: this client does not offer sampling")
            max_tokens = params.get("maxTokens")
            if not isinstance(params.get("messages"), list) or not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
                # schema CreateMessageRequest: messages is an array, maxTokens an integer.
                raise InvalidParams("Invalid params: sampling/createMessage needs a messages array and an integer maxTokens")
            try:
                request = CreateMessageParams.from_wire(params)
            except (TypeError, KeyError) as exc:
                raise InvalidParams(f"Invalid params: {exc}") from None
            if (request.tools is not None or request.tool_choice is not None) and "tools" not in self.capabilities().get("sampling", {}):
                # 2025-11-25 client/sampling: a client that did not declare sampling.tools MUST return an error.
                raise InvalidParams("Invalid params: this client did not declare sampling.tools")
            return _wire(_call_handler(self.sampling_handler, request, context))
        if method == "elicitation/create":
            if self.elicitation_handler is None or not lifecycle.at_least(self.session.protocol_version, lifecycle.ELICITATION):
                raise MethodNotFound("Method not found: this client does not offer elicitation")
            try:
                request = ElicitParams.from_wire(params)
            except (TypeError, KeyError) as exc:
                raise InvalidParams(f"Invalid params: {exc}") from None
            mode = request.mode or "form"
            if mode not in self.elicitation_modes:
                raise InvalidParams(f"Invalid params: this client does not support {mode}-mode elicitation")
            result = _wire(_call_handler(self.elicitation_handler, request, context))
            if mode == "form" and result.get("action") == "accept":
                result["content"] = _apply_defaults(request.requested_schema, result.get("content"))
            return result
        if method == "roots/list":
            if self._roots is None:
                raise MethodNotFound("Method not found: this client does not offer roots")
            return {"roots": [r.to_wire() for r in self._roots]}
        raise MethodNotFound(f"Method not found: {method}")

    def handle_notification(self, method: str, params: dict) -> None:
        """Route the server's notifications to the callbacks (on the callback thread)."""
        if method == "notifications/message":
            if self.on_log is not None:
                self.session.call_soon(self.on_log, LogMessage.from_wire(params))
        elif method == "notifications/resources/updated":
            if self.on_resource_updated is not None:
                self.session.call_soon(self.on_resource_updated, params.get("uri"))
        elif method == "notifications/elicitation/complete":
            # client/elicitation: clients MUST ignore ids they do not know; the callback decides.
            if self.on_elicitation_complete is not None:
                self.session.call_soon(self.on_elicitation_complete, params.get("elicitationId"))
        elif method.endswith("/list_changed"):
            if self.on_list_changed is not None:
                kind = method[len("notifications/"):-len("/list_changed")]
                self.session.call_soon(self.on_list_changed, kind)
        else:
            log.debug("ignored notification %s", method)


def _call_handler(handler: Callable, params, context: RequestContext):
    """Call ``handler(params)``, or ``handler(params, context)`` when it takes two arguments.

    The context tells a long-running handler that the server cancelled its
    request (``context.is_cancelled``).
    """
    if _takes_context(handler):
        return handler(params, context)
    return handler(params)


def _takes_context(handler: Callable) -> bool:
    import inspect

    try:
        parameters = inspect.signature(handler).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


def _root(value: Root | dict | str) -> Root:
    if isinstance(value, Root):
        root = value
    elif isinstance(value, str):
        root = Root(uri=value)
    else:
        root = Root.from_wire(value)
    if not root.uri.startswith("file://"):
        # client/roots §Root: "uri: Unique identifier for the root. This MUST be a file:// URI".
        raise ValueError(f"a root must be a file:// URI, not {root.uri!r}")
    return root


def _wire(value: Any) -> dict:
    if isinstance(value, WireModel):
        return value.to_wire()
    if isinstance(value, dict):
        return dict(value)
    raise TypeError(f"a handler must return a result object or dict, not {type(value).__name__}")


def _json_text(value: Any) -> str:
    import json

    return json.dumps(value)


def _apply_defaults(schema: dict | None, content: dict | None) -> dict:
    """Fill fields the user left out with the schema's ``default`` values.

    2025-11-25 client/elicitation (SEP-1034): primitive schemas may carry a
    ``default``; a client that accepts should send it for fields left unset.
    """
    content = dict(content or {})
    for key, spec in ((schema or {}).get("properties") or {}).items():
        if key not in content and isinstance(spec, dict) and "default" in spec:
            content[key] = spec["default"]
    return content
