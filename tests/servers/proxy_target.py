"""The server behind the proxy in tests/proxy: every feature the proxy carries, in one era or both.

``python proxy_target.py [--era handshake|modern|both] [--http]``: on stdio, or over HTTP on a free
port of 127.0.0.1 (its URL printed on stdout as ``URL <url>``).  ``--era handshake`` refuses the
2026-07-28 era (``server/discover`` and any request with the modern ``_meta`` are "method not
found", as a server of 2025 answers them); ``--era modern`` refuses ``initialize``.
"""

from __future__ import annotations

import argparse
import os
import sys

from mcp_ref import Context, Server
from mcp_ref.errors import MethodNotFound, UnsupportedProtocolVersionError
from mcp_ref.extension import Extension
from mcp_ref.lifecycle import is_modern
from mcp_ref.types import ResourceLink


class OneEra(Extension):
    """Refuses the other era's requests."""

    name = "test/one-era"

    def __init__(self, era: str):
        self.era = era

    def intercept_request(self, call, proceed):
        modern = is_modern(call.params) or call.method == "server/discover"
        if self.era == "handshake" and modern:
            raise MethodNotFound(f"Method not found: {call.method}")
        if self.era == "modern" and call.method == "initialize":
            raise UnsupportedProtocolVersionError.naming(
                str(call.params.get("protocolVersion")), ["2026-07-28"]
            )
        return proceed()


def build(era: str) -> Server:
    """The target: era ``handshake``, ``modern`` or ``both``."""
    server = Server(
        f"target-{era}",
        "1.2.3",
        instructions="The server behind the proxy.",
        page_size=3,  # listings in pages: their cursors cross the proxy too
        extensions=[] if era == "both" else [OneEra(era)],
    )

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @server.tool()
    def add(a: int, b: int) -> dict:
        """Add two numbers (structured output)."""
        return {"sum": a + b}

    @server.tool()
    def work(steps: int, ctx: Context) -> str:
        """Report progress and log, then ask the user, the model and the roots."""
        for step in range(1, steps + 1):
            ctx.report_progress(step, steps, f"step {step}")
        ctx.info(f"working in {ctx.era}")
        who = ctx.elicit(
            "Who is asking?",
            {"type": "object", "properties": {"name": {"type": "string"}}},
            key="who",
        )
        idea = ctx.sample("Say something", max_tokens=20, key="idea")
        roots = ctx.list_roots(key="roots")
        name = who.content["name"] if who.action == "accept" else who.action
        return f"{name}|{idea.content.text}|{len(roots)} roots|{roots[0].uri if roots else ''}"

    @server.tool(title="Linker")
    def link() -> list:
        """Point at the note (a resource link: 2025-06-18 on)."""
        return [ResourceLink(uri="note://1", name="note")]

    @server.tool()
    def welcome(ctx: Context) -> str:
        """Ask the user's name only when the client declared elicitation, else greet a stranger."""
        if "elicitation" not in ctx.client_capabilities:
            return f"Hello, stranger! (client capabilities: {sorted(ctx.client_capabilities)})"
        answer = ctx.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        return f"Hello, {answer.content['name']}!" if answer.action == "accept" else "Hello!"

    @server.tool()
    def slow(ctx: Context) -> str:
        """Wait until cancelled (at most 30 s); then add the tool slow_was_cancelled (so clients
        are told the tools changed)."""
        ctx.report_progress(1, None, "started")
        if ctx.request.cancelled.wait(30):
            server.add_tool(lambda: "yes", name="slow_was_cancelled", description="a witness")
            return "cancelled"
        return "not cancelled"

    @server.tool()
    def touch() -> str:
        """Change the note (subscribers are told)."""
        server.notify_resource_updated("note://1")
        return "touched"

    @server.tool()
    def add_tool(name: str) -> str:
        """Add a tool (clients are told the list changed)."""
        server.add_tool(lambda: name, name=name, description="added")
        return name

    @server.tool()
    def visit(ctx: Context) -> str:
        """Send the user to a page (URL-mode elicitation); in the handshake era, say it is done."""
        handshake = ctx.era == "handshake"
        result = ctx.elicit_url(
            "Sign in", "https://example.com/sign-in", "e-1" if handshake else None, key="visit"
        )
        if handshake:
            ctx.complete_url_elicitation("e-1")
        return result.action

    @server.tool()
    def die() -> str:
        """Exit at once, answering nothing (a server that crashes)."""
        os._exit(3)

    @server.resource("note://1", mime_type="text/plain")
    def note() -> str:
        """A note."""
        return "note one"

    @server.resource("note://{id}/text")
    def note_text(id: str) -> str:
        """A note by id."""
        return f"note {id}"

    @server.prompt()
    def greet(name: str) -> str:
        """Greet someone."""
        return f"Hello, {name}!"

    @server.completion(prompt="greet")
    def complete_name(argument: str, value: str, context_arguments: dict) -> list[str]:
        return [n for n in ("Ada", "Alan", "Grace") if n.startswith(value)]

    def roots_changed(connection) -> None:
        server.add_tool(lambda: "yes", name="roots_changed", description="a witness")

    server.on_roots_list_changed = roots_changed  # the client's roots changed: clients are told
    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--era", default="both", choices=["handshake", "modern", "both"])
    parser.add_argument("--http", action="store_true")
    args = parser.parse_args()
    server = build(args.era)
    if not args.http:
        server.run_stdio()
        return

    def announce(httpd) -> None:
        print(f"URL {httpd.url}/mcp", flush=True)

    server.run_http("127.0.0.1", 0, on_ready=announce)


if __name__ == "__main__":
    main()
    sys.exit(0)
