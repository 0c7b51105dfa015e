"""An MCP server written with the official Python SDK (mcp 2.x MCPServer, formerly FastMCP).

Used by tests/interop/test_interop.py to check that mcp_ref's client and CLI work
against a server this project did not write: tools with progress, logging and
structured output, a resource, a resource template and a prompt, over stdio.
"""

from __future__ import annotations

import warnings

from pydantic import BaseModel

try:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP as MCPServer  # type: ignore[no-redef]
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]

warnings.simplefilter(
    "ignore"
)  # deprecation notices (e.g. logging in 2026-07-28) must not clutter stderr

server = MCPServer("interop-sdk-server", instructions="An official-SDK server for interop tests.")


class Sum(BaseModel):
    a: int
    b: int
    total: int


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def add(a: int, b: int) -> Sum:
    """Add two integers, as structured output."""
    return Sum(a=a, b=b, total=a + b)


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Count to `steps`, reporting progress and logging each step."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
        await ctx.info(f"step {step} of {steps}")
    return f"counted to {steps}"


@server.tool()
def fail(message: str) -> str:
    """Always fails: the SDK turns a ToolError into an isError result."""
    raise ToolError(message)


@server.resource("sdk://hello", mime_type="text/plain", description="A fixed text.")
def hello() -> str:
    return "hello from the SDK"


@server.resource("sdk://square/{n}", mime_type="text/plain")
def square(n: str) -> str:
    return str(int(n) ** 2)


@server.prompt()
def greet(name: str) -> str:
    """Greet someone by name."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    server.run("stdio")
