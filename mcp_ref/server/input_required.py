"""Multi Round-Trip Requests (2026-07-28 basic/patterns/mrtr): asking the client without a request of our own.

In the handshake era a handler that needs the client (elicitation, sampling,
roots) sends it a request and waits.  In the modern era a server "MUST send
server-to-client requests ... using the MRTR pattern": it answers the
client's request with an ``InputRequiredResult`` naming what it needs, and the
client *retries* the original request with ``inputResponses``.

mcp_ref keeps one handler for both eras by **re-running the handler on each
retry**.  A handler asks with ``ctx.elicit(...)``, ``ctx.sample(...)``,
``ctx.list_roots()`` or, for several at once, ``ctx.gather(Elicit(...),
Sample(...), ListRoots())``.  In the modern era each ask looks for its answer
(by key) among the answers the request carries; the first ask without one
raises :class:`InputRequired`, which the dispatcher turns into the
``InputRequiredResult``.  On the retry the handler runs again from the top
and, this time, finds its answers.  Code before an ask therefore runs once per
round: keep side effects after the asks (spec_notes/mrtr.md explains the choice).

Answers gathered in earlier rounds travel in ``requestState``, sealed with the
server's keyring (HMAC-SHA256, the key of pagination cursors) together with the
method, a digest of the request's parameters, the caller and an expiry:
basic/patterns/mrtr §Server Requirements, "servers MUST treat requestState as
an attacker-controlled input ... MUST protect its integrity ... SHOULD include
... the authenticated principal ... a short expiry ... an identifier for the
originating request".
"""

from __future__ import annotations

import binascii
import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import lifecycle
from ..errors import InternalError, InvalidParams
from ..lifecycle import MRTR_METHODS
from ..signing import Keyring, b64url, unb64url
from .seams import InputRequired, state_of

if TYPE_CHECKING:
    from ..request import RequestContext
    from ..sampling_and_elicitation import SamplingMessage
    from ..types import Tool
    from .seams import Caller

log = logging.getLogger(__name__)

__all__ = [
    "InputRequired",
    "take_inputs",
    "input_required_result",
    "Elicit",
    "ElicitUrl",
    "Sample",
    "ListRoots",
    "Ask",
    "answer_all",
    "Inputs",
    "inputs_of",
    "read_inputs",
    "seal_state",
    "open_state",
    "digest",
]

#: The largest ``requestState`` accepted or sent (bytes); the answers it carries count against it.
MAX_STATE_BYTES = 256 * 1024
#: How long a ``requestState`` is honoured (seconds): long enough for a person to fill in a form.
STATE_TTL = 15 * 60
_TAG_BYTES = 16


# -- what a handler asks for ---------------------------------------------------------------------


@dataclass
class Elicit:
    """Ask the user to fill a form (``elicitation/create``, form mode).

    ``schema``: a flat object schema of primitive properties, or a dataclass / TypedDict of
    such fields (the accepted answer is then also ``result.data``, an instance of it).
    ``key`` names the ask in ``inputRequests`` (default: ``elicitation-N``, by order of asking).
    """

    message: str
    schema: dict[str, Any] | type
    key: str | None = None


@dataclass
class ElicitUrl:
    """Send the user to a URL (``elicitation/create``, URL mode; 2025-11-25 and later)."""

    message: str
    url: str
    elicitation_id: str | None = None  # the handshake era's correlation id (gone in 2026-07-28)
    key: str | None = None


@dataclass
class Sample:
    """Ask the client's LLM for a completion (``sampling/createMessage``).

    ``messages`` is a string (one user message) or a list of ``{"role", "content"}`` dicts or
    SamplingMessage objects; the other fields are those of ``CreateMessageRequest``.
    """

    messages: str | Sequence[SamplingMessage | dict[str, Any]]
    max_tokens: int
    system_prompt: str | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None
    model_preferences: dict[str, Any] | None = None
    include_context: str | None = None
    metadata: dict[str, Any] | None = None
    tools: Sequence[Tool | dict[str, Any]] | None = None
    tool_choice: dict[str, Any] | None = None
    key: str | None = None


@dataclass
class ListRoots:
    """Ask for the client's roots (``roots/list``)."""

    key: str | None = None


@dataclass
class Ask:
    """One prepared ask: its key, the request to send, and how to read its answer."""

    key: str
    method: str
    params: dict[str, Any] | None
    read: Callable[[dict[str, Any]], Any]
    #: The client capability this ask needs, as a ClientCapabilities fragment (for -32021).
    needs: dict[str, Any] = field(default_factory=dict)

    def input_request(self) -> dict[str, Any]:
        """The InputRequest object of ``inputRequests`` (no ``jsonrpc``, no ``id``): its params
        with the handler's Python values as JSON (a schema's ``date`` default), as the handshake
        era sends the same request (:func:`mcp_ref.jsonable.sendable_params`); ValueError for
        one with no JSON form."""
        request: dict[str, Any] = {"method": self.method}
        if self.params is not None:
            from ..jsonable import sendable_params

            request["params"] = sendable_params(self.method, self.params)
        return request


def answer_all(asks: list[Ask], answers: dict[str, Any]) -> list[Any]:
    """The answers to ``asks`` from the request's ``answers``; InputRequired for those it lacks.

    basic/patterns/mrtr §Error Handling: "If the client fails to send all the information
    requested ... the server SHOULD respond with a new InputRequiredResult requesting the
    missing information again, rather than returning an error."
    """
    missing = {ask.key: ask.input_request() for ask in asks if ask.key not in answers}
    if missing:
        raise InputRequired(missing)
    results = []
    for ask in asks:
        value = answers[ask.key]
        if not isinstance(value, dict):
            # §Error Handling: "Servers SHOULD validate that the data provided by the client is a valid InputResponses object".
            raise InvalidParams(
                f"Invalid params: inputResponses[{ask.key!r}] must be a {ask.method} result object"
            )
        try:
            results.append(ask.read(value))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidParams(
                f"Invalid params: inputResponses[{ask.key!r}] is not a valid {ask.method} result ({exc})"
            ) from None
    return results


# -- the dispatcher's two steps: a retry's answers in, an ask without its answer out --------------


def take_inputs(caller: Caller, context: RequestContext, method: str, params: dict) -> None:
    """Read the answers a modern retry of ``method`` brings (``requestState`` and
    ``inputResponses``) for its handler's asks: checked and opened by :func:`read_inputs`."""
    if method in MRTR_METHODS:
        # basic/patterns/mrtr §Server Requirements: the state SHOULD include "the authenticated
        # principal".
        state_of(context).inputs = read_inputs(params, method, caller.server.keyring, caller.owner)


def input_required_result(
    caller: Caller, context: RequestContext, method: str, params: dict, asked: InputRequired
) -> dict:
    """The ``InputRequiredResult`` that answers a modern request whose handler asked the client for
    what the request did not bring (``asked``): its ``inputRequests``, and the answers so far
    sealed in ``requestState``.  InternalError when ``method`` is not one that may ask."""
    server = caller.server
    if method not in MRTR_METHODS:  # a handler of another method asked: a bug in it
        log.error(
            "%s: the handler of %s asked the client for input, which 2026-07-28 allows only for %s",
            server.name,
            method,
            ", ".join(sorted(MRTR_METHODS)),
        )
        raise InternalError("Internal error") from None
    state = seal_state(inputs_of(context), method, params, server.keyring, caller.owner)
    # basic/patterns/mrtr: "Servers MUST include at least one of inputRequests or requestState".
    return lifecycle.complete_result(
        {"inputRequests": asked.requests, "requestState": state},
        server.server_info(caller.version_for(context)),
        lifecycle.INPUT_REQUIRED,
    )


# -- the request's answers, and the sealed state -------------------------------------------------


@dataclass
class Inputs:
    """What one modern request brings for its asks: answers from ``requestState`` and ``inputResponses``.

    ``used`` records the keys the handler asked for, so only those ride on in the next state.
    """

    answers: dict[str, Any] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)


def inputs_of(context: RequestContext) -> Inputs:
    """The :class:`Inputs` of a request whose handler may ask (``RequestState.inputs``): those its
    ``requestState`` and ``inputResponses`` brought, or none yet (a first request)."""
    state = state_of(context)
    if state.inputs is None:
        state.inputs = Inputs()
    return state.inputs


def signed_bytes(value: Any, **options: Any) -> bytes:
    """``value`` as the bytes a digest or a tag is computed over: its JSON, encoded as UTF-8 with
    ``surrogatepass``.  A JSON string may hold a lone surrogate (``"\\ud800"``, RFC 8259 §8.2
    allows it), which strict UTF-8 refuses; ``surrogatepass`` gives it three bytes of its own
    instead, and every other string its UTF-8 as before, so the bytes stay one-to-one with the
    value and equal on both sides of the check (``json.loads`` reads them back the same way).
    ``options``: ``json.dumps``'s (``sort_keys``)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, **options)
    return text.encode("utf-8", "surrogatepass")


def digest(method: str, params: dict) -> str:
    """An identifier for the originating request: the method and its salient parameters (those
    that are not the envelope or the MRTR fields), so state is refused on any other request."""
    salient = {
        k: v for k, v in params.items() if k not in ("_meta", "inputResponses", "requestState")
    }
    raw = signed_bytes([method, salient], sort_keys=True)
    return b64url(hashlib.sha256(raw).digest()[:16])


def read_inputs(params: dict, method: str, keyring: Keyring, principal: str | None) -> Inputs:
    """The answers a request carries, after checking ``requestState`` and ``inputResponses``.

    A state that is not ours, was changed, has expired, belongs to another caller or another
    request is -32602 (§Server Requirements: "MUST reject state that fails verification").
    Keys of ``inputResponses`` that nothing asks for are ignored (§Error Handling: "the server
    SHOULD ignore any information it does not recognize or need").
    """
    if "requestState" not in params and "inputResponses" not in params:
        return Inputs()  # a first request: nothing to check
    answers: dict = {}
    if "requestState" in params:
        answers = open_state(
            params["requestState"], method, digest(method, params), keyring, principal
        )
    if "inputResponses" in params:
        responses = params["inputResponses"]
        if not isinstance(responses, dict):
            raise InvalidParams(
                "Invalid params: inputResponses must be an object mapping keys to results"
            )
        answers.update(responses)
    return Inputs(answers)


def seal_state(
    inputs: Inputs,
    method: str,
    params: dict,
    keyring: Keyring,
    principal: str | None,
    ttl: float = STATE_TTL,
) -> str:
    """The ``requestState`` for the next round: the answers used so far, bound to this request,
    this caller and an expiry, with an HMAC tag.

    ``principal`` is the caller's ``Principal.id`` (None: no verified caller).  Only a string is
    sealed: what is sealed is compared after a JSON round trip, where a tuple would come back as a
    list and match no one.
    """
    if principal is not None and not isinstance(principal, str):
        raise TypeError(
            f"the caller sealed in requestState must be a string id, not {type(principal).__name__}"
        )
    payload = {
        "m": method,
        "d": digest(method, params),
        "p": principal,
        "x": int(time.time() + ttl),
        "a": {key: inputs.answers[key] for key in sorted(inputs.used) if key in inputs.answers},
    }
    raw = signed_bytes(payload)  # the answers may hold a lone surrogate too
    token = b64url(raw) + "." + b64url(keyring.tag(raw, _TAG_BYTES))
    if len(token) > MAX_STATE_BYTES:
        raise InvalidParams(
            f"Invalid params: the answers gathered for this request exceed {MAX_STATE_BYTES} bytes"
        )
    return token


def open_state(
    token: object, method: str, request_digest: str, keyring: Keyring, principal: str | None
) -> dict[str, Any]:
    """The answers sealed in ``token``, or -32602 when it does not verify for this request."""
    if not isinstance(token, str) or not token:
        raise InvalidParams("Invalid params: requestState must be a non-empty string")
    if len(token) > MAX_STATE_BYTES:
        raise InvalidParams(f"Invalid params: requestState is over {MAX_STATE_BYTES} bytes")
    body, _, tag = token.partition(".")
    try:
        raw, raw_tag = unb64url(body), unb64url(tag)
    except (binascii.Error, ValueError):
        raise InvalidParams("Invalid params: requestState was not issued by this server") from None
    if len(raw_tag) != _TAG_BYTES or not keyring.verify(raw, raw_tag):
        raise InvalidParams(
            "Invalid params: requestState was not issued by this server or was changed"
        )
    try:
        payload = json.loads(raw)
    except ValueError:
        raise InvalidParams("Invalid params: requestState is malformed") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("a"), dict):
        raise InvalidParams("Invalid params: requestState is malformed")
    if payload.get("m") != method or payload.get("d") != request_digest:
        raise InvalidParams("Invalid params: requestState belongs to another request")
    # §Server Requirements: state bound to "the authenticated principal" opens for that principal only.
    # Strings are compared: a state of the old form (a list) or of no caller never opens for a caller.
    if payload.get("p") != principal:
        raise InvalidParams("Invalid params: requestState belongs to another caller")
    if not isinstance(payload.get("x"), int) or payload["x"] < time.time():
        raise InvalidParams(
            "Invalid params: requestState has expired; send the request again without it"
        )
    return payload["a"]
