"""A server for tests/extensions/test_policy.py: access control, rate limits and subscription bounds.

``policy_server.py``          ``build()``: hidden items, per-item limits, a cap of 3 subscribed resources
``policy_server.py global``   ``build_global()``: the server-wide limit of 5 requests per minute
``policy_server.py storm``    ``build_storm()``: resources/updated coalesced to one per 0.3 s

Its policy: an item whose name or URI contains ``secret`` is for principals holding the ``admin``
scope only (a token's; stdio and plain HTTP callers have none), and so are two templates, with
every URI they serve: ``mem://vault/{key}`` and the ``vault://`` file root; the prompt ``greet``
may be got but not completed.  The rate limits run on a clock the ``advance`` tool moves, so a test crosses a
window without waiting for it.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

from mcp_ref import Context, Server

FILES = Path(__file__).parent / "policy_files"
#: A second file root, hidden as a whole: authorize denies its template, never a file's URI.
VAULT = Path(__file__).parent / "policy_vault"
#: The templates hidden from all but admins (each hides every URI it serves).
HIDDEN_TEMPLATES = ("mem://vault/{key}", "vault://{+path}")


class TestClock:
    """Monotonic seconds that move only when ``advance`` is called (thread-safe)."""

    def __init__(self):
        self.now = 1000.0
        self.lock = threading.Lock()

    def __call__(self) -> float:
        with self.lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self.lock:
            self.now += seconds


def authorize(principal, action, name) -> bool:
    """Secret items (and the vault templates) for admins only; ``greet`` cannot be completed."""
    if "secret" in name or name in HIDDEN_TEMPLATES:
        return "admin" in principal.scopes
    if action == "completion/complete" and name == "greet":
        return False
    return True


def _named(name: str):
    def tool() -> str:
        return name

    return tool


def _common(server: Server) -> Server:
    clock = TestClock()
    server.policy.clock = clock

    for name in ("alpha", "beta", "gamma", "secret_delta", "epsilon", "secret_zeta"):
        server.add_tool(_named(name), name=name, description=f"the tool {name}")

    @server.tool(rate_limit="3/minute")
    def limited() -> str:
        """At most three calls a minute per caller."""
        return "done"

    @server.tool(rate_limit="2/minute", scopes=["admin"])
    def secret_limited() -> str:
        """Hidden (and limited) unless the caller is an admin."""
        return "secret done"

    @server.tool(scopes=["auditor"])
    def audit() -> str:
        """Listed for everyone; called only with the auditor scope (OAuth step-up: 403 without it)."""
        return "audited"

    @server.tool()
    def advance(seconds: float) -> str:
        """Move the rate limits' clock on (a test's way across a window)."""
        clock.advance(seconds)
        return "ok"

    @server.tool()
    def whoami(ctx: Context) -> dict:
        """The caller as the server sees it."""
        principal = ctx.principal
        return {
            "id": principal.id,
            "scopes": sorted(principal.scopes),
            "authenticated": principal.authenticated,
        }

    @server.tool()
    def add_item(name: str) -> str:
        """Register a tool called ``name`` (clients that may see it get tools/list_changed)."""
        server.add_tool(_named(name), name=name)
        return f"added {name}"

    @server.tool()
    def remove_item(name: str) -> str:
        """Unregister the tool called ``name`` (clients that could see it get tools/list_changed)."""
        server.remove_tool(name)
        return f"removed {name}"

    @server.tool()
    def touch(uri: str, times: int = 1) -> str:
        """Announce that ``uri`` changed, ``times`` times in a row."""
        for _ in range(times):
            server.notify_resource_updated(uri)
        return "touched"

    for n in (1, 2, 3, 4):
        server.add_resource(_named(f"public {n}"), f"mem://public/{n}", name=f"public{n}")
    server.add_resource(lambda: "the secret", "mem://secret/doc", name="secretdoc")
    server.add_resource(lambda item: f"item {item}", "mem://items/{item}", name="items")
    server.add_resource(lambda item: f"secret {item}", "mem://secret/{item}", name="secrets")
    server.add_resource(
        lambda key: f"vault {key}", "mem://vault/{key}", name="vault"
    )  # hidden as a template
    server.add_file_root(
        str(FILES), uri_prefix="files://"
    )  # secret.txt is hidden, public.txt is not
    server.add_file_root(str(VAULT), uri_prefix="vault://")  # hidden by its template: plan.txt too

    server.add_prompt(lambda who: f"hello {who}", name="greet")
    server.add_prompt(lambda topic: f"about {topic}", name="summary")
    server.add_prompt(lambda: "classified", name="secret_brief")

    @server.completion(prompt="summary")
    def topics(argument, value, context, ctx: Context):
        """Suggestions that depend on who asks: "secrets" for admins only."""
        return [
            t
            for t in ("science", "sport", "secrets")
            if t.startswith(value) and authorize(ctx.principal, "", t)
        ]

    @server.completion(prompt="secret_brief")
    def briefs(argument, value, context):
        return ["x"]

    @server.completion(resource="mem://items/{item}")
    def items(argument, value, context):
        return ["1", "2"]

    @server.completion(resource="mem://secret/{item}")
    def secret_items(argument, value, context):
        return ["1"]

    return server


def build() -> Server:
    """Hidden items, per-item rate limits, at most 3 subscribed resources per caller."""
    return _common(
        Server(
            "policy",
            authorize=authorize,
            page_size=2,
            max_subscribed_resources=3,
            rate_limit="1000/minute",
        )
    )


def build_global() -> Server:
    """A server-wide limit of 5 requests per minute per caller."""
    return _common(Server("policy-global", authorize=authorize, rate_limit="5/minute"))


def build_storm() -> Server:
    """``notifications/resources/updated`` coalesced to one per 0.3 s per resource (a real clock)."""
    server = _common(Server("policy-storm", resource_update_interval=0.3))
    import time

    server.policy.clock = time.monotonic
    return server


FACTORIES = {"": build, "global": build_global, "storm": build_storm}

if __name__ == "__main__":
    FACTORIES[sys.argv[1] if len(sys.argv) > 1 else ""]().run()
