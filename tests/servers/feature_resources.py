"""A server for tests/server/test_resources.py: ``feature_resources.py <directory>``.

Static text and blob resources, templates, subscriptions (the ``touch`` tool
sends resources/updated), run-time registration (list_changed), and every file
under ``<directory>`` through ``Server.add_file_root``.  Listings have pages of 3.
"""

from __future__ import annotations

import sys

from mcp_ref import Server

BLOB = bytes(range(256)) * 4 + b"\x00\xff\x00"
TEXT = "héllo\nwörld ✓\n"


def build(root: str) -> Server:
    server = Server("feature-resources", page_size=3)

    @server.resource("feature://text", mime_type="text/plain", description="Some unicode text.")
    def text() -> str:
        return TEXT

    @server.resource("feature://blob", mime_type="application/octet-stream", size=len(BLOB))
    def blob() -> bytes:
        """Every byte value."""
        return BLOB

    @server.resource("feature://watched/a")
    def watched_a() -> str:
        return "a"

    @server.resource("feature://watched/b")
    def watched_b() -> str:
        return "b"

    @server.resource("feature://items/{id}", mime_type="text/plain", description="One item.")
    def item(id: str) -> str:
        return f"item [{id}]"

    @server.resource("feature://users/{user}/posts/{post}")
    def post(user: str, post: str) -> str:
        return f"post [{post}] by [{user}]"

    server.add_file_root(root, name="project files")

    @server.tool()
    def touch(uri: str) -> str:
        """Tell subscribers that ``uri`` changed."""
        server.notify_resource_updated(uri)
        return f"touched {uri}"

    @server.tool()
    def publish(uri: str, text: str) -> str:
        """Register a new text resource at run time (resources/list_changed)."""
        server.add_resource(lambda: text, uri, name=uri.rsplit("/", 1)[-1])
        return f"published {uri}"

    return server


if __name__ == "__main__":
    build(sys.argv[1]).run_stdio()
