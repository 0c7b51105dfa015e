"""Test server for tests/protocol/test_lifecycle.py: tools only (no prompts, no resources), no instructions.

``titled`` has a title and an output schema (fields newer revisions add);
``try_sampling`` and ``raw_sampling`` show what happens when the client did
not declare sampling: the first goes through the capability check, the
second sends the request anyway and reports the client's error code.
"""

import logging
import sys
from dataclasses import dataclass

from mcp_ref import CapabilityError, Context, McpError, Server

logging.basicConfig(
    level=logging.WARNING, stream=sys.stderr, format="lifecycle-server: %(levelname)s: %(message)s"
)

server = Server("lifecycle-test", version="2.0", title="Lifecycle test server")


@dataclass
class Report:
    """A structured result."""

    value: int


@server.tool(title="A titled tool")
def titled() -> Report:
    """Return a structured report."""
    return Report(value=7)


@server.tool()
def try_sampling(ctx: Context) -> str:
    """Ask for sampling through Context.sample (which checks the client's capabilities)."""
    try:
        ctx.sample("hi", max_tokens=5)
    except CapabilityError as exc:
        return f"CapabilityError: {exc}"
    return "sampling worked"


@server.tool()
def raw_sampling(ctx: Context) -> str:
    """Send sampling/createMessage without checking the client's capabilities."""
    params = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 5,
    }
    try:
        ctx.connection.request("sampling/createMessage", params, timeout=10)
    except McpError as exc:
        return f"error {exc.code}"
    return "answered"


if __name__ == "__main__":
    server.run_stdio()
