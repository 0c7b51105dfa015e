"""The deployment's choice of shared state: ``Server(state=...)`` or ``MCP_REF_STATE``, made into a
:class:`~mcp_ref.server.state.State`.  Loaded only when a state was named (a plain server never
reads it); apart from :mod:`mcp_ref.server.state`, which the Redis implementation imports, so that
naming the extra here makes no import loop.
"""

from __future__ import annotations

from typing import Any

#: The variable's name, for messages (:data:`mcp_ref.server.serving.STATE_ENV` reads it).
STATE_ENV = "MCP_REF_STATE"



def state_from(choice: Any) -> Any:
    """The :class:`~mcp_ref.server.state.State` of ``Server(state=choice)``: ``choice`` itself, or
    for a ``redis://`` URL a :class:`~mcp_ref.extras.redis_state.RedisState` (the redis extra),
    or for ``"memory"`` a :class:`~mcp_ref.server.state.MemoryState`.  ValueError for another URL."""
    if not isinstance(choice, str):
        return choice
    if choice == "memory":
        from .state import MemoryState

        return MemoryState()
    if choice.startswith(("redis://", "rediss://", "unix://")):
        try:
            from ..extras.redis_state import RedisState
        except ImportError as exc:  # redis-py missing
            raise ImportError(f"{STATE_ENV} / state={choice.split('@')[-1]!r} needs the redis extra: "
                              "pip install 'redis[hiredis]>=5'") from exc
        return RedisState.from_url(choice)
    raise ValueError(f"{STATE_ENV} / state=: not a state backend URL (redis://host:port/db): {choice.split('@')[-1]!r}")
