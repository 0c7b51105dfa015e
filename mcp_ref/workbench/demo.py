"""The bundled demo server: one of everything MCP offers.

``mcp-ref serve-demo`` runs it on stdio for any client; ``mcp-ref demo``
starts it as a subprocess and walks through every feature (see
:mod:`mcp_ref.workbench.walkthrough`).  Reading this file top to bottom is a tour of
the server API.
"""

from __future__ import annotations

import base64
import collections
import enum
import os
import random
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from ..extension import Extension
from ..server import Context, Server, ToolError
from ..types import EmbeddedResource, ImageContent, TextResourceContents

# A 1x1 transparent PNG, small enough to read in a trace.
PIXEL_PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
    )
).decode("ascii")


class Unit(enum.Enum):
    """Temperature units."""

    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


@dataclass
class Weather:
    """A (made-up) weather report."""

    city: str
    temperature: float
    unit: str
    conditions: str


def build_protected_server() -> Server:
    """The demo for ``serve-demo --http --auth``: :func:`build_server`'s, and ``whoami``, which needs
    the ``mcp:admin`` scope (a client holding only ``mcp:tools`` gets 403 and steps up)."""
    server = build_server()

    @server.tool(scopes=["mcp:admin"])
    def whoami(ctx: Context) -> str:
        """Who is calling, as the access token says (needs the mcp:admin scope)."""
        return f"client {ctx.auth.client_id}, scopes {' '.join(ctx.auth.scopes)}"

    return server


#: The variable ``protected_wsgi_app`` reads its resource URL from (the URL clients reach).
RESOURCE_ENV = "MCP_REF_RESOURCE"

#: ``add_tool``: the most tools one caller may have added (past it, a clear tool error: nothing is
#: replaced).  Counted against ``ctx.principal.limit_id``: a client without a token, over all its
#: HTTP sessions (a new session is free to open); a session's tools go when it ends.
MAX_ADDED_PER_CALLER = 5
#: ``add_tool``: the most added tools the server holds for all callers together; past it the
#: oldest added tool (whoever added it) is removed to make room.  Built-in tools are never removed.
MAX_ADDED_TOOLS = 100
#: ``add_tool``: a name an added tool may take (2025-11-25 server/tools §Tool Names: 1 to 128 of
#: A-Z, a-z, 0-9, ``_``, ``-`` and ``.``; the demo keeps them to 64).
ADDED_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")


def demo_policy(principal, action: str, name: str) -> bool:
    """The demo's access control (``Server(authorize=...)``): tools named ``admin_*`` are for
    callers holding the ``mcp:admin`` scope; everyone else is not shown them, and calling one
    answers as for a tool that does not exist."""
    if name.startswith("admin_"):
        return "mcp:admin" in principal.scopes
    return True


class ConnectionEnd(Extension):
    """Calls ``ended(connection)`` when a connection ends for good: a stdio or in-memory one, or a
    handshake-era HTTP session (:meth:`~mcp_ref.extension.Extension.connection_ended`)."""

    name = "demo-connection-end"

    def __init__(self, ended: Callable[[Any], None]):
        self.ended = ended

    def connection_ended(self, connection: Any) -> None:
        """``connection`` ended: tell ``ended``."""
        self.ended(connection)


def build_server() -> Server:
    """A fresh demo server (each call returns a new, independent one)."""
    # add_tool's tools: name -> (the principal that added it, whom it counts against: its
    # limit_id), oldest first (bounded: MAX_ADDED_TOOLS).
    added: collections.OrderedDict[str, tuple[str, str]] = collections.OrderedDict()
    added_lock = threading.Lock()

    def policy(principal, action: str, name: str) -> bool:
        # A tool added at run time is its caller's own: listed for and callable by it alone.
        entry = added.get(name) if action == "tools/call" else None
        if entry is not None:
            return entry[0] == principal.id
        return demo_policy(principal, action, name)

    server = Server(
        "mcp-ref-demo",
        version="1.0.0",
        title="mcp_ref demo server",
        instructions="A demo of every MCP feature. Start with the echo tool.",
        page_size=5,  # small pages, so listings show pagination
        authorize=policy,  # who may see and call what (mcp_ref.extensions.policy): demo_policy, and add_tool's rule
    )
    counter = {"value": 0}
    counter_lock = threading.Lock()

    def drop_added_tools(connection) -> None:
        # A session (or connection) without a token is the owner of the tools it added, and no
        # later session is: they go with it (else they would count against its client for good).
        # A token's tools are its principal's, for its next session too.
        principal = connection.principal
        if principal.authenticated:
            return
        with added_lock:
            for name in [name for name, entry in added.items() if entry[0] == principal.id]:
                server.remove_tool(name)
                del added[name]

    server.add_extension(ConnectionEnd(drop_added_tools))

    # -- tools ---------------------------------------------------------------------

    @server.tool(annotations={"readOnlyHint": True})
    def echo(text: str) -> str:
        """Return the text unchanged.

        Args:
            text: What to echo back.
        """
        return text

    @server.tool
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    @server.tool
    def weather(city: str, unit: Unit = Unit.CELSIUS) -> Weather:
        """Report the weather for a city, as structured output.

        Args:
            city: The city to report on.
            unit: Celsius or Fahrenheit.
        """
        celsius = 21.5
        temperature = celsius if unit is Unit.CELSIUS else celsius * 9 / 5 + 32
        return Weather(city=city, temperature=temperature, unit=unit.value, conditions="sunny")

    @server.tool
    def pixel() -> ImageContent:
        """Return a tiny PNG image."""
        return ImageContent(data=PIXEL_PNG, mime_type="image/png")

    @server.tool
    def divide(a: float, b: float) -> float:
        """Divide a by b (fails, as a tool error, when b is 0)."""
        if b == 0:
            raise ToolError("Cannot divide by zero")
        return a / b

    @server.tool
    def count_slowly(steps: int, ctx: Context, delay: float = 0.05) -> str:
        """Count to `steps`, reporting progress at each step.

        Args:
            steps: How many steps.
            delay: Seconds per step.
        """
        for step in range(1, steps + 1):
            ctx.check_cancelled()
            ctx.request.cancelled.wait(delay)
            ctx.report_progress(step, steps, f"step {step} of {steps}")
        return f"counted to {steps}"

    @server.tool
    def wait_for_cancel(ctx: Context, seconds: float = 30.0) -> str:
        """Wait until the client cancels this call (or `seconds` pass)."""
        if ctx.request.cancelled.wait(seconds):
            ctx.check_cancelled()
        return "not cancelled"

    @server.tool
    def log_levels(ctx: Context) -> str:
        """Send one log message at each level; the client's logging/setLevel filters them."""
        sent = [
            level
            for level in ("debug", "info", "warning", "error")
            if ctx.log(level, f"a {level} message", "demo")
        ]
        return "sent: " + ", ".join(sent)

    @server.tool
    def ask_llm(question: str, ctx: Context) -> str:
        """Ask the client's language model (sampling) and return its answer."""
        reply = ctx.sample(question, max_tokens=100, system_prompt="Answer briefly.")
        text = getattr(reply.content, "text", None) or str(reply.content)
        return f"{reply.model} says: {text}"

    @server.tool
    def ask_user(ctx: Context) -> str:
        """Ask the user for their name and favourite colour (elicitation)."""
        answer = ctx.elicit(
            "Who are you?",
            {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "title": "Name"},
                    "colour": {
                        "type": "string",
                        "enum": ["red", "green", "blue"],
                        "default": "blue",
                    },
                },
                "required": ["name"],
            },
        )
        if answer.action != "accept":
            return f"the user chose to {answer.action}"
        # A client may leave out what has a default (mcp_ref's fills defaults in; others may not).
        content = answer.content or {}
        return f"hello {content.get('name')}, who likes {content.get('colour', 'blue')}"

    @server.tool
    def show_roots(ctx: Context) -> str:
        """List the client's roots."""
        roots = ctx.list_roots()
        return "\n".join(f"{r.name or '(unnamed)'}: {r.uri}" for r in roots) or "no roots"

    @server.tool
    def bump_counter() -> int:
        """Add one to demo://counter; subscribers are told it changed."""
        with counter_lock:
            counter["value"] += 1
            value = counter["value"]
        server.notify_resource_updated("demo://counter")
        return value

    @server.tool
    def add_tool(name: str, ctx: Context) -> str:
        """Register a new tool called `name`, for you alone (clients get tools/list_changed).

        Args:
            name: 1 to 64 letters, digits, `_`, `-` or `.`; not a tool that exists.
        """
        # A server that lets callers add tools must scope and bound them: a caller adds its own
        # tools (no one else sees them), never replaces another's or a built-in one, and holds at
        # most MAX_ADDED_PER_CALLER (over all its sessions); all callers together hold at most
        # MAX_ADDED_TOOLS.
        if not ADDED_TOOL_NAME.match(name):
            raise ToolError("name must be 1 to 64 letters, digits, '_', '-' or '.'")
        caller = ctx.principal.id  # the owner: who sees and calls it
        counted_as = ctx.principal.limit_id  # every HTTP session of a client without a token
        with added_lock:
            entry = added.get(name)
            owner = None if entry is None else entry[0]
            if owner not in (None, caller) or (owner is None and server.get_tool(name) is not None):
                raise ToolError(f"the name {name} is taken: choose another")
            held = sum(1 for _, counted in added.values() if counted == counted_as)
            if owner is None and held >= MAX_ADDED_PER_CALLER:
                raise ToolError(
                    f"you have added {MAX_ADDED_PER_CALLER} tools, the most one caller may"
                )
            if owner is None and len(added) >= MAX_ADDED_TOOLS:
                # makes room; removed while still its owner's (only it is told)
                oldest = next(iter(added))
                server.remove_tool(oldest)
                del added[oldest]
            added[name] = (caller, counted_as)  # owned before it exists: no one else sees it

            def extra() -> str:
                return f"I am {name}"

            server.add_tool(extra, name=name, description=f"A tool added at run time: {name}")
        return f"added {name}"

    @server.tool(rate_limit="3/minute")
    def roll_dice(sides: int = 6) -> int:
        """Roll a die: at most 3 times a minute per caller (the fourth is refused, -31005 with retryAfter)."""
        return random.randint(1, max(1, sides))

    @server.tool
    def admin_report(ctx: Context) -> str:
        """Who is calling: only for callers holding the mcp:admin scope (hidden from everyone else)."""
        return f"admin report for {ctx.principal.id}"

    @server.tool(task="optional")
    def build_report(topic: str, ctx: Context) -> str:
        """Write a report on `topic`: a task for clients that take tasks (the 2026-07-28 extension, or 2025-11-25's tasks)."""
        ctx.start_task()  # from here on a task, for a client that declared the extension
        ctx.report_progress(1, 2, f"researching {topic}")
        ctx.sleep(0.05)
        return f"A short report on {topic}: it works."

    # -- resources ----------------------------------------------------------------------

    # A page that never changes: 2026-07-28 clients may keep it an hour, and share it (caching hints).
    @server.resource(
        "demo://readme",
        mime_type="text/markdown",
        description="What this server is.",
        ttl_ms=3_600_000,
        cache_scope="public",
    )
    def readme() -> str:
        return "# mcp_ref demo\n\nEvery MCP feature, one small example each.\n"

    @server.resource("demo://pixel.png", mime_type="image/png", description="A 1x1 PNG, as a blob.")
    def pixel_png() -> bytes:
        return base64.b64decode(PIXEL_PNG)

    @server.resource(
        "demo://counter", mime_type="text/plain", description="A number bump_counter increments."
    )
    def counter_value() -> str:
        return str(counter["value"])

    @server.resource(
        "demo://greeting/{name}", mime_type="text/plain", description="A greeting for anyone."
    )
    def greeting(name: str) -> str:
        return f"Hello, {name}!"

    # -- prompts ------------------------------------------------------------------------

    @server.prompt(title="Greet someone")
    def greet(name: str, style: Literal["formal", "casual"] = "casual") -> str:
        """A greeting in a chosen style.

        Args:
            name: Who to greet.
            style: formal or casual.
        """
        return f"Good day, {name}." if style == "formal" else f"Hey {name}!"

    @server.prompt
    def review(code: str) -> list:
        """Ask for a code review, with the readme attached."""
        return [
            {"role": "user", "content": f"Please review this code:\n{code}"},
            {
                "role": "user",
                "content": EmbeddedResource(
                    resource=TextResourceContents(
                        uri="demo://readme", text=readme(), mime_type="text/markdown"
                    )
                ),
            },
            {"role": "assistant", "content": "Happy to. Looking at it now."},
        ]

    # -- completion ----------------------------------------------------------------------

    names = ["Ada", "Alan", "Alonzo", "Barbara", "Grace", "Margaret"]

    @server.completion(prompt="greet")
    def complete_greet(argument: str, value: str, context: dict) -> list[str]:
        if argument == "style":
            return [s for s in ("formal", "casual") if s.startswith(value)]
        return [n for n in names if n.lower().startswith(value.lower())]

    @server.completion(resource="demo://greeting/{name}")
    def complete_greeting(argument: str, value: str, context: dict) -> list[str]:
        return complete_greet("name", value, context)  # the same names as greet's

    return server


def main() -> None:
    """Serve the demo on stdio (``mcp-ref serve-demo``)."""
    build_server().run_stdio()


def server_command(*cli_args: str) -> list[str]:
    """The command that serves the demo on stdio with this very ``mcp_ref``, wherever it is run from
    (with ``cli_args``: ``mcp-ref CLI_ARGS`` instead, e.g. ``serve-demo --http 127.0.0.1:0 --auth``).

    ``python -m mcp_ref`` would import whatever ``mcp_ref`` the working directory holds first
    (a clone's folder, say, run from its parent); this puts the folder of the package now
    imported in front instead.
    """
    from pathlib import Path

    home = str(Path(__file__).absolute().parents[2])  # holds mcp_ref/
    if cli_args:
        code = f"import sys; sys.path[0] = {home!r}; from mcp_ref.workbench.cli import main; sys.exit(main({list(cli_args)!r}))"
    else:
        code = (
            f"import sys; sys.path[0] = {home!r}; from mcp_ref.workbench.demo import main; main()"
        )
    return [sys.executable, "-c", code]


def __getattr__(name: str):
    # ``mcp_ref.workbench.demo:wsgi_app`` — the demo as a stateless WSGI app, for several worker processes:
    #     MCP_REF_SECRET=... gunicorn -k gthread -w 2 --threads 8 mcp_ref.workbench.demo:wsgi_app
    # (every worker must share MCP_REF_SECRET, which signs pagination cursors: see Server(secret=)).
    # Built on first access, so importing this module stays cheap.
    if name == "wsgi_app":
        app = build_server().wsgi_app(stateless=True)
    # ``mcp_ref.workbench.demo:protected_wsgi_app`` — the protected demo and its authorization server
    # (``serve-demo --http --auth``), stateless, for several workers; with MCP_REF_STATE=redis://...
    # the authorization server's clients, codes and tokens are shared by every worker.
    # MCP_REF_RESOURCE names the URL clients reach, when a proxy or load balancer stands between.
    elif name == "protected_wsgi_app":
        from .demo_auth_server import protected_app

        app = protected_app(
            build_protected_server(),
            stateless=True,
            resource=os.environ.get(RESOURCE_ENV) or None,
        )
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = app
    return app


if __name__ == "__main__":
    main()
