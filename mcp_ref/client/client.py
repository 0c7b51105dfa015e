"""The public API of the client role: :class:`Client` and :class:`ToolCall`.

A :class:`Client` is connected when it is constructed (so it works with or without ``with``);
``close()`` — or leaving the ``with`` block — shuts the connection and, for stdio, the server
process down.  Any number of threads may call it at once.

It speaks both eras of the protocol with the same API: the stateless 2026-07-28 revision when the
server does (found with ``server/discover``), and otherwise the ``initialize`` handshake of
2024-11-05 to 2025-11-25. ``client.era`` and ``client.protocol_version`` say which; ``era=`` and
``protocol_version=`` pin one.

The server may call back: pass ``sampling_handler``, ``elicitation_handler`` and ``roots`` to
declare those capabilities (a handler is called as ``handler(params)``, or ``handler(params,
context)`` if it takes two arguments: ``context.is_cancelled`` then tells it the server gave up);
``on_log``, ``on_resource_updated`` and ``on_list_changed`` receive notifications.  What the server
sends is handled by :class:`~mcp_ref.client.connection.ClientConnection` (answered in
:mod:`mcp_ref.client.answering`, loaded with the first request or notification).

Everything beyond the protocol is an extension (:mod:`mcp_ref.extension`); the keyword arguments
and methods standing for this package's own (``approve=``, ``task=`` ...) are the shorthand,
:mod:`mcp_ref.client.shorthand`, loaded the first time one of them is used.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

from .. import lifecycle
from ..errors import CapabilityError, ConnectionClosed
from ..lifecycle import __version__
from ..request import DEFAULT, Default
from ..session import DEFAULT_TIMEOUT, PendingRequest, ProgressCallback
from ..types import CallToolResult, DiscoverResult, InitializeResult, Tool
from .connection import (
    AUTO,
    HANDSHAKE,
    MAX_INPUT_ROUNDS,
    MODERN,
    PROBE_TIMEOUT,
    Call,
    ClientConnection,
    built,
    resolve_era,
)

if TYPE_CHECKING:
    from ..extension import Extension
    from ..feature_types import (
        Completion,
        GetPromptResult,
        LogMessage,
        Page,
        Prompt,
        ReadResourceResult,
        Resource,
        ResourceTemplate,
        Root,
    )
    from ..sampling_and_elicitation import (
        CreateMessageParams,
        CreateMessageResult,
        ElicitParams,
        ElicitResult,
    )
    from ..types import Implementation
    from .cache import ResultCache
    from .listening import Subscription

#: ``Client(max_pages=)``'s default: :data:`mcp_ref.pagination.DEFAULT_MAX_PAGES` (named, not
#: imported, so that a client that follows no listing does not load the pagination module).
DEFAULT_MAX_PAGES = 1000
#: ``Client(max_items=)``'s default: the items one ``list_tools()`` (or other listing) gathers.
DEFAULT_MAX_ITEMS = 100_000
#: ``Client(cache_size=)``'s default: :data:`mcp_ref.client.cache.DEFAULT_MAX_ENTRIES` (likewise).
DEFAULT_CACHE_SIZE = 256
#: How long ``Client.close()`` waits for the connection's end: its own handlers to return.
CLOSE_WAIT = 5.0

SamplingHandler = Callable[["CreateMessageParams"], "CreateMessageResult | dict"]
ElicitationHandler = Callable[["ElicitParams"], "ElicitResult | dict"]


class Client:
    """An MCP client over one transport; see the module docstring.

    ``timeout`` is the default per-request timeout in seconds (None: wait forever);
    ``initialize_timeout`` bounds connecting alone (``server/discover`` and ``initialize`` together: one
    deadline; default: ``timeout``), e.g. to give a slow-starting server longer than each request.  ``era``: ``"auto"``
    (2026-07-28 when the server speaks it, else the handshake), ``"modern"`` or ``"handshake"``;
    ``protocol_version`` pins one revision (and so its era; default: the newest the server speaks):
    a server that answers with another is refused (UnsupportedProtocolVersionError).
    ``probe_timeout``: over stdio, how long ``era="auto"`` waits for an answer to
    ``server/discover`` before it takes the server for a handshake-era one (default 10 s; stdio
    §Backward Compatibility); a modern server slower to start that then refuses ``initialize``
    with -32022 is asked ``server/discover`` again.  ``trace(direction, data)`` sees every message. ``log_level``: with
    ``on_log``, the level asked of a server that declares logging (default "info"; None: none).
    ``cache_size``: the 2026-07-28 results (listings, resource reads) kept while their ``ttlMs``
    says they are fresh, at most this many (0: no cache); see :attr:`cache`.

    ``extensions``: what it adds beyond the protocol (:mod:`mcp_ref.extension`), the first
    given outermost; ``approve``, ``server_request_limit`` and ``tasks`` build extensions that
    follow them.  ``approve(request)`` is shown each sampling, elicitation or roots request of the
    server before it is answered, and returns True, False (refused) or an edited request;
    ``server_request_limit`` (``"10/minute"``) bounds how many the server may send
    (:mod:`mcp_ref.extensions.approval`).

    What a server may make the client do is bounded, each past its bound raising
    :class:`~mcp_ref.errors.LimitExceeded` (``data.limit``) for that call only: ``max_pages``
    (default 1,000) pages followed by ``list_tools()`` and the other listings (a repeated cursor is
    an error at once); ``max_items`` (default 100,000) items gathered by one of those listings over
    all its pages; ``max_input_rounds`` (default 16) rounds of input requests answered for one
    request (2026-07-28 ``input_required``) or one task (then cancelled with ``tasks/cancel``). The
    size of one message is the transport's: ``max_message_size`` of :meth:`stdio` and :meth:`http`
    (4 MiB).  ``tasks=True`` runs the server's 2025-11-25 task-augmented sampling and elicitation
    requests as client-hosted tasks (:mod:`mcp_ref.extensions.hosted_tasks`).  These three, and
    ``get_task``, ``cancel_task``, ``list_tasks``, ``task_result``, ``hosted_tasks`` and
    ``server_request_limiter``, are the shorthand's (:mod:`mcp_ref.client.shorthand`).
    """

    def __init__(
        self,
        transport,
        *,
        name: str = "mcp-ref",
        version: str = __version__,
        protocol_version: str | None = None,
        era: str = AUTO,
        timeout: float | None = DEFAULT_TIMEOUT,
        initialize_timeout: float | None | Default = DEFAULT,
        sampling_handler: SamplingHandler | None = None,
        sampling_tools: bool = False,
        elicitation_handler: ElicitationHandler | None = None,
        elicitation_modes: Sequence[str] = ("form",),
        roots: Iterable[Root | dict | str] | None = None,
        on_log: Callable[[LogMessage], None] | None = None,
        log_level: str | None = "info",
        on_resource_updated: Callable[[str], None] | None = None,
        on_list_changed: Callable[[str], None] | None = None,
        on_elicitation_complete: Callable[[str], None] | None = None,
        trace: Callable[[str, bytes], None] | None = None,
        cache_size: int = DEFAULT_CACHE_SIZE,
        max_pages: int = DEFAULT_MAX_PAGES,
        max_items: int = DEFAULT_MAX_ITEMS,
        max_input_rounds: int = MAX_INPUT_ROUNDS,
        probe_timeout: float = PROBE_TIMEOUT,
        extensions: Iterable[Extension] = (),
        **shorthand: Any,
    ):
        era, pinned = resolve_era(era, protocol_version)
        for setting, value, kind in (
            ("max_pages", max_pages, int),
            ("max_items", max_items, int),
            ("max_input_rounds", max_input_rounds, int),
            ("probe_timeout", probe_timeout, (int, float)),
        ):
            if isinstance(value, bool) or not isinstance(value, kind) or not value > 0:
                what = "int" if kind is int else "number of seconds"
                raise ValueError(f"{setting} must be a positive {what}, not {value!r}")
        #: Pages ``list_tools()`` and the other listings follow before raising LimitExceeded.
        self.max_pages = max_pages
        #: Items ``list_tools()`` and the other listings gather, over all their pages, before
        #: raising LimitExceeded (each page is bounded by the transport's ``max_message_size``).
        self.max_items = max_items
        #: Rounds of the server's input requests answered for one request (2026-07-28 ``input_required``)
        #: or one task, before the request fails with LimitExceeded (and the task is cancelled).
        self.max_input_rounds = max_input_rounds
        self._extensions_lock = threading.RLock()
        #: Its extensions, the first given outermost (add one with :meth:`add_extension`).
        self.extensions: tuple[Extension, ...] = ()
        if shorthand:
            from .shorthand import build

            extensions = (*extensions, *build(**shorthand))
        for extension in extensions:
            self.add_extension(extension)
        #: Seconds the era probe waits for a stdio server that does not answer ``server/discover``.
        self.probe_timeout = probe_timeout
        self.client_info = {"name": name, "version": version}
        #: The revision pinned by the caller (None: the newest the server speaks).
        self.pinned_version = pinned
        #: The handshake-era revision ``initialize`` asks for.
        self.requested_version = pinned if era == HANDSHAKE and pinned else lifecycle.LATEST_VERSION
        self.sampling_handler = sampling_handler
        self.sampling_tools = sampling_tools
        self.elicitation_handler = elicitation_handler
        self.elicitation_modes = tuple(elicitation_modes)
        self._roots = None if roots is None else _as_roots(roots)
        self.on_log = on_log
        self.on_resource_updated = on_resource_updated
        self.on_list_changed = on_list_changed
        self.on_elicitation_complete = on_elicitation_complete
        self.cache_size = cache_size
        #: The dispatcher: the handshake, the lifecycle, what the server sends.
        self.connection = ClientConnection(
            self, transport, default_timeout=timeout, name="mcp-client", trace=trace
        )
        #: The JSON-RPC session under it (the reader thread, pending requests, timeouts).
        self.session = self.connection.session
        self.session.start()
        try:
            self.connection.connect(era, pinned, initialize_timeout, self.probe_timeout)
            self._shorthand_options({})  # what the server offers may need an extension at once
            # logs arrive by default (mcp_ref.client.logs)
            if on_log is not None and log_level is not None:
                from .logs import ask_for_logs

                ask_for_logs(self, log_level)
            if self.on_list_changed is not None and self.connection.modern:
                self.connection.streams.feed.start(
                    initialize_timeout if initialize_timeout is not DEFAULT else timeout
                )
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
    ) -> Client:
        """Start ``command`` (a list: ``["python", "server.py"]``) and connect to it over stdio.

        ``stderr`` is ``"inherit"``, ``"capture"``, ``"discard"`` or a callable
        per line; other keywords are :class:`Client`'s.
        """
        from ..stdio import DEFAULT_MAX_MESSAGE_SIZE, SubprocessTransport

        transport = SubprocessTransport(
            command,
            env=env,
            cwd=cwd,
            stderr=stderr,
            max_message_size=max_message_size or DEFAULT_MAX_MESSAGE_SIZE,
            shutdown_timeout=shutdown_timeout,
        )
        try:
            return cls(transport, **options)
        except BaseException as exc:
            # Client() may fail before it owns the transport (a bad protocol_version or root):
            # do not leave the server process running.  (close() is idempotent.)
            transport.close()
            transport.release()  # nobody may have read its output yet
            named = "exited with status" in str(exc)  # by the transport (stdio.read)
            if isinstance(exc, ConnectionClosed) and transport.returncode is not None and not named:
                # The server exited before answering: its status is the first clue.
                raise ConnectionClosed(
                    f"{exc} (the server exited with status {transport.returncode})"
                ) from exc
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
        max_message_size: int | None = None,
        min_retry_delay: float | None = None,
        max_retry_delay: float | None = None,
        **options,
    ) -> Client:
        """Connect to an MCP server over HTTP.

        ``transport``: ``"auto"`` (Streamable HTTP, falling back to the
        2024-11-05 HTTP+SSE transport when the server answers the initialize
        POST with 400, 404 or 405), ``"streamable"`` or ``"sse"`` (``url`` is
        then the SSE endpoint, and the era the handshake's).  In the 2026-07-28
        era the first request is ``server/discover``; a 4xx answer without a
        modern JSON-RPC error means a handshake-era server, and the client goes
        on with ``initialize`` (and from there, if need be, to HTTP+SSE).  ``headers`` go on every HTTP request;
        ``auth`` is a requests auth hook (a bearer token ...).  ``max_message_size`` bounds a
        JSON answer and each SSE event (bytes; default 4 MiB, as stdio's): past it the request
        fails with LimitExceeded.  ``min_retry_delay`` / ``max_retry_delay`` (seconds; default
        0.1 and 30) clamp the server's SSE ``retry`` before a stream is re-opened (see
        :class:`~mcp_ref.http.client.HttpClientTransport`).  ``http_trace``: a callable that sees
        every HTTP request, response and SSE event (``mcp-ref inspect`` shows them), called on the
        transport's threads with an ``HttpRequestSeen``, ``HttpResponseSeen`` or ``SseEventSeen``
        (:mod:`mcp_ref.http.exchange_trace`; raw, secrets included; one that raises is logged once
        and ignored).  Other keywords are :class:`Client`'s.  The proxy variables (an HTTP, HTTPS or
        SOCKS proxy: ``requests[socks]``), ``REQUESTS_CA_BUNDLE`` and ``~/.netrc`` are read once,
        here, as requests reads them (:func:`~mcp_ref.http.bounded_reads.resolve_environment`).

        No MCP server at ``url`` raises :class:`~mcp_ref.errors.ServerUnreachable` (a
        ``ConnectionError``) whose message names the URL, what was tried and what to do: nothing
        answered (refused, unknown host, TLS, ``connect_timeout`` passed: ``status`` None), or
        what answered was not MCP (a 404 or 405, an HTML page: ``status`` is its HTTP status;
        ``Client.http("http://host:8000")`` says to try ``http://host:8000/mcp``).  The server's
        own refusals are :class:`~mcp_ref.errors.McpError` (a JSON-RPC error, a 401 asking for
        ``auth=``).
        """
        from ..http.client import open_transport

        return cls(
            open_transport(  # may set options["era"] (to "handshake" for the 2024-11-05 transport)
                url,
                client_options=options,
                headers=headers,
                auth=auth,
                mode=transport,
                connect_timeout=connect_timeout,
                verify=verify,
                max_message_size=max_message_size,
                min_retry_delay=min_retry_delay,
                max_retry_delay=max_retry_delay,
            ),
            **options,
        )

    @classmethod
    def in_memory(cls, server, **options) -> Client:
        """Run ``server`` (a :class:`~mcp_ref.server.Server`) in this process and connect to it.

        The two ends talk through an in-process transport
        (:func:`mcp_ref.memory.memory_pair`): the same JSON bytes as
        stdio, with no subprocess — for tests and for embedding.  The server's
        side of the connection ends when the client closes.  Keywords are
        :class:`Client`'s.

        The server's lifespan (``Server(lifespan=...)``) is entered as it connects, unless it is,
        and held until :meth:`close`: the last in-memory client open on the server to close exits
        it (unless the server is also being served: ``run()``, a WSGI app), and what that exit
        raises comes out of its ``close()``.  So each test with its own client gets a freshly
        entered lifespan (:mod:`mcp_ref.server.lifespan`, ``docs/lifespan.md``).
        """
        from ..memory import open_client

        client, finish = open_client(cls, server, options)
        client._after_close = finish  # its close() lets go of the server's side and lifespan
        return client

    # -- lifecycle ---------------------------------------------------------------------------

    def capabilities(self, version: str | None = None) -> dict:
        """The capabilities this client declares at ``version`` (default: the handshake revision it
        asks for), from the handlers it was given."""
        version = version or self.requested_version
        caps: dict[str, Any] = {}
        if (
            self._roots is not None
            or self.sampling_handler is not None
            or self.elicitation_handler is not None
        ):
            from .answering import offered  # what the client answers of the server's requests

            caps = offered(self, version)
        if self.extensions:
            from ..extension import declare_for_client

            declare_for_client(self.extensions, version, caps)
        return caps

    def add_extension(self, extension: Extension) -> None:
        """Take ``extension``: its ``setup(client)`` runs now; it comes after those the client has.  Its
        capabilities reach a handshake-era server only in ``initialize``: then use ``Client(extensions=)``."""
        with self._extensions_lock:
            extension.setup(self)
            self.extensions = (*self.extensions, extension)

    @property
    def cache(self) -> ResultCache:
        """The 2026-07-28 results kept by their caching hints (``clear()`` it to re-fetch everything)."""
        return self.connection.cache

    @property
    def era(self) -> str:
        """``"modern"`` (2026-07-28: no session, every request self-describing) or ``"handshake"``."""
        return MODERN if self.connection.modern else HANDSHAKE

    @property
    def initialize_result(self) -> InitializeResult | None:
        """The server's answer to ``initialize`` (None in the modern era: see ``discover_result``)."""
        return self.connection.initialize_result

    @property
    def discover_result(self) -> DiscoverResult | None:
        """The server's answer to ``server/discover`` (None in the handshake era)."""
        return self.connection.discover_result

    @property
    def protocol_version(self) -> str:
        """The protocol revision in use: negotiated by ``initialize``, or chosen from ``server/discover``."""
        return cast(str, self.connection.protocol_version)  # set by connect(), in __init__

    @property
    def _answer(self) -> Any:
        """The server's DiscoverResult (modern) or InitializeResult, set by connect()."""
        connection = self.connection
        return connection.discover_result if connection.modern else connection.initialize_result

    @property
    def server_info(self) -> Implementation | None:
        """The server's ``serverInfo`` (name, version ...); None if a modern server did not say."""
        return self._answer.server_info

    @property
    def server_capabilities(self) -> dict:
        """The capabilities the server declared."""
        return self._answer.capabilities

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        # what the modern envelopes say changed
        if name in _DECLARING and "connection" in self.__dict__:
            self.connection.metas.clear()

    @property
    def instructions(self) -> str | None:
        """The server's ``instructions``, if it sent any."""
        return self._answer.instructions

    def close(self) -> None:
        """End the connection (for stdio: stop the server process). Idempotent.  It waits
        :data:`CLOSE_WAIT` seconds at most for the client's own handlers (sampling, elicitation,
        roots) to return; a handler that ignores its cancellation longer is left running, with a
        warning (a thread cannot be stopped from outside)."""
        self.connection.stop_feed()
        self.session.close()
        if not self.session.wait_closed(CLOSE_WAIT):
            logging.getLogger(__name__).warning(
                "%s: closed without waiting longer: a handler of this client still runs after %s s",
                self.session.name,
                CLOSE_WAIT,
            )
        self._after_close()

    def _after_close(self):  # type: () -> None
        """What :meth:`close` runs last, once the connection has ended: nothing.  A client of
        ``Client.in_memory`` lets go of the server's lifespan here (its exit's exception comes out
        of ``close()``): :meth:`in_memory` sets it on the instance."""

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- requests --------------------------------------------------------------------------

    def request(self, method: str, params: dict | None = None, **options) -> dict:
        """Send any request and return its raw ``result`` dict (options as Session.send_request)."""
        return self.connection.request(method, params, **options)

    def ping(self, *, timeout: float | None | Default = DEFAULT) -> None:
        """``ping``: raises if the server does not answer.

        2026-07-28 has no ``ping``; there the client asks ``server/discover`` instead (and
        keeps its fresh answer in ``discover_result``).
        """
        if self.connection.modern:
            raw = self.connection.request("server/discover", None, timeout=timeout)
            discovered = built(
                DiscoverResult.from_wire, "server/discover", raw, self.protocol_version
            )
            self.connection.discover_result = discovered
            return
        self.connection.request("ping", None, timeout=timeout)

    # tools

    def list_tools(self) -> list[Tool]:
        """Every tool, following pagination."""
        from .listings import every_item

        return every_item(self.connection, "tools/list")

    def list_tools_page(self, cursor: str | None = None) -> Page:
        """One page of tools; pass ``page.next_cursor`` for the next."""
        from .listings import page

        return page(self.connection, "tools/list", cursor)

    def start_tool_call(
        self,
        name: str,
        arguments: dict | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | None | Default = DEFAULT,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
        **options: Any,
    ) -> ToolCall:
        """Start a ``tools/call`` without waiting: a :class:`ToolCall` to wait on or cancel (arguments and options: :meth:`call_tool`'s)."""
        self.connection.require_capability("tools", "tools/call")
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        options.update(
            timeout=timeout,
            on_progress=on_progress,
            reset_timeout_on_progress=reset_timeout_on_progress,
            max_total_timeout=max_total_timeout,
        )
        return ToolCall(
            self.connection.start("tools/call", params, **self._shorthand_options(options))
        )

    def call_tool(self, name: str, arguments: dict | None = None, **options) -> CallToolResult:
        """Call a tool and wait for its result.

        ``arguments`` may hold Python values: a ``datetime``, ``date``, ``time``, ``UUID``,
        ``Decimal``, ``timedelta``, path, Enum member, dataclass or pydantic model is sent as its
        JSON form, written as an mcp_ref server writes its results (:mod:`mcp_ref.jsonable`; RFC
        3339 for dates and times), which is what such a parameter of an mcp_ref server takes.
        JSON values are sent as they are.  A value with no JSON form raises ValueError naming the
        tool and the argument (``arguments.when``); nothing is sent.

        Options: ``on_progress(progress, total, message)``, ``timeout`` (seconds), ``reset_timeout_on_progress``,
        ``max_total_timeout``, and ``task``.  A tool that fails returns a result with ``is_error`` True; a
        protocol failure (unknown tool ...) raises McpError.

        ``task=True`` (2026-07-28, the tasks extension): the request declares that it takes a task, and if the
        server answers with one, the call polls it to its end, answering its ``input_required`` asks with the
        client's handlers (:mod:`mcp_ref.extensions.client_tasks`); the result is the same.  At 2025-11-25
        (``task=True`` or ``{"ttl": ms}``) the call is a task when the server and the tool allow it, always
        for a tool that requires it (:mod:`mcp_ref.extensions.client_tasks_2025`).
        """
        return self.start_tool_call(name, arguments, **options).result()

    # resources

    def list_resources(self) -> list[Resource]:
        """Every resource, following pagination."""
        from .listings import every_item

        return every_item(self.connection, "resources/list")

    def list_resources_page(self, cursor: str | None = None) -> Page:
        """One page of resources."""
        from .listings import page

        return page(self.connection, "resources/list", cursor)

    def list_resource_templates(self) -> list[ResourceTemplate]:
        """Every resource template, following pagination."""
        from .listings import every_item

        return every_item(self.connection, "resources/templates/list")

    def list_resource_templates_page(self, cursor: str | None = None) -> Page:
        """One page of resource templates."""
        from .listings import page

        return page(self.connection, "resources/templates/list", cursor)

    def read_resource(
        self, uri: str, *, timeout: float | None | Default = DEFAULT
    ) -> ReadResourceResult:
        """Read a resource's contents (raises ResourceNotFound for an unknown URI, in either era).

        2026-07-28 server/resources §Error Handling: a resource that is not found is -32602 with
        the URI in ``data`` (it was -32002 before); the exception keeps the code it came with.
        """
        from .resources import read_resource

        return read_resource(self.connection, uri, timeout)

    def subscribe(self, uri: str) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (to ``on_resource_updated``,
        which gets the updates about the URIs subscribed here, and no others, in both eras).

        Handshake era: ``resources/subscribe``.  2026-07-28, which has no such method: the
        callbacks' ``subscriptions/listen`` stream is re-opened with ``uri`` in its filter
        (acknowledged before this returns); :class:`CapabilityError` if its acknowledgment leaves
        ``uri`` out (the server refuses to watch it), as a handshake-era server's refusal raises.
        """
        self.connection.streams.subscribe(uri)

    def unsubscribe(self, uri: str) -> None:
        """Stop updates about ``uri`` to ``on_resource_updated`` (handshake era:
        ``resources/unsubscribe``, unless an open :meth:`listen` stream still wants ``uri``: that
        stream still gets them, the callback no longer; 2026-07-28: the callbacks' stream is
        re-opened without it)."""
        self.connection.streams.unsubscribe(uri)

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Iterable[str] = (),
        on_notification: Callable[[str, dict], None] | None = None,
        timeout: float | None | Default = DEFAULT,
    ) -> Subscription:
        """Open a stream of change notifications; returns it once the server acknowledged it.

        ``tools`` / ``prompts`` / ``resources``: their ``list_changed`` notifications;
        ``resource_uris``: ``notifications/resources/updated`` for those resources.
        ``on_notification(method, params)`` receives each on the callback thread.  The returned
        :class:`~mcp_ref.client.listening.Subscription` says what the server agreed to
        (``acknowledged``); ``close()`` it, or use it as a context manager.

        2026-07-28: one ``subscriptions/listen`` request (basic/patterns/subscriptions).  Handshake
        era: the same object, filtering what the server sends the session (resource URIs are
        subscribed with ``resources/subscribe``), so the code is the same for both.
        """
        from .listening import build_filter

        wanted = build_filter(
            tools=tools, prompts=prompts, resources=resources, resource_uris=resource_uris
        )
        stream = self.connection.streams.open(wanted, on_notification)
        stream.wait_acknowledged(self.session.default_timeout if timeout is DEFAULT else timeout)
        return stream

    # prompts

    def list_prompts(self) -> list[Prompt]:
        """Every prompt, following pagination."""
        from .listings import every_item

        return every_item(self.connection, "prompts/list")

    def list_prompts_page(self, cursor: str | None = None) -> Page:
        """One page of prompts."""
        from .listings import page

        return page(self.connection, "prompts/list", cursor)

    def get_prompt(self, name: str, arguments: dict | None = None) -> GetPromptResult:
        """Render a prompt.

        Argument values are sent as strings, as the schema's ``arguments: {[key: string]: string}``
        (GetPromptRequest) requires (:func:`mcp_ref.jsonable.as_text`): a string as it is; a date,
        a UUID, a Decimal, an Enum member ... as the string a server writes it as
        (``date(2027, 1, 1)`` is ``"2027-01-01"``, what an mcp_ref prompt's ``day: date`` takes);
        a number, a boolean, a list or a dataclass as its JSON text (``42``, ``true``).  A value
        with no JSON form is a ValueError naming the prompt and the argument.
        """
        from .prompts import get_prompt

        return get_prompt(self.connection, name, arguments)

    # logging and completion

    def set_logging_level(self, level: str | None) -> None:
        """Ask for the server's log messages at ``level`` and above (to ``on_log``).

        Handshake era: ``logging/setLevel`` (asked again of the new session that replaces an expired
        one over HTTP).  2026-07-28 has no such request: every request carries
        ``io.modelcontextprotocol/logLevel`` in its ``_meta`` instead, and ``None`` turns log messages
        off again (basic/index: "If absent, the server MUST NOT send any notifications/message ...").
        """
        from .logs import set_level

        set_level(self.connection, level)

    def complete(
        self,
        *,
        argument: str,
        value: str,
        prompt: str | None = None,
        resource: str | None = None,
        context: dict | None = None,
    ) -> Completion:
        """Ask for completions of a prompt argument (``prompt=name``) or template variable (``resource=template``).

        ``value`` and the ``context`` values (arguments already chosen) are sent as strings, as
        CompleteRequest's schema requires, converted as :meth:`get_prompt` converts its arguments
        (:func:`mcp_ref.client.completion.complete`).
        """
        from .completion import complete

        return complete(self.connection, argument, value, prompt, resource, context)

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
            raise CapabilityError(
                "this client did not declare the roots capability (pass roots= when creating it)"
            )
        self._roots = _as_roots(roots)
        # 2026-07-28: the server asks for roots each time (input_required)
        if not self.connection.modern:
            self.connection.notify("notifications/roots/list_changed")

    # -- the shorthand (mcp_ref.client.shorthand): its methods and properties, and call options

    def _shorthand_options(self, options: dict) -> dict:
        """``options`` as the shorthand takes them (:func:`~mcp_ref.client.shorthand.take_options`):
        loaded when a call asks for ``task``, or a handshake-era server offers that capability."""
        if "task" in options or (
            not self.connection.modern and "tasks" in self.server_capabilities
        ):
            from .shorthand import take_options

            return take_options(self, options)
        return options

    def __getattr__(self, name: str) -> Any:
        """The shorthand's members (``get_task``, ``hosted_tasks`` ...), looked up on first use."""
        return _shorthand_member(self, name, "Client")


class ToolCall:
    """A ``tools/call`` in flight (from :meth:`Client.start_tool_call`): ``result()`` or ``cancel()``.

    One call may take several requests on the wire (2026-07-28 input rounds and retries, an
    extension's call's own requests): ``request_id`` is the ``tools/call``'s current one.  The
    shorthand's members (``task_id``: :mod:`mcp_ref.client.shorthand`) are looked up on first use."""

    def __init__(self, call: Call):
        self.call = call

    @property
    def pending(self) -> PendingRequest:
        """The JSON-RPC request on the wire now."""
        return self.call.pending

    @property
    def request_id(self):
        """The JSON-RPC id of the call (of its current round, in the 2026-07-28 era)."""
        return self.call.id

    def result(self) -> CallToolResult:
        """Wait for the tool's result (raises RequestTimeout, RequestCancelled, McpError ...)."""
        version = self.call.connection.protocol_version
        return built(CallToolResult.from_wire, "tools/call", self.call.result(), version)

    def cancel(self, reason: str | None = None) -> bool:
        """Cancel the call (over stdio the server is sent ``notifications/cancelled``; over
        2026-07-28 HTTP the request's response stream is closed; an extension's call may do
        otherwise); False if it had finished."""
        return self.call.cancel(reason)

    def done(self) -> bool:
        """True once the call has settled."""
        return self.call.done()

    def __getattr__(self, name: str) -> Any:
        """The shorthand's members, looked up on first use."""
        return _shorthand_member(self, name, "ToolCall")


def _shorthand_member(owner: Any, name: str, kind: str) -> Any:
    """``owner.name`` from the shorthand's members for ``kind`` (``"Client"``, ``"ToolCall"``:
    :data:`mcp_ref.client.shorthand.MEMBERS`); a private or special name is never there (and
    loads nothing)."""
    if name.startswith("_"):
        raise AttributeError(f"{type(owner).__name__!r} object has no attribute {name!r}")
    from .shorthand import MEMBERS, member

    return member(owner, name, MEMBERS[kind])


_DECLARING = {
    "_roots",
    "sampling_handler",
    "sampling_tools",
    "elicitation_handler",
    "elicitation_modes",
    "extensions",
    "client_info",
}


def _as_roots(roots: Iterable[Root | dict | str]) -> list[Root]:
    from .answering import as_root

    return [as_root(r) for r in roots]
