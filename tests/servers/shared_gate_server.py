"""A server whose third-party gate hides every item named ``internal...`` from everyone alike.

What one principal sees never differs from what another sees, so the gate says
``restricts = False`` (the ``Gate`` contract: "True when what a principal sees may differ from
another's").  It hides its items all the same: completion, listen streams, list-changed
notifications and the 2026-07-28 header checks must ask it as ``tools/call`` does.  Like the
project's own ``Policy``, it answers a question about no principal (None) with the item: such a
question is never the caller's.  Run it as a script (stdio) or ``build()`` it in process.
"""

from __future__ import annotations

from mcp_ref import Extension, Server


def hidden(name: str) -> bool:
    """True for the names the gate hides (an ``internal`` item, a URI of one)."""
    return name.startswith("internal") or "/internal/" in name


class HideInternal:
    """The gate: ``internal...`` items are nobody's."""

    restricts = False  # everyone sees the same

    def allows(self, principal, action, name, request=None) -> bool:
        """False for a hidden name, whoever asks."""
        return not hidden(name)

    def visible(self, principal, action, name, entry, request=None):
        """``entry`` unless it is hidden (a question about no principal gets it, as ``Policy``'s)."""
        if principal is None:
            return entry
        return entry if self.allows(principal, action, name) else None

    def resource_allowed(self, principal, uri, found, action="resources/read", request=None):
        """False for a hidden URI."""
        return self.allows(principal, action, uri)

    def visible_resource(self, principal, uri, found, action="resources/read", request=None):
        """``found`` unless the URI is hidden."""
        if principal is None:
            return found
        return found if self.resource_allowed(principal, uri, found, action) else None

    def filter_listing(self, principal, kind, items):
        """The listing without the hidden items."""
        key = {"tools": "name", "resources": "uri", "templates": "uriTemplate", "prompts": "name"}
        return [item for item in items if not hidden(item.get(key[kind], ""))]


class Hiding(Extension):
    """The extension that brings the gate."""

    name = "acme/hiding"
    gate = HideInternal()


def build() -> Server:
    """The server: a hidden and a public prompt (each with completions), resource and tool."""
    server = Server("shared-gate", extensions=[Hiding()])

    @server.prompt()
    def internal_runbook(customer: str) -> str:
        """Hidden from everyone."""
        return f"runbook for {customer}"

    @server.completion(prompt="internal_runbook")
    def customers(argument, value, context):
        return ["ACME-secret-customer"]

    @server.prompt()
    def public(topic: str) -> str:
        """Visible to everyone."""
        return topic

    @server.completion(prompt="public")
    def topics(argument, value, context):
        return ["weather"]

    server.add_resource(lambda: "internal data", "mem://internal/doc", name="internal_doc")
    server.add_resource(lambda: "public data", "mem://public/doc", name="public_doc")

    @server.tool()
    def touch(uri: str) -> str:
        """Announce an update of ``uri``."""
        server.notify_resource_updated(uri)
        return "ok"

    @server.tool()
    def register(name: str) -> str:
        """Register a tool named ``name``."""
        server.add_tool(lambda: "x", name=name)
        return "added"

    @server.tool(headers={"region": "Region"})
    def internal_routed(region: str) -> str:
        """Hidden; its region travels in an Mcp-Param-Region header too."""
        return region

    return server


if __name__ == "__main__":
    build().run()
