"""A server for the 2026-07-28 tests (tests/server/test_modern_server.py): MRTR asks in every shape,
per-request logging, caching hints with a per-resource override, x-mcp-header parameters, and
tools that change the listings or a resource (for subscriptions/listen).

    python tests/servers/modern_server.py        # over stdio
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_ref import Context, Elicit, ListRoots, Sample, Server

NAME = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
COLOR = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
RUNS: list[
    str
] = []  # what each run of ``two_rounds`` saw, in process (the in-memory tests read it)


def build(secret: str | None = "modern-test-secret") -> Server:
    server = Server(
        "modern",
        version="2.0",
        instructions="Tests the 2026-07-28 era.",
        secret=secret,
        ttl_ms=60_000,
        cache_scope="public",
    )

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    @server.tool()
    def greet(ctx: Context) -> str:
        """Ask the user's name, then greet them (one ask, key ``user_name``)."""
        answer = ctx.elicit("What is your name?", NAME, key="user_name")
        return (
            f"Hello, {answer.content['name']}!"
            if answer.action == "accept"
            else f"No name ({answer.action})"
        )

    @server.tool()
    def two_rounds(ctx: Context) -> str:
        """A name, then a colour: two rounds in the 2026 era; each run is recorded in RUNS."""
        RUNS.append("run")
        name = ctx.elicit("What is your name?", NAME)
        color = ctx.elicit("What is your favourite colour?", COLOR)
        return f"{name.content['name']} likes {color.content['color']}"

    @server.tool()
    def everything(ctx: Context) -> str:
        """Three asks in one round: a form, a sample and the roots."""
        name, sample, roots = ctx.gather(
            Elicit("Name?", NAME, key="name"),
            Sample("Say hi", max_tokens=5, key="hi"),
            ListRoots(key="roots"),
        )
        return f"{name.content['name']}|{sample.content.text}|{','.join(r.uri for r in roots)}"

    @server.tool()
    def needs_sampling(ctx: Context) -> str:
        """Needs the client's sampling capability."""
        return ctx.sample("Say hi", max_tokens=5).content.text

    @server.tool()
    def chatty(ctx: Context) -> str:
        """Log at info and debug."""
        ctx.info("an info line")
        ctx.debug("a debug line")
        return "logged"

    @server.tool(headers={"region": "Region", "count": "Count", "dry_run": "Dry-Run"})
    def routed(region: str, count: int = 1, dry_run: bool = False, note: str = "") -> str:
        """A tool whose region, count and dry_run travel in Mcp-Param-* headers too."""
        return f"{region}:{count}:{dry_run}:{note}"

    @server.resource(
        "test://fresh", ttl_ms=0, cache_scope="private", description="Changes on every read"
    )
    def fresh() -> str:
        return "now"

    @server.resource("test://stable", description="Never changes")
    def stable() -> str:
        return "always"

    @server.resource(
        "test://asks", description="Asks the reader's name first (MRTR on resources/read)"
    )
    def asks(ctx: Context) -> str:
        answer = ctx.elicit("Who is reading?", NAME, key="reader")
        return f"read by {answer.content['name']}"

    @server.prompt()
    def with_context(ctx: Context) -> str:
        """A prompt that asks for context first."""
        answer = ctx.elicit(
            "Context?",
            {
                "type": "object",
                "properties": {"context": {"type": "string"}},
                "required": ["context"],
            },
            key="ctx",
        )
        return f"Use: {answer.content['context']}"

    def come_or_go(kind: str) -> str:
        find, add, remove = (
            (server.get_tool, server.add_tool, server.remove_tool)
            if kind == "tools"
            else (server.get_prompt, server.add_prompt, server.remove_prompt)
        )
        if find("extra") is None:
            add(lambda: "extra", name="extra", description=f"Added by change_{kind}")
        else:
            remove("extra")
        return "changed"

    @server.tool()
    def change_tools() -> str:
        """Add a tool, or remove it if present: tools/list_changed for listeners."""
        return come_or_go("tools")

    @server.tool()
    def change_prompts() -> str:
        """Add a prompt, or remove it if present: prompts/list_changed for listeners."""
        return come_or_go("prompts")

    @server.tool()
    def touch(uri: str) -> str:
        """Announce that the resource ``uri`` changed: resources/updated for its listeners."""
        server.notify_resource_updated(uri)
        return "touched"

    @server.tool()
    def end_streams() -> str:
        """End every listen stream gracefully, as a server shutting down does."""
        return str(server.close_subscriptions())

    return server


if __name__ == "__main__":
    build().run_stdio()
