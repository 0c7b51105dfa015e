"""Prompts (2025-11-25 server/prompts): registered prompts, and ``prompts/list`` / ``prompts/get``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import lifecycle
from ..errors import InternalError, InvalidParams
from ..feature_types import GetPromptResult, PromptMessage
from ..types import WireModel, drop_none, text_block
from .context import Context, with_context
from .signatures import ArgumentPlan, compile_arguments, first_error, runs_in_thread, validator_for
from .tools import ToolError

if TYPE_CHECKING:
    from ..request import RequestContext
    from .seams import Caller


class PromptError(ToolError):
    """Raise in a prompt: ``prompts/get`` fails with -32603 and this message."""


@dataclass
class RegisteredPrompt:
    """A prompt as the server keeps it: the function, its ``Prompt`` listing, its required arguments."""

    name: str
    func: Callable[..., Any]
    plan: ArgumentPlan
    listing: dict[str, Any]
    required: tuple[str, ...]
    #: OAuth scopes a caller needs (HTTP with ``auth=``: 403 ``insufficient_scope`` without them)
    scopes: tuple[str, ...] = ()
    #: What extensions read of it, by option name (the decorator's options for them)
    options: dict[str, Any] = field(default_factory=dict)
    _validator: Any = None

    def validator(self) -> Any:
        """The validator of the arguments' schema (built on first use)."""
        if self._validator is None:
            self._validator = validator_for(self.plan.schema)
        return self._validator


def build_prompt(
    func: Callable,
    given: dict[str, Any],
    scopes: Iterable[str] = (),
    options: dict[str, Any] | None = None,
) -> RegisteredPrompt:
    """A :class:`RegisteredPrompt` for ``func``: its parameters are the prompt's arguments.
    ``given``: its ``Prompt`` fields as registered (``name``, ``title``, ``description``, ``icons``;
    None: not given, the function's own where it has one)."""
    func = runs_in_thread(func)
    plan = compile_arguments(func, skip_types=(Context,))
    name = given["name"] or plan.name
    properties = plan.schema.get("properties", {})
    required = tuple(plan.schema.get("required", ()))
    arguments = [
        drop_none(
            {"name": arg, "description": spec.get("description"), "required": arg in required}
        )
        for arg, spec in properties.items()
    ]
    listing = {**given, "name": name, "arguments": arguments}
    if listing["description"] is None:
        listing["description"] = plan.description
    return RegisteredPrompt(
        name, func, plan, drop_none(listing), required, tuple(scopes), options=dict(options or {})
    )


# -- the handlers ---------------------------------------------------------------------------------


def get_prompt(connection: Caller, context: RequestContext, params: dict) -> dict:
    """``prompts/get``: check the arguments, render the prompt's messages."""
    name = params.get("name")
    server = connection.server
    prompt = None
    if isinstance(name, str):
        # hidden (the gate): unknown, at the same cost (asked about a missing name too, once per request)
        prompt = server.gate.visible(
            connection.principal, "prompts/get", name, server.get_prompt(name), params
        )
    if prompt is None:
        # 2025-11-25 server/prompts §Error Handling: "Invalid prompt name: -32602".
        raise InvalidParams(f"Invalid params: unknown prompt {name!r}")
    # Defaulted only when absent (schema GetPromptRequest: ``arguments?: {[key: string]: string}``):
    # a present one that is not an object (null, [], 0, false, "") is -32602, never read as "no
    # arguments", as completion/complete refuses such a ``context``.
    arguments = params.get("arguments", {})
    if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
        raise InvalidParams("Invalid params: prompt arguments must be an object of strings")
    missing = [arg for arg in prompt.required if arg not in arguments]
    if missing:
        # "Missing required arguments: -32602".
        raise InvalidParams(
            f"Invalid params: missing required argument(s) for prompt {name}: {', '.join(missing)}"
        )
    known = prompt.plan.schema.get("properties", {})
    unknown = [arg for arg in arguments if arg not in known]
    if unknown:
        raise InvalidParams(
            f"Invalid params: unknown argument(s) for prompt {name}: {', '.join(unknown)}"
        )
    arguments = _coerce_arguments(prompt, arguments)
    problem = first_error(prompt.validator(), arguments)
    if problem is not None:
        raise InvalidParams(f"Invalid params: arguments for prompt {name}: {problem}")
    # A value its annotation refuses (a constraint, a date that does not exist) is the caller's
    # mistake: 2025-11-25 server/prompts §Error Handling answers bad or missing arguments -32602.
    try:
        converted = prompt.plan.convert(arguments)
    except ValueError as exc:
        raise InvalidParams(f"Invalid params: arguments for prompt {name}: {exc}") from None
    kwargs = with_context(prompt.plan, converted, connection, context)
    try:
        value = prompt.func(**kwargs)
    except ToolError as exc:  # PromptError (or ToolError): its message is for the client
        # server/prompts §Error Handling: "Internal errors: -32603" (any other exception: a bare
        # "Internal error", the traceback in the server's log only: Session.handle_request).
        raise InternalError(str(exc) or "Internal error") from None
    if isinstance(value, GetPromptResult):
        result = value.to_wire()
    else:
        messages = value if isinstance(value, (list, tuple)) else [value]
        result = {"messages": [prompt_message(m) for m in messages]}
        if prompt.listing.get("description"):
            result["description"] = prompt.listing["description"]
    version = connection.version_for(context)
    if not lifecycle.at_least(version, lifecycle.RESOURCE_LINKS):
        from ..older_revisions import content_for_revision  # loaded only for an older peer

        for message in result["messages"]:
            message["content"] = content_for_revision(message["content"], version)
    return result


def _coerce_arguments(prompt: RegisteredPrompt, arguments: dict) -> dict:
    """Prompt arguments arrive as strings (2025-11-25 server/prompts: ``arguments`` is an object of
    strings); each becomes the JSON value its parameter's schema describes, as a resource template's
    variables do (:func:`~mcp_ref.server.rich_types.text_to_json`): ``"5"`` is 5 for an ``int``
    or an ``Optional[int]``, ``"true"`` True for an ``Optional[bool]``.  A value of none of its
    types is the caller's mistake: §Error Handling, invalid arguments are -32602."""
    from .rich_types import text_to_json  # loaded by the first prompt with arguments

    properties = prompt.plan.schema.get("properties", {})
    out = dict(arguments)
    for key, value in arguments.items():
        try:
            out[key] = text_to_json(properties.get(key, {}), value)
        except ValueError as exc:
            raise InvalidParams(f"Invalid params: argument {key}: {exc}") from None
    return out


def prompt_message(message: Any) -> dict:
    """One item a prompt function returned, as a ``PromptMessage`` dict (a bare string is a user message)."""
    if isinstance(message, PromptMessage):
        return message.to_wire()
    if isinstance(message, str):
        return {"role": "user", "content": text_block(message)}
    if isinstance(message, dict) and "role" in message:
        content = message.get("content")
        if isinstance(content, str):
            content = text_block(content)
        elif isinstance(content, WireModel):
            content = content.to_wire()
        return {"role": message["role"], "content": content}
    if isinstance(message, WireModel):
        return {"role": "user", "content": message.to_wire()}
    raise TypeError(
        f"a prompt must return strings, PromptMessage or role/content dicts, not {type(message).__name__}"
    )
