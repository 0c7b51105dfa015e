"""A request of the caller's, as the handshake era sends it: one JSON-RPC request, one answer.

:meth:`mcp_ref.client.connection.ClientConnection.start` makes a :class:`Call` for every request the caller
sends (``client.call_tool()``, ``client.request()`` ...): sent at once, ``result()`` waits for the answer,
``cancel()`` stops it (over stdio the server is sent ``notifications/cancelled``).  In the 2026-07-28 era one
request of the caller's may take several on the wire; :class:`mcp_ref.client.modern.ModernCall` extends this
class with those rounds, so a reader of the handshake era needs nothing beyond this module.  An extension's
``start_request`` may make a call of its own, extending one of these (see :mod:`mcp_ref.extension`).
:class:`ToolCall` is the caller's view of a ``tools/call``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..session import PendingRequest
from ..types import CallToolResult

if TYPE_CHECKING:
    from .interfaces import Connection

#: ``input_required`` rounds one request may take before the client gives up (a server that asks forever must
#: not hold the caller forever; 2026-07-28 mrtr lets a server ask again and again).  The default of
#: ``Client(max_input_rounds=)``, which bounds a task's input rounds too.  (Here, not in :mod:`~mcp_ref.client.modern`.)
MAX_INPUT_ROUNDS = 16


class Call:
    """One request of the caller's: ``result()`` waits for its result, ``cancel()`` stops it."""

    #: ``input_required`` rounds answered so far (2026-07-28; a result reached through any is not cached).
    rounds = 0

    def __init__(
        self,
        connection: Connection,
        method: str,
        params: dict | None,
        options: dict,
        declares: tuple[str, ...] = (),
    ):
        self._connection, self.method, self._params, self._options = (
            connection,
            method,
            params,
            options,
        )
        #: The extensions its 2026-07-28 per-request capabilities declare (on every round).
        self.declares = declares
        #: The JSON-RPC request on the wire now.
        self.pending: PendingRequest = connection.send_request(
            method, params, declares=declares, **options
        )

    @property
    def id(self):
        """The JSON-RPC id of the request on the wire now."""
        return self.pending.id

    @property
    def connection(self) -> Connection:
        """The connection the call travels on."""
        return self._connection

    def done(self) -> bool:
        """True once the call has settled."""
        return self.pending.done()

    def cancel(self, reason: str | None = None) -> bool:
        """Cancel the request (the server is told, as the transport requires); False if it had finished."""
        return self.pending.cancel(reason)

    def result(self) -> dict:
        """Wait for the result (raises RequestTimeout, RequestCancelled, McpError ...)."""
        return self.pending.result()


class ToolCall:
    """A ``tools/call`` in flight (from :meth:`Client.start_tool_call`): ``result()`` or ``cancel()``.

    One call may take several requests on the wire (2026-07-28 input rounds and retries, an
    extension's call's own requests): ``request_id`` is the ``tools/call``'s current one."""

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
        return CallToolResult.from_wire(self.call.result())

    def cancel(self, reason: str | None = None) -> bool:
        """Cancel the call (over stdio the server is sent ``notifications/cancelled``; over 2026-07-28 HTTP the
        request's response stream is closed; an extension's call may do otherwise); False if it had finished."""
        return self.call.cancel(reason)

    def done(self) -> bool:
        """True once the call has settled."""
        return self.call.done()
