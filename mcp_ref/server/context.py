"""What a handler sees of its request: :class:`Context`.

A tool, resource or prompt function that declares a parameter annotated
``Context`` receives one.  Through it the handler reports progress, logs,
notices cancellation, and calls back into the client (sampling, elicitation,
roots) — waiting for those answers is safe, because handlers run on the session's
handler pool while its one reader thread reads the answer (:mod:`mcp_ref.session`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TypeVar, cast

from .. import lifecycle
from ..errors import CapabilityError, RequestCancelled
from ..request import DEFAULT, Default
from .seams import Caller, state_of

if TYPE_CHECKING:
    from ..feature_types import Root
    from ..request import RequestContext
    from ..sampling_and_elicitation import CreateMessageResult, ElicitResult
    from .asking import Answers, Done
    from .input_required import Ask
    from .signatures import ArgumentPlan

_T = TypeVar("_T")

#: ``ctx.sample``'s ``maxTokens`` when none is given (the request requires one; FastMCP users pass none).
DEFAULT_MAX_TOKENS = 512


class Context:
    """Given to a handler that declares a parameter annotated ``Context``.

    It reports progress and log messages, tells whether the client cancelled
    the request, and sends requests to the client (sampling, elicitation,
    roots) — waiting for the answer is safe: another thread reads while a
    handler runs.  Every call does its work at once and may
    also be awaited (``await ctx.info(...)`` in an ``async def`` handler, as
    FastMCP writes it): see :mod:`mcp_ref.server.asking`.
    """

    def __class_getitem__(cls, parameters: Any) -> type[Context]:
        """``Context[ServerSession, None]``, as the official SDK's examples annotate it: the class."""
        return cls

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
        return (
            self.connection.client_capabilities
            if envelope is None
            else envelope.client_capabilities
        )

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
        """Who is calling (:class:`~mcp_ref.extensions.policy.Principal`): a stable ``id``, the token's
        ``scopes`` and ``claims`` when there is one.  The same object ``Server(authorize=...)`` sees."""
        return self.connection.principal

    @property
    def _http_hooks(self) -> Any:
        # What the HTTP server transports offer beyond the transport contract
        # (http/server/request.py ServerHooks); None off HTTP (see session.py Transport).
        return getattr(self.connection.session.transport, "http_hooks", None)

    @property
    def http(self) -> Any:
        """The HTTP request of this call (``HttpRequest``: ``headers``, ``cookies``, ``remote_addr``, ``environ``,
        ``user`` ...), per request; None over stdio and in memory (spec_notes/deployment.md §ctx.http)."""
        hooks = self._http_hooks
        return None if hooks is None else hooks.http_request(self.request_id)

    @property
    def lifespan_context(self) -> Any:
        """What ``Server(lifespan=fn)``'s context manager gave (a database pool, a client ...); None without one."""
        return self.connection.server.lifespan_context

    @property
    def is_cancelled(self) -> bool:
        """True once the client cancelled this request."""
        return self.request.is_cancelled

    def check_cancelled(self) -> Done[None]:
        """Raise RequestCancelled if the client cancelled this request (no response is then sent)."""
        self.request.check_cancelled()
        return done(None)

    def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> Done[bool]:
        """Send progress for this request (only if the client asked for it by sending a progress token).

        When an extension runs the handler outside the request (``RequestState.runner``), the
        runner takes it instead: ``message``, or ``"progress/total"``.
        """
        runner = self._runner()
        if runner is not None:
            runner.report(
                message or (f"{progress:g}/{total:g}" if total is not None else f"{progress:g}")
            )
            return done(True)
        return done(self.request.report_progress(progress, total, message))

    def __getattr__(self, name: str) -> Any:
        """An attribute an extension adds (``Extension.context_attributes``: ``ctx.start_task``)."""
        if name.startswith("_"):
            raise AttributeError(name)
        attribute = self.connection.server.context_attribute(name)
        if attribute is None:  # naming mcp_ref's equivalent of FastMCP's (ctx.session ...)
            from .fastmcp_names import missing_attribute

            raise missing_attribute(self, name)
        return attribute(self)

    def _runner(self) -> Any:
        """What runs this handler outside its request (an extension's, with ``ask`` and ``report``), or None."""
        return state_of(self.request).runner

    def sleep(self, seconds: float) -> Done[None]:
        """Wait ``seconds``, or raise RequestCancelled as soon as the call is cancelled.

        It blocks the handler's thread, also when awaited (an ``async def`` handler has a loop of its own)."""
        if self.request.cancelled.wait(seconds):
            raise RequestCancelled(f"request {self.request_id!r} was cancelled")
        return done(None)

    def close_sse_stream(self) -> Done[bool]:
        """Over Streamable HTTP, close the connection carrying this request's SSE stream (SSE polling).

        The stream goes on: later messages and the answer wait in the event store, and the client
        resumes with GET + ``Last-Event-ID`` after the ``retry`` interval (2025-11-25 on; before,
        a server "SHOULD NOT close the SSE stream before sending the JSON-RPC response").  False
        when there is no such stream (stdio, JSON replies, the legacy transport, a session of an
        earlier revision), or no connection carries it now (the client has not resumed it since
        it was last closed: nothing to close).  With handlers inline (the default), the POST's
        own response, once closed, ends only when the handler returns: see
        ``McpWsgiApp(inline_handlers=...)``.
        """
        hooks = self._http_hooks
        return done(hooks is not None and hooks.close_stream(self.request_id))

    def log(
        self,
        first: Any = None,
        /,
        data: Any = None,
        logger: str | None = None,
        *,
        level: str | None = None,
        message: Any = None,
        logger_name: str | None = None,
    ) -> Done[bool]:
        """Send a ``notifications/message`` if its level passes the client's chosen level: its
        ``logging/setLevel`` (handshake era) or this request's ``io.modelcontextprotocol/logLevel``
        (2026-07-28, where a request without one gets no log messages at all).

        ``ctx.log("warning", data)`` (the official SDK's order, and ``level=``, ``data=`` or
        ``message=``, ``logger=`` or ``logger_name=`` by name); FastMCP 2.x's order,
        ``ctx.log(message, level="warning")``, is taken too (its default level: ``"info"``).

        Nothing is sent once the request is cancelled (False): 2026-07-28 basic/transports/stdio
        §Cancellation, servers "MUST NOT send any further messages for it".  Nor, for a
        2026-07-28 request, once it has ended (a thread the handler left behind): server/utilities/
        logging §Per-request log level, messages go "on the response stream of that request,
        before the final response"; ``notifications/message`` is request-scoped.  In the handshake
        era a log message belongs to the session, not to a request (2025-11-25
        server/utilities/logging), and is still sent after the answer.  The check that the
        request has not ended and the sending are one step under ``request.send_lock``, which
        its end takes too: a message that passed the check is written before the final response."""
        request = self.request
        if request.is_cancelled:
            return done(False)
        if level is None and (data is not None or message is not None):  # log(level, data)
            level, text = first, (data if data is not None else message)
        else:  # FastMCP 2.x: log(message, level=...)
            level = level or "info"
            text = first if first is not None else (data if data is not None else message)
        with request.send_lock:
            if request.envelope is not None and request.ended:
                return done(False)
            sent = self.connection.log(
                level,
                text,
                logger or logger_name,
                related_request_id=self.request_id,
                envelope=request.envelope,
            )
        return done(sent)

    def debug(
        self, data: Any, logger: str | None = None, *, logger_name: str | None = None
    ) -> Done[bool]:
        """``log("debug", ...)``."""
        return self.log("debug", data, logger or logger_name)

    def info(
        self, data: Any, logger: str | None = None, *, logger_name: str | None = None
    ) -> Done[bool]:
        """``log("info", ...)``."""
        return self.log("info", data, logger or logger_name)

    def warning(
        self, data: Any, logger: str | None = None, *, logger_name: str | None = None
    ) -> Done[bool]:
        """``log("warning", ...)``."""
        return self.log("warning", data, logger or logger_name)

    def error(
        self, data: Any, logger: str | None = None, *, logger_name: str | None = None
    ) -> Done[bool]:
        """``log("error", ...)``."""
        return self.log("error", data, logger or logger_name)

    def sample(
        self,
        messages: str | list,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
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
        SamplingMessage objects; ``max_tokens`` (the request's required ``maxTokens``) defaults to
        :data:`DEFAULT_MAX_TOKENS`.  The result's ``.text`` is its text, when it is text.
        ``tools`` and ``tool_choice`` (2025-11-25) need the client's
        ``sampling.tools``.  ``key`` names the ask in a 2026-07-28 ``inputRequests`` (see :meth:`gather`).
        """
        from .input_required import Sample

        return self.gather(
            Sample(
                messages,
                max_tokens,
                system_prompt,
                temperature,
                stop_sequences,
                model_preferences,
                include_context,
                metadata,
                tools,
                tool_choice,
                key=key,
            ),
            timeout=timeout,
        )[0]

    def elicit(
        self,
        message: str,
        schema: dict | type | None = None,
        *,
        key: str | None = None,
        timeout: float | None | Default = DEFAULT,
        response_type: dict | type | None = None,
    ) -> ElicitResult:
        """Ask the user for structured input (form-mode ``elicitation/create``, 2025-06-18 and later).

        ``schema`` is a flat object schema of primitive properties, or a dataclass (or
        TypedDict) of such fields, whose schema is sent: an accepted answer is then also
        in ``result.data`` as an instance of it.  Accepted content is validated against
        the schema (an accept without content as an empty object); a reply that does not
        match, or whose ``action`` is not ``"accept"``, ``"decline"`` or ``"cancel"``, raises
        InvalidParams.  ``response_type``: FastMCP's name for ``schema``.
        """
        from .input_required import Elicit

        schema = schema if schema is not None else response_type
        if schema is None:
            raise TypeError("ctx.elicit() needs schema= (FastMCP's response_type=)")
        return self.gather(Elicit(message, schema, key=key), timeout=timeout)[0]

    def elicit_url(
        self,
        message: str,
        url: str,
        elicitation_id: str | None = None,
        *,
        key: str | None = None,
        timeout: float | None | Default = DEFAULT,
    ) -> ElicitResult:
        """Send the user to a URL (URL-mode elicitation, 2025-11-25 and later; ``elicitation_id``
        is the handshake era's, required there and gone in 2026-07-28)."""
        from .input_required import ElicitUrl

        return self.gather(ElicitUrl(message, url, elicitation_id, key=key), timeout=timeout)[0]

    def list_roots(
        self, *, key: str | None = None, timeout: float | None | Default = DEFAULT
    ) -> Answers[Root]:
        """The client's roots (``roots/list``)."""
        from .input_required import ListRoots

        return self.gather(ListRoots(key=key), timeout=timeout)[0]

    def gather(self, *asks, timeout: float | None | Default = DEFAULT) -> Answers[Any]:
        """Ask the client for several things at once: ``Elicit``, ``ElicitUrl``, ``Sample``, ``ListRoots``.

        Returns their answers in order (``ElicitResult``, ``CreateMessageResult``, a list of ``Root``).
        Handshake era: one request to the client after another.  2026-07-28: any answer missing ends
        this run with an ``InputRequiredResult``, and the client's retry runs the handler again from
        the top (``mcp_ref.server.input_required``): code before the asks runs once per round, so put
        side effects after them (the same for ``elicit``, ``sample``, ``list_roots``: they ask through it).
        """
        from .asking import gather

        return gather(
            [self._prepare(ask) for ask in asks],
            self._runner(),
            self.connection,
            self.request,
            timeout,
        )

    def _prepare(self, ask) -> Ask:
        """An ``Elicit`` / ``ElicitUrl`` / ``Sample`` / ``ListRoots`` as a request this client can take."""
        from .asking import prepare

        self._asks += 1
        return prepare(self, ask, self._asks)

    def read_resource(self, uri: str) -> Answers[Any]:
        """This server's own resource ``uri``, read as a client would (``resources/read``): its contents.

        Returns ``TextResourceContents`` / ``BlobResourceContents``; raises ResourceNotFound.
        """
        from ..types import resource_contents_from_wire
        from .asking import Answers

        answer = self.connection.read_own_resource(self.request, uri)
        return Answers(resource_contents_from_wire(item) for item in answer["contents"])

    def complete_url_elicitation(self, elicitation_id: str) -> Done[None]:
        """Tell the client a URL-mode elicitation finished (``notifications/elicitation/complete``, 2025-11-25).

        2026-07-28 removed it: the client learns the outcome by retrying (CapabilityError there).
        """
        version = self.protocol_version
        if (
            not lifecycle.at_least(version, lifecycle.ELICITATION_URL_MODE)
            or self.request.envelope is not None
        ):
            raise CapabilityError(
                f"notifications/elicitation/complete does not exist in protocol version {version}"
            )
        self.connection.notify(
            "notifications/elicitation/complete", {"elicitationId": elicitation_id}
        )
        return done(None)


def done(value: _T) -> Done[_T]:
    """``value`` as a Context call's already-done result: awaitable (a :class:`Done`) when the call
    comes from an ``async def`` handler (a loop runs on this thread), else the plain value, which
    ``json`` and the rest of a sync handler's code take as they always did."""
    asyncio = sys.modules.get("asyncio")  # not loaded: no loop can be running
    try:
        if asyncio is None or asyncio.get_running_loop() is None:
            return cast("Done[_T]", value)
    except RuntimeError:  # no loop on this thread: a sync handler
        return cast("Done[_T]", value)
    from .asking import Done

    return Done(value)


def with_context(
    plan: ArgumentPlan, kwargs: dict, connection: Caller, request: RequestContext
) -> dict:
    """``kwargs`` plus a :class:`Context` for the parameter annotated with it, if the function has
    one: on ``connection``, or on the stand-in an extension running the handler set
    (``RequestState.caller``)."""
    if plan.context_param is not None:
        stand_in = getattr(request.role_state, "caller", None)
        kwargs[plan.context_param] = Context(connection if stand_in is None else stand_in, request)
    return kwargs
