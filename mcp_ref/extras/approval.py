"""Approving what a server asks of the client: ``Client(approve=hook, server_request_limit=...)``.

A server may ask the client to sample its model (``sampling/createMessage``), to ask the user
(``elicitation/create``) or for its roots (``roots/list``) — as requests of its own in the
handshake era, as the ``inputRequests`` of an ``input_required`` result (or of a task) in
2026-07-28.  Each such request, in either era, passes :func:`approve` before the client's handler
answers it (:meth:`mcp_ref.client.connection.ClientConnection.handle_request` is the one place
both eras answer them):

1. the rate limit: at most ``server_request_limit`` of them (the three methods share one bucket
   per client); one over it is refused with :class:`~mcp_ref.core.errors.LimitExceeded` (-32005) and
   logged.  2025-11-25 client/sampling §Security Considerations: "Clients **SHOULD** implement rate
   limiting"; 2025-11-25 client/elicitation §Security Considerations likewise (2026-07-28 keeps the
   sentence for sampling, drops it for elicitation; one limit covers all three here).
2. the hook: ``approve(request)`` — or ``approve(request, context)`` when it takes two arguments —
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

The hook runs on the thread that answers: a session worker in the handshake era (the server's
request waits for it), the caller's own thread in 2026-07-28, a task's worker for a 2025-11-25
client-hosted task (``Client(tasks=True)``, :mod:`mcp_ref.extras.hosted_tasks`: the limit is counted
before the task is made, the hook runs inside it, as the spec's sequence diagram "Task-Augmented
Sampling Request" shows the user's review after the ``CreateTaskResult``).  It may block, e.g. to ask a user.
``ping`` is answered by the session and never reaches the hook.

The module loads with the first server request to a client given ``approve`` or
``server_request_limit``: a client given neither never reads it.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..client.callbacks import call_handler
from ..core.errors import LimitExceeded, RequestRefused

if TYPE_CHECKING:
    from ..client.interfaces import Connection
    from ..core.session import RequestContext

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
#: The bucket of a client's :class:`~mcp_ref.extras.ratelimit.RateLimiter` (each client has its own limiter).
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


def check_limit(connection: Connection, method: str) -> None:
    """Count one server request against ``server_request_limit`` (if the client has one).

    Raises :class:`~mcp_ref.core.errors.LimitExceeded` over it (the limit and the method are logged,
    never the params).
    """
    client = connection.client
    limit = client.server_request_limit
    if limit is not None:
        wait = client.server_request_limiter.take(LIMIT_KEY, limit)
        if wait > 0:
            log.warning("refused the server's %s: over the limit of %s server requests to this client", method, limit)
            raise LimitExceeded.rate("server requests to this client", limit, wait)


def approve(connection: Connection, context: RequestContext, method: str, params: dict, *,
            limit: bool = True) -> dict | None:
    """The params to answer ``method`` with, after the rate limit (:func:`check_limit`; skipped when
    ``limit`` is False: the caller counted the request already) and the client's ``approve`` hook;
    None when the hook refused (the caller answers with :func:`refuse`).
    """
    client = connection.client
    if limit:
        check_limit(connection, method)
    hook = client.approve
    if hook is None:
        return params
    request = ServerRequest(method, copy.deepcopy(params), MODERN if connection.modern else HANDSHAKE)
    try:
        verdict = call_handler(hook, request, context)
    except Exception:  # a failing hook refuses; the server never sees why
        log.exception("the approve hook failed on the server's %s: refused", method)
        return None
    if verdict is True:
        return params
    if verdict is False:
        log.info("the approve hook refused the server's %s", method)
        return None
    if isinstance(verdict, ServerRequest):
        if verdict.method != method:
            log.error("the approve hook turned the server's %s into %s: refused", method, verdict.method)
            return None
        verdict = verdict.params
    if isinstance(verdict, dict):
        return copy.deepcopy(verdict)
    log.error("the approve hook returned %s for the server's %s (expected True, False, a ServerRequest or "
              "a dict of params): refused", type(verdict).__name__, method)
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
