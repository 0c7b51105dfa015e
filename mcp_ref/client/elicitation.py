"""Elicitation (2025-06-18 and later, client/elicitation): answering the server's ``elicitation/create``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from .. import lifecycle
from ..errors import InvalidParams, MethodNotFound
from ..sampling_and_elicitation import ElicitParams
from ..session import RequestContext
from .callbacks import call_handler, result_dict

if TYPE_CHECKING:
    from .interfaces import Connection


def offered(connection: Connection) -> None:
    """Raise MethodNotFound unless this client answers ``elicitation/create`` (a handler, and a
    revision that has elicitation)."""
    if connection.client.elicitation_handler is None or not lifecycle.at_least(
        connection.protocol_version, lifecycle.ELICITATION
    ):
        raise MethodNotFound("Method not found: this client does not offer elicitation")


def create(connection: Connection, context: RequestContext, params: dict) -> dict:
    """``elicitation/create``: ask the client's ``elicitation_handler``, in a mode the client declared."""
    client = connection.client
    offered(connection)
    try:
        request = ElicitParams.from_wire(params)
    except (TypeError, KeyError) as exc:
        raise InvalidParams(f"Invalid params: {exc}") from None
    mode = request.mode or "form"
    if mode not in client.elicitation_modes:
        raise InvalidParams(f"Invalid params: this client does not support {mode}-mode elicitation")
    result = result_dict(
        call_handler(cast("Callable[..., Any]", client.elicitation_handler), request, context)
    )
    if mode == "form" and result.get("action") == "accept":
        result["content"] = apply_defaults(request.requested_schema, result.get("content"))
    return result


HANDLERS = {"elicitation/create": create}
#: Whether the client answers each method at all (checked before the request is shown to ``approve``).
OFFERED = {"elicitation/create": offered}


def apply_defaults(schema: dict | None, content: dict | None) -> dict:
    """Fill fields the user left out with the schema's ``default`` values.

    2025-11-25 client/elicitation (SEP-1034): primitive schemas may carry a
    ``default``; a client that accepts should send it for fields left unset.
    """
    content = dict(content or {})
    for key, spec in ((schema or {}).get("properties") or {}).items():
        if key not in content and isinstance(spec, dict) and "default" in spec:
            content[key] = spec["default"]
    return content
