"""An mcp_ref server for the revision-dependent listings the spec_notes checks.

Server: ``title`` and ``website_url`` set (serverInfo ``title`` from 2025-06-18,
``websiteUrl`` from 2025-11-25).

* resource ``notes://full`` and template ``notes://full/{x}``: ``title``, ``icons``,
  ``annotations`` (and a ``size`` on the resource);
* prompt ``iconic`` (``title`` and ``icons``); prompts ``link`` (a resource_link
  message) and ``link_result`` (the same, returned as a ready-made GetPromptResult);
* tool ``log_one`` sends one info log message and returns "logged";
* tool ``needs_sign_in`` fails with URLElicitationRequiredError (-32042) listing ``SIGN_IN``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

# This checkout's mcp_ref, whatever copy an editable install elsewhere may point at.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mcp_ref import Context, Server
from mcp_ref.errors import UrlElicitationRequired
from mcp_ref.feature_types import GetPromptResult, PromptMessage
from mcp_ref.types import ResourceLink

ICONS = [{"src": "https://example.com/notes.png", "mimeType": "image/png", "sizes": ["48x48"]}]
ANNOTATIONS = {"audience": ["user"], "priority": 0.5}
WEBSITE = "https://example.com/notes-server"
SIGN_IN = {
    "mode": "url",
    "message": "Sign in to continue",
    "url": "https://example.com/sign-in",
    "elicitationId": "sign-in-1",
}
LINK = {
    "type": "resource_link",
    "uri": "file:///srv/notes.txt",
    "name": "notes",
    "mimeType": "text/plain",
}


def build() -> Server:
    server = Server("notes", version="1.0", title="Notes server", website_url=WEBSITE)

    @server.resource(
        "notes://full",
        title="A full resource",
        icons=ICONS,
        annotations=ANNOTATIONS,
        mime_type="text/plain",
        size=5,
    )
    def full() -> str:
        """Every optional field."""
        return "full!"

    @server.resource(
        "notes://full/{x}",
        title="A full template",
        icons=ICONS,
        annotations=ANNOTATIONS,
        mime_type="text/plain",
    )
    def full_template(x: str) -> str:
        """Every optional field, as a template."""
        return f"full {x}"

    @server.prompt(title="An iconic prompt", icons=ICONS)
    def iconic() -> str:
        """A prompt with icons."""
        return "iconic"

    @server.prompt()
    def link() -> dict:
        """A resource link."""
        return {
            "role": "user",
            "content": ResourceLink(uri=LINK["uri"], name=LINK["name"], mime_type=LINK["mimeType"]),
        }

    @server.prompt()
    def link_result() -> GetPromptResult:
        """A resource link, in a ready-made GetPromptResult."""
        return GetPromptResult(
            messages=[
                PromptMessage(
                    role="assistant",
                    content=ResourceLink(
                        uri=LINK["uri"], name=LINK["name"], mime_type=LINK["mimeType"]
                    ),
                )
            ],
            description="made by hand",
        )

    @server.tool()
    def log_one(ctx: Context) -> str:
        """Send one info log message."""
        ctx.info({"note": "hello"}, logger="notes")
        return "logged"

    @server.tool()
    def needs_sign_in() -> str:
        """Cannot proceed until the user signs in (URL-mode elicitation)."""
        raise UrlElicitationRequired(
            "This request requires sign-in", data={"elicitations": [SIGN_IN]}
        )

    return server


if __name__ == "__main__":
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="notes-server: %(levelname)s: %(message)s"
    )
    build().run_stdio()
