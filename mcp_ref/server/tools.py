"""Tools (2025-11-25 server/tools): what a registered tool is, and ``tools/list`` / ``tools/call``.

A tool is a plain function.  :func:`build_tool` turns it into a
:class:`RegisteredTool` (its listing, with the input schema from its type
hints); the handlers below serve it.  How a return value becomes a
``CallToolResult`` is :func:`tool_result`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from .. import lifecycle
from ..errors import InvalidParams, McpError, RequestCancelled
from ..types import CallToolResult, WireModel, drop_none, text_block
from .connection import OPEN
from .signatures import (
    ArgumentPlan,
    compile_arguments,
    context_types,
    first_error,
    output_schema_for,
    runs_in_thread,
    to_jsonable,
    validator_for,
)

if TYPE_CHECKING:
    from ..request import RequestContext
    from .seams import Caller


class ToolError(Exception):
    """Raise in a tool to report a failure the model should see: an ``isError`` result with this message.

    Any other exception becomes an ``isError`` result with a generic message
    (the details go to the server's log, never to the client).  In a resource or a prompt: error -32603, this message.
    """


@dataclass
class RegisteredTool:
    """A tool as the server keeps it: the function, how to call it, and its ``Tool`` listing."""

    name: str
    func: Callable[..., Any]
    plan: ArgumentPlan
    listing: dict[str, Any]
    output_schema: dict[str, Any] | None
    #: The validators of ``inputSchema`` and of ``outputSchema`` (None without one), built at
    #: registration: a schema in an unsupported dialect, or an invalid one, fails there.
    input_validator: Any
    output_validator: Any
    #: True when structured results are ``{"result": value}`` (a return type that is not an object)
    wrapped: bool = False
    #: OAuth scopes a caller needs (HTTP with ``auth=``: 403 ``insufficient_scope`` without them)
    scopes: tuple[str, ...] = ()
    #: What extensions read of it, by option name (``@server.tool(...)``'s options for them)
    options: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def header_declarations(self) -> list[tuple[tuple[str, ...], str]]:
        """The ``(property path, header name)`` of its ``x-mcp-header`` parameters (computed once;
        a tool whose declarations break the rules is refused at registration)."""
        from ..http.headers import header_params

        return header_params(self.listing["inputSchema"])

    @cached_property
    def declared(self) -> frozenset[str]:
        """The argument names ``inputSchema`` declares (computed once)."""
        return frozenset(self.listing["inputSchema"].get("properties", {}))


def build_tool(
    func: Callable,
    given: dict[str, Any],
    scopes: Iterable[str],
    headers: dict[str, str] | None,
    options: dict[str, Any],
) -> RegisteredTool:
    """A :class:`RegisteredTool` for ``func`` (see :meth:`mcp_ref.server.Server.tool`); schemas are checked here.
    ``given``: its ``Tool`` fields as registered (``name``, ``title``, ``description``,
    ``inputSchema``, ``outputSchema``, ``annotations``, ``icons``, ``_meta``; None: not given, the
    function's own where it has one).  ``options``: what extensions read of it (checked by them
    when it is registered)."""
    func = runs_in_thread(func)
    plan = compile_arguments(func, skip_types=context_types())
    name = given["name"] or plan.name
    check_tool_name(name)
    for label, key in (("input_schema", "inputSchema"), ("output_schema", "outputSchema")):
        schema = given[key]
        if schema is not None and (not isinstance(schema, dict) or schema.get("type") != "object"):
            # server/tools §Tool: inputSchema and outputSchema are JSON Schemas of type "object".
            raise ValueError(
                f'tool {name}: {label} must be a JSON Schema object with "type": "object"'
            )
    wrapped = False
    output_schema = given["outputSchema"]
    if output_schema is None:
        output_schema, wrapped = output_schema_for(func, f"tool {name}")
    listing = {**given, "name": name, "outputSchema": output_schema}
    if listing["description"] is None:
        listing["description"] = plan.description
    if listing["inputSchema"] is None:
        listing["inputSchema"] = plan.schema
    listing = drop_none(listing)
    if headers:  # 2026-07-28 over Streamable HTTP: loaded for a tool that declares some
        from ..http.headers import with_header_params

        listing["inputSchema"] = with_header_params(name, listing["inputSchema"], headers)
    # a schema in an unsupported dialect, or an invalid one, fails here
    input_validator = validator_for(listing["inputSchema"])
    output_validator = None if output_schema is None else validator_for(output_schema)
    return RegisteredTool(
        name,
        func,
        plan,
        listing,
        output_schema,
        input_validator,
        output_validator,
        wrapped,
        tuple(scopes),
        options,
    )


def replacing(present: bool, kind: str, name: str, entry: Any) -> Any:
    """``entry``, after a UserWarning when ``present``: a name registered twice (as the official SDK warns);
    the later registration replaces the earlier one.  The warning names the user's registering line."""
    if present:
        from .registration_warnings import warn

        warn(f"{kind} {name!r} is registered already: this registration replaces it")
    return entry


_TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


def check_tool_name(name: str) -> None:
    """2025-11-25 server/tools §Tool Names: names SHOULD be 1-128 characters of A-Z a-z 0-9 _ - . only."""
    if not isinstance(name, str) or not name:
        raise ValueError("a tool needs a non-empty string name")
    if not _TOOL_NAME.fullmatch(name):
        from .registration_warnings import warn

        warn(
            f"tool name {name!r} does not follow the spec's guidance: 1-128 characters of "
            f"A-Z, a-z, 0-9, '_', '-' and '.'"
        )


# -- the handlers ---------------------------------------------------------------------------------


def call_tool(connection: Caller, context: RequestContext, params: dict) -> dict:
    """``tools/call``: validate the arguments, run the tool, shape its result."""
    name = params.get("name")
    if not isinstance(name, str):
        raise InvalidParams("Invalid params: tools/call needs a tool name")
    server = connection.server
    # A tool the caller may not use is answered exactly as a missing one (the gate an extension
    # sets), and costs the same: the gate is asked about a missing name too, once per request.
    gate, tool = server.gate, server.get_tool(name)
    if gate is not OPEN:  # the default gate shows every tool to everyone: no principal to work out
        tool = gate.visible(connection.principal, "tools/call", name, tool, params)
    if tool is None:
        # 2025-11-25 server/tools §Error Handling: unknown tools are a protocol error.
        raise InvalidParams(f"Unknown tool: {name}")
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    elif not isinstance(arguments, dict):
        raise InvalidParams("Invalid params: arguments must be an object")
    # a plain schema's compiled test first (Validator.is_valid): no call into jsonschema
    problem = first_error(tool.input_validator, arguments)
    if problem is None and not tool.declared.issuperset(arguments):
        # An argument the tool does not declare is the caller's mistake, not an internal error.
        problem = f"unexpected argument(s): {', '.join(sorted(arguments.keys() - tool.declared))}"

    def run(run_context: RequestContext) -> dict:
        if problem is not None:
            from .tool_errors import bad_arguments

            return bad_arguments(connection, run_context, name, problem)
        return run_tool(connection, tool, arguments, run_context)

    hooks = server.tool_call_hooks
    if hooks:  # the extensions' intercept_tool_call; invalid arguments reach them as None (run answers them)
        from .seams import intercept  # the extensions' seams: loaded by the first extension already

        return intercept(
            hooks, connection, tool, arguments if problem is None else None, context, run
        )
    return run(context)


def run_tool(
    connection: Caller, tool: RegisteredTool, arguments: dict, context: RequestContext
) -> dict:
    """Call the tool's function with valid ``arguments`` and shape what it returns (or raised)."""
    name = tool.name
    try:  # valid JSON may still be a bad value: an ISO date that does not exist, a pydantic validator's no
        arguments = tool.plan.convert(arguments)
    except ValueError as exc:
        from .tool_errors import bad_arguments

        return bad_arguments(connection, context, name, exc)
    if tool.plan.context_param is not None:  # its Context annotation loaded the module already
        from .context import with_context

        arguments = with_context(tool.plan, arguments, connection, context)
    try:
        value = tool.func(**arguments)
    except (McpError, RequestCancelled):
        raise
    except ToolError as exc:  # the message the tool chose, for the model
        from .tool_errors import error_result

        return error_result(str(exc))
    except Exception as exc:  # an isError result: the client sees no traceback (the log does)
        from .tool_errors import failed

        return failed(name, exc)
    return tool_result(tool, value, connection.version_for(context))


# -- results ----------------------------------------------------------------------------------------


def tool_result(tool: RegisteredTool, value: Any, version: str | None) -> dict:
    """A tool's return value as a ``CallToolResult`` that ``version`` can carry; an ``isError`` result
    naming the problem when the value has no JSON form (a type its annotation did not announce, a
    NaN or an infinity in its text or structured content, in a result the tool shaped itself too),
    never the -32603 that a result JSON cannot carry gets from the session."""
    try:
        return shape_result(tool, value, version)
    # json.dumps: "Object of type X is not JSON serializable", a NaN ...; a value that holds itself
    # or nests too deeply (RecursionError); a dataclass's init=False field never set (AttributeError)
    except (TypeError, ValueError, RecursionError, AttributeError) as exc:
        from .tool_errors import unserialisable

        return unserialisable(tool.name, exc)


def shape_result(tool: RegisteredTool, value: Any, version: str | None) -> dict:
    """:func:`tool_result` without the guard: TypeError or ValueError when ``value`` has no JSON form."""
    result: dict | None = None
    if isinstance(value, CallToolResult) or (
        isinstance(value, dict) and "content" in value and tool.output_schema is None
    ):  # a CallToolResult, or the dict of one (in every part), shaped by the tool
        from .shaped_results import self_shaped

        result = self_shaped(value)
    if result is None:
        result = {"content": as_content(value)}
        if tool.output_schema is not None:
            structured = to_jsonable(value)
            result["structuredContent"] = {"result": structured} if tool.wrapped else structured
    structured = result.get("structuredContent")
    if tool.output_schema is not None and not result.get("isError"):
        problem = None if structured is None else first_error(tool.output_validator, structured)
        if structured is None or problem:  # 2025-11-25 server/tools §Output Schema
            from .tool_errors import invalid_output

            return invalid_output(tool.name, problem)
    # structured content and resource links came in the same revision (2025-06-18)
    if not lifecycle.at_least(version, lifecycle.STRUCTURED_OUTPUT):
        from ..older_revisions import tool_result_for_revision  # loaded only for an older peer

        return tool_result_for_revision(result, version)
    return result


def as_content(value: Any) -> list:
    """A tool's return value as a list of content block dicts.

    ``str``: one text block.  A content object (``TextContent``, ``ImageContent``, ``Image`` ...):
    itself.  ``bytes``: an image or audio block when its first bytes name the format, otherwise
    an embedded blob (``application/octet-stream``).  A list or tuple holding any content
    object or bytes: one block per item, each item by these rules.  Anything else: its JSON
    as one text block.
    """
    if value is None:
        return []
    if isinstance(value, str):
        return [text_block(value)]
    if isinstance(value, WireModel):
        return [value.to_wire()]
    if isinstance(value, (bytes, bytearray)):
        from ..media import media_block

        return [media_block(bytes(value))]
    if isinstance(value, (list, tuple)) and any(
        isinstance(v, (WireModel, bytes, bytearray)) for v in value
    ):
        return [block for item in value for block in as_content(item)]
    # RFC 8259 §6: "Numeric values that cannot be represented in the grammar below (such as
    # Infinity and NaN) are not permitted": ValueError, and the structured content is this value
    return [text_block(json.dumps(to_jsonable(value), ensure_ascii=False, allow_nan=False))]
