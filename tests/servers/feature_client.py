"""A server for tests/client/test_client_features.py: tools that call back into the client
(sampling, roots, elicitation) and tools that make the server send each notification."""

from __future__ import annotations

import json
import threading

from mcp_ref import CapabilityError, Context, Server
from mcp_ref.types import TextContent

ELICIT_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name"},
        "age": {"type": "integer", "minimum": 0, "default": 30},
        "colour": {"type": "string", "enum": ["red", "green", "blue"], "default": "blue"},
        "subscribed": {"type": "boolean", "default": True},
    },
    "required": ["name"],
}


def build() -> Server:
    server = Server("feature-client")
    roots_changes = {"count": 0, "roots": None}
    roots_cond = threading.Condition()

    def on_roots_list_changed(connection) -> None:
        # Runs on the server's callback thread; it may ask the client for the new roots.
        roots = connection.request("roots/list", None, timeout=10.0).get("roots")
        with roots_cond:
            roots_changes["count"] += 1
            roots_changes["roots"] = roots
            roots_cond.notify_all()

    server.on_roots_list_changed = on_roots_list_changed

    @server.tool()
    def sample(question: str, ctx: Context) -> str:
        """Ask the client's model; report what came back."""
        try:
            reply = ctx.sample(
                [{"role": "user", "content": {"type": "text", "text": question}}],
                max_tokens=64,
                system_prompt="Be brief.",
                temperature=0.25,
                stop_sequences=["STOP"],
                model_preferences={"hints": [{"name": "small"}], "speedPriority": 0.75},
                include_context="none",
                metadata={"trace": "t-1"},
            )
        except CapabilityError as exc:
            return f"CapabilityError: {exc}"
        return json.dumps(
            {
                "type": type(reply).__name__,
                "role": reply.role,
                "model": reply.model,
                "stop_reason": reply.stop_reason,
                "content_type": type(reply.content).__name__,
                "text": getattr(reply.content, "text", None),
            }
        )

    @server.tool()
    def roots(ctx: Context) -> str:
        """The client's roots, as JSON."""
        return json.dumps([{"uri": r.uri, "name": r.name} for r in ctx.list_roots()])

    @server.tool()
    def roots_changed(at_least: int) -> str:
        """Wait (bounded) until on_roots_list_changed has run ``at_least`` times; report the count and last roots."""
        with roots_cond:
            roots_cond.wait_for(
                lambda: roots_changes["count"] >= at_least, timeout=5.0
            )  # < the client's WAIT
            return json.dumps(roots_changes)

    @server.tool()
    def ask(ctx: Context) -> str:
        """Elicit a form; report the answer (or the CapabilityError)."""
        try:
            answer = ctx.elicit("Who are you?", ELICIT_SCHEMA)
        except CapabilityError as exc:
            return f"CapabilityError: {exc}"
        return json.dumps({"action": answer.action, "content": answer.content})

    @server.tool()
    def notify_all(ctx: Context) -> str:
        """Send a log message, three progress reports, a resource update and every list_changed."""
        ctx.info({"hello": "log"}, "feature-client")
        for step in (1, 2, 3):
            ctx.report_progress(step, 3, f"step {step}")
        server.notify_resource_updated("feature://watched")
        server.add_tool(lambda: "new", name="late_tool")
        server.add_resource(lambda: "new", "feature://late", name="late")
        server.add_prompt(lambda: "new", name="late_prompt")
        return "notified"

    @server.resource("feature://watched")
    def watched() -> str:
        return "watched"

    @server.prompt()
    def hello() -> str:
        """Say hello."""
        return "hello"

    @server.tool()
    def structured(city: str) -> dict[str, str]:
        """A structured result."""
        return {"city": city, "sky": "clear"}

    @server.tool()
    def extra_keys():
        """A ready-made result carrying keys this library does not model."""
        return {
            "content": [{"type": "text", "text": "with extras", "x-block": 1}],
            "isError": False,
            "x-vendor": {"kept": True},
        }

    @server.tool()
    def text_blocks() -> list:
        """Two text blocks."""
        return [TextContent(text="one"), TextContent(text="two")]

    return server


if __name__ == "__main__":
    build().run_stdio()
