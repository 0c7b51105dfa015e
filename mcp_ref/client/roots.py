"""Roots (client/roots): what a root may be, and answering the server's ``roots/list``."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..errors import MethodNotFound
from ..feature_types import Root
from ..session import RequestContext
from .callbacks import result_dict

if TYPE_CHECKING:
    from .interfaces import Connection


def as_root(value: Root | dict | str) -> Root:
    """``value`` (a Root, its wire dict, or a URI string) as a :class:`~mcp_ref.types.Root`.

    client/roots §Root: "uri: Unique identifier for the root. This MUST be a file:// URI".
    """
    if isinstance(value, Root):
        root = value
    elif isinstance(value, str):
        root = Root(uri=value)
    else:
        root = Root.from_wire(value)
    if not root.uri.startswith("file://"):
        raise ValueError(f"a root must be a file:// URI, not {root.uri!r}")
    return root


def offered(connection: Connection) -> None:
    """Raise MethodNotFound unless this client answers ``roots/list`` (it was given roots)."""
    if connection.client.roots is None:
        raise MethodNotFound("Method not found: this client does not offer roots")


def list_roots(connection: Connection, context: RequestContext, params: dict) -> dict:
    """``roots/list``: the client's roots."""
    offered(connection)  # so roots is not None
    return result_dict(
        {"roots": [r.to_wire() for r in cast("list[Root]", connection.client.roots)]}
    )


HANDLERS = {"roots/list": list_roots}
#: Whether the client answers each method at all (checked before the request is shown to ``approve``).
OFFERED = {"roots/list": offered}
