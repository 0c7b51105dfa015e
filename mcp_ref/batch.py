"""A JSON-RPC batch coming in (JSON-RPC 2.0 §6; MCP allows batches in 2025-03-26 only): its
answers are collected and sent together, as one array.  Loaded when the first batch arrives.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .errors import INVALID_REQUEST, InvalidRequest
from .jsonrpc import ErrorResponse, Request


def receive_batch(
    items: list,
    route: Callable,
    error: Callable,
    write: Callable[[list], None],
    fail_request: Callable[[object, Exception], None],
) -> None:
    """Route each item of an incoming batch (``route(item, batch)``); their answers go together through ``write``.

    An unreadable item is answered with ``error(error_dict, request_id)`` (the session's error for a message
    whose id may not have been readable); an ``initialize`` with an error of its own.  A malformed
    answer is not answered: the request of ours it answers fails at once
    (``fail_request(request_id, error)``), as :meth:`~mcp_ref.session.Session.receive` does for
    one that comes alone.
    """
    batch = Batch(write)
    for item in items:
        if isinstance(item, InvalidRequest) and item.answer:
            # JSON-RPC 2.0 §5: a Response is the reply to a request; nothing replies to one, however
            # malformed (an error carrying its id would pass for the answer to the peer's request
            # of that id).  Batches are allowed in 2025-03-26 only (basic §Batching).
            fail_request(
                item.request_id, InvalidRequest(f"the peer's answer is not valid: {item.message}")
            )
        elif isinstance(item, InvalidRequest):
            batch.expect()
            batch.add(error(item.to_error(), item.request_id))
        elif isinstance(item, Request) and item.method == "initialize":
            # 2025-03-26 basic/lifecycle: "The initialize request MUST NOT be part of a JSON-RPC batch".
            batch.expect()
            batch.add(
                ErrorResponse(
                    item.id,
                    {
                        "code": INVALID_REQUEST,
                        "message": "Invalid Request: initialize must not be part of a batch",
                    },
                )
            )
        elif isinstance(item, Answered):
            batch.expect()
            batch.add(item.reply)
        else:
            if isinstance(item, Request):
                batch.expect()
            route(item, batch)
    batch.seal()


class Answered:
    """An item of an incoming batch that its transport already answered (``reply``: a request
    refused past its client's share of the handler pool), in the request's place: its answer goes
    in the batch's one array (JSON-RPC 2.0 §6: the server "SHOULD respond with an Array containing
    the corresponding Response objects")."""

    def __init__(self, reply: ErrorResponse):
        self.reply = reply


class Batch:
    """Collects the answers to one incoming batch and sends them as one array."""

    def __init__(self, write: Callable[[list], None]):
        """``write`` sends the array of answers to the peer."""
        self.write = write
        self.replies: list = []
        self.outstanding = (
            1  # the "seal" reference: nothing is sent before all items are dispatched
        )
        self.lock = threading.Lock()

    def expect(self) -> None:
        """One more request of the batch will answer."""
        with self.lock:
            self.outstanding += 1

    def add(self, reply) -> None:
        """An item's answer (None: a notification's, which has none); the last one sends the array."""
        with self.lock:
            if reply is not None:
                self.replies.append(reply)
            self.outstanding -= 1
            finished = self.outstanding == 0
        if finished and self.replies:
            # JSON-RPC 2.0 §6: an all-notification batch gets no answer at all.
            self.write(self.replies)

    def seal(self) -> None:
        """Every item is dispatched: the array goes once the last answer is in."""
        self.add(None)
