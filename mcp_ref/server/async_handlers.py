"""An ``async def`` tool, prompt or resource, run to completion on its handler thread.

mcp_ref has no event loop: tools, prompts and resources run on the session's handler threads.  So
an ``async def`` (written for the official SDK, or calling an async library) gets a loop of its own
for each call (``asyncio.run``), on the handler thread that serves the request.  Loaded by the
first ``async def`` registered (:func:`mcp_ref.server.signatures.runs_in_thread` tells them apart):
a server of plain functions never loads it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

__all__ = ["run_to_completion"]


def run_to_completion(func: Callable) -> Callable:
    """``func``, an ``async def`` or a ``functools.partial`` of one, as a plain function that runs
    it to completion on the calling thread.  A partial stays a partial (of its function so run),
    which :func:`~mcp_ref.server.signatures.compile_arguments` describes as it does any partial."""
    if isinstance(func, functools.partial):
        return functools.partial(run_to_completion(func.func), *func.args, **func.keywords)

    @functools.wraps(func)  # signature and type hints: the async function's
    def run(*args: Any, **kwargs: Any) -> Any:
        import asyncio

        return asyncio.run(func(*args, **kwargs))

    return run
