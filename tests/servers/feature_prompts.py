"""A server for tests/server/test_prompts.py: prompts with arguments and every kind of content."""

from __future__ import annotations

import base64
from typing import Literal

from mcp_ref import Server
from mcp_ref.feature_types import PromptMessage
from mcp_ref.types import (
    AudioContent,
    BlobResourceContents,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)

IMAGE = base64.b64encode(b"\x89PNG\r\n\x1a\n fake image").decode()
AUDIO = base64.b64encode(b"RIFF\x00\x00\x00\x00WAVEfmt fake audio").decode()
BLOB = base64.b64encode(bytes(range(64))).decode()


def build() -> Server:
    server = Server("feature-prompts")

    @server.prompt(title="Summarise a text")
    def summarize(text: str, style: Literal["short", "long"] = "short", max_words: int = 50) -> str:
        """Summarise a text in a given style.

        Args:
            text: The text to summarise.
            style: How long the summary should be.
            max_words: An upper bound on the summary's length.
        """
        return f"Summarise in a {style} style, at most {max_words} words ({type(max_words).__name__}):\n{text}"

    @server.prompt()
    def conversation(topic: str) -> list:
        """A short exchange, user and assistant."""
        return [
            f"Tell me about {topic}.",
            {"role": "assistant", "content": f"What would you like to know about {topic}?"},
            PromptMessage(role="user", content=TextContent(text="Everything.")),
        ]

    @server.prompt()
    def media() -> list:
        """One message of each content kind."""
        return [
            {"role": "user", "content": "Look at these."},
            {"role": "user", "content": ImageContent(data=IMAGE, mime_type="image/png")},
            {"role": "user", "content": AudioContent(data=AUDIO, mime_type="audio/wav")},
            {
                "role": "user",
                "content": EmbeddedResource(
                    resource=TextResourceContents(
                        uri="feature://notes.md", text="# Notes\n", mime_type="text/markdown"
                    )
                ),
            },
            {
                "role": "assistant",
                "content": EmbeddedResource(
                    resource=BlobResourceContents(
                        uri="feature://bytes.bin", blob=BLOB, mime_type="application/octet-stream"
                    )
                ),
            },
        ]

    @server.prompt()
    def typed(count: int | None = None, key: int | str = "k", flag: bool | None = None) -> str:
        """Arguments of more than one JSON type."""
        return f"count={count!r} key={key!r} flag={flag!r}"

    @server.prompt(description="Explicitly described.")
    def plain() -> str:
        return "plain"

    return server


if __name__ == "__main__":
    build().run_stdio()
