"""A server for tests/extensions/test_client_approval.py: tools that ask the client for each of the three things
it answers (sampling, elicitation, roots) and report, as JSON, what came back — the answer, or the
JSON-RPC error the client sent instead (the handshake era; in 2026-07-28 a refused request never
reaches the server).

    python tests/servers/approval_server.py        # over stdio
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_ref import Context, McpError, Server
from mcp_ref.errors import RequestTimeout

NAME = {
    "type": "object",
    "properties": {"name": {"type": "string", "title": "Name"}},
    "required": ["name"],
}


def _error(exc: McpError) -> str:
    return json.dumps({"error": {"code": exc.code, "message": exc.message, "data": exc.data}})


def build() -> Server:
    server = Server("approval", version="1.0")

    @server.tool()
    def sample(text: str, ctx: Context) -> str:
        """Sample the client's model with ``text``; report the reply or the client's error."""
        try:
            reply = ctx.sample(text, max_tokens=32, system_prompt="Be brief.", key="sample")
        except McpError as exc:
            return _error(exc)
        return json.dumps({"text": reply.content.text, "model": reply.model})

    @server.tool()
    def sample_briefly(text: str, ctx: Context) -> str:
        """Sample, giving up (and cancelling the request) after half a second (handshake era)."""
        try:
            reply = ctx.sample(text, max_tokens=32, timeout=0.5)
        except RequestTimeout:
            return json.dumps({"timedOut": True})
        return json.dumps({"text": reply.content.text})

    @server.tool()
    def ask(ctx: Context) -> str:
        """Ask the user's name; report the action and content."""
        try:
            answer = ctx.elicit("Who are you?", NAME, key="ask")
        except McpError as exc:
            return _error(exc)
        return json.dumps({"action": answer.action, "content": answer.content})

    @server.tool()
    def roots(ctx: Context) -> str:
        """The client's roots, or its error."""
        try:
            found = ctx.list_roots(key="roots")
        except McpError as exc:
            return _error(exc)
        return json.dumps({"roots": [r.uri for r in found]})

    return server


if __name__ == "__main__":
    build().run_stdio()
