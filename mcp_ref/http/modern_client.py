"""The 2026-07-28 era over HTTP, client side: one POST per request, no session.

A request whose ``_meta`` names a protocol version is a 2026-07-28 (modern) request, and travels
as that revision's transport says (``ModernPosts._send_modern``): no session and no GET stream;
the ``MCP-Protocol-Version`` header from its ``_meta``, ``Mcp-Method`` and ``Mcp-Name`` from its
body, and ``Mcp-Param-*`` from the arguments its tool's ``x-mcp-header`` declarations name
(:mod:`mcp_ref.http.headers`); a broken response stream is not resumed but reported
(:class:`~mcp_ref.errors.ResponseStreamLost`: the client re-issues the request); cancelling
closes the request's response stream instead of sending ``notifications/cancelled``, and no other
notification is sent.  A part of :class:`~mcp_ref.http.client.HttpClientTransport`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from .. import lifecycle
from ..errors import AuthorizationError
from ..jsonrpc import Notification, Request
from ..session import OutgoingRequests
from .bounded_reads import (
    Inbox,
    RequestFailed,
    no_answer,
    read_bound,
    sending,
    timed_out,
    unreachable,
)
from .origins import CrossOriginRefused

log = logging.getLogger(__name__)


class ModernPosts:
    """The 2026-07-28 requests and notifications of :class:`~mcp_ref.http.client.HttpClientTransport`."""

    if TYPE_CHECKING:  # the transport's, which this class is a part of
        url: str
        http: Any
        connect_timeout: float
        _requests: OutgoingRequests | None
        _incoming: Inbox
        _input_schema: Callable[[str], dict | None] | None

        def _begin(self, request_id) -> None: ...
        def _finish(self, request_id) -> None: ...
        def _track(self, request_id, response) -> bool: ...
        def _abandon(self, request_id) -> None: ...
        def _abandoned_now(self, request_id) -> bool: ...
        def _deliver(self, response, request: Request, *, resumable: bool = True) -> None: ...
        def _fail(self, request_id, message: str) -> None: ...

    def _modern_headers(self, request: Request) -> dict:
        """The headers of a modern request (2026-07-28 streamable-http §Request Metadata)."""
        from .headers import InvalidHeaderDeclaration, request_headers

        params = request.params if isinstance(request.params, dict) else {}
        # "MCP-Protocol-Version ... MUST match the protocolVersion in the request's _meta".
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            # a modern request (lifecycle.is_modern): its _meta is a dict
            "MCP-Protocol-Version": str(
                cast(dict, lifecycle.meta_of(params))[lifecycle.PROTOCOL_VERSION]
            ),
        }
        schema = None
        if (
            request.method == "tools/call"
            and self._input_schema is not None
            and isinstance(params.get("name"), str)
        ):
            schema = self._input_schema(params["name"])
        try:
            headers.update(request_headers(request.method, params, schema))
        except InvalidHeaderDeclaration:  # never remembered (usable_tools leaves such tools out)
            headers.update(request_headers(request.method, params))
        return headers

    def _send_modern(self, data: bytes, request: Request) -> None:
        """POST one modern request and deliver its answer (JSON, or an SSE stream read to the end)."""
        import requests

        sending.request = (self, request.id)
        self._begin(request.id)
        try:
            bound = read_bound(self._requests, request.id)
            response = self.http.post(
                self.url,
                data=data,
                headers=self._modern_headers(request),
                stream=True,
                timeout=(self.connect_timeout, bound),
            )
            if self._track(request.id, response):
                self._deliver(response, request, resumable=False)
        except (requests.ConnectionError, requests.Timeout) as exc:
            failure = no_answer(request) if timed_out(exc) else unreachable(self.url, exc)
            self._incoming.put(RequestFailed(request.id, failure))
        except requests.RequestException as exc:
            if not self._abandoned_now(request.id):
                self._fail(request.id, f"HTTP request to {self.url} failed: {exc}")
        except (AuthorizationError, CrossOriginRefused) as exc:
            self._incoming.put(RequestFailed(request.id, exc))
        except Exception as exc:  # a worker must never die silently
            if self._abandoned_now(request.id):  # its socket was shut down under the reader
                log.debug("request %r: its abandoned response ended the read (%s)", request.id, exc)
            else:
                log.exception("HTTP request failed")
                self._fail(request.id, f"HTTP request failed: {exc}")
        finally:
            sending.request = (None, None)
            self._finish(request.id)

    def _modern_notification(self, message) -> None:
        """A notification in the modern era: a cancellation closes the request's stream; no other is sent.

        2026-07-28 streamable-http §Cancellation: "Closing the SSE response stream MUST be treated
        by the server as cancellation of that request"; the Note under §Sending Messages: "This
        revision of the core protocol defines no client-to-server notifications over Streamable HTTP".
        """
        if isinstance(message, Notification) and message.method == "notifications/cancelled":
            self._abandon((message.params or {}).get("requestId"))
        else:
            log.debug(
                "notification %s not sent: 2026-07-28 HTTP has no client notifications",
                getattr(message, "method", "?"),
            )
