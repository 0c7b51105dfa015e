"""Sampling (2025-11-25 client/sampling): answering the server's ``sampling/createMessage``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from ..errors import InvalidParams, MethodNotFound
from ..sampling_and_elicitation import CreateMessageParams
from ..session import RequestContext
from .callbacks import call_handler, result_dict

if TYPE_CHECKING:
    from .interfaces import Connection


def offered(connection: Connection) -> None:
    """Raise MethodNotFound unless this client answers ``sampling/createMessage`` (it has a handler)."""
    if connection.client.sampling_handler is None:
        raise MethodNotFound("Method not found: this client does not offer sampling")


def create_message(connection: Connection, context: RequestContext, params: dict) -> dict:
    """``sampling/createMessage``: check the params, then ask the client's ``sampling_handler``."""
    client = connection.client
    offered(connection)
    max_tokens = params.get("maxTokens")
    if (
        not isinstance(params.get("messages"), list)
        or not isinstance(max_tokens, int)
        or isinstance(max_tokens, bool)
    ):
        # schema CreateMessageRequest: messages is an array, maxTokens an integer.
        raise InvalidParams(
            "Invalid params: sampling/createMessage needs a messages array and an integer maxTokens"
        )
    try:
        request = CreateMessageParams.from_wire(params)
    except (TypeError, KeyError) as exc:
        raise InvalidParams(f"Invalid params: {exc}") from None
    if (
        request.tools is not None or request.tool_choice is not None
    ) and "tools" not in client.capabilities().get("sampling", {}):
        # 2025-11-25 client/sampling: a client that did not declare sampling.tools MUST return an error.
        raise InvalidParams("Invalid params: this client did not declare sampling.tools")
    return result_dict(
        call_handler(cast("Callable[..., Any]", client.sampling_handler), request, context)
    )


HANDLERS = {"sampling/createMessage": create_message}
#: Whether the client answers each method at all (checked before the request is shown to ``approve``).
OFFERED = {"sampling/createMessage": offered}
