"""What a handler sees of its request: :class:`Context`.

A tool, resource or prompt function that declares a parameter annotated
``Context`` receives one.  Through it the handler reports progress, logs,
notices cancellation, and calls back into the client (sampling, elicitation,
roots) — waiting for those answers is safe, because handlers run on a pool,
never on the connection's reader thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import lifecycle
from ..errors import CapabilityError, InvalidParams
from ..session import RequestContext
from ..signatures import ArgumentPlan
from ..types import CreateMessageResult, ElicitResult, Root, WireModel
from ..validation import first_error, validator_for

if TYPE_CHECKING:
    from .connection import ServerConnection


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
    def auth(self):
        """Who is calling (``AccessInfo``: client id, subject, scopes), when the server is an OAuth
        protected resource (``wsgi_app(auth=...)``); None when unauthenticated (stdio, no ``auth``)."""
        return self.connection.auth

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
        return self.connection.session.transport.close_stream(self.request_id)

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

    def elicit(self, message: str, schema: dict | type, *, timeout: float | None | type(...) = ...) -> ElicitResult:
        """Ask the user for structured input (form-mode ``elicitation/create``, 2025-06-18 and later).

        ``schema`` is a flat object schema of primitive properties, or a dataclass (or
        TypedDict) of such fields, whose schema is sent: an accepted answer is then also
        in ``result.data`` as an instance of it.  Accepted content is validated against
        the schema; a reply that does not match raises InvalidParams.
        """
        convert = None
        if isinstance(schema, type):
            from ..signatures import schema_and_converter

            schema, convert = schema_and_converter(schema)
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
            problem = first_error(validator_for(schema), result.content)
            if problem:
                raise InvalidParams(f"elicitation reply does not match the requested schema: {problem}")
            if convert is not None:
                result.data = convert(result.content)
        return result

    def read_resource(self, uri: str) -> list:
        """This server's own resource ``uri``, read as a client would (``resources/read``): its contents.

        Returns ``TextResourceContents`` / ``BlobResourceContents``; raises ResourceNotFound.
        """
        from ..types import resource_contents_from_wire

        answer = self.connection.handle_request(self.request, "resources/read", {"uri": uri})
        return [resource_contents_from_wire(item) for item in answer["contents"]]

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


def with_context(plan: ArgumentPlan, kwargs: dict, connection: "ServerConnection", request: RequestContext) -> dict:
    """``kwargs`` plus a :class:`Context` for the parameter annotated with it, if the function has one."""
    if plan.context_param is not None:
        kwargs[plan.context_param] = Context(connection, request)
    return kwargs
