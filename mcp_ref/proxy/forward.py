"""One front request forwarded to the target (:class:`Forward`), and the target's questions on
the way.

The back call's ``result()`` runs on a thread of the proxy's pool while the front request's thread
waits for its outcome, a question (2026-07-28 front: answered ``input_required``, the back call
parked until the retry) or the front request's cancellation (passed on to the target).
"""

from __future__ import annotations

import contextlib
import itertools
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .. import lifecycle
from ..cancellation import Cancellation
from ..errors import (
    InvalidParams,
    McpError,
    MethodNotFound,
    MissingRequiredClientCapabilityError,
    RequestCancelled,
    RequestRefused,
    RequestTimeout,
)
from .translate import fitted_question

#: The requests a target may send its client (each one a question for the front client).
ASK_METHODS = ("sampling/createMessage", "elicitation/create", "roots/list")
#: The capability each question needs of the front client.
ASK_CAPABILITY = {
    "sampling/createMessage": "sampling",
    "elicitation/create": "elicitation",
    "roots/list": "roots",
}
#: How long a question of the target waits for the front client's answer (seconds).
DEFAULT_ASK_TIMEOUT = 300.0
#: How long an answer waits for the callbacks of what came before it (seconds; see Forward.run).
CALLBACKS_WAIT = 10.0
#: How long a cancelled call keeps a handshake-era command target's turn for the target's answer
#: (seconds): a target that answers a cancelled request (some answer it with an error) keeps its
#: connection; one that does not by then is closed (see Forward._withdraw).
CANCEL_GRACE = 2.0
#: The prefix of a ``requestState`` the proxy issues (the rest: a random key of a parked request).
STATE_PREFIX = "mcp-ref-proxy."


# -- the front: which request a question of the target belongs to ---------------------------------


@dataclass
class Front:
    """One request of a front client: its connection, its context and (2026-07-28) its envelope."""

    connection: Any
    context: Any
    envelope: lifecycle.Envelope | None

    @property
    def version(self) -> str | None:
        """The revision the request speaks: its own (2026-07-28), else its session's."""
        return self.connection.version_for(self.context)

    @property
    def capabilities(self) -> dict:
        """What the front client declared (for this request, in 2026-07-28)."""
        if self.envelope is not None:
            return self.envelope.client_capabilities
        return self.connection.client_capabilities

    def ask(
        self, method: str, params: dict | None, timeout: float, ends: tuple[Any, ...] = ()
    ) -> dict:
        """A question of the target's put to this handshake-era request's client, as a request of
        the proxy's own related to it (:func:`put_question`, withdrawn at any of ``ends``); the
        client's answer."""
        return put_question(
            self.connection,
            self.capabilities,
            method,
            params,
            timeout,
            related_request_id=self.context.request_id,
            ends=ends,
        )

    def log(self, level: str, data: Any, logger: str | None) -> None:
        """A log message of the target's for this request, if its client asked for that level."""
        self.connection.log(
            level,
            data,
            logger,
            related_request_id=self.context.request_id,
            envelope=self.envelope,
        )


class Plain:
    """A front request forwarded as it is (a listing, a completion), or a request of the proxy's
    own (``front`` None): in flight on its back connection from before it is sent until its
    answer, and what the target said before it, have been handed on (``BackLink.carrying``)."""

    def __init__(self, front: Front | None):
        self.front = front
        #: True once its front request was cancelled: the target may still be at work on it, so
        #: it still counts in flight, but its client is told and asked nothing more.
        self.withdrawn = False


def callbacks_run(link: Any) -> None:
    """Wait until the back client's callbacks of what came before now have run on ``link``: the
    target's log messages and progress for a request reach the front before its answer, and are
    handed on while it is still counted in flight (they go to the callback thread in arrival
    order; a marker queued now runs last)."""
    marker = threading.Event()
    try:
        if link.client.session.call_soon(marker.set, keep=True):
            marker.wait(CALLBACKS_WAIT)
    except Exception:  # the connection has ended: no callback will run
        return


@dataclass
class Question:
    """One question of the target (a sampling, elicitation or roots request) for a 2026 front."""

    key: str
    method: str
    params: dict[str, Any] | None
    answered: threading.Event = field(default_factory=threading.Event)
    answer: dict[str, Any] | None = None


#: The forward whose back call this thread runs (a 2026 target's questions come on that thread).
current = threading.local()


class Forward:
    """One front request forwarded to the target: the back call, and its questions.

    The back call's ``result()`` runs on a thread of the proxy's pool; the front request's thread
    waits for its outcome, a question (2026-07-28 front), or its own cancellation.
    """

    def __init__(self, proxy: Any, link: Any, front: Front, owner: str | None):
        # proxy: the ProxyServer (its ask_timeout, park, release); link: the BackLink it runs on
        self.proxy = proxy
        self.link = link
        self.front: Front | None = front
        #: What the front client declared (for the first request, in 2026-07-28).
        self.capabilities = front.capabilities
        self.owner = owner
        self.lock = threading.Condition()
        self.outcome: tuple[str, Any] | None = None
        self.waiting: dict[str, Question] = {}  # not yet shown to the front client
        self.shown: dict[str, Question] = {}  # shown, not yet answered
        self.numbers = itertools.count(1)
        self.token: str | None = None
        self.finished = False
        self.call: Any = None
        #: How it holds its back connection: "session", "leased" (a pool's), "shared" or "turn"
        #: (the watcher, with others or alone).
        self.hold = "session"
        #: The method and salient params of the 2026 request it serves (its retries must match).
        self.origin = ""
        #: The -32021 error a 2026 front gets for a question it cannot answer, once asked.
        self.refusal: McpError | None = None
        #: True once its front request was cancelled: the target may still be at work on it.
        self.withdrawn = False
        #: Ends a withdrawn call the target has not answered: after CANCEL_GRACE on the watcher's
        #: turn, else after ``ask_timeout`` when it has no timeout of its own; or a parked call
        #: answered before its retry came, once ``ask_timeout`` from its parking has passed.
        self.expiry: threading.Timer | None = None
        #: Set once it has finished: the questions it has open at a handshake-era front end then.
        self.ended = Cancellation()
        #: When (monotonic) it was last parked for a 2026 front's retry.
        self.parked_at = 0.0
        #: True once its one deadline passed (a 2026 target's call: :meth:`_deadline`).
        self.timed_out = False

    @property
    def abandoned(self) -> bool:
        """True when it ended without the target's answer (its front request cancelled, its back
        call timed out, its connection gone): the target may still be at work on it, and ask."""
        outcome = self.outcome
        if outcome is None:
            return self.withdrawn
        kind, value = outcome
        return kind == "error" and not isinstance(value, McpError)

    # -- on the back's threads -------------------------------------------------------------------

    def ask(self, method: str, params: dict | None, withdrawn: Cancellation) -> dict:
        """The front client's answer to a question of the target's (blocks until it comes, the
        target ``withdrawn`` it, or the call ended)."""
        if self.withdrawn:  # its client is asked nothing more, nor is any other
            raise withdrawn_refusal(method)
        front = self.front
        if front is not None and front.envelope is None:
            # handshake-era front: a request of our own to the client that made this request,
            # cancelled if the target withdraws the question or the call ends first
            return front.ask(method, params, self.proxy.ask_timeout, (withdrawn, self.ended))
        unmet = unmet_need(method, params, self.capabilities)
        if unmet is not None:
            # 2026-07-28 mrtr: "Servers MUST NOT send an inputRequests that the client has not
            # declared support for"; the front request ends with -32021 naming it instead.
            needs, what = unmet
            self.refusal = MissingRequiredClientCapabilityError.needing(
                needs, f"the server behind this proxy asks for {what}"
            )
            raise self.refusal
        # what the target said before asking (its log messages, its progress) reaches the front
        # request now waiting, before the question parks it
        self._callbacks_run()
        number = next(self.numbers)
        question = Question(
            f"{method.partition('/')[0]}-{number}", method, _for_2026(method, params)
        )
        with self.lock:
            if self.finished or self.outcome is not None:
                raise RequestCancelled(f"{method}: the request it belonged to has ended")
            self.waiting[question.key] = question
            self.lock.notify_all()
        # 2025-11-25 basic/utilities/cancellation: the target's notifications/cancelled for its
        # question ends this wait, and the question is shown to the front client no more
        withdrawn.add_callback(question.answered.set)
        try:
            answered = question.answered.wait(self.proxy.ask_timeout)
        finally:
            withdrawn.remove_callback(question.answered.set)
        if question.answer is None:
            with self.lock:
                self.waiting.pop(question.key, None)
                self.shown.pop(question.key, None)
            if not answered:
                raise McpError(f"{method}: the client in front of the proxy did not answer in time")
            if self.withdrawn:
                raise withdrawn_refusal(method)
            raise RequestCancelled(f"{method}: the question or the request it belonged to ended")
        return question.answer

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """The target's progress on this request, to the front request now waiting for it."""
        front = self.front
        if front is None:
            return  # parked: nobody waits for progress now (the retry gets what comes after)
        try:
            front.context.report_progress(progress, total, message)
        except ValueError:
            pass  # not above what this front request was told already (a new round's repeat)

    def run(self) -> None:
        """Wait for the back call's outcome (on a pool thread), and hand it to the front."""
        current.forward = self  # a 2026 target's questions are answered on this thread
        deadline = self._deadline()
        try:
            outcome: tuple[str, Any] = ("result", self.call.result())
        except BaseException as exc:  # every failure is the front's to see
            outcome = ("error", exc)
        finally:
            current.forward = None
            if deadline is not None:
                deadline.cancel()
        if self.timed_out and isinstance(outcome[1], RequestCancelled):  # cancelled by _time_out
            limit = self.link.client.session.default_timeout
            outcome = ("error", RequestTimeout(f"no answer within the timeout of {limit:g} s"))
        self._callbacks_run()
        with self.lock:
            self.outcome = outcome
            attached = self.front is not None
            self.lock.notify_all()
            # parked: its retry, if one comes within ask_timeout, gets the outcome (the target
            # answered without the answer it had asked for: it withdrew its question)
            kept = self.token is not None and not self.withdrawn and not self.finished
            left = self.parked_at + self.proxy.ask_timeout - time.monotonic()
        if attached:
            return
        if not kept or left <= 0:  # nobody will come for it
            self.finish()
            return
        expiry = threading.Timer(left, self.finish)
        expiry.name = "mcp-proxy-answered"
        expiry.daemon = True
        with self.lock:
            if self.finished:  # its retry came meanwhile
                return
            self.expiry = expiry
        expiry.start()

    def _deadline(self) -> threading.Timer | None:
        """The call's one deadline, counted from now (as it is sent): a 2026 target's call is
        rounds of requests, each with the back client's timeout, and the front client's answers
        between them; so that the ``timeout`` bounds the call as a whole (docs/proxy.md: "the
        user's answers to the target's questions included"), it is cancelled when it passes.  A
        handshake-era call is one request, bounded by its own timeout (None then)."""
        limit = self.link.client.session.default_timeout
        if limit is None or not self.link.client.connection.modern:
            return None
        deadline = threading.Timer(limit, self._time_out)
        deadline.name = "mcp-proxy-deadline"
        deadline.daemon = True
        deadline.start()
        return deadline

    def _time_out(self) -> None:
        # the question open now ends with it (ModernCall.cancel cancels its input handler's
        # context: Forward.ask, put_question), and the front is told the call timed out
        self.timed_out = True
        self.call.cancel("timeout")

    def _callbacks_run(self) -> None:
        callbacks_run(self.link)

    # -- on the front request's thread -----------------------------------------------------------

    def serve(self, front: Front) -> dict:
        """Wait for the outcome, a question or a cancellation; the front's raw result."""
        context = front.context
        with self.lock:
            self.front = front
        # The wait below ends with the back call's outcome (bounded by the back client's timeout,
        # when it has one), a question for a 2026 front, or the front request's cancellation,
        # which wakes it whoever sets the request's Event (the front connection's end included).
        cancelled = context.cancelled
        cancelled.add_callback(self._wake)
        try:
            with self.lock:
                while self.outcome is None and not cancelled.is_set():
                    if front.envelope is not None and self.waiting:
                        break
                    self.lock.wait()
                if self.outcome is None and not cancelled.is_set():
                    # a 2026 front: the questions go out as input_required, the back call is parked
                    self.shown.update(self.waiting)
                    self.waiting.clear()
                    self.front = None
                    questions = {
                        q.key: _input_request(q.method, q.params) for q in self.shown.values()
                    }
                    token = self.token = self.token or STATE_PREFIX + secrets.token_urlsafe(24)
                    self.parked_at = time.monotonic()
                    self.proxy.park(self)
                    return {
                        "resultType": lifecycle.INPUT_REQUIRED,
                        "inputRequests": questions,
                        "requestState": token,
                    }
                outcome = self.outcome
                if outcome is None:  # cancelled by the front client: run() ends it from now on
                    self.front = None
                    self.withdrawn = True
        finally:
            cancelled.remove_callback(self._wake)
        if outcome is None:
            self._withdraw("cancelled by the client in front of the proxy")
            raise RequestCancelled("cancelled by the client")
        self.finish()
        if self.refusal is not None:  # the target went on without what it asked for: moot
            raise self.refusal
        kind, value = outcome
        if kind == "error":
            raise value
        return value

    def _withdraw(self, reason: str) -> None:
        """The front request was cancelled: the target is told (2025-11-25
        basic/utilities/cancellation).  A handshake-era command target may still ask for it
        (receivers only "SHOULD" stop, and "MAY ignore" a cancellation), and its questions name no
        request: so the forward stays in flight on its connection, its questions refused, until
        the target has answered it or the connection has ended; :meth:`run` then ends it.  On the
        watcher, whose turn every other client's request waits for, that is :data:`CANCEL_GRACE`
        at most: then the connection is closed, its process with it (a target that stops as asked
        never answers, so it would hold the turn for the call's whole timeout).  On a session's
        own connection, the back call's timeout (else ``ask_timeout``)."""
        if self.link.client.connection.modern or self.proxy.http_target:
            # its questions come in the answers of its own request (2026-07-28); or (HTTP) its
            # lease is closed, not pooled (ProxyServer.release): its session at the target ends
            self.call.cancel(reason)
            self.finish()
            return
        with self.lock:  # the questions it has open are refused now (the target waits for them)
            open_questions = [*self.waiting.values(), *self.shown.values()]
            self.waiting.clear()
            self.shown.clear()
        for question in open_questions:
            question.answered.set()
        with contextlib.suppress(Exception):  # the connection has ended: nothing more will come
            self.link.client.session.notify(
                "notifications/cancelled", {"requestId": self.call.id, "reason": reason}
            )
        pending = getattr(self.call, "pending", None)
        if self.hold == "turn":  # unanswered, it ends with its connection (ProxyServer.release)
            expiry = threading.Timer(CANCEL_GRACE, self.link.close)
        elif pending is not None and pending.first_deadline is not None:
            return  # its timeout ends it, if the target does not answer
        else:
            expiry = threading.Timer(self.proxy.ask_timeout, self.call.cancel, (reason,))
        expiry.name = "mcp-proxy-withdrawn"
        expiry.daemon = True
        with self.lock:
            if self.finished:
                return
            self.expiry = expiry
        expiry.start()

    def answer(self, responses: Any) -> None:
        """A 2026 front's retry: its ``inputResponses`` answer the questions shown to it."""
        if responses is not None and not isinstance(responses, dict):
            raise InvalidParams("Invalid params: inputResponses must be an object")
        with self.lock:
            for key, question in list(self.shown.items()):
                answer = (responses or {}).get(key)
                if answer is None:
                    continue  # unanswered: asked again (mrtr §Error Handling)
                if not isinstance(answer, dict):
                    raise InvalidParams(
                        f"Invalid params: inputResponses[{key!r}] must be a "
                        f"{question.method} result object"
                    )
                del self.shown[key]
                question.answer = answer
                question.answered.set()
            self.waiting.update(self.shown)
            self.shown.clear()

    def _wake(self) -> None:
        with self.lock:
            self.lock.notify_all()

    def finish(self) -> None:
        """The forward has ended: its open questions are dropped, its back connection released."""
        with self.lock:
            if self.finished:
                return
            self.finished = True
            open_questions = [*self.waiting.values(), *self.shown.values()]
            expiry = self.expiry
        if expiry is not None:
            expiry.cancel()
        for question in open_questions:
            question.answered.set()  # answer None: the question's request ends
        self.ended.set()  # and one put to a handshake-era front client is cancelled there
        self.proxy.release(self)


def withdrawn_refusal(method: str) -> RequestRefused:
    """The error a target gets for a question of a call its front client cancelled."""
    return RequestRefused(f"Request refused: {method}: the request it was asked for was cancelled")


def put_question(
    connection: Any,
    capabilities: dict,
    method: str,
    params: dict | None,
    timeout: float,
    *,
    related_request_id: Any = None,
    ends: tuple[Any, ...] = (),
) -> dict:
    """A question of the target's put to a handshake-era front client (its ``connection``, which
    declared ``capabilities``) as a request of the proxy's own, for its request
    ``related_request_id`` (None: for none of them); the client's answer.  It is cancelled at the
    client (which gets ``notifications/cancelled``) when any of ``ends`` (Cancellation Events: the
    target withdrew the question, the forwarded call ended) is set first."""
    unmet = unmet_need(method, params, capabilities)
    if unmet is not None and ASK_CAPABILITY[method] not in capabilities:
        # the target asked what the front client cannot answer: not found, as a client says
        raise MethodNotFound(
            f"Method not found: the client in front of this proxy does not offer "
            f"{ASK_CAPABILITY[method]}"
        )
    if unmet is not None:  # a mode or a feature it did not declare: refused, as a client does
        raise InvalidParams(
            f"Invalid params: the client in front of this proxy does not take {unmet[1]}"
        )
    connection.lifecycle.check_send(method)
    pending = connection.session.send_request(
        method,
        fitted_question(method, _for_handshake(method, params), connection.protocol_version),
        timeout=timeout,
        related_request_id=related_request_id,
    )

    def withdraw() -> None:
        # 2025-11-25 basic/utilities/cancellation: the sender of a request may cancel it; the
        # target no longer waits for this answer, so neither does the user in front
        pending.cancel("the server behind this proxy no longer needs the answer")

    for end in ends:
        end.add_callback(withdraw)
    try:
        return pending.result()
    finally:
        for end in ends:
            end.remove_callback(withdraw)


def unmet_need(method: str, params: dict | None, capabilities: dict) -> tuple[dict, str] | None:
    """What a question of the target's needs of a front client that declared ``capabilities``
    and it lacks: ``(requiredCapabilities, in words)``; None when it can be asked."""
    needed = ASK_CAPABILITY[method]
    if needed not in capabilities:
        return {needed: {}}, needed
    declared = capabilities[needed] if isinstance(capabilities[needed], dict) else {}
    asked = params if isinstance(params, dict) else {}
    if method == "elicitation/create":
        # 2025-11-25 and 2026-07-28 client/elicitation: "Servers MUST NOT send elicitation
        # requests with modes that are not supported by the client"; "an empty capabilities
        # object is equivalent to declaring support for form mode only" (and before 2025-11-25
        # there is no other mode).  A request without a mode is form mode.
        mode = asked.get("mode") or "form"
        if not isinstance(mode, str):
            raise InvalidParams("Invalid params: an elicitation mode is a string")
        if mode not in (declared or {"form": {}}):
            return {"elicitation": {mode: {}}}, f"{mode}-mode elicitation"
    elif method == "sampling/createMessage" and (
        asked.get("tools") is not None or asked.get("toolChoice") is not None
    ):
        # 2025-11-25 and 2026-07-28 client/sampling: "Servers MUST NOT send tool-enabled sampling
        # requests to Clients that have not declared support for tool use via the
        # sampling.tools capability"
        if "tools" not in declared:
            return {"sampling": {"tools": {}}}, "sampling with tools"
    return None


def _for_2026(method: str, params: dict | None) -> dict | None:
    """A handshake-era target's question as a 2026 input request: URL-mode elicitation without
    its ``elicitationId`` (2026-07-28 changelog 11: "elicitationId ... removed")."""
    if method == "elicitation/create" and isinstance(params, dict) and "elicitationId" in params:
        return {k: v for k, v in params.items() if k != "elicitationId"}
    return params


def _for_handshake(method: str, params: dict | None) -> dict | None:
    """A 2026 target's question as a handshake-era request: URL-mode elicitation given the
    ``elicitationId`` 2025-11-25 requires (client/elicitation: "elicitationId ... MUST" be in a
    URL-mode request); a 2026 target sends no completion notification to correlate with it."""
    if (
        method == "elicitation/create"
        and isinstance(params, dict)
        and params.get("mode") == "url"
        and "elicitationId" not in params
    ):
        return {**params, "elicitationId": "proxy-" + secrets.token_urlsafe(12)}
    return params


def _input_request(method: str, params: dict | None) -> dict:
    request: dict[str, Any] = {"method": method}
    if params is not None:
        request["params"] = params
    return request
