"""Completion, client side (2025-11-25 server/utilities/completion): ``completion/complete``.

:meth:`mcp_ref.client.Client.complete` asks the server for the values a prompt argument or a
resource template variable may take.  What it sends is CompleteRequest: the reference (a prompt
by name, a template by URI), the argument being completed and, from 2025-06-18, the arguments
already chosen; every value a string.  Loaded by the first completion.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import lifecycle
from ..feature_types import Completion
from ..jsonable import text_arguments
from .connection import built

if TYPE_CHECKING:
    from .interfaces import Connection

__all__ = ["complete"]


def complete(
    connection: Connection,
    argument: str,
    value: str,
    prompt: str | None,
    resource: str | None,
    context: dict | None,
) -> Completion:
    """The server's completions of ``argument`` (its ``value`` so far) of prompt ``prompt`` or of
    resource template ``resource`` (exactly one of the two: else TypeError), given the ``context``
    arguments already chosen.  The values are sent as strings (:func:`mcp_ref.jsonable.text_arguments`)."""
    if (prompt is None) == (resource is None):
        raise TypeError("complete() takes exactly one of prompt= or resource=")
    version = connection.protocol_version
    # 2024-11-05 had completion/complete but no capability for it
    if lifecycle.at_least(version, lifecycle.COMPLETIONS_CAPABILITY):
        connection.require_capability("completions", "completion/complete")
    ref = (
        {"type": "ref/prompt", "name": prompt}
        if prompt is not None
        else {"type": "ref/resource", "uri": resource}
    )
    # CompleteRequest: ``argument.value`` and ``context.arguments`` are strings
    value = text_arguments("completion/complete", {argument: value})[argument]
    params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
    # CompleteRequest.context: 2025-06-18 and later
    if context and lifecycle.at_least(version, lifecycle.COMPLETION_CONTEXT):
        params["context"] = {"arguments": text_arguments("completion/complete", context)}
    result = connection.request("completion/complete", params)
    return built(
        lambda raw: Completion.from_wire(raw.get("completion", {})),
        "completion/complete",
        result,
        version,
    )
