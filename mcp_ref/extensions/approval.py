"""Approving what a server asks of the client: two client extensions, :class:`ServerRequestLimit`
(``Client(server_request_limit=...)``) and :class:`Approval` (``Client(approve=hook)``).

A server may ask the client to sample its model (``sampling/createMessage``), to ask the user
(``elicitation/create``) or for its roots (``roots/list``) — as requests of its own in the
handshake era, as the ``inputRequests`` of an ``input_required`` result (or of a task) in
2026-07-28.  Each such request, in either era, passes the client's extensions' ``intercept_request``
before the client's handler answers it
(:meth:`mcp_ref.client.connection.ClientConnection.handle_request` is the one place both eras
answer them); the shorthand puts the limit before the hook:

1. the rate limit (:class:`ServerRequestLimit`): at most ``server_request_limit`` of them (the
   three methods share one bucket per client); one over it is refused with
   :class:`~mcp_ref.errors.LimitExceeded` (-31005) and logged.  2025-11-25 client/sampling §Security Considerations: "Clients **SHOULD** implement rate
   limiting"; 2025-11-25 client/elicitation §Security Considerations likewise (2026-07-28 keeps the
   sentence for sampling, drops it for elicitation; one limit covers all three here).
2. the hook (:class:`Approval`): ``approve(request)`` — or ``approve(request, context)`` when it takes two arguments —
   sees a :class:`ServerRequest` and returns True (answer it), False (refuse it), or an edited
   request (a :class:`ServerRequest`, or a dict taken as the new params) to answer instead; edited
   params still go through the handler's checks.  A hook that raises refuses: the exception is
   logged here, and the server sees only the refusal.  2025-11-25 client/sampling §User Interaction
   Model: "For trust & safety and security, there **SHOULD** always be a human in the loop with the
   ability to deny sampling requests", and applications SHOULD "Allow users to view and edit prompts
   before sending"; client/elicitation §Security Considerations (2025-11-25 and 2026-07-28):
   "Clients **SHOULD** implement user approval controls"; 2025-11-25 client/roots §Implementation
   Guidelines: clients SHOULD "Prompt users for consent before exposing roots to servers".

A refusal is answered as each spec page says (:func:`refuse`): an elicitation is *declined*
(``{"action": "decline"}``); sampling and roots get an error (:class:`RequestRefused`, code -1).
In 2026-07-28 a refused sampling or roots request makes the caller's request fail with that error
(the retry is not sent: 2026-07-28 client/sampling §Error Handling, "If an error occurs or the user declines
the sampling request, the client does not need to replay the initial call"); a declined
elicitation travels in the retry's ``inputResponses``.

A request the server cancels while the hook runs (``context.is_cancelled``: the server's
``notifications/cancelled``, its timeout, or ``tasks/cancel`` of a client-hosted task) is not
answered, whatever the hook returns: its handler is never called, and it ends as cancelled
(2025-11-25 basic/utilities/cancellation: receivers SHOULD "Stop processing the cancelled request").

The hook runs on the thread that answers: a session worker in the handshake era (the server's
request waits for it), the caller's own thread in 2026-07-28, a task's worker for a 2025-11-25
client-hosted task (``Client(tasks=True)``, :mod:`mcp_ref.extensions.hosted_tasks`, between the two:
the limit is counted before the task is made, the hook runs inside it, as the spec's sequence diagram
"Task-Augmented Sampling Request" shows the user's review after the ``CreateTaskResult``).  It may
block, e.g. to ask a user.  ``ping`` is answered by the session and never reaches the hook.

The module loads when a client is given ``approve`` or ``server_request_limit``: a client given
neither never reads it.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..client.callbacks import call_handler
from ..errors import RequestCancelled, RequestRefused
from ..extension import Extension
from .ratelimit import RateLimit, RateLimiter

if TYPE_CHECKING:
    from ..client.answering import IncomingRequest

log = logging.getLogger(__name__)

SAMPLING, ELICITATION, ROOTS = "sampling/createMessage", "elicitation/create", "roots/list"
#: The server's requests that pass the rate limit and the ``approve`` hook (every one a client answers).
GATED = frozenset({SAMPLING, ELICITATION, ROOTS})
#: The eras a :class:`ServerRequest` names.
HANDSHAKE, MODERN = "handshake", "modern"

#: What the server is told when its sampling request is refused (the spec's own example message).
SAMPLING_REFUSED = "User rejected sampling request"
#: What the server is told when its roots request is refused (no spec wording: in sampling's style).
ROOTS_REFUSED = "The user refused to share roots"
#: The bucket of a client's :class:`~mcp_ref.extensions.ratelimit.RateLimiter` (each client has its own limiter).
LIMIT_KEY = "server requests"


@dataclass(frozen=True)
class ServerRequest:
    """A request from the server, as the ``approve`` hook sees it (``Client(approve=hook)``).

    ``method`` is ``"sampling/createMessage"``, ``"elicitation/create"`` or ``"roots/list"``;
    ``params`` its params as on the wire (a copy: changing it changes nothing — return an edited
    request instead, e.g. ``request.replace(maxTokens=100)``); ``era`` is ``"handshake"`` (the
    server sent the request) or ``"modern"`` (2026-07-28: one of the ``inputRequests`` of an
    ``input_required`` result or of a task).
    """

    method: str
    params: dict[str, Any] = field(default_factory=dict)
    era: str = HANDSHAKE

    def replace(self, **changes: Any) -> ServerRequest:
        """A copy with params keys changed: ``request.replace(maxTokens=100, systemPrompt=None)``.

        Keys are the wire's names (``messages``, ``systemPrompt``, ``requestedSchema`` ...); a key
        given None is removed.
        """
        params = copy.deepcopy(self.params)
        for key, value in changes.items():
            if value is None:
                params.pop(key, None)
            else:
                params[key] = value
        return ServerRequest(self.method, params, self.era)


class ServerRequestLimit(Extension):
    """``Client(server_request_limit=...)``: at most ``limit`` (``"10/minute"``, a
    :class:`~mcp_ref.extensions.ratelimit.RateLimit` or ``(count, seconds)``) sampling, elicitation and
    roots requests from the server, counted in :attr:`limiter`; one over it is refused with
    :class:`~mcp_ref.errors.LimitExceeded` and logged (the limit and the method, never the params)."""

    name = "server request limit"

    def __init__(self, limit: Any):
        #: The limit (a :class:`~mcp_ref.extensions.ratelimit.RateLimit`).
        self.limit = RateLimit.of(limit)
        #: The client's one token bucket (its ``clock`` is replaceable, for tests).
        self.limiter = RateLimiter(max_keys=1)

    def intercept_request(self, call: IncomingRequest, proceed: Callable[[], Any]) -> Any:
        """Count a request of :data:`GATED` (refused over the limit); the others go on."""
        if call.method in GATED and self.limit is not None:
            wait = self.limiter.take(LIMIT_KEY, self.limit)
            if wait > 0:
                log.warning(
                    "refused the server's %s: over the limit of %s server requests to this client",
                    call.method,
                    self.limit,
                )
                raise self.limit.refusal("server requests to this client", wait)
        return proceed()


class Approval(Extension):
    """``Client(approve=hook)``: ``hook`` is shown each request of :data:`GATED` before it is
    answered (see the module docstring); a refused one is answered by :func:`refuse`."""

    name = "approval"

    def __init__(self, hook: Callable[..., Any]):
        if not callable(hook):
            raise TypeError(f"approve must be a callable, not {type(hook).__name__}")
        #: ``hook(request)`` or ``hook(request, context)``, given a :class:`ServerRequest`.
        self.hook = hook

    def intercept_request(self, call: IncomingRequest, proceed: Callable[[], Any]) -> Any:
        """Run the hook on a request of :data:`GATED`: answer it with the params it approved, or refuse it."""
        if call.method not in GATED:
            return proceed()
        approved = self.approve(call)
        if call.context.is_cancelled:
            # 2025-11-25 basic/utilities/cancellation §Behavior Requirements: "Receivers of
            # cancellation notifications SHOULD: Stop processing the cancelled request".  The server gave up (or a client-hosted task was cancelled)
            # while the hook ran: the handler is not called, whatever the hook said, and the
            # request ends as cancelled (no answer; a task stays cancelled).
            log.info(
                "the server cancelled its %s while the approve hook ran: not answered", call.method
            )
            raise RequestCancelled(f"{call.method} was cancelled while the approve hook ran")
        if approved is None:
            return refuse(call.method)
        call.params = approved
        return proceed()

    def approve(self, call: IncomingRequest) -> dict | None:
        """The params to answer ``call`` with, after the hook; None when the hook refused."""
        method = call.method
        era = MODERN if call.connection.modern else HANDSHAKE
        request = ServerRequest(method, copy.deepcopy(call.params), era)
        try:
            verdict = call_handler(self.hook, request, call.context)
        except Exception:  # a failing hook refuses; the server never sees why
            log.exception("the approve hook failed on the server's %s: refused", method)
            return None
        if verdict is True:
            return call.params
        if verdict is False:
            log.info("the approve hook refused the server's %s", method)
            return None
        if isinstance(verdict, ServerRequest):
            if verdict.method != method:
                log.error(
                    "the approve hook turned the server's %s into %s: refused",
                    method,
                    verdict.method,
                )
                return None
            verdict = verdict.params
        if isinstance(verdict, dict):
            return copy.deepcopy(verdict)
        log.error(
            "the approve hook returned %s for the server's %s (expected True, False, a ServerRequest or "
            "a dict of params): refused",
            type(verdict).__name__,
            method,
        )
        return None


def refuse(method: str) -> dict:
    """The answer to a refused request: an elicitation's result, else raises :class:`RequestRefused`."""
    if method == ELICITATION:
        # 2025-11-25 client/elicitation §Response Actions: "Decline (action: "decline"): User
        # explicitly declined the request"; "The content field is typically omitted".
        return {"action": "decline"}
    if method == SAMPLING:
        # 2025-11-25 client/sampling §Error Handling: "User rejected sampling request: -1".
        raise RequestRefused(SAMPLING_REFUSED)
    # client/roots §Error Handling lists no refusal: the same error as a refused sampling request.
    raise RequestRefused(ROOTS_REFUSED)
