"""The narrow views the client's modules have of one another, for type checking only.

The client's modules are layered: :mod:`~mcp_ref.client.client` (the public API) over
:mod:`~mcp_ref.client.connection` (the dispatcher and the caller's requests in both eras) over
what it loads when it is needed — the 2026-07-28 era's input rounds, the listen streams, the result cache and the answering of the server's requests (sampling, elicitation, roots).  A lower module that
holds an object of a higher one is typed with a Protocol from here, never with the class, so that
no module imports one above it, not even for the type checker.  Modules import this one under
``if TYPE_CHECKING:``: it never loads at run time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol

from ..extension import Extension
from ..feature_types import Root
from ..lifecycle import Lifecycle
from ..session import PendingRequest, RequestContext, Session
from .cache import ResultCache


class ClientSettings(Protocol):
    """What the connection and the answering of requests read of the :class:`~mcp_ref.client.Client`."""

    requested_version: str
    pinned_version: str | None
    client_info: dict[str, Any]
    max_pages: int
    max_items: int
    max_input_rounds: int
    cache_size: int
    sampling_handler: Callable[..., Any] | None
    sampling_tools: bool
    elicitation_handler: Callable[..., Any] | None
    elicitation_modes: tuple[str, ...]
    on_log: Callable[..., Any] | None
    on_resource_updated: Callable[[str], None] | None
    on_list_changed: Callable[[str], None] | None
    on_elicitation_complete: Callable[[str], None] | None
    #: Its extensions, the first given first (:class:`~mcp_ref.extension.Extension`).
    extensions: tuple[Extension, ...]

    @property
    def roots(self) -> list[Root] | None:
        """The roots the client exposes (None: no roots capability)."""

    @property
    def server_capabilities(self) -> dict:
        """The capabilities the server declared."""

    def capabilities(self, version: str | None = None) -> dict:
        """The capabilities the client declares at ``version``."""


class ToolHeaders(Protocol):
    """What the listings and a refused call use of :class:`~mcp_ref.client.tool_headers.KnownTools`."""

    def usable(self, tools: list) -> list:
        """The listed tools whose ``x-mcp-header`` declarations are valid (remembered)."""

    def learn(self, method: str, params: dict | None) -> bool:
        """List the tools again after -32020; True when the call's header parameters changed."""


class Connection(Protocol):
    """What the modules under the connection use of a :class:`~mcp_ref.client.connection.ClientConnection`."""

    client: ClientSettings
    session: Session
    lifecycle: Lifecycle
    modern: bool
    log_level: str | None
    metas: dict[tuple[str, tuple[str, ...], str | None], dict[str, Any]]
    #: ``tools/list_changed`` received and sessions begun so far.
    tools_changed: int

    @property
    def protocol_version(self) -> str | None:
        """The revision in use."""

    @property
    def known_tools(self) -> ToolHeaders | None:
        """The tools listed, for their ``x-mcp-header`` parameters (2026-07-28 over HTTP; else None)."""

    @property
    def cache(self) -> ResultCache:
        """The 2026-07-28 results kept by their ``ttlMs``."""

    def send_request(
        self,
        method: str,
        params: dict | None = None,
        *,
        declares: tuple[str, ...] = (),
        **options: Any,
    ) -> PendingRequest:
        """Send one request without waiting."""

    def request(self, method: str, params: dict | None = None, **options: Any) -> dict:
        """Send a request and wait for its final result."""

    def handle_request(self, context: RequestContext, method: str, params: dict) -> dict:
        """Answer one request of the server's."""

    def require_capability(self, capability: str, method: str) -> None:
        """CapabilityError unless the server declared ``capability``."""


class InputCall(Protocol):
    """What :mod:`mcp_ref.client.mrtr` uses of a :class:`~mcp_ref.client.connection.ModernCall`."""

    method: str
    params: dict[str, Any] | None
    options: dict[str, Any]
    declares: tuple[str, ...]
    rounds: int
    pending: PendingRequest
    cancel_reason: str | None
    contexts: list[RequestContext]
    settled: bool
    state_lock: threading.Lock
    retries: dict[type, int]

    @property
    def connection(self) -> Connection:
        """The connection the call travels on."""

    def finished(self) -> bool:
        """``done()``, under the state lock."""

    def settle(self, kind: str, result: dict) -> dict:
        """The final result of an answer of another ``resultType``."""

    def check_cancelled(self) -> None:
        """RequestCancelled if a ``cancel()`` took effect."""
