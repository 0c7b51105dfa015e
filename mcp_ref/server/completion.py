"""Completion (2025-11-25 server/utilities/completion): ``completion/complete`` for prompt
arguments and resource-template variables."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import InvalidParams
from .connection import OPEN
from .signatures import compile_arguments

if TYPE_CHECKING:
    from ..request import RequestContext
    from .seams import Caller, Gate

#: A completion function: the decorator hands it back unchanged.
_F = TypeVar("_F", bound=Callable[..., Any])

#: The two kinds of reference: the field naming the item, what using it is, and its name in errors.
_REFS = {
    "ref/prompt": ("name", "prompts/get", "prompt"),
    "ref/resource": ("uri", "resources/read", "resource template"),
}
#: server/utilities/completion §CompleteResult: "values ... Must not exceed 100 items".
MAX_VALUES = 100


def check_shape(params: dict) -> None:
    """-32602 unless ``params`` has a ``ref`` object and an ``argument`` {name, value} whose name is
    a string: checked before the gate is asked about the item (a proxy's gate too:
    :func:`mcp_ref.proxy.front_door.check_forward`), so a malformed request is refused alike
    whether the item it names is hidden, missing or there (2025-11-25 server/utilities/completion
    §Error Handling: "Invalid parameters: -32602")."""
    ref = params.get("ref")
    argument = params.get("argument")
    if (
        not isinstance(ref, dict)
        or not isinstance(argument, dict)
        or not isinstance(argument.get("name"), str)
    ):
        raise InvalidParams(
            "Invalid params: completion/complete needs ref and argument {name, value}"
        )


def complete(connection: Caller, context: RequestContext, params: dict) -> dict:
    """``completion/complete``: the registered completion function's candidates (at most 100 are sent)."""
    check_shape(params)
    ref = params["ref"]
    argument = params["argument"]
    server = connection.server
    gate = server.gate
    # Every gate but the open one is asked, ``restricts`` or not (a gate hiding an item from everyone
    # alike restricts nothing between principals, and hides it still): 2025-11-25
    # server/utilities/completion §Security: servers SHOULD "Prevent completion-based information
    # disclosure".  The open gate shows everything: no principal to work out.
    principal = connection.principal if gate is not OPEN else None
    ref_type = ref.get("type")
    # A prompt or template the caller may not use (or not complete) is unknown (mcp_ref.extensions.policy).
    # authorize is asked first, the same questions whether or not the name exists: a hidden item
    # and a missing one cost the same.  A template is named by its exact string (its one spelling).
    if not isinstance(ref_type, str) or ref_type not in _REFS:  # (a list is no key: -32602)
        raise InvalidParams(f"Invalid params: unknown reference type {ref_type!r}")
    field, action, what = _REFS[ref_type]
    key = ref.get(field)
    if not isinstance(key, str):
        raise InvalidParams(f"Invalid params: unknown {what} {key!r}")
    entry = None
    if _may_complete(gate, principal, action, key, params):
        entry = server.get_prompt(key) if ref_type == "ref/prompt" else _resource_entry(server, key)
    if entry is None:
        raise InvalidParams(f"Invalid params: unknown {what} {key!r}")
    # 2025-11-25 server/utilities/completion §Security: "MUST: Validate all completion inputs": an
    # argument the prompt or template does not have is -32602 (its function is never asked).
    arguments = _arguments_of(entry, ref_type)
    if argument["name"] not in arguments:
        raise InvalidParams(f"Invalid params: {what} {key!r} has no argument {argument['name']!r}")
    # 2025-11-25 server/utilities/completion §Security: implementations "MUST: Validate all
    # completion inputs"; §Error Handling: bad params are -32602.  The schema's argument is
    # {name: string, value: string}, and context.arguments an object of strings.
    if not isinstance(argument.get("value"), str):
        raise InvalidParams("Invalid params: completion/complete argument.value must be a string")
    # Defaulted only when absent: a present ``context`` or ``arguments`` that is not an object
    # (null, [], 0, false, "") is refused, never read as "no arguments".
    completion_context = params.get("context", {})
    context_args = (
        completion_context.get("arguments", {}) if isinstance(completion_context, dict) else None
    )
    if not isinstance(context_args, dict) or not all(
        isinstance(value, str) for value in context_args.values()
    ):
        raise InvalidParams(
            "Invalid params: completion/complete context must be {arguments: {name: string}}"
        )
    registered = server.completion_for(ref_type, key)
    # With no completion function, a parameter of fixed choices (a ``Literal``) offers them, those
    # starting with the value typed so far.
    values: list = [
        c for c in choices(arguments[argument["name"]]) if c.startswith(argument["value"])
    ]
    if registered is not None:
        handler, name = registered
        extra = {}
        # the function wants to know who asks (e.g. to offer only what they may see)
        if name is not None:
            from .context import Context

            extra[name] = Context(connection, context)
        values = list(handler(argument["name"], argument["value"], context_args, **extra) or [])
    completion: dict[str, Any] = {"values": [str(v) for v in values[:MAX_VALUES]]}
    if len(values) > MAX_VALUES:
        completion["total"] = len(values)
        completion["hasMore"] = True
    return {"completion": completion}


def _resource_entry(server: Any, uri: str) -> Any:
    """The resource registered at ``uri``, or the template whose string it is (as ``ref/resource``
    names one); None for neither."""
    table = server.resource_table
    return table.entry(uri) if table else None


def _arguments_of(entry: Any, ref_type: str) -> dict[str, dict]:
    """The arguments a prompt or a resource template (``entry``, of ``ref_type``) can complete,
    each with its JSON Schema: a prompt's parameters, a template's URI variables; a static
    resource has none."""
    properties = entry.plan.schema.get("properties", {})
    if ref_type == "ref/prompt":
        return dict(properties)
    names = entry.template.variables if entry.template is not None else ()
    return {name: properties.get(name, {}) for name in names}


def choices(schema: dict) -> list[str]:
    """The fixed choices of a parameter's ``schema`` (a ``Literal``'s ``enum``, also inside an
    ``Optional``'s ``anyOf``), each as the text a client sends for it; [] for a free value."""
    if "anyOf" in schema:
        return [c for option in schema["anyOf"] for c in choices(option)]
    return [
        value if isinstance(value, str) else json.dumps(value)
        for value in schema.get("enum", ())
        if value is not None
    ]


def offers_choices(server: Any) -> bool:
    """True when one of ``server``'s prompts or resource templates has a parameter of fixed
    choices: completed by default, so the server declares ``completions`` (``Server.capabilities``)."""
    entries = [("ref/prompt", server.get_prompt(p["name"])) for p in server.listings("prompts")]
    entries += [
        ("ref/resource", _resource_entry(server, t["uriTemplate"]))
        for t in server.listings("templates")
    ]
    return any(
        choices(schema)
        for ref_type, entry in entries
        if entry is not None
        for schema in _arguments_of(entry, ref_type).values()
    )


def _may_complete(gate: Gate, principal, action: str, key: str, request: dict) -> bool:
    """Whether ``principal`` may use the item ``key`` (``action``) and complete it; True without one
    (the open gate)."""
    if principal is None:
        return True
    # both asked, even after a denial: a hidden item costs what a missing one does
    return all(
        [gate.allows(principal, asked, key, request) for asked in (action, "completion/complete")]
    )


def registering(completions: dict, prompt: str | None, resource: str | None) -> Callable[[_F], _F]:
    """``Server.completion``'s decorator: it keeps the function it is given in ``completions`` (the
    server's), under ``("ref/prompt", prompt)`` or ``("ref/resource", resource)``, with its
    ``Context`` parameter (:func:`context_parameter`)."""
    if (prompt is None) == (resource is None):
        raise TypeError("completion() takes exactly one of prompt= or resource=")
    key = ("ref/prompt", prompt) if prompt is not None else ("ref/resource", str(resource))

    def register(func: _F) -> _F:
        completions[key] = (func, context_parameter(func))
        return func

    return register


def context_parameter(func: Callable) -> str | None:
    """The name of ``func``'s parameter annotated ``Context`` (``Optional[Context]`` too), if it has
    one: read when the function is registered, as for tools."""
    from .context import Context

    try:
        return compile_arguments(func, skip_types=(Context,)).context_param
    except (TypeError, ValueError, NameError):
        return None  # hints it cannot read: called without a Context, as before
