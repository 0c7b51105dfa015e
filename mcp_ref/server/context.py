"""What a handler sees of its request: :class:`Context`.

A tool, resource or prompt function that declares a parameter annotated
``Context`` receives one.  Through it the handler reports progress, logs,
notices cancellation, and calls back into the client (sampling, elicitation,
roots) — waiting for those answers is safe, because handlers run on a pool,
never on the connection's reader thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core import lifecycle
from ..core.errors import CapabilityError, InvalidParams, MissingRequiredClientCapabilityError, RequestCancelled
from ..core.requests import DEFAULT, Default
from .seams import MAY_START, MRTR_METHODS, Caller, state_of

if TYPE_CHECKING:
    from ..core.feature_types import Root
    from ..core.requests import RequestContext
    from ..core.sampling_and_elicitation import CreateMessageResult, ElicitResult
    from .input_required import Ask, Elicit, Sample
    from .signatures import ArgumentPlan


class Context:
    """Given to a handler that declares a parameter annotated ``Context``.

    It reports progress and log messages, tells whether the client cancelled
    the request, and sends requests to the client (sampling, elicitation,
    roots) — waiting for the answer is safe: handlers run on a pool, not on
    the connection's reader thread.
    """

    def __init__(self, connection: Caller, request: RequestContext):
        self.connection = connection
        self.request = request
        self._asks = 0  # asks made so far in this run of the handler: the default keys count them

    @property
    def request_id(self):
        """The JSON-RPC id of the request being served."""
        return self.request.request_id

    @property
    def protocol_version(self) -> str | None:
        """The protocol revision of this request: the request's own (2026-07-28), else the negotiated one."""
        return self.connection.version_for(self.request)

    @property
    def era(self) -> str:
        """``"modern"`` for a request that carries its own envelope (2026-07-28), else ``"handshake"``."""
        return "handshake" if self.request.envelope is None else "modern"

    @property
    def client_capabilities(self) -> dict:
        """The client's capabilities: the request's own (2026-07-28), else those declared in ``initialize``."""
        envelope = self.request.envelope
        return self.connection.client_capabilities if envelope is None else envelope.client_capabilities

    @property
    def client_info(self) -> dict:
        """The client's ``clientInfo`` (name, version ...): the request's own (2026-07-28), else ``initialize``'s."""
        envelope = self.request.envelope
        return self.connection.client_info if envelope is None else envelope.client_info

    @property
    def auth(self):
        """Who is calling (``AccessInfo``: client id, subject, scopes), when the server is an OAuth
        protected resource (``wsgi_app(auth=...)``); None when unauthenticated (stdio, no ``auth``)."""
        return self.connection.auth

    @property
    def principal(self):
        """Who is calling (:class:`~mcp_ref.extras.policy.Principal`): a stable ``id``, the token's
        ``scopes`` and ``claims`` when there is one.  The same object ``Server(authorize=...)`` sees."""
        return self.connection.principal

    @property
    def is_cancelled(self) -> bool:
        """True once the client cancelled this request."""
        return self.request.is_cancelled

    def check_cancelled(self) -> None:
        """Raise RequestCancelled if the client cancelled this request (no response is then sent)."""
        self.request.check_cancelled()

    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> bool:
        """Send progress for this request (only if the client asked for it by sending a progress token).

        Inside a task (the tasks extension has no progress notifications) it sets the task's
        ``statusMessage`` instead: ``message``, or ``"progress/total"``.
        """
        task = self._task()
        if task is not None:
            task.report(message or (f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"))
            return True
        return self.request.report_progress(progress, total, message)

    def start_task(self) -> bool:
        """Here the work of a task-capable tool (``@server.tool(task="optional")``) becomes a task.

        For a 2026-07-28 client that declared the tasks extension, the client is answered now with
        a task handle and the handler runs again as that task, where this returns True (asks made
        before this point are answered from their ``input_required`` rounds, as in any retry; so
        put side effects after it).  For any other client it returns False: the call goes on
        as a plain call.  See :mod:`mcp_ref.extras.tasks`.
        """
        task = state_of(self.request).task
        if task is None:
            return False
        if task == MAY_START:
            from ..extras.tasks import StartTask  # a task-capable tool: the tasks extension is in use

            raise StartTask()
        return True

    @property
    def in_task(self) -> bool:
        """True while the handler runs as a task (the tasks extension)."""
        return self._task() is not None

    def _task(self) -> Any:
        """The task this handler runs as (the tasks extension's ``TaskRun``: ``ask``, ``report``), or None."""
        task = state_of(self.request).task
        return None if task is None or isinstance(task, str) else task

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or raise RequestCancelled as soon as the call (or task) is cancelled."""
        if self.request.cancelled.wait(seconds):
            raise RequestCancelled(f"request {self.request_id!r} was cancelled")

    def close_sse_stream(self) -> bool:
        """Over Streamable HTTP, close the connection carrying this request's SSE stream (SSE polling).

        The stream goes on: later messages and the answer wait in the event
        store, and the client resumes with GET + ``Last-Event-ID`` after the
        ``retry`` interval.  False when there is no such stream (stdio, JSON
        replies, the legacy transport).  See ``McpWsgiApp(inline_handlers=...)``.
        """
        return self.connection.session.transport.close_stream(self.request_id)

    def log(self, level: str, data: Any, logger: str | None = None) -> bool:
        """Send a ``notifications/message`` if ``level`` passes the client's chosen level: its
        ``logging/setLevel`` (handshake era) or this request's ``io.modelcontextprotocol/logLevel``
        (2026-07-28, where a request without one gets no log messages at all)."""
        return self.connection.log(level, data, logger, related_request_id=self.request_id, envelope=self.request.envelope)

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
        key: str | None = None,
        timeout: float | None | Default = DEFAULT,
    ) -> CreateMessageResult:
        """Ask the client's LLM for a completion (``sampling/createMessage``).

        ``messages`` is a string (one user message) or a list of ``{"role", "content"}`` dicts /
        SamplingMessage objects.  ``tools`` and ``tool_choice`` (2025-11-25) need the client's
        ``sampling.tools``.  ``key`` names the ask in a 2026-07-28 ``inputRequests`` (see :meth:`gather`).
        """
        from .input_required import Sample

        return self.gather(Sample(messages, max_tokens, system_prompt, temperature, stop_sequences, model_preferences,
                                  include_context, metadata, tools, tool_choice, key=key), timeout=timeout)[0]

    def elicit(self, message: str, schema: dict | type, *, key: str | None = None,
               timeout: float | None | Default = DEFAULT) -> ElicitResult:
        """Ask the user for structured input (form-mode ``elicitation/create``, 2025-06-18 and later).

        ``schema`` is a flat object schema of primitive properties, or a dataclass (or
        TypedDict) of such fields, whose schema is sent: an accepted answer is then also
        in ``result.data`` as an instance of it.  Accepted content is validated against
        the schema; a reply that does not match raises InvalidParams.
        """
        from .input_required import Elicit

        return self.gather(Elicit(message, schema, key=key), timeout=timeout)[0]

    def elicit_url(self, message: str, url: str, elicitation_id: str | None = None, *, key: str | None = None,
                   timeout: float | None | Default = DEFAULT) -> ElicitResult:
        """Send the user to a URL (URL-mode elicitation, 2025-11-25 and later; ``elicitation_id``
        is the handshake era's, required there and gone in 2026-07-28)."""
        from .input_required import ElicitUrl

        return self.gather(ElicitUrl(message, url, elicitation_id, key=key), timeout=timeout)[0]

    def list_roots(self, *, key: str | None = None, timeout: float | None | Default = DEFAULT) -> list[Root]:
        """The client's roots (``roots/list``)."""
        from .input_required import ListRoots

        return self.gather(ListRoots(key=key), timeout=timeout)[0]

    def gather(self, *asks, timeout: float | None | Default = DEFAULT) -> list:
        """Ask the client for several things at once: ``Elicit``, ``ElicitUrl``, ``Sample``, ``ListRoots``.

        Returns their answers in order (``ElicitResult``, ``CreateMessageResult``, a list of
        ``Root``).  Handshake era: one request to the client after another.  2026-07-28: the
        answers the retried request carries; any missing ends this run of the handler with an
        ``InputRequiredResult`` asking for all of them at once, and the client's retry runs the
        handler again from the top (``mcp_ref.server.input_required``).
        """
        from .input_required import answer_all, inputs_of

        prepared = [self._prepare(ask) for ask in asks]
        task = self._task()
        if task is not None:  # the tasks extension: the task waits for tasks/update
            return task.ask(prepared)
        if self.request.envelope is None:
            return [ask.read(self.connection.request(ask.method, ask.params, timeout=timeout,
                                                     related_request_id=self.request_id)) for ask in prepared]
        if self.request.method not in MRTR_METHODS:
            # basic/patterns/mrtr §Supported Requests: only tools/call, prompts/get and resources/read.
            raise CapabilityError(f"{self.request.method} cannot ask the client for input (2026-07-28 MRTR)")
        inputs = inputs_of(self.request)
        inputs.used.update(ask.key for ask in prepared)
        return answer_all(prepared, inputs.answers)

    def _prepare(self, ask) -> Ask:
        """An ``Elicit`` / ``ElicitUrl`` / ``Sample`` / ``ListRoots`` as a request this client can take."""
        from ..core.feature_types import Root
        from ..core.sampling_and_elicitation import ElicitResult
        from .input_required import Ask, Elicit, ElicitUrl, ListRoots, Sample

        self._asks += 1
        version = self.protocol_version
        if isinstance(ask, Elicit):
            return self._prepare_elicit(ask, version)
        if isinstance(ask, ElicitUrl):
            if not lifecycle.at_least(version, lifecycle.ELICITATION_URL_MODE):
                raise CapabilityError(f"URL-mode elicitation does not exist in protocol version {version}")
            caps = self._client_capability("elicitation", "elicitation/create", {"elicitation": {"url": {}}})
            if "url" not in (caps or {}):
                raise self._missing({"elicitation": {"url": {}}}, "the client did not declare URL-mode elicitation")
            params = {"mode": "url", "message": ask.message, "url": ask.url}
            if self.request.envelope is None:
                if not ask.elicitation_id:
                    raise ValueError("URL-mode elicitation needs an elicitation_id before 2026-07-28")
                params["elicitationId"] = ask.elicitation_id
            return Ask(ask.key or f"elicitation-{self._asks}", "elicitation/create", params, ElicitResult.from_wire)
        if isinstance(ask, Sample):
            return self._prepare_sample(ask, version)
        if isinstance(ask, ListRoots):
            self._client_capability("roots", "roots/list", {"roots": {}})
            return Ask(ask.key or f"roots-{self._asks}", "roots/list", None if self.request.envelope is None else {},
                       lambda result: [Root.from_wire(r) for r in result.get("roots", [])])
        raise TypeError(f"gather() takes Elicit, ElicitUrl, Sample or ListRoots, not {type(ask).__name__}")

    def _prepare_elicit(self, ask: Elicit, version: str | None) -> Ask:
        from ..core.sampling_and_elicitation import ElicitResult
        from ..core.validation import first_error, validator_for
        from .input_required import Ask

        schema, convert = ask.schema, None
        if isinstance(schema, type):
            from .signatures import schema_and_converter

            schema, convert = schema_and_converter(schema)
        if not lifecycle.at_least(version, lifecycle.ELICITATION):
            raise CapabilityError(f"elicitation does not exist in protocol version {version}")
        caps = self._client_capability("elicitation", "elicitation/create", {"elicitation": {}})
        if lifecycle.at_least(version, lifecycle.ELICITATION_URL_MODE) and caps and "form" not in caps:
            # 2025-11-25 client/elicitation: an empty object means form mode only; otherwise "form" must be listed.
            raise self._missing({"elicitation": {"form": {}}}, "the client did not declare form-mode elicitation")
        params: dict[str, Any] = {"message": ask.message, "requestedSchema": schema}
        if lifecycle.at_least(version, lifecycle.ELICITATION_URL_MODE):
            params["mode"] = "form"

        def read(answer: dict) -> ElicitResult:
            result = ElicitResult.from_wire(answer)
            if result.action == "accept" and result.content is not None:
                problem = first_error(validator_for(schema), result.content)
                if problem:
                    raise InvalidParams(f"elicitation reply does not match the requested schema: {problem}")
                if convert is not None:
                    result.data = convert(result.content)
            return result

        return Ask(ask.key or f"elicitation-{self._asks}", "elicitation/create", params, read)

    def _prepare_sample(self, ask: Sample, version: str | None) -> Ask:
        from ..core.sampling_and_elicitation import CreateMessageResult
        from ..core.types import WireModel
        from .input_required import Ask

        sampling = self._client_capability("sampling", "sampling/createMessage", {"sampling": {}})
        if ask.tools is not None or ask.tool_choice is not None:
            # 2025-11-25 client/sampling: servers MUST NOT send tools unless the client declared sampling.tools.
            if not lifecycle.at_least(version, lifecycle.SAMPLING_TOOLS) or "tools" not in sampling:
                raise self._missing({"sampling": {"tools": {}}}, "the client did not declare sampling.tools")
        messages = ask.messages
        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        params: dict[str, Any] = {
            "messages": [m.to_wire() if isinstance(m, WireModel) else m for m in messages],
            "maxTokens": ask.max_tokens,
        }
        for name, value in (
            ("systemPrompt", ask.system_prompt), ("temperature", ask.temperature), ("stopSequences", ask.stop_sequences),
            ("modelPreferences", ask.model_preferences), ("includeContext", ask.include_context),
            ("metadata", ask.metadata),
            ("tools", [t.to_wire() if isinstance(t, WireModel) else t for t in ask.tools] if ask.tools is not None else None),
            ("toolChoice", ask.tool_choice),
        ):
            if value is not None:
                params[name] = value
        return Ask(ask.key or f"sampling-{self._asks}", "sampling/createMessage", params, CreateMessageResult.from_wire)

    def _client_capability(self, name: str, method: str, needs: dict) -> dict:
        """The client's capability ``name`` for this request, or the era's error when it lacks it.

        Handshake era: CapabilityError (nothing is sent).  2026-07-28 basic/index §_meta: "If
        processing a request requires a capability the client did not include ... the server MUST
        return a MissingRequiredClientCapabilityError (-32021)".
        """
        caps = self.client_capabilities.get(name)
        if caps is None:
            raise self._missing(needs, f"{method}: the client did not declare the {name} capability")
        return caps

    def _missing(self, needs: dict, why: str) -> Exception:
        if self.request.envelope is not None:
            return MissingRequiredClientCapabilityError.needing(needs, why)
        return CapabilityError(why)

    def read_resource(self, uri: str) -> list:
        """This server's own resource ``uri``, read as a client would (``resources/read``): its contents.

        Returns ``TextResourceContents`` / ``BlobResourceContents``; raises ResourceNotFound.
        """
        from ..core.types import resource_contents_from_wire

        answer = self.connection.read_own_resource(self.request, uri)
        return [resource_contents_from_wire(item) for item in answer["contents"]]

    def complete_url_elicitation(self, elicitation_id: str) -> None:
        """Tell the client a URL-mode elicitation finished (``notifications/elicitation/complete``, 2025-11-25).

        2026-07-28 removed it: the client learns the outcome by retrying (CapabilityError there).
        """
        version = self.protocol_version
        if not lifecycle.at_least(version, lifecycle.ELICITATION_URL_MODE) or self.request.envelope is not None:
            raise CapabilityError(f"notifications/elicitation/complete does not exist in protocol version {version}")
        self.connection.notify("notifications/elicitation/complete", {"elicitationId": elicitation_id})


def with_context(plan: ArgumentPlan, kwargs: dict, connection: Caller, request: RequestContext) -> dict:
    """``kwargs`` plus a :class:`Context` for the parameter annotated with it, if the function has one."""
    if plan.context_param is not None:
        kwargs[plan.context_param] = Context(connection, request)
    return kwargs
