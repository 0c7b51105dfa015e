"""A tool's failures as its caller sees them (2025-11-25 server/tools §Error Handling).

:mod:`mcp_ref.server.tools` hands a failure here: arguments the tool cannot take, an exception the
tool raised, a value it returned that has no JSON form or does not match its ``outputSchema``.  The
model sees an ``isError`` result saying what it may know (a :class:`~mcp_ref.server.tools.ToolError`'s
message, the capability the client lacks), never a traceback: that goes to the server's log.
Loaded by the first failure: a tool that succeeds never loads it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .. import lifecycle
from ..errors import CapabilityError, InvalidParams
from ..handler_failures import log_failure
from ..types import text_block

if TYPE_CHECKING:
    from ..request import RequestContext
    from .seams import Caller

#: The tools' logger: a tool's failure is logged as it was before it was worded here.
log = logging.getLogger(f"{__package__}.tools")


def error_result(message: str) -> dict:
    """A ``CallToolResult`` reporting a failure the model should see: ``message``, ``isError``."""
    return {"content": [text_block(message)], "isError": True}


def bad_arguments(connection: Caller, context: RequestContext, name: str, problem: Any) -> dict:
    """Invalid arguments: -32602 before 2025-11-25, an ``isError`` result from it on."""
    message = f"Invalid arguments for tool {name}: {problem}"
    if lifecycle.at_least(connection.version_for(context), lifecycle.INPUT_ERRORS_AS_TOOL_ERRORS):
        # 2025-11-25 (SEP-1303): input validation errors are tool execution errors, so the model can see them.
        return error_result(message)
    raise InvalidParams(message)


def failed(name: str, exc: Exception) -> dict:
    """The result of tool ``name`` that raised ``exc`` (called while it is being handled; a
    ``ToolError`` is :mod:`~mcp_ref.server.tools`' own): the capability this client lacks, or else
    a generic error, the traceback logged (with a known cause:
    :func:`~mcp_ref.handler_failures.log_failure`)."""
    if isinstance(exc, CapabilityError):
        # The tool needs something this client did not declare (sampling, roots, elicitation):
        # the client's situation, not an internal error; say which, with no traceback.
        log.info("tool %s cannot run for this client: %s", name, exc)
        return error_result(f"Tool {name} cannot run for this client: {exc}")
    log_failure(log, "tool %s failed", name)
    return error_result(f"Tool {name} failed with an internal error")


def unserialisable(name: str, exc: Exception) -> dict:
    """The result of tool ``name`` whose value has no JSON form (``exc`` says why; a
    RecursionError: it holds itself, or nests too deeply)."""
    problem = "nested too deeply (or holds itself)" if type(exc) is RecursionError else exc
    log.error("tool %s returned a value that cannot be serialised: %s", name, problem)
    return error_result(f"Tool {name} returned a value that cannot be serialised: {problem}")


def invalid_output(name: str, problem: str | None) -> dict:
    """The result of tool ``name`` whose structured content is missing (``problem`` None) or does
    not match its ``outputSchema``: 2025-11-25 server/tools §Output Schema, "Servers MUST provide
    structured results that conform to this schema"."""
    log.error("tool %s returned output that does not match its outputSchema: %s", name, problem)
    return error_result(f"Tool {name} produced invalid output")
