"""A server whose every string carries HTML and script, for the inspector's page
(tests/inspector/test_page_hostile.py): image tags with ``onerror`` handlers, ``<script>``
elements and ``javascript:`` links in its name, title, instructions, tool names, titles,
descriptions, input schemas, results (text, a resource link to a ``javascript:`` URI, an "image"
whose media type is text/html, an embedded resource, structuredContent, an error), progress and log
messages, elicitation messages (form and URL mode: a ``javascript:`` URL, which the client refuses,
and an https URL with markup in it), resources, templates, prompts and its stderr.

Each piece of markup names an element id starting ``pwned-`` and sets ``window.__pwned`` when run:
a page that shows all of this as text has neither.

    python tests/servers/hostile_server.py        # over stdio
"""

from __future__ import annotations

import base64
import sys
import warnings
from pathlib import Path
from typing import Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_ref import Context, Server, ToolError
from mcp_ref.types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

IMG = '<img src=x id="pwned-img" onerror="window.__pwned=1">'
SCRIPT = '<script id="pwned-script">window.__pwned=2</script>'
LINK = '<a id="pwned-link" href="javascript:window.__pwned=3">click me</a>'
STYLE = '<style id="pwned-style">body{display:none}</style>'
EVIL = f"{IMG}{SCRIPT}{LINK}{STYLE}"
#: A tool name that is markup (the spec says SHOULD for names; a server may still send one).
EVIL_NAME = '<img src=x id="pwned-name" onerror="window.__pwned=4">'


def build() -> Server:
    """The hostile server."""
    server = Server(
        f"hostile{EVIL}", version=f"1{EVIL}", title=f"Hostile {EVIL}", instructions=f"Read {EVIL}"
    )

    @server.tool(title=f"Shout {EVIL}", description=f"Shouts {EVIL}")
    def shout(
        words: str = f"default {EVIL}",
        tone: Literal["<b>loud</b>", "<i>soft</i>"] = "<b>loud</b>",
    ) -> CallToolResult:
        """Answers with markup in every kind of content."""
        return CallToolResult(
            content=[
                TextContent(text=f"said {words} {EVIL}"),
                ResourceLink(
                    uri="javascript:window.__pwned=5",
                    name=f"link {EVIL}",
                    title=f"Link {EVIL}",
                    description=f"a link {EVIL}",
                ),
                ImageContent(
                    data=base64.b64encode(SCRIPT.encode()).decode(), mime_type="text/html"
                ),
                EmbeddedResource(
                    resource=TextResourceContents(
                        uri=f"hostile://embedded/{EVIL}", text=f"embedded {EVIL}"
                    )
                ),
            ],
            structured_content={"said": f"{EVIL}"},
        )

    @server.tool(description=f"Fails {EVIL}")
    def fail() -> str:
        raise ToolError(f"failed {EVIL}")

    @server.tool(description="Reports progress and logs, with markup")
    def noisy(ctx: Context) -> str:
        ctx.report_progress(1, 2, f"half {EVIL}")
        ctx.log("warning", f"log {EVIL}", f"logger{EVIL}")
        ctx.report_progress(2, 2, f"done {EVIL}")
        return f"noisy {EVIL}"

    @server.tool(description="Asks the user, with markup")
    def ask(ctx: Context) -> str:
        answer = ctx.elicit(
            f"Tell me {EVIL}",
            {
                "type": "object",
                "properties": {
                    "answer": {"type": "string", "title": f"Answer {EVIL}", "description": EVIL},
                    "pick": {"type": "string", "enum": [IMG, SCRIPT]},
                },
                "required": ["answer"],
            },
        )
        return f"asked: {answer.action}"

    @server.tool(description="Sends the user to a javascript: URL")
    def visit(ctx: Context) -> str:
        answer = ctx.elicit_url(
            f"Visit {EVIL}", "javascript:window.__pwned=6", elicitation_id="hostile-1"
        )
        return f"visited: {answer.action}"

    @server.tool(description="Sends the user to an https URL with markup in it")
    def visit_page(ctx: Context) -> str:
        answer = ctx.elicit_url(
            f"Visit {EVIL}",
            'https://hostile.example/"><img/src=x/id="pwned-url"/onerror=window.__pwned=7>',
            elicitation_id="hostile-2",
        )
        return f"visited: {answer.action}"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the name's warning: deliberate

        @server.tool(name=EVIL_NAME, description=EVIL)
        def named() -> str:
            return EVIL

    @server.resource("hostile://page", name=f"page {EVIL}", description=EVIL, mime_type="text/html")
    def page() -> str:
        return f"<html>{EVIL}</html>"

    @server.resource("hostile://item/{name}", description=f"item {EVIL}")
    def item(name: str) -> str:
        return f"item {name} {EVIL}"

    @server.prompt(title=f"Prompt {EVIL}", description=f"Prompts {EVIL}")
    def hello(who: str = "x") -> list:
        """A prompt with markup."""
        return [
            {"role": "user", "content": f"hello {who} {EVIL}"},
            {"role": "assistant", "content": f"reply {EVIL}"},
        ]

    @server.completion(prompt="hello")
    def complete_hello(argument: str, value: str, context: dict) -> list[str]:
        return [IMG, SCRIPT, LINK]

    return server


if __name__ == "__main__":
    print(f"starting {EVIL}", file=sys.stderr, flush=True)
    build().run_stdio()
