"""A 2026-07-28 call past its first answer: MRTR's input rounds and the retries
(:class:`~mcp_ref.client.connection.ModernCall`, whose module docstring lists them).

MRTR, the client's side (2026-07-28 basic/patterns/mrtr): a modern server that needs the client's
input answers ``resultType: "input_required"`` with ``inputRequests`` (a map of sampling,
elicitation and roots requests) and perhaps a ``requestState``.  The client answers each with the
handlers that answer a handshake-era server's requests, and sends the request again, with a new
id, carrying ``inputResponses`` and the state echoed exactly.  :func:`drive` runs the rounds and
the retries; :func:`next_round` makes each input round.  It loads at a call's first answer that
is not its final result, or at its first ``cancel()`` or ``done()``.

Bounded: at most ``Client(max_input_rounds=)`` rounds per call, at most :data:`MAX_INPUT_REQUESTS`
requests per round, each retry as :data:`RETRIES` says.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import lifecycle
from ..errors import (
    HeaderMismatchError,
    InvalidResult,
    LimitExceeded,
    McpError,
    ResponseStreamLost,
    UnsupportedProtocolVersionError,
)
from ..lifecycle import MRTR_METHODS
from ..session import RequestContext
from .answering import HANDLERS
from .fallback import pick_version

if TYPE_CHECKING:
    from .interfaces import InputCall

#: Input requests one ``input_required`` result may carry.
MAX_INPUT_REQUESTS = 64
#: Times a request whose HTTP response stream broke is re-issued before the caller gets the error.
MAX_REISSUES = 2
#: The errors a call retries, each at most this many times: -32022 with a version from the error's
#: ``supported`` list, a lost HTTP response stream re-issued, -32020 after the tools are listed
#: again (see :func:`retry`).  ``ModernCall.result`` names the same three.
RETRIES: dict[type[Exception], int] = {
    UnsupportedProtocolVersionError: 1,
    ResponseStreamLost: MAX_REISSUES,
    HeaderMismatchError: 1,
}


def retried_as(error: Exception) -> type[Exception]:
    """The :data:`RETRIES` entry ``error`` counts against (its class, or the class it derives from)."""
    return next(kind for kind in RETRIES if isinstance(error, kind))


def drive(call: InputCall) -> dict:
    """The final result of a call whose first answer was not it: answer ``input_required``
    rounds, retry what :data:`RETRIES` allows; each way on is a new request, with a new id."""
    params = call.params
    while True:
        try:
            result = call.pending.result()
        except tuple(RETRIES) as exc:
            call.check_cancelled()  # a cancelled call retries nothing
            kind = retried_as(exc)
            if call.retries.get(kind, 0) >= RETRIES[kind] or not retry(call, exc, params):
                raise
            call.retries[kind] = call.retries.get(kind, 0) + 1
        else:
            # absent: "MUST treat ... as complete"
            kind = result.get("resultType", lifecycle.COMPLETE)
            if kind == lifecycle.COMPLETE:
                # the answer came after a cancel() that took effect (it said True): that wins
                call.check_cancelled()
                return result
            if kind != lifecycle.INPUT_REQUIRED:
                return call.settle(kind, result)
            call.check_cancelled()  # a cancel() that took effect wins, as over a result
            params = next_round(call, call.params, result)
        call.check_cancelled()
        # mrtr: "The JSON-RPC id MUST be different between the initial request and the retry".
        call.pending = call.connection.send_request(
            call.method, params, declares=call.declares, **call.options
        )
        # cancel() came meanwhile, perhaps seeing the previous request only
        if call.cancel_reason is not None:
            call.pending.cancel(call.cancel_reason)


def retry(call: InputCall, error: Exception, params: dict | None) -> bool:
    """Make ready to send the call again after ``error`` (one of :data:`RETRIES`); False when it
    is not retried.  -32022: a version from the error's ``supported`` list (basic/versioning),
    else the error.  -32020: the tools listed again
    (:meth:`~mcp_ref.client.tool_headers.KnownTools.learn`), retried when the tool's header
    parameters are now other than the call sent (never off HTTP, where no header is sent).  A
    lost response stream: re-issued (changelog, SEP-2575)."""
    connection = call.connection
    if isinstance(error, UnsupportedProtocolVersionError):
        choice = pick_version(error.supported, connection.client.pinned_version)
        if choice is None:
            return False
        connection.session.protocol_version = choice
        return True
    if isinstance(error, HeaderMismatchError):
        known = connection.known_tools
        return known is not None and known.learn(call.method, params)
    return True


def finished(call: InputCall) -> bool:
    """``call.done()``, under its state lock: settled, cancelled, or its answer ends it (no
    ``input_required`` round and no retry comes after it)."""
    if call.settled or call.cancel_reason is not None:
        return True
    if not call.pending.done():
        return False
    try:
        answer = call.pending.result()  # it came: at once
    except tuple(RETRIES) as exc:
        # retried as often as it may be (a -32020 only if the tool's headers can be learnt)
        kind = retried_as(exc)
        return call.retries.get(kind, 0) >= RETRIES[kind]
    except BaseException:  # an error answer, a timeout: the call's outcome
        return True
    # input_required for a request no server may ask for input in ends it: InvalidResult
    if (
        answer.get("resultType", lifecycle.COMPLETE) != lifecycle.INPUT_REQUIRED
        or call.method not in MRTR_METHODS
    ):
        return True
    # the next round would be one too many
    return call.rounds >= call.connection.client.max_input_rounds


def cancel(call: InputCall, reason: str | None) -> bool:
    """``call.cancel(reason)``: at whatever round it is (the server is told, as the transport
    requires; an input handler running for it sees its context cancelled).  False if the call's
    outcome was fixed already (``done()``)."""
    with call.state_lock:
        if call.finished():
            return False
        call.cancel_reason = reason or "cancelled"
    for context in list(call.contexts):
        context.cancelled.set()
    # between rounds no request is on the wire: result() raises RequestCancelled before the next
    call.pending.cancel(reason)
    return True


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
    if call.rounds > call.connection.client.max_input_rounds:
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
    limit = call.connection.client.max_input_rounds
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
        # while the handler runs, cancelling the call cancels its context too
        call.contexts.append(context)
        try:
            call.check_cancelled()  # after the append: a cancel() that comes later sees the context
            responses[key] = connection.handle_request(context, method, context.params)
        except McpError as exc:
            raise type(exc)(
                f"{call.method}: could not give the server's {method} input: {exc.message}",
                code=exc.code,
                data=exc.data,
            ) from None
        finally:
            call.contexts.remove(context)
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
