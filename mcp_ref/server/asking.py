"""Turning a handler's ask (``Elicit``, ``ElicitUrl``, ``Sample``, ``ListRoots``) into a request the
client can take, and what makes :class:`~mcp_ref.server.context.Context` calls awaitable.

Loaded when a handler first asks the client for something, or first awaits a Context call;
a plain server never loads it.

**Awaitable results.**  FastMCP and the official SDK write ``await ctx.info(...)`` and ``result =
await ctx.sample(...)`` in ``async def`` tools.  mcp_ref runs an ``async def`` handler to completion
on its handler thread (``signatures.runs_in_thread``), and every Context call does its work at once,
synchronously.  So a Context call returns its result *already done*, in an object that can also be
awaited: awaiting it gives the value with no pause (``__await__`` returns before yielding).  The
same line works in a sync handler without ``await``, and a missing ``await`` loses nothing (the
message was sent when the call was made).  :class:`Done` carries a ``bool`` or ``None`` result;
:class:`Answers` is a list that awaits to itself; ``CreateMessageResult`` and ``ElicitResult`` await
to themselves.  A consequence: two asks under ``asyncio.gather`` run one after the other (use
``ctx.gather(...)`` to ask for several things at once).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from .. import lifecycle
from ..errors import CapabilityError, InvalidParams, MissingRequiredClientCapabilityError
from ..lifecycle import MRTR_METHODS
from .seams import Caller

if TYPE_CHECKING:
    from ..request import Default, RequestContext
    from ..sampling_and_elicitation import ElicitResult
    from .input_required import Ask, Elicit, Sample

_T = TypeVar("_T")
_L = TypeVar("_L", bound="Answers")


class Done(Generic[_T]):
    """What a Context call did, already done; awaiting it gives :attr:`value` (see the module).

    ``bool(done)`` is ``bool(value)``: ``if ctx.info("x"):`` tells whether the message was sent; it
    compares equal to its value and prints as it.  ``json`` does not know it: send ``done.value``.
    """

    __slots__ = ("value",)

    def __init__(self, value: _T):
        #: The call's result: ``True``/``False`` (sent or not), or ``None``.
        self.value = value

    def __bool__(self) -> bool:
        return bool(self.value)

    def __eq__(self, other: object) -> bool:
        return self.value == (other.value if isinstance(other, Done) else other)

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:  # shown as its value: f"sent={ctx.info('x')}" reads "sent=True"
        return repr(self.value)

    def __await__(self) -> Generator[Any, None, _T]:
        yield from ()
        return self.value


class Answers(list[_T]):
    """A list (the client's roots, a resource's contents, ``gather``'s answers) that awaits to itself."""

    def __await__(self: _L) -> Generator[Any, None, _L]:
        yield from ()
        return self


class Asker(Protocol):
    """What preparing an ask reads of the handler's :class:`~mcp_ref.server.context.Context`."""

    @property
    def request(self) -> RequestContext: ...

    @property
    def protocol_version(self) -> str | None: ...

    @property
    def client_capabilities(self) -> dict: ...


def prepare(ctx: Asker, ask: Any, number: int) -> Ask:
    """``ask`` (the handler's ``number``-th) as a request this client can take for ``ctx``'s request,
    or the era's error when the client lacks the capability it needs."""
    from ..feature_types import Root
    from .input_required import Ask, Elicit, ElicitUrl, ListRoots, Sample

    version = ctx.protocol_version
    envelope = ctx.request.envelope
    if isinstance(ask, Elicit):
        return _prepare_elicit(ctx, ask, version, number)
    if isinstance(ask, ElicitUrl):
        if not lifecycle.at_least(version, lifecycle.ELICITATION_URL_MODE):
            raise CapabilityError(
                f"URL-mode elicitation does not exist in protocol version {version}"
            )
        caps = client_capability(
            ctx, "elicitation", "elicitation/create", {"elicitation": {"url": {}}}
        )
        if "url" not in (caps or {}):
            raise missing(
                ctx, {"elicitation": {"url": {}}}, "the client did not declare URL-mode elicitation"
            )
        params = {"mode": "url", "message": ask.message, "url": ask.url}
        if envelope is None:
            if not ask.elicitation_id:
                raise ValueError("URL-mode elicitation needs an elicitation_id before 2026-07-28")
            params["elicitationId"] = ask.elicitation_id
        return Ask(ask.key or f"elicitation-{number}", "elicitation/create", params, read_elicit)
    if isinstance(ask, Sample):
        return _prepare_sample(ctx, ask, version, number)
    if isinstance(ask, ListRoots):
        client_capability(ctx, "roots", "roots/list", {"roots": {}})
        return Ask(
            ask.key or f"roots-{number}",
            "roots/list",
            None if envelope is None else {},
            lambda result: Answers(Root.from_wire(r) for r in result.get("roots", [])),
        )
    raise TypeError(
        f"gather() takes Elicit, ElicitUrl, Sample or ListRoots, not {type(ask).__name__}"
    )


def _prepare_elicit(ctx: Asker, ask: Elicit, version: str | None, number: int) -> Ask:
    from .input_required import Ask
    from .signatures import first_error, validator_for

    schema, convert = ask.schema, None
    unset: dict[str, None] = {}  # the type's Optional fields with no default: None if left out
    if isinstance(schema, type):
        from .signatures import schema_and_converter

        schema, convert = schema_and_converter(schema)
        schema, unset = elicitation_schema(schema)
    if not lifecycle.at_least(version, lifecycle.ELICITATION):
        raise CapabilityError(f"elicitation does not exist in protocol version {version}")
    caps = client_capability(ctx, "elicitation", "elicitation/create", {"elicitation": {}})
    if lifecycle.at_least(version, lifecycle.ELICITATION_URL_MODE) and caps and "form" not in caps:
        # 2025-11-25 client/elicitation: an empty object means form mode only; otherwise "form" must be listed.
        raise missing(
            ctx, {"elicitation": {"form": {}}}, "the client did not declare form-mode elicitation"
        )
    params: dict[str, Any] = {"message": ask.message, "requestedSchema": schema}
    if lifecycle.at_least(version, lifecycle.ELICITATION_URL_MODE):
        params["mode"] = "form"

    def read(answer: dict) -> ElicitResult:
        result = read_elicit(answer)
        if result.action == "accept":
            # client/elicitation §Response Actions, accept in form mode: "The content field contains
            # the submitted data matching the requested schema".  The schema makes content optional:
            # none is an empty form, checked as {} (a required field refuses it).
            content = result.content if result.content is not None else {}
            problem = first_error(validator_for(schema), content)
            if problem:
                raise InvalidParams(
                    f"elicitation reply does not match the requested schema: {problem}"
                )
            if convert is not None:
                try:  # a value the type's annotations refuse (a constraint on a field)
                    result.data = convert({**unset, **content})
                except ValueError as exc:
                    problem = f"elicitation reply does not match the requested type: {exc}"
                    raise InvalidParams(problem) from None
        return result

    return Ask(ask.key or f"elicitation-{number}", "elicitation/create", params, read)


#: The JSON Schema type of a ``Literal`` value (JSON Schema 2020-12 §6.1.1); a string otherwise.
_JSON_TYPES = {bool: "boolean", int: "integer", float: "number"}


def elicitation_schema(schema: dict) -> tuple[dict, dict[str, None]]:
    """A dataclass's or TypedDict's schema (as a tool's input has it) made a requested schema, and
    its Optional fields that have no default, each None.  2025-11-25 client/elicitation
    §Requested Schema: "flat objects with primitive properties only", each a
    PrimitiveSchemaDefinition of one ``type`` (no ``"null"``; and ElicitResult's content holds no
    null): so ``Optional[T]`` is asked as ``T``, not required, with no default of null; left out,
    it is its default, or None."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema, {}
    fields = {name: _not_null(prop) for name, prop in properties.items()}
    required = schema.get("required", ())
    unset = {name: None for name in required if fields.get(name) is not properties.get(name)}
    plain = {**schema, "properties": fields, "required": [n for n in required if n not in unset]}
    if not plain["required"]:
        del plain["required"]
    return plain, unset


def _not_null(prop: Any) -> Any:
    """``prop`` without its ``"null"`` (``{"type": [T, "null"]}``, ``anyOf`` a member and
    ``{"type": "null"}``, or an ``enum`` holding null: ``Literal["a", "b", None]``) and its default
    of null; ``prop`` itself when it has no ``"null"``."""
    if not isinstance(prop, dict):
        return prop
    rest = {key: value for key, value in prop.items() if key != "default" or value is not None}
    kind, members, values = prop.get("type"), prop.get("anyOf"), prop.get("enum")
    listed = values if isinstance(values, list) else []
    others_than_null = [value for value in listed if value is not None]
    if None in listed and others_than_null:
        # 2025-11-25 client/elicitation §Requested Schema: an EnumSchema is "type": "string"
        # with string values; the field is asked for its other values, and may be left out
        rest["enum"] = others_than_null
        if kind is None:
            kinds = sorted({_JSON_TYPES.get(type(value), "string") for value in others_than_null})
            rest["type"] = kinds[0] if len(kinds) == 1 else kinds
        if not (isinstance(kind, list) and "null" in kind):
            return rest
    if isinstance(kind, list) and "null" in kind:
        others = [name for name in kind if name != "null"]
        rest["type"] = others[0] if len(others) == 1 else others
        return rest
    if isinstance(members, list) and {"type": "null"} in members:
        others = [member for member in members if member != {"type": "null"}]
        del rest["anyOf"]
        if len(others) == 1 and isinstance(others[0], dict):
            # Optional[Literal["a", None]]: the member may hold a null of its own
            return _not_null({**others[0], **rest})
        return {**rest, "anyOf": others}
    return prop


def read_elicit(answer: dict) -> ElicitResult:
    """The client's ``elicitation/create`` result, either mode; InvalidParams (what ``ctx.elicit``
    raises for a reply that does not match) unless its ``action`` is one of :data:`ELICIT_ACTIONS`:
    the schema's ``ElicitResult.action`` is an enum, and a handler checking ``action == "accept"``
    must not be handed ``"ACCEPT"`` with content no one checked."""
    from ..sampling_and_elicitation import ELICIT_ACTIONS, ElicitResult

    if not isinstance(answer, dict) or answer.get("action") not in ELICIT_ACTIONS:
        raise InvalidParams(
            'elicitation reply has no valid action: it must be "accept", "decline" or "cancel"'
        )
    return ElicitResult.from_wire(answer)


def _prepare_sample(ctx: Asker, ask: Sample, version: str | None, number: int) -> Ask:
    from ..sampling_and_elicitation import CreateMessageResult
    from ..types import WireModel, drop_none
    from .input_required import Ask

    sampling = client_capability(ctx, "sampling", "sampling/createMessage", {"sampling": {}})
    if ask.tools is not None or ask.tool_choice is not None:
        # 2025-11-25 client/sampling: servers MUST NOT send tools unless the client declared sampling.tools.
        if not lifecycle.at_least(version, lifecycle.SAMPLING_TOOLS) or "tools" not in sampling:
            raise missing(
                ctx, {"sampling": {"tools": {}}}, "the client did not declare sampling.tools"
            )
    messages = ask.messages
    if isinstance(messages, str):
        messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
    tools = ask.tools
    params: dict[str, Any] = {
        "messages": [m.to_wire() if isinstance(m, WireModel) else m for m in messages],
        "maxTokens": ask.max_tokens,
        **drop_none(
            {
                "systemPrompt": ask.system_prompt,
                "temperature": ask.temperature,
                "stopSequences": ask.stop_sequences,
                "modelPreferences": ask.model_preferences,
                "includeContext": ask.include_context,
                "metadata": ask.metadata,
                "tools": None
                if tools is None
                else [t.to_wire() if isinstance(t, WireModel) else t for t in tools],
                "toolChoice": ask.tool_choice,
            }
        ),
    }
    return Ask(
        ask.key or f"sampling-{number}",
        "sampling/createMessage",
        params,
        CreateMessageResult.from_wire,
    )


def gather(
    prepared: list[Ask],
    runner: Any,
    connection: Caller,
    request: RequestContext,
    timeout: float | None | Default,
) -> Answers[Any]:
    """The answers to asks already prepared (:meth:`Context.gather <mcp_ref.server.context.Context.gather>`),
    for the handler of ``request``: from the client (handshake era), from the client's retry (2026-07-28),
    or through ``runner`` (what runs the handler outside its request, when an extension does; else None)."""
    from .input_required import answer_all, inputs_of

    # an extension runs the handler elsewhere: it gets the answers its own way
    if runner is not None:
        return Answers(runner.ask(prepared))
    if request.envelope is None:
        answers: Answers[Any] = Answers()
        for ask in prepared:
            # 2025-11-25 basic/utilities/cancellation: the receiver SHOULD "Stop processing the
            # cancelled request": nothing more is asked on its behalf (RequestCancelled: no answer).
            request.check_cancelled()
            reply = connection.request(
                ask.method, ask.params, timeout=timeout, related_request_id=request.request_id
            )
            answers.append(ask.read(reply))
        return answers
    if request.method not in MRTR_METHODS:
        # basic/patterns/mrtr §Supported Requests: only tools/call, prompts/get and resources/read.
        raise CapabilityError(f"{request.method} cannot ask the client for input (2026-07-28 MRTR)")
    inputs = inputs_of(request)
    inputs.used.update(ask.key for ask in prepared)
    return Answers(answer_all(prepared, inputs.answers))


def client_capability(ctx: Asker, name: str, method: str, needs: dict) -> dict:
    """The client's capability ``name`` for ``ctx``'s request, or the era's error when it lacks it.

    Handshake era: CapabilityError (nothing is sent).  2026-07-28 basic/index §_meta: "If
    processing a request requires a capability the client did not include ... the server MUST
    return a MissingRequiredClientCapabilityError (-32021)".
    """
    caps = ctx.client_capabilities.get(name)
    if caps is None:
        raise missing(ctx, needs, f"{method}: the client did not declare the {name} capability")
    return caps


def missing(ctx: Asker, needs: dict, why: str) -> Exception:
    """The error for a capability the client lacks: -32021 for a 2026-07-28 request, else CapabilityError."""
    if ctx.request.envelope is not None:
        return MissingRequiredClientCapabilityError.needing(needs, why)
    return CapabilityError(why)
