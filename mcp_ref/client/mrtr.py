"""MRTR, the client's side (2026-07-28 basic/patterns/mrtr): answering a server's ``inputRequests``.

A modern server that needs the client's input answers ``resultType: "input_required"`` with
``inputRequests`` (a map of sampling, elicitation and roots requests) and perhaps a
``requestState``.  The client answers each with the handlers that answer a handshake-era server's
requests, and sends the request again, with a new id, carrying ``inputResponses`` and the state
echoed exactly.  :class:`~mcp_ref.client.connection.ModernCall` drives the rounds; this module makes
each one.  It loads when a server first asks for input.

Bounded: at most ``Client(max_input_rounds=)`` rounds per call, at most :data:`MAX_INPUT_REQUESTS`
requests per round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import InvalidResult, LimitExceeded, McpError
from ..lifecycle import MRTR_METHODS
from ..session import RequestContext
from .answering import HANDLERS

if TYPE_CHECKING:
    from .interfaces import InputCall

#: Input requests one ``input_required`` result may carry.
MAX_INPUT_REQUESTS = 64


def next_round(call: InputCall, params: dict | None, result: dict) -> dict:
    """The params of the call's next round, given the ``input_required`` ``result`` of this one.

    Only for the requests a server may ask for input in: 2026-07-28 mrtr §Supported Requests,
    "Servers MUST NOT send InputRequiredResult responses on any other client requests"; and
    basic/index §ResultType: a ``resultType`` the client does not recognize "MUST be considered
    invalid".  Any other request's ``input_required`` raises InvalidResult, its input requests
    unanswered (no handler runs, nothing is sent again).
    """
    if call.method not in MRTR_METHODS:
        raise InvalidResult(
            f"{call.method}: the server answered resultType 'input_required', which only "
            f"{', '.join(sorted(MRTR_METHODS))} may have; its input requests are not answered"
        )
    call.rounds += 1
    if call.rounds > call.max_input_rounds:
        raise too_many_rounds(call)
    params = dict(params or {})
    requests = result.get("inputRequests")
    if requests is not None:
        params["inputResponses"] = answer(call, requests)
    if "requestState" in result:
        # mrtr: "the client MUST echo back the exact value"; without one, "MUST NOT include one".
        params["requestState"] = result["requestState"]
    return params


def too_many_rounds(call: InputCall) -> LimitExceeded:
    """The error of a call whose server still asks for input after ``max_input_rounds`` rounds."""
    limit = call.max_input_rounds
    return LimitExceeded(
        f"{call.method}: the server still needed input after {limit} rounds; this client "
        f"answers at most {limit} (max_input_rounds)",
        data={"limit": limit},
    )


def answer(call: InputCall, requests: Any) -> dict:
    """The ``inputResponses`` for an ``inputRequests`` map, from the client's handlers."""
    if not isinstance(requests, dict) or len(requests) > MAX_INPUT_REQUESTS:
        raise McpError(
            f"{call.method}: the server's inputRequests is not a map of at most "
            f"{MAX_INPUT_REQUESTS} requests"
        )
    connection = call.connection
    responses: dict[str, Any] = {}
    for key, ask in requests.items():
        ask = ask if isinstance(ask, dict) else {}
        method, params = ask.get("method"), ask.get("params")
        # mrtr §InputRequests: sampling, elicitation or roots, what a client answers
        if not isinstance(method, str) or method not in HANDLERS:
            raise McpError(
                f"{call.method}: the server asked for {method!r}, which no client answers"
            )
        context = RequestContext(
            connection.session,
            f"{call.pending.id}:{key}",
            method,
            params if isinstance(params, dict) else {},
        )
        with call.input_handler(context):
            try:
                responses[key] = connection.handle_request(context, method, context.params)
            except McpError as exc:
                raise type(exc)(
                    f"{call.method}: could not give the server's {method} input: {exc.message}",
                    code=exc.code,
                    data=exc.data,
                ) from None
    return responses


class ProgressAcrossRounds:
    """A call's ``on_progress`` across its rounds: only progress beyond what was already reported.

    Each round is a new request with a new progress token, and a server that re-runs its handler
    for the retry (as mcp_ref's does) reports the same steps again; the caller sees one call whose
    progress only increases (2026-07-28 basic/patterns/progress: "The progress value MUST increase
    with each notification").
    """

    __slots__ = ("callback", "reported")

    def __init__(self, callback):
        self.callback = callback
        self.reported: float | None = None

    def __call__(self, progress, total, message) -> None:
        if self.reported is not None and progress <= self.reported:
            return
        self.reported = progress
        self.callback(progress, total, message)
