"""A request of the caller's, as the handshake era sends it: one JSON-RPC request, one answer.

:meth:`mcp_ref.client.connection.ClientConnection.start` makes a :class:`Call` for every request
the caller sends (``client.call_tool()``, ``client.request()`` ...): sent at once, ``result()``
waits for the answer, ``cancel()`` stops it (over stdio the server is sent
``notifications/cancelled``).  In the 2026-07-28 era one request of the caller's may take several
on the wire; :class:`mcp_ref.client.modern.ModernCall` extends this class with those rounds, so a
reader of the handshake era needs nothing beyond this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.session import PendingRequest

if TYPE_CHECKING:
    from .interfaces import Connection

#: ``input_required`` rounds one request may take before the client gives up (a server that asks
#: forever must not hold the caller forever; 2026-07-28 mrtr lets a server ask again and again).
#: The default of ``Client(max_input_rounds=)``, which bounds a task's input rounds too.  (Here, not
#: in :mod:`~mcp_ref.client.modern`, so that a handshake-era client need not load that module.)
MAX_INPUT_ROUNDS = 16


class Call:
    """One request of the caller's: ``result()`` waits for its result, ``cancel()`` stops it."""

    #: True when the request declares the tasks extension (the 2026-07-28 era only).
    task = False
    #: The id of the task the server made of the call (2026-07-28, ``task=True``), once it made one.
    task_id: str | None = None
    #: ``input_required`` rounds answered so far (2026-07-28; a result reached through any is not cached).
    rounds = 0

    def __init__(self, connection: Connection, method: str, params: dict | None, options: dict):
        self._connection = connection
        self.method = method
        self._params = params
        self._options = options
        #: The JSON-RPC request on the wire now.
        self.pending: PendingRequest = connection.send_request(method, params, task=self.task, **options)

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
